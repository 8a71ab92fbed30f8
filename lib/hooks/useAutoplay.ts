"use client";
/**
 * Autoplay of the episode player: space plays/pauses, one step every 1/speed seconds, stopping at
 * the last step (play from the last step starts over). Moving by hand (← → Home End, the step
 * buttons through `pause`) pauses it. Space typed into inputs, selects or on a focused button is
 * left to that element.
 */
import { useCallback, useEffect, useState } from "react";

/** Steps per second offered by the speed control. */
export const PLAY_SPEEDS = [0.5, 1, 2, 4] as const;
export type PlaySpeed = (typeof PLAY_SPEEDS)[number];

export function useAutoplay(count: number, step: number, go: (to: number) => void) {
  const [on, setOn] = useState(false);
  const [speed, setSpeed] = useState<PlaySpeed>(1);
  const playing = on && step < count - 1;

  useEffect(() => {
    if (!playing) return;
    const t = setTimeout(() => {
      go(step + 1);
      if (step + 1 >= count - 1) setOn(false);
    }, 1000 / speed);
    return () => clearTimeout(t);
  }, [playing, step, speed, count, go]);

  const toggle = useCallback(() => {
    if (playing) return setOn(false);
    if (count < 2) return;
    if (step >= count - 1) go(0);
    setOn(true);
  }, [playing, count, step, go]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      const t = e.target as HTMLElement | null;
      if (t && (["INPUT", "SELECT", "TEXTAREA"].includes(t.tagName) || t.isContentEditable)) return;
      if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(e.key)) return setOn(false);
      if (e.key !== " " || (t && ["BUTTON", "A"].includes(t.tagName))) return;
      e.preventDefault(); // no page scroll
      toggle();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [toggle]);

  const pause = useCallback(() => setOn(false), []);
  return { playing, speed, setSpeed, toggle, pause };
}
