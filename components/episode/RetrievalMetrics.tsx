"use client";
/**
 * The episode's retrieval scores: all picks, the stopping filter as evaluated, at the slider's
 * threshold and, where the record has leave-one-out Q, after pruning (lib/analysis/threshold.ts).
 */
import type { EpisodeRecord, RetrievalScores } from "../../lib/contracts/index.ts";
import type { PruneView, ThresholdView } from "../../lib/analysis/threshold.ts";
import { fmtNum } from "../../lib/format.ts";

function Scores({ label, s, testId }: { label: string; s: RetrievalScores; testId?: string }) {
  return (
    <tr data-testid={testId}>
      <td>{label}</td>
      <td className="num">{fmtNum(s.precision, 3)}</td>
      <td className="num">{fmtNum(s.recall, 3)}</td>
      <td className="num">{fmtNum(s.f1, 3)}</td>
      <td className="num">{fmtNum(s.coverage, 3)}</td>
    </tr>
  );
}

interface Props {
  record: Pick<EpisodeRecord, "pred_idx" | "metrics" | "filtered">;
  threshold: number;
  view: ThresholdView;
  pruned: PruneView | null;
}

export function RetrievalMetrics({ record, threshold, view, pruned }: Props) {
  const sameThreshold = Math.abs(threshold - record.filtered.threshold) < 1e-9 && view.kept === record.filtered.kept;
  return (
    <>
      <h3 style={{ marginTop: 14 }}>Retrieval metrics</h3>
      <table className="table" data-testid="episode-metrics">
        <thead>
          <tr>
            <th />
            <th className="num">precision</th>
            <th className="num">recall</th>
            <th className="num">F1</th>
            <th className="num">coverage</th>
          </tr>
        </thead>
        <tbody>
          <Scores label={`all picks (${record.pred_idx.length})`} s={record.metrics} />
          {/* at the evaluated threshold the slider's row would repeat the evaluated one */}
          {sameThreshold ? (
            <Scores label={`Q > ${fmtNum(threshold, 2)}, as evaluated (${view.kept} kept)`} s={view} testId="threshold-row" />
          ) : (
            <>
              <Scores label={`Q > ${fmtNum(record.filtered.threshold, 3)}, as evaluated (${record.filtered.kept} kept)`} s={record.filtered} />
              <Scores label={`Q > ${fmtNum(threshold, 2)} (${view.kept} kept)`} s={view} testId="threshold-row" />
            </>
          )}
          {pruned && <Scores label={`Q > ${fmtNum(threshold, 2)}, then prune (${pruned.keep.length} kept)`} s={pruned} testId="prune-row" />}
        </tbody>
      </table>
    </>
  );
}
