import { test } from "node:test";
import assert from "node:assert/strict";
import { tokenCsr, tokenCsrCaps } from "../server/qrag/model/webgpu/recorded-backward.ts";
import { Rng } from "../server/qrag/util/rng.ts";

/** The token table's rows as TOK_BWD and POS_TOK_BWD compute them from the CSR, on the host: id → Σ g's rows (one value a row). */
function rowsFromCsr(g: Float64Array, c: ReturnType<typeof tokenCsr>): Map<number, number> {
  const out = new Map<number, number>();
  const part: number[] = [];
  for (let j = 0; j < c.dest.length; j++) {
    let s = 0;
    for (let p = c.jobStart[j]; p < c.jobStart[j + 1]; p++) s += g[c.pos[p]];
    if (c.dest[j] >= 0) {
      assert.ok(!out.has(c.dest[j]), `id ${c.dest[j]} written by two jobs`);
      out.set(c.dest[j], s);
    } else part[-1 - c.dest[j]] = s;
  }
  c.heavy.forEach((id, h) => {
    assert.ok(!out.has(id), `heavy id ${id} also written whole`);
    let s = 0;
    for (let r = c.heavyStart[h]; r < c.heavyStart[h + 1]; r++) s += part[r];
    out.set(id, s);
  });
  return out;
}

test("token CSR: every id's rows summed once, jobs of at most `seg` rows, a frequent id in parts added up after; counts within tokenCsrCaps", () => {
  const rng = new Rng(7);
  for (const [n, seg, vocab] of [[4096, 32, 300], [100, 4, 3], [33, 32, 1], [32, 32, 1], [1, 32, 5], [0, 32, 5], [500, 8, 1000]] as const) {
    // a skewed draw: id 0 (PAD) about a third of the rows, like a padded batch
    const ids = Int32Array.from({ length: n }, () => (rng.next() < 0.35 ? 0 : rng.int(vocab)));
    const g = Float64Array.from({ length: n }, () => rng.next() - 0.5);
    const c = tokenCsr(ids, seg);
    const want = new Map<number, number>();
    ids.forEach((id, i) => want.set(id, (want.get(id) ?? 0) + g[i]));
    const got = rowsFromCsr(g, c);
    assert.deepEqual([...got.keys()].sort((a, b) => a - b), [...want.keys()].sort((a, b) => a - b), `n ${n}: the ids`);
    for (const [id, s] of want) assert.ok(Math.abs(got.get(id)! - s) < 1e-9, `n ${n} seg ${seg}: id ${id} sums ${got.get(id)}, want ${s}`);
    assert.deepEqual([...c.pos].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i), "each row in one job");
    for (let j = 0; j < c.dest.length; j++) assert.ok(c.jobStart[j + 1] - c.jobStart[j] <= seg && c.jobStart[j + 1] > c.jobStart[j], `job ${j}: 1 … ${seg} rows`);
    const cap = tokenCsrCaps(n, seg);
    assert.ok(c.dest.length <= cap.jobs && c.heavy.length <= cap.heavy && c.heavyStart[c.heavy.length] <= cap.parts, `n ${n}: within the plan's buffers`);
    for (const [id, m] of countsOf(ids)) assert.equal(c.heavy.includes(id), m > seg, `id ${id} used ${m} times: in parts iff more than ${seg}`);
  }
});

test("token CSR caps hold for the worst batches: every row one id, or ids used seg + 1 times", () => {
  for (const seg of [2, 4, 32]) {
    for (const ids of [new Int32Array(300), Int32Array.from({ length: 300 }, (_, i) => Math.floor(i / (seg + 1)))]) {
      const c = tokenCsr(ids, seg), cap = tokenCsrCaps(ids.length, seg);
      assert.ok(c.heavy.length <= cap.heavy && c.heavyStart[c.heavy.length] <= cap.parts && c.dest.length <= cap.jobs, `seg ${seg}: ${c.heavy.length} heavy, ${c.heavyStart[c.heavy.length]} parts, ${c.dest.length} jobs`);
    }
  }
});

function countsOf(ids: Int32Array): Map<number, number> {
  const m = new Map<number, number>();
  for (const id of ids) m.set(id, (m.get(id) ?? 0) + 1);
  return m;
}
