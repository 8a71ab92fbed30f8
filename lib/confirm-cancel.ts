/** Asks before cancelling: one misclick must not stop a long run. */
export function confirmCancel(name: string): boolean {
  return window.confirm(`Cancel "${name}"? It stops after saving a checkpoint; Resume continues from there.`);
}
