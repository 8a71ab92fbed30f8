/**
 * Record readers for user-supplied data files, with line numbers for error messages.
 *
 * - `iterJsonArrayRecords`: one top-level JSON array (HotpotQA). The array is scanned byte by byte
 *   (strings and nesting tracked) so each element is parsed on its own: this works for files larger
 *   than V8's maximum string length (hotpot_train_v1.1.json is ~566 MB) and gives the line where each
 *   element starts. A file whose first character is `{` is read as JSONL instead.
 * - `iterJsonlRecords`: one JSON value per non-blank line (MuSiQue, RULER).
 * - `formatZodIssues`: `path[1][0]: expected string, received number` for DataFileError details.
 */
import fs from "node:fs";
import type { z } from "zod";
import { DataFileError } from "../errors.ts";
import { readFileInDataRoot, unreadable } from "../data-root.ts";
import type { Sample, SampleSource } from "../types.ts";
import { Rng } from "../util/rng.ts";

interface LocatedRecord {
  /** 0-based position of the record in the file. */
  index: number;
  /** 1-based line where the record starts. */
  line: number;
  value: unknown;
}

/**
 * Reads a data file as bytes, turning a missing/unreadable file into an error naming `shown`. With
 * the data `root`, the opened file is checked against it (data-root.ts `readFileInDataRoot`).
 */
export function readDataFile(file: string, shown = file, root?: string): Buffer {
  if (root !== undefined) return readFileInDataRoot(root, file, shown);
  try {
    return fs.readFileSync(file);
  } catch (e) {
    throw new DataFileError(shown, undefined, unreadable(e));
  }
}

const NL = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;

function bomLength(buf: Buffer): number {
  return buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
}

function isWs(b: number): boolean {
  return b === SPACE || b === NL || b === CR || b === TAB;
}

/**
 * Parses one record's text. A syntax error names the line (and column) only: V8's message quotes
 * the input ("Unexpected token 'r', \"root:x:0:0:\"... is not valid JSON"), and a data file's
 * contents must never reach a run error, a log row or the server log.
 */
function parseAt(text: string, file: string, startLine: number): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const pos = /at position (\d+)/.exec(msg);
    let line = startLine;
    let column: number | undefined;
    if (pos) {
      const p = Math.min(Number(pos[1]), text.length);
      let lineStart = 0;
      for (let i = 0; i < p; i++) {
        if (text.charCodeAt(i) === NL) {
          line++;
          lineStart = i + 1;
        }
      }
      column = p - lineStart + 1;
    }
    const what = /end of (JSON )?input|Unterminated/i.test(msg) ? "invalid JSON (unexpected end of the record)" : "invalid JSON";
    throw new DataFileError(file, line, column === undefined ? what : `${what} at column ${column}`);
  }
}

/** Yields the records of a JSONL buffer (blank lines skipped). */
export function* iterJsonlRecords(buf: Buffer, file: string, from = bomLength(buf), firstLine = 1): Generator<LocatedRecord> {
  let line = firstLine;
  let start = from;
  let index = 0;
  while (start < buf.length) {
    let end = buf.indexOf(NL, start);
    if (end < 0) end = buf.length;
    let stop = end;
    if (stop > start && buf[stop - 1] === CR) stop--;
    const text = buf.toString("utf8", start, stop);
    if (text.trim() !== "") yield { index: index++, line, value: parseAt(text, file, line) };
    line++;
    start = end + 1;
  }
}

/**
 * Yields the elements of a top-level JSON array, each with the line it starts on. If the file
 * starts with `{` it is taken as JSONL (one object per line) instead.
 */
export function* iterJsonArrayRecords(buf: Buffer, file: string): Generator<LocatedRecord> {
  const n = buf.length;
  let i = bomLength(buf);
  let line = 1;
  const skipWs = (): void => {
    while (i < n && isWs(buf[i])) {
      if (buf[i] === NL) line++;
      i++;
    }
  };
  skipWs();
  if (i >= n) throw new DataFileError(file, line, "file is empty (expected a JSON array)");
  if (buf[i] === LBRACE) {
    yield* iterJsonlRecords(buf, file, i, line);
    return;
  }
  if (buf[i] !== LBRACKET) throw new DataFileError(file, line, "expected a JSON array ('[') or JSON lines");
  i++;
  skipWs();
  if (i < n && buf[i] === RBRACKET) {
    i++;
    skipWs();
    if (i < n) throw new DataFileError(file, line, "unexpected content after the JSON array");
    return;
  }
  let index = 0;
  for (;;) {
    skipWs();
    if (i >= n) throw new DataFileError(file, line, "unexpected end of file inside the JSON array");
    if (buf[i] === COMMA || buf[i] === RBRACKET) {
      throw new DataFileError(file, line, `record ${index}: empty array element (stray or trailing comma)`);
    }
    const start = i;
    const startLine = line;
    let depth = 0;
    let inString = false;
    let end = -1;
    for (; i < n; i++) {
      const b = buf[i];
      if (b === NL) line++;
      if (inString) {
        if (b === BACKSLASH) {
          i++;
          if (i < n && buf[i] === NL) line++;
        } else if (b === QUOTE) inString = false;
        continue;
      }
      if (b === QUOTE) inString = true;
      else if (b === LBRACE || b === LBRACKET) depth++;
      else if (b === RBRACE || b === RBRACKET) {
        if (depth === 0) {
          end = i;
          break;
        }
        depth--;
      } else if (b === COMMA && depth === 0) {
        end = i;
        break;
      }
    }
    if (end < 0) throw new DataFileError(file, startLine, `record ${index}: unterminated (file truncated?)`);
    const closing = buf[end] === RBRACKET;
    if (!closing && buf[end] !== COMMA) {
      throw new DataFileError(file, line, `record ${index}: unbalanced '}'`);
    }
    const text = buf.toString("utf8", start, end);
    yield { index: index++, line: startLine, value: parseAt(text, file, startLine) };
    i = end + 1;
    if (closing) {
      skipWs();
      if (i < n) throw new DataFileError(file, line, "unexpected content after the JSON array");
      return;
    }
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out === "" ? String(p) : `.${String(p)}`;
  }
  return out;
}

/** Formats the first issues of a zod error as `field[1][0]: expected string, received number`. */
export function formatZodIssues(error: z.ZodError, prefix: readonly PropertyKey[] = [], max = 3): string {
  const parts = error.issues.slice(0, max).map((issue) => {
    const where = formatPath([...prefix, ...issue.path]);
    let msg = issue.message.replace(/^Invalid input: /, "");
    if (/received undefined$/.test(msg)) msg = `missing (${msg.replace(/, received undefined$/, "")})`;
    return where ? `${where}: ${msg}` : msg;
  });
  const more = error.issues.length > max ? ` (+${error.issues.length - max} more)` : "";
  return parts.join("; ") + more;
}

/** A SampleSource over a loaded list, optionally permuted by seed; shared by the file loaders. */
export function listSource(name: string, samples: Sample[], seed?: number): SampleSource {
  const order = samples.map((_, k) => k);
  if (seed !== undefined) new Rng(seed).fork("file-order").shuffle(order);
  return {
    name,
    size: samples.length,
    sample(index: number): Sample {
      if (!Number.isInteger(index) || index < 0 || index >= samples.length) {
        throw new RangeError(`${name}: sample index ${index} out of range 0..${samples.length - 1}`);
      }
      return samples[order[index]];
    },
  };
}

export interface FileSourceOptions {
  /** The file to open. */
  file: string;
  /** How errors name the file (relative to the data root); default `file`. */
  shown?: string;
  /** The data root the file must lie in once open (the engine always gives it). */
  root?: string;
  /** Source name; default `<dataset>:<file basename>`. */
  name?: string;
  /** If given, the samples are permuted once with this seed (Q-RAG permutes at load). */
  seed?: number;
}

export interface QaLoadResult {
  samples: Sample[];
  /** Records left out (no supporting fact / support paragraph), with the line they start on. */
  skipped: { line: number; id: string; reason: string }[];
}
