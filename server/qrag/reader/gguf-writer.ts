/**
 * A GGUF v3 file writer: header, metadata key/values, tensor infos, then the tensor data, each
 * aligned to `general.alignment` (32). Only what the tiny reader fixture needs: scalar, string and
 * array values, F32 tensors. Layout as llama.cpp's gguf.cpp reads it (little-endian throughout).
 */
import fs from "node:fs";

const ALIGN = 32;
const T = { u32: 4, i32: 5, f32: 6, bool: 7, str: 8, arr: 9 } as const;

export type GgufValue =
  | { u32: number } | { i32: number } | { f32: number } | { bool: boolean } | { str: string }
  | { strs: string[] } | { f32s: number[] } | { i32s: number[] };

export interface GgufTensor {
  name: string;
  /** ggml order: ne0 (the contiguous axis) first. */
  dims: number[];
  data: Float32Array;
}

class Out {
  private parts: Buffer[] = [];
  length = 0;
  push(b: Buffer): void { this.parts.push(b); this.length += b.length; }
  u32(v: number): void { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  i32(v: number): void { const b = Buffer.alloc(4); b.writeInt32LE(v); this.push(b); }
  u64(v: number): void { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  f32(v: number): void { const b = Buffer.alloc(4); b.writeFloatLE(v); this.push(b); }
  str(s: string): void { const b = Buffer.from(s, "utf8"); this.u64(b.length); this.push(b); }
  pad(): void { const n = (ALIGN - (this.length % ALIGN)) % ALIGN; if (n) this.push(Buffer.alloc(n)); }
  buffer(): Buffer { return Buffer.concat(this.parts); }
}

function writeValue(o: Out, v: GgufValue): void {
  if ("u32" in v) { o.u32(T.u32); o.u32(v.u32); }
  else if ("i32" in v) { o.u32(T.i32); o.i32(v.i32); }
  else if ("f32" in v) { o.u32(T.f32); o.f32(v.f32); }
  else if ("bool" in v) { o.u32(T.bool); o.push(Buffer.from([v.bool ? 1 : 0])); }
  else if ("str" in v) { o.u32(T.str); o.str(v.str); }
  else if ("strs" in v) { o.u32(T.arr); o.u32(T.str); o.u64(v.strs.length); for (const s of v.strs) o.str(s); }
  else if ("f32s" in v) { o.u32(T.arr); o.u32(T.f32); o.u64(v.f32s.length); for (const x of v.f32s) o.f32(x); }
  else { o.u32(T.arr); o.u32(T.i32); o.u64(v.i32s.length); for (const x of v.i32s) o.i32(x); }
}

export function encodeGguf(meta: [string, GgufValue][], tensors: GgufTensor[]): Buffer {
  const o = new Out();
  o.push(Buffer.from("GGUF", "ascii"));
  o.u32(3);
  o.u64(tensors.length);
  o.u64(meta.length);
  for (const [k, v] of meta) { o.str(k); writeValue(o, v); }
  let offset = 0;
  for (const t of tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new Error(`gguf tensor ${t.name}: dims hold ${n} values, data ${t.data.length}`);
    o.str(t.name);
    o.u32(t.dims.length);
    for (const d of t.dims) o.u64(d);
    o.u32(0); // GGML_TYPE_F32
    o.u64(offset);
    offset += Math.ceil((4 * n) / ALIGN) * ALIGN;
  }
  o.pad();
  for (const t of tensors) {
    o.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    o.pad();
  }
  return o.buffer();
}

export function writeGguf(file: string, meta: [string, GgufValue][], tensors: GgufTensor[]): number {
  const buf = encodeGguf(meta, tensors);
  fs.writeFileSync(file, buf);
  return buf.length;
}
