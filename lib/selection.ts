/**
 * Row selection of the runs table: a click toggles one row; a shift-click sets every row between
 * the last clicked row (the anchor) and this one to this row's new state, as file managers do.
 * Rows are taken in the order shown; an anchor no longer shown acts as a plain click.
 */
export function toggleRows(order: readonly string[], selected: ReadonlySet<string>, anchor: string | null, id: string, range: boolean): Set<string> {
  const next = new Set(selected);
  const on = !selected.has(id);
  const a = anchor === null ? -1 : order.indexOf(anchor);
  const b = order.indexOf(id);
  if (!(range && a >= 0 && b >= 0)) return toggled(selected, id);
  for (let i = Math.min(a, b); i <= Math.max(a, b); i++) {
    if (on) next.add(order[i]);
    else next.delete(order[i]);
  }
  return next;
}

/** A copy of `set` with `item` removed if it was there, else added (checkbox lists, legends). */
export function toggled<T>(set: ReadonlySet<T>, item: T): Set<T> {
  const next = new Set(set);
  if (next.has(item)) next.delete(item);
  else next.add(item);
  return next;
}
