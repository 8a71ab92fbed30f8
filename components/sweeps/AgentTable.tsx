"use client";
/** An agent evaluation's figures per length: accuracy with its interval, coverage, steps, model calls, tokens and time per sample. */
import type { AgentSummary } from "../../lib/contracts/index.ts";
import { fmtNum } from "../../lib/format.ts";
import { ValueWithInterval } from "../ValueWithInterval.tsx";

const counts = (r: Partial<Record<string, number>>) =>
  Object.entries(r)
    .filter(([, n]) => n)
    .map(([k, n]) => `${n} ${k.replace("_", " ")}`)
    .join(", ");

export function AgentTable({ summaries }: { summaries: readonly AgentSummary[] }) {
  const rows = [...summaries].sort((a, b) => a.numChunks - b.numChunks);
  return (
    <div className="table-wrap">
      <table className="table" data-testid="agent-table">
        <thead>
          <tr>
            <th className="num">chunks</th>
            <th className="num">n</th>
            <th className="num" title="the benchmark's score of the agent's answer; 95 % Wilson interval">answer accuracy</th>
            <th className="num" title="all supporting facts among everything it retrieved">coverage</th>
            <th className="num">steps / sample</th>
            <th className="num">model calls</th>
            <th className="num">chunks retrieved</th>
            <th className="num">prompt + completion tokens</th>
            <th className="num">ms / sample</th>
            <th>failures · forced answers</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => (
            <tr key={s.numChunks} data-testid="agent-row" data-chunks={s.numChunks}>
              <td className="num">{s.numChunks.toLocaleString()}</td>
              <td className="num">{s.n}</td>
              <td className="num" data-testid="agent-accuracy">
                <ValueWithInterval value={s.accuracy} ci={s.ci} />
              </td>
              <td className="num">{fmtNum(s.coverage, 3)}</td>
              <td className="num" data-testid="agent-steps">{fmtNum(s.meanSteps, 2)}</td>
              <td className="num">{fmtNum(s.meanCalls, 2)}</td>
              <td className="num">{fmtNum(s.meanRetrieved, 2)}</td>
              <td className="num" data-testid="agent-tokens">
                {Math.round(s.promptTokens).toLocaleString()} + {Math.round(s.completionTokens).toLocaleString()}
              </td>
              <td className="num" data-testid="agent-ms">{Math.round(s.msPerSample).toLocaleString()}</td>
              <td className="small">
                {s.failures ? `${s.failures} failed (${counts(s.failureKinds)})` : "none failed"}
                {counts(s.forced) ? ` · ${counts(s.forced)}` : ""}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
