/**
 * HotpotQA (distractor setting) loader for files the user supplies, e.g. `hotpot_train_v1.1.json`
 * and `hotpot_dev_distractor_v1.json`: one JSON array of records (JSON lines are accepted too).
 *
 * Both layouts are accepted, field by field:
 * - original: `supporting_facts: [title, sent_id][]`, `context: [title, sentences[]][]`, `_id`;
 * - HF `hotpot_qa`: `supporting_facts: {title[], sent_id[]}`, `context: {title[], sentences[][]}`, `id`.
 *
 * Q-RAG's conversion (`envs/qa_dataset_adapter.py`): one chunk per paragraph,
 * `title + " " + sentences.join(" ")` (the sentences after the first usually begin with a space, so
 * this leaves double spaces, as upstream does); supportIdx = the paragraphs whose title appears in
 * `supporting_facts`. A supporting title that is not among the paragraphs is an error.
 */
import path from "node:path";
import { z } from "zod";
import { DataFileError } from "../errors.ts";
import type { Sample, SampleSource } from "../types.ts";
import { formatZodIssues, iterJsonArrayRecords, listSource, readDataFile, type FileSourceOptions, type QaLoadResult } from "./json-records.ts";

const SentId = z.number().int().nonnegative();

const SupportTuple = z.array(z.tuple([z.string(), SentId]));
const SupportColumnar = z
  .object({ title: z.array(z.string()), sent_id: z.array(SentId) })
  .refine((v) => v.title.length === v.sent_id.length, { message: "title and sent_id have different lengths", path: ["sent_id"] });

const ContextTuple = z.array(z.tuple([z.string(), z.array(z.string())])).min(1, "no paragraphs");
const ContextColumnar = z
  .object({ title: z.array(z.string()).min(1, "no paragraphs"), sentences: z.array(z.array(z.string())) })
  .refine((v) => v.title.length === v.sentences.length, { message: "title and sentences have different lengths", path: ["sentences"] });

const Base = z.object({
  _id: z.string().min(1).optional(),
  id: z.string().min(1).optional(),
  question: z.string(),
  answer: z.string(),
  type: z.string().optional(),
  level: z.string().optional(),
});

type Layout = "tuple" | "columnar";
function recordSchema(sf: Layout, ctx: Layout) {
  return Base.extend({
    supporting_facts: sf === "tuple" ? SupportTuple : SupportColumnar,
    context: ctx === "tuple" ? ContextTuple : ContextColumnar,
  });
}
const SCHEMAS = {
  "tuple/tuple": recordSchema("tuple", "tuple"),
  "tuple/columnar": recordSchema("tuple", "columnar"),
  "columnar/tuple": recordSchema("columnar", "tuple"),
  "columnar/columnar": recordSchema("columnar", "columnar"),
};

/** One record in a layout-independent form. */
interface HotpotRecord {
  id: string;
  question: string;
  answer: string;
  type?: string;
  level?: string;
  supportingFacts: { title: string; sentId: number }[];
  paragraphs: { title: string; sentences: string[] }[];
}

/** Validates one raw record (either layout) and normalises it; throws DataFileError at `line`. */
function parseHotpotRecord(raw: unknown, file: string, line: number): HotpotRecord {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new DataFileError(file, line, `expected a record object, got ${Array.isArray(raw) ? "array" : raw === null ? "null" : typeof raw}`);
  }
  const obj = raw as Record<string, unknown>;
  const layout = (v: unknown): Layout => (Array.isArray(v) ? "tuple" : "columnar");
  const schema = SCHEMAS[`${layout(obj.supporting_facts)}/${layout(obj.context)}`];
  const r = schema.safeParse(raw);
  // field paths and zod's words only: nothing the file holds (not even the record's id) is quoted
  if (!r.success) throw new DataFileError(file, line, formatZodIssues(r.error));
  const v = r.data;
  const id = v._id ?? v.id;
  if (id === undefined) throw new DataFileError(file, line, "_id: missing (expected string; `id` is accepted too)");
  const sf = v.supporting_facts;
  const supportingFacts = Array.isArray(sf)
    ? sf.map(([title, sentId]) => ({ title, sentId }))
    : sf.title.map((title, k) => ({ title, sentId: sf.sent_id[k] }));
  const ctx = v.context;
  const paragraphs = Array.isArray(ctx)
    ? ctx.map(([title, sentences]) => ({ title, sentences }))
    : ctx.title.map((title, k) => ({ title, sentences: ctx.sentences[k] }));
  return { id, question: v.question, answer: v.answer, type: v.type, level: v.level, supportingFacts, paragraphs };
}

/** Q-RAG's chunking and support rule; throws if a supporting title is not a paragraph title. */
function hotpotRecordToSample(rec: HotpotRecord, file: string, line: number): Sample {
  const chunks = rec.paragraphs.map((p) => `${p.title} ${p.sentences.join(" ")}`);
  const titles = new Set(rec.paragraphs.map((p) => p.title));
  const supportTitles = new Set<string>();
  for (const f of rec.supportingFacts) {
    if (!titles.has(f.title)) {
      throw new DataFileError(file, line, "a supporting_facts title is not among the context paragraphs");
    }
    supportTitles.add(f.title);
  }
  const supportIdx: number[] = [];
  rec.paragraphs.forEach((p, k) => {
    if (supportTitles.has(p.title)) supportIdx.push(k);
  });
  const meta: Record<string, string | number> = { source: "hotpotqa", file: path.basename(file), line };
  if (rec.type !== undefined) meta.type = rec.type;
  if (rec.level !== undefined) meta.level = rec.level;
  return { id: rec.id, question: rec.question, answer: rec.answer, chunks, supportIdx, meta };
}

/** Loads every record of a HotpotQA file (errors name `shown`, default `file`). Records with an empty `supporting_facts` are skipped. */
export function loadHotpotqa(file: string, shown = file, root?: string): QaLoadResult {
  const buf = readDataFile(file, shown, root);
  const samples: Sample[] = [];
  const skipped: QaLoadResult["skipped"] = [];
  for (const { line, value } of iterJsonArrayRecords(buf, shown)) {
    const rec = parseHotpotRecord(value, shown, line);
    if (rec.supportingFacts.length === 0) {
      skipped.push({ line, id: rec.id, reason: "no supporting_facts" });
      continue;
    }
    samples.push(hotpotRecordToSample(rec, shown, line));
  }
  if (samples.length === 0) throw new DataFileError(shown, undefined, "no usable HotpotQA records");
  return { samples, skipped };
}

/** SampleSource over a HotpotQA file (loaded eagerly). */
export function hotpotqaSource(opts: FileSourceOptions): SampleSource & { skipped: QaLoadResult["skipped"] } {
  const { samples, skipped } = loadHotpotqa(opts.file, opts.shown, opts.root);
  return { ...listSource(opts.name ?? `hotpotqa:${path.basename(opts.file)}`, samples, opts.seed), skipped };
}
