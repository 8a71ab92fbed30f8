/**
 * BERT WordPiece tokenisation from a Hugging Face folder, with @huggingface/tokenizers (pure JS,
 * no downloads: it is handed the parsed files). A folder with `tokenizer.json` uses it as is
 * (normalizer, pre-tokenizer, WordPiece model, special tokens). A folder with only `vocab.txt`
 * gets the tokenizer.json that `BertTokenizerFast` would build from it: BertNormalizer
 * (clean_text, handle_chinese_chars = tokenize_chinese_chars, strip_accents, lowercase =
 * do_lower_case from tokenizer_config.json; defaults true / null / true as in transformers),
 * BertPreTokenizer (whitespace + punctuation split), WordPiece with `##` and [UNK].
 *
 * Packing follows the reference (docs/method.md §1.2): every piece is tokenised separately and cut
 * to `maxTokens` tokens *including* its [CLS]/[SEP]; pieces are joined `[CLS] q [SEP] c1 [SEP] …`.
 */
import fs from "node:fs";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import type { ReadFile } from "../../data-root.ts";
import { AsciiWordPiece } from "./wordpiece-ascii.ts";

type Json = Record<string, unknown>;

/**
 * Texts whose ids are kept: a run tokenizes the same chunks and questions again at every step (a
 * state repeats its pieces), which took about a sixth of bert-tiny's host time an iteration. A
 * string keeps its hash, so a hit is one lookup. Cleared when full (a 1M-token haystack's 40,000
 * sentences fit); longer texts are not kept (V8 hashes a string over 16,383 characters by its
 * length alone, and they are rare).
 */
const TEXT_CACHE_MAX = 65_536;
const TEXT_CACHE_CHARS = 4_096;

export class HfTokenizerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HfTokenizerError";
  }
}

function readJson(file: string, label: string, read: ReadFile): Json {
  const text = read(file, label).toString("utf8");
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not an object");
    return v as Json;
  } catch {
    throw new HfTokenizerError(`${label}: not a JSON object`);
  }
}

/** The special-token string a tokenizer_config.json names (plain or as an AddedToken object). */
function specialName(v: unknown, fallback: string): string {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as { content?: unknown }).content === "string") return (v as { content: string }).content;
  return fallback;
}

/** tokenizer.json for a BERT vocab.txt, as transformers' BertTokenizerFast converter builds it. */
function tokenizerJsonFromVocab(vocabText: string, cfg: Json, label: string): Json {
  const vocab: Record<string, number> = {};
  const lines = vocabText.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  lines.forEach((line, i) => {
    const tok = line.replace(/\r$/, "");
    if (!(tok in vocab)) vocab[tok] = i;
  });
  const names = {
    unk: specialName(cfg.unk_token, "[UNK]"),
    cls: specialName(cfg.cls_token, "[CLS]"),
    sep: specialName(cfg.sep_token, "[SEP]"),
    pad: specialName(cfg.pad_token, "[PAD]"),
    mask: specialName(cfg.mask_token, "[MASK]"),
  };
  for (const k of ["unk", "cls", "sep", "pad"] as const) {
    if (!(names[k] in vocab)) throw new HfTokenizerError(`${label}: the ${k} token is not in the vocabulary`);
  }
  const added = Object.values(names)
    .filter((n, i, a) => n in vocab && a.indexOf(n) === i)
    .map((n) => ({ id: vocab[n], content: n, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }))
    .sort((a, b) => a.id - b.id);
  const lower = cfg.do_lower_case === undefined ? true : Boolean(cfg.do_lower_case);
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: cfg.tokenize_chinese_chars === undefined ? true : Boolean(cfg.tokenize_chinese_chars),
      strip_accents: cfg.strip_accents === undefined ? null : cfg.strip_accents,
      lowercase: lower,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: { type: "BertProcessing", sep: [names.sep, vocab[names.sep]], cls: [names.cls, vocab[names.cls]] },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: { type: "WordPiece", unk_token: names.unk, continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
  };
}

export interface PaddedEncoding {
  tokens: string[][];
  ids: number[][];
  mask: number[][];
}

export class WordPieceTokenizer {
  readonly cls: number;
  readonly sep: number;
  readonly pad: number;
  readonly vocabSize: number;
  /** tokenizer_config.json's model_max_length (Infinity when absent or a placeholder). */
  readonly modelMaxLength: number;
  private readonly tok: Tokenizer;
  /** The same ids for ASCII text under the standard BERT pipeline, ~20× faster (null: another pipeline). */
  private readonly fast: AsciiWordPiece | null;
  private readonly texts = new Map<string, readonly number[]>();

  constructor(tokenizerJson: Json, config: Json, label: string) {
    try {
      this.tok = new Tokenizer(tokenizerJson, config);
    } catch (e) {
      // the library's message can quote the file: name the kind of failure only
      throw new HfTokenizerError(`${label}: unsupported tokenizer (${(e as Error).name || "error"})`);
    }
    this.fast = AsciiWordPiece.from(tokenizerJson);
    const model = tokenizerJson.model as { type?: unknown; vocab?: unknown } | undefined;
    if (!model || model.type !== "WordPiece" || typeof model.vocab !== "object" || model.vocab === null) {
      throw new HfTokenizerError(`${label}: model.type is not WordPiece (a BERT-family tokenizer is needed)`);
    }
    this.vocabSize = this.tok.get_vocab(true).size;
    const idOf = (name: string): number => {
      const id = this.tok.token_to_id(name);
      if (id === undefined) throw new HfTokenizerError(`${label}: a special token named by the tokenizer config is not in the vocabulary`);
      return id;
    };
    this.cls = idOf(specialName(config.cls_token, "[CLS]"));
    this.sep = idOf(specialName(config.sep_token, "[SEP]"));
    this.pad = idOf(specialName(config.pad_token, "[PAD]"));
    const mml = config.model_max_length;
    this.modelMaxLength = typeof mml === "number" && mml > 0 && mml < 1e9 ? mml : Infinity;
  }

  /**
   * From a model folder: tokenizer.json if present, else vocab.txt; tokenizer_config.json is
   * optional. `label` names the folder in errors.
   */
  static fromFolder(dir: string, label: string, read: ReadFile): WordPieceTokenizer {
    const cfgFile = path.join(dir, "tokenizer_config.json");
    const config = fs.existsSync(cfgFile) ? readJson(cfgFile, `${label}/tokenizer_config.json`, read) : {};
    const tj = path.join(dir, "tokenizer.json");
    if (fs.existsSync(tj)) return new WordPieceTokenizer(readJson(tj, `${label}/tokenizer.json`, read), config, label);
    const vt = path.join(dir, "vocab.txt");
    if (fs.existsSync(vt)) {
      return new WordPieceTokenizer(tokenizerJsonFromVocab(read(vt, `${label}/vocab.txt`).toString("utf8"), config, `${label}/vocab.txt`), config, label);
    }
    throw new HfTokenizerError(`${label}: no tokenizer.json or vocab.txt`);
  }

  /** WordPiece ids of a text, no special tokens (kept for the next call: do not change them). */
  ids(text: string): readonly number[] {
    const hit = this.texts.get(text);
    if (hit) return hit;
    const ids = this.fast?.ids(text) ?? this.libraryIds(text);
    if (text.length <= TEXT_CACHE_CHARS) {
      if (this.texts.size >= TEXT_CACHE_MAX) this.texts.clear();
      this.texts.set(text, ids);
    }
    return ids;
  }

  /** How many texts' ids are kept (tests). */
  get cachedTexts(): number {
    return this.texts.size;
  }

  /** The library's ids, whatever the text (the reference the fast path is tested against). */
  libraryIds(text: string): number[] {
    return this.tok.encode(text, { add_special_tokens: false }).ids;
  }

  tokenOf(id: number): string {
    return this.tok.id_to_token(id) ?? "[?]";
  }

  /** `[CLS] pieces… [SEP]` with the pieces cut so the row has at most `maxTokens` tokens (≥ 2). */
  single(text: string, maxTokens: number): number[] {
    const ids = this.ids(text);
    const keep = Math.max(0, maxTokens - 2);
    return [this.cls, ...(ids.length > keep ? ids.slice(0, keep) : ids), this.sep];
  }

  /** `[CLS] p1 [SEP] p2 [SEP] …`, each piece cut as in `single` (the reference's stack_memory). */
  joined(pieces: readonly string[], maxTokensPerPiece: number): number[] {
    const row: number[] = [this.cls];
    for (const p of pieces) row.push(...this.piece(p, maxTokensPerPiece), this.sep);
    if (pieces.length === 0) row.push(this.sep);
    return row;
  }

  /** One piece's ids as `joined` writes them: cut to maxTokensPerPiece − 2. */
  piece(text: string, maxTokensPerPiece: number): readonly number[] {
    const ids = this.ids(text);
    const keep = Math.max(0, maxTokensPerPiece - 2);
    return ids.length > keep ? ids.slice(0, keep) : ids;
  }

  /** Like HF `tokenizer(texts, padding=True, truncation=True, max_length)`: right-padded to the longest. */
  encodePadded(texts: readonly string[], maxLength: number): PaddedEncoding {
    const rows = texts.map((t) => this.single(t, maxLength));
    const L = Math.max(0, ...rows.map((r) => r.length));
    const ids = rows.map((r) => [...r, ...new Array<number>(L - r.length).fill(this.pad)]);
    return {
      ids,
      tokens: ids.map((r) => r.map((i) => this.tokenOf(i))),
      mask: rows.map((r) => [...new Array<number>(r.length).fill(1), ...new Array<number>(L - r.length).fill(0)]),
    };
  }
}
