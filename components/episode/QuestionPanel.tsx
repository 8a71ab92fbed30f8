"use client";
/**
 * The episode's question, its answer and sample, the size of its context, the return and whether
 * an oracle stopped it.
 */
import type { EpisodeRecord } from "../../lib/contracts/index.ts";
import { fmtNum } from "../../lib/format.ts";

export function QuestionPanel({ record }: { record: EpisodeRecord }) {
  return (
    <section className="panel">
      <h3>Question</h3>
      <p style={{ fontSize: 16, margin: "0 0 10px" }} data-testid="episode-question">
        {record.question}
      </p>
      <dl className="kv">
        <dt>answer</dt>
        <dd>
          <b>{record.answer}</b>
        </dd>
        <dt>sample</dt>
        <dd className="mono">{record.id}</dd>
        <dt>context</dt>
        <dd>
          {record.num_chunks} chunks{record.text_len ? `, ~${record.text_len.toLocaleString()} GPT-2 tokens` : ""}
        </dd>
        <dt>return</dt>
        <dd>{fmtNum(record.return, 3)}</dd>
        <dt>stopping</dt>
        <dd>
          <span className={`badge ${record.oracle_stop ? "plain" : "ok"} label-oracle`} data-testid="oracle-label">
            {record.oracle_stop ? "oracle stop (ground-truth completion)" : "no oracle stop"}
          </span>
        </dd>
      </dl>
    </section>
  );
}
