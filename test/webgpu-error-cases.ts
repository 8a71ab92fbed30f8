/**
 * The case of webgpu-errors.test.ts, in a fresh process (a Dawn device per process): a tensor
 * larger than the adapter lets one program bind (lavapipe: 128 MiB) makes the device report an
 * error instead of throwing; deviceErrorsFirst raises it after the work, and instead of the error
 * the garbage later caused. Prints one JSON line.
 */
import * as tf from "@tensorflow/tfjs";
import { onBackend } from "./device-case-runner.ts";
import { deviceErrorsFirst } from "../server/qrag/backend/webgpu-errors.ts";

const outcome = async (fn: () => Promise<unknown>) => {
  try {
    await deviceErrorsFirst(fn);
    return { ok: true, name: "", message: "" };
  } catch (e) {
    return { ok: false, name: (e as Error).name, message: (e as Error).message };
  }
};

await onBackend("webgpu");
const small = await outcome(async () => {
  const t = tf.add(tf.ones([1000]), 1);
  await t.data();
  t.dispose();
});
const n = 48 * 2 ** 20; // 192 MiB of float32
const big = await outcome(async () => {
  const t = tf.add(tf.fill([n], 1), 1);
  await t.data();
  t.dispose();
});
const consequence = await outcome(async () => {
  const t = tf.add(tf.fill([n], 1), 1);
  const v = await t.data();
  t.dispose();
  if (v[0] !== 2) throw new Error("a later step failed on garbage");
});
const after = await outcome(async () => {
  const t = tf.add(tf.ones([10]), 1);
  await t.data();
  t.dispose();
});
process.stdout.write(JSON.stringify({ small, big, consequence, after }) + "\n");
process.exit(0);
