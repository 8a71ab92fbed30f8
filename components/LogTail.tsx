"use client";
import { memo, useEffect, useRef } from "react";
import type { LogLineDto } from "../lib/contracts/index.ts";
import { fmtTime } from "../lib/format.ts";

/** The last log lines of a run; follows new lines while scrolled to the bottom. */
function LogTailImpl({ lines }: { lines: LogLineDto[] }) {
  const box = useRef<HTMLDivElement>(null);
  const follow = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  }, [lines]);
  return (
    <div
      className="logtail"
      ref={box}
      data-testid="log-tail"
      onScroll={(e) => {
        const el = e.currentTarget;
        follow.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
    >
      {lines.length === 0 && <div className="muted">no log lines yet</div>}
      {lines.map((l, i) => (
        <div key={`${l.seq}-${i}`} className={`line lvl-${l.level}`}>
          <span className="at">{fmtTime(l.at)}</span>
          {l.level !== "info" && <b>{l.level} </b>}
          {l.message}
        </div>
      ))}
    </div>
  );
}

/** Re-renders only when its lines change (the run page re-renders on every live batch). */
export const LogTail = memo(LogTailImpl);
