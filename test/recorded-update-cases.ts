/**
 * The cases of recorded-update.test.ts, each run in a fresh Node process (device-case-runner.ts)
 * that prints one JSON line: the transformer's taped forward and backward recorded on webgpu
 * (model/webgpu/recorded-train.ts) against the tfjs path it replaces, on two encoders with the
 * same weights and the same dropout Rng.
 */
import { onBackend, relDiff } from "./device-case-runner.ts";
import { TransformerEncoder } from "../server/qrag/model/transformer.ts";
import type { TokenBatch } from "../server/qrag/model/encoder.ts";
import { CONFIG, batchOf, lossAndGrads, tapedCalls } from "./recorded-batches.ts";
import { recorderStats } from "../server/qrag/model/webgpu/recorded-encoder.ts";
import { Rng } from "../server/qrag/util/rng.ts";

/**
 * Recorded vs tfjs loss and gradients: shapes 3×16, 5×64, 2×256, batches of repeated ids (ids 1–2:
 * each used more than TOK_SEG times, its token row summed in parts), and two
 * taped forwards of one shape before their backward (two plans hold their activations), eval and
 * train mode.
 */
async function gradsCase() {
  await onBackend("webgpu");
  const rec = new TransformerEncoder(CONFIG, new Rng(3));
  const ref = new TransformerEncoder(CONFIG, new Rng(3));
  const worst: Record<string, { loss: number; grad: number; at: string }> = {};
  const batches: [string, TokenBatch][] = [["3x16", batchOf(3, 16, 1)], ["5x64", batchOf(5, 64, 2)], ["2x256", batchOf(2, 256, 3)], ["4x16 ids 1-4", batchOf(4, 16, 4, 5)], ["4x64 ids 1-2", batchOf(4, 64, 6, 3)], ["3x16 twice", batchOf(3, 16, 1)]];
  const calls0 = recorderStats.trainCalls;
  let gradNorm = 0;
  for (const [name, batch] of batches) {
    for (const training of [false, true]) {
      const c = await compare(rec, ref, batch, training, name.endsWith("twice"));
      worst[`${name} ${training ? "train" : "eval"}`] = c.worst;
      gradNorm += c.sumSq;
    }
  }
  // 40×256 rows: more row blocks than a LayerNorm's partial sums (LN_PARTS), so each part sums several blocks' rows
  worst["40x256 eval"] = (await compare(rec, ref, batchOf(40, 256, 9), false)).worst;
  // width 64: every weight gradient aligned (vec4 loads) and split along K in 2
  const wide = { ...CONFIG, dim: 64, hidden: 128 };
  const [rec64, ref64] = [new TransformerEncoder(wide, new Rng(4)), new TransformerEncoder(wide, new Rng(4))];
  for (const training of [false, true]) worst[`d64 6x64 ${training ? "train" : "eval"}`] = (await compare(rec64, ref64, batchOf(6, 64, 8), training)).worst;
  const rngAfter = rec.dropoutRng.nextU32() === ref.dropoutRng.nextU32();
  return { worst, rngAfter, trainCalls: recorderStats.trainCalls - calls0, variables: rec.variables.length, gradNorm: Math.sqrt(gradNorm) };
}

/**
 * One call recorded (`rec`) against the tfjs path (`ref`, the same weights): the loss's difference
 * on its terms' size and the worst gradient's relative difference (which variable), and Σ g² of
 * the tfjs gradients.
 */
async function compare(rec: TransformerEncoder, ref: TransformerEncoder, batch: TokenBatch, training: boolean, twice = false): Promise<{ worst: { loss: number; grad: number; at: string }; sumSq: number }> {
  const a = await lossAndGrads(rec, batch, training, true, twice);
  const b = await lossAndGrads(ref, batch, training, false, twice);
  const worst = { loss: Math.abs(a.loss - b.loss) / b.scale, grad: 0, at: "" };
  let sumSq = 0;
  b.grads.forEach((g, i) => {
    const d = relDiff(a.grads[i], g);
    if (!(d <= worst.grad)) Object.assign(worst, { grad: d, at: rec.variables[i].name });
    for (const x of g) sumSq += x * x;
  });
  return { worst, sumSq };
}

/** Repeated update-shaped calls: what each creates, and what one forward + backward counts. */
async function cacheCase() {
  await onBackend("webgpu");
  const enc = new TransformerEncoder(CONFIG, new Rng(5));
  const batch = batchOf(6, 64, 1);
  const inside0 = recorderStats.kernelsInside;
  const { created, counts } = await tapedCalls(enc, batch);
  return { created, counts, kernelsInside: recorderStats.kernelsInside - inside0, layers: CONFIG.layers };
}

const CASES: Record<string, () => Promise<unknown>> = { grads: gradsCase, cache: cacheCase };

const name = process.argv[2] ?? "";
const fn = CASES[name];
if (!fn) throw new Error(`unknown case "${name}" (one of ${Object.keys(CASES).join(", ")})`);
process.stdout.write(JSON.stringify(await fn()) + "\n");
process.exit(0);
