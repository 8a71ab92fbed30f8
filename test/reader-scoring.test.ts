/**
 * The reader's pure parts: the benchmarks' answer metrics on hand-checked cases, the prompts'
 * shape, and the cache and timeout wrappers on a scripted reader (no model).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  babilongExactMatch, exactMatch, finalAnswer, openQaScores, squadNormalize, stringMatchAll, tokenF1,
} from "../server/qrag/reader/scoring.ts";
import { scoreAnswer } from "../server/qrag/reader/score.ts";
import { readerPrompt } from "../server/qrag/reader/prompts.ts";
import { cachedReader, ReaderTimeoutError, withTimeout, type Reader } from "../server/qrag/reader/reader.ts";

test("BabiLong: last word, stripped of spaces and dots, as a case-sensitive set", () => {
  assert.equal(babilongExactMatch("The most recent location of Mary is bathroom.", "bathroom"), 1);
  assert.equal(babilongExactMatch("  bathroom . ", "bathroom"), 1);
  assert.equal(babilongExactMatch("The most recent location of Mary is Bathroom.", "bathroom"), 0); // case-sensitive
  assert.equal(babilongExactMatch("bathroom is where Mary is", "bathroom"), 0); // only the last word counts
  assert.equal(babilongExactMatch("Daniel carries milk,apple", "apple,milk"), 1); // a set: order free
  assert.equal(babilongExactMatch("Daniel carries milk", "apple,milk"), 0);
  assert.equal(babilongExactMatch("", "bathroom"), 0);
});

test("RULER string_match_all: the share of references in the text, case-insensitive", () => {
  assert.equal(stringMatchAll("The magic numbers are 5856449,1628578.", ["5856449", "1628578"]), 1);
  assert.equal(stringMatchAll("The magic numbers are 5856449.", ["5856449", "1628578", "1155477", "6006190"]), 0.25);
  assert.equal(stringMatchAll("uuid A6CDAE3C", ["a6cdae3c"]), 1);
  assert.equal(stringMatchAll("anything", []), 0);
});

test("SQuAD normalisation, exact match and token F1", () => {
  assert.equal(squadNormalize("The  Eiffel-Tower, in PARIS!"), "eiffeltower in paris");
  assert.equal(squadNormalize("an apple a day"), "apple day");
  assert.equal(exactMatch("the Eiffel Tower.", "Eiffel Tower"), 1);
  assert.equal(exactMatch("Eiffel", "Eiffel Tower"), 0);
  // pred {eiffel, tower, paris} vs gold {eiffel, tower}: P 2/3, R 1 → F1 0.8
  assert.ok(Math.abs(tokenF1("Eiffel Tower Paris", "the Eiffel Tower") - 0.8) < 1e-12);
  // a repeated token matches once: P 1/2, R 1 → F1 2/3
  assert.ok(Math.abs(tokenF1("paris paris", "paris") - 2 / 3) < 1e-12);
  assert.equal(tokenF1("london", "paris"), 0);
  assert.equal(tokenF1("the", "a"), 1); // both normalise to nothing
});

test("open QA reads the text after the last 'Final answer:' and takes the best alias", () => {
  assert.equal(finalAnswer("Final answer: x\nthinking more... Final answer:  Paris "), "Paris");
  assert.equal(finalAnswer("Paris"), "Paris");
  const s = openQaScores("It is in France. Final answer: the city of Paris", ["Paris", "city of Paris"]);
  assert.deepEqual(s, { em: 1, f1: 1 });
  assert.deepEqual(scoreAnswer({ name: "hotpotqa" }, "Final answer: Paris France", ["Paris"]), { accuracy: 0, f1: 2 / 3 });
  assert.deepEqual(scoreAnswer({ name: "babilong", task: "qa1" }, "The most recent location of Mary is kitchen.", "kitchen"), { accuracy: 1 });
  assert.deepEqual(scoreAnswer({ name: "niah" }, "The magic numbers are 1,2", ["1", "3"]), { accuracy: 0.5 });
});

test("the BabiLong prompt is the reference's template with the kept facts in order", () => {
  const p = readerPrompt({ name: "babilong", task: "qa1" }, "Where is Mary? ", ["Mary went to the kitchen. ", "John moved to the garden."]);
  assert.match(p.system, /^Your are an AI assistant/);
  assert.ok(p.user.startsWith("I will give you context with the facts about positions of different persons"));
  assert.ok(p.user.includes("Example:\nCharlie went to the hallway.") && !p.user.includes("<example>"));
  assert.ok(p.user.endsWith("\nContext: Mary went to the kitchen. John moved to the garden.\n\nQuestion: Where is Mary?"));
  const open = readerPrompt({ name: "musique" }, "Who?", ["A.", "B."]);
  assert.ok(open.user.includes("Document 1: A.\nDocument 2: B.") && open.user.includes("Final answer:"));
});

function scripted(delayMs: number): Reader & { calls: number } {
  const r = {
    model: "scripted",
    calls: 0,
    async answer(i: { question: string }, signal?: AbortSignal) {
      r.calls++;
      await new Promise<void>((res, rej) => {
        const t = setTimeout(res, delayMs);
        signal?.addEventListener("abort", () => { clearTimeout(t); rej(signal.reason as Error); }, { once: true });
      });
      return { text: `A:${i.question}`, promptTokens: 3, completionTokens: 1, ms: delayMs };
    },
  };
  return r;
}

test("the cache answers a repeated input without calling the model, and stays bounded", async () => {
  const inner = scripted(1);
  const r = cachedReader(inner, 2);
  const input = (q: string) => ({ question: q, chunks: ["c"], dataset: { name: "niah" } as const });
  const a = await r.answer(input("q1"));
  const b = await r.answer(input("q1"));
  assert.equal(inner.calls, 1);
  assert.equal(b.cached, true);
  assert.equal(b.text, a.text);
  await r.answer(input("q2"));
  await r.answer(input("q1")); // a hit: q1 is now the most recently used
  await r.answer(input("q3")); // evicts q2, the least recently used
  assert.equal(r.size, 2);
  assert.equal(inner.calls, 3);
  assert.equal((await r.answer(input("q1"))).cached, true);
  assert.equal((await r.answer(input("q2"))).cached, undefined);
  assert.equal(inner.calls, 4);
  assert.notEqual(r.key(input("q1")), r.key({ ...input("q1"), chunks: ["d"] }));
});

test("a call past its timeout rejects with ReaderTimeoutError and aborts the provider", async () => {
  const inner = scripted(5_000);
  const t0 = performance.now();
  await assert.rejects(withTimeout(inner, 50).answer({ question: "q", chunks: [], dataset: { name: "niah" } }), ReaderTimeoutError);
  assert.ok(performance.now() - t0 < 1_000);
  const fast = await withTimeout(scripted(1), 1_000).answer({ question: "q", chunks: [], dataset: { name: "niah" } });
  assert.equal(fast.text, "A:q");
});
