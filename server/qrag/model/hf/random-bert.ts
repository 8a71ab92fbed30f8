/**
 * A Hugging Face BERT folder (config.json, vocab.txt, model.safetensors) with random weights, for
 * benches and the GPU machine's end-to-end run, where no pretrained encoder can be downloaded. Files
 * only, no tensors: the device pack's mission driver writes BERT-base with it without TensorFlow.js.
 */
import fs from "node:fs";
import path from "node:path";
import { Rng } from "../../util/rng.ts";

export interface BertSize {
  hidden: number;
  layers: number;
  heads: number;
  intermediate: number;
}

/** Tensor names and shapes of a BertModel checkpoint (no pooler). */
export function bertTensorShapes(s: Pick<BertSize, "hidden" | "layers" | "intermediate">, vocab: number, positions: number): [string, number[]][] {
  const H = s.hidden, I = s.intermediate;
  const out: [string, number[]][] = [
    ["embeddings.word_embeddings.weight", [vocab, H]],
    ["embeddings.position_embeddings.weight", [positions, H]],
    ["embeddings.token_type_embeddings.weight", [2, H]],
    ["embeddings.LayerNorm.weight", [H]],
    ["embeddings.LayerNorm.bias", [H]],
  ];
  for (let l = 0; l < s.layers; l++) {
    const p = `encoder.layer.${l}.`;
    for (const m of ["query", "key", "value"]) out.push([`${p}attention.self.${m}.weight`, [H, H]], [`${p}attention.self.${m}.bias`, [H]]);
    out.push(
      [`${p}attention.output.dense.weight`, [H, H]], [`${p}attention.output.dense.bias`, [H]],
      [`${p}attention.output.LayerNorm.weight`, [H]], [`${p}attention.output.LayerNorm.bias`, [H]],
      [`${p}intermediate.dense.weight`, [I, H]], [`${p}intermediate.dense.bias`, [I]],
      [`${p}output.dense.weight`, [H, I]], [`${p}output.dense.bias`, [H]],
      [`${p}output.LayerNorm.weight`, [H]], [`${p}output.LayerNorm.bias`, [H]],
    );
  }
  return out;
}

/**
 * Writes the folder: weights uniform with BERT's init sd 0.02 (LayerNorm weight 1, biases 0), the
 * WordPiece vocabulary `words` (its first five the special tokens [PAD] [UNK] [CLS] [SEP] [MASK]),
 * the same weights for the same seed.
 */
export function writeRandomBert(dir: string, s: BertSize, o: { words: string[]; positions: number; seed: number }): void {
  const rng = new Rng(o.seed);
  fs.mkdirSync(dir, { recursive: true });
  const vocab = o.words.length;
  fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify({
    model_type: "bert", architectures: ["BertModel"], hidden_size: s.hidden, num_hidden_layers: s.layers, num_attention_heads: s.heads,
    intermediate_size: s.intermediate, vocab_size: vocab, max_position_embeddings: o.positions, type_vocab_size: 2, hidden_act: "gelu",
    layer_norm_eps: 1e-12, hidden_dropout_prob: 0.1, attention_probs_dropout_prob: 0.1, initializer_range: 0.02, pad_token_id: 0,
  }));
  fs.writeFileSync(path.join(dir, "vocab.txt"), o.words.join("\n") + "\n");
  const header: Record<string, unknown> = {};
  const blobs: Buffer[] = [];
  let off = 0;
  for (const [name, shape] of bertTensorShapes(s, vocab, o.positions)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const v = new Float32Array(n);
    if (name.endsWith("LayerNorm.weight")) v.fill(1);
    else if (!name.endsWith("bias")) for (let i = 0; i < n; i++) v[i] = (rng.next() * 2 - 1) * 0.0346; // uniform, sd 0.02
    header[name] = { dtype: "F32", shape, data_offsets: [off, off + 4 * n] };
    blobs.push(Buffer.from(v.buffer));
    off += 4 * n;
  }
  let hb = Buffer.from(JSON.stringify(header));
  hb = Buffer.concat([hb, Buffer.alloc((8 - (hb.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hb.length));
  fs.writeFileSync(path.join(dir, "model.safetensors"), Buffer.concat([len, hb, ...blobs]));
}
