"use client";
import { useEffect, useRef, useState, type RefObject } from "react";

/** An element's content width in pixels, kept current (charts are laid out at their real size). */
export function useElementWidth(initial: number, min = 200): [RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [w, setW] = useState(initial);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setW(Math.max(min, Math.round(el.clientWidth))));
    ro.observe(el);
    return () => ro.disconnect();
  }, [min]);
  return [ref, w];
}
