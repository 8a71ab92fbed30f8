import { test } from "node:test";
import assert from "node:assert/strict";
import { hostProfile, shortFile, summarizeProfile, type CpuProfile } from "../server/qrag/bench/host-profile.ts";

const frame = (id: number, functionName: string, url: string, lineNumber = 0) => ({ id, callFrame: { functionName, url, lineNumber } });

test("host profile summary: self time by function and by file, V8's pseudo-functions as categories, heaviest first, the profiler's own calls left out", () => {
  const p: CpuProfile = {
    nodes: [
      frame(1, "(root)", ""), frame(2, "(idle)", ""), frame(3, "(garbage collector)", ""), frame(4, "(program)", ""),
      frame(5, "scoreLayout", "file:///repo/server/qrag/agent/device-candidates.ts", 9),
      frame(6, "packActions", "file:///repo/server/qrag/model/transformer.ts", 41),
      frame(7, "Engine.trackTensor", "file:///repo/node_modules/@tensorflow/tfjs-core/dist/tf-core.node.js", 4900),
      frame(8, "writeBuffer", ""),
      // the profiler's own stop: node:inspector's post and the native dispatch under it
      { ...frame(9, "post", "node:inspector", 110), children: [10] },
      frame(10, "dispatch", ""),
    ],
    //         idle  gc   prog  score score pack  tfjs  native profiler
    samples: [2, 3, 4, 5, 5, 6, 7, 8, 5, 10, 9],
    timeDeltas: [4000, 3000, 1000, 2000, 2000, 1500, 500, 1000, -5, 9000, 500],
  };
  const s = summarizeProfile(p, 4);
  assert.equal(s.sampledMs, 15);
  assert.deepEqual(s.categories, { idle: 4, gc: 3, program: 1, js: 7 });
  assert.deepEqual(s.functions, [
    { fn: "scoreLayout", at: "server/qrag/agent/device-candidates.ts:10", ms: 4, share: 0.267 },
    { fn: "packActions", at: "server/qrag/model/transformer.ts:42", ms: 1.5, share: 0.1 },
    { fn: "writeBuffer", at: "(native):1", ms: 1, share: 0.067 },
    { fn: "Engine.trackTensor", at: "@tensorflow/tfjs-core:4901", ms: 0.5, share: 0.033 },
  ]);
  assert.deepEqual(s.files.map((f) => f.file), ["server/qrag/agent/device-candidates.ts", "server/qrag/model/transformer.ts"], "the top ⌈4/2⌉ files");
});

test("host profile summary, total time: a function's samples and its callees', each function once per sample (recursion), V8's pseudo-frames and the profiler's calls left out", () => {
  const rollout = "file:///repo/server/qrag/agent/rollout.ts";
  const p: CpuProfile = {
    nodes: [
      { ...frame(1, "(root)", ""), children: [2, 8, 9] },
      { ...frame(2, "steps", rollout, 9), children: [3, 5] },
      { ...frame(3, "lockStep", "file:///repo/server/qrag/model/webgpu/lock-step.ts", 99), children: [4] },
      frame(4, "createBindGroup", ""),
      { ...frame(5, "steps", rollout, 9), children: [6] }, // steps calling itself
      { ...frame(6, "embed", rollout, 30), children: [7] },
      frame(7, "createBindGroup", ""),
      frame(8, "(garbage collector)", ""),
      { ...frame(9, "post", "node:inspector", 110), children: [10] },
      frame(10, "dispatch", ""),
    ],
    samples: [4, 4, 3, 7, 6, 8, 10],
    timeDeltas: [1000, 1000, 500, 2000, 500, 3000, 9000],
  };
  const s = summarizeProfile(p, 4);
  assert.deepEqual(s.inclusive, [
    { fn: "steps", at: "server/qrag/agent/rollout.ts:10", ms: 5, share: 0.625 },
    { fn: "createBindGroup", at: "(native):1", ms: 4, share: 0.5 },
    { fn: "lockStep", at: "server/qrag/model/webgpu/lock-step.ts:100", ms: 2.5, share: 0.313 },
    { fn: "embed", at: "server/qrag/agent/rollout.ts:31", ms: 2.5, share: 0.313 },
  ]);
  // self time alone puts Dawn's call first
  assert.deepEqual(s.functions.map((f) => [f.fn, f.ms]), [["createBindGroup", 4], ["lockStep", 0.5], ["embed", 0.5]]);
});

test("short file names: ours from server/, packages by name, Node's own as node:…", () => {
  assert.equal(shortFile("file:///w/main/server/qrag/model/base.ts"), "server/qrag/model/base.ts");
  assert.equal(shortFile("file:///w/main/node_modules/webgpu/index.js"), "webgpu");
  assert.equal(shortFile("file:///w/main/node_modules/a/node_modules/@tensorflow/tfjs-core/x.js"), "@tensorflow/tfjs-core");
  assert.equal(shortFile("node:internal/timers"), "node:internal/timers");
  assert.equal(shortFile("file:///d/.device/bench/bench.mjs"), "bench.mjs");
  assert.equal(shortFile(""), "(native)");
});

function spinFor(ms: number): number {
  const end = performance.now() + ms;
  let x = 0;
  // arithmetic between rare clock reads, so the self time is this function's
  while (performance.now() < end) for (let i = 0; i < 200_000; i++) x = (x * 1.000001 + i) % 1e9;
  return x;
}

test("host profile of a real run: the busy function is the heaviest, the wait shows as idle; a failing run's error comes through and the profiler stops", async () => {
  const s = await hostProfile(async () => {
    spinFor(150);
    await new Promise((r) => setTimeout(r, 100));
  });
  assert.equal(s.functions[0].fn, "spinFor", JSON.stringify(s.functions.slice(0, 4)));
  assert.ok(s.functions[0].ms >= 100, `${s.functions[0].ms} ms`);
  assert.ok(s.categories.idle >= 60, `idle ${s.categories.idle} ms`);
  assert.ok(s.sampledMs >= 230 && s.sampledMs < 2000, `${s.sampledMs} ms sampled`);
  await assert.rejects(hostProfile(async () => { throw new Error("bench part failed"); }), /bench part failed/);
  // by file: spinFor, hot by now, may be inlined into its caller (a frame of this file too)
  const again = await hostProfile(async () => void spinFor(100));
  assert.equal(again.files[0].file, "test/host-profile.test.ts", `a profile after a failed one: ${JSON.stringify(again.files)}`);
  assert.ok(again.files[0].ms >= 60, `${again.files[0].ms} ms`);
});

test("host profile allocations: MiB allocated in all, collected objects included, by the allocating function", async () => {
  function churn(): number {
    const kept: { i: number }[] = [];
    for (let i = 0; i < 200_000; i++) kept.push({ i });
    return kept.length;
  }
  const s = await hostProfile(async () => {
    for (let k = 0; k < 20; k++) churn(); // ≥ 3 MiB each, all garbage by the end
  });
  const a = s.allocations!;
  assert.ok(a.mib >= 40, `the collected objects counted (${a.mib} MiB)`);
  assert.equal(a.functions[0].fn, "churn", JSON.stringify(a.functions.slice(0, 3)));
  assert.match(a.functions[0].at, /^test\/host-profile\.test\.ts:\d+$/);
  assert.ok(a.functions[0].share > 0.8, `its share (${a.functions[0].share})`);
});
