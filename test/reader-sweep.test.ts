/**
 * The reader in a real sweep of a tiny trained checkpoint: with a stub whose answers are known (the
 * accuracy arithmetic, failures counted, the records' order), with the tiny GGUF model from the
 * data root (real llama.cpp answers in the records and the summary; a model path outside the root
 * refused before the checkpoint loads), and `qrag sweep --reader openai:…` as a child process
 * against a local endpoint with the key in its environment: the key in none of its outputs.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { train } from "../server/qrag/training/train.ts";
import { sweep } from "../server/qrag/evaluation/sweep.ts";
import { evalOfficial, formatOfficialResult } from "../server/qrag/evaluation/official.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { wilsonInterval } from "../lib/contracts/intervals.ts";
import { episodeRecordSchema, sweepPointSchema, type EngineEvent, type EpisodeRecord } from "../lib/contracts/engine-events.ts";
import { ReaderCallError, type Reader } from "../server/qrag/reader/reader.ts";
import { babilongExactMatch } from "../server/qrag/reader/scoring.ts";
import { writeTinyGguf } from "../server/qrag/reader/tiny-gguf.ts";
import { startFakeOpenAi } from "./openai-fake-server.ts";

const KEY = "sk-sweep-Secret-91b2c3d4";
let tmp: string, root: string, runDir: string;
const config = resolveConfig({ preset: "tiny" });

const lines = (f: string) => fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-reader-sweep-"));
  root = path.join(tmp, "data");
  fs.mkdirSync(path.join(root, "models"), { recursive: true });
  writeTinyGguf(path.join(root, "models", "tiny.gguf"));
  runDir = (await train(config, { runDir: path.join(tmp, "run") })).runDir;
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test("a stub reader with known answers: per-record scores, accuracy and its Wilson interval, failures counted", async () => {
  const golds = Array.from({ length: 8 }, (_, i) => buildSource(config, "test", 20).sample(i).answer);
  let k = 0;
  const stub: Reader = {
    model: "stub",
    async answer() {
      const i = k++;
      if (i % 3 === 0) throw new ReaderCallError("timeout", "stub timed out");
      return { text: i % 3 === 1 ? `The most recent location is ${golds[i]}.` : "nowhere", promptTokens: 10, completionTokens: 3, ms: 2 };
    },
  };
  const events: EngineEvent[] = [];
  const epFile = path.join(tmp, "stub-episodes.jsonl");
  const [p] = await sweep({ checkpoint: runDir, lengths: [20], samples: 8, threshold: 0.2, baselines: false, reader: stub, episodesFile: epFile, emitEpisodes: true, onEvent: (e) => events.push(e) });
  const eps = lines(epFile).map((l) => episodeRecordSchema.parse(l));
  assert.deepEqual(eps.map((e) => e.answer), golds, "records in episode order");
  assert.deepEqual(eps.map((e) => e.reader!.correct), [0, 1, 0, 0, 1, 0, 0, 1]);
  assert.deepEqual(eps.map((e) => e.reader!.failure?.kind ?? null), ["timeout", null, null, "timeout", null, null, "timeout", null]);
  assert.ok(eps.every((e) => e.reader!.prompt.includes(`Question: ${e.question.trim()}`)));
  const r = sweepPointSchema.parse(p).reader!;
  assert.deepEqual({ n: r.n, correct: r.correct, accuracy: r.accuracy, failures: r.failures, kinds: r.failureKinds }, { n: 8, correct: 3, accuracy: 3 / 8, failures: 3, kinds: { timeout: 3 } });
  assert.deepEqual(r.ci, wilsonInterval(3, 8));
  const emitted = events.filter((e): e is Extract<EngineEvent, { type: "episode" }> => e.type === "episode").map((e) => e.record.reader?.correct);
  assert.deepEqual(emitted, [0, 1, 0, 0, 1, 0, 0, 1]);
  const start = events.find((e) => e.type === "run_start");
  assert.equal((start?.meta.config as { reader?: string }).reader, "stub", "the run config names the reader's model only");
  // a fatal reader error stops the sweep with its message
  const down: Reader = { model: "stub", answer: () => Promise.reject(new ReaderCallError("connection", "reader endpoint x unreachable", true)) };
  await assert.rejects(sweep({ checkpoint: runDir, lengths: [20], samples: 2, baselines: false, reader: down }), /unreachable/);
});

test("eval-official with a reader: each length's llmReader beside the rule-based reader, failures counted", async () => {
  let k = 0;
  const stub: Reader = {
    model: "stub",
    async answer(i) {
      if (k++ % 2 === 0) throw new ReaderCallError("unparseable", "stub said nothing");
      return { text: `Answer: ${i.chunks.at(-1)?.split(" ").at(-1) ?? "none"}`, promptTokens: 5, completionTokens: 1, ms: 1 };
    },
  };
  const root = path.resolve(import.meta.dirname, "fixtures/babilong-official");
  const files = fs.readdirSync(path.join(root, "qa1")).filter((f) => f.endsWith(".jsonl")).map((f) => `qa1/${f}`);
  const res = await evalOfficial({ checkpoint: runDir, files, dataRoot: root, reader: stub });
  const total = res.reduce((a, r) => a + r.samples, 0);
  assert.ok(total >= 2, `${total} samples`);
  assert.equal(k, total, "one reader call per sample");
  assert.equal(res.reduce((a, r) => a + r.llmReader!.failures, 0), Math.ceil(total / 2));
  for (const r of res) {
    const m = r.llmReader!;
    assert.equal(m.n, r.samples);
    assert.equal(m.accuracy, m.correct / m.n);
    assert.deepEqual(m.ci, wilsonInterval(m.correct, m.n));
    assert.equal(r.reader.name.startsWith("rule-based"), true, "the rule-based reader is still reported");
    assert.match(formatOfficialResult(r), /\| stub \d\.\d{3} \[/);
  }
});

test("the tiny GGUF model from the data root: real answers in the records, accuracy in the point", async () => {
  const epFile = path.join(tmp, "gguf-episodes.jsonl");
  const t0 = performance.now();
  const [p] = await sweep({ checkpoint: runDir, lengths: [20], samples: 3, threshold: 0.2, baselines: false, dataRoot: root, reader: { spec: "gguf:models/tiny.gguf", threads: 1 }, episodesFile: epFile });
  const eps = lines(epFile) as unknown as EpisodeRecord[];
  const r = p.reader!;
  console.log(`3 episodes with the reader in ${(performance.now() - t0).toFixed(0)} ms; ${r.msPerAnswer.toFixed(0)} ms/answer, ${r.promptTokens.toFixed(0)} prompt + ${r.completionTokens.toFixed(1)} completion tokens; accuracy ${r.accuracy}`);
  assert.equal(r.model, "gguf:models/tiny.gguf");
  assert.equal(r.n, 3);
  assert.equal(r.failures, 0);
  for (const e of eps) {
    assert.ok(e.reader!.answer.length > 0 && e.reader!.tokens.completion > 0 && e.reader!.ms > 0);
    assert.equal(e.reader!.correct, babilongExactMatch(e.reader!.answer, e.answer));
  }
  assert.equal(r.correct, eps.reduce((a, e) => a + e.reader!.correct, 0));
  // a reader timeout is each sample's counted failure, and the sweep still completes
  const [late] = await sweep({ checkpoint: runDir, lengths: [20], samples: 2, baselines: false, dataRoot: root, reader: { spec: "llama:models/tiny.gguf", threads: 1, timeoutMs: 1 } });
  assert.deepEqual([late.reader!.n, late.reader!.failures, late.reader!.failureKinds, late.reader!.accuracy], [2, 2, { timeout: 2 }, 0]);
  // outside the data root: refused before anything loads, naming the flag and the root
  writeTinyGguf(path.join(tmp, "outside.gguf"));
  fs.symlinkSync(path.join(tmp, "outside.gguf"), path.join(root, "models", "link.gguf"));
  for (const spec of ["gguf:../outside.gguf", "gguf:models/link.gguf", "gguf:/etc/passwd"]) {
    await assert.rejects(sweep({ checkpoint: path.join(tmp, "no-such-run"), lengths: [20], samples: 1, dataRoot: root, reader: { spec } }), /--reader: must be inside the data root/);
  }
});

test("qrag sweep --reader openai:… as a process: the accuracy in --out, answers in --episodes, the key nowhere", async () => {
  const server = await startFakeOpenAi(path.join(root, "models", "tiny.gguf"), { key: KEY });
  try {
    const out = path.join(tmp, "cli-points.jsonl"), eps = path.join(tmp, "cli-episodes.jsonl");
    const args = ["--import", "tsx", "server/qrag/cli.ts", "sweep", runDir, "--lengths", "20", "--samples", "2", "--threshold", "0.2", "--data-root", root,
      "--reader", "openai:tiny", "--reader-url", server.url, "--reader-stream", "--out", out, "--episodes", eps];
    const child = spawn(process.execPath, args, { env: { ...process.env, QRAG_READER_API_KEY: KEY, NO_COLOR: "1" } });
    let stdout = "", stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, stderr);
    const [point] = lines(out);
    const reader = sweepPointSchema.parse(point).reader!;
    assert.equal(reader.n, 2);
    assert.equal(reader.model, `openai:tiny@${server.url.slice("http://".length)}`);
    assert.match(stderr, /reader acc \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] 0 failed/);
    assert.ok(lines(eps).every((e) => typeof (e.reader as { answer?: unknown }).answer === "string"));
    assert.ok(server.requests.every((r) => r.auth === `Bearer ${KEY}`), "the key went where it belongs");
    for (const [name, text] of [["stdout", stdout], ["stderr", stderr], ["--out", fs.readFileSync(out, "utf8")], ["--episodes", fs.readFileSync(eps, "utf8")]]) {
      assert.ok(!text.includes(KEY) && !text.includes("Secret-91b2"), `the key is in ${name}`);
    }
    // the endpoint refusing the key: exit 2, one line, the key not quoted back
    const bad = spawn(process.execPath, args, { env: { ...process.env, QRAG_READER_API_KEY: "sk-wrong-Secret-91b2c3d4" } });
    let badErr = "";
    bad.stderr.on("data", (d: Buffer) => (badErr += d.toString()));
    assert.equal(await new Promise((resolve) => bad.on("close", resolve)), 2);
    assert.match(badErr, /qrag: reader endpoint 127\.0\.0\.1:\d+\/v1 refused the key \(401\); set QRAG_READER_API_KEY\n$/);
    assert.doesNotMatch(badErr, /\n\s+at /, "one line, no stack");
    assert.ok(!badErr.includes("Secret-91b2"), badErr);
  } finally {
    await server.close();
  }
});
