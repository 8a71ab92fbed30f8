"use client";
/**
 * The same samples at every length of a sweep, side by side: one column per length with the
 * picks in order (chunk index, Q, gold or not) and whether every gold fact was found, so a
 * reviewer sees where a longer haystack first breaks a trajectory. Filters: only failures, only
 * samples whose outcome changes with length. Question text is untrusted and rendered as text.
 */
import Link from "next/link";
import { useState } from "react";
import type { AcrossLengthsDto } from "../../lib/contracts/index.ts";
import { filterAcross, solved, type AcrossFilter } from "../../lib/analysis/across.ts";
import { fmtNum } from "../../lib/format.ts";

const SHOWN = 200;

export function AcrossLengths({ sweepId, data }: { sweepId: string; data: AcrossLengthsDto }) {
  const [filter, setFilter] = useState<AcrossFilter>("all");
  const rows = filterAcross(data.samples, data.lengths, filter);
  return (
    <section className="panel stack" style={{ gap: 10 }} data-testid="across-lengths">
      <div className="row">
        <h2 style={{ margin: 0 }}>Across lengths</h2>
        <span className="muted small">
          {rows.length} of {data.samples.length} samples
        </span>
        <span style={{ flex: 1 }} />
        {(["all", "failures", "changes"] as const).map((f) => (
          <label key={f} className="small">
            <input type="radio" name="across-filter" checked={filter === f} onChange={() => setFilter(f)} data-testid={`across-filter-${f}`} />{" "}
            {f === "all" ? "all samples" : f === "failures" ? "only failures" : "only outcome changes with length"}
          </label>
        ))}
      </div>
      {rows.length === 0 ? (
        <div className="empty">No samples match.</div>
      ) : (
        <div className="table-wrap" style={{ maxHeight: 560, overflow: "auto" }}>
          <table className="table across">
            <thead>
              <tr>
                <th>sample</th>
                {data.lengths.map((n) => (
                  <th key={n}>{n.toLocaleString()} chunks</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.slice(0, SHOWN).map((r) => (
                <tr key={r.sample.sample} data-testid="across-row" data-sample={r.sample.sample} data-first-break={r.firstBreak ?? ""}>
                  <td className="name" title={r.sample.question}>
                    <span className="mono small">{r.sample.sample}</span>
                    <br />
                    <span className="small">{r.sample.question}</span>
                  </td>
                  {data.lengths.map((n) => {
                    const c = r.sample.cells[n];
                    if (!c) return <td key={n} className="muted">–</td>;
                    const ok = solved(c);
                    return (
                      <td key={n} className={`across-cell ${ok ? "ok" : "fail"}${r.firstBreak === n ? " first-break" : ""}`} data-testid="across-cell" data-chunks={n} data-solved={ok}>
                        <Link href={`/runs/${sweepId}/episodes/${c.episodeId}`} className="small">
                          {ok ? "✓" : "✗"} {c.found}/{c.gold} gold
                        </Link>
                        {r.firstBreak === n && <span className="badge plain small"> first break</span>}
                        <div className="picks">
                          {c.steps.map((s, i) => (
                            <span key={i} className={`pick${s.gold ? " gold" : ""}`} title={`step ${i + 1}: chunk ${s.index}, Q ${fmtNum(s.q, 3)}${s.gold ? " (gold)" : ""}`}>
                              #{s.index} <span className="muted">{fmtNum(s.q, 2)}</span>
                            </span>
                          ))}
                        </div>
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
          {rows.length > SHOWN && <p className="muted small">first {SHOWN} shown</p>}
        </div>
      )}
    </section>
  );
}
