/**
 * The playground's API on a real server (no Next) with a tiny run trained into its data folder:
 * every bound answers 400 naming its field before any engine process starts; a run answers the
 * episode the engine's own greedy evaluation gives for the same text (picks and Q-values), from a
 * forked engine process that stays warm; nothing is stored until "save", which stores it under
 * the run (phase "playground") with its chunks. The pool's own bounds: one process per
 * checkpoint, an idle one ended for another checkpoint, a request over its time killed (504).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { EpisodeChunksDto, EpisodeDto, PlaygroundResultDto, PlaygroundSampleDto, PlaygroundSavedDto } from "../lib/contracts/index.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { playgroundInput } from "../server/qrag/index.ts";
import { loadAgent } from "../server/qrag/evaluation/evaluate.ts";
import { greedyEpisode } from "../server/qrag/agent/greedy.ts";
import { evalOptions } from "../server/qrag/training/eval.ts";
import { playgroundEpisodeSample } from "../server/qrag/evaluation/playground-agent.ts";
import { createPlaygroundPool, PlaygroundError } from "../server/playground/pool.ts";
import fs from "node:fs";
import { tmpDir } from "./platform-helpers.ts";
import { tinyRunInto } from "./playground-helpers.ts";
import { openDb } from "../server/db/client.ts";

const RUN = "pg-run";
let server: RunningServer;
let dataDir: string;
let ckpt: Awaited<ReturnType<typeof tinyRunInto>>;

before(async () => {
  dataDir = tmpDir("qrag-playground-");
  server = await startServer({ port: 0, dataDir, spawnWorker: false, next: false, log: () => {} });
  ckpt = await tinyRunInto(dataDir, server.databaseUrl, RUN);
});
after(() => server?.close());

async function call<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : { "content-type": "application/json" } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}
/** This process's playground engine processes (the server runs in it). */
const playgroundChildren = () =>
  fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === process.pid && fs.readFileSync(`/proc/${d}/cmdline`, "utf8").includes("engine-child");
    } catch {
      return false;
    }
  });
type Bad = { error: string; fieldErrors?: Record<string, string> };
const play = (body: unknown) => call<PlaygroundResultDto & Bad>("POST", `/api/runs/${RUN}/playground`, body);

describe("playground API", () => {
  test("bounds: each answers 400 naming its field, short, and no engine process starts", async () => {
    const doc = "Mary went to the kitchen. John took the apple.";
    const cases: [string, unknown][] = [
      ["document", { document: "x".repeat(200_001), question: "q?" }],
      ["document", { document: "é".repeat(100_001), question: "q?" }], // 200,002 bytes in 100,001 characters
      ["document", { document: "   \n ", question: "q?" }],
      ["document", { document: "Go. ".repeat(5_001), question: "q?" }], // 5,001 sentences
      ["document", { document: " 7".repeat(60_000), question: "q?" }], // 60,000 tokens in 120 KB
      ["question", { document: doc, question: "q".repeat(1_025) }],
      ["question", { document: doc, question: "" }],
      ["gold", { document: doc, question: "q?", gold: Array(21).fill("Mary went to the kitchen.") }],
      ["gold.0", { document: doc, question: "q?", gold: ["g".repeat(2_001)] }],
      ["threshold", { document: doc, question: "q?", threshold: 2 }],
      ["checkpoint", { document: doc, question: "q?", checkpoint: "../../etc" }],
      ["extra", { document: doc, question: "q?", extra: 1 }],
    ];
    for (const [field, body] of cases) {
      const r = await play(body);
      assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.body).slice(0, 200)}`);
      assert.ok(r.body.fieldErrors && field in r.body.fieldErrors, `${field} named: ${JSON.stringify(r.body.fieldErrors)}`);
      assert.ok(JSON.stringify(r.body).length < 400, "the error does not echo the input");
    }
    const none = await call<Bad>("POST", `/api/runs/no-such-run/playground`, { document: doc, question: "q?" });
    assert.equal(none.status, 404);
    assert.equal(await call("GET", `/api/runs/${RUN}/playground/sample?index=100001`).then((r) => r.status), 400);
    // a sample past the chunk bound is refused before its text is built
    const db = await openDb(server.databaseUrl);
    try {
      const big = { ...ckpt.config, envs: { ...ckpt.config.envs, test_env: { ...ckpt.config.envs.test_env, num_sentences: 6_000 } } };
      await db.prisma.run.create({ data: { id: "pg-big", name: "big", status: "completed", config: JSON.stringify(big), envName: "babilong", task: "qa1" } });
    } finally {
      await db.close();
    }
    const bigSample = await call<Bad>("GET", "/api/runs/pg-big/playground/sample?index=0");
    assert.equal(bigSample.status, 409);
    assert.match(bigSample.body.error, /more than the 5000 chunks/);
    assert.deepEqual(playgroundChildren(), [], "no engine process was started for a refused request");
  });

  test("a run answers the engine's greedy episode for the same text; warm the second time; nothing is stored", async () => {
    const sample = await call<PlaygroundSampleDto>("GET", `/api/runs/${RUN}/playground/sample?index=3`);
    assert.equal(sample.status, 200);
    assert.equal(sample.body.document.split("\n").length, ckpt.config.envs.test_env?.num_sentences ?? 20);
    const body = { checkpoint: "best", document: `${sample.body.document}\nAn extra sentence the user added.`, question: sample.body.question, answer: sample.body.answer, gold: sample.body.gold };
    const cold = await play(body);
    assert.equal(cold.status, 200, JSON.stringify(cold.body).slice(0, 300));
    const warm = await play(body);
    assert.equal(warm.status, 200);
    assert.equal(cold.body.warm, false);
    assert.equal(warm.body.warm, true);

    // the same episode in this process, from the same checkpoint
    const input = playgroundInput(body);
    const { nets, config, alpha } = await loadAgent(ckpt.best);
    let want;
    try {
      want = await greedyEpisode(nets, playgroundEpisodeSample(input), evalOptions(config, { neverTerminate: true, threshold: 0.5, alpha, leaveOneOut: true }));
    } finally {
      nets.dispose();
    }
    for (const got of [cold.body.record, warm.body.record]) {
      assert.deepEqual(got.pred_idx, want.pred_idx);
      assert.equal(got.steps.length, config.envs.max_steps);
      got.q_values.forEach((q, i) => assert.ok(Math.abs(q - want.q_values[i]) < 1e-5, `Q of step ${i + 1}: ${q} vs ${want.q_values[i]}`));
      got.steps.forEach((s, i) => assert.ok(s.v !== undefined && Math.abs(s.v - want.steps[i].v!) < 1e-5, `soft value of step ${i + 1}`));
      assert.deepEqual(got.chunks, input.chunks);
      assert.equal(got.num_chunks, input.chunks.length);
    }
    assert.deepEqual(want.sf_idx, input.supportIdx);
    assert.ok(input.supportIdx.length >= 1, "the sample's gold facts are found in the edited text");
    assert.equal(warm.body.checkpoint.name, "best");
    assert.ok(warm.body.ms.engine > 0 && warm.body.ms.total >= warm.body.ms.engine);
    const stored = await call<EpisodeDto[]>("GET", `/api/runs/${RUN}/episodes?phase=playground`);
    assert.deepEqual(stored.body, [], "running stores nothing");
  });

  test("save stores the episode under the run, with its chunks served to the replay", async () => {
    const doc = "The cat sat on the mat. Mary went to the kitchen. John took the apple there. The sun set.";
    const saved = await call<PlaygroundSavedDto & Bad>("POST", `/api/runs/${RUN}/playground/episodes`, { document: doc, question: "Where is Mary?", gold: ["Mary went to the kitchen."] });
    assert.equal(saved.status, 201, JSON.stringify(saved.body));
    const list = await call<EpisodeDto[]>("GET", `/api/runs/${RUN}/episodes?phase=playground`);
    assert.deepEqual(list.body.map((e) => e.id), [saved.body.episodeId]);
    assert.equal(list.body[0].numChunks, 4);
    const ep = await call<EpisodeDto>("GET", `/api/runs/${RUN}/episodes/${saved.body.episodeId}`);
    assert.equal(ep.body.record?.question, "Where is Mary?");
    assert.deepEqual(ep.body.record?.sf_idx, [1]);
    const chunks = await call<EpisodeChunksDto>("GET", `/api/runs/${RUN}/episodes/${saved.body.episodeId}/chunks?from=0&to=4`);
    assert.equal(chunks.status, 200);
    assert.deepEqual(chunks.body.texts, ["The cat sat on the mat.", "Mary went to the kitchen.", "John took the apple there.", "The sun set."]);
  });
});

describe("playground engine processes", () => {
  test("one process per checkpoint: an idle one makes room, a request over its time is killed (504)", async () => {
    const input = playgroundInput({ document: "Mary went to the kitchen. John took the apple.", question: "Where is Mary?" });
    const pool = createPlaygroundPool({ dataRoot: dataDir, maxProcesses: 1, idleMs: 60_000 });
    try {
      const a = await pool.run(ckpt.best, input);
      assert.equal(a.warm, false);
      assert.equal((await pool.run(ckpt.best, input)).warm, true);
      assert.equal(pool.size(), 1);
      const b = await pool.run(ckpt.last, input);
      assert.equal(b.warm, false, "another checkpoint: a fresh process in the one slot");
      assert.equal(pool.size(), 1);
    } finally {
      await pool.close();
    }
    const slow = createPlaygroundPool({ dataRoot: dataDir, timeoutMs: 50 });
    try {
      await assert.rejects(slow.run(ckpt.best, input), (e: unknown) => e instanceof PlaygroundError && e.status === 504);
      assert.equal(slow.size(), 0, "the timed-out process is gone");
    } finally {
      await slow.close();
    }
  });
});
