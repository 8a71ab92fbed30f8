/**
 * The maths of the episode replay (components/episode/): the state the model saw at a step, the
 * Q-bar chart's value domain, and the haystack strip's view (a window of cells [start, start+span)
 * over N chunks, zoomed around a cell and panned, always inside the haystack). Pure, so it is
 * unit-tested without a browser.
 */
import type { EpisodeRecord } from "../contracts/index.ts";

export interface StateChunk {
  index: number;
  text: string;
  gold: boolean;
}

/**
 * The chunks in the state step `step` was chosen from: the earlier picks, in document order when
 * the env sorts by index (envs.sort_by_index, the default), else in pick order — the order the
 * state encoder reads them after the question (server/qrag/env/episode.ts stateTexts).
 */
export function stateChunks(record: EpisodeRecord, step: number, sortByIndex: boolean): StateChunk[] {
  const gold = new Set(record.sf_idx);
  const picked = record.steps.slice(0, Math.max(0, step)).map((s) => ({ index: s.index, text: s.text, gold: gold.has(s.index) }));
  return sortByIndex ? picked.sort((a, b) => a.index - b.index) : picked;
}

/** [lo, hi] covering 0, every value and the reference line, with a little room. */
export function qDomain(values: readonly number[], reference?: number): [number, number] {
  const all = [0, ...values, ...(reference !== undefined && Number.isFinite(reference) ? [reference] : [])];
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  const pad = (hi - lo || 1) * 0.05;
  return [lo < 0 ? lo - pad : 0, hi > 0 ? hi + pad : 0];
}

export interface StripView {
  /** First visible cell (fractional while panning). */
  start: number;
  /** Visible cells. */
  span: number;
}

/** The closest zoom shows at least this many cells (or the whole haystack when shorter). */
export const MIN_SPAN = 20;

export const fullView = (n: number): StripView => ({ start: 0, span: Math.max(1, n) });

export function clampView(v: StripView, n: number): StripView {
  const total = Math.max(1, n);
  const span = Math.min(total, Math.max(Math.min(MIN_SPAN, total), v.span));
  const start = Math.min(Math.max(0, v.start), total - span);
  return { start, span };
}

/** Zooms by `factor` (> 1 zooms in) keeping `anchor` (a fractional cell) at the same place. */
export function zoomView(v: StripView, n: number, factor: number, anchor: number): StripView {
  const span = v.span / factor;
  const frac = (anchor - v.start) / v.span;
  return clampView({ start: anchor - frac * span, span }, n);
}

/** Centres `cell` in the view when it lies outside it (the current step's pick follows the player). */
export function followCell(v: StripView, n: number, cell: number): StripView {
  if (cell >= v.start && cell + 1 <= v.start + v.span) return v;
  return clampView({ start: cell + 0.5 - v.span / 2, span: v.span }, n);
}

/** The cell under horizontal position `x` of a strip `width` pixels wide. */
export function cellAt(v: StripView, width: number, x: number, n: number): number {
  const i = Math.floor(v.start + (x / width) * v.span);
  return Math.max(0, Math.min(n - 1, i));
}

/** Left and right pixel edges of `cell`. */
export function cellEdges(v: StripView, width: number, cell: number): [number, number] {
  const px = width / v.span;
  return [(cell - v.start) * px, (cell + 1 - v.start) * px];
}

/** Chunk texts are fetched in aligned blocks, so neighbouring hovers share one request. */
export const CHUNK_BLOCK = 100;

export function chunkBlock(cell: number, n: number): { from: number; to: number } {
  const from = Math.floor(cell / CHUNK_BLOCK) * CHUNK_BLOCK;
  return { from, to: Math.min(n, from + CHUNK_BLOCK) };
}

/** Colours of the haystack strip (one palette for light and dark themes; tests read pixels). */
export const STRIP_COLORS = {
  cell: "#9aa4b2",
  gold: "#e0a800",
  picked: "#2f6fde",
  pickedGold: "#1b873f",
  future: "#a9c3f0",
  current: "#dc2626",
  hover: "#111827",
  label: "#5f6b7a",
} as const;

/** Geometry of the strip, in CSS pixels: pick numbers above, the cell lane below. */
export const STRIP_LAYOUT = { height: 52, laneTop: 18, laneHeight: 30 } as const;
