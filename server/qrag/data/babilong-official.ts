/**
 * The published BabiLong test sets (HF `RMT-team/babilong`, docs/data.md §2.1): rows of
 * `{input, question, target}`, one file per task and length, exported as a JSON array, JSON lines
 * or Parquet (read with hyparquet, a pure-JS reader; SNAPPY or uncompressed pages, what pyarrow and
 * the HF export write by default).
 *
 * Layout: the task comes from a `qa1`…`qa5` path segment (`qa1/4k.parquet`, `4k/qa1.jsonl`,
 * `qa2_4k.json`), else from each row's question form; the length comes from an optional string
 * column `length`, else from a `0k`/`1k`/…/`1M` path segment, else the file name labels the group.
 *
 * A row becomes a Sample the engine's greedy evaluation runs on:
 * - `input` is cut into chunks: a bAbI statement is recognised where the simulator's grammar
 *   (data/babi/sentences.ts, the task's statement kinds and cast) matches a whole sentence that
 *   starts the text, a line or follows a sentence end; the prose between facts is split with the
 *   engine's sentence splitter. Order is kept.
 * - the resolution rules (data/babi/resolve.ts) derive the answer and supporting facts of
 *   `question` from the facts found; `supportIdx` = their chunk positions, `answer` = `target`.
 * - a row whose facts do not resolve, or whose derived answer differs from `target` (a prose
 *   sentence that happens to read as a fact, a fact glued to cut-off prose), is reported with its
 *   row number and skipped. Reasons name the rule that failed, never the row's text.
 */
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { parquetMetadataAsync, parquetReadObjects, type AsyncBuffer } from "hyparquet";
import { openInDataRoot, unreadable } from "../data-root.ts";
import { DataFileError } from "../errors.ts";
import type { Sample } from "../types.ts";
import { splitSentences } from "./text/sentences.ts";
import { formatZodIssues, iterJsonArrayRecords, readDataFile } from "./json-records.ts";
import { BabiResolveError, resolveQuestion, TASK_FACT_KINDS } from "./babi/resolve.ts";
import { BabiSentenceError, parseFact, parseQuery } from "./babi/sentences.ts";
import { DROP_VERBS, GET_VERBS, GIVE_VERBS, MOVE_VERBS } from "./babi/templates.ts";
import type { BabiFact, BabiQueryKind } from "./babi/types.ts";
import { ALL_ACTORS, BABI_TASKS, DIRECTIONS, LOCATIONS, OBJECTS, TASK_ACTORS, type BabiTask } from "./babi/vocab.ts";

/** One row as read from the file (1-based `row`; `line` where a JSON record starts). */
export interface OfficialRow {
  row: number;
  line?: number;
  input: string;
  question: string;
  target: string;
  length?: string;
}

/** A row that could not become a sample, with why (no text of the row). */
export interface SkippedRow {
  file: string;
  row: number;
  length: string;
  reason: string;
}

/** A sample of an official file; `meta` carries task, length, file and row. */
export interface OfficialSample extends Sample {
  task: BabiTask;
  length: string;
  file: string;
  row: number;
  /** Chunk positions of every recognised bAbI statement, in order. */
  factIdx: number[];
}

export interface OfficialLoad {
  samples: OfficialSample[];
  skipped: SkippedRow[];
  rows: number;
}

const RowSchema = z.object({
  input: z.string(),
  question: z.string(),
  target: z.string(),
  length: z.string().optional(),
});

const COLUMNS = ["input", "question", "target"] as const;

/** Checks one raw row; throws DataFileError naming file, row and field (never the value). */
function checkRow(raw: unknown, shown: string, row: number, line?: number): OfficialRow {
  const r = RowSchema.safeParse(raw);
  if (!r.success) throw new DataFileError(shown, line, `row ${row}: ${formatZodIssues(r.error)}`);
  for (const f of COLUMNS) {
    if (r.data[f].trim() === "") throw new DataFileError(shown, line, `row ${row}: ${f}: empty`);
  }
  return { row, line, ...r.data };
}

/** Reads the rows of a .json (array or lines), .jsonl or .parquet file. */
export async function readOfficialRows(file: string, shown = file, root?: string): Promise<OfficialRow[]> {
  const ext = path.extname(file).toLowerCase();
  if (ext === ".parquet") return readParquetRows(file, shown, root);
  if (ext !== ".json" && ext !== ".jsonl") throw new DataFileError(shown, undefined, `unsupported file type "${ext}" (expected .json, .jsonl or .parquet)`);
  const buf = readDataFile(file, shown, root);
  const out: OfficialRow[] = [];
  for (const rec of iterJsonArrayRecords(buf, shown)) out.push(checkRow(rec.value, shown, rec.index + 1, rec.line));
  if (out.length === 0) throw new DataFileError(shown, undefined, "no rows");
  return out;
}

/** Codecs hyparquet decodes without extra packages. */
const PLAIN_CODECS = new Set(["UNCOMPRESSED", "SNAPPY"]);

async function readParquetRows(file: string, shown: string, root?: string): Promise<OfficialRow[]> {
  // opened once, through the data-root check when there is a root; read by ranges, as hyparquet wants
  const fd = root !== undefined ? openInDataRoot(root, file, shown) : openPlain(file, shown);
  let rows: Record<string, unknown>[];
  try {
    const buf = fdAsyncBuffer(fd);
    const meta = await parquetMetadataAsync(buf);
    const names = new Set(meta.schema.slice(1).map((s) => s.name));
    for (const c of COLUMNS) if (!names.has(c)) throw new DataFileError(shown, undefined, `column "${c}" missing (expected input, question, target)`);
    for (const g of meta.row_groups) {
      for (const c of g.columns) {
        const codec = c.meta_data?.codec;
        if (codec !== undefined && !PLAIN_CODECS.has(codec)) {
          throw new DataFileError(shown, undefined, `column "${c.meta_data?.path_in_schema.join(".")}" is ${codec}-compressed; only SNAPPY or uncompressed Parquet is read (re-export with pyarrow's default compression)`);
        }
      }
    }
    const columns = [...COLUMNS, ...(names.has("length") ? ["length"] : [])];
    rows = await parquetReadObjects({ file: buf, metadata: meta, columns });
  } catch (e) {
    if (e instanceof DataFileError) throw e;
    // the reader's own words are about structure, but keep them out anyway: say what failed
    throw new DataFileError(shown, undefined, "not a readable Parquet file");
  } finally {
    fs.closeSync(fd);
  }
  if (rows.length === 0) throw new DataFileError(shown, undefined, "no rows");
  return rows.map((r, i) => checkRow({ ...r, length: r.length ?? undefined }, shown, i + 1));
}

function openPlain(file: string, shown: string): number {
  try {
    return fs.openSync(file, "r");
  } catch (e) {
    throw new DataFileError(shown, undefined, unreadable(e));
  }
}

/** hyparquet's AsyncBuffer over an open descriptor: ranges read on demand, never the whole file. */
function fdAsyncBuffer(fd: number): AsyncBuffer {
  const size = fs.fstatSync(fd).size;
  return {
    byteLength: size,
    slice(start: number, end = size) {
      const b = Buffer.alloc(Math.max(0, end - start));
      for (let got = 0; got < b.length; ) {
        const n = fs.readSync(fd, b, got, b.length - got, start + got);
        if (n === 0) break; // the file shrank: hyparquet reports what it then lacks
        got += n;
      }
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Task and length from the path

/** `qa3` from a path segment such as `qa3`, `qa3_three-supporting-facts`, `qa3-0000.parquet`. */
export function taskFromPath(file: string): BabiTask | undefined {
  const segs = file.split(/[\\/]/).reverse();
  for (const s of segs) {
    const m = /(?:^|[^a-z0-9])qa(\d+)(?![0-9])/i.exec(s);
    if (!m) continue;
    const t = `qa${Number(m[1])}`;
    if (!(BABI_TASKS as readonly string[]).includes(t)) throw new DataFileError(file, undefined, `${t} is not supported (bAbI qa1–qa5 only)`);
    return t as BabiTask;
  }
  return undefined;
}

/** `4k` from a segment such as `4k`, `4k.parquet`, `qa1_4k.json`; lengths as BabiLong names them. */
export function lengthFromPath(file: string): string | undefined {
  for (const s of file.split(/[\\/]/).reverse()) {
    const m = /(?:^|[^a-z0-9])(\d+(?:\.\d+)?[kKmM])(?![a-z0-9])/.exec(s.replace(/\.(json|jsonl|parquet)$/i, ""));
    if (m) return m[1].replace(/m$/, "M").replace(/K$/, "k");
  }
  return undefined;
}

/** Tokens a length label stands for ("4k" → 4000, "1M" → 1,000,000; BabiLong's 1k is 1000). */
export function lengthTokens(label: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([kKmM])$/.exec(label);
  if (!m) return undefined;
  return Number(m[1]) * (m[2].toLowerCase() === "k" ? 1000 : 1_000_000);
}

const QUERY_TASK: Record<BabiQueryKind, BabiTask> = {
  whereActor: "qa1",
  whereObject: "qa2",
  whereWas: "qa3",
  dirOf: "qa4",
  isDirOf: "qa4",
  gave: "qa5",
};

// ---------------------------------------------------------------------------------------------
// Finding the facts among the prose

const alt = (xs: readonly string[]) => `(?:${[...xs].sort((a, b) => b.length - a.length).join("|")})`;
const A = alt(ALL_ACTORS);
const L = alt(LOCATIONS);
const O = alt(OBJECTS);
/** Every statement the grammar reads (each hit is confirmed by parseFact, the grammar's owner). */
const FACT_BODY = [
  `${A} ${alt(MOVE_VERBS)} to the ${L}`,
  `${A} ${alt([...GET_VERBS, ...DROP_VERBS])} the ${O}(?: there)?`,
  `${A} ${alt(GIVE_VERBS)} the ${O} to ${A}`,
  `The ${L} is ${alt(DIRECTIONS)} of the ${L}`,
].join("|");
/** A fact sentence: at the text's or a line's start, or after a sentence end; ends the sentence. */
const FACT_SCAN = new RegExp(`(?<=^|\\n[ \\t]*|[.?!]["')\\]\\u201d\\u2019]*\\s+)(?:${FACT_BODY})\\.(?=\\s|$)`, "g");

/** The statement `text` reads as in `task` (its statement kinds and cast), or null. */
export function taskFact(task: BabiTask, text: string): BabiFact | null {
  let f: BabiFact;
  try {
    f = parseFact(text);
  } catch (e) {
    if (e instanceof BabiSentenceError) return null;
    throw e;
  }
  if (!TASK_FACT_KINDS[task].includes(f.kind)) return null;
  const cast = TASK_ACTORS[task];
  if ("actor" in f && !cast.includes(f.actor)) return null;
  if (f.kind === "give" && !cast.includes(f.to)) return null;
  return f;
}

/** `input` as chunks (sentences in order) and the chunk positions of the task's facts. */
export function splitOfficialInput(task: BabiTask, input: string): { chunks: string[]; factIdx: number[] } {
  const chunks: string[] = [];
  const factIdx: number[] = [];
  let from = 0;
  for (const m of input.matchAll(FACT_SCAN)) {
    const at = m.index ?? 0;
    if (!taskFact(task, m[0])) continue; // another task's statement or cast: prose here
    chunks.push(...splitSentences(input.slice(from, at)));
    factIdx.push(chunks.length);
    chunks.push(m[0]);
    from = at + m[0].length;
  }
  chunks.push(...splitSentences(input.slice(from)));
  return { chunks, factIdx };
}

/** bAbI answer normalisation: case, surrounding space, a final period, a leading "the ". */
export function normaliseAnswer(s: string): string {
  return s.trim().toLowerCase().replace(/\.$/, "").replace(/^the\s+/, "").trim();
}

/** A row's length label: its `length` column, else the path's, else the file name. */
function rowLength(row: OfficialRow, file: string, pathLength: string | undefined): string {
  return row.length ?? pathLength ?? path.basename(file);
}

/** Turns one row into a sample, or says why it cannot be one. */
export function officialSample(row: OfficialRow, file: string, pathTask: BabiTask | undefined, pathLength: string | undefined): OfficialSample | { skip: string } {
  let kind: BabiQueryKind;
  try {
    kind = parseQuery(row.question).kind;
  } catch (e) {
    if (e instanceof BabiSentenceError) return { skip: "question: not a bAbI qa1–qa5 question form" };
    throw e;
  }
  const task = pathTask ?? QUERY_TASK[kind];
  if (QUERY_TASK[kind] !== task) return { skip: `question: a ${QUERY_TASK[kind]} question form in a ${task} file` };
  const { chunks, factIdx } = splitOfficialInput(task, row.input);
  if (factIdx.length === 0) return { skip: `input: no ${task} fact sentence found` };
  let answer: string;
  let support: number[];
  try {
    ({ answer, support } = resolveQuestion(task, factIdx.map((i) => chunks[i]), row.question));
  } catch (e) {
    if (e instanceof BabiResolveError) return { skip: `the ${factIdx.length} facts found do not answer the question under the ${task} rules` };
    // readFacts reports a statement that contradicts the story so far (quoting it: not shown here)
    if (e instanceof BabiSentenceError) return { skip: `input: the ${factIdx.length} facts found contradict each other under the ${task} rules` };
    throw e;
  }
  if (normaliseAnswer(answer) !== normaliseAnswer(row.target)) return { skip: `target: the ${task} rules derive a different answer from the ${factIdx.length} facts found` };
  const length = rowLength(row, file, pathLength);
  const supportIdx = [...new Set(support.map((j) => factIdx[j]))].sort((a, b) => a - b);
  return {
    id: `${file}#${row.row}`,
    question: row.question.trim(),
    answer: row.target.trim(),
    chunks,
    supportIdx,
    task,
    length,
    file,
    row: row.row,
    factIdx,
    meta: { task, length, file, row: row.row },
  };
}

/** Loads one official file: `file` is opened, `shown` (relative to the data root) names it in errors and ids. */
export async function loadOfficialFile(file: string, shown = file, root?: string): Promise<OfficialLoad> {
  const pathTask = taskFromPath(shown);
  const pathLength = lengthFromPath(shown);
  const rows = await readOfficialRows(file, shown, root);
  const samples: OfficialSample[] = [];
  const skipped: SkippedRow[] = [];
  for (const row of rows) {
    const s = officialSample(row, shown, pathTask, pathLength);
    if ("skip" in s) skipped.push({ file: shown, row: row.row, length: rowLength(row, shown, pathLength), reason: s.skip });
    else samples.push(s);
  }
  return { samples, skipped, rows: rows.length };
}

// ---------------------------------------------------------------------------------------------
// Rule-based reader

/** What the reader metric is called wherever it is shown: it is not an LLM. */
export const READER_NAME = "rule-based reader accuracy (retrieved facts only)";

/**
 * Answers `question` from the retrieved chunks alone: the chunks are put back in document order
 * (`index`), the ones that read as `task` statements are kept, and the bAbI rules are applied to
 * them. "unknown" when those facts do not answer the question. This measures whether the
 * retrieved set carries the answer under the task's rules, not how a language model would read it.
 */
export function ruleBasedReader(task: BabiTask, question: string, retrieved: readonly { index: number; text: string }[]): string {
  const facts = [...retrieved]
    .sort((a, b) => a.index - b.index)
    .map((c) => c.text.trim())
    .filter((t) => taskFact(task, t) !== null);
  try {
    return resolveQuestion(task, facts, question, { partial: true }).answer;
  } catch (e) {
    if (e instanceof BabiResolveError || e instanceof BabiSentenceError) return "unknown";
    throw e;
  }
}

/** The reader's answer compared with the row's target, after bAbI answer normalisation. */
export function readerCorrect(answer: string, target: string): boolean {
  return answer !== "unknown" && normaliseAnswer(answer) === normaliseAnswer(target);
}
