/**
 * Reordering the parallel-coordinates axes by dragging one: the slot a dragged axis lands in
 * (the nearest axis position to where it was dropped, among the movable axes — the metric stays
 * last) and the axis list with it moved there. Pure, so the drag and the ← / → buttons agree.
 */

/** The slot (0 … movable − 1) nearest to x, for axes drawn at x0 + i · gap. */
export function slotAt(x: number, x0: number, gap: number, movable: number): number {
  if (movable <= 1 || !(gap > 0)) return 0;
  return Math.min(movable - 1, Math.max(0, Math.round((x - x0) / gap)));
}

/** `axes` with `key` moved to index `to` (the others keep their order); unchanged when absent. */
export function moveAxisTo(axes: readonly string[], key: string, to: number): string[] {
  const i = axes.indexOf(key);
  if (i < 0) return [...axes];
  const rest = axes.filter((a) => a !== key);
  const j = Math.min(rest.length, Math.max(0, to));
  return [...rest.slice(0, j), key, ...rest.slice(j)];
}
