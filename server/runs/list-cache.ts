/**
 * GET /api/runs under load: many browsers ask for the same page at once (every runs:state that
 * changes membership makes each open dashboard refetch). Identical queries share one database
 * read and one JSON serialisation: the first caller computes, callers that arrive meanwhile or
 * within `ttlMs` after get the same body.
 *
 * Never stale after a change: every run change this node learns of (the notifier's `changed`, its
 * own or relayed from another node) calls `invalidate()`, which drops cached and in-flight
 * answers, so a request that starts after a change committed reads again. `ttlMs` bounds what a
 * change that is not announced can leave behind: progress and summary of streaming runs (every
 * batch brings some; "runs:state" publishes them at most once a second too), another node's lost
 * relay, a running run's durationSeconds.
 */
export interface ListCache {
  /** The body for `key`: shared with identical queries in flight or answered in the last ttlMs. */
  get(key: string, compute: () => Promise<Uint8Array<ArrayBuffer>>): Promise<Uint8Array<ArrayBuffer>>;
  invalidate(): void;
}

interface Entry {
  body: Promise<Uint8Array<ArrayBuffer>>;
  /** When the answer arrived (Infinity while in flight). */
  at: number;
}

export function createListCache(o: { ttlMs?: number; maxEntries?: number } = {}): ListCache {
  const ttlMs = o.ttlMs ?? 1_000;
  const maxEntries = o.maxEntries ?? 200;
  let entries = new Map<string, Entry>();

  return {
    get(key, compute) {
      const now = performance.now();
      const hit = entries.get(key);
      if (hit && (hit.at === Infinity || now - hit.at < ttlMs)) return hit.body;
      if (entries.size >= maxEntries) entries = new Map();
      const mine = entries;
      const e: Entry = { body: compute(), at: Infinity };
      mine.set(key, e);
      e.body.then(
        () => {
          e.at = performance.now();
        },
        // a failure is not remembered: the next caller tries again
        () => {
          if (mine.get(key) === e) mine.delete(key);
        },
      );
      return e.body;
    },
    invalidate() {
      // a new map: answers computed before the change land in the old one, which no one reads
      entries = new Map();
    },
  };
}
