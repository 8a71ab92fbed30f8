"use client";
/**
 * The one hover read-out of the summary panels (parallel coordinates, scatter): the hovered run's
 * name and its value in each column, "name · key = value · …", as text (a run name is never
 * markup). `useHoverRun` is the hover state both panels keep: the run under the pointer, cleared
 * when the pointer leaves that run (not when it enters another first).
 */
import { useState, type CSSProperties } from "react";
import type { CellValue } from "../../lib/contracts/index.ts";
import type { SummaryRun } from "../../lib/analysis/summary-axes.ts";
import { fmtNum } from "../../lib/format.ts";

/** A column's value as read out: numbers as the tables print them, a missing value as "none". */
export const cellText = (v: CellValue | undefined) => (v === undefined || v === null ? "none" : typeof v === "number" ? fmtNum(v) : typeof v === "string" ? v : JSON.stringify(v));

interface Props {
  run: SummaryRun | undefined;
  keys: readonly string[];
  testId: string;
  /** Shown while no run is hovered (nothing when absent). */
  hint?: string;
  /** A floating box's placement (the scatter puts it by the point). */
  style?: CSSProperties;
  className?: string;
}

export function RunReadOut({ run, keys, testId, hint, style, className }: Props) {
  if (!run) return hint ? <div className="small muted">{hint}</div> : null;
  return (
    <div className={`small ${className ?? ""}`} data-testid={testId} data-run={run.id} style={{ overflowWrap: "anywhere", ...style }}>
      <strong>{run.name}</strong>
      {keys.map((k) => (
        <span key={k} data-key={k}>
          {" · "}
          {k} = {cellText(run.values[k])}
        </span>
      ))}
    </div>
  );
}

/** The hovered run and the pointer handlers that set it, for any mark drawn per run. */
export function useHoverRun() {
  const [hover, setHover] = useState<string | null>(null);
  const handlers = (id: string) => ({ onMouseEnter: () => setHover(id), onMouseLeave: () => setHover((h) => (h === id ? null : h)) });
  return { hover, handlers };
}
