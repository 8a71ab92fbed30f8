import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DataFileError } from "../server/qrag/errors.ts";
import type { Sample } from "../server/qrag/types.ts";
import { hotpotqaSource, loadHotpotqa } from "../server/qrag/data/hotpotqa.ts";
import { loadMusique, musiqueSource } from "../server/qrag/data/musique.ts";

const FIX = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures");
const TUPLE = path.join(FIX, "hotpotqa-tuple.json");
const COLUMNAR = path.join(FIX, "hotpotqa-columnar.json");
const MUSIQUE = path.join(FIX, "musique.jsonl");

/** A Sample without its file provenance (file name and line differ between the two layouts). */
function content(s: Sample): unknown {
  const { file: _f, line: _l, ...meta } = s.meta ?? {};
  return { ...s, meta };
}

function withTmp(fn: (dir: string) => void): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "qa-loaders-"));
  try {
    fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Asserts that fn throws a DataFileError whose message starts with `file:line: ` and matches `re`. */
function throwsAt(fn: () => unknown, file: string, line: number | undefined, re: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof DataFileError, `not a DataFileError: ${String(e)}`);
    const where = line === undefined ? `${file}: ` : `${file}:${line}: `;
    assert.ok(e.message.startsWith(where), `"${e.message}" does not start with "${where}"`);
    assert.match(e.message, re);
    assert.equal(e.file, file);
    assert.equal(e.line, line);
    return true;
  });
}

/** 1-based line of the first occurrence of `needle` in `text`. */
function lineOf(text: string, needle: string): number {
  const at = text.indexOf(needle);
  assert.ok(at >= 0, `fixture lacks ${needle}`);
  return text.slice(0, at).split("\n").length;
}

test("HotpotQA: Q-RAG chunking and support paragraphs (tuple layout)", () => {
  const { samples, skipped } = loadHotpotqa(TUPLE);
  assert.equal(samples.length, 2);
  assert.equal(skipped.length, 0);
  const [a, b] = samples;
  assert.equal(a.id, "5a8b57f25542995d1e6f1371");
  assert.equal(a.question, "Were Scott Derrickson and Ed Wood of the same nationality?");
  assert.equal(a.answer, "yes");
  assert.equal(a.chunks.length, 4);
  // title + " " + sentences.join(" "); later sentences begin with a space, so spaces double as upstream
  assert.equal(
    a.chunks.at(1),
    "Scott Derrickson Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer.  He lives in Los Angeles, California.  He is best known for directing horror films and a 2016 superhero film.",
  );
  // "Ed Wood (film)" is a distractor: titles match exactly
  assert.deepEqual(a.supportIdx, [1, 3]);
  assert.deepEqual(a.meta, { source: "hotpotqa", file: "hotpotqa-tuple.json", line: 2, type: "comparison", level: "hard" });
  // repeated support titles count once
  assert.equal(b.answer, "Bucharest");
  assert.deepEqual(b.supportIdx, [0, 2]);
  assert.equal(b.meta?.line, lineOf(fs.readFileSync(TUPLE, "utf8"), '"_id": "5f0c2e9a5542990a1b2c3d4e"') - 1);
});

test("HotpotQA: tuple and columnar (HF, `id`) layouts give identical Samples", () => {
  const t = loadHotpotqa(TUPLE).samples;
  const c = loadHotpotqa(COLUMNAR).samples;
  assert.equal(c.length, t.length);
  for (let i = 0; i < t.length; i++) assert.deepEqual(content(c[i]), content(t[i]));
});

test("HotpotQA: JSON lines, mixed layouts per field, and the SampleSource", () => {
  withTmp((dir) => {
    const recs = JSON.parse(fs.readFileSync(TUPLE, "utf8")) as Record<string, unknown>[];
    const cols = JSON.parse(fs.readFileSync(COLUMNAR, "utf8")) as Record<string, unknown>[];
    // record 0: tuple support facts with columnar context
    const mixed = { ...recs[0], context: cols[0].context };
    const file = path.join(dir, "h.jsonl");
    fs.writeFileSync(file, `${JSON.stringify(mixed)}\n${JSON.stringify(recs[1])}\n`);
    const got = loadHotpotqa(file).samples;
    const want = loadHotpotqa(TUPLE).samples;
    assert.deepEqual(got.map(content), want.map(content));
    assert.deepEqual(got.map((s) => s.meta?.line), [1, 2]);
  });
  const src = hotpotqaSource({ file: TUPLE });
  assert.equal(src.size, 2);
  assert.equal(src.name, "hotpotqa:hotpotqa-tuple.json");
  assert.equal(src.sample(0).id, "5a8b57f25542995d1e6f1371");
  assert.throws(() => src.sample(2), RangeError);
  const shuffled = hotpotqaSource({ file: TUPLE, seed: 5 });
  assert.deepEqual(
    [shuffled.sample(0).id, shuffled.sample(1).id].sort(),
    [src.sample(0).id, src.sample(1).id].sort(),
  );
});

test("HotpotQA: malformed files are rejected with file:line and the field", () => {
  withTmp((dir) => {
    const text = fs.readFileSync(TUPLE, "utf8");
    const rec2Line = lineOf(text, '"_id": "5f0c2e9a5542990a1b2c3d4e"') - 1; // the "{" line
    const f = path.join(dir, "bad.json");

    // a support title that is a number (second record, second fact)
    fs.writeFileSync(f, text.replace('["Romania", 0]', "[7, 0]"));
    throwsAt(() => loadHotpotqa(f), f, rec2Line, /:\d+: supporting_facts\[1\]\[0\]: expected string, received number$/);

    // a sentence that is not a string (first record)
    fs.writeFileSync(f, text.replace('"He lives in Los Angeles, California."', "null").replace('" He lives in Los Angeles, California."', "null"));
    throwsAt(() => loadHotpotqa(f), f, 2, /context\[1\]\[1\]\[1\]: expected string, received null/);

    // missing question
    fs.writeFileSync(f, text.replace('"question": "What is the capital', '"q": "What is the capital'));
    throwsAt(() => loadHotpotqa(f), f, rec2Line, /question: missing \(expected string\)/);

    // neither _id nor id
    fs.writeFileSync(f, text.replace('"_id": "5f0c2e9a5542990a1b2c3d4e",', ""));
    throwsAt(() => loadHotpotqa(f), f, rec2Line, /_id: missing/);

    // support title not among the paragraphs: names the line, quotes nothing of the file
    fs.writeFileSync(f, text.replace('["Ed Wood", 0]', '["Ed Wood (director)", 0]'));
    throwsAt(() => loadHotpotqa(f), f, 2, /:2: a supporting_facts title is not among the context paragraphs$/);

    // columnar with mismatched lengths
    const col = fs.readFileSync(COLUMNAR, "utf8");
    fs.writeFileSync(f, col.replace(/"sent_id": \[\s*0,\s*0\s*\]/, '"sent_id": [0]'));
    throwsAt(() => loadHotpotqa(f), f, 2, /supporting_facts\.sent_id: title and sent_id have different lengths/);

    // negative sentence id
    fs.writeFileSync(f, text.replace('["Danube Delta", 1]', '["Danube Delta", -1]'));
    throwsAt(() => loadHotpotqa(f), f, rec2Line, /supporting_facts\[0\]\[1\]: /);

    // JSON syntax error: reported on the line of the error
    const broken = text.replace('"answer": "Bucharest",', '"answer": "Bucharest"');
    fs.writeFileSync(f, broken);
    throwsAt(() => loadHotpotqa(f), f, lineOf(broken, '"answer": "Bucharest"') + 1, /invalid JSON/);

    // truncated file
    fs.writeFileSync(f, text.slice(0, text.indexOf('"Volga Delta"')));
    throwsAt(() => loadHotpotqa(f), f, rec2Line, /unterminated/);

    // trailing comma, not an array, a record that is not an object, content after the array
    fs.writeFileSync(f, text.replace(/\}\s*\]\s*$/, "},\n]\n"));
    throwsAt(() => loadHotpotqa(f), f, lineOf(text, '"level": "medium"') + 2, /empty array element/);
    fs.writeFileSync(f, '"hello"');
    throwsAt(() => loadHotpotqa(f), f, 1, /expected a JSON array/);
    fs.writeFileSync(f, "[\n  42\n]");
    throwsAt(() => loadHotpotqa(f), f, 2, /expected a record object, got number/);
    fs.writeFileSync(f, text + "\n[]\n");
    throwsAt(() => loadHotpotqa(f), f, text.split("\n").length + 1, /unexpected content after the JSON array/);
    fs.writeFileSync(f, "[]");
    throwsAt(() => loadHotpotqa(f), f, undefined, /no usable HotpotQA records/);

    // missing file
    throwsAt(() => loadHotpotqa(path.join(dir, "nope.json")), path.join(dir, "nope.json"), undefined, /file not found/);
  });
});

test("MuSiQue: chunks, hop-order support, null support idx skipped", () => {
  const { samples, skipped } = loadMusique(MUSIQUE);
  assert.equal(samples.length, 2);
  assert.equal(skipped.length, 0);
  const [a, b] = samples;
  assert.equal(a.id, "2hop__104501_20211");
  assert.equal(a.answer, "1871");
  assert.equal(a.chunks.length, 4);
  assert.equal(a.chunks.at(2), "The Lantern Review. The Lantern Review is a quarterly literary magazine. It has been published by Harrow State University since 1952.");
  assert.deepEqual(a.supportIdx, [0, 2]);
  assert.equal(a.meta?.supportHops, "2,0"); // hop order
  assert.equal(a.meta?.line, 1);
  assert.equal(b.id, "2hop__55012_7730");
  assert.deepEqual(b.supportIdx, [1]); // the null hop is skipped
  assert.equal(b.meta?.supportHops, "1");
  assert.equal(b.meta?.line, 2);
  const src = musiqueSource({ file: MUSIQUE, seed: 1 });
  assert.equal(src.size, 2);
  assert.deepEqual([src.sample(0).id, src.sample(1).id].sort(), [a.id, b.id].sort());
});

test("MuSiQue: malformed lines are rejected with file:line and the field; unsupported records skipped", () => {
  withTmp((dir) => {
    const lines = fs.readFileSync(MUSIQUE, "utf8").trimEnd().split("\n");
    const f = path.join(dir, "bad.jsonl");
    const rec = (i: number) => JSON.parse(lines[i]) as Record<string, unknown> & { question_decomposition: Record<string, unknown>[]; paragraphs: Record<string, unknown>[] };

    const r1 = rec(1);
    r1.question_decomposition[1].paragraph_support_idx = "1";
    fs.writeFileSync(f, [lines[0], "", JSON.stringify(r1)].join("\n"));
    throwsAt(() => loadMusique(f), f, 3, /:3: question_decomposition\[1\]\.paragraph_support_idx: expected number, received string$/);

    const r2 = rec(1);
    r2.question_decomposition[1].paragraph_support_idx = 9;
    fs.writeFileSync(f, [lines[0], JSON.stringify(r2)].join("\n"));
    throwsAt(() => loadMusique(f), f, 2, /question_decomposition\[1\]\.paragraph_support_idx: out of range \(4 paragraphs\)/);

    const r3 = rec(0);
    delete r3.paragraphs[2].paragraph_text;
    fs.writeFileSync(f, JSON.stringify(r3) + "\n");
    throwsAt(() => loadMusique(f), f, 1, /paragraphs\[2\]\.paragraph_text: missing \(expected string\)/);

    fs.writeFileSync(f, `${lines[0]}\n${lines[1].slice(0, 40)}\n`);
    throwsAt(() => loadMusique(f), f, 2, /invalid JSON/);

    const r4 = rec(1);
    r4.question_decomposition[1].paragraph_support_idx = null;
    fs.writeFileSync(f, [lines[0], JSON.stringify(r4)].join("\r\n") + "\r\n");
    const { samples, skipped } = loadMusique(f);
    assert.equal(samples.length, 1);
    assert.deepEqual(skipped, [{ line: 2, id: "2hop__55012_7730", reason: "no question_decomposition hop has a paragraph_support_idx" }]);
    fs.writeFileSync(f, JSON.stringify(r4) + "\n");
    throwsAt(() => loadMusique(f), f, undefined, /no usable MuSiQue records/);
  });
});
