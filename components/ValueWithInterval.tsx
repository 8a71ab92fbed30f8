/**
 * A value with its 95 % interval as the sweep and agent tables print it: the value to 3 digits,
 * then "[low, high]" muted to 2 (a null interval: the value alone). One component, so every table
 * reads the same.
 */
import type { Interval } from "../lib/contracts/intervals.ts";
import { fmtNum } from "../lib/format.ts";

export function ValueWithInterval({ value, ci }: { value: number | null | undefined; ci: Interval | null | undefined }) {
  return (
    <>
      {fmtNum(value, 3)}
      {ci && (
        <span className="muted small" data-testid="value-interval" data-low={ci.low} data-high={ci.high}>
          {" "}
          [{fmtNum(ci.low, 2)}, {fmtNum(ci.high, 2)}]
        </span>
      )}
    </>
  );
}

/** The hover title of a cell with an interval (3 digits, where the cell shows 2). */
export const intervalTitle = (ci: Interval | null | undefined) => (ci ? `95 % interval ${fmtNum(ci.low, 3)} – ${fmtNum(ci.high, 3)}` : undefined);
