/**
 * Real bAbI v1.2 stories as the fact source of BabiLong (`envs.babi_dir`), the way the reference
 * builds it from `en-10k/{task}_{train|test}.txt` (docs/method.md §6.1): the train split reads the
 * task's `qaN_*_train.txt`, the test split its `qaN_*_test.txt`.
 *
 * Which file: the folder itself is searched first, then its `en-10k/` sub-folder (the reference's
 * choice), then `en/` (the official tarball's layouts: point `babi_dir` at `tasks_1-20_v1-2`).
 * The first of these that holds a `qaN_*_<split>.txt` wins; two such files in one folder are an
 * error (which one was meant is unclear). Every folder and file is resolved inside the data root.
 *
 * Stories → samples: one sample per question, whose facts are every statement of its story before
 * it (earlier questions dropped), as BabiLong's TaskDataset and Q-RAG do (questions.ts); sample i
 * is the file's i-th question, so the split's size is the number of questions and every sample is
 * the same on every run. The noise around the facts is mixed by babilong.ts, as for the simulator.
 */
import fs from "node:fs";
import path from "node:path";
import { DataFileError, InputError } from "../../errors.ts";
import { dataPathOrThrow, readFileInDataRoot, resolveDataPath } from "../../data-root.ts";
import type { Sample, SampleSource } from "../../types.ts";
import { parseBabiFile } from "./format.ts";
import { storyQuestions } from "./questions.ts";
import type { BabiQA } from "./types.ts";
import type { BabiTask } from "./vocab.ts";

const FIELD = "envs.babi_dir";
/** Searched in this order; "" is the folder itself. */
const LAYOUTS = ["", "en-10k", "en"] as const;

interface BabiFileOptions {
  /** The data root every path must lie in. */
  root: string;
  /** `envs.babi_dir` as configured (relative to the root, or absolute inside it). */
  dir: string;
  task: BabiTask;
  split: "train" | "test";
}

/** One question of the file with where it came from. */
interface FileQA extends BabiQA {
  story: number;
  line: number;
}

/**
 * The task's file for a split, relative to the root: `{ abs, rel }`. Throws an InputError
 * `envs.babi_dir: no qa3_*_train.txt in <folder>` when none of the layouts holds one.
 */
export function findBabiFile(o: BabiFileOptions): { abs: string; rel: string } {
  const base = dataPathOrThrow(o.root, FIELD, o.dir, "dir");
  const pattern = `${o.task}_*_${o.split}.txt`;
  const re = new RegExp(`^${o.task}_.+_${o.split}\\.txt$`);
  for (const sub of LAYOUTS) {
    const rel = sub === "" ? base.rel : path.posix.join(base.rel, sub);
    const d = sub === "" ? { ok: true as const, ...base } : resolveDataPath(o.root, rel, { kind: "dir" });
    if (!d.ok) {
      // a missing layout folder is simply not this layout; a link out of the root is refused
      if (d.reason === "not-found" || d.reason === "wrong-kind") continue;
      throw new InputError(`${FIELD}: ${d.message}`);
    }
    let names: string[];
    try {
      names = fs.readdirSync(d.abs).filter((n) => re.test(n)).sort();
    } catch {
      throw new InputError(`${FIELD}: cannot list ${rel}`);
    }
    if (names.length > 1) throw new InputError(`${FIELD}: several ${pattern} in ${rel} (${names.join(", ")}); keep one`);
    if (names.length === 1) return dataPathOrThrow(o.root, FIELD, path.posix.join(rel, names[0]), "file");
  }
  throw new InputError(`${FIELD}: no ${pattern} in ${base.rel} (nor in its en-10k/ or en/ folder)`);
}

/** Parsed files, keyed by real path and checked by size and mtime (replays ask for one sample at a time). */
const cache = new Map<string, { size: number; mtimeMs: number; qas: FileQA[] }>();
const CACHE_MAX = 8;

function readQuestions(file: { abs: string; rel: string }, root: string): FileQA[] {
  let st: fs.Stats;
  try {
    st = fs.statSync(file.abs);
  } catch (e) {
    throw new DataFileError(file.rel, undefined, `cannot read (${(e as NodeJS.ErrnoException).code ?? "error"})`);
  }
  const hit = cache.get(file.abs);
  if (hit && hit.size === st.size && hit.mtimeMs === st.mtimeMs) return hit.qas;
  const text = readFileInDataRoot(root, file.abs, file.rel).toString("utf8");
  const qas: FileQA[] = [];
  parseBabiFile(text, file.rel).forEach((story, s) => {
    const lines = story.lines.filter((l) => l.kind === "question");
    storyQuestions(story).forEach((qa, k) => qas.push({ ...qa, story: s, line: lines[k].line ?? 0 }));
  });
  if (qas.length === 0) throw new DataFileError(file.rel, undefined, "holds no questions");
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(file.abs, { size: st.size, mtimeMs: st.mtimeMs, qas });
  return qas;
}

/** The split's questions of the real bAbI file as fact samples (chunks = the story's facts before the question). */
export function babiFileSource(o: BabiFileOptions): SampleSource {
  const file = findBabiFile(o);
  const qas = readQuestions(file, o.root);
  return {
    name: `babi-${o.task}-${o.split}(${file.rel})`,
    size: qas.length,
    sample(i: number): Sample {
      if (!Number.isSafeInteger(i) || i < 0 || i >= qas.length) throw new RangeError(`bAbI file sample index ${i} out of range 0..${qas.length - 1}`);
      const qa = qas[i];
      return {
        id: `${o.task}-${o.split}-${i}`,
        question: qa.question,
        answer: qa.answer,
        chunks: qa.facts.slice(),
        supportIdx: qa.supportIdx.slice(),
        meta: { task: o.task, file: file.rel, line: qa.line },
      };
    },
  };
}
