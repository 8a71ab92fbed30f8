/**
 * Checkpoint save + load of a BERT-base-sized state (the bench part `checkpoint-io`, or
 * `npx tsx server/qrag/bench/checkpoint-io.ts [ENCODERS] [WITH_MOMENTS]`). The state: ENCODERS
 * copies of BERT-base's tensors (110M floats each; default 2, an online and a target encoder) and
 * AdamW m and v for WITH_MOMENTS of them (default 2): 6 × 110M floats, 2.6 GB, over the 2 GiB one
 * Buffer or readFileSync can hold. Save and load run in child processes of their own, so each
 * peak RSS is that phase's alone; the folder is deleted afterwards. Save includes each shard's
 * fsync (the disk's speed); load follows it at once, so part of it may come from the page cache
 * (dropping that needs root).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadCheckpoint, saveCheckpoint } from "../training/checkpoint.ts";
import { DEFAULT_SHARD_BYTES } from "../training/checkpoint-shards.ts";
import { isMainModule } from "../util/main-module.ts";

const D = 768;
const FF = 3072;
const VOCAB = 30522;
const LAYERS = 12;

/** BERT-base's tensor sizes (embeddings, 12 layers, pooler): 109.5M floats. */
function bertBaseSizes(): number[] {
  const layer = [D * D, D, D * D, D, D * D, D, D * D, D, D, D, D * FF, FF, FF * D, D, D, D];
  return [VOCAB * D, 512 * D, 2 * D, D, D, ...Array.from({ length: LAYERS }, () => layer).flat(), D * D, D];
}

function buildState(encoders: number, withMoments: number) {
  const sizes = bertBaseSizes();
  let seed = 1;
  // cheap distinct values (a real checkpoint's bytes do not compress either)
  const tensor = (n: number) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) - 0.5;
    return a;
  };
  const enc = () => sizes.map((n) => ({ shape: [n], data: tensor(n) }));
  return {
    kind: "bench-checkpoint-io",
    weights: Array.from({ length: encoders }, enc),
    optimizer: { m: Array.from({ length: withMoments }, enc), v: Array.from({ length: withMoments }, enc) },
  };
}

const maxRssMiB = () => Math.round(process.resourceUsage().maxRSS / 1024);
const rssMiB = () => Math.round(process.memoryUsage().rss / 2 ** 20);

/** One phase in this (child) process; prints its figures as one JSON line. */
function phase(args: string[]): void {
  const [what, dir] = args;
  if (what === "save") {
    const t0 = performance.now();
    const state = buildState(Number(args[2]), Number(args[3]));
    const built = performance.now();
    const rssBuilt = rssMiB();
    saveCheckpoint(dir, state);
    const s = (performance.now() - built) / 1000;
    console.log(JSON.stringify({ buildSeconds: (built - t0) / 1000, seconds: s, rssAfterBuildMiB: rssBuilt, peakRssMiB: maxRssMiB() }));
  } else {
    const t0 = performance.now();
    const { state } = loadCheckpoint<ReturnType<typeof buildState>>(dir);
    const s = (performance.now() - t0) / 1000;
    const floats = [...state.weights, ...state.optimizer.m, ...state.optimizer.v].flat().reduce((n, t) => n + t.data.length, 0);
    console.log(JSON.stringify({ seconds: s, floats, peakRssMiB: maxRssMiB() }));
  }
}

export function benchCheckpointIo(log: (m: string) => void, encoders = 2, withMoments = 2): Record<string, unknown> {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "qrag-bench-ckpt-")), "last");
  const run = (args: string[]) => {
    const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--phase", ...args], { encoding: "utf8", maxBuffer: 1 << 20 });
    if (r.status !== 0) throw new Error(`checkpoint-io ${args[0]} failed: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<string, number>;
  };
  try {
    log(`checkpoint-io: saving ${encoders} BERT-base encoders + moments of ${withMoments}…`);
    const save = run(["save", dir, String(encoders), String(withMoments)]);
    const files = fs.readdirSync(dir);
    const bytes = files.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    log("checkpoint-io: loading…");
    const load = run(["load", dir]);
    const mb = bytes / 1e6;
    return {
      encoders, withMoments, floats: load.floats, stateMB: Math.round(mb), shardMiB: DEFAULT_SHARD_BYTES / 2 ** 20, shards: files.length - 1,
      save: { ...save, MBps: Math.round(mb / save.seconds) },
      load: { ...load, MBps: Math.round(mb / load.seconds), note: "read right after the save: partly from the page cache" },
    };
  } finally {
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  }
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  if (argv[0] === "--phase") phase(argv.slice(1));
  else console.log(JSON.stringify(benchCheckpointIo((m) => process.stderr.write(`${m}\n`), Number(argv[0] ?? 2), Number(argv[1] ?? 2)), null, 2));
}
