"use client";
/** The episode's gold facts, each marked retrieved or not by the episode's picks. */
import type { EpisodeRecord } from "../../lib/contracts/index.ts";

export function GoldFacts({ record }: { record: Pick<EpisodeRecord, "sf_idx" | "sf_texts" | "pred_idx" | "steps"> }) {
  const found = record.steps.filter((s) => s.gold).length;
  return (
    <>
      <h3>Gold facts ({found} of {record.sf_idx.length} found)</h3>
      <ol className="facts" data-testid="gold-facts">
        {record.sf_idx.map((idx, i) => (
          <li key={idx}>
            <span className="muted mono">#{idx}</span> {record.sf_texts[i]} {record.pred_idx.includes(idx) ? <span className="gold-mark">✓ retrieved</span> : <span className="muted">not retrieved</span>}
          </li>
        ))}
      </ol>
    </>
  );
}
