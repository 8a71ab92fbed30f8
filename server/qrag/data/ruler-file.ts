/**
 * Loader for real RULER NIAH files (`<save_dir>/<task>/<subset>.jsonl`, one
 * `{index, input, outputs, …}` object per line), converted to Samples exactly as generated ones
 * (`rulerInputToSample`: sentences, last = question, support = sentences containing an output).
 * RULER overwrites `index` with a character offset, so the sample id is `<file stem>-<record number>`
 * and `index` is kept in `meta.rulerIndex`. Other fields (`length`, `answer_prefix`, …) are ignored.
 */
import path from "node:path";
import { z } from "zod";
import { DataFileError, InputError } from "../errors.ts";
import type { Sample, SampleSource } from "../types.ts";
import { formatZodIssues, iterJsonlRecords, listSource, readDataFile, type FileSourceOptions } from "./json-records.ts";
import { rulerInputToSample } from "./niah/generate.ts";

const RulerRecordSchema = z.looseObject({
  index: z.number().int().optional(),
  input: z.string().min(1),
  outputs: z.array(z.string().min(1)).min(1),
});

/** Loads a RULER NIAH JSONL file (errors name `shown`, default `file`); a record none of whose outputs occurs in a chunk is an error. */
export function loadRulerFile(file: string, shown = file, root?: string): Sample[] {
  const buf = readDataFile(file, shown, root);
  const stem = path.basename(file).replace(/\.jsonl?$/, "");
  const samples: Sample[] = [];
  for (const { index, line, value } of iterJsonlRecords(buf, shown)) {
    const r = RulerRecordSchema.safeParse(value);
    if (!r.success) throw new DataFileError(shown, line, formatZodIssues(r.error));
    const meta: Record<string, string | number> = { source: "ruler-file", file: path.basename(file), line };
    if (r.data.index !== undefined) meta.rulerIndex = r.data.index;
    let sample: Sample;
    try {
      sample = rulerInputToSample(r.data.input, r.data.outputs, `${stem}-${index}`, meta);
    } catch (e) {
      if (e instanceof InputError) throw new DataFileError(shown, line, e.message);
      throw e;
    }
    if (sample.supportIdx.length === 0) {
      throw new DataFileError(shown, line, "no sentence of input contains any of outputs");
    }
    samples.push(sample);
  }
  if (samples.length === 0) throw new DataFileError(shown, undefined, "no records");
  return samples;
}

/** SampleSource over a RULER NIAH file (loaded eagerly); accepts a path or options. */
export function rulerFileSource(opts: string | FileSourceOptions): SampleSource {
  const o = typeof opts === "string" ? { file: opts } : opts;
  return listSource(o.name ?? `ruler:${path.basename(o.file)}`, loadRulerFile(o.file, o.shown, o.root), o.seed);
}
