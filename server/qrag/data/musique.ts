/**
 * MuSiQue loader for files the user supplies (`musique_ans_v1.0_{train,dev}.jsonl`, or the -full
 * files): JSON lines, one question per line.
 *
 * Q-RAG's conversion (`envs/qa_dataset_adapter.py`): one chunk per paragraph,
 * `title + ". " + paragraph_text`; the support paragraphs are
 * `question_decomposition[].paragraph_support_idx` in hop order (not `is_supporting`), with `null`
 * entries skipped. `supportIdx` is that list sorted and de-duplicated; the hop order is kept in
 * `meta.supportHops` ("3,1"). A record none of whose hops names a paragraph is skipped and reported.
 */
import path from "node:path";
import { z } from "zod";
import { DataFileError } from "../errors.ts";
import type { Sample, SampleSource } from "../types.ts";
import { formatZodIssues, iterJsonlRecords, listSource, readDataFile, type FileSourceOptions, type QaLoadResult } from "./json-records.ts";

const Paragraph = z.object({
  idx: z.number().int().optional(),
  title: z.string(),
  paragraph_text: z.string(),
  is_supporting: z.boolean().optional(),
});

const Hop = z.object({
  id: z.number().int().optional(),
  question: z.string().optional(),
  answer: z.string().optional(),
  paragraph_support_idx: z.number().int().nonnegative().nullable(),
});

const MusiqueRecordSchema = z.object({
  id: z.string().min(1),
  question: z.string(),
  answer: z.string(),
  answer_aliases: z.array(z.string()).optional(),
  answerable: z.boolean().optional(),
  paragraphs: z.array(Paragraph).min(1, "no paragraphs"),
  question_decomposition: z.array(Hop),
});

type MusiqueRecord = z.infer<typeof MusiqueRecordSchema>;

/** Validates one raw record; throws DataFileError at `line` naming the field. */
function parseMusiqueRecord(raw: unknown, file: string, line: number): MusiqueRecord {
  const r = MusiqueRecordSchema.safeParse(raw);
  if (!r.success) {
    // field paths and zod's words only: nothing the file holds (not even the record's id) is quoted
    throw new DataFileError(file, line, formatZodIssues(r.error));
  }
  const rec = r.data;
  rec.question_decomposition.forEach((h, k) => {
    const p = h.paragraph_support_idx;
    if (p !== null && p >= rec.paragraphs.length) {
      throw new DataFileError(
        file,
        line,
        `question_decomposition[${k}].paragraph_support_idx: out of range (${rec.paragraphs.length} paragraphs)`,
      );
    }
  });
  return rec;
}

/** Support paragraphs in hop order (nulls skipped, duplicates kept). */
function musiqueSupportHops(rec: MusiqueRecord): number[] {
  const hops: number[] = [];
  for (const h of rec.question_decomposition) if (h.paragraph_support_idx !== null) hops.push(h.paragraph_support_idx);
  return hops;
}

/** Q-RAG's chunking and support rule. */
function musiqueRecordToSample(rec: MusiqueRecord, file: string, line: number): Sample {
  const chunks = rec.paragraphs.map((p) => `${p.title}. ${p.paragraph_text}`);
  const hops = musiqueSupportHops(rec);
  const supportIdx = [...new Set(hops)].sort((a, b) => a - b);
  const meta: Record<string, string | number> = {
    source: "musique",
    file: path.basename(file),
    line,
    hops: rec.question_decomposition.length,
    supportHops: hops.join(","),
  };
  if (rec.answerable !== undefined) meta.answerable = String(rec.answerable);
  return { id: rec.id, question: rec.question, answer: rec.answer, chunks, supportIdx, meta };
}

/** Loads every record of a MuSiQue JSONL file; errors name `shown` (default `file`) and a line. */
export function loadMusique(file: string, shown = file, root?: string): QaLoadResult {
  const buf = readDataFile(file, shown, root);
  const samples: Sample[] = [];
  const skipped: QaLoadResult["skipped"] = [];
  for (const { line, value } of iterJsonlRecords(buf, shown)) {
    const rec = parseMusiqueRecord(value, shown, line);
    const sample = musiqueRecordToSample(rec, file, line);
    if (sample.supportIdx.length === 0) {
      skipped.push({ line, id: rec.id, reason: "no question_decomposition hop has a paragraph_support_idx" });
      continue;
    }
    samples.push(sample);
  }
  if (samples.length === 0) throw new DataFileError(shown, undefined, "no usable MuSiQue records");
  return { samples, skipped };
}

/** SampleSource over a MuSiQue file (loaded eagerly). */
export function musiqueSource(opts: FileSourceOptions): SampleSource & { skipped: QaLoadResult["skipped"] } {
  const { samples, skipped } = loadMusique(opts.file, opts.shown, opts.root);
  return { ...listSource(opts.name ?? `musique:${path.basename(opts.file)}`, samples, opts.seed), skipped };
}
