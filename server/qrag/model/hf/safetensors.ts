/**
 * A reader for the safetensors format (what Hugging Face folders ship as `model.safetensors`):
 * 8 bytes little-endian u64 header length N, N bytes of JSON header
 * `{ name: { dtype, shape, data_offsets: [begin, end] }, "__metadata__"?: {...} }`, then the raw
 * little-endian tensor bytes, offsets relative to the end of the header. F32 is read as is; F16,
 * BF16 and F64 are converted to float32. Errors name the file and the tensor, never the data.
 */
import type { ReadFile } from "../../data-root.ts";

export type SafetensorsDtype = "F32" | "F16" | "BF16" | "F64";

export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
  /** Byte range [begin, end) relative to the start of the data section. */
  offsets: [number, number];
}

const BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2, F64: 8 };
/** A header bigger than this is not a real model's (guards against reading a random file as one). */
const MAX_HEADER = 100 * 1024 * 1024;

export class SafetensorsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SafetensorsError";
  }
}

/** An opened safetensors file: its tensor table, and float32 values per tensor on demand. */
export class SafetensorsFile {
  readonly tensors: ReadonlyMap<string, SafetensorsEntry>;
  readonly metadata: Record<string, string>;
  private readonly data: Buffer;

  /** `label` names the file in errors (a path relative to the data root, say). */
  constructor(
    buf: Buffer,
    readonly label: string,
  ) {
    const fail = (m: string): never => {
      throw new SafetensorsError(`${label}: ${m}`);
    };
    if (buf.length < 8) fail(`not a safetensors file (${buf.length} bytes, shorter than the 8-byte header length)`);
    const n = buf.readBigUInt64LE(0);
    if (n > BigInt(MAX_HEADER)) fail(`not a safetensors file (header length ${n} bytes)`);
    const hlen = Number(n);
    if (8 + hlen > buf.length) fail(`truncated: header of ${hlen} bytes but the file has ${buf.length} bytes`);
    let header: unknown;
    try {
      header = JSON.parse(buf.subarray(8, 8 + hlen).toString("utf8"));
    } catch {
      fail("header is not valid JSON");
    }
    if (typeof header !== "object" || header === null || Array.isArray(header)) fail("header is not a JSON object");
    this.data = buf.subarray(8 + hlen);
    const tensors = new Map<string, SafetensorsEntry>();
    let meta: Record<string, string> = {};
    for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
      if (name === "__metadata__") {
        meta = (raw ?? {}) as Record<string, string>;
        continue;
      }
      const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      const bad = (m: string): never => fail(`tensor "${name}": ${m}`);
      if (typeof e !== "object" || e === null) bad("entry is not an object");
      if (typeof e.dtype !== "string") bad("no dtype");
      if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0)) bad("shape is not a list of sizes");
      const off = e.data_offsets;
      if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isInteger(d) && d >= 0) || off[1] < off[0]) {
        bad("data_offsets is not [begin, end]");
      }
      const [b, end] = off as [number, number];
      const shape = e.shape as number[];
      const size = shape.reduce((a, d) => a * d, 1);
      const w = BYTES[e.dtype as SafetensorsDtype];
      if (w !== undefined && end - b !== size * w) bad(`${end - b} bytes for shape [${shape}] of ${e.dtype}`);
      if (end > this.data.length) {
        bad(`truncated: data ends at byte ${end} but the file holds ${this.data.length} bytes of data`);
      }
      tensors.set(name, { dtype: e.dtype as string, shape: [...shape], offsets: [b, end] });
    }
    this.tensors = tensors;
    this.metadata = meta;
  }

  static open(file: string, label: string, read: ReadFile): SafetensorsFile {
    return new SafetensorsFile(read(file, label), label);
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** The tensor's values as float32 (a copy), with its shape. */
  read(name: string): { shape: number[]; data: Float32Array } {
    const e = this.tensors.get(name);
    if (!e) throw new SafetensorsError(`${this.label}: no tensor "${name}"`);
    const [b, end] = e.offsets;
    const bytes = this.data.subarray(b, end);
    const n = e.shape.reduce((a, d) => a * d, 1);
    const out = new Float32Array(n);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    switch (e.dtype) {
      case "F32":
        for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
        break;
      case "F64":
        for (let i = 0; i < n; i++) out[i] = dv.getFloat64(i * 8, true);
        break;
      case "F16":
        for (let i = 0; i < n; i++) out[i] = halfToFloat(dv.getUint16(i * 2, true));
        break;
      case "BF16": {
        const u = new Uint32Array(out.buffer);
        for (let i = 0; i < n; i++) u[i] = dv.getUint16(i * 2, true) << 16;
        break;
      }
      default:
        throw new SafetensorsError(`${this.label}: tensor "${name}" has a dtype this reader does not take (supported: F32, F16, BF16, F64)`);
    }
    return { shape: [...e.shape], data: out };
  }
}

/** IEEE 754 binary16 → number. */
function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}
