/**
 * A bounded, seeded fuzz of every mutation endpoint (POST/PATCH/DELETE in the router's table) on
 * the real server and a real SQLite file: about 500 generated bodies — wrong types, huge and odd
 * strings, unpaired surrogates, deep nesting, prototype keys, numbers out of range, invalid JSON
 * and invalid UTF-8 — with real and made-up ids in the path. Every answer must be below 500,
 * every 400 must name at least one field, and the server must still answer afterwards.
 * QRAG_FUZZ_SEED draws another schedule; QRAG_FUZZ_BODIES sets the count.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import type { RunDetailDto } from "../lib/contracts/index.ts";
import { API_ROUTES } from "../server/api/router.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { tmpDir } from "./platform-helpers.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const SEED = Number(process.env.QRAG_FUZZ_SEED ?? 424242);
const BODIES = Number(process.env.QRAG_FUZZ_BODIES ?? 500);


/** Field names the API knows, so generated objects reach past the first "unknown key" check. */
const FIELDS = [
  "name", "tags", "notes", "config", "preset", "overrides", "checkpoint", "update", "lengths", "samples", "threshold", "baselines", "oracleStop",
  "password", "role", "label", "disabled", "state", "runs", "title", "points", "episodes", "format", "run", "metrics", "steps_count", "envs",
  "batch_size", "eval_episodes", "num_sentences", "noise", "train_path", "__proto__", "constructor", "prototype", "",
];
const STRINGS = [
  "", " ", "x", "tiny", "babilong-cpu", "../../../../etc/passwd", "/etc/passwd", "\u0000", "\ud800", "\udfff", "😀", "<script>alert(1)</script>",
  "a".repeat(5_000), "é".repeat(300), "NaN", "1e309", "-1", "null", "{}", "steps_count=1e9", "envs.noise=/etc", "qa1",
];

function generator(random: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const value = (depth: number): unknown => {
    const r = random();
    if (depth > 3 || r < 0.25) return pick(STRINGS);
    if (r < 0.45) return pick([0, -1, 1, 2 ** 31, -(2 ** 53), 1.5, 1e308, -1e-300, 3e7, 400001, 10_001]);
    if (r < 0.55) return pick([true, false, null]);
    if (r < 0.75) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    return object(depth + 1);
  };
  const object = (depth: number): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    const n = Math.floor(random() * 5);
    for (let i = 0; i < n; i++) Object.defineProperty(o, pick(FIELDS), { value: value(depth), enumerable: true, configurable: true, writable: true });
    return o;
  };
  /** A raw request body: mostly JSON objects, sometimes other JSON, broken JSON or bytes. */
  const body = (): Uint8Array | string => {
    const r = random();
    if (r < 0.7) return JSON.stringify(object(0));
    if (r < 0.8) return JSON.stringify(value(0));
    if (r < 0.85) return `{"name": "\\ud800"}`; // an escaped lone surrogate
    if (r < 0.9) return pick(["{", "[1,", '{"name":}', "nul", "\"unterminated", "{\"a\":1}}"]);
    if (r < 0.95) return new Uint8Array([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]); // {"n":"<invalid UTF-8>"}
    return JSON.stringify({ name: "deep", config: JSON.parse("[".repeat(200) + "]".repeat(200)) });
  };
  return { pick, body };
}

let server: RunningServer | null = null;
after(async () => {
  await server?.close();
});

test(`fuzz (seed ${SEED}): ${BODIES} generated bodies against every mutation endpoint: no 5xx, every 400 names a field, the server stays up`, async () => {
  server = await startServer({ port: 0, dataDir: tmpDir("qrag-fuzz-"), spawnWorker: false, next: false, log: () => {} });
  const s = server;
  const send = (method: string, path: string, body?: Uint8Array | string) =>
    fetch(`${s.url}${path}`, { method, headers: { "content-type": "application/json", origin: s.url }, body: body as BodyInit | undefined });
  // real ids to aim at: one run (cancelled, so resume/clone paths are reachable) and a dashboard
  const run = (await (await send("POST", "/api/runs", JSON.stringify({ preset: "tiny", name: "fuzz target" }))).json()) as RunDetailDto;
  assert.ok(run.id, "a run to aim at");
  await send("POST", `/api/runs/${run.id}/cancel`);

  const gen = new Rng(SEED);
  const random = () => gen.next();
  const { pick, body } = generator(random);
  const mutations = API_ROUTES.flatMap((r) => r.methods.filter((m) => m !== "GET").map((m) => ({ method: m, pattern: r.pattern })));
  assert.ok(mutations.length >= 15, `mutation endpoints: ${mutations.length}`);
  const ids = [run.id, run.id, "1", "nope", "%00", "x".repeat(300), "..%2F..%2Fetc"];
  const problems: string[] = [];
  const seen = new Map<string, number>();
  for (let i = 0; i < BODIES; i++) {
    const m = mutations[i % mutations.length];
    const path = m.pattern.replace(/:(\w+)/g, () => pick(ids));
    const b = body();
    const res = await send(m.method, path, b);
    const text = await res.text();
    const key = `${m.method} ${m.pattern} → ${res.status}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    const shown = typeof b === "string" ? b.slice(0, 120) : `<${b.length} bytes>`;
    if (res.status >= 500) problems.push(`#${i} ${m.method} ${path} ${shown}: ${res.status} ${text.slice(0, 200)}`);
    if (res.status === 400) {
      let fields: string[] = [];
      try {
        fields = Object.keys((JSON.parse(text) as { fieldErrors?: Record<string, string> }).fieldErrors ?? {});
      } catch {
        /* not JSON: a problem below */
      }
      if (!fields.length) problems.push(`#${i} ${m.method} ${path} ${shown}: 400 without a field: ${text.slice(0, 200)}`);
    }
  }
  assert.deepEqual(problems.slice(0, 20), [], `${problems.length} problems`);
  // the server is still up and still serves
  assert.equal((await fetch(`${s.url}/api/health`)).status, 200);
  assert.equal((await fetch(`${s.url}/api/runs/${run.id}`)).status, 200);
  const statuses = new Set([...seen.keys()].map((k) => k.split(" → ")[1]));
  assert.ok(statuses.has("400") && [...statuses].some((x) => x.startsWith("2")), `answers seen: ${[...statuses].join(", ")}`);
});
