/**
 * Oracle check of real bAbI files: every question is re-derived from its story's statements with
 * resolveQuestion (the file's answer is never used as input) and compared with the file — answer
 * exactly, support as a set. Agreement on real v1.2 files is the evidence that the generator's
 * rules are the real data's rules.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { DataFileError } from "../../errors.ts";
import { parseBabiFile } from "./format.ts";
import { readFacts, readQuery, resolveQuestion } from "./resolve.ts";
import { parseQuery } from "./sentences.ts";
import type { BabiQuery, BabiStory } from "./types.ts";
import { BABI_TASKS, type BabiTask } from "./vocab.ts";

interface BabiCheckResult {
  /** One line per disagreement: `file:line: expected <key>-><answer> {ids}, derived <answer> {ids}`. */
  lines: string[];
  agree: number;
  total: number;
}

/** Task from a file name such as `qa2_two-supporting-facts_test.txt`; undefined when absent. */
export function taskFromFileName(path: string): BabiTask | undefined {
  const m = /(?:^|[^a-z0-9])qa(\d+)(?![0-9])/i.exec(basename(path));
  if (!m) return undefined;
  const t = `qa${Number(m[1])}`;
  if (!(BABI_TASKS as readonly string[]).includes(t)) {
    throw new DataFileError(path, undefined, `${t} is not supported (bAbI qa1–qa5 only)`);
  }
  return t as BabiTask;
}

/** Task whose grammar reads every statement and question of the stories, for unnamed files. */
function detectTask(stories: BabiStory[]): BabiTask | undefined {
  return BABI_TASKS.find((task) =>
    stories.every((s) => {
      try {
        readFacts(
          task,
          s.lines.filter((l) => l.kind === "fact").map((l) => l.text),
        );
        for (const l of s.lines) if (l.kind === "question") readQuery(task, l.text);
        return true;
      } catch {
        return false;
      }
    }),
  );
}

export function checkBabiFiles(paths: string[]): BabiCheckResult {
  const res: BabiCheckResult = { lines: [], agree: 0, total: 0 };
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (e) {
      throw new DataFileError(path, undefined, `cannot read: ${(e as Error).message}`);
    }
    const stories = parseBabiFile(text, path);
    const task = taskFromFileName(path) ?? detectTask(stories);
    if (!task) throw new DataFileError(path, undefined, "cannot tell which bAbI task (qa1–qa5) this file holds");
    const name = basename(path);
    for (const story of stories) {
      const facts: string[] = [];
      const ids: number[] = []; // story id of each fact, by position
      for (const l of story.lines) {
        if (l.kind === "fact") {
          facts.push(l.text);
          ids.push(l.id);
          continue;
        }
        res.total++;
        const expected = `${questionKey(l.text)}->${l.answer} {${l.support.join(",")}}`;
        let derived: string;
        try {
          const r = resolveQuestion(task, facts, l.text);
          const dIds = r.support.map((i) => ids[i]);
          if (r.answer === l.answer && sameSet(dIds, l.support)) {
            res.agree++;
            continue;
          }
          derived = `${r.answer} {${dIds.join(",")}}`;
        } catch (e) {
          derived = `error: ${(e as Error).message}`;
        }
        res.lines.push(`${name}:${l.line ?? "?"}: expected ${expected}, derived ${derived}`);
      }
    }
  }
  return res;
}

/** The disagreement lines, then `agree: N/M` as the last line. */
export function formatCheckReport(result: BabiCheckResult): string {
  return [...result.lines, `agree: ${result.agree}/${result.total}`].join("\n");
}

/** Short name of what a question asks about ("milk", "apple before bathroom", …) for report lines. */
function questionKey(question: string): string {
  let q: BabiQuery;
  try {
    q = parseQuery(question);
  } catch {
    return JSON.stringify(question.trim());
  }
  switch (q.kind) {
    case "whereActor":
      return q.actor;
    case "whereObject":
      return q.obj;
    case "whereWas":
      return `${q.obj} before ${q.before}`;
    case "dirOf":
      return `${q.dir} of ${q.of}`;
    case "isDirOf":
      return `${q.loc} ${q.dir} of`;
    case "gave":
      return `${q.giver ?? "?"} gave ${q.obj ?? "?"} to ${q.receiver ?? "?"}`;
  }
}

function sameSet(a: number[], b: number[]): boolean {
  const sa = new Set(a), sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
}
