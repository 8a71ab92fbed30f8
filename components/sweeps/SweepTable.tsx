"use client";
/** A sweep's figures per length: the chart's values with their intervals, and the time per episode. */
import type { SweepDto } from "../../lib/contracts/index.ts";
import { fmtTokens, readerModels, sweepInterval, type SweepMethod, type SweepMetric } from "../../lib/analysis/sweep-series.ts";
import { fmtNum } from "../../lib/format.ts";
import { ValueWithInterval, intervalTitle } from "../ValueWithInterval.tsx";

function Cell({ p, method, metric }: { p: SweepDto["points"][number]; method: SweepMethod; metric: SweepMetric }) {
  const s = p[method];
  if (!s) return <td className="num muted">–</td>;
  const ci = sweepInterval(p, method, metric);
  return (
    <td className="num" title={intervalTitle(ci)}>
      <ValueWithInterval value={s[metric]} ci={ci} />
    </td>
  );
}

export function SweepTable({ sweep }: { sweep: SweepDto }) {
  const points = [...sweep.points].sort((a, b) => a.tokens - b.tokens);
  if (!points.length) return <div className="empty">No lengths finished yet.</div>;
  const models = readerModels(points);
  return (
    <div className="table-wrap">
      <table className="table" data-testid="sweep-table">
        <thead>
          <tr>
            <th className="num">chunks</th>
            <th className="num">tokens</th>
            <th className="num">n</th>
            <th className="num">Q-RAG coverage</th>
            <th className="num">Q-RAG F1</th>
            <th className="num">F1 @ Q ≥ {sweep.spec.threshold}</th>
            <th className="num">kept / episode</th>
            <th className="num" title="the threshold, then leave-one-out pruning: picks the other kept ones make redundant are dropped">coverage / F1 + prune</th>
            <th className="num">kept + prune</th>
            <th className="num">BM25 coverage</th>
            <th className="num">dense coverage</th>
            {models.length > 0 && (
              <th className="num" title={`the LLM reader (${models.join(", ")}) on the kept chunks, scored with the benchmark's metric; 95 % Wilson interval`}>
                answer accuracy
              </th>
            )}
            <th className="num">s / episode</th>
          </tr>
        </thead>
        <tbody>
          {points.map((p) => (
            <tr key={p.numChunks} data-testid="sweep-row" data-chunks={p.numChunks}>
              <td className="num">{p.numChunks.toLocaleString()}</td>
              <td className="num" title={`${Math.round(p.tokens).toLocaleString()} GPT-2 tokens (measured)`}>{fmtTokens(p.tokens)}</td>
              <td className="num">{p.samples}</td>
              <Cell p={p} method="qrag" metric="coverage" />
              <Cell p={p} method="qrag" metric="f1" />
              <Cell p={p} method="qragFiltered" metric="f1" />
              <td className="num">{fmtNum(p.qragFiltered.avgKept, 2)}</td>
              <td className="num" data-testid="sweep-pruned">{p.qragPruned ? `${fmtNum(p.qragPruned.coverage, 3)} / ${fmtNum(p.qragPruned.f1, 3)}` : "–"}</td>
              <td className="num">{p.qragPruned ? fmtNum(p.qragPruned.avgKept, 2) : "–"}</td>
              <Cell p={p} method="bm25" metric="coverage" />
              <Cell p={p} method="dense" metric="coverage" />
              {models.length > 0 && (
                <td className="num" data-testid="sweep-accuracy" title={p.reader ? `${p.reader.n} answers, ${p.reader.failures} failed calls` : undefined}>
                  {p.reader ? <ValueWithInterval value={p.reader.accuracy} ci={p.reader.ci} /> : "–"}
                </td>
              )}
              <td className="num">{fmtNum(p.episodeSeconds, 3)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
