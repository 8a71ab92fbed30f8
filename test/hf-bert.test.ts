/**
 * `hf` encoders (server/qrag/model/hf/) against the bert-tiny fixture (a random 2-layer BERT with
 * what Hugging Face transformers computed, test/fixtures/bert-tiny/reference_outputs.json):
 * WordPiece tokens and ids equal, last hidden states and the ÷10 mean pool within the fixture's
 * atol on the cpu and wasm backends; the safetensors reader's errors; config checks of
 * algo.encoder.path in the data root; and a short train() run whose checkpoint round-trips.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import { HfBertEncoder, loadHfFolder } from "../server/qrag/model/hf/encoder.ts";
import { checkEncoderPath } from "../server/qrag/model/hf/encoder-path.ts";
import { SafetensorsFile } from "../server/qrag/model/hf/safetensors.ts";
import { WordPieceTokenizer } from "../server/qrag/model/hf/wordpiece.ts";
import type { EncoderConfig, TokenBatch } from "../server/qrag/model/encoder.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { ConfigError, resolveConfig } from "../server/qrag/config/config.ts";
import { train, type TrainCheckpoint } from "../server/qrag/training/train.ts";
import { loadAgent } from "../server/qrag/evaluation/evaluate.ts";
import { loadCheckpoint } from "../server/qrag/training/checkpoint.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { readOwnFile } from "../server/qrag/data-root.ts";

const FIXTURE = path.resolve(import.meta.dirname, "fixtures/bert-tiny");
interface Reference {
  texts: string[];
  tokens: string[][];
  input_ids: number[][];
  attention_mask: number[][];
  last_hidden_state: number[][][];
  mean_pooled_div10: number[][];
  atol: number;
}
const REF = JSON.parse(fs.readFileSync(path.join(FIXTURE, "reference_outputs.json"), "utf8")) as Reference;
const MAX = 64;

/** A temporary data root holding a copy of the fixture at models/bert-tiny (without the reference). */
function dataRootWithModel(files = ["config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json"]): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-hf-"));
  fs.mkdirSync(path.join(root, "models/bert-tiny"), { recursive: true });
  for (const f of files) fs.copyFileSync(path.join(FIXTURE, f), path.join(root, "models/bert-tiny", f));
  return root;
}
const ROOT = dataRootWithModel();
const HF: EncoderConfig = { type: "hf", path: "models/bert-tiny", dim: 32, vocab_size: 4096, hidden: 64, layers: 2, heads: 4, max_len: 256, dropout: 0.1, init_std: 0.02 };

function refBatch(): TokenBatch {
  const B = REF.input_ids.length, T = REF.input_ids[0].length;
  return { ids: Int32Array.from(REF.input_ids.flat()), mask: Float32Array.from(REF.attention_mask.flat()), batch: B, len: T };
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length, "same number of values");
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test("WordPiece tokens and ids equal Hugging Face's, from tokenizer.json and from vocab.txt alone", () => {
  const fromJson = WordPieceTokenizer.fromFolder(FIXTURE, "bert-tiny", readOwnFile);
  const vocabOnly = dataRootWithModel(["vocab.txt"]);
  const fromVocab = WordPieceTokenizer.fromFolder(path.join(vocabOnly, "models/bert-tiny"), "bert-tiny", readOwnFile);
  for (const tok of [fromJson, fromVocab]) {
    const enc = tok.encodePadded(REF.texts, MAX);
    assert.deepEqual(enc.tokens, REF.tokens);
    assert.deepEqual(enc.ids, REF.input_ids);
    assert.deepEqual(enc.mask, REF.attention_mask);
  }
  // accents are stripped with lower-casing, CJK characters split, unknown words become [UNK]
  assert.deepEqual(fromVocab.encodePadded(["Märy 中"], MAX).tokens[0], fromJson.encodePadded(["Märy 中"], MAX).tokens[0]);
  assert.deepEqual(fromJson.encodePadded(["Märy 中"], MAX).tokens[0], ["[CLS]", "mary", "[UNK]", "[SEP]"]);
  // a piece cut to maxTokens counts its [CLS] and [SEP] (the reference's truncation)
  assert.deepEqual(fromJson.single("Mary journeyed to the kitchen.", 4), [fromJson.cls, ...fromJson.ids("Mary journeyed"), fromJson.sep]);
  assert.deepEqual(fromJson.joined(["Where is Mary?", "Mary journeyed."], 4), [fromJson.cls, ...fromJson.ids("where is"), fromJson.sep, ...fromJson.ids("mary journeyed"), fromJson.sep]);
  fs.rmSync(vocabOnly, { recursive: true });
});

for (const backend of ["cpu", "wasm"] as const) {
  test(`bert-tiny on ${backend}: last hidden states and the ÷10 mean pool within atol of Hugging Face`, async () => {
    if (backend === "wasm") await pickBackend("wasm");
    else await tf.setBackend("cpu");
    assert.equal(tf.getBackend(), backend);
    const enc = HfBertEncoder.load(HF, new Rng(1), ROOT);
    try {
      const batch = refBatch();
      const h = enc.lastHiddenState(batch);
      const hd = maxAbsDiff(h.dataSync(), REF.last_hidden_state.flat(2));
      h.dispose();
      assert.ok(hd <= REF.atol, `last_hidden_state max |Δ| ${hd} > ${REF.atol}`);
      // the training path (packed real tokens, per-head attention) and the no-grad path
      const y = tf.tidy(() => enc.forward(batch, false));
      const pd = maxAbsDiff(y.dataSync(), REF.mean_pooled_div10.flat());
      y.dispose();
      assert.ok(pd <= REF.atol, `mean_pooled_div10 max |Δ| ${pd} > ${REF.atol}`);
      const ng = maxAbsDiff(enc.embedNoGrad(batch), REF.mean_pooled_div10.flat());
      assert.ok(ng <= REF.atol, `embedNoGrad max |Δ| ${ng}`);
      // texts packed by the encoder itself give the same embeddings
      const packed = enc.packActions(REF.texts, MAX);
      const pk = maxAbsDiff(enc.embedNoGrad(packed), REF.mean_pooled_div10.flat());
      assert.ok(pk <= REF.atol, `packActions + embedNoGrad max |Δ| ${pk}`);
    } finally {
      enc.dispose();
      await pickBackend("wasm");
    }
  });
}

test("the encoder's weights are trainable, clones share values, Polyak and export/import work", () => {
  const enc = HfBertEncoder.load(HF, new Rng(1), ROOT);
  const batch = refBatch();
  const { grads, value } = tf.variableGrads(() => tf.sum(tf.square(enc.forward(batch, true))) as tf.Scalar, enc.variables);
  assert.equal(Object.keys(grads).length, enc.variables.length, "every weight gets a gradient");
  const nonzero = enc.variables.filter((v) => tf.tidy(() => tf.any(tf.notEqual(grads[v.name], 0)).dataSync()[0] === 1));
  // rows of the word/position tables that no token uses get 0; the rest of the weights all move
  assert.ok(nonzero.length >= enc.variables.length - 1, `${nonzero.length} of ${enc.variables.length} weights have a nonzero gradient`);
  value.dispose();
  tf.dispose(grads);
  const clone = enc.clone(false);
  assert.equal(maxAbsDiff(clone.exportWeights()[7].data, enc.exportWeights()[7].data), 0);
  const ws = enc.exportWeights();
  ws[0].data[0] += 1;
  clone.importWeights(ws);
  assert.equal(clone.exportWeights()[0].data[0], ws[0].data[0]);
  enc.polyakFrom(clone, 0.5);
  assert.ok(Math.abs(enc.exportWeights()[0].data[0] - (ws[0].data[0] - 0.5)) < 1e-5);
  enc.dispose();
  clone.dispose();
});

test("safetensors: a truncated file or a bad header names the file and tensor, never the data", () => {
  const buf = fs.readFileSync(path.join(FIXTURE, "model.safetensors"));
  const full = new SafetensorsFile(buf, "bert-tiny/model.safetensors");
  assert.deepEqual(full.read("embeddings.LayerNorm.weight").shape, [32]);
  const cut = buf.subarray(0, buf.length - 100);
  assert.throws(() => new SafetensorsFile(cut, "m/model.safetensors"), (e: Error) => {
    assert.match(e.message, /^m\/model\.safetensors: tensor "encoder\.layer\.1\.output\.dense\.weight": truncated/);
    assert.ok(e.message.length < 300, "no data dumped");
    return true;
  });
  assert.throws(() => new SafetensorsFile(buf.subarray(0, 5), "m/x"), /^SafetensorsError: m\/x: not a safetensors file \(5 bytes/);
  assert.throws(() => new SafetensorsFile(buf.subarray(0, 200), "m/x"), /m\/x: truncated: header of \d+ bytes/);
  assert.throws(() => full.read("pooler.dense.weight"), /bert-tiny\/model\.safetensors: no tensor "pooler\.dense\.weight"/);
  // F16 and BF16 are converted to float32
  const header = JSON.stringify({ a: { dtype: "F16", shape: [2], data_offsets: [0, 4] }, b: { dtype: "BF16", shape: [2], data_offsets: [4, 8] } });
  const hb = Buffer.from(header);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hb.length));
  const data = Buffer.from([0x00, 0x3c, 0x00, 0xc0, 0x80, 0x3f, 0x40, 0xc0]); // f16 1, -2; bf16 1, -3
  const small = new SafetensorsFile(Buffer.concat([len, hb, data]), "s");
  assert.deepEqual([...small.read("a").data], [1, -2]);
  assert.deepEqual([...small.read("b").data], [1, -3]);
  // a loaded folder with a truncated model file fails at load with the file's relative name
  const root = dataRootWithModel();
  fs.writeFileSync(path.join(root, "models/bert-tiny/model.safetensors"), cut);
  assert.throws(() => loadHfFolder(HF, root), /^SafetensorsError: models\/bert-tiny\/model\.safetensors: tensor "encoder\.layer\.1\.output\.dense\.weight": truncated/);
  fs.rmSync(root, { recursive: true });
});

test("algo.encoder.path: required for hf, inside the data root, the folder complete", () => {
  assert.throws(() => resolveConfig({ preset: "tiny", overrides: ["algo.encoder.type=hf"] }), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.ok(e.issues.some((i) => i.path === "algo.encoder.path" && /required for type hf/.test(i.message)), JSON.stringify(e.issues));
    return true;
  });
  const cfg = resolveConfig({ preset: "tiny", overrides: ["algo.encoder.type=hf", "algo.encoder.path=models/bert-tiny", "algo.encoder.max_length=32"] });
  assert.deepEqual(checkEncoderPath(cfg.algo.encoder, ROOT).issues, []);
  assert.equal(checkEncoderPath({ ...cfg.algo.encoder, path: path.join(ROOT, "models/bert-tiny") }, ROOT).encoder.path, "models/bert-tiny", "stored relative to the root");
  const outside = checkEncoderPath({ ...cfg.algo.encoder, path: FIXTURE }, ROOT).issues;
  assert.equal(outside[0].path, "algo.encoder.path");
  assert.match(outside[0].message, /must be inside the data root/);
  const partial = dataRootWithModel(["model.safetensors", "vocab.txt"]);
  assert.deepEqual(checkEncoderPath(cfg.algo.encoder, partial).issues, [{ path: "algo.encoder.path", message: "no config.json in models/bert-tiny" }]);
  assert.throws(() => loadHfFolder(cfg.algo.encoder, partial), /^InputError: algo\.encoder\.path: no config\.json in models\/bert-tiny$/);
  fs.rmSync(path.join(partial, "models/bert-tiny/vocab.txt"));
  fs.copyFileSync(path.join(FIXTURE, "config.json"), path.join(partial, "models/bert-tiny/config.json"));
  assert.deepEqual(checkEncoderPath(cfg.algo.encoder, partial).issues, [{ path: "algo.encoder.path", message: "no vocab.txt or tokenizer.json in models/bert-tiny" }]);
  fs.rmSync(partial, { recursive: true });
  assert.deepEqual(checkEncoderPath({ type: "bow" }, ROOT), { encoder: { type: "bow" }, issues: [] });
});

test("files inside an hf folder that link out of the data root are refused once open, and no error quotes a file's content", () => {
  const secret = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-hf-secret-"));
  fs.writeFileSync(path.join(secret, "config.json"), JSON.stringify({ model_type: "SECRETVALUE123" }));
  fs.writeFileSync(path.join(secret, "passwd"), "root:SECRETVALUE123:0:0:root:/root:/bin/bash\n");
  const cfg = { path: "models/bert-tiny", max_length: 32 };
  const errorOf = (root: string) => {
    try {
      loadHfFolder(cfg, root);
    } catch (e) {
      return String(e);
    }
    return "no error";
  };
  for (const [file, target] of [["config.json", "config.json"], ["config.json", "passwd"], ["vocab.txt", "passwd"], ["tokenizer.json", "passwd"], ["model.safetensors", "passwd"]]) {
    const root = dataRootWithModel();
    const dst = path.join(root, "models/bert-tiny", file);
    fs.rmSync(dst);
    fs.symlinkSync(path.join(secret, target), dst);
    if (file === "vocab.txt") fs.rmSync(path.join(root, "models/bert-tiny/tokenizer.json")); // else vocab.txt is not read
    const err = errorOf(root);
    assert.match(err, new RegExp(`models/bert-tiny/${file.replace(".", "\\.")}: must be inside the data root`), `${file} → ${target}: ${err}`);
    assert.ok(!err.includes("SECRETVALUE123"), err);
    fs.rmSync(root, { recursive: true });
  }
  // a link to another file inside the root is fine
  const root = dataRootWithModel();
  fs.renameSync(path.join(root, "models/bert-tiny/config.json"), path.join(root, "bert-config.json"));
  fs.symlinkSync(path.join(root, "bert-config.json"), path.join(root, "models/bert-tiny/config.json"));
  assert.equal(errorOf(root), "no error");
  // a file inside the root whose content is wrong is named, its values are not quoted
  fs.rmSync(path.join(root, "models/bert-tiny/config.json"));
  fs.writeFileSync(path.join(root, "models/bert-tiny/config.json"), JSON.stringify({ model_type: "SECRETVALUE123", hidden_act: "SECRETVALUE123" }));
  const wrong = errorOf(root);
  assert.match(wrong, /models\/bert-tiny\/config\.json: model_type is not supported/);
  assert.ok(!wrong.includes("SECRETVALUE123"), wrong);
  fs.rmSync(root, { recursive: true });
  fs.rmSync(secret, { recursive: true });
});

test("QNetworks with an hf encoder: both encoders start from the folder's weights; train() updates them and the checkpoint round-trips", async () => {
  await pickBackend("wasm");
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["algo.encoder.type=hf", "algo.encoder.path=models/bert-tiny", "steps_count=4", "eval_interval=2", "eval_episodes=4", "eval_episodes_logged=0", "learning_start=4"],
  });
  const nets = new QNetworks(config.algo.encoder, new Rng(5), { dataRoot: ROOT });
  assert.equal(nets.dim, 32, "the dimension comes from the folder's config.json");
  const folder = loadHfFolder(config.algo.encoder, ROOT).weights;
  for (const e of [nets.state, nets.action, nets.stateTarget, nets.actionTarget, nets.policy]) {
    assert.equal(e.config.type, "hf");
    e.exportWeights().forEach((w, i) => assert.equal(maxAbsDiff(w.data, folder[i].data), 0, `weight ${i} as in the folder`));
  }
  nets.dispose();

  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-hf-run-"));
  const res = await train(config, { runDir, dataRoot: ROOT });
  assert.equal(res.status, "completed");
  assert.equal(res.updates, 4);
  const { state } = loadCheckpoint<TrainCheckpoint>(path.join(res.runDir, "checkpoints", "last"));
  assert.equal(state.config.algo.encoder.type, "hf");
  // AdamW moved the trainable encoders away from the folder's weights, differently, and the targets follow by Polyak
  const moved = (ws: { data: Float32Array }[]) => Math.max(...ws.map((w, i) => maxAbsDiff(w.data, folder[i].data)));
  assert.ok(moved(state.weights.state) > 0 && moved(state.weights.action) > 0, "state and action encoders trained");
  assert.ok(moved(state.weights.stateTarget) > 0 && moved(state.weights.stateTarget) < moved(state.weights.state), "target between the start and the trained weights");
  const { nets: loaded } = await loadAgent(path.join(res.runDir, "checkpoints", "last"), "wasm", ROOT);
  const back = loaded.exportWeights();
  for (const k of ["state", "action", "stateTarget", "actionTarget"] as const) {
    back[k].forEach((w, i) => assert.equal(maxAbsDiff(w.data, state.weights[k][i].data), 0, `${k} weight ${i} equal after load`));
  }
  loaded.dispose();
  fs.rmSync(runDir, { recursive: true });
});
