import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { DataFileError } from "../server/qrag/errors.ts";
import { formatBabiStory, parseBabiFile } from "../server/qrag/data/babi/format.ts";
import { storyQuestions } from "../server/qrag/data/babi/questions.ts";
import type { BabiStory } from "../server/qrag/data/babi/types.ts";

// Real v1.2 stories: $BABI_FIXTURES, else test/fixtures/babi, else the shared workspace copy.
const FIX = "test/fixtures/babi"; // real bAbI v1.2 stories (CC BY 3.0), shipped with the tests
const FILES = {
  qa1: "qa1_single-supporting-fact_test.part1.txt",
  qa2: "qa2_two-supporting-facts_test.story1.txt",
  qa3: "qa3_three-supporting-facts_test.story1.txt",
  qa4: "qa4_two-arg-relations_test.stories1-2.txt",
  qa5: "qa5_three-arg-relations_test.story1.txt",
};
const read = (f: string) => readFileSync(`${FIX}/${f}`, "utf8");
const parse = (f: string) => parseBabiFile(read(f), f);
const questions = (stories: BabiStory[]) => stories.flatMap((s) => s.lines.filter((l) => l.kind === "question"));

test("parses every fixture with the right story and question counts", () => {
  const expected: Record<keyof typeof FILES, [number, number]> = { qa1: [100, 500], qa2: [1, 5], qa3: [1, 5], qa4: [2, 2], qa5: [1, 5] };
  for (const [task, file] of Object.entries(FILES) as [keyof typeof FILES, string][]) {
    const stories = parse(file);
    assert.equal(stories.length, expected[task][0], `${task} stories`);
    assert.equal(questions(stories).length, expected[task][1], `${task} questions`);
  }
  const qa1 = parse(FILES.qa1);
  assert.ok(qa1.every((s) => s.lines.length === 15));
  assert.deepEqual(qa1[0].lines[2], { id: 3, text: "Where is John?", kind: "question", answer: "hallway", support: [1], line: 3 });
  assert.equal(parse(FILES.qa3)[0].lines.length, 59);
});

test("qa4 questions without a space before the tab parse; unsorted support order is kept", () => {
  const qa4 = parse(FILES.qa4);
  assert.deepEqual(qa4[0].lines[2], { id: 3, text: "What is the bathroom east of?", kind: "question", answer: "bedroom", support: [2], line: 3 });
  assert.equal(qa4[1].lines[0].line, 4); // ids restart, file lines do not
  const qa2 = parse(FILES.qa2)[0].lines;
  assert.deepEqual(qa2.filter((l) => l.kind === "question").map((l) => (l.kind === "question" ? l.support : [])), [
    [1, 4],
    [6, 7],
    [9, 7],
    [9, 7],
    [16, 10],
  ]);
  const qa3 = parse(FILES.qa3)[0].lines[38];
  assert.ok(qa3.kind === "question");
  assert.deepEqual(qa3.support, [38, 25, 22]);
});

test("formatBabiStory writes the fixtures back byte for byte (qa4 without the space)", () => {
  for (const [task, file] of Object.entries(FILES) as [keyof typeof FILES, string][]) {
    const text = read(file);
    const out = parse(file).map((s) => formatBabiStory(s, task)).join("");
    assert.equal(out, text.endsWith("\n") ? text : text + "\n", task);
  }
});

test("tolerates CRLF, blank and trailing lines", () => {
  const text = "\r\n1 Mary went to the kitchen.\r\n\r\n2 Where is Mary? \tkitchen\t1\r\n\n1 John moved to the office.\n2 Where is John? \toffice\t1\n\n\n";
  const stories = parseBabiFile(text, "x.txt");
  assert.equal(stories.length, 2);
  assert.deepEqual(stories[0].lines[1], { id: 2, text: "Where is Mary?", kind: "question", answer: "kitchen", support: [1], line: 4 });
});

test("storyQuestions: facts before each question, earlier questions dropped, support as sorted fact positions", () => {
  const qas = storyQuestions(parse(FILES.qa2)[0]);
  assert.equal(qas.length, 5);
  assert.deepEqual(qas[0], {
    facts: ["Mary got the milk there.", "John moved to the bedroom.", "Sandra went back to the kitchen.", "Mary travelled to the hallway."],
    question: "Where is the milk?",
    answer: "hallway",
    supportIdx: [0, 3],
  });
  // line 17, support "16 10": statements 10 and 16 are facts #7 and #11 (0-based) of 12
  assert.equal(qas[4].facts.length, 12);
  assert.deepEqual(qas[4].supportIdx, [7, 11]);
  assert.equal(qas[4].facts[7], "Mary went to the garden.");
  assert.equal(qas[4].facts[11], "Mary discarded the milk.");
});

test("malformed input is rejected with file and 1-based line", () => {
  const cases: [string, number, RegExp][] = [
    ["1 Mary went to the kitchen.\nfoo bar", 2, /expected "<id> <text>"/],
    ["1 A.\n2 B.\n2 C.", 3, /id 2 after id 2/],
    ["1 A.\n2 B.\n4 C.", 3, /id 4 after id 2/],
    ["2 A.", 1, /first line of a story must have id 1/],
    ["0 A.", 1, /bad line id/],
    ["1 A.\n2 Where is Mary?", 2, /question line without answer and support/],
    ["1 A.\n2 Where is Mary? \tkitchen", 2, /without supporting-fact ids/],
    ["1 A.\n2 Where is Mary? \t\t1", 2, /without an answer/],
    ["1 A.\n2 Where is Mary? \tkitchen\t3", 2, /points to this or a later line/],
    ["1 A.\n2 Where is Mary? \tkitchen\t1\n3 Where is Mary? \tkitchen\t2", 3, /points to a question/],
    ["1 A.\n2 Where is Mary? \tkitchen\t1 x", 2, /bad support id \(expected space-separated line numbers\)/],
    ["\n1 A.\n\n3 B.", 4, /id 3 after id 1/],
  ];
  for (const [text, line, re] of cases) {
    assert.throws(
      () => parseBabiFile(text, "bad.txt"),
      // the message describes the problem and never quotes the file's text
      (e: unknown) => e instanceof DataFileError && e.line === line && e.message.startsWith(`bad.txt:${line}: `) && re.test(e.message) && !/Mary|kitchen|foo|\bx\b/.test(e.message),
      JSON.stringify(text),
    );
  }
});
