/**
 * The GPU table of docs/benchmarks/gpu.md, generated from one device call's files (scripts/device/figures.sh):
 *   npx tsx server/qrag/bench/gpu-table.ts PREFIX
 * reads PREFIX-bench.json (ours, webgpu), PREFIX-torch.json (the PyTorch-CUDA workload anchor),
 * PREFIX-torch-matmul.json and PREFIX-torch-encode.json, and prints markdown: each figure, ours
 * beside PyTorch-CUDA's from the same lease, and the ratio; then, where PREFIX-dispatch.json is
 * there, the recorded loop's split, BERT-base's iteration and host profile, and the evaluation
 * both ways (`dispatchLines`);
 *   npx tsx server/qrag/bench/gpu-table.ts --history "LABEL=FILE" …
 * prints one row per bench JSON (ours only): how the engine's GPU figures moved, change by change.
 */
import fs from "node:fs";
import { isMainModule } from "../util/main-module.ts";
import { compileNote, phaseList } from "./dispatch-summary.ts";

interface Med {
  median: number;
}
interface MatmulRow {
  shape: string;
  gflops: number;
}
interface HotLoop {
  dispatchesPerIteration: number;
  tfjsKernelsPerIteration: number;
  submitsPerIteration: number;
  /** Absent in files from before 2026-11-29. */
  readsPerIteration?: number;
  hostMsPerIteration: number;
  /** Absent in files from before 2026-11-30's eleventh session. */
  hostMsByPhase?: Record<string, number>;
  compilesPerIteration?: number;
  compileMsPerIteration?: number;
  readWaitMsPerIteration: number;
  /** Absent in files from before timestamp queries; null where the adapter had none. */
  gpuMsPerIteration?: number | null;
  perPhase?: Record<string, { gpuMs?: number }>;
}
/** bench/program-times.ts's figures (absent in files from before them). */
interface ProgramTimesLike {
  totalMs: number;
  programs: { program: string; ms: number; passes: number; share: number }[];
}
/** bench/host-profile.ts's summary (absent in older files, null without --host-profile). */
interface HostProfileLike {
  iterations: number;
  sampledMs: number;
  categories: { idle: number; gc: number; program: number; js: number };
  functions: { fn: string; at: string; ms: number; share: number }[];
  /** By total time (absent before 2026-11-29's fifth session). */
  inclusive?: { fn: string; at: string; ms: number; share: number }[];
  /** MiB allocated, in all and by function (absent before 2026-11-29's sixth session). */
  allocations?: { mib: number; functions: { fn: string; at: string; mib: number }[] };
}
/** bench/eval-groups.ts's figures. */
interface EvalWayLike {
  seconds: number;
  dispatches: number;
  reads: number;
}
interface EvaluationLike {
  episodes: number;
  steps: number;
  oneAtATime: EvalWayLike;
  sideBySide: EvalWayLike;
  differentPicks: number;
}
/** figures.sh's dispatch.json: `--parts dispatch,dispatch-hf,dispatch-bert`. */
export interface DispatchFile {
  dispatch?: HotLoop & { evaluation?: EvaluationLike | null; hostByFunction?: HostProfileLike | null };
  dispatchBert?: HotLoop & { size: string; iterationSeconds: Med; rolloutSeconds: Med; updateSeconds: Med; evaluation?: EvaluationLike; hostByFunction?: HostProfileLike | null };
}
interface Workload {
  training: { transitionsPerSecond: number; updateSeconds: Med; iterationSeconds: Med; hotLoop?: HotLoop; gpuByProgram?: ProgramTimesLike | null; hostByFunction?: HostProfileLike | null };
  encode: { chunksPerSecond: number };
  episodes: Record<string, { episodeSeconds: Med | number; estimated?: boolean }>;
}
export interface OursFile {
  device: string;
  date: string;
  matmul?: MatmulRow[];
  matmulTiled?: Record<string, MatmulRow[]>;
  /** bench/matmul.ts benchChains per tile (absent before 2026-11-29's fourth session). */
  matmulChains?: Record<string, { shape: string; usPerProduct: number; gpuUsPerProduct: number | null }[]>;
  /** bench/layer-tail.ts (absent before 2026-11-29's seventh session). */
  layerTailTimes?: TailRowLike[];
  workloadTransformer?: Workload;
  workloadBow?: Workload;
  encodeHf?: { model: string; chunksPerS: number }[];
  encodeStream?: { chunks: number; streamed: { chunksPerSecond: number }; packedFirst: { chunksPerSecond: number }; streamedF16?: { chunksPerSecond: number }; f16RelDiff?: number | null; gpuByProgram?: ProgramTimesLike | null };
  gpuMemory?: { usedMiB: number; allocatedMiB: number };
}
export interface TorchFile {
  meta: { gpu: string; torch: string };
  parts: {
    train?: { env_transitions_per_s: Med; update_s: Med };
    encode?: { chunks_per_s: Med };
    eval40k?: { episode_latency_s: Med };
    eval400k?: { episode_latency_s: Med };
  };
}
interface TorchMatmul {
  matmul: MatmulRow[];
}
interface TorchEncode {
  encode: { model: string; chunksPerS: number }[];
}

const n0 = (x: number) => Math.round(x).toLocaleString("en-US");
const s3 = (x: number) => (x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const median = (x: Med | number) => (typeof x === "number" ? x : x.median);

/** ours / theirs for "higher is better" figures, theirs / ours for times: > 1 means we are faster. */
function ratio(ours: number | undefined, theirs: number | undefined, higherBetter: boolean): string {
  if (ours === undefined || theirs === undefined || !(ours > 0) || !(theirs > 0)) return "—";
  const r = higherBetter ? ours / theirs : theirs / ours;
  return `${r >= 0.995 ? r.toFixed(2) : r.toFixed(3)}×`;
}

export function gpuTable(ours: OursFile, torch: TorchFile, tm: TorchMatmul, te: TorchEncode): string {
  const rows: string[] = ["| figure | ours (webgpu) | PyTorch CUDA | ours ÷ PyTorch |", "|---|---|---|---|"];
  const row = (figure: string, o: number | undefined, t: number | undefined, fmt: (x: number) => string, higherBetter: boolean) =>
    rows.push(`| ${figure} | ${o === undefined ? "—" : fmt(o)} | ${t === undefined ? "—" : fmt(t)} | ${ratio(o, t, higherBetter)} |`);
  for (const t of tm.matmul) {
    const tiled = Object.entries(ours.matmulTiled ?? {}).map(([name, rs]) => ({ name, g: rs.find((r) => r.shape === t.shape)?.gflops ?? 0 }));
    const best = tiled.sort((a, b) => b.g - a.g)[0];
    const tfjs = ours.matmul?.find((r) => r.shape === t.shape)?.gflops;
    row(`matMul ${t.shape.split("x")[0]}³ GFLOP/s, tfjs`, tfjs, t.gflops, n0, true);
    if (best?.g) row(`matMul ${t.shape.split("x")[0]}³ GFLOP/s, ours (tile ${best.name})`, best.g, t.gflops, n0, true);
  }
  const w = ours.workloadTransformer;
  const p = torch.parts;
  if (w) {
    row("training transitions/s, reference workload (E=4, B=64, N=100), transformer", w.training.transitionsPerSecond, p.train?.env_transitions_per_s.median, n0, true);
    row("update (fwd+bwd+clip+AdamW+Polyak), s", w.training.updateSeconds.median, p.train?.update_s.median, s3, false);
    row("encode, the workload's transformer, 40,000 chunks, chunks/s", w.encode.chunksPerSecond, p.encode?.chunks_per_s.median, n0, true);
    const es = ours.encodeStream;
    if (es) row(`encode, the same, streamed (tokenizing beside the GPU), ${n0(es.chunks)} chunks, chunks/s`, es.streamed.chunksPerSecond, p.encode?.chunks_per_s.median, n0, true);
    if (es?.streamedF16) row(`encode, the same, streamed, f16 activations (gpu_storage f16; max |Δ| ${(es.f16RelDiff ?? NaN).toExponential(1)} of the largest value), chunks/s`, es.streamedF16.chunksPerSecond, p.encode?.chunks_per_s.median, n0, true);
    const e = (n: string) => (w.episodes[n] && !w.episodes[n].estimated ? median(w.episodes[n].episodeSeconds) : undefined);
    row("greedy episode, N = 40,000 (≈ 1M tokens), s", e("40000"), p.eval40k?.episode_latency_s.median, s3, false);
    row("greedy episode, N = 400,000 (≈ 10M tokens), s", e("400000"), p.eval400k?.episode_latency_s.median, s3, false);
  }
  for (const t of te.encode) {
    const o = ours.encodeHf?.find((r) => r.model.split(" ")[0] === t.model.split(" ")[0])?.chunksPerS;
    row(`encode, ${t.model}, 32 tokens, batch 1024, chunks/s`, o, t.chunksPerS, n0, true);
  }
  const b = ours.workloadBow;
  if (b) {
    row("training transitions/s, same workload, bag-of-words encoder (ours only)", b.training.transitionsPerSecond, undefined, n0, true);
    const e400 = b.episodes["400000"];
    if (e400) row("greedy episode, N = 400,000, bag-of-words (ours only), s", median(e400.episodeSeconds), undefined, s3, false);
  }
  const h = w?.training.hotLoop;
  const lines = [rows.join("\n"), ...chainLines(ours.matmulChains), ...tailLines(ours.layerTailTimes)];
  if (h) {
    lines.push(
      `\nPer training iteration (transformer): ${n0(h.dispatchesPerIteration)} GPU dispatches, ${n0(h.tfjsKernelsPerIteration)} tfjs kernels, ` +
        `${n0(h.submitsPerIteration)} command buffers submitted${h.readsPerIteration === undefined ? "" : `, ${n0(h.readsPerIteration)} reads`}; ${n0(h.hostMsPerIteration)} ms of host time and ${n0(h.readWaitMsPerIteration)} ms awaiting reads ` +
        `(of ${n0(w!.training.iterationSeconds.median * 1000)} ms).`,
    );
    if (typeof h.gpuMsPerIteration === "number") {
      const phases = Object.entries(h.perPhase ?? {}).filter(([, c]) => (c.gpuMs ?? 0) > 0).map(([p, c]) => `${p} ${c.gpuMs!.toFixed(1)}`);
      lines.push(`GPU time inside compute passes (timestamp queries): ${h.gpuMsPerIteration.toFixed(1)} ms per iteration (${phases.join(", ")} ms).`);
    }
  }
  lines.push(...perProgram("one training iteration", w?.training.gpuByProgram), ...perProgram("the streamed encode", ours.encodeStream?.gpuByProgram));
  lines.push(...hostLine(w?.training.hostByFunction));
  if (ours.gpuMemory) lines.push(`GPU memory held at the end: ${n0(ours.gpuMemory.allocatedMiB)} MiB allocated, ${n0(ours.gpuMemory.usedMiB)} MiB in live tensors.`);
  lines.push(`Device: ${ours.device}; PyTorch ${torch.meta.torch} on ${torch.meta.gpu} (exact fp32, no TF32); ${ours.date.slice(0, 10)}.`);
  return lines.join("\n");
}

/** Products of a rollout step's size in a dependent chain: µs per product by tile, GPU time (wall time where untimed), the fastest first. */
export function chainLines(c: OursFile["matmulChains"]): string[] {
  if (!c) return [];
  const shapes = [...new Set(Object.values(c).flatMap((rs) => rs.map((r) => r.shape)))];
  const per = shapes.map((shape) => {
    const byTile = Object.entries(c)
      .map(([tile, rs]) => ({ tile, r: rs.find((x) => x.shape === shape) }))
      .filter((x): x is { tile: string; r: NonNullable<typeof x.r> } => x.r !== undefined)
      .map(({ tile, r }) => ({ tile, us: r.gpuUsPerProduct ?? r.usPerProduct, wall: r.usPerProduct }))
      .sort((a, b) => a.us - b.us);
    return `${shape}: ${byTile.map((x) => `${x.tile} ${s3(x.us)} (${s3(x.wall)})`).join(", ")}`;
  });
  return [`\nProducts of a rollout step's size, each reading the one before (m×k×n: [m, k]·[k, n], then ·[n, k]), µs per product on the GPU (wall), by tile, fastest first: ${per.join("; ")}.`];
}

interface TailTimingLike {
  dispatches: number;
  usPerForward: number;
  gpuUsPerForward: number | null;
}
interface TailRowLike {
  rows: number;
  shape: string;
  tail: TailTimingLike;
  separate: TailTimingLike;
}

/** A rollout step's forward with the layer tail and with the separate programs, by rows: µs per forward on the GPU (wall), one line. */
export function tailLines(t: TailRowLike[] | undefined): string[] {
  if (!t?.length) return [];
  const us = (x: TailTimingLike): string => `${s3(x.gpuUsPerForward ?? x.usPerForward)} (${s3(x.usPerForward)})`;
  const per = t.map((r) => `${r.shape} (${n0(r.rows)} rows): ${us(r.tail)} against ${us(r.separate)}, ${n0(r.tail.dispatches)} against ${n0(r.separate.dispatches)} dispatches`);
  return [`\nThe reference encoder's train-mode forward, layer tail against the separate programs (\`layer-tail\`), µs per forward on the GPU (wall): ${per.join("; ")}.`];
}

/** Where the GPU's time goes: the programs taking 90 % of it (at most 8), one line. */
function perProgram(what: string, t: ProgramTimesLike | null | undefined): string[] {
  if (!t?.programs.length) return [];
  const shown: string[] = [];
  let share = 0;
  for (const p of t.programs) {
    if (share >= 0.9 || shown.length === 8) break;
    shown.push(`${p.program} ${(p.share * 100).toFixed(0)} % (${p.passes}×)`);
    share += p.share;
  }
  return [`GPU time per program, ${what} (each program timed in a pass of its own): ${s3(t.totalMs)} ms; ${shown.join(", ")}.`];
}

/** Where the host's time goes over the profiled iterations, per iteration: V8's categories and the heaviest functions. */
function hostLine(h: HostProfileLike | null | undefined): string[] {
  if (!h) return [];
  const per = (ms: number) => s3(ms / h.iterations);
  const c = h.categories;
  const fns = h.functions.slice(0, 6).map((f) => `${f.fn} (${f.at}) ${per(f.ms)}`).join(", ");
  return [`Host time per training iteration (${h.iterations} more under the CPU profiler), ms: JS ${per(c.js)}, native ${per(c.program)}, GC ${per(c.gc)}, idle ${per(c.idle)}; heaviest: ${fns}.`];
}

/** " (encode 1.2, rollout 20.5, …)" where the file has figures by phase. */
function byPhase(ms: Record<string, number> | undefined): string {
  return ms ? ` (${phaseList(ms)})` : "";
}

/** The recorded loop's split, BERT's iteration, their host profiles by total time and the evaluation both ways, from figures.sh's dispatch.json. */
export function dispatchLines(d: DispatchFile): string[] {
  const lines: string[] = [];
  const loop = (h: HotLoop) =>
    `${n0(h.dispatchesPerIteration)} dispatches, ${h.submitsPerIteration} submits, ${h.readsPerIteration ?? "?"} reads; host ${n0(h.hostMsPerIteration)} ms${byPhase(h.hostMsByPhase)}, awaiting reads ${n0(h.readWaitMsPerIteration)} ms, GPU ${h.gpuMsPerIteration == null ? "untimed" : `${n0(h.gpuMsPerIteration)} ms`}${h.compilesPerIteration === undefined ? "" : compileNote({ compilesPerIteration: h.compilesPerIteration, compileMsPerIteration: h.compileMsPerIteration ?? 0 })}`;
  const evaluation = (e: EvaluationLike | null | undefined) =>
    e
      ? [`  its evaluation, ${e.episodes} episodes (${n0(e.steps)} steps): one at a time ${s3(e.oneAtATime.seconds)} s (${n0(e.oneAtATime.dispatches)} dispatches, ${n0(e.oneAtATime.reads)} reads), side by side ${s3(e.sideBySide.seconds)} s (${n0(e.sideBySide.dispatches)}, ${n0(e.sideBySide.reads)}): ${s3(e.oneAtATime.seconds / e.sideBySide.seconds)}×; picks differing ${e.differentPicks}.`]
      : [];
  const heaviest = (h: HostProfileLike | null | undefined) => {
    // named functions outside Node's own (in the device pack all of ours are bench.mjs's)
    const ours = (h?.inclusive ?? []).filter((f) => f.fn !== "(anonymous)" && !f.at.startsWith("node:")).slice(0, 8);
    const a = h?.allocations;
    const allocating = a?.functions.filter((f) => !f.at.startsWith("node:")).slice(0, 5) ?? [];
    return [
      ...(h && ours.length ? [`  host by total time, ms per iteration: ${ours.map((f) => `${f.fn} ${s3(f.ms / h.iterations)}`).join(", ")}.`] : []),
      ...(h && a ? [`  allocated per iteration (what the GC collects): ${s3(a.mib / h.iterations)} MiB; by function: ${allocating.map((f) => `${f.fn} ${s3(f.mib / h.iterations)}`).join(", ")}.`] : []),
    ];
  };
  if (d.dispatch) lines.push(`Reference iteration (\`dispatch\`): ${loop(d.dispatch)}.`, ...heaviest(d.dispatch.hostByFunction), ...evaluation(d.dispatch.evaluation));
  const b = d.dispatchBert;
  if (b) {
    const phases = ["encode", "rollout", "target", "update"].map((p) => (b.perPhase?.[p]?.gpuMs === undefined ? "?" : n0(b.perPhase[p].gpuMs!))).join(" · ");
    lines.push(`BERT-${b.size} iteration (\`dispatch-bert\`): ${s3(b.iterationSeconds.median)} s (rollout ${s3(b.rolloutSeconds.median)}, update ${s3(b.updateSeconds.median)}); ${loop(b)}; GPU ms encode · rollout · target · update ${phases}.`, ...heaviest(b.hostByFunction), ...evaluation(b.evaluation));
  }
  return lines;
}

/** One row per labelled bench file: training, update, encode, episodes, dispatches per iteration. */
export function gpuHistory(runs: { label: string; ours: OursFile }[]): string {
  const rows = [
    "| engine | training transitions/s | update s | encode chunks/s | episode N = 40,000 s | episode N = 400,000 s | dispatches / iteration |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const { label, ours } of runs) {
    const w = ours.workloadTransformer;
    if (!w) continue;
    const e = (n: string) => {
      const x = w.episodes[n];
      return x ? `${s3(median(x.episodeSeconds))}${x.estimated ? " (estimated)" : ""}` : "—";
    };
    const c = w.training.hotLoop?.dispatchesPerIteration ?? sumDispatches((w.training as { countsPerIteration?: Record<string, { dispatches: number }> }).countsPerIteration);
    rows.push(`| ${label} | ${n0(w.training.transitionsPerSecond)} | ${s3(w.training.updateSeconds.median)} | ${n0(w.encode.chunksPerSecond)} | ${e("40000")} | ${e("400000")} | ${c === undefined ? "—" : n0(c)} |`);
  }
  return rows.join("\n");
}

function sumDispatches(c: Record<string, { dispatches: number }> | undefined): number | undefined {
  return c ? Object.values(c).reduce((a, x) => a + x.dispatches, 0) : undefined;
}

if (isMainModule(import.meta.url) && process.argv[2] === "--history") {
  const runs = process.argv.slice(3).map((a) => {
    const i = a.indexOf("=");
    if (i < 1) throw new Error(`--history takes LABEL=FILE arguments (got "${a}")`);
    return { label: a.slice(0, i), ours: JSON.parse(fs.readFileSync(a.slice(i + 1), "utf8")) as OursFile };
  });
  console.log(gpuHistory(runs));
} else if (isMainModule(import.meta.url)) {
  const prefix = process.argv[2];
  if (!prefix) {
    process.stderr.write("usage: gpu-table.ts PREFIX (reads PREFIX-bench.json, -torch.json, -torch-matmul.json, -torch-encode.json)\n");
    process.exit(2);
  }
  const read = <T>(suffix: string): T => JSON.parse(fs.readFileSync(`${prefix}-${suffix}.json`, "utf8")) as T;
  console.log(gpuTable(read<OursFile>("bench"), read<TorchFile>("torch"), read<TorchMatmul>("torch-matmul"), read<TorchEncode>("torch-encode")));
  if (fs.existsSync(`${prefix}-dispatch.json`)) console.log(`\n${dispatchLines(read<DispatchFile>("dispatch")).join("\n")}`);
}
