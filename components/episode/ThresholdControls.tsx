"use client";
/**
 * The Q-threshold slider of the stopping filter and, for episodes with leave-one-out Q, the prune
 * toggle (server/qrag/evaluation/stop-rules.ts "prune").
 */
import { fmtNum } from "../../lib/format.ts";

interface Props {
  threshold: number;
  onThreshold: (threshold: number) => void;
  /** Whether the record has leave-one-out Q; without it there is no prune toggle. */
  canPrune: boolean;
  prune: boolean;
  onPrune: (prune: boolean) => void;
}

export function ThresholdControls({ threshold, onThreshold, canPrune, prune, onPrune }: Props) {
  return (
    <>
      <label className="row small" style={{ marginTop: 8 }}>
        Q threshold
        <input
          type="range"
          min={0}
          max={1}
          step={0.01}
          value={threshold}
          onChange={(e) => onThreshold(Number(e.target.value))}
          aria-label="Q threshold of the stopping filter"
          data-testid="threshold-slider"
        />
        <span className="mono" data-testid="threshold-value">
          {fmtNum(threshold, 2)}
        </span>
        <span className="muted">keeps the picks before the first step with Q ≤ threshold</span>
      </label>
      {canPrune && (
        <label className="row small" title="drop a kept pick whose Q, given the question and the other kept picks, is at or below the threshold: the rest already make it redundant">
          <input type="checkbox" checked={prune} onChange={(e) => onPrune(e.target.checked)} data-testid="prune-toggle" />
          then prune picks the other kept ones make redundant (leave-one-out Q ≤ threshold)
        </label>
      )}
    </>
  );
}
