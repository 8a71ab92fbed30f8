/**
 * Seeded PRNG (xoshiro128**) with serialisable state, so data generation is deterministic by
 * seed and a training checkpoint can store and restore the exact random stream.
 */
export type RngState = [number, number, number, number];

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** Stable 32-bit hash of a string (FNV-1a), used to derive sub-seeds from names. */
function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class Rng {
  private s: Uint32Array;

  constructor(seed: number | string | RngState = 42) {
    this.s = new Uint32Array(4);
    if (Array.isArray(seed)) {
      this.s.set(seed);
    } else {
      const sm = splitmix32(typeof seed === "string" ? hashString(seed) : seed);
      for (let i = 0; i < 4; i++) this.s[i] = sm();
      if ((this.s[0] | this.s[1] | this.s[2] | this.s[3]) === 0) this.s[0] = 1;
    }
  }

  /** A child generator whose stream depends only on this seed and `key` (does not advance this). */
  fork(key: string | number): Rng {
    const st = this.getState();
    const k = typeof key === "string" ? hashString(key) : key >>> 0;
    const sm = splitmix32((st[0] ^ Math.imul(k, 0x9e3779b1) ^ st[2]) >>> 0);
    return new Rng([sm() ^ st[1], sm() ^ st[3], sm(), sm() | 1] as RngState);
  }

  getState(): RngState {
    return [this.s[0], this.s[1], this.s[2], this.s[3]];
  }

  setState(st: RngState): void {
    this.s.set(st);
  }

  /** Uniform 32-bit unsigned integer. */
  nextU32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform float in [0, 1) with 53 bits of precision. */
  next(): number {
    const hi = this.nextU32() >>> 5;
    const lo = this.nextU32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!(n > 0)) throw new RangeError(`Rng.int: n must be > 0, got ${n}`);
    return Math.floor(this.next() * n);
  }

  /** Uniform integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  choice<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("Rng.choice on empty array");
    return items[this.int(items.length)];
  }

  /** In-place Fisher–Yates shuffle; returns the array. */
  shuffle<T>(a: T[]): T[] {
    for (let i = a.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
    return a;
  }

  /** k distinct integers from [0, n), in random order. O(k) memory (Floyd's algorithm). */
  sampleWithoutReplacement(n: number, k: number): number[] {
    if (k > n) throw new RangeError(`cannot sample ${k} of ${n} without replacement`);
    const chosen = new Set<number>();
    const out: number[] = [];
    for (let j = n - k; j < n; j++) {
      const t = this.int(j + 1);
      const v = chosen.has(t) ? j : t;
      chosen.add(v);
      out.push(v);
    }
    return this.shuffle(out);
  }

  /** Standard normal via Box–Muller. */
  normal(): number {
    let u = 0;
    while (u === 0) u = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** Index drawn from unnormalised non-negative weights. */
  weighted(weights: ArrayLike<number>): number {
    let total = 0;
    for (let i = 0; i < weights.length; i++) total += weights[i];
    if (!(total > 0)) throw new RangeError("Rng.weighted: weights sum to 0");
    let r = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i];
      if (r < 0) return i;
    }
    return weights.length - 1;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
