/**
 * Reader and writer of the bAbI v1.2 text format (docs/data.md §1.1): `<id> <text>` per line, ids
 * restart at 1 per story, questions carry `\t<answer>\t<support ids>`. The reader validates
 * structure only (ids, tabs, support references); sentence meaning is checked later by the
 * resolver.
 */
import { DataFileError } from "../../errors.ts";
import type { BabiLine, BabiStory } from "./types.ts";
import type { BabiTask } from "./vocab.ts";

const ID_RE = /^(\d+) (.*)$/;

/**
 * Parses a bAbI file. Tolerates CRLF, blank and trailing lines, qa4's missing space before the tab,
 * and unsorted support ids (kept in file order: qa2/qa3 encode fact roles in that order).
 * Throws DataFileError("file:line: …") on malformed input; messages describe the problem and never
 * quote the file's text.
 */
export function parseBabiFile(text: string, file: string): BabiStory[] {
  const stories: BabiStory[] = [];
  let cur: BabiLine[] | undefined;
  const rows = text.split("\n");
  for (let i = 0; i < rows.length; i++) {
    const lineNo = i + 1;
    const raw = rows[i].replace(/\r$/, "");
    if (raw.trim() === "") continue;
    const err = (detail: string) => new DataFileError(file, lineNo, detail);
    const m = ID_RE.exec(raw);
    if (!m) throw err(`expected "<id> <text>" with a positive integer id`);
    const [, idStr, rest] = m;
    const id = Number(idStr);
    if (!Number.isSafeInteger(id) || id < 1) throw err(`bad line id ${id} (ids start at 1)`);

    if (id === 1) {
      cur = [];
      stories.push({ lines: cur });
    } else {
      if (!cur) throw err(`story starts with id ${id}; the first line of a story must have id 1`);
      const prev = cur[cur.length - 1].id;
      // Real files count up by exactly 1; anything else means a lost or reordered line.
      if (id !== prev + 1) throw err(`id ${id} after id ${prev}: ids must count up by 1 within a story (1 starts a new story)`);
    }
    const story = cur;

    if (!rest.includes("\t")) {
      const t = rest.trim();
      if (t === "") throw err(`empty statement for id ${id}`);
      if (t.endsWith("?")) throw err(`question line without answer and support ids (expected "question\\tanswer\\tids")`);
      story.push({ id, text: t, kind: "fact", line: lineNo });
      continue;
    }

    const parts = rest.split("\t");
    const q = parts[0].trim();
    const answer = (parts[1] ?? "").trim();
    const supStr = (parts[2] ?? "").trim();
    if (q === "") throw err(`empty question text for id ${id}`);
    if (answer === "") throw err(`question line without an answer (expected "question\\tanswer\\tids")`);
    if (supStr === "") throw err(`question line without supporting-fact ids (expected "question\\tanswer\\tids")`);
    if (parts.slice(3).some((p) => p.trim() !== "")) throw err(`unexpected extra tab-separated field after the support ids`);
    const support: number[] = [];
    for (const tok of supStr.split(/\s+/)) {
      if (!/^\d+$/.test(tok)) throw err(`bad support id (expected space-separated line numbers)`);
      const s = Number(tok);
      if (s >= id) throw err(`support id ${s} points to this or a later line (question id ${id})`);
      const target = story.find((l) => l.id === s);
      if (!target) throw err(`support id ${s} does not exist in this story`);
      if (target.kind !== "fact") throw err(`support id ${s} points to a question, not a statement`);
      support.push(s);
    }
    story.push({ id, text: q, kind: "question", answer, support, line: lineNo });
  }
  return stories;
}

/**
 * Writes stories in the v1.2 layout: statements `<id> <text>`, questions `<id> <q> \t<a>\t<ids>`
 * (qa4 without the space before the tab, as the real qa4 files). Line ids are written as stored.
 */
export function formatBabiStory(story: BabiStory, task: BabiTask): string {
  const sp = task === "qa4" ? "" : " ";
  const out: string[] = [];
  for (const l of story.lines) {
    if (l.kind === "fact") out.push(`${l.id} ${l.text}`);
    else out.push(`${l.id} ${l.text}${sp}\t${l.answer}\t${l.support.join(" ")}`);
  }
  return out.join("\n") + "\n";
}
