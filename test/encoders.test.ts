/**
 * Both encoders (bow, transformer): packing, output shape and ÷10 scale against plain-JS
 * references, masked mean pooling, dropout only when training, clone / copyFrom / polyakFrom
 * arithmetic, export/import, no tensor leaks, cpu vs wasm, and a tiny learning check.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import type { EncoderConfig, TokenBatch } from "../server/qrag/model/encoder.ts";
import { createEncoder, defaultEncoderConfig, type QEncoder } from "../server/qrag/model/factory.ts";
import { twinQ, twinQAll } from "../server/qrag/model/qfunction.ts";
import { attentionBatched } from "../server/qrag/model/attention.ts";
import { embedScatter } from "../server/qrag/model/ops.ts";
import { CLS, PAD, SEP, textIds, textIdsFast, textIdsWithBigrams, wordId } from "../server/qrag/model/tokenizer.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { padRows } from "../server/qrag/model/base.ts";
import { lengthGroups, permuteRows, SPLIT_TOKENS } from "../server/qrag/model/length-groups.ts";

await pickBackend("wasm");

const BOW: EncoderConfig = { type: "bow", dim: 32, vocab_size: 1024, hidden: 64, layers: 0, heads: 1, max_len: 128, dropout: 0.1, init_std: 0.1 };
const TRANSFORMER: EncoderConfig = { type: "transformer", dim: 32, vocab_size: 512, hidden: 64, layers: 2, heads: 4, max_len: 64, dropout: 0.1, init_std: 0.02 };
const CONFIGS = [BOW, TRANSFORMER];

const WORDS = "mary john sandra daniel went moved travelled journeyed to the kitchen garden office hallway bathroom bedroom picked up dropped apple football milk".split(" ");
function sentence(rng: Rng, n: number): string {
  return Array.from({ length: n }, () => rng.choice(WORDS)).join(" ");
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function embed(enc: QEncoder, batch: TokenBatch, training = false): Float32Array {
  let out = new Float32Array(0);
  tf.tidy(() => {
    out = Float32Array.from(enc.forward(batch, training).dataSync() as Float32Array);
  });
  return out;
}

function row(a: Float32Array, r: number, D: number): Float32Array {
  return a.subarray(r * D, (r + 1) * D);
}

// ---- plain-JS references -------------------------------------------------------------------

function erf(x: number): number {
  // Abramowitz–Stegun 7.1.26 (|error| ≤ 1.5e-7)
  const s = Math.sign(x), ax = Math.abs(x), t = 1 / (1 + 0.3275911 * ax);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-ax * ax);
  return s * y;
}

function layerNormJs(v: number[], g: Float32Array, b: Float32Array): number[] {
  const n = v.length;
  const mean = v.reduce((s, x) => s + x, 0) / n;
  const variance = v.reduce((s, x) => s + (x - mean) ** 2, 0) / n;
  return v.map((x, i) => ((x - mean) / Math.sqrt(variance + 1e-5)) * g[i] + b[i]);
}

/** bow: LN(e + W2·gelu(W1·e + b1) + b2) · scale (÷10 up to D = 128) with e the mean of the token embeddings. */
function bowRef(enc: QEncoder, ids: number[], scale = 0.1): number[] {
  const [table, w1, b1, w2, b2, g, be] = enc.exportWeights();
  const D = enc.dim, H = b1.data.length;
  const e = new Array<number>(D).fill(0);
  for (const id of ids) for (let j = 0; j < D; j++) e[j] += table.data[id * D + j] / ids.length;
  const z = new Array<number>(H).fill(0);
  for (let k = 0; k < H; k++) {
    let s = b1.data[k];
    for (let j = 0; j < D; j++) s += e[j] * w1.data[j * H + k];
    z[k] = 0.5 * s * (1 + erf(s / Math.SQRT2));
  }
  const h = e.map((ej, j) => {
    let s = ej + b2.data[j];
    for (let k = 0; k < H; k++) s += z[k] * w2.data[k * D + j];
    return s;
  });
  return layerNormJs(h, g.data, be.data).map((x) => x * scale);
}

/** transformer with 0 layers: mean over tokens of LN_f(tok + pos) / 10. */
function transformer0Ref(enc: QEncoder, ids: number[]): number[] {
  const [tok, pos, g, b] = enc.exportWeights();
  const D = enc.dim;
  const acc = new Array<number>(D).fill(0);
  ids.forEach((id, t) => {
    const v = Array.from({ length: D }, (_, j) => tok.data[id * D + j] + pos.data[t * D + j]);
    layerNormJs(v, g.data, b.data).forEach((x, j) => (acc[j] += x / ids.length));
  });
  return acc.map((x) => x / 10);
}

// ---- tests ---------------------------------------------------------------------------------

test("textIdsFast equals textIds (ASCII fast path, non-ASCII fallback, truncation)", () => {
  const rng = new Rng(60);
  const alphabet = "abcXYZ019 ,.;'-\n\t";
  const texts = [
    "",
    "   ",
    "Hello, World! 42 times",
    "trailing word",
    "Café Ünïcode naïve",
    "the \u212A kelvin sign lower-cases to k",
    "İstanbul",
    ...Array.from({ length: 200 }, () => Array.from({ length: rng.int(60) }, () => rng.choice([...alphabet])).join("")),
  ];
  for (const t of texts) {
    for (const [V, max] of [[1024, 32], [16384, 3], [8192, 0], [50, 1000]]) {
      assert.deepEqual(textIdsFast(t, V, max), textIds(t, V, max), JSON.stringify(t));
    }
  }
});

test("transformer packing (RowPacker) equals padRows of [CLS, ids…, SEP] rows: padding, cuts at a max_len off the powers of two, non-ASCII, empty states", () => {
  const rng = new Rng(61);
  const alphabet = "abcXYZ019 ,.;'-\n\té";
  const text = () => Array.from({ length: rng.int(90) }, () => rng.choice([...alphabet])).join("");
  for (const max_len of [64, 48, 7, 2]) {
    const enc = createEncoder({ ...TRANSFORMER, max_len }, new Rng(1));
    const V = TRANSFORMER.vocab_size;
    for (const maxTokens of [0, 3, 32, 100]) {
      const texts = ["", "Café Ünïcode", "İstanbul \u212A", ...Array.from({ length: 40 }, text)];
      const rows = texts.map((t) => [CLS, ...textIds(t, V, maxTokens), SEP]);
      assert.deepEqual(enc.packActions(texts, maxTokens), padRows(rows, max_len), `actions, max_len ${max_len}, maxTokens ${maxTokens}`);
      const states = [[], ["one"], ...Array.from({ length: 12 }, () => Array.from({ length: rng.int(6) }, text))];
      const stateRows = states.map((pieces) => (pieces.length ? [CLS, ...pieces.flatMap((p) => [...textIds(p, V, maxTokens), SEP])] : [CLS, SEP]));
      assert.deepEqual(enc.packStates(states, maxTokens), padRows(stateRows, max_len), `states, max_len ${max_len}, maxTokens ${maxTokens}`);
    }
  }
});

test("word bigrams: the word ids, then one ordered pair per consecutive content words", () => {
  const V = 1 << 20; // large enough that no two of these ids collide
  const ids = (t: string) => textIdsWithBigrams(t, V, 64);
  const bigrams = (t: string) => ids(t).slice(textIdsFast(t, V, 64).length);
  const q1 = "What is north of the garden?", q2 = "What is the garden north of?";
  const kitchenNorthOfGarden = "The kitchen is north of the garden.", gardenNorthOfKitchen = "The garden is north of the kitchen.";
  // Prefix = the plain word ids; function words make no pairs (3 content words → 2 pairs).
  assert.deepEqual(ids(kitchenNorthOfGarden).slice(0, 7), textIdsFast(kitchenNorthOfGarden, V, 64));
  assert.equal(bigrams(kitchenNorthOfGarden).length, 2);
  // The same bag of words, told apart by order: each question's pair is in its answer fact only.
  assert.deepEqual([...textIdsFast(kitchenNorthOfGarden, V, 64)].sort(), [...textIdsFast(gardenNorthOfKitchen, V, 64)].sort());
  assert.deepEqual(bigrams(q1), [bigrams(kitchenNorthOfGarden)[1]]);
  assert.deepEqual(bigrams(q2), [bigrams(gardenNorthOfKitchen)[0]]);
  assert.ok(!bigrams(gardenNorthOfKitchen).includes(bigrams(q1)[0]));
  assert.ok(!bigrams(kitchenNorthOfGarden).includes(bigrams(q2)[0]));
  // Truncation counts words; pairs only among the kept words; every id in [3, V).
  assert.deepEqual(ids("kitchen north garden office"), [...ids("kitchen north garden office").slice(0, 4), ...bigrams("kitchen north garden office")]);
  assert.equal(textIdsWithBigrams("kitchen north garden office", V, 2).length, 3);
  assert.ok(textIdsWithBigrams("Café naïve über alles", 50, 10).every((id) => id >= 3 && id < 50));
  // The bow encoder packs them only when asked.
  const plain = createEncoder(BOW, new Rng(1)).packActions([kitchenNorthOfGarden], 64);
  const withPairs = createEncoder({ ...BOW, word_bigrams: true }, new Rng(1)).packActions([kitchenNorthOfGarden], 64);
  assert.equal(Array.from(plain.mask).reduce((a, b) => a + b, 0), 7);
  assert.equal(Array.from(withPairs.mask).reduce((a, b) => a + b, 0), 9);
});

test("bow packing: hashed words only, per-piece truncation, power-of-two padding", () => {
  const enc = createEncoder(BOW, new Rng(1));
  const V = BOW.vocab_size;
  const a = enc.packActions(["The cat sat on the mat", "a b", ""], 4);
  assert.equal(a.batch, 3);
  assert.equal(a.len, 4);
  assert.deepEqual(Array.from(a.ids.subarray(0, 4)), ["the", "cat", "sat", "on"].map((w) => wordId(w, V)));
  assert.deepEqual(Array.from(a.ids.subarray(4, 8)), [wordId("a", V), wordId("b", V), PAD, PAD]);
  assert.deepEqual(Array.from(a.mask), [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
  const s = enc.packStates([["Where is Mary?", "Mary went to the kitchen.", "x"], ["q"]], 2);
  assert.equal(s.len, 8); // 2 + 2 + 1 = 5 → 8
  assert.deepEqual(Array.from(s.ids.subarray(0, 5)), ["where", "is", "mary", "went", "x"].map((w) => wordId(w, V)));
  assert.deepEqual(Array.from(s.mask.subarray(0, 8)), [1, 1, 1, 1, 1, 0, 0, 0]);
  assert.deepEqual(Array.from(s.mask.subarray(8)), [1, 0, 0, 0, 0, 0, 0, 0]);
  enc.dispose();
});

test("transformer packing: [CLS] q [SEP] c1 [SEP] …, [CLS] w.. [SEP], capped at max_len", () => {
  const enc = createEncoder({ ...TRANSFORMER, max_len: 16 }, new Rng(1));
  const V = TRANSFORMER.vocab_size;
  const w = (x: string) => wordId(x, V);
  const a = enc.packActions(["alpha beta gamma", "delta"], 2);
  assert.equal(a.len, 4);
  assert.deepEqual(Array.from(a.ids), [CLS, w("alpha"), w("beta"), SEP, CLS, w("delta"), SEP, PAD]);
  assert.deepEqual(Array.from(a.mask), [1, 1, 1, 1, 1, 1, 1, 0]);
  const s = enc.packStates([["q1 q2 q3", "c d", "e"], ["q"]], 2);
  assert.equal(s.len, 16); // CLS q1 q2 SEP c d SEP e SEP: 9 tokens → next power of two
  assert.deepEqual(
    Array.from(s.ids.subarray(0, 9)),
    [CLS, w("q1"), w("q2"), SEP, w("c"), w("d"), SEP, w("e"), SEP],
  );
  assert.deepEqual(Array.from(s.ids.subarray(16, 19)), [CLS, w("q"), SEP]);
  const long = enc.packStates([[sentence(new Rng(2), 40), sentence(new Rng(3), 40)]], 32);
  assert.equal(long.len, 16, "capped at max_len");
  assert.ok(long.mask.every((m) => m === 1));
  enc.dispose();
});

test("bow wider than 128 keeps the output norm of D = 128 (÷10·√(128/D)), narrower keeps ÷10", () => {
  // Plain ÷10 at D = 512 collapsed training (docs/method.md §11); the scale holds ‖y‖ ≈ √128/10.
  for (const [dim, scale] of [[512, 0.05], [256, 0.1 * Math.SQRT1_2], [128, 0.1], [32, 0.1]] as const) {
    const rng = new Rng(12);
    const enc = createEncoder({ ...BOW, dim, hidden: 2 * dim }, rng.fork("enc"));
    const batch = enc.packActions([sentence(rng, 5), sentence(rng, 9)], 32);
    const y = embed(enc, batch);
    for (let r = 0; r < 2; r++) {
      const ids = Array.from(batch.ids.subarray(r * batch.len, (r + 1) * batch.len)).filter((_, t) => batch.mask[r * batch.len + t]);
      const v = row(y, r, dim);
      assert.ok(maxAbsDiff(v, bowRef(enc, ids, scale)) < 2e-5, `D ${dim} row ${r} vs reference`);
      const rms = Math.sqrt(v.reduce((s, x) => s + x * x, 0) / dim); // LN (γ 1, β 0): rms 1 before scaling
      assert.ok(Math.abs(rms - scale) < 1e-3, `D ${dim}: per-coordinate rms ${rms}, expected ${scale}`);
    }
    enc.dispose();
  }
});

for (const cfg of CONFIGS) {
  const name = cfg.type;

  test(`${name}: [B, D] output, ÷10 scale against a plain-JS reference, embedNoGrad = forward`, () => {
    const rng = new Rng(10);
    const refCfg = cfg.type === "transformer" ? { ...cfg, layers: 0 } : cfg;
    const enc = createEncoder(refCfg, rng.fork("enc"));
    const texts = [sentence(rng, 7), sentence(rng, 3), sentence(rng, 12)];
    const batch = enc.packActions(texts, 32);
    const y = embed(enc, batch);
    assert.equal(y.length, 3 * cfg.dim);
    for (let r = 0; r < 3; r++) {
      const ids: number[] = [];
      for (let t = 0; t < batch.len; t++) if (batch.mask[r * batch.len + t]) ids.push(batch.ids[r * batch.len + t]);
      const ref = cfg.type === "bow" ? bowRef(enc, ids) : transformer0Ref(enc, ids);
      assert.ok(maxAbsDiff(row(y, r, cfg.dim), ref) < 2e-5, `row ${r} vs reference`);
    }
    if (cfg.type === "bow") {
      // LayerNorm (γ=1, β=0) then ÷10: every row has mean 0 and standard deviation 0.1.
      for (let r = 0; r < 3; r++) {
        const v = row(y, r, cfg.dim);
        const mean = v.reduce((s, x) => s + x, 0) / v.length;
        const sd = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length);
        assert.ok(Math.abs(mean) < 1e-6 && Math.abs(sd - 0.1) < 1e-3, `mean ${mean} sd ${sd}`);
      }
    }
    assert.ok(maxAbsDiff(enc.embedNoGrad(batch), y) < 1e-6, "embedNoGrad");
    enc.dispose();

    // Full-depth model: shape, finite, not unit-normalised, embedNoGrad agrees.
    const full = createEncoder(cfg, rng.fork("full"));
    const b2 = full.packStates([[sentence(rng, 6), sentence(rng, 9)], [sentence(rng, 4)], []], 16);
    const y2 = embed(full, b2);
    assert.equal(y2.length, 3 * cfg.dim);
    assert.ok(y2.every(Number.isFinite));
    const norm = Math.sqrt(row(y2, 0, cfg.dim).reduce((s, x) => s + x * x, 0));
    assert.ok(norm > 0 && Math.abs(norm - 1) > 0.05, `row norm ${norm}`);
    assert.ok(maxAbsDiff(full.embedNoGrad(b2), y2) < 1e-5, "embedNoGrad (full)");
    full.dispose();
  });

  test(`${name}: masked mean ignores padding; dropout only when training`, () => {
    const rng = new Rng(11);
    const enc = createEncoder(cfg, rng.fork("enc"));
    const text = sentence(rng, 5);
    const alone = enc.packActions([text], 32);
    const padded = enc.packActions([text, sentence(rng, 30)], 32);
    assert.ok(padded.len > alone.len);
    const e1 = embed(enc, alone);
    const e2 = row(embed(enc, padded), 0, cfg.dim);
    assert.ok(maxAbsDiff(e1, e2) < 1e-6, "same text, different padding");
    const s1 = enc.packStates([[text, "x y"]], 8);
    const s2 = enc.packStates([[text, "x y"], [sentence(rng, 20), sentence(rng, 20), sentence(rng, 20)]], 8);
    assert.ok(maxAbsDiff(embed(enc, s1), row(embed(enc, s2), 0, cfg.dim)) < 1e-6, "states too");

    assert.deepEqual(embed(enc, padded), embed(enc, padded), "eval mode is deterministic");
    const t1 = embed(enc, padded, true), t2 = embed(enc, padded, true);
    assert.ok(maxAbsDiff(t1, t2) > 1e-4, "training draws fresh dropout masks");
    assert.ok(maxAbsDiff(t1, embed(enc, padded)) > 1e-4, "training differs from eval");
    const noDrop = createEncoder({ ...cfg, dropout: 0 }, new Rng(5));
    assert.deepEqual(embed(noDrop, padded, true), embed(noDrop, padded, false), "dropout 0: training = eval");
    noDrop.dispose();
    enc.dispose();
  });

  test(`${name}: clone, copyFrom, polyakFrom (exact 0.9·a + 0.1·b), export/import round trip`, () => {
    const a = createEncoder(cfg, new Rng(20));
    const b = createEncoder(cfg, new Rng(21));
    const batch = a.packActions(["mary went to the kitchen", "john picked up the apple there"], 16);
    const ya = embed(a, batch), yb = embed(b, batch);
    assert.ok(maxAbsDiff(ya, yb) > 1e-3, "different seeds differ");
    const same = createEncoder(cfg, new Rng(20));
    assert.deepEqual(embed(same, batch), ya, "same seed, same weights");
    same.dispose();

    const wa = a.exportWeights(), wb = b.exportWeights();
    const c = a.clone(false);
    assert.ok(c.variables.every((v) => !v.trainable));
    assert.ok(a.clone().variables.every((v) => v.trainable));
    assert.deepEqual(embed(c, batch), ya, "clone = original");

    const before = tf.memory().numTensors;
    c.polyakFrom(b, 0.1);
    c.polyakFrom(b, 0); // no-op
    assert.equal(tf.memory().numTensors, before, "polyakFrom does not leak");
    const f9 = Math.fround(0.9), f1 = Math.fround(0.1);
    c.exportWeights().forEach((w, i) => {
      for (let j = 0; j < w.data.length; j++) {
        const expected = Math.fround(Math.fround(wa[i].data[j] * f9) + Math.fround(wb[i].data[j] * f1));
        if (w.data[j] !== expected) assert.fail(`tensor ${i}[${j}]: ${w.data[j]} != ${expected}`);
      }
    });
    assert.deepEqual(embed(a, batch), ya, "the source of a clone is untouched");

    c.copyFrom(b);
    assert.equal(tf.memory().numTensors, before, "copyFrom does not leak");
    assert.deepEqual(embed(c, batch), yb, "copyFrom = hard copy");
    c.copyFrom(c);

    const d = createEncoder(cfg, new Rng(99));
    d.importWeights(wa);
    assert.deepEqual(embed(d, batch), ya, "import(export) reproduces outputs");
    assert.deepEqual(
      d.exportWeights().map((w) => w.shape),
      wa.map((w) => w.shape),
    );
    assert.throws(() => d.importWeights(wa.slice(1)), /tensors given/);
    const bad = wa.map((w) => ({ shape: [...w.shape], data: w.data }));
    bad[0] = { shape: [bad[0].shape[0] + 1, bad[0].shape[1]], data: new Float32Array((bad[0].shape[0] + 1) * bad[0].shape[1]) };
    assert.throws(() => d.importWeights(bad), /expected/);
    const other = createEncoder(cfg.type === "bow" ? TRANSFORMER : BOW, new Rng(1));
    assert.throws(() => d.copyFrom(other), /architectures differ/);
    for (const e of [a, b, c, d, other]) e.dispose();
  });

  test(`${name}: no tensor leak across 10 forward+grad+Adam steps; a tiny objective is learnt`, () => {
    const rng = new Rng(30);
    const es = createEncoder(cfg, rng.fork("s"));
    const ea = es.clone();
    // Toy retrieval: each question shares two words with its own chunk.
    const topics = ["kitchen", "garden", "office", "hallway", "bathroom", "bedroom", "apple", "milk"];
    const actors = ["mary", "john", "sandra", "daniel", "fred", "bill", "julie", "emma"];
    const questions = topics.map((t, i) => [`where is ${actors[i]} ${t}`]);
    const chunks = topics.map((t, i) => `${actors[i]} went to the ${t}`);
    const sb = es.packStates(questions, 16);
    const ab = ea.packActions(chunks, 16);
    const vars = [...es.variables, ...ea.variables];
    const opt = tf.train.adam(cfg.type === "bow" ? 1e-2 : 3e-3);
    const labels = tf.keep(tf.oneHot(tf.range(0, 8, 1, "int32"), 8));
    const lossFn = (training: boolean) => () => {
      const s = es.forward(sb, training);
      const a = ea.forward(ab, training);
      const { q1, q2 } = twinQAll(s, a);
      return tf.losses.softmaxCrossEntropy(labels, tf.mul(tf.add(q1, q2), 20)) as tf.Scalar;
    };
    const evalLoss = () => tf.tidy(() => lossFn(false)().dataSync()[0]);
    const initial = evalLoss();
    const counts: number[] = [];
    for (let step = 0; step < 10; step++) {
      tf.tidy(() => {
        const { value, grads } = tf.variableGrads(lossFn(true), vars);
        opt.applyGradients(grads as unknown as Parameters<typeof opt.applyGradients>[0]);
        value.dataSync();
      });
      counts.push(tf.memory().numTensors);
    }
    assert.ok(counts.slice(1).every((n) => n === counts[1]), `tensor counts ${counts}`);
    for (let step = 0; step < 35; step++) {
      tf.tidy(() => {
        const { value, grads } = tf.variableGrads(lossFn(true), vars);
        opt.applyGradients(grads as unknown as Parameters<typeof opt.applyGradients>[0]);
        value.dataSync();
      });
    }
    const final = evalLoss();
    console.log(`${name}: toy InfoNCE loss ${initial.toFixed(3)} → ${final.toFixed(3)} in 45 Adam steps`);
    assert.ok(final < 0.7 * initial, `loss ${initial} → ${final}`);
    // twinQ on matched pairs equals the diagonal of twinQAll.
    tf.tidy(() => {
      const s = es.forward(sb, false), a = ea.forward(ab, false);
      const pair = twinQ(s, a), all = twinQAll(s, a);
      const diag = tf.sum(tf.mul(all.q1, tf.eye(8)), 1);
      assert.ok(maxAbsDiff(pair.q1.dataSync(), diag.dataSync()) < 1e-6);
    });
    labels.dispose();
    opt.dispose();
    es.dispose();
    ea.dispose();
  });

  test(`${name}: cpu and wasm backends agree (forward and gradients)`, async () => {
    const enc = createEncoder(cfg, new Rng(40));
    const batch = enc.packStates([["where is mary", "mary went to the garden"], ["john moved"]], 16);
    const run = async (backend: string) => {
      await pickBackend(backend);
      let out: Float32Array[] = [];
      tf.tidy(() => {
        const w = tf.tensor2d(Float32Array.from({ length: 2 * cfg.dim }, (_, i) => Math.sin(i)), [2, cfg.dim]);
        const { value, grads } = tf.variableGrads(() => tf.sum(tf.mul(enc.forward(batch, false), w)) as tf.Scalar, enc.variables);
        out = [value, ...enc.variables.map((v) => grads[v.name])].map((t) => Float32Array.from(t.dataSync() as Float32Array));
      });
      return out;
    };
    try {
      const onWasm = await run("wasm");
      const onCpu = await run("cpu");
      onWasm.forEach((x, i) => assert.ok(maxAbsDiff(x, onCpu[i]) < 1e-5, `output ${i}: ${maxAbsDiff(x, onCpu[i])}`));
    } finally {
      await pickBackend("wasm");
      enc.dispose();
    }
  });
}

/**
 * The transformer written the textbook way on the padded [B, T] layout: fused QKV output sliced,
 * dense attention with a −1e9 PAD-key mask, composite LayerNorm/GELU, masked mean pooling.
 */
function denseTransformer(vars: tf.Variable[], cfg: EncoderConfig, batch: TokenBatch): tf.Tensor2D {
  const B = batch.batch, T = batch.len, d = cfg.dim, N = B * T;
  const ln = (x: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => {
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), g), b);
  };
  const geluRef = (x: tf.Tensor) => tf.mul(tf.mul(x, 0.5), tf.add(tf.erf(tf.mul(x, Math.SQRT1_2)), 1));
  const lin = (x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.add(tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D), b);
  let x: tf.Tensor = tf.add(
    tf.reshape(embedScatter(vars[0] as tf.Variable<tf.Rank.R2>, batch.ids), [B, T, d]),
    tf.slice(vars[1], [0, 0], [T, d]),
  );
  x = tf.reshape(x, [N, d]);
  for (let l = 0; l < cfg.layers; l++) {
    const [g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, c1, w2, c2] = vars.slice(2 + 12 * l, 14 + 12 * l);
    const qkv = lin(ln(x, g1, b1), wqkv, bqkv);
    const part = (i: number) => tf.slice(qkv, [0, i * d], [N, d]) as tf.Tensor2D;
    const att = attentionBatched(part(0), part(1), part(2), { batch: B, len: T, heads: cfg.heads, mask: batch.mask, dropout: 0, training: false });
    x = tf.add(x, lin(att, wo, bo));
    x = tf.add(x, lin(geluRef(lin(ln(x, g2, b2), w1, c1)), w2, c2));
  }
  const xf = tf.reshape(ln(x, vars[vars.length - 2], vars[vars.length - 1]), [B, T, d]);
  const m = tf.tensor3d(batch.mask, [B, T, 1]);
  return tf.div(tf.sum(tf.mul(xf, m), 1), tf.mul(tf.sum(m, 1), 10)) as tf.Tensor2D;
}

test("transformer (packed tokens, per-head attention) equals the dense padded reference, values and gradients", () => {
  const enc = createEncoder(TRANSFORMER, new Rng(50));
  const rng = new Rng(51);
  const batch = enc.packStates(
    [[sentence(rng, 6), sentence(rng, 20)], [sentence(rng, 2)], [sentence(rng, 9), sentence(rng, 9), sentence(rng, 9)], []],
    12,
  );
  assert.ok(batch.len >= 32 && batch.mask.some((m) => m === 0), "a padded batch");
  tf.tidy(() => {
    const w = tf.tensor2d(Float32Array.from({ length: 4 * TRANSFORMER.dim }, (_, i) => Math.cos(i)), [4, TRANSFORMER.dim]);
    const mine = tf.variableGrads(() => tf.sum(tf.mul(enc.forward(batch, false), w)) as tf.Scalar, enc.variables);
    const ref = tf.variableGrads(() => tf.sum(tf.mul(denseTransformer(enc.variables, TRANSFORMER, batch), w)) as tf.Scalar, enc.variables);
    assert.ok(maxAbsDiff(enc.forward(batch, false).dataSync(), denseTransformer(enc.variables, TRANSFORMER, batch).dataSync()) < 1e-5, "forward");
    assert.ok(Math.abs(mine.value.dataSync()[0] - ref.value.dataSync()[0]) < 1e-4);
    for (const v of enc.variables) {
      const a = mine.grads[v.name].dataSync(), b = ref.grads[v.name].dataSync();
      let scale = 0;
      for (const x of b) scale = Math.max(scale, Math.abs(x));
      assert.ok(maxAbsDiff(a, b) <= 1e-4 * Math.max(1, scale), `grad of ${v.name}: ${maxAbsDiff(a, b)} (scale ${scale})`);
    }
  });
  enc.dispose();
});

test("WORKLOAD-size transformer has 1,478,144 weights; bow default sizes", () => {
  const tr = createEncoder(defaultEncoderConfig("transformer"), new Rng(1));
  assert.equal(tr.paramCount, 1_478_144);
  const names = tr.variableNames;
  assert.deepEqual(names.slice(0, 4), ["tok", "pos", "layer0.ln1.gamma", "layer0.ln1.beta"]);
  tr.dispose();
  const bow = createEncoder(defaultEncoderConfig("bow"), new Rng(1));
  assert.equal(bow.paramCount, 16384 * 128 + 128 * 256 + 256 + 256 * 128 + 128 + 2 * 128);
  bow.dispose();
  assert.throws(() => createEncoder({ ...BOW, dim: 30 }, new Rng(1)), /multiple of 4/);
  assert.throws(() => createEncoder({ ...TRANSFORMER, heads: 5 }, new Rng(1)), /heads must divide/);
});

test("length groups: rows sorted by length and cut where the padded length changes, a group too small to pay for its forward joined to the next; the inverse puts each row back", () => {
  // 10 rows of 3 tokens (padded 4), 50 of 20 (32), 30 of 60 (64), shuffled, in a [90, 64] batch
  const byLength = [...Array(10).fill(3), ...Array(50).fill(20), ...Array(30).fill(60)] as number[];
  const lens = byLength.map((_, i) => byLength[(i * 37) % 90]);
  const rows = lens.map((n, r) => Array.from({ length: n }, (_, t) => 1 + ((r + t) % 50)));
  const b = padRows(rows, 64);
  const count = (n: number) => lens.filter((x) => x === n).length;
  assert.deepEqual([count(3), count(20), count(60)], [10, 50, 30]);
  const g = lengthGroups(b)!;
  // 10 rows × (32 − 4) = 280 positions < SPLIT_TOKENS: they run with the 20-token rows; those 60 × 32 ≥ it: apart from the 60-token rows
  assert.ok(10 * 28 < SPLIT_TOKENS && 60 * 32 >= SPLIT_TOKENS);
  assert.deepEqual(g.groups, [[0, 60], [60, 90]]);
  const sorted = permuteRows(b, g.order);
  const len = (bb: typeof b, r: number) => bb.mask.subarray(r * bb.len, (r + 1) * bb.len).reduce((a, m) => a + m, 0);
  const inOrder = Array.from({ length: 90 }, (_, i) => len(sorted, i));
  assert.deepEqual(inOrder, [...inOrder].sort((x, y) => x - y), "shortest first");
  for (let r = 0; r < 90; r++) assert.deepEqual(sorted.ids.subarray(g.inverse[r] * 64, (g.inverse[r] + 1) * 64), b.ids.subarray(r * 64, (r + 1) * 64), `row ${r} back`);
  // one padded length, or a cut not worth a forward: null (the batch runs as it is)
  assert.equal(lengthGroups(padRows(rows.filter((_, i) => lens[i] === 60), 64)), null);
  assert.equal(lengthGroups(padRows([...rows.slice(0, 3), ...rows.filter((_, i) => lens[i] === 60)], 64), 1e9), null);
});
