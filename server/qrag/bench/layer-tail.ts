/**
 * `--parts layer-tail` (webgpu): the reference encoder's no-grad forward, in train mode as a rollout
 * step runs it, with the layer tail (model/webgpu/layer-tail.ts) and with the separate programs it
 * replaces, at row counts from a rollout step's first states to the tail's bound: wall and GPU time
 * per forward (16 queued, then one read). What the next GPU lease sets TAIL_MAX_ROWS (and the
 * default) from; the whole iteration's A/B is `--parts dispatch --layer-tail 0`.
 */
import * as tf from "@tensorflow/tfjs";
import { TransformerEncoder } from "../model/transformer.ts";
import type { TokenBatch } from "../model/encoder.ts";
import { withRecorder } from "../model/webgpu/recorded-encoder.ts";
import { layerTailOn, setLayerTail } from "../model/webgpu/layer-tail.ts";
import { countersOn, counterSnapshot, resetCounters } from "../backend/device.ts";
import { gpuTimingOff, gpuTimingOn, settleGpuTimes } from "../backend/gpu-timing.ts";
import { Rng } from "../util/rng.ts";
import { measure } from "./harness.ts";
import { workloadConfig } from "./workload-bench.ts";

/** Rows as the reference's 4 states of 16, 64 and 256 tokens, and twice the last (the tail's bound, 2,048). */
const SHAPES: [number, number][] = [[4, 16], [4, 64], [4, 256], [8, 256]];
const QUEUED = 16;

export interface TailTiming {
  dispatches: number;
  usPerForward: number;
  /** GPU time inside the forwards' passes (timestamp queries; null without them). */
  gpuUsPerForward: number | null;
}

export interface TailRow {
  rows: number;
  shape: string;
  tail: TailTiming;
  separate: TailTiming;
}

/** B rows of T real tokens each, ids drawn from the vocabulary. */
function fullBatch(B: number, T: number, vocab: number, rng: Rng): TokenBatch {
  const ids = Int32Array.from({ length: B * T }, () => 1 + Math.floor(rng.next() * (vocab - 1)));
  return { ids, mask: new Float32Array(B * T).fill(1), batch: B, len: T };
}

async function timeForwards(enc: TransformerEncoder, batch: TokenBatch): Promise<TailTiming> {
  const run = async () => {
    const ys = Array.from({ length: QUEUED }, () => tf.tidy(() => enc.forward(batch, true)));
    await ys[QUEUED - 1].data();
    tf.dispose(ys);
  };
  await run(); // warm-up: plans, pipelines
  countersOn();
  resetCounters();
  await run();
  const dispatches = Object.values(counterSnapshot()).reduce((a, c) => a + (c?.dispatches ?? 0), 0) / QUEUED;
  const t = await measure(run, 5);
  let gpuUsPerForward: number | null = null;
  if (gpuTimingOn()) {
    try {
      await run();
    } finally {
      gpuTimingOff();
    }
    const g = await settleGpuTimes();
    gpuUsPerForward = (Object.values(g.ms).reduce((a, b) => a + (b ?? 0), 0) / QUEUED) * 1000;
  }
  return { dispatches, usPerForward: (t.stats.median / QUEUED) * 1e6, gpuUsPerForward };
}

export async function benchLayerTail(log: (m: string) => void): Promise<TailRow[]> {
  const cfg = workloadConfig("transformer").algo.encoder;
  const enc = new TransformerEncoder(cfg, new Rng(1));
  const was = layerTailOn();
  const rng = new Rng(2);
  const out: TailRow[] = [];
  try {
    await withRecorder(true, async () => {
      for (const [B, T] of SHAPES) {
        const batch = fullBatch(B, T, cfg.vocab_size, rng);
        const timed: Record<"tail" | "separate", TailTiming> = {} as Record<"tail" | "separate", TailTiming>;
        for (const [name, on] of [["tail", true], ["separate", false]] as const) {
          setLayerTail(on);
          timed[name] = await timeForwards(enc, batch);
        }
        const row = { rows: B * T, shape: `${B}x${T}`, ...timed };
        out.push(row);
        const us = (x: TailTiming) => `${x.usPerForward.toFixed(0)} µs (GPU ${x.gpuUsPerForward?.toFixed(0) ?? "—"}, ${x.dispatches} dispatches)`;
        log(`  layer-tail ${row.shape} (${row.rows} rows): tail ${us(row.tail)}, separate ${us(row.separate)}`);
      }
    });
  } finally {
    setLayerTail(was);
    enc.dispose();
  }
  return out;
}
