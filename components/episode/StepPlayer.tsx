"use client";
/**
 * The replay's step player: first/previous/next/last, play/pause and the autoplay speed. The keys
 * (← → Home End, space) belong to the hooks the caller holds (useStepCursor, useAutoplay), since
 * the current step also drives the haystack strip, the step detail and the step list.
 */
import { PLAY_SPEEDS, type PlaySpeed, type useAutoplay } from "../../lib/hooks/useAutoplay.ts";
import type { useStepCursor } from "../../lib/hooks/useStepCursor.ts";

interface Props {
  count: number;
  cursor: ReturnType<typeof useStepCursor>;
  play: ReturnType<typeof useAutoplay>;
}

/** Player buttons keep the focus where it was, so space and the arrows stay with the player. */
const noFocus = (e: React.MouseEvent) => e.preventDefault();

export function StepPlayer({ count, cursor, play }: Props) {
  const goBy = (to: number) => {
    play.pause();
    cursor.go(to);
  };
  return (
    <div className="row small" data-testid="step-player" data-playing={play.playing ? "yes" : "no"}>
      <button type="button" onMouseDown={noFocus} onClick={() => goBy(0)} aria-label="first step">|◀</button>
      <button type="button" onMouseDown={noFocus} onClick={() => goBy(cursor.step - 1)} aria-label="previous step">◀</button>
      <button type="button" onMouseDown={noFocus} onClick={play.toggle} aria-label={play.playing ? "pause" : "play"} data-testid="play-toggle" disabled={count < 2}>
        {play.playing ? "pause" : "play"}
      </button>
      <span className="mono" data-testid="step-position">
        step {cursor.step + 1} of {count}
      </span>
      <button type="button" onMouseDown={noFocus} onClick={() => goBy(cursor.step + 1)} aria-label="next step">▶</button>
      <button type="button" onMouseDown={noFocus} onClick={() => goBy(count - 1)} aria-label="last step">▶|</button>
      <label className="row small">
        speed
        <select
          value={play.speed}
          onChange={(e) => {
            play.setSpeed(Number(e.target.value) as PlaySpeed);
            e.currentTarget.blur(); // hand space back to the player
          }}
          aria-label="autoplay speed, steps per second"
          data-testid="play-speed"
        >
          {PLAY_SPEEDS.map((v) => (
            <option key={v} value={v}>
              {v} step/s
            </option>
          ))}
        </select>
      </label>
      <span className="muted">← → Home End · space plays</span>
    </div>
  );
}
