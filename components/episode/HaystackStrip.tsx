"use client";
/**
 * The whole context of an episode as one line of N cells on a <canvas> (N up to 400,000): gold
 * facts, picks numbered in order, the current step's pick highlighted. Wheel or ± zoom around
 * the pointer, drag pans, "fit" shows everything. Hovering a cell shows its text, fetched from
 * the server on demand (the haystack is regenerated there; it is never shipped with the page).
 * The wrapper exposes the view and the highlighted cell as data attributes for tests.
 */
import { useCallback, useEffect, useRef, useState } from "react";
import {
  STRIP_COLORS as C, STRIP_LAYOUT as L, cellAt, cellEdges, clampView, followCell, fullView, zoomView, type StripView,
} from "../../lib/analysis/replay.ts";
import { useChunkText } from "../../lib/hooks/useEpisodeChunks.ts";

interface Props {
  runId: string;
  episodeId: string;
  numChunks: number;
  gold: readonly number[];
  /** Chunk index of each step's pick, in order. */
  picks: readonly number[];
  /** Current step (index into picks). */
  current: number;
  /** Every chunk's text when the record holds them (playground episodes): nothing is fetched. */
  texts?: readonly string[];
}

function draw(ctx: CanvasRenderingContext2D, w: number, v: StripView, n: number, p: Props, hover: number | null): void {
  ctx.clearRect(0, 0, w, L.height);
  const px = w / v.span;
  const gap = px >= 4 ? 1 : 0;
  const lane = (cell: number, color: string, minW: number, top: number = L.laneTop, h: number = L.laneHeight) => {
    const [x0, x1] = cellEdges(v, w, cell);
    if (x1 < 0 || x0 > w) return;
    const cw = Math.max(minW, x1 - x0 - gap);
    ctx.fillStyle = color;
    ctx.fillRect(x0 + (x1 - x0 - gap - cw) / 2, top, cw, h);
  };
  const first = Math.max(0, Math.floor(v.start));
  const last = Math.min(n, Math.ceil(v.start + v.span));
  ctx.fillStyle = C.cell;
  if (gap) for (let i = first; i < last; i++) lane(i, C.cell, 0);
  else ctx.fillRect(0, L.laneTop, Math.min(w, (n - v.start) * px), L.laneHeight); // too dense for single cells
  const goldSet = new Set(p.gold);
  for (const g of p.gold) if (g >= first && g < last) lane(g, C.gold, 2);
  let lastLabel = -Infinity;
  p.picks.forEach((c, k) => {
    if (c < first || c >= last || k === p.current) return;
    if (k < p.current) lane(c, goldSet.has(c) ? C.pickedGold : C.picked, 2);
    else if (goldSet.has(c)) {
      // a gold fact picked later stays gold until it is picked; a strip under it says "later"
      lane(c, C.gold, 2);
      lane(c, C.future, 2, L.laneTop + L.laneHeight - 6, 6);
    } else lane(c, C.future, 2);
  });
  // the current pick last, over everything, a little taller
  const cur = p.picks[p.current];
  if (cur !== undefined) lane(cur, C.current, 3, L.laneTop - 3, L.laneHeight + 6);
  if (hover !== null) {
    const [x0, x1] = cellEdges(v, w, hover);
    ctx.strokeStyle = C.hover;
    ctx.lineWidth = 1;
    ctx.strokeRect(Math.round(x0) + 0.5, L.laneTop - 4.5, Math.max(3, x1 - x0), L.laneHeight + 9);
  }
  // pick numbers, left to right, skipping ones that would overlap
  ctx.font = "10px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.textBaseline = "alphabetic";
  [...p.picks.entries()]
    .sort((a, b) => a[1] - b[1])
    .forEach(([k, c]) => {
      const [x0, x1] = cellEdges(v, w, c);
      const x = (x0 + x1) / 2;
      if (x < 0 || x > w || x - lastLabel < 12) return;
      ctx.fillStyle = k === p.current ? C.current : C.label;
      ctx.fillText(String(k + 1), x, L.laneTop - 6);
      lastLabel = x;
    });
}

export function HaystackStrip(p: Props) {
  const n = p.numChunks;
  const wrap = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(0);
  const [view, setView] = useState<StripView>(() => fullView(n));
  const [hover, setHover] = useState<number | null>(null);
  const drag = useRef<{ x: number; start: number; moved: boolean } | null>(null);
  const cur = p.picks[p.current];
  // the first hover used to wait while the server regenerated the haystack (> 1.5 s on a cold
  // episode): ask for the first pick's block on opening, which regenerates and caches it there
  useChunkText(p.runId, p.episodeId, n, p.picks[0] ?? 0, p.texts);

  // keep the current pick in view while stepping (the view is only moved when it is off-screen)
  const [followed, setFollowed] = useState(cur);
  if (cur !== followed) {
    setFollowed(cur);
    if (cur !== undefined) setView((v) => followCell(v, n, cur));
  }

  useEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    setWidth(el.clientWidth);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    const c = canvas.current;
    if (!c || width <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(width * dpr);
    c.height = Math.round(L.height * dpr);
    const ctx = c.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw(ctx, width, view, n, p, hover);
  }, [width, view, n, p, hover]);

  // wheel zoom needs a non-passive listener to keep the page from scrolling
  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const x = e.clientX - c.getBoundingClientRect().left;
      setView((v) => zoomView(v, n, Math.exp(-e.deltaY * 0.002), v.start + (x / c.clientWidth) * v.span));
    };
    c.addEventListener("wheel", onWheel, { passive: false });
    return () => c.removeEventListener("wheel", onWheel);
  }, [n]);

  const xOf = (e: React.PointerEvent) => e.clientX - e.currentTarget.getBoundingClientRect().left;
  const onPointerDown = (e: React.PointerEvent<HTMLCanvasElement>) => {
    drag.current = { x: e.clientX, start: view.start, moved: false };
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const onPointerMove = (e: React.PointerEvent<HTMLCanvasElement>) => {
    const d = drag.current;
    if (d && Math.abs(e.clientX - d.x) > 2) {
      d.moved = true;
      setView((v) => clampView({ start: d.start - ((e.clientX - d.x) / width) * v.span, span: v.span }, n));
    }
    if (width > 0) setHover(cellAt(view, width, xOf(e), n));
  };
  const endDrag = () => (drag.current = null);
  const zoomBy = useCallback(
    (f: number) => setView((v) => zoomView(v, n, f, cur !== undefined && cur >= v.start && cur < v.start + v.span ? cur + 0.5 : v.start + v.span / 2)),
    [n, cur],
  );
  const noFocus = (e: React.MouseEvent) => e.preventDefault(); // keep space/arrows for the player

  return (
    <div className="stack" style={{ gap: 6 }}>
      <div className="row small">
        <b>Haystack</b>
        <span className="muted">
          {n.toLocaleString()} chunks · showing {Math.floor(view.start).toLocaleString()}–{Math.min(n, Math.ceil(view.start + view.span)).toLocaleString()}
        </span>
        <button type="button" onMouseDown={noFocus} onClick={() => zoomBy(4)} aria-label="zoom in" data-testid="strip-zoom-in">+</button>
        <button type="button" onMouseDown={noFocus} onClick={() => zoomBy(1 / 4)} aria-label="zoom out" data-testid="strip-zoom-out">-</button>
        <button type="button" onMouseDown={noFocus} onClick={() => setView(fullView(n))} data-testid="strip-fit">fit</button>
        <span className="muted">
          <Swatch c={C.gold} /> gold <Swatch c={C.picked} /> picked <Swatch c={C.pickedGold} /> picked gold <Swatch c={C.current} /> this step <Swatch c={C.future} /> later picks (under gold: a gold fact picked later)
        </span>
      </div>
      <div
        ref={wrap}
        data-testid="haystack-strip"
        data-num-chunks={n}
        data-current-index={cur ?? ""}
        data-view-start={view.start}
        data-view-span={view.span}
        data-hover-index={hover ?? ""}
        style={{ width: "100%" }}
      >
        <canvas
          ref={canvas}
          data-testid="haystack-canvas"
          style={{ width: "100%", height: L.height, display: "block", touchAction: "none" }}
          onPointerDown={onPointerDown}
          onPointerMove={onPointerMove}
          onPointerUp={endDrag}
          onPointerCancel={endDrag}
          onPointerLeave={() => setHover(null)}
          aria-label={`haystack of ${n} chunks; hover a cell to read it`}
        />
      </div>
      <HoverText {...p} cell={hover} />
    </div>
  );
}

function Swatch({ c }: { c: string }) {
  return <span style={{ display: "inline-block", width: 10, height: 10, background: c, borderRadius: 2, verticalAlign: "middle", marginLeft: 6 }} />;
}

/** The hovered chunk's text (untrusted: rendered as text), fetched on demand. */
function HoverText({ runId, episodeId, numChunks, gold, picks, cell, texts }: Props & { cell: number | null }) {
  const { text, error, loading } = useChunkText(runId, episodeId, numChunks, cell, texts);
  if (cell === null) return <div className="small muted" data-testid="hover-chunk">Hover a cell to read its chunk.</div>;
  const pick = picks.indexOf(cell);
  return (
    <div className="small" data-testid="hover-chunk" data-index={cell}>
      <span className="mono">#{cell}</span>
      {gold.includes(cell) && <span className="gold-mark"> gold fact</span>}
      {pick >= 0 && <span className="muted"> · pick {pick + 1}</span>}{" "}
      {error ? (
        <span className="muted" data-testid="hover-unavailable">hover text unavailable: {error.message}</span>
      ) : text !== undefined ? (
        <span data-testid="hover-chunk-text">{text}</span>
      ) : (
        <span className="muted">{loading ? "loading…" : ""}</span>
      )}
    </div>
  );
}
