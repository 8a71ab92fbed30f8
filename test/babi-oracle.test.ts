import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkBabiFiles, formatCheckReport, taskFromFileName } from "../server/qrag/data/babi/check.ts";
import { parseBabiFile } from "../server/qrag/data/babi/format.ts";
import { BabiResolveError, resolveQuestion } from "../server/qrag/data/babi/resolve.ts";
import { BabiSentenceError } from "../server/qrag/data/babi/sentences.ts";
import { toBabiTask, type BabiTask } from "../server/qrag/data/babi/vocab.ts";
import { InputError } from "../server/qrag/errors.ts";

// Real v1.2 stories: $BABI_FIXTURES, else test/fixtures/babi, else the shared workspace copy.
const FIX = "test/fixtures/babi"; // real bAbI v1.2 stories (CC BY 3.0), shipped with the tests
const fixture = (prefix: string) => {
  const f = readdirSync(FIX).find((n) => n.startsWith(prefix) && n.endsWith(".txt"));
  assert.ok(f, `fixture ${prefix}*`);
  return join(FIX, f);
};

/** Support sets (story ids, in the order resolveQuestion prints them) of every question of a file. */
function derivedSupports(task: BabiTask, path: string, storyIdx = 0): number[][] {
  const story = parseBabiFile(readFileSync(path, "utf8"), path)[storyIdx];
  const facts: string[] = [];
  const ids: number[] = [];
  const out: number[][] = [];
  for (const l of story.lines) {
    if (l.kind === "fact") {
      facts.push(l.text);
      ids.push(l.id);
    } else out.push(resolveQuestion(task, facts, l.text).support.map((i) => ids[i]));
  }
  return out;
}

test("checkBabiFiles re-derives every fixture question (100% agreement)", () => {
  const files = readdirSync(FIX).filter((n) => n.endsWith(".txt")).map((n) => join(FIX, n));
  assert.equal(files.length, 5);
  const r = checkBabiFiles(files);
  assert.deepEqual(r.lines, []);
  assert.equal(r.total, 517);
  assert.equal(r.agree, r.total);
  assert.equal(formatCheckReport(r), "agree: 517/517");
});

test("reproduces the spec's oracle support sets, in the printed order", () => {
  assert.deepEqual(derivedSupports("qa1", fixture("qa1_")), [[1], [2], [8], [10], [14]]);
  assert.deepEqual(derivedSupports("qa2", fixture("qa2_")), [[1, 4], [6, 7], [9, 7], [9, 7], [16, 10]]);
  assert.deepEqual(derivedSupports("qa3", fixture("qa3_")), [[38, 25, 22], [38, 30, 26], [38, 30, 26], [54, 44, 41], [54, 44, 41]]);
  assert.deepEqual([...derivedSupports("qa4", fixture("qa4_"), 0), ...derivedSupports("qa4", fixture("qa4_"), 1)], [[2], [1]]);
  assert.deepEqual(derivedSupports("qa5", fixture("qa5_")), [[2], [2], [8], [11], [13]]);
});

test("a corrupted answer or support gives one disagreement naming its file line", () => {
  const dir = mkdtempSync(join(tmpdir(), "babi-check-"));
  try {
    const src = fixture("qa2_");
    const lines = readFileSync(src, "utf8").split("\n");
    lines[16] = lines[16].replace("\tgarden\t", "\thallway\t"); // line 17
    const bad = join(dir, "qa2_two-supporting-facts_test.story1.txt");
    writeFileSync(bad, lines.join("\n"));
    const r = checkBabiFiles([bad, fixture("qa5_")]);
    assert.equal(r.total, 10);
    assert.equal(r.agree, 9);
    assert.deepEqual(r.lines, ["qa2_two-supporting-facts_test.story1.txt:17: expected milk->hallway {16,10}, derived garden {16,10}"]);
    assert.equal(formatCheckReport(r).split("\n").at(-1), "agree: 9/10");

    lines[16] = lines[16].replace("\thallway\t16 10", "\tgarden\t16 7");
    writeFileSync(bad, lines.join("\n"));
    assert.deepEqual(checkBabiFiles([bad]).lines, ["qa2_two-supporting-facts_test.story1.txt:17: expected milk->garden {16,7}, derived garden {16,10}"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the task comes from the file name, or from the content when the name has none", () => {
  assert.equal(taskFromFileName("/x/qa3_three-supporting-facts_train.txt"), "qa3");
  assert.equal(taskFromFileName("story.txt"), undefined);
  assert.throws(() => taskFromFileName("qa7_counting_test.txt"), /qa7 is not supported/);
  const dir = mkdtempSync(join(tmpdir(), "babi-detect-"));
  try {
    for (const p of ["qa1_", "qa2_", "qa3_", "qa4_", "qa5_"]) {
      const f = join(dir, `unnamed-${p.slice(2, 3)}.txt`);
      writeFileSync(f, readFileSync(fixture(p), "utf8"));
      const r = checkBabiFiles([f]);
      assert.equal(r.agree, r.total, p);
      assert.ok(r.total > 0);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a real qa3 story with answers only (en-valid-nosf qa3_train story 1) is reproduced", () => {
  // bAbI v1.2 (CC BY 3.0), first qa3 training story, as printed by a public ParlAI example.
  // It asks while the object is still carried (f_obj is a get: "John picked up the milk").
  const story = `Mary moved to the office. Sandra went back to the kitchen. Sandra went to the office. John went to the bathroom.
Sandra went back to the bathroom. Mary picked up the football there. Sandra journeyed to the garden. Mary discarded the football.
Sandra got the apple. Sandra dropped the apple. John travelled to the kitchen. Mary got the football. Sandra took the apple.
Sandra dropped the apple. Mary journeyed to the garden. Mary took the apple. John went to the bedroom. John journeyed to the hallway.
Mary left the apple. Sandra travelled to the bedroom. John went to the garden. John journeyed to the bedroom. Mary moved to the kitchen.
Mary travelled to the garden. Mary went to the bathroom. John journeyed to the bathroom. Sandra moved to the garden. Mary left the football.
? Where was the football before the garden? = kitchen
Sandra took the apple. Mary went back to the office.
? Where was the football before the garden? = kitchen
Sandra journeyed to the bathroom. Daniel moved to the kitchen.
? Where was the football before the kitchen? = garden
Sandra left the apple there. Daniel travelled to the bedroom. Sandra travelled to the bedroom. John went back to the hallway.
Daniel travelled to the garden. Mary travelled to the bedroom. Sandra went to the kitchen. Mary went to the garden.
Sandra went back to the office. John moved to the office. Daniel went back to the office. Sandra journeyed to the kitchen.
John went to the bedroom. Daniel journeyed to the garden. John journeyed to the kitchen. John went to the hallway.
John picked up the milk. Daniel went back to the kitchen. John journeyed to the garden. John went to the bathroom.
? Where was the milk before the bathroom? = garden
Mary travelled to the hallway. John took the apple. John dropped the milk. Daniel went back to the hallway.
? Where was the milk before the bathroom? = garden`;
  const facts: string[] = [];
  const answers: string[] = [];
  for (const row of story.split("\n")) {
    const q = /^\? (.*) = (\w+)$/.exec(row);
    if (q) {
      const r = resolveQuestion("qa3", facts, q[1]);
      answers.push(r.answer);
      assert.equal(r.answer, q[2], q[1]);
    } else facts.push(...row.split(/(?<=\.) /));
  }
  assert.equal(answers.length, 5);
  assert.equal(facts.length, 56);
});

test("a short real qa3 sample (BabiLong 0k, from the BabiLong paper) is reproduced", () => {
  const facts = `Mary picked up the apple. John went to the garden. Sandra travelled to the office. Sandra took the milk.
John went to the bedroom. Sandra went to the kitchen. John journeyed to the office. Mary left the apple. Mary travelled to the office.
Sandra went to the office. Daniel went to the hallway. Sandra discarded the milk.`.split(/(?<=\.)\s+/);
  assert.equal(facts.length, 12);
  assert.deepEqual(resolveQuestion("qa3", facts, "Where was the milk before the office?"), { answer: "kitchen", support: [11, 9, 5] });
});

test("resolveQuestion explains what it cannot parse or answer", () => {
  assert.throws(() => resolveQuestion("qa1", ["John flew to the moon."], "Where is John?"), (e: unknown) => e instanceof BabiSentenceError && /fact 1 "John flew to the moon\."/.test(e.message) && /cannot parse statement/.test(e.message));
  assert.throws(() => resolveQuestion("qa1", ["John went to the kitchen."], "Why is John?"), /cannot parse question "Why is John\?"/);
  assert.throws(() => resolveQuestion("qa1", ["John got the milk there."], "Where is John?"), /a get statement does not belong to qa1/);
  assert.throws(() => resolveQuestion("qa1", ["John went to the kitchen."], "Where is the milk?"), /not a qa1 question form/);
  assert.throws(() => resolveQuestion("qa1", ["Mary went to the kitchen."], "Where is John?"), (e: unknown) => e instanceof BabiResolveError && /no statement says where John is/.test(e.message));
  assert.throws(() => resolveQuestion("qa2", ["John dropped the milk."], "Where is the milk?"), /John drops the milk, but nobody holds it/);
  assert.throws(() => resolveQuestion("qa2", ["John got the milk there."], "Where is the milk?"), BabiResolveError);
  // qa3: never asks about a transition whose object was last handled by someone else
  const f3 = ["John went to the office.", "John took the apple.", "John went to the garden.", "John left the apple.", "Mary went to the garden.", "Mary took the apple."];
  assert.deepEqual(resolveQuestion("qa3", f3.slice(0, 4), "Where was the apple before the garden?"), { answer: "office", support: [3, 2, 0] });
  assert.throws(() => resolveQuestion("qa3", f3, "Where was the apple before the garden?"), /last mention \(fact 6\) is by Mary/);
  // qa4: the single fact linking the named place and the answer (kitchen-office-garden, north to south)
  const f4 = ["The kitchen is north of the office.", "The garden is south of the office."];
  assert.deepEqual(resolveQuestion("qa4", f4, "What is the office north of?"), { answer: "garden", support: [1] });
  assert.deepEqual(resolveQuestion("qa4", f4, "What is the kitchen north of?"), { answer: "office", support: [0] });
  assert.deepEqual(resolveQuestion("qa4", f4, "What is north of the office?"), { answer: "kitchen", support: [0] });
  assert.throws(() => resolveQuestion("qa4", f4, "What is east of the office?"), BabiResolveError);
  assert.throws(() => resolveQuestion("qa4", [...f4, "The bedroom is south of the office."], "What is south of the office?"), /ambiguous/);
  // qa5: the most recent matching give
  const f5 = ["Fred got the milk there.", "Fred gave the milk to Jeff.", "Jeff passed the milk to Fred.", "Fred handed the milk to Bill."];
  assert.deepEqual(resolveQuestion("qa5", f5, "Who gave the milk to Fred?"), { answer: "Jeff", support: [2] });
  assert.deepEqual(resolveQuestion("qa5", f5, "Who received the milk?"), { answer: "Bill", support: [3] });
  assert.deepEqual(resolveQuestion("qa5", f5, "What did Fred give to Jeff?"), { answer: "milk", support: [1] });
  assert.deepEqual(resolveQuestion("qa5", f5, "Who did Fred give the milk to?"), { answer: "Bill", support: [3] });
  assert.deepEqual(resolveQuestion("qa5", f5, "Who gave the milk?"), { answer: "Fred", support: [3] });
});

test("toBabiTask accepts short and reference task names", () => {
  assert.equal(toBabiTask("qa2"), "qa2");
  assert.equal(toBabiTask("qa2_two-supporting-facts"), "qa2");
  assert.equal(toBabiTask("qa3_three-supporting-facts"), "qa3");
  assert.equal(toBabiTask("qa5_three-arg-relations"), "qa5");
  assert.throws(() => toBabiTask("qa6"), InputError);
  assert.throws(() => toBabiTask("qa2_three-supporting-facts"), /unknown bAbI task/);
});
