/**
 * `npm run bench`: benchmarks as JSON (stdout and bench-results/latest.json).
 *   matmul                 tfjs matMul GFLOP/s on the active backend (context for the rest), async reads
 *   matmul-tiled           (webgpu only) our tiled WGSL matMul (model/webgpu/matmul.ts), every tile, same sizes
 *   kernels                (webgpu only) the fused LayerNorm and attention programs, forward and backward ms,
 *                          on the workload's and BERT-base's shapes — see kernels.ts
 *   webgpu-check           (webgpu only) granted limits, widest AddN, bert-tiny vs Hugging Face
 *   encode-hf              hf encoder (random BERT weights, 2L/D128 and 12L/D768) chunks/s, async reads
 *   encode-stream          (webgpu only) the workload's eval encode of 40,000 chunks, packed first vs streamed
 *                          (a slice tokenized while the GPU runs the last; encode-stream.ts), and the packing alone
 *   dispatch               one training iteration of the reference workload (transformer): dispatches,
 *                          tfjs kernels, submits and host ms per iteration against the hot-loop budget;
 *                          then 32 evaluation episodes one at a time and side by side (eval-groups.ts)
 *   dispatch-counts        the same counts on the same loop at a sliver of its compute (workload-bench.ts
 *                          `counts`), one iteration; fails (exit 1) over DISPATCH_CEILING — what CI runs
 *   dispatch-update        one update of that workload (no rollouts): dispatches, tfjs kernels, submits with
 *                          the recorded encoder off and on (update-counts.ts)
 *   dispatch-hf            one hf (BERT) encoder forward without a gradient (batch 64 × 32), and one taped
 *                          forward + backward: dispatches, tfjs kernels, submits, host ms with the recorded
 *                          forward / update off and on (hf-counts.ts)
 *   dispatch-bert          one training iteration of the babilong-gpu preset with a random BERT-base
 *                          (`--bert-size tiny` for a CPU adapter), split by phase and program (bert-iteration.ts),
 *                          and its evaluation as `dispatch` times it
 *   workload-transformer   the reference workload (docs/workload.md), transformer encoder
 *   workload-bow           the same workload with the default CPU (bag-of-words) encoder
 *   learning               (long) CPU presets trained on qa1–qa5 (per seed), then swept — see learning.ts
 *   precision              stopping rules (paper Q-threshold vs calibrated rules) on the learning
 *                          part's checkpoints (runs/bench-learning-<task>) — see precision.ts
 *   gpt2-count             GPT-2 token counting of a 1M-token NIAH input (cached pieces vs js-tiktoken)
 *   checkpoint-io          save + load of a 2.6 GB (BERT-base-sized) checkpoint: seconds, MB/s, peak RSS
 *   niah                   (long) RULER NIAH: niah-cpu trained per variant group, swept 4K → 1M tokens,
 *                          also written to bench-results/niah.json — see niah.ts
 *
 * `--backend webgpu` (or QRAG_BACKEND) picks the backend; on webgpu the output names the adapter
 * and the GPU memory tfjs holds at the end (`gpuMemory`). See cli.ts for the flags.
 */
import fs from "node:fs";
import * as tf from "@tensorflow/tfjs";
import path from "node:path";
import os from "node:os";
import { pickBackend } from "../backend/pick.ts";
import { benchChains, benchMatmul } from "./matmul.ts";
import { programTimes } from "./program-times.ts";
import { gpuMemoryMiB } from "../backend/gpu-memory.ts";
import { POOL_RATIO, setPoolRatio, trimWebgpuPool } from "../backend/webgpu-pool.ts";
import { setMaxSplit, SPLIT_TARGET } from "../model/webgpu/split-k.ts";
import { currentKeyLanes, setKeyLanes } from "../model/webgpu/attention.ts";
import { setTinyTiles, tinyTilesOn } from "../model/webgpu/matmul.ts";
import { layerTailOn, setLayerTail } from "../model/webgpu/layer-tail.ts";
import { joiningOn, setJoining } from "../model/webgpu/recorded-encoder.ts";
import { deferredReads, setDeferredReads } from "../agent/rollout.ts";
import { defaultMatmulSizes, parseBenchArgs } from "./cli.ts";
import { useGpuStorage } from "../model/webgpu/half-storage.ts";
import { setHostProfileIterations } from "./host-profile.ts";
import { setEvalBench } from "./eval-groups.ts";
import { benchWorkload } from "./workload-bench.ts";
import { ENGINE_VERSION } from "../version.ts";
import { isMainModule } from "../util/main-module.ts";

const DEFAULT_PARTS = ["matmul", "workload-bow", "workload-transformer"];

interface BenchOptions {
  parts?: string[];
  /** Learning / precision tasks to run (learning default: all of qa1–qa5; precision default: those with a checkpoint). */
  tasks?: string[];
  /** Learning part: train each task once per seed (default: the preset's seed, once). */
  seeds?: number[];
  /** Precision part: haystack sizes in chunks (default 50, 1200, 40000); niah part: GPT-2 tokens (default 4096, 131072, 1048576); workload parts: greedy-episode lengths in chunks. */
  lengths?: number[];
  /** NIAH part: variants to sweep (default all 8) and samples per length. */
  variants?: string[];
  samples?: number[];
  /** Learning / niah parts: config overrides (key=value) for every run they train. */
  overrides?: string[];
  /** Learning / niah parts: keep their runs under runs/<tag>/ and the niah file as bench-results/niah-<tag>.json (variants of the setup side by side). */
  tag?: string;
  /** Precision part: evaluate this checkpoint (one task) instead of runs/bench-learning-<task>. */
  checkpoint?: string;
  /** NIAH part: reuse trained checkpoints, keep bench-results/niah.json's points not measured again. */
  reuse?: boolean;
  outFile?: string;
  /** A QRAG_BACKEND value; default: QRAG_BACKEND, else auto. */
  backend?: string;
  /** Matmul sizes (n for n×n×n); default: defaultMatmulSizes(backend). */
  sizes?: number[];
  /** webgpu: programs recorded per submitted command buffer (tfjs's WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE). */
  submitBatch?: number;
  /** webgpu: allocated ≤ this × the step's peak bytes in use (Infinity: no trimming). */
  poolRatio?: number;
  /** Kernels part: the workload's shapes only (lavapipe), or BERT-base's too (default). */
  kernelShapes?: "workload" | "all";
  /** Training parts: this many more iterations under the CPU profiler (host-profile.ts). */
  hostProfile?: number;
  /** The recorded no-grad forwards' activation storage (the run config's gpu_storage; default f32). */
  gpuStorage?: "f32" | "f16";
  /** dispatch-bert part: the random BERT's size (default base). */
  bertSize?: "base" | "tiny";
  /** webgpu: a weight gradient split along K into at most this many parts (split-k.ts; 1: whole). */
  splitK?: number;
  /** webgpu: threads per query of an attention forward on a small grid (attention.ts; 1: one). */
  keyLanes?: number;
  /** The device path's reads deferred (rollout.ts setDeferredReads; default on). */
  deferredReads?: boolean;
  /** webgpu: 32×32 tiles for products of few 64×64 blocks (matmul.ts tileFor; default on). */
  tinyTiles?: boolean;
  /** webgpu: a no-grad forward of few rows with each layer after its QKV as one program (layer-tail.ts; default on). */
  layerTail?: boolean;
  /** webgpu: independent neighbour programs, and the two encoders' programs, as joint dispatches (fused-steps.ts; default on). */
  join?: boolean;
  /** dispatch and dispatch-bert: their evaluation both ways (eval-groups.ts; default on). */
  evalGroups?: boolean;
  log?: (m: string) => void;
}

export async function runBench(opts: BenchOptions = {}): Promise<Record<string, unknown>> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const parts = opts.parts ?? DEFAULT_PARTS;
  const { backend, device, adapter } = await pickBackend(opts.backend);
  if (opts.submitBatch !== undefined) {
    if (backend !== "webgpu") throw new Error(`bench: --submit-batch needs the webgpu backend (active: ${backend})`);
    tf.env().set("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE", opts.submitBatch);
  }
  if (opts.poolRatio !== undefined) setPoolRatio(opts.poolRatio);
  if (opts.splitK !== undefined) setMaxSplit(opts.splitK);
  if (opts.keyLanes !== undefined) setKeyLanes(opts.keyLanes);
  if (opts.deferredReads !== undefined) setDeferredReads(opts.deferredReads);
  if (opts.tinyTiles !== undefined) setTinyTiles(opts.tinyTiles);
  if (opts.layerTail !== undefined) setLayerTail(opts.layerTail);
  if (opts.join !== undefined) setJoining(opts.join);
  setHostProfileIterations(opts.hostProfile ?? 0);
  setEvalBench(opts.evalGroups ?? true);
  const gpuStorage = useGpuStorage(opts.gpuStorage ?? "f32");
  if (opts.gpuStorage === "f16" && gpuStorage !== "f16") throw new Error(`bench: --gpu-storage f16 needs webgpu with shader-f16 (active: ${device})`);
  const result: Record<string, unknown> = {
    engineVersion: ENGINE_VERSION,
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version },
    backend, device, gpuStorage,
    ...(backend === "webgpu" ? { submitBatch: tf.env().getNumber("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE"), poolRatio: String(opts.poolRatio ?? POOL_RATIO), splitK: SPLIT_TARGET.maxParts, keyLanes: currentKeyLanes(), deferredReads: deferredReads(), tinyTiles: tinyTilesOn(), layerTail: layerTailOn(), join: joiningOn() } : {}),
    ...(adapter ? { adapter } : {}),
  };
  // --tag: the learning / niah runs of this variant go to their own folder
  const tagRuns = opts.tag ? { runsDir: path.resolve("runs", opts.tag) } : {};
  for (const part of parts) {
    log(`bench: ${part}…`);
    const t0 = performance.now();
    if (part === "matmul") result.matmul = await benchMatmul(opts.sizes ?? defaultMatmulSizes(backend), ...(backend === "webgpu" ? [4e11, 10] : [2e9, 5]));
    else if (part === "matmul-tiled") {
      if (backend !== "webgpu") throw new Error(`bench part matmul-tiled needs the webgpu backend (active: ${backend})`);
      const { MATMUL_TILES, matmulTiled } = await import("../model/webgpu/matmul.ts");
      const tiled: Record<string, unknown> = {};
      for (const [name, tile] of Object.entries(MATMUL_TILES)) {
        tiled[name] = await benchMatmul(opts.sizes ?? defaultMatmulSizes(backend), 4e11, 10, (a, b) => matmulTiled(a, b, tile));
        log(`  matmul-tiled ${name}: ${(tiled[name] as { gflops: number }[]).map((r) => r.gflops.toFixed(0)).join(" / ")} GFLOP/s`);
      }
      result.matmulTiled = tiled;
      // products of a rollout step's size, each reading the one before: where the tile for few workgroups matters
      const gpuMs = async (fn: () => Promise<void>) => (await programTimes(fn))?.totalMs ?? null;
      const chains: Record<string, unknown> = {};
      for (const [name, tile] of Object.entries(MATMUL_TILES)) {
        const rs = await benchChains((a, b) => matmulTiled(a, b, tile), gpuMs);
        chains[name] = rs;
        log(`  matmul-chains ${name}: ${rs.map((r) => `${r.shape} ${r.usPerProduct.toFixed(0)} µs (GPU ${r.gpuUsPerProduct?.toFixed(0) ?? "—"})`).join(" / ")}`);
      }
      result.matmulChains = chains;
    } else if (part === "webgpu-check") result.webgpuCheck = await (await import("./webgpu-check.ts")).benchWebgpuCheck();
    else if (part === "encode-hf") result.encodeHf = await (await import("./webgpu-encode.ts")).benchEncodeHf(log);
    else if (part === "encode-stream") result.encodeStream = await (await import("./encode-stream.ts")).benchEncodeStream(log, opts.lengths?.[0]);
    else if (part === "kernels") result.kernels = await (await import("./kernels.ts")).benchKernels(log, { shapes: opts.kernelShapes });
    else if (part === "dispatch") result.dispatch = await (await import("./dispatch.ts")).benchDispatch(log);
    else if (part === "layer-tail") {
      if (backend !== "webgpu") throw new Error(`bench part layer-tail needs the webgpu backend (active: ${backend})`);
      result.layerTailTimes = await (await import("./layer-tail.ts")).benchLayerTail(log);
    }
    else if (part === "dispatch-counts") {
      const counts = await (await import("./dispatch.ts")).benchDispatch(log, 1, "counts");
      result.dispatchCounts = counts;
      if (!counts.withinCeiling) {
        const over = (["dispatches", "submits", "tfjsKernels", "reads"] as const).filter((k) => counts[`${k}PerIteration`] > (counts.ceiling[k] ?? Infinity));
        throw new Error(`the hot loop is over its ceiling (bench/dispatch-summary.ts DISPATCH_CEILING): ${over.map((k) => `${k} ${counts[`${k}PerIteration`]} > ${counts.ceiling[k]}`).join(", ")}`);
      }
    }
    else if (part === "dispatch-update") result.dispatchUpdate = await (await import("./update-counts.ts")).benchUpdateCounts(log);
    else if (part === "dispatch-hf") result.dispatchHf = await (await import("./hf-counts.ts")).benchHfCounts(log);
    else if (part === "dispatch-bert") result.dispatchBert = await (await import("./bert-iteration.ts")).benchBertIteration(log, opts.bertSize);
    else if (part === "workload-bow") result.workloadBow = await benchWorkload("bow", log, { evalLengths: opts.lengths });
    else if (part === "workload-transformer") result.workloadTransformer = await benchWorkload("transformer", log, { evalLengths: opts.lengths });
    else if (part === "gpt2-count") result.gpt2Count = (await import("./gpt2-count.ts")).benchGpt2Count();
    else if (part === "checkpoint-io") result.checkpointIo = (await import("./checkpoint-io.ts")).benchCheckpointIo(log);
    else if (part === "learning") {
      const { benchLearning, LEARNING_TASKS } = await import("./learning.ts");
      const unknown = opts.tasks?.filter((t) => !LEARNING_TASKS.some((l) => l.task === t)) ?? [];
      if (unknown.length) throw new Error(`unknown learning task(s) ${unknown.join(", ")} (known: ${LEARNING_TASKS.map((l) => l.task).join(", ")})`);
      const tasks = opts.tasks ? LEARNING_TASKS.filter((l) => opts.tasks!.includes(l.task)) : LEARNING_TASKS;
      // hours long: the output file holds every finished seed as it goes (`partial: true` until the end)
      const onProgress = (learning: Record<string, unknown>[]) => writeResult(outFile(opts), { ...result, partial: true, learning });
      const withOverrides = opts.overrides?.length ? tasks.map((t) => ({ ...t, set: opts.overrides })) : tasks;
      result.learning = await benchLearning(log, { tasks: withOverrides, seeds: opts.seeds, onProgress, ...tagRuns });
    } else if (part === "precision") {
      const { benchPrecision, defaultPrecisionCheckpoint, precisionFileFor } = await import("./precision.ts");
      const known = ["qa1", "qa2", "qa3", "qa4", "qa5"];
      const unknown = opts.tasks?.filter((t) => !known.includes(t)) ?? [];
      if (unknown.length) throw new Error(`unknown precision task(s) ${unknown.join(", ")} (known: ${known.join(", ")})`);
      const tasks = opts.tasks ?? known.filter((t) => fs.existsSync(defaultPrecisionCheckpoint(t)));
      const { checkpoint } = opts;
      if (checkpoint && tasks.length !== 1) throw new Error(`--checkpoint takes one task (--tasks qaN), got ${tasks.length}`);
      result.precision = await benchPrecision(log, tasks, {
        lengths: opts.lengths,
        ...(checkpoint ? { checkpoints: { [tasks[0]]: checkpoint }, fileName: (t: string) => precisionFileFor(t, checkpoint) } : {}),
      });
    } else if (part === "niah") {
      const { benchNiah } = await import("./niah.ts");
      result.niah = await benchNiah(log, {
        variants: opts.variants, seeds: opts.seeds, lengths: opts.lengths, samples: opts.samples, reuse: opts.reuse, overrides: opts.overrides,
        outFile: path.resolve("bench-results", opts.tag ? `niah-${opts.tag}.json` : "niah.json"),
        ...tagRuns,
      });
    } else throw new Error(`unknown bench part "${part}" (known: matmul, matmul-tiled, kernels, dispatch, dispatch-counts, layer-tail, dispatch-update, dispatch-hf, dispatch-bert, webgpu-check, encode-hf, encode-stream, workload-bow, workload-transformer, gpt2-count, checkpoint-io, learning, precision, niah)`);
    log(`bench: ${part} done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    trimWebgpuPool(); // what a part pooled is not the next part's (no-op off webgpu)
    // a part that fails or a run cut off (a device lease's time limit) keeps the parts before it
    if (part !== parts.at(-1)) writeResult(outFile(opts), { ...result, partial: true });
  }
  const mem = gpuMemoryMiB();
  if (mem) result.gpuMemory = mem;
  writeResult(outFile(opts), result);
  return result;
}

const outFile = (opts: BenchOptions) => opts.outFile ?? path.resolve("bench-results", "latest.json");

function writeResult(file: string, result: Record<string, unknown>): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(result, null, 2));
}

/** `npm run bench -- ARGS…`: the result on stdout (and in --out), a failure on stderr with exit code 1. */
export function benchCli(argv: string[]): Promise<void> {
  return Promise.resolve()
    .then(() => runBench(parseBenchArgs(argv)))
    .then((r) => console.log(JSON.stringify(r, null, 2)))
    .catch((e: Error) => {
      process.stderr.write(`bench failed: ${e.stack ?? e.message}\n`);
      process.exitCode = 1;
    });
}

if (isMainModule(import.meta.url)) void benchCli(process.argv.slice(2));
