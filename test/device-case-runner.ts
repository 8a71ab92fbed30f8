/**
 * Shared by the webgpu test files: each case runs in a fresh process (a Dawn device per process),
 * and a case file's last stdout line is its JSON result. A case whose process fails fails its test
 * at once, a crash (killed by a signal, or exit 134/139: SIGABRT/SIGSEGV inside Dawn/lavapipe)
 * included: with --max-semi-space-size=128 no such crash has been seen (engine-device-cases.ts
 * says why the flag), so one is a finding to look at, never retried away.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import { countersOn, onDevice } from "../server/qrag/backend/device.ts";
import { BUNDLE_ENV, caseBundle } from "./test-bundles.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

export function runCaseFile<T>(file: string, name: string): T {
  // bundled: a case process starts ~1.5 s of CPU quicker than under tsx (test-bundles.ts)
  const r = spawnSync(process.execPath, ["--max-semi-space-size=128", caseBundle(file), name], {
    cwd: ROOT,
    env: { ...process.env, ...BUNDLE_ENV, QRAG_BACKEND: "", QRAG_WASM_THREADS: "1" },
    encoding: "utf8",
    timeout: 240_000,
  });
  if (r.status === 0) return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as T;
  const crashed = r.signal !== null || r.status === 134 || r.status === 139;
  const stderr = (r.stderr ?? "").split("\n").filter((l) => !l.startsWith("Warning")).slice(-12).join("\n");
  throw new Error(`${name} (${file}): ${crashed ? "the case process CRASHED" : "the case process failed"}: exit ${r.status} signal ${r.signal}\n${stderr}`);
}

/** Inside a case process: switch to the cpu or webgpu backend and start the device counters. */
export async function onBackend(name: "cpu" | "webgpu"): Promise<void> {
  if (name === "webgpu") await pickBackend("webgpu");
  else await tf.setBackend("cpu");
  if (tf.getBackend() !== name || onDevice() !== (name === "webgpu")) throw new Error(`backend ${tf.getBackend()} is not ${name}`);
  countersOn();
}

/** max |a − b| / max(|b|, floor). */
export function relDiff(a: ArrayLike<number>, b: ArrayLike<number>, floor = 1e-6): number {
  if (a.length !== b.length) return Infinity;
  let scale = floor;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]));
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m / scale;
}
