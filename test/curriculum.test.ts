import { test } from "node:test";
import assert from "node:assert/strict";
import { BABI_TASKS, babiSource } from "../server/qrag/data/babi/index.ts";
import { curriculumLevel, keepStoryFacts } from "../server/qrag/data/curriculum.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { buildSources } from "../server/qrag/data/sources.ts";
import { chunkAt, type Sample } from "../server/qrag/types.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const facts = (s: Sample): string[] => Array.from({ length: s.chunks.length }, (_, i) => chunkAt(s.chunks, i));
const supportTexts = (s: Sample): string[] => s.supportIdx.map((i) => chunkAt(s.chunks, i));

test("the curriculum grows linearly from its start values to the full task at `updates`", () => {
  const c = { updates: 1000, num_sentences: 10, story_facts: 0 };
  assert.deepEqual(curriculumLevel(c, 100, 0), { numSentences: 10, storyFacts: 0 });
  assert.deepEqual(curriculumLevel(c, 100, 500), { numSentences: 55, storyFacts: 50 });
  assert.deepEqual(curriculumLevel(c, 100, 999), { numSentences: 100, storyFacts: 99 });
  assert.deepEqual(curriculumLevel(c, 100, 1000), { numSentences: 100, storyFacts: Infinity });
  assert.deepEqual(curriculumLevel(c, 100, 50_000), { numSentences: 100, storyFacts: Infinity });
  // a start larger than the task never shrinks below its start before the end
  assert.equal(curriculumLevel({ ...c, num_sentences: 200 }, 100, 500).numSentences, 200);
});

test("dropping non-supporting story facts keeps the supporting facts and the story order (qa1–qa5)", () => {
  for (const task of BABI_TASKS) {
    const src = babiSource(task, { seed: 7, split: "train" });
    let shortened = 0;
    for (let i = 0; i < 150; i++) {
      const whole = src.sample(i);
      for (const keep of [0, 1, 4]) {
        const s = keepStoryFacts(whole, keep, new Rng(i * 10 + keep));
        const others = whole.chunks.length - new Set(whole.supportIdx).size;
        assert.equal(s.chunks.length, whole.chunks.length - Math.max(0, others - keep), `${task} #${i} keep ${keep}`);
        assert.deepEqual(supportTexts(s), supportTexts(whole), `${task} #${i}: supporting facts (in support order)`);
        // kept facts stay in story order: a subsequence of the original
        const orig = facts(whole);
        let j = 0;
        for (const f of facts(s)) {
          while (j < orig.length && orig[j] !== f) j++;
          assert.ok(j++ < orig.length, `${task} #${i}: fact order changed`);
        }
        assert.equal(s.question, whole.question);
        if (s.chunks.length < whole.chunks.length) shortened++;
      }
    }
    assert.ok(task === "qa1" || shortened > 100, `${task}: only ${shortened} samples were shortened`);
  }
});

test("a run's training samples follow the curriculum by update; its test samples are always the full task", () => {
  let updates = 0;
  const config = resolveConfig({
    preset: "babilong-cpu",
    overrides: ["envs.task=qa3", "envs.curriculum.updates=100", "envs.curriculum.num_sentences=12", "envs.curriculum.story_facts=1"],
  });
  const { train, test: testSrc } = buildSources(config, undefined, () => updates);
  const atStart = train.sample(3);
  assert.equal(atStart.chunks.length, 12);
  // ≤ 3 supporting + 1 other story fact among the 12 chunks
  const storyLike = facts(atStart).filter((f) => /\b(went|journeyed|travelled|moved|got|grabbed|picked|took|dropped|discarded|put|left)\b/.test(f));
  assert.ok(storyLike.length <= 4, `story facts at update 0: ${storyLike.length}`);
  assert.equal(supportTexts(atStart).length, atStart.supportIdx.length);
  updates = 50;
  assert.equal(train.sample(3).chunks.length, 56);
  updates = 100;
  const full = train.sample(3);
  assert.equal(full.chunks.length, 100);
  assert.deepEqual(supportTexts(full), supportTexts(atStart), "the same question hides the same supporting facts at every level");
  updates = 0;
  assert.equal(testSrc.sample(3).chunks.length, 100, "evaluation is never shaped");
});

test("curriculum settings are bounded and named in errors", () => {
  assert.throws(
    () => resolveConfig({ preset: "babilong-cpu", overrides: ["envs.curriculum.updates=0", "envs.curriculum.num_sentences=10"] }),
    /envs\.curriculum\.updates/,
  );
  assert.throws(
    () => resolveConfig({ preset: "babilong-cpu", overrides: ["envs.curriculum.updates=10", "envs.curriculum.num_sentences=10", "envs.curriculum.story_facts=5000"] }),
    /envs\.curriculum\.story_facts/,
  );
  assert.throws(() => resolveConfig({ preset: "babilong-cpu", overrides: ["envs.curriculum.updates=10"] }), /envs\.curriculum\.num_sentences/);
});
