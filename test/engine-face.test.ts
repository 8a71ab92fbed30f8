/**
 * The engine's public face (server/qrag/index.ts) loads no TensorFlow.js: every dashboard process
 * imports it, and only the worker's engine process should pay for tfjs (runtime.ts). Each module is
 * imported in a fresh child process that watches for tfjs three ways: tfjs-core's global engine
 * (`globalThis._tfengine`, made when tfjs-core loads), the CommonJS module cache (tfjs ships
 * CommonJS only, so Node loads it there even from `import`), and an ESM resolve hook that reports
 * every URL under node_modules/@tensorflow. runtime.ts is the control: the same probe must see
 * tfjs there, or the probe is blind.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";

const ROOT = path.resolve(import.meta.dirname, "..");

const PROBE = `
import { createRequire, register } from "node:module";
import { MessageChannel } from "node:worker_threads";
const TF = /[\\\\/]node_modules[\\\\/]@tensorflow[\\\\/]/;
const hooks = "let port; export function initialize(d) { port = d.port; }\\n" +
  "export async function resolve(s, c, next) { const r = await next(s, c); if (" + TF + ".test(r.url)) port.postMessage(r.url); return r; }";
const { port1, port2 } = new MessageChannel();
const resolved = [];
port1.on("message", (u) => resolved.push(u));
port1.unref();
register("data:text/javascript," + encodeURIComponent(hooks), { data: { port: port2 }, transferList: [port2] });
await import(process.env.QRAG_FACE_MODULE);
await new Promise((r) => setTimeout(r, 100)); // the hook's messages
const cached = Object.keys(createRequire(import.meta.url).cache).filter((k) => TF.test(k));
process.stdout.write(JSON.stringify({ tfengine: globalThis._tfengine !== undefined, cached, resolved }) + "\\n");
`;

function probe(rel: string): { tfengine: boolean; cached: string[]; resolved: string[] } {
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", PROBE], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, QRAG_FACE_MODULE: pathToFileURL(path.join(ROOT, rel)).href },
    timeout: 60_000,
  });
  assert.equal(r.status, 0, `probe of ${rel} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}

test("importing the engine's face (server/qrag/index.ts) loads no TensorFlow.js", () => {
  const face = probe("server/qrag/index.ts");
  assert.equal(face.tfengine, false, "globalThis._tfengine exists: tfjs-core was loaded");
  assert.deepEqual(face.cached, [], "CommonJS modules under node_modules/@tensorflow were loaded");
  assert.deepEqual(face.resolved, [], "modules under node_modules/@tensorflow were resolved");
});

test("the probe sees TensorFlow.js where it is loaded (server/qrag/runtime.ts)", () => {
  const runtime = probe("server/qrag/runtime.ts");
  assert.equal(runtime.tfengine, true);
  assert.ok(runtime.cached.length > 0);
  assert.ok(runtime.resolved.length > 0);
});
