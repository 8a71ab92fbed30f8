"use client";
/**
 * The current step of an episode player, kept in the URL (`?step=N`, 1-based) so a link opens
 * that exact step, and moved with the keyboard: ←/→ previous/next, Home/End first/last. Keys
 * typed into inputs (the threshold slider, text fields) are left alone.
 */
import { useCallback, useEffect, useState } from "react";

function stepFromUrl(count: number): number {
  if (typeof window === "undefined" || count === 0) return 0;
  const n = Number(new URLSearchParams(window.location.search).get("step"));
  return Number.isInteger(n) && n >= 1 ? Math.min(n, count) - 1 : 0;
}

/** Writes the step into the address bar without a navigation (no history entry per key). */
function writeStep(index: number): void {
  const url = new URL(window.location.href);
  url.searchParams.set("step", String(index + 1));
  window.history.replaceState(window.history.state, "", url);
}

/** The player mounts once the episode has loaded in the browser, so the URL can be read at once. */
export function useStepCursor(count: number): { step: number; go: (to: number) => void } {
  const [step, setStep] = useState(() => stepFromUrl(count));
  const clamp = useCallback((to: number) => Math.max(0, Math.min(count - 1, to)), [count]);

  const go = useCallback(
    (to: number) => {
      if (count === 0) return;
      const next = clamp(to);
      setStep(next);
      writeStep(next);
    },
    [count, clamp],
  );

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      const moves: Record<string, (s: number) => number> = { ArrowLeft: (s) => s - 1, ArrowRight: (s) => s + 1, Home: () => 0, End: () => count - 1 };
      const move = moves[e.key];
      if (!move || count === 0) return;
      e.preventDefault();
      setStep((s) => {
        const next = clamp(move(s));
        writeStep(next);
        return next;
      });
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [count, clamp]);

  return { step, go };
}
