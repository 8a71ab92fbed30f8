/** The engine's sentence splitter (server/qrag/data/text/sentences.ts): no text is ever dropped. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { splitSentences } from "../server/qrag/data/text/sentences.ts";

test("a dot inside a word stays in its sentence (the text before it used to vanish)", () => {
  assert.deepEqual(splitSentences(`Bob shouted <img src=x onerror="window.__xss=1"> in the hall. Mary left.`), [`Bob shouted <img src=x onerror="window.__xss=1"> in the hall.`, "Mary left."]);
  assert.deepEqual(splitSentences("We use node.js daily. It works!"), ["We use node.js daily.", "It works!"]);
  assert.deepEqual(splitSentences("Dr. Smith paid 3.50 dollars.\nThe end"), ["Dr. Smith paid 3.50 dollars.", "The end"]);
  // every non-space character of the input is in some sentence, in order
  const text = "a.b c?d e!f. G.h i.j. K";
  assert.equal(splitSentences(text).join(" ").replace(/\s/g, ""), text.replace(/\s/g, ""));
});
