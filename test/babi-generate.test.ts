import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Rng } from "../server/qrag/util/rng.ts";
import { checkBabiFiles } from "../server/qrag/data/babi/check.ts";
import { formatBabiStory, parseBabiFile } from "../server/qrag/data/babi/format.ts";
import { generateStory } from "../server/qrag/data/babi/generate.ts";
import { storyQuestions } from "../server/qrag/data/babi/questions.ts";
import { resolveQuestion } from "../server/qrag/data/babi/resolve.ts";
import { parseFact, parseQuery } from "../server/qrag/data/babi/sentences.ts";
import { babiSource } from "../server/qrag/data/babi/source.ts";
import { DROP_VERBS, GET_VERBS, GIVE_VERBS, MOVE_VERBS, QA5_FORM_SHARES } from "../server/qrag/data/babi/templates.ts";
import type { BabiStory } from "../server/qrag/data/babi/types.ts";
import { BABI_TASKS, WORLD_BASIC_START, type Actor, type BabiTask, type Location } from "../server/qrag/data/babi/vocab.ts";

/** n stories of a task from one seed (cached: several tests look at the same stories). */
const cache = new Map<string, BabiStory[]>();
function stories(task: BabiTask, n: number, seed = 11): BabiStory[] {
  const key = `${task}:${n}:${seed}`;
  let s = cache.get(key);
  if (!s) {
    const root = new Rng(seed);
    s = Array.from({ length: n }, (_, i) => generateStory(task, root.fork(i)));
    cache.set(key, s);
  }
  return s;
}
const questionsOf = (s: BabiStory) => s.lines.filter((l) => l.kind === "question");

test("generation is deterministic by seed", () => {
  for (const task of BABI_TASKS) {
    const a = generateStory(task, new Rng(5)), b = generateStory(task, new Rng(5));
    assert.deepEqual(a, b, task);
    const others = [6, 7, 8].map((s) => generateStory(task, new Rng(s)));
    assert.ok(others.some((o) => JSON.stringify(o) !== JSON.stringify(a)), task);
  }
});

test("stories have the real-data structure", () => {
  for (const s of stories("qa1", 50)) {
    assert.equal(s.lines.length, 15);
    assert.deepEqual(questionsOf(s).map((l) => l.id), [3, 6, 9, 12, 15]);
  }
  for (const s of stories("qa4", 100)) {
    assert.deepEqual(s.lines.map((l) => l.kind), ["fact", "fact", "question"]);
  }
  for (const task of ["qa2", "qa3", "qa5"] as const) {
    for (const s of stories(task, 100)) {
      assert.equal(questionsOf(s).length, 5, task);
      assert.equal(s.lines.at(-1)?.kind, "question");
      // qa2/qa3 gap rule: at least 2 facts between questions
      if (task !== "qa5") {
        let since = 0;
        for (const l of s.lines) {
          if (l.kind === "fact") since++;
          else {
            assert.ok(since >= 2, `${task}: question ${l.id} after ${since} facts`);
            since = 0;
          }
        }
      }
    }
  }
});

test("every generated question re-checks under resolveQuestion", () => {
  for (const task of BABI_TASKS) {
    for (const s of stories(task, task === "qa1" || task === "qa4" ? 200 : 100)) {
      for (const qa of storyQuestions(s)) {
        const r = resolveQuestion(task, qa.facts, qa.question);
        assert.equal(r.answer, qa.answer);
        assert.deepEqual([...r.support].sort((a, b) => a - b), qa.supportIdx);
        assert.equal(new Set(qa.supportIdx).size, task === "qa2" ? 2 : task === "qa3" ? 3 : 1, `${task} support size`);
      }
    }
  }
});

test("every real template appears, with the spec's ' there' rates", () => {
  const seen = new Set<string>();
  const there: Record<string, [number, number]> = {};
  for (const task of BABI_TASKS) {
    for (const s of stories(task, task === "qa4" ? 200 : 100)) {
      for (const l of s.lines) {
        if (l.kind === "question") {
          const q = parseQuery(l.text);
          seen.add(`${task}:q:${q.kind === "gave" ? q.form : q.kind}`);
          continue;
        }
        const f = parseFact(l.text);
        if (f.kind === "rel") seen.add(`rel:${f.dir}`);
        else seen.add(`${f.kind}:${f.verb}`);
        if (f.kind === "get" || f.kind === "drop") {
          const c = (there[`${task}:${f.kind}`] ??= [0, 0]);
          c[0] += f.there ? 1 : 0;
          c[1]++;
        }
      }
    }
  }
  const want = [
    ...MOVE_VERBS.map((v) => `move:${v}`),
    ...GET_VERBS.map((v) => `get:${v}`),
    ...DROP_VERBS.map((v) => `drop:${v}`),
    ...GIVE_VERBS.map((v) => `give:${v}`),
    ...["north", "south", "east", "west"].map((d) => `rel:${d}`),
    "qa1:q:whereActor",
    "qa2:q:whereObject",
    "qa3:q:whereWas",
    "qa4:q:dirOf",
    "qa4:q:isDirOf",
    ...Object.keys(QA5_FORM_SHARES).map((f) => `qa5:q:${f}`),
  ];
  for (const w of want) assert.ok(seen.has(w), `template ${w} never generated`);
  const rate = (k: string) => there[k][0] / there[k][1];
  assert.equal(rate("qa2:get"), 1);
  assert.equal(rate("qa2:drop"), 0);
  assert.equal(rate("qa5:get"), 1);
  assert.ok(Math.abs(rate("qa3:get") - 0.3) < 0.06 && Math.abs(rate("qa3:drop") - 0.3) < 0.06, JSON.stringify(there));
});

test("qa5 question forms follow the real shares and target the most recent give", () => {
  const counts: Record<string, number> = {};
  let n = 0;
  for (const s of stories("qa5", 200)) {
    let lastGive = -1;
    for (const l of s.lines) {
      if (l.kind === "fact") {
        if (parseFact(l.text).kind === "give") lastGive = l.id;
        continue;
      }
      assert.deepEqual(l.support, [lastGive]);
      const q = parseQuery(l.text);
      if (q.kind === "gave") counts[q.form] = (counts[q.form] ?? 0) + 1;
      n++;
    }
  }
  for (const [form, share] of Object.entries(QA5_FORM_SHARES)) {
    assert.ok(Math.abs((counts[form] ?? 0) / n - share) < 0.05, `${form}: ${counts[form]}/${n}`);
  }
});

test("a move never goes to the place the actor is already in", () => {
  for (const task of ["qa1", "qa2", "qa3", "qa5"] as const) {
    for (const s of stories(task, 100)) {
      // known place (or the unstated world_basic start for qa1–qa3)
      const at = new Map<Actor, Location>(task === "qa5" ? [] : (Object.entries(WORLD_BASIC_START) as [Actor, Location][]));
      for (const l of s.lines) {
        if (l.kind !== "fact") continue;
        const f = parseFact(l.text);
        if (f.kind !== "move") continue;
        assert.notEqual(at.get(f.actor), f.loc, `${task}: ${l.text}`);
        at.set(f.actor, f.loc);
      }
    }
  }
});

test("qa1 question-to-support distance roughly matches the real test file", () => {
  const dist = new Map<number, number>();
  let n = 0;
  for (const s of stories("qa1", 200)) {
    for (const l of questionsOf(s)) {
      if (l.kind !== "question") continue;
      const d = l.id - l.support[0];
      dist.set(d, (dist.get(d) ?? 0) + 1);
      n++;
    }
  }
  assert.deepEqual([...dist.keys()].sort((a, b) => a - b), [1, 2, 4, 5, 7]);
  const real: Record<number, number> = { 1: 0.432, 2: 0.276, 4: 0.158, 5: 0.091, 7: 0.043 };
  for (const [d, share] of Object.entries(real)) {
    const got = (dist.get(Number(d)) ?? 0) / n;
    assert.ok(Math.abs(got - share) < 0.05, `distance ${d}: ${got.toFixed(3)} vs real ${share}`);
  }
});

test("generated stories round-trip through the text format and the oracle check", () => {
  const dir = mkdtempSync(join(tmpdir(), "babi-gen-"));
  try {
    for (const task of BABI_TASKS) {
      const ss = stories(task, 40);
      const file = join(dir, `${task}_generated.txt`);
      writeFileSync(file, ss.map((s) => formatBabiStory(s, task)).join(""));
      const back = parseBabiFile(ss.map((s) => formatBabiStory(s, task)).join(""), file);
      assert.deepEqual(
        back.map((s) => s.lines.map(({ line: _line, ...rest }) => rest)),
        ss.map((s) => s.lines),
        task,
      );
      const r = checkBabiFiles([file]);
      assert.deepEqual(r.lines, [], task);
      assert.equal(r.agree, r.total);
      assert.equal(r.total, task === "qa4" ? 40 : 200);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("babiSource: deterministic by (seed, split, i), random access, Q-RAG sample shape", () => {
  const a = babiSource("qa2", { seed: 3, split: "train" });
  const b = babiSource("qa2", { seed: 3, split: "train" });
  const s7 = a.sample(7);
  for (let i = 0; i < 12; i++) b.sample(i); // a sweep must not change what index 7 is
  assert.deepEqual(b.sample(7), s7);
  assert.equal(s7.id, "qa2-train-7");
  assert.deepEqual(s7.meta, { task: "qa2" });
  // sample 7 is question 2 of story 1, generated from fork("train:1")
  const qa = storyQuestions(generateStory("qa2", new Rng(3).fork("train:1")))[2];
  assert.deepEqual({ q: s7.question, a: s7.answer, c: s7.chunks, s: s7.supportIdx }, { q: qa.question, a: qa.answer, c: qa.facts, s: qa.supportIdx });
  assert.notDeepEqual(babiSource("qa2", { seed: 3, split: "test" }).sample(7), s7);
  assert.notDeepEqual(babiSource("qa2", { seed: 4, split: "train" }).sample(7).chunks, s7.chunks);
  const q4 = babiSource("qa4", { seed: 1, split: "test" });
  assert.equal(q4.sample(5).chunks.length, 2);
  assert.deepEqual(q4.sample(5).question, storyQuestions(generateStory("qa4", new Rng(1).fork("test:5")))[0].question);
  assert.throws(() => a.sample(-1), RangeError);
});

test("facts per question (diagnostic)", (t) => {
  for (const task of ["qa2", "qa3", "qa5"] as const) {
    const n = stories(task, 100).flatMap((s) => storyQuestions(s).map((q) => q.facts.length)).sort((x, y) => x - y);
    const at = (p: number) => n[Math.floor(p * (n.length - 1))];
    const mean = n.reduce((x, y) => x + y, 0) / n.length;
    t.diagnostic(`${task}: ${n.length} questions, facts min ${n[0]} p25 ${at(0.25)} median ${at(0.5)} p75 ${at(0.75)} p95 ${at(0.95)} max ${n.at(-1)} mean ${mean.toFixed(1)}`);
    assert.ok(n[0] >= 2);
  }
});
