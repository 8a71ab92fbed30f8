/**
 * Quick timing print of the model layer on the picked backend (~20–40 s):
 *   npx tsx server/qrag/bench/model-speed.ts [backend]
 * Not a benchmark harness: single process, a few repetitions, medians.
 */
import * as tf from "@tensorflow/tfjs";
import { pickBackend } from "../backend/pick.ts";
import { createEncoder, defaultEncoderConfig } from "../model/factory.ts";
import { twinQ } from "../model/qfunction.ts";
import { scoreCandidates } from "../model/rotary.ts";
import { Rng } from "../util/rng.ts";
import { time } from "./quick-timing.ts";


async function main(): Promise<void> {
  const info = await pickBackend(process.argv[2]);
  console.log(`backend: ${info.backend} — ${info.device}`);
  const rng = new Rng(1);
  const vocab = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
  const sent = (n: number) => Array.from({ length: n }, () => rng.choice(vocab)).join(" ");
  const ms = (x: number) => `${x.toFixed(1)} ms`;

  // --- bow ---
  const bow = createEncoder(defaultEncoderConfig("bow"), rng.fork("bow"));
  const bowA = bow.clone();
  const chunks = Array.from({ length: 40_000 }, () => sent(18 + rng.int(5)));
  let packed = bow.packActions(chunks, 32);
  const tPack = time(3, () => {
    packed = bow.packActions(chunks, 32);
  });
  const tEmb = time(3, () => {
    bow.embedNoGrad(packed);
  });
  console.log(
    `bow embedNoGrad, 40,000 distinct chunks of 18–22 words: pack ${ms(tPack)}, embed ${ms(tEmb)} → ` +
      `${Math.round(40_000 / (tEmb / 1000))} chunks/s (${Math.round(40_000 / ((tEmb + tPack) / 1000))} incl. packing)`,
  );
  const states = Array.from({ length: 64 }, () => [sent(8), ...Array.from({ length: rng.int(6) }, () => sent(20))]);
  const sb = bow.packStates(states, 32);
  const ab = bowA.packActions(Array.from({ length: 64 }, () => sent(20)), 32);
  const bowVars = [...bow.variables, ...bowA.variables];
  const bowLoss = () => {
    const { q1, q2 } = twinQ(bow.forward(sb, true), bowA.forward(ab, true));
    return tf.mean(tf.square(tf.sub(tf.add(q1, q2), 0.5))) as tf.Scalar;
  };
  const tBowGrad = time(10, () =>
    tf.tidy(() => {
      const { value, grads } = tf.variableGrads(bowLoss, bowVars);
      value.dataSync();
      for (const g of Object.values(grads)) g.dataSync();
    }),
  );
  const opt = tf.train.adam(1e-4);
  const tBowAdam = time(10, () =>
    tf.tidy(() => {
      const { value, grads } = tf.variableGrads(bowLoss, bowVars);
      opt.applyGradients(grads as unknown as Parameters<typeof opt.applyGradients>[0]);
      value.dataSync();
    }),
  );
  console.log(`bow forward+backward, 64 states + 64 actions: ${ms(tBowGrad)} (with dense Adam over both tables: ${ms(tBowAdam)})`);
  const cand = bowA.packActions(chunks.slice(0, 100), 32);
  console.log(`bow embedNoGrad of a 100-chunk candidate set: ${ms(time(20, () => bowA.embedNoGrad(cand)))}`);
  const tgt = bow.clone(false);
  console.log(`bow polyakFrom (2.16 M weights): ${ms(time(10, () => tgt.polyakFrom(bow, 0.1)))}`);

  // --- transformer (the reference workload's encoder size, docs/workload.md §1.2) ---
  const tr = createEncoder(defaultEncoderConfig("transformer"), rng.fork("tr"));
  const trA = tr.clone();
  const full256 = tr.packStates(Array.from({ length: 64 }, () => [sent(254)]), 256);
  const k5 = tr.packStates(Array.from({ length: 64 }, () => [sent(12), sent(24), sent(24), sent(24), sent(24), sent(24)]), 32);
  const mixed = tr.packStates(
    Array.from({ length: 64 }, (_, i) => [sent(12), ...Array.from({ length: i === 0 ? 5 : rng.int(6) }, () => sent(24))]),
    32,
  );
  const acts = trA.packActions(Array.from({ length: 100 }, () => sent(24)), 24);
  const acts64 = trA.packActions(Array.from({ length: 64 }, () => sent(24)), 24);
  const fwd = (b: typeof acts) => () => tf.tidy(() => void tr.forward(b, false).dataSync());
  console.log(`transformer forward [64,256], every token real: ${ms(time(2, fwd(full256)))}`);
  console.log(`transformer forward [64,256], 139-token states (k=5): ${ms(time(2, fwd(k5)))}`);
  console.log(`transformer forward [64,256], workload mix (k ~ U{0..5}): ${ms(time(3, fwd(mixed)))}`);
  console.log(`transformer forward [100,32] actions: ${ms(time(5, fwd(acts)))}`);
  const trVars = [...tr.variables, ...trA.variables];
  const trOpt = tf.train.adam(1e-4);
  const tTrStep = time(2, () =>
    tf.tidy(() => {
      const { value, grads } = tf.variableGrads(() => {
        const { q1, q2 } = twinQ(tr.forward(mixed, true), trA.forward(acts64, true));
        return tf.mean(tf.square(tf.sub(tf.add(q1, q2), 0.5))) as tf.Scalar;
      }, trVars);
      trOpt.applyGradients(grads as unknown as Parameters<typeof trOpt.applyGradients>[0]);
      value.dataSync();
    }),
  );
  console.log(`transformer train step (64 mixed states [64,256] + 64 actions [64,32], dropout 0.1, Adam): ${ms(tTrStep)}`);

  // --- fused candidate scorer ---
  const N = 400_000, D = 128;
  const raw = new Float32Array(N * D);
  for (let i = 0; i < raw.length; i++) raw[i] = rng.next() - 0.5;
  const s = new Float32Array(D).map(() => rng.normal());
  const pos = new Int32Array(N);
  for (let i = 0; i < N; i++) pos[i] = 20 * Math.floor((4 * i) / N) + Math.floor((18 * (i % (N / 4))) / (N / 4 - 1));
  const q1 = new Float32Array(N), q2 = new Float32Array(N);
  console.log(`scoreCandidates N=400,000 D=128: ${ms(time(5, () => scoreCandidates(s, raw, pos, q1, q2)))}`);
  console.log(`live tensors at the end: ${tf.memory().numTensors}`);
}

main().catch((e: unknown) => {
  // Print only the message: an uncaught error would make the wasm module dump its whole source.
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = 1;
});
