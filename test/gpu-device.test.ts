/**
 * The GPU route's pieces that run without a GPU: `npm run bench`'s flags (--backend, --sizes,
 * --parts, --out), matmul sizing, the device pack's run.sh and size check, the babilong-gpu preset,
 * and (on lavapipe) that the Dawn instance outlives a garbage collection: a collected instance once
 * left tfjs's reads unresolved or aborted the process.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { defaultMatmulSizes, parseBenchArgs } from "../server/qrag/bench/cli.ts";
import { productsPerRepeat } from "../server/qrag/bench/matmul.ts";
import { DISPATCH_BUDGET, summarizeDispatch } from "../server/qrag/bench/dispatch-summary.ts";
import { dispatchLines, gpuTable, tailLines, type OursFile, type TorchFile } from "../server/qrag/bench/gpu-table.ts";
import { MATMUL_TILES, setTinyTiles, tileFor } from "../server/qrag/model/webgpu/matmul.ts";
import { attentionGrid, attentionLanes, attentionTile, forwardCode, setKeyLanes } from "../server/qrag/model/webgpu/attention.ts";
import { rowLanes, rowWorkgroups } from "../server/qrag/model/webgpu/row-reduce.ts";
import { CARRIED, DEBS, DEVICE_TREE_LIMIT, WEBGPU_SHIM, appBundles, bundle, runScript, sizeCheck, type BundleImports } from "../scripts/device/pack.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { checkEncoderPath } from "../server/qrag/model/hf/encoder-path.ts";
import { webgpuSkip } from "./webgpu-skip.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

test("bench flags: --backend, --sizes, --lengths, --parts, --out, in = and space forms; mistakes are errors", () => {
  assert.deepEqual(parseBenchArgs(["--backend", "webgpu", "--parts=matmul,webgpu-check", "--sizes=512,1024", "--out", "x.json"]), {
    backend: "webgpu",
    parts: ["matmul", "webgpu-check"],
    sizes: [512, 1024],
    outFile: "x.json",
  });
  assert.deepEqual(parseBenchArgs([]), {});
  assert.deepEqual(parseBenchArgs(["--backend=dawn"]), { backend: "dawn" });
  assert.throws(() => parseBenchArgs(["--backend", "cuda"]), /unknown tfjs backend "cuda"/);
  assert.throws(() => parseBenchArgs(["--backend"]), /--backend needs a value/);
  assert.throws(() => parseBenchArgs(["--parts", "--sizes=1"]), /--parts needs a value/);
  assert.throws(() => parseBenchArgs(["--size=512"]), /unknown argument "--size=512"/);
  assert.throws(() => parseBenchArgs(["matmul"]), /unknown argument "matmul"/);
  assert.throws(() => parseBenchArgs(["--sizes=512,0"]), /--sizes: item 2 \("0"\) is not a whole number from 1 to 16384/);
  assert.throws(() => parseBenchArgs(["--sizes=1.5"]), /--sizes: item 1 \("1.5"\) is not a whole number from 1 to 16384/);
  assert.throws(() => parseBenchArgs(["--parts=,"]), /empty list/);
  assert.deepEqual(parseBenchArgs(["--lengths=40000,400000", "--submit-batch", "64", "--pool-ratio=off"]), { lengths: [40000, 400000], submitBatch: 64, poolRatio: Infinity });
  assert.deepEqual(parseBenchArgs(["--pool-ratio", "1.5"]), { poolRatio: 1.5 });
  assert.deepEqual(parseBenchArgs(["--kernel-shapes", "workload"]), { kernelShapes: "workload" });
  assert.throws(() => parseBenchArgs(["--kernel-shapes=bert"]), /--kernel-shapes "bert" is not "workload" or "all"/);
  assert.deepEqual(parseBenchArgs(["--gpu-storage", "f16"]), { gpuStorage: "f16" });
  assert.throws(() => parseBenchArgs(["--gpu-storage=fp16"]), /--gpu-storage "fp16" is not "f32" or "f16"/);
  assert.deepEqual(parseBenchArgs(["--parts", "dispatch-bert", "--bert-size=tiny"]), { parts: ["dispatch-bert"], bertSize: "tiny" });
  assert.throws(() => parseBenchArgs(["--bert-size", "large"]), /--bert-size "large" is not "base" or "tiny"/);
  assert.deepEqual(parseBenchArgs(["--split-k", "1"]), { splitK: 1 });
  assert.deepEqual(parseBenchArgs(["--tiny-tiles", "0"]), { tinyTiles: false });
  assert.deepEqual(parseBenchArgs(["--tiny-tiles=1"]), { tinyTiles: true });
  assert.throws(() => parseBenchArgs(["--tiny-tiles", "32"]), /--tiny-tiles "32" is not 0 or 1/);
  assert.deepEqual(parseBenchArgs(["--layer-tail", "0"]), { layerTail: false });
  assert.throws(() => parseBenchArgs(["--layer-tail", "2"]), /--layer-tail "2" is not 0 or 1/);
  assert.deepEqual(parseBenchArgs(["--join", "0"]), { join: false });
  assert.throws(() => parseBenchArgs(["--join", "yes"]), /--join "yes" is not 0 or 1/);
  assert.deepEqual(parseBenchArgs(["--deferred-reads", "0"]), { deferredReads: false });
  assert.deepEqual(parseBenchArgs(["--deferred-reads=1"]), { deferredReads: true });
  assert.throws(() => parseBenchArgs(["--deferred-reads", "yes"]), /--deferred-reads "yes" is not 0 or 1/);
  assert.deepEqual(parseBenchArgs(["--eval", "0"]), { evalGroups: false });
  assert.throws(() => parseBenchArgs(["--eval", "2"]), /--eval "2" is not 0 or 1/);
  assert.throws(() => parseBenchArgs(["--split-k=0"]), /--split-k: item 1 \("0"\) is not a whole number from 1 to 64/);
  assert.deepEqual(parseBenchArgs(["--key-lanes", "1"]), { keyLanes: 1 });
  assert.throws(() => parseBenchArgs(["--key-lanes=3"]), /--key-lanes "3" is not 1, 2, 4, 8 or 16/);
  assert.throws(() => parseBenchArgs(["--pool-ratio=0.5"]), /--pool-ratio "0.5" is not a number from 1 to 1000 or "off"/);
  assert.throws(() => parseBenchArgs(["--lengths=2000001"]), /--lengths: item 1 \("2000001"\) is not a whole number from 1 to 2000000/);
  assert.deepEqual(defaultMatmulSizes("webgpu"), [512, 1024, 2048, 4096]);
  assert.deepEqual(defaultMatmulSizes("wasm"), [512]);
});

test("hot-loop figures: phases summed, tfjs kernels are kernels less our fused programs, host ms is wall less read waits (per phase too), compiles summed, GPU ms where timed, judged against the budget", () => {
  const phase = (dispatches: number, kernels: number, fused: number, submits: number, readWaitMs: number, gpuMs = 0, wallMs = 0, compiles = 0) => ({ reads: 1, syncReads: 0, kernels, dispatches, fused, submits, readWaitMs, wallMs, compiles, compileMs: compiles * 10.25, gpuMs });
  const s = summarizeDispatch({ rollout: phase(100, 120, 30, 7, 40.25, 12.5, 70.5, 1), update: phase(40, 40, 40, 2, 0, 3.04, 29.5, 2) }, 100, true);
  assert.equal(s.compilesPerIteration, 3);
  assert.equal(s.compileMsPerIteration, 30.8);
  assert.deepEqual(s.hostMsByPhase, { rollout: 30.3, update: 29.5 });
  assert.equal(s.gpuMsPerIteration, 15.5);
  assert.equal(summarizeDispatch({ update: phase(40, 40, 40, 2, 0, 3) }, 5).gpuMsPerIteration, null, "untimed: no GPU figure, not 0");
  assert.equal(s.dispatchesPerIteration, 140);
  assert.equal(s.tfjsKernelsPerIteration, 90);
  assert.equal(s.submitsPerIteration, 9);
  assert.equal(s.readWaitMsPerIteration, 40.3);
  assert.equal(s.hostMsPerIteration, 59.8);
  assert.equal(s.withinBudget, false, "tfjs kernels are over their budget of 0");
  assert.equal(summarizeDispatch({ update: phase(150, 20, 20, 10, 0) }, 5).withinBudget, true);
  assert.equal(summarizeDispatch({ update: phase(151, 20, 20, 10, 0) }, 5).withinBudget, false);
  assert.equal(summarizeDispatch({ update: phase(150, 20, 20, 11, 0) }, 5).withinBudget, false);
  assert.deepEqual(DISPATCH_BUDGET, { dispatches: 150, submits: 10, tfjsKernels: 0 });
});

test("tiled matMul's tile: 64×128 once a product has ≥ 128 blocks of 128×128 (BERT-base's 32,768×768, 2048²), else 64×64, and 32×32 under 128 blocks of 64×64 (a rollout step's) unless told not to", () => {
  assert.equal(tileFor(32768, 768), MATMUL_TILES["64x128-k8"]);
  assert.equal(tileFor(2048, 2048), MATMUL_TILES["64x128-k8"]);
  assert.equal(tileFor(1024, 1024), MATMUL_TILES["64x64-k16"]);
  assert.equal(tileFor(1024, 2048), MATMUL_TILES["64x128-k8"]);
  assert.equal(tileFor(896, 2048), MATMUL_TILES["64x64-k16"]);
  assert.equal(tileFor(704, 768), MATMUL_TILES["64x64-k16"], "11 × 12 = 132 blocks of 64×64");
  assert.equal(tileFor(640, 768), MATMUL_TILES["32x32-k16"], "10 × 12 = 120 blocks of 64×64");
  assert.equal(tileFor(128, 768), MATMUL_TILES["32x32-k16"], "one BERT-base state of 128 tokens: 24 blocks of 64×64 → 96 of 32×32");
  assert.equal(tileFor(128, 768, false), MATMUL_TILES["64x64-k16"], "a weight gradient's choice (split along K instead)");
  // the bench's --tiny-tiles 0: the 64×64 tile as before (the A/B figures.sh times)
  setTinyTiles(false);
  try {
    assert.equal(tileFor(128, 768), MATMUL_TILES["64x64-k16"]);
    assert.equal(tileFor(128, 768, true), MATMUL_TILES["64x64-k16"], "a product that may take 32×32 tiles");
  } finally {
    setTinyTiles(true);
  }
});

test("fused attention's tiles fit the workgroup memory: 32 rows at d_head 64 in WebGPU's default 16 KiB, 64 at most; key lanes only on small grids with room to combine; LayerNorm's threads per row grow with the width", () => {
  assert.equal(attentionTile(64, 16384), 32);
  assert.equal(attentionTile(64, 32768), 64);
  assert.equal(attentionTile(32, 65536), 64);
  assert.equal(attentionTile(96, 16384), 21);
  assert.throws(() => attentionTile(4096, 16384), /d_head 4096 does not fit 16384 bytes/);
  assert.deepEqual(attentionGrid(16, 12, 512), [8, 192, 1]);
  assert.deepEqual(attentionGrid(70000, 1, 1), [1, 65535, 2]);
  // key lanes where the grid is small: a rollout's 4 sequences of 172 tokens (48 workgroups → 176), not an update's 64
  assert.equal(attentionLanes(4, 4, 172, 32, 64), 4);
  assert.deepEqual(attentionGrid(4, 4, 172, 4), [11, 16, 1]);
  assert.equal(attentionLanes(64, 4, 172, 32, 64), 1);
  assert.equal(attentionLanes(4, 4, 172, 64, 32), 1, "a tile under 64 rows has no room to combine the lanes");
  assert.equal(attentionLanes(4, 1, 64, 1, 64), 1, "d_head 1: no room for m and l");
  assert.throws(() => forwardCode(64, "packed", false, 32, false, 4), /key lanes need a tile of 64 rows/);
  // the bench's --key-lanes 1: one thread per query everywhere (the A/B figures.sh times)
  setKeyLanes(1);
  try {
    assert.equal(attentionLanes(4, 4, 172, 32, 64), 1);
  } finally {
    setKeyLanes(4);
  }
  assert.throws(() => setKeyLanes(3), /key lanes 3 is not 1, 2, 4, 8 or 16/);
  assert.deepEqual([8, 24, 128, 768].map(rowLanes), [8, 8, 32, 64]);
  assert.deepEqual(rowWorkgroups(37, 24), [5, 1, 1]);
  assert.deepEqual(rowWorkgroups(200000, 768), [65535, 4, 1]);
});

test("GPU table: ours beside PyTorch, ratios > 1 where we are faster for rates and for times alike", () => {
  const ours: OursFile = {
    device: "webgpu: test", date: "2026-11-26T00:00:00Z",
    matmul: [{ shape: "1024x1024x1024", gflops: 10_000 }],
    matmulTiled: { a: [{ shape: "1024x1024x1024", gflops: 30_000 }], b: [{ shape: "1024x1024x1024", gflops: 20_000 }] },
    matmulChains: { a: [{ shape: "128x768x3072", usPerProduct: 60, gpuUsPerProduct: 40 }, { shape: "256x128x512", usPerProduct: 30, gpuUsPerProduct: null }], b: [{ shape: "128x768x3072", usPerProduct: 50, gpuUsPerProduct: 20 }] },
    workloadTransformer: {
      training: {
        transitionsPerSecond: 200, updateSeconds: { median: 0.02 }, iterationSeconds: { median: 0.34 },
        hotLoop: { dispatchesPerIteration: 585, tfjsKernelsPerIteration: 0, submitsPerIteration: 21, hostMsPerIteration: 40, readWaitMsPerIteration: 300, gpuMsPerIteration: 120.5, perPhase: { rollout: { gpuMs: 80.25 }, update: { gpuMs: 40.25 }, encode: { gpuMs: 0 } } },
        hostByFunction: { iterations: 2, sampledMs: 90, categories: { idle: 30, gc: 10, program: 20, js: 30 }, functions: [{ fn: "scoreLayout", at: "bench.mjs:9", ms: 12, share: 0.13 }] },
        gpuByProgram: { totalMs: 125, programs: [{ program: "mm", ms: 100, passes: 40, share: 0.8 }, { program: "attn", ms: 15, passes: 4, share: 0.12 }, { program: "pool", ms: 10, passes: 4, share: 0.08 }] },
      },
      encode: { chunksPerSecond: 100_000 },
      episodes: { "40000": { episodeSeconds: { median: 0.5 } }, "400000": { estimated: true, episodeSeconds: 9 } },
    },
    encodeStream: { chunks: 40_000, streamed: { chunksPerSecond: 150_000 }, packedFirst: { chunksPerSecond: 120_000 }, streamedF16: { chunksPerSecond: 300_000 }, f16RelDiff: 0.0012 },
  };
  const torch: TorchFile = { meta: { gpu: "G", torch: "2" }, parts: { train: { env_transitions_per_s: { median: 400 }, update_s: { median: 0.04 } }, encode: { chunks_per_s: { median: 600_000 } }, eval40k: { episode_latency_s: { median: 0.1 } }, eval400k: { episode_latency_s: { median: 1 } } } };
  const md = gpuTable(ours, torch, { matmul: [{ shape: "1024x1024x1024", gflops: 40_000 }] }, { encode: [] });
  assert.match(md, /\| matMul 1024³ GFLOP\/s, tfjs \| 10,000 \| 40,000 \| 0\.250× \|/);
  assert.match(md, /\| matMul 1024³ GFLOP\/s, ours \(tile a\) \| 30,000 \| 40,000 \| 0\.750× \|/);
  assert.match(md, /each reading the one before .*fastest first: 128x768x3072: b 20\.0 \(50\.0\), a 40\.0 \(60\.0\); 256x128x512: a 30\.0 \(30\.0\)\./, "GPU µs first, the fastest tile first; wall time where untimed");
  assert.match(md, /\| training transitions\/s[^|]*\| 200 \| 400 \| 0\.500× \|/);
  assert.match(md, /\| update [^|]*\| 0\.020 \| 0\.040 \| 2\.00× \|/, "a shorter time is a ratio above 1");
  assert.match(md, /\| greedy episode, N = 400,000 [^|]*\| — \| 1\.00 \| — \|/, "an estimated figure is not shown as measured");
  assert.match(md, /585 GPU dispatches, 0 tfjs kernels, 21 command buffers submitted; 40 ms of host time and 300 ms awaiting reads \(of 340 ms\)/);
  assert.match(md, /GPU time inside compute passes \(timestamp queries\): 120\.5 ms per iteration \(rollout 80\.3, update 40\.3 ms\)/, "phases without GPU time left out");
  assert.match(md, /\| encode, the same, streamed [^|]*40,000 chunks, chunks\/s \| 150,000 \| 600,000 \| 0\.250× \|/);
  assert.match(md, /\| encode, the same, streamed, f16 activations \(gpu_storage f16; max \|Δ\| 1\.2e-3 of the largest value\), chunks\/s \| 300,000 \| 600,000 \| 0\.500× \|/);
  assert.match(md, /GPU time per program, one training iteration \(each program timed in a pass of its own\): 125\.0 ms; mm 80 % \(40×\), attn 12 % \(4×\)\./, "the programs up to 90 % of the time");
  assert.doesNotMatch(md, /streamed encode \(each/, "no line without its figures");
  assert.match(md, /Host time per training iteration \(2 more under the CPU profiler\), ms: JS 15\.0, native 10\.0, GC 5\.00, idle 15\.0; heaviest: scoreLayout \(bench\.mjs:9\) 6\.00\./);
});

test("GPU table's dispatch lines: the loop's split, BERT's iteration by phase, host time by total time (named functions, not Node's), the evaluation both ways", () => {
  const loop = { dispatchesPerIteration: 393, tfjsKernelsPerIteration: 0, submitsPerIteration: 6, readsPerIteration: 1, hostMsPerIteration: 20.4, readWaitMsPerIteration: 15, gpuMsPerIteration: 30.6 };
  const host = {
    iterations: 2, sampledMs: 100, categories: { idle: 40, gc: 10, program: 10, js: 40 }, functions: [],
    inclusive: [
      { fn: "(anonymous)", at: "bench.mjs:1", ms: 90, share: 0.9 },
      { fn: "processTimers", at: "node:internal/timers:504", ms: 60, share: 0.6 },
      { fn: "deviceRuns", at: "bench.mjs:40", ms: 40, share: 0.4 },
      { fn: "recordSteps", at: "bench.mjs:90", ms: 10, share: 0.1 },
    ],
    allocations: { mib: 50, functions: [{ fn: "listOnTimeout", at: "node:internal/timers:524", mib: 30 }, { fn: "word", at: "bench.mjs:120", mib: 12 }, { fn: "ids", at: "bench.mjs:100", mib: 6 }] },
  };
  const evaluation = { episodes: 32, steps: 192, oneAtATime: { seconds: 6, dispatches: 2912, reads: 192 }, sideBySide: { seconds: 1.5, dispatches: 101, reads: 6 }, differentPicks: 0 };
  const lines = dispatchLines({
    dispatch: { ...loop, evaluation, hostMsByPhase: { encode: 1.25, rollout: 12, update: 7.2 }, compilesPerIteration: 1.5, compileMsPerIteration: 2750.4 },
    dispatchBert: { ...loop, size: "base", iterationSeconds: { median: 3.1 }, rolloutSeconds: { median: 2.5 }, updateSeconds: { median: 0.52 }, perPhase: { encode: { gpuMs: 436 }, rollout: { gpuMs: 478 }, update: { gpuMs: 513 } }, hostByFunction: host },
  });
  assert.equal(lines[0], "Reference iteration (`dispatch`): 393 dispatches, 6 submits, 1 reads; host 20 ms (encode 1.3, rollout 12.0, update 7.2), awaiting reads 15 ms, GPU 31 ms; 1.5 programs compiled (2,750 ms).");
  assert.equal(lines[1], "  its evaluation, 32 episodes (192 steps): one at a time 6.00 s (2,912 dispatches, 192 reads), side by side 1.50 s (101, 6): 4.00×; picks differing 0.");
  assert.match(lines[2], /^BERT-base iteration \(`dispatch-bert`\): 3\.10 s \(rollout 2\.50, update 0\.520\); 393 dispatches, 6 submits, 1 reads; host 20 ms, awaiting.*GPU ms encode · rollout · target · update 436 · 478 · \? · 513\.$/);
  assert.equal(lines[3], "  host by total time, ms per iteration: deviceRuns 20.0, recordSteps 5.00.");
  assert.equal(lines[4], "  allocated per iteration (what the GC collects): 25.0 MiB; by function: word 6.00, ids 3.00.");
  assert.equal(lines.length, 5, "no evaluation line without its figures");
});

test("gpu-table prints the layer tail's A/B by rows: GPU µs per forward (wall where untimed), dispatches; nothing without the part", () => {
  const timing = (us: number, gpu: number | null, dispatches: number) => ({ usPerForward: us, gpuUsPerForward: gpu, dispatches });
  const lines = tailLines([
    { rows: 64, shape: "4x16", tail: timing(120, 40.5, 6), separate: timing(150, 52, 10) },
    { rows: 1024, shape: "4x256", tail: timing(900, null, 6), separate: timing(800, null, 11) },
  ]);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /4x16 \(64 rows\): 40\.5 \(120\.0\) against 52\.0 \(150\.0\), 6 against 10 dispatches; 4x256 \(1,024 rows\): 900\.0 \(900\.0\) against 800\.0 \(800\.0\), 6 against 11 dispatches\.$/);
  assert.deepEqual(tailLines(undefined), []);
});

test("matmul repeats: about the FLOP asked for, 1 to 200 products", () => {
  assert.equal(productsPerRepeat(512, 2e9), 8);
  assert.equal(productsPerRepeat(4096, 5e10), 1);
  assert.equal(productsPerRepeat(1024, 5e10), 24);
  assert.equal(productsPerRepeat(16, 5e10), 200);
});

test("device run.sh: valid bash that sets up node, dawn.node, the Vulkan loader and NVIDIA's ICD", () => {
  const sh = runScript();
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "qrag-dev-")), "run.sh");
  fs.writeFileSync(file, sh);
  execFileSync("bash", ["-n", file]);
  for (const want of ['xz -dc "$D/node.xz"', 'xz -dc "$DAWN.xz"', 'dpkg -x "$f" /', "XDG_RUNTIME_DIR", "export QRAG_CONFIG_DIR=", "export VK_DRIVER_FILES=$ICD", '"$D/bench/bench.mjs" --out "$OUT/bench.json"', "--device cuda"]) {
    assert.ok(sh.includes(want), `run.sh has ${want}`);
  }
  const r = spawnSync("bash", [file, "nope"], { env: { ...process.env, OUT: path.dirname(file) }, encoding: "utf8" });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command nope/);
  assert.ok(DEBS.includes("libvulkan1") && DEBS.includes("libglvnd0"), "the loader and glvnd (libGLX_nvidia needs libGLdispatch)");
  assert.match(WEBGPU_SHIM, /await globalThis\.__qragLoadTfjsWebgpu\(\)/);
  const entry = fs.readFileSync(path.join(ROOT, "scripts/device/bench-entry.ts"), "utf8");
  assert.match(entry, /__qragLoadTfjsWebgpu = \(\) => import\("@tensorflow\/tfjs-backend-webgpu"\)/, "the entry defines what the shim calls");
});

test("device pack's bundles load at start only packages the pack carries; the LLM providers stay lazy chunks", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-pack-"));
  try {
    const bundles: Record<string, BundleImports> = { ...appBundles(path.join(dir, "app")), "bench/bench.mjs": bundle("scripts/device/bench-entry.ts", path.join(dir, "bench/bench.mjs")) };
    for (const [file, { atStart }] of Object.entries(bundles)) {
      assert.deepEqual(atStart.filter((p) => !CARRIED.has(p)), [], `${file} loads at start only what the pack carries`);
    }
    // the engine holds the LLM reader and agent (node-llama-cpp, openai: not carried), loaded on first use
    for (const file of ["server/worker/engine-process.mjs", "bench/bench.mjs"]) {
      for (const p of ["node-llama-cpp", "openai"]) assert.ok(bundles[file].lazy.includes(p), `${file} loads ${p} lazily`);
    }
    assert.deepEqual(bundles["server/main.mjs"].atStart, ["@node-rs/argon2"], "the server loads argon2 at start, the rest when used");
    // the chunks sit beside their entry (paths computed from import.meta.url hold)
    assert.ok(fs.readdirSync(path.join(dir, "app/server/worker")).some((f) => /^engine-process-\w+\.mjs$/.test(f)));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("figures.sh (one device call, stub run.sh): every step once, 8 files back (the tool's limit), the mission given what time is left", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-figures-"));
  try {
    fs.mkdirSync(path.join(root, "scripts/device"), { recursive: true });
    fs.mkdirSync(path.join(root, ".device"));
    fs.mkdirSync(path.join(root, "out"));
    fs.copyFileSync(path.join(ROOT, "scripts/device/figures.sh"), path.join(root, "scripts/device/figures.sh"));
    // each command writes what the real one writes (bench to --out, the last one given) and logs its arguments
    fs.writeFileSync(path.join(root, ".device/run.sh"), [
      'cmd=$1; shift; echo "$cmd $*" >> "$CALLS"',
      'case $cmd in',
      '  info) echo i > "$OUT/info.txt" ;;',
      '  bench) o="$OUT/bench.json"; while [ $# -gt 0 ]; do [ "$1" = --out ] && o=$2; shift; done; echo "{}" > "$o" ;;',
      '  torch) echo "{}" > "$OUT/torch.json"; echo log > "$OUT/torch.log" ;;',
      '  torch-matmul) echo "{}" > "$OUT/torch-matmul.json" ;;',
      '  torch-encode) echo "{}" > "$OUT/torch-encode.json" ;;',
      '  mission) echo "{}" > "$OUT/mission.json"; echo m > "$OUT/mission.log" ;;',
      'esac',
    ].join("\n") + "\n");
    const calls = path.join(root, "calls.txt");
    const r = spawnSync("bash", [path.join(root, "scripts/device/figures.sh")], { env: { ...process.env, OUT: path.join(root, "out"), CALLS: calls }, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const files = fs.readdirSync(path.join(root, "out")).sort();
    assert.deepEqual(files, ["bench.json", "bench.log", "dispatch.json", "info.txt", "mission.json", "torch-encode.json", "torch-matmul.json", "torch.json"]);
    const log = fs.readFileSync(calls, "utf8").trim().split("\n");
    assert.deepEqual(log.map((l) => l.split(" ")[0]), ["info", "bench", "torch", "torch-matmul", "torch-encode", "bench", "bench", "bench", "bench", "bench", "mission"]);
    assert.match(log[1], /--parts \S*workload-transformer\S*encode-stream\S*,layer-tail$/);
    assert.match(log[5], /--host-profile 1 --parts dispatch,dispatch-hf,dispatch-bert --out \S*\/out\/dispatch.json/);
    // the weight gradients whole and attention's one thread per query, against the defaults just before: outside $OUT (its figures in bench.log)
    assert.match(log[6], /--eval 0 --split-k 1 --key-lanes 1 --tiny-tiles 0 --parts dispatch,dispatch-bert --out \/tmp\//);
    // a read per run of lock-steps and the values read, against the defaults: outside $OUT too
    assert.match(log[7], /--eval 0 --deferred-reads 0 --parts dispatch,dispatch-bert --out \/tmp\//);
    // the layers' programs after the QKV apart, the reference iteration only: outside $OUT too
    assert.match(log[8], /--eval 0 --layer-tail 0 --parts dispatch --out \/tmp\//);
    // every program a dispatch of its own (no joint programs), the reference iteration only: outside $OUT too
    assert.match(log[9], /--eval 0 --join 0 --parts dispatch --out \/tmp\//);
    assert.doesNotMatch(log[5], /--eval 0/, "the defaults' step times the evaluation");
    // the steps took no time here: the mission gets its full 150 s box (100 s of training, deadline 145)
    assert.match(log[10], /--phases base --base-seconds 100 --deadline 145 --expect-backend webgpu/);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("device pack size check: the 64 MiB a call carries, the checkout included", () => {
  assert.deepEqual(sizeCheck({ a: 30 * 2 ** 20, b: 30 * 2 ** 20 }, 4 * 2 ** 20), { total: DEVICE_TREE_LIMIT, fits: true });
  assert.equal(sizeCheck({ a: 60 * 2 ** 20 }, 4 * 2 ** 20 + 1).fits, false);
});

test("babilong-gpu preset: the reference recipe with an hf encoder from the data root", () => {
  const c = resolveConfig({ preset: "babilong-gpu" });
  assert.equal(c.envs.name, "babilong");
  assert.equal(c.algo.encoder.type, "hf");
  assert.equal(c.algo.encoder.path, "models/contriever");
  assert.deepEqual([c.batch_size, c.accumulate_grads, c.envs_parallel, c.steps_count, c.eval_interval, c.eval_episodes], [64, 1, 1, 50000, 500, 1000]);
  assert.equal(c.algo.optimizer.lr, 5e-5);
  assert.deepEqual(c.algo.scheduler, { type: "warmup_linear", warmup: 1000, ratio: 0 });
  assert.equal(c.backend, "auto");
  // without the model folder in the data root the run is refused with the path named
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-gpu-preset-"));
  assert.match(checkEncoderPath(c.algo.encoder, empty).issues[0]?.message ?? "", /models\/contriever/);
  // another folder and task by override
  const o = resolveConfig({ preset: "babilong-gpu", overrides: ["algo.encoder.path=models/bert-tiny", "envs.task=qa1"] });
  assert.equal(o.algo.encoder.path, "models/bert-tiny");
  assert.ok(o.envs.name === "babilong" && /^qa1/.test(o.envs.task), "envs.task=qa1");
});

test("webgpu: reads still resolve after the Dawn instance's creator is garbage-collected", { skip: webgpuSkip }, () => {
  const code = `const tf = await import("@tensorflow/tfjs"); const { pickBackend } = await import("./server/qrag/backend/pick.ts");
    await pickBackend("webgpu");
    for (let i = 0; i < 4; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); }
    const x = tf.add(tf.ones([4]), 1); console.log(JSON.stringify(Array.from(await x.data())));`;
  const r = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", "--input-type=module", "-e", code], {
    cwd: ROOT,
    env: { ...process.env, QRAG_BACKEND: "" },
    encoding: "utf8",
    timeout: 120_000,
  });
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ""}: ${r.stderr.split("\n").filter((l) => !l.startsWith("Warning")).slice(-5).join(" | ")}`);
  assert.deepEqual(JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "null"), [2, 2, 2, 2]);
});

test("encode-hf bench part: a random BERT folder loads as an hf encoder and encodes (cpu, tiny size)", async () => {
  const { benchEncodeHf } = await import("../server/qrag/bench/webgpu-encode.ts");
  const prev = tf.getBackend();
  await tf.setBackend("cpu");
  try {
    const r = await benchEncodeHf(() => {}, [{ name: "t", hidden: 16, layers: 1, heads: 2, intermediate: 32, chunks: 8 }], 4);
    assert.equal(r.length, 1);
    assert.equal(r[0].error, undefined, String(r[0].error));
    assert.deepEqual([r[0].chunks, r[0].backend], [8, "cpu"]);
    assert.ok((r[0].chunksPerS as number) > 0);
  } finally {
    if (prev) await tf.setBackend(prev);
  }
});

test("webgpu AddN of more inputs than storage buffers allow: the exact sum, and no leaked buffers", { skip: webgpuSkip }, async () => {
  const { pickBackend } = await import("../server/qrag/backend/pick.ts");
  const { gpuMemoryMiB } = await import("../server/qrag/backend/gpu-memory.ts");
  await pickBackend("webgpu");
  try {
    for (const k of [15, 16, 40, 300]) {
      const parts = Array.from({ length: k }, (_, i) => tf.fill([64], i + 1));
      const before = tf.memory().numTensors;
      const s = tf.addN(parts);
      assert.equal((await s.data())[0], (k * (k + 1)) / 2, `AddN of ${k}`);
      assert.equal(tf.memory().numTensors, before + 1);
      tf.dispose([s, ...parts]);
    }
    // gradients through AddN (e.g. AdamW's global norm over every weight) see every input
    const xs = Array.from({ length: 20 }, (_, i) => tf.scalar(i));
    const g = tf.grads((...a: tf.Tensor[]) => tf.addN(a.map((x) => tf.square(x))))(xs);
    assert.deepEqual(await Promise.all(g.map(async (t) => (await t.data())[0])), xs.map((_, i) => 2 * i));
    tf.dispose([...xs, ...g]);
    const mem = gpuMemoryMiB();
    assert.ok(mem && mem.allocatedMiB >= 0 && mem.usedMiB <= mem.allocatedMiB, JSON.stringify(mem));
  } finally {
    await tf.setBackend("cpu");
  }
  assert.equal(gpuMemoryMiB(), undefined, "no GPU memory figure off webgpu");
});
