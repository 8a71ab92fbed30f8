/**
 * Command line of `npm run bench`: `--parts=a,b` (or `--parts a,b`), `--backend NAME` (a
 * QRAG_BACKEND value: auto, webgpu, wasm, cpu, …), `--sizes=512,1024` (matmul sizes; default 512,
 * and 512…4096 on webgpu), `--lengths=40000,400000` (the workload parts' greedy-episode lengths in
 * chunks), `--submit-batch=N` (webgpu: programs per submitted command buffer, tfjs's
 * WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE), `--pool-ratio=R` (webgpu: the buffer pool's bound, allocated ≤ R ×
 * the step's peak bytes in use; `off` keeps every freed buffer), `--kernel-shapes workload|all` (the
 * kernels part: the workload's shapes only, or BERT-base's too — the default), `--host-profile N`
 * (the training parts: N more iterations under the CPU profiler, `training.hostByFunction`),
 * `--gpu-storage f32|f16` (every part's recorded no-grad forwards, as the run config's
 * gpu_storage; encode-stream times f16 besides either way), `--bert-size base|tiny` (the
 * dispatch-bert part's random BERT), `--split-k N` (webgpu: a weight gradient split along K into at
 * most N parts, 1 to 64, 1 = whole, default 16; split-k.ts timed against itself in one lease),
 * `--key-lanes N` (webgpu: threads per query of an attention forward on a small grid, 1, 2, 4, 8 or
 * 16, default 4; attention.ts's lanes against one thread per query), `--deferred-reads 0|1`
 * (webgpu: 0 reads each run of lock-steps and the values, as before 2026-11-29; default 1),
 * `--tiny-tiles 0|1` (webgpu: 0 keeps products of few 64×64 blocks on 64×64 tiles, as before
 * 2026-11-29's fourth session; default 1, matmul.ts tileFor), `--layer-tail 0|1` (webgpu: 0 runs
 * a no-grad forward of few rows as separate programs, as before 2026-11-29's seventh session;
 * default 1, layer-tail.ts), `--join 0|1` (webgpu: 0 runs every program as a dispatch of its
 * own, as before 2026-11-30: no joint programs of neighbours or of the two encoders; default 1,
 * fused-steps.ts), `--eval 0|1` (dispatch and
 * dispatch-bert: 0 leaves out their evaluation both ways, eval-groups.ts; default 1), `--out FILE`. Unknown flags are an error, so a typo is not ignored.
 */
import { parseBackendPref } from "../backend/pick.ts";
import { intList } from "../cli/flags.ts";

/** The largest matmul side `--sizes` takes (16384³ floats already need 3 GiB). */
export const MAX_MATMUL_SIZE = 16384;

export interface BenchArgs {
  parts?: string[];
  backend?: string;
  sizes?: number[];
  lengths?: number[];
  submitBatch?: number;
  poolRatio?: number;
  kernelShapes?: "workload" | "all";
  hostProfile?: number;
  gpuStorage?: "f32" | "f16";
  bertSize?: "base" | "tiny";
  splitK?: number;
  keyLanes?: number;
  deferredReads?: boolean;
  tinyTiles?: boolean;
  layerTail?: boolean;
  join?: boolean;
  evalGroups?: boolean;
  outFile?: string;
}

/** The longest greedy episode `--lengths` takes, in chunks (400,000 is the workload's ≈ 10M tokens). */
export const MAX_EPISODE_CHUNKS = 2_000_000;

const FLAGS = ["parts", "backend", "sizes", "lengths", "submit-batch", "pool-ratio", "kernel-shapes", "host-profile", "gpu-storage", "bert-size", "split-k", "key-lanes", "deferred-reads", "tiny-tiles", "layer-tail", "join", "eval", "out"] as const;

/** Matmul sizes when none are given: one small size on CPU backends, up to 4096³ on a GPU. */
export function defaultMatmulSizes(backend: string): number[] {
  return backend === "webgpu" || backend === "tensorflow" ? [512, 1024, 2048, 4096] : [512];
}

/** A switch's 0 or 1 (the A/B flags). */
function onOff(flag: string, value: string): boolean {
  if (value !== "0" && value !== "1") throw new Error(`bench: --${flag} "${value.slice(0, 40)}" is not 0 or 1`);
  return value === "1";
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const out: BenchArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    const name = m?.[1] as (typeof FLAGS)[number] | undefined;
    if (!m || !name || !FLAGS.includes(name)) throw new Error(`bench: unknown argument "${a}" (use --parts, --backend, --sizes, --lengths, --submit-batch, --pool-ratio, --kernel-shapes, --host-profile, --gpu-storage, --bert-size, --split-k, --key-lanes, --deferred-reads, --tiny-tiles, --layer-tail, --join, --eval, --out)`);
    let value = m[2];
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined || value.startsWith("--")) throw new Error(`bench: --${name} needs a value`);
    }
    if (name === "parts") out.parts = list(value);
    else if (name === "backend") {
      parseBackendPref(value); // throws on an unknown name
      out.backend = value;
    } else if (name === "sizes") {
      out.sizes = intList("bench: --sizes", value, 1, MAX_MATMUL_SIZE);
    } else if (name === "lengths") {
      out.lengths = intList("bench: --lengths", value, 1, MAX_EPISODE_CHUNKS);
    } else if (name === "submit-batch") {
      out.submitBatch = intList("bench: --submit-batch", value, 1, 100_000)[0];
    } else if (name === "pool-ratio") {
      const r = value === "off" ? Infinity : Number(value);
      if (!(r >= 1 && r <= 1000) && r !== Infinity) throw new Error(`bench: --pool-ratio "${value}" is not a number from 1 to 1000 or "off"`);
      out.poolRatio = r;
    } else if (name === "kernel-shapes") {
      if (value !== "workload" && value !== "all") throw new Error(`bench: --kernel-shapes "${value.slice(0, 40)}" is not "workload" or "all"`);
      out.kernelShapes = value;
    } else if (name === "host-profile") {
      out.hostProfile = intList("bench: --host-profile", value, 1, 50)[0];
    } else if (name === "gpu-storage") {
      if (value !== "f32" && value !== "f16") throw new Error(`bench: --gpu-storage "${value.slice(0, 40)}" is not "f32" or "f16"`);
      out.gpuStorage = value;
    } else if (name === "bert-size") {
      if (value !== "base" && value !== "tiny") throw new Error(`bench: --bert-size "${value.slice(0, 40)}" is not "base" or "tiny"`);
      out.bertSize = value;
    } else if (name === "split-k") {
      out.splitK = intList("bench: --split-k", value, 1, 64)[0];
    } else if (name === "key-lanes") {
      const n = Number(value);
      if (![1, 2, 4, 8, 16].includes(n)) throw new Error(`bench: --key-lanes "${value.slice(0, 40)}" is not 1, 2, 4, 8 or 16`);
      out.keyLanes = n;
    } else if (name === "deferred-reads") out.deferredReads = onOff(name, value);
    else if (name === "tiny-tiles") out.tinyTiles = onOff(name, value);
    else if (name === "layer-tail") out.layerTail = onOff(name, value);
    else if (name === "join") out.join = onOff(name, value);
    else if (name === "eval") out.evalGroups = onOff(name, value);
    else out.outFile = value;
  }
  return out;
}

function list(v: string): string[] {
  const items = v.split(",").map((s) => s.trim()).filter(Boolean);
  if (!items.length) throw new Error(`bench: empty list "${v}"`);
  return items;
}
