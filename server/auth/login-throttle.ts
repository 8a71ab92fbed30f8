/**
 * The failed-sign-in throttle. Keyed by the account name alone: behind a reverse proxy every client
 * shares one address, and an attacker changes addresses at will, so an address neither identifies
 * a guesser nor should it unlock a name. A global bound on failures caps the guessing rate over
 * all names (spraying many names), and since it caps the live entries too, the table is pruned of
 * expired ones only: no spray can evict a locked name (the old table of 10,000 entries dropped its
 * oldest, the victim's, when full).
 */
export interface ThrottleLimits {
  /** Failures per name within a window before that name is refused. */
  perName: number;
  /** Failures over all names within a window before every sign-in is refused. */
  global: number;
  windowMs: number;
  now?: () => number;
}

export const LOGIN_LIMITS: ThrottleLimits = { perName: 10, global: 300, windowMs: 15 * 60_000 };

interface Count {
  n: number;
  since: number;
}

export class LoginThrottle {
  private readonly names = new Map<string, Count>();
  private all: Count = { n: 0, since: 0 };
  private readonly now: () => number;

  constructor(private readonly limits: ThrottleLimits = LOGIN_LIMITS) {
    this.now = limits.now ?? Date.now;
  }

  /** False when this name, or sign-in as a whole, has failed too often lately. */
  allowed(name: string): boolean {
    const t = this.now();
    if (this.live(this.all, t) && this.all.n >= this.limits.global) return false;
    const c = this.names.get(name.toLowerCase());
    return !(c && this.live(c, t) && c.n >= this.limits.perName);
  }

  failed(name: string): void {
    const t = this.now();
    const key = name.toLowerCase();
    this.all = this.bump(this.all, t);
    const c = this.names.get(key);
    // past the global bound every name is refused anyway: no new entry (the table stays bounded)
    if (!c && this.all.n > this.limits.global) return;
    this.names.set(key, this.bump(c, t));
    // live entries are at most `global` (each took a failure under it): drop only expired ones
    if (this.names.size > this.limits.global) for (const [k, v] of this.names) if (!this.live(v, t)) this.names.delete(k);
  }

  succeeded(name: string): void {
    this.names.delete(name.toLowerCase());
  }

  private live(c: Count, t: number): boolean {
    return t - c.since <= this.limits.windowMs;
  }

  private bump(c: Count | undefined, t: number): Count {
    if (!c || !this.live(c, t)) return { n: 1, since: t };
    c.n++;
    return c;
  }
}
