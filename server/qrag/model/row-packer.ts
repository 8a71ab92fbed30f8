/**
 * Token rows written straight into one Int32Array, then right-padded and cut as `padRows` does
 * (base.ts): the same TokenBatch without an array per text and per row. Packing the workload's
 * 40,000 chunks took ~135 ms through per-row arrays on this 2-core machine, half of it building
 * `[CLS, ...ids, SEP]`; it is host time before an encode's first program runs.
 */
import type { TokenBatch } from "./encoder.ts";
import { nextPow2 } from "./ops.ts";
import { writeTextIds } from "./tokenizer.ts";

export class RowPacker {
  private readonly ids: Int32Array;
  private readonly lens: Int32Array;
  /** Slots per row: no row is longer than this (the longest a row can be, at most maxLen). */
  private readonly cap: number;
  private r = -1;

  /** `rows` rows of at most `bound` tokens each (longer ones are cut), padded to at most `maxLen`. */
  constructor(private readonly rows: number, private readonly maxLen: number, bound: number) {
    this.cap = Math.max(1, Math.min(maxLen, bound));
    this.ids = new Int32Array(rows * this.cap);
    this.lens = new Int32Array(rows);
  }

  /** Starts the next row. */
  row(): void {
    if (++this.r >= this.rows) throw new RangeError(`RowPacker: more than ${this.rows} rows`);
  }

  token(id: number): void {
    const n = this.lens[this.r];
    if (n < this.cap) {
      this.ids[this.r * this.cap + n] = id;
      this.lens[this.r] = n + 1;
    }
  }

  /** The word ids of a text (its first `maxTokens` words), as textIds gives them. */
  text(text: string, vocabSize: number, maxTokens: number): void {
    const n = this.lens[this.r];
    this.lens[this.r] = n + writeTextIds(text, vocabSize, Math.min(maxTokens, this.cap - n), this.ids, this.r * this.cap + n);
  }

  /** The batch: rows padded to the next power of two of the longest (at least 1), at most maxLen. */
  finish(): TokenBatch {
    const { rows, cap, lens } = this;
    let longest = 0;
    for (let r = 0; r < rows; r++) longest = Math.max(longest, lens[r]);
    const len = Math.min(this.maxLen, nextPow2(Math.max(1, longest)));
    const mask = new Float32Array(rows * len);
    for (let r = 0; r < rows; r++) mask.fill(1, r * len, r * len + Math.min(len, lens[r]));
    if (len === cap) return { ids: this.ids, mask, batch: rows, len };
    const ids = new Int32Array(rows * len);
    const n = Math.min(len, cap);
    for (let r = 0; r < rows; r++) ids.set(this.ids.subarray(r * cap, r * cap + n), r * len);
    return { ids, mask, batch: rows, len };
  }
}
