/**
 * The hot loop's ceiling in CI: `npm run bench -- --backend webgpu --parts dispatch-counts` on
 * lavapipe counts one training iteration of the reference workload's loop (at a sliver of its
 * compute: same programs, same counts) and fails over DISPATCH_CEILING. The issue-27 budget
 * (DISPATCH_BUDGET) is reported beside it; the ceiling comes down as the loop is recorded.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { DISPATCH_CEILING } from "../server/qrag/bench/dispatch-summary.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

interface Counts {
  shape: string;
  dispatchesPerIteration: number;
  tfjsKernelsPerIteration: number;
  submitsPerIteration: number;
  readsPerIteration: number;
  withinCeiling: boolean;
  withinBudget: boolean;
  bindGroupsPerIteration: number;
  dawnPollsPerIteration: { immediate: number; timed: number };
  perPhase: Record<string, { dispatches: number; submits: number }>;
}

test("one training iteration on webgpu stays within the hot loop's ceiling (the bench part CI runs), makes no bind group, and awaits its reads without spinning", { skip, timeout: 300_000 }, (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hot-loop-"));
  try {
    const out = path.join(dir, "counts.json");
    // the flag: Dawn's binding crashes under frequent scavenges (engine-device-cases.ts)
    const r = spawnSync(process.execPath, ["--max-semi-space-size=128", "--import", "tsx", "server/qrag/bench/main.ts", "--backend", "webgpu", "--parts", "dispatch-counts", "--out", out], {
      cwd: ROOT,
      env: { ...process.env, QRAG_BACKEND: "", QRAG_WASM_THREADS: "1" },
      encoding: "utf8",
      timeout: 280_000,
    });
    const failure = (r.stderr ?? "").split("\n").find((l) => /bench failed|over its ceiling/.test(l)) ?? `exit ${r.status} signal ${r.signal}`;
    assert.equal(r.status, 0, failure);
    const c = (JSON.parse(fs.readFileSync(out, "utf8")) as { dispatchCounts: Counts }).dispatchCounts;
    assert.equal(c.shape, "counts");
    // every phase of the iteration ran on the device and was counted
    for (const phase of ["encode", "rollout", "target", "update"]) assert.ok((c.perPhase[phase]?.dispatches ?? 0) > 0, `no dispatch counted in ${phase}`);
    assert.ok(c.dispatchesPerIteration <= DISPATCH_CEILING.dispatches, `dispatches ${c.dispatchesPerIteration} > ${DISPATCH_CEILING.dispatches}`);
    assert.ok(c.submitsPerIteration <= DISPATCH_CEILING.submits, `submits ${c.submitsPerIteration} > ${DISPATCH_CEILING.submits}`);
    assert.ok(c.tfjsKernelsPerIteration <= DISPATCH_CEILING.tfjsKernels, `tfjs kernels ${c.tfjsKernelsPerIteration} > ${DISPATCH_CEILING.tfjsKernels}`);
    // the rollout's runs of lock-steps read together, the values never (λ-returns on the device): each read drains the GPU
    assert.ok(c.readsPerIteration <= DISPATCH_CEILING.reads!, `reads ${c.readsPerIteration} > ${DISPATCH_CEILING.reads}: ${JSON.stringify(c.perPhase)}`);
    assert.equal(c.withinCeiling, true);
    // the optimizer writes the variables in place: the recorded plans bind the same buffers every iteration, none made again
    assert.equal(c.bindGroupsPerIteration, 0, "bind groups made per iteration");
    // the reads' waits (hundreds of ms on lavapipe) poll Dawn on a timer after their first 2 ms, not
    // in a loop of immediates (~200 a millisecond: a core taken from lavapipe's GPU work)
    const polls = c.dawnPollsPerIteration;
    assert.ok(polls.timed > 0 && polls.immediate < 50_000, `Dawn's polls per iteration: ${JSON.stringify(polls)}`);
    t.diagnostic(`per iteration: ${c.dispatchesPerIteration} dispatches, ${c.tfjsKernelsPerIteration} tfjs kernels, ${c.submitsPerIteration} submits, ${c.readsPerIteration} reads, ${c.bindGroupsPerIteration} bind groups (ceiling ${JSON.stringify(DISPATCH_CEILING)}; within the issue's budget: ${c.withinBudget})`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
