/**
 * Bench part `webgpu-check` (webgpu backend): the limits the device was granted, AddN at and past
 * the storage-buffer limit (each input is one storage buffer; webgpu-addn.ts splits wider ones),
 * and the hf encoder on the
 * bert-tiny fixture against Hugging Face's outputs (test/fixtures/bert-tiny). Each failure is
 * recorded with its message, not thrown: the point is to learn what works on this device.
 */
import fs from "node:fs";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { HfBertEncoder } from "../model/hf/encoder.ts";
import type { EncoderConfig } from "../model/encoder.ts";
import { Rng } from "../util/rng.ts";

interface GpuDeviceLike {
  limits: Record<string, number>;
  pushErrorScope(f: string): void;
  popErrorScope(): Promise<{ message: string } | null>;
}

function device(): GpuDeviceLike | undefined {
  return (tf.backend() as unknown as { device?: GpuDeviceLike }).device;
}

/** Runs `fn` inside a validation error scope; returns the first error's message, or null. */
async function scoped(fn: () => Promise<void>): Promise<string | null> {
  const d = device();
  d?.pushErrorScope("validation");
  let thrown: string | null = null;
  try {
    await fn();
  } catch (e) {
    thrown = (e as Error).message;
  }
  const err = d ? await d.popErrorScope() : null;
  return thrown ?? err?.message ?? null;
}

async function addNWidest(limit: number): Promise<Record<string, unknown>> {
  const tried: Record<string, string | null> = {};
  let widest = 0;
  for (const k of [...new Set([8, limit - 1, limit, limit + 1])].filter((k) => k >= 2).sort((a, b) => a - b)) {
    const parts = Array.from({ length: k }, (_, i) => tf.fill([256], i + 1));
    const err = await scoped(async () => {
      const s = tf.addN(parts);
      const v = await s.data();
      s.dispose();
      const want = (k * (k + 1)) / 2;
      if (v[0] !== want) throw new Error(`sum ${v[0]} ≠ ${want}`);
    });
    tf.dispose(parts);
    tried[String(k)] = err ? err.split("\n")[0].slice(0, 200) : null;
    if (!err) widest = Math.max(widest, k);
  }
  return { widestOk: widest, tried };
}

async function bertTiny(fixture: string): Promise<Record<string, unknown>> {
  if (!fs.existsSync(path.join(fixture, "reference_outputs.json"))) return { skipped: `no fixture at ${fixture}` };
  const ref = JSON.parse(fs.readFileSync(path.join(fixture, "reference_outputs.json"), "utf8")) as {
    input_ids: number[][];
    attention_mask: number[][];
    last_hidden_state: number[][][];
    atol: number;
  };
  const cfg: EncoderConfig = { type: "hf", path: path.basename(fixture), dim: 32, vocab_size: 4096, hidden: 64, layers: 2, heads: 4, max_len: 256, dropout: 0.1, init_std: 0.02 };
  const B = ref.input_ids.length, T = ref.input_ids[0].length;
  const batch = { ids: Int32Array.from(ref.input_ids.flat()), mask: Float32Array.from(ref.attention_mask.flat()), batch: B, len: T };
  try {
    const enc = HfBertEncoder.load(cfg, new Rng(1), path.dirname(fixture));
    try {
      const h = enc.lastHiddenState(batch);
      const got = await h.data();
      h.dispose();
      const want = ref.last_hidden_state.flat(2);
      let d = 0;
      for (let i = 0; i < want.length; i++) d = Math.max(d, Math.abs(got[i] - want[i]));
      return { ok: d <= ref.atol, maxAbsDiff: d, atol: ref.atol };
    } finally {
      enc.dispose();
    }
  } catch (e) {
    return { ok: false, error: (e as Error).message.split("\n")[0].slice(0, 300) };
  }
}

export async function benchWebgpuCheck(fixture = path.resolve("test/fixtures/bert-tiny")): Promise<Record<string, unknown>> {
  if (tf.getBackend() !== "webgpu") return { skipped: `backend is ${tf.getBackend()}, not webgpu` };
  const limits = device()?.limits ?? {};
  const granted = Object.fromEntries(
    ["maxStorageBuffersPerShaderStage", "maxBufferSize", "maxStorageBufferBindingSize", "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup"].map((k) => [k, limits[k]]),
  );
  return { granted, addN: await addNWidest(limits.maxStorageBuffersPerShaderStage ?? 8), bertTiny: await bertTiny(fixture) };
}
