/**
 * The failed-sign-in throttle. Keyed by the account name, whatever the address: behind a reverse
 * proxy many clients may share one address and an attacker changes addresses at will, so an
 * address never unlocks a name. A global bound on failures caps the guessing rate over all names
 * (spraying many names); a per-address bound, lower, stops one client's spray before it reaches
 * the global bound and locks everyone out (the address is the client's as
 * server/http/client-address.ts finds it behind trusted proxies). The global bound caps the live
 * entries of both tables too, so they are pruned of expired entries only: no spray can evict a
 * locked name (the old table of 10,000 entries dropped its oldest, the victim's, when full).
 */
export interface ThrottleLimits {
  /** Failures per name within a window before that name is refused. */
  perName: number;
  /** Failures from one client address within a window before that address is refused. */
  perAddress: number;
  /** Failures over all names within a window before every sign-in is refused. */
  global: number;
  windowMs: number;
  now?: () => number;
}

export const LOGIN_LIMITS: ThrottleLimits = { perName: 10, perAddress: 50, global: 300, windowMs: 15 * 60_000 };

interface Count {
  n: number;
  since: number;
}

export class LoginThrottle {
  private readonly names = new Map<string, Count>();
  private readonly addresses = new Map<string, Count>();
  private all: Count = { n: 0, since: 0 };
  private readonly now: () => number;

  constructor(private readonly limits: ThrottleLimits = LOGIN_LIMITS) {
    this.now = limits.now ?? Date.now;
  }

  /** False when this name, this address, or sign-in as a whole has failed too often lately. */
  allowed(name: string, address: string): boolean {
    const t = this.now();
    if (this.live(this.all, t) && this.all.n >= this.limits.global) return false;
    return !this.over(this.names.get(name.toLowerCase()), this.limits.perName, t) && !this.over(this.addresses.get(address), this.limits.perAddress, t);
  }

  failed(name: string, address: string): void {
    const t = this.now();
    this.all = this.bump(this.all, t);
    this.count(this.names, name.toLowerCase(), t);
    this.count(this.addresses, address, t);
  }

  succeeded(name: string): void {
    this.names.delete(name.toLowerCase());
  }

  private over(c: Count | undefined, limit: number, t: number): boolean {
    return !!c && this.live(c, t) && c.n >= limit;
  }

  private count(table: Map<string, Count>, key: string, t: number): void {
    const c = table.get(key);
    // past the global bound every sign-in is refused anyway: no new entry (the table stays bounded)
    if (!c && this.all.n > this.limits.global) return;
    table.set(key, this.bump(c, t));
    // live entries are at most `global` (each took a failure under it): drop only expired ones
    if (table.size > this.limits.global) for (const [k, v] of table) if (!this.live(v, t)) table.delete(k);
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
