/**
 * GET /api/runs/:id/episodes/:episodeId/chunks on a real server and SQLite file: the haystack of a
 * real engine-produced episode (greedy evaluation of an untrained tiny model, in-training eval
 * and sweep-length samples) is regenerated from the run's stored config, so the texts at the
 * record's picks and gold facts equal the record's own; the range is bounded; episodes whose
 * haystack cannot be regenerated answer 404 without quoting any chunk text. Also: greedy steps
 * record the soft value and α, and records without them still parse.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { episodeRecordSchema, MAX_CHUNK_RANGE, type EpisodeChunksDto, type EpisodeRecord } from "../lib/contracts/index.ts";
import { getDb } from "../server/db/client.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { resolveConfig, validateConfig, type RunConfig } from "../server/qrag/index.ts";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { greedyEpisode } from "../server/qrag/agent/greedy.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { evalOptions } from "../server/qrag/training/train.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { tmpDir } from "./platform-helpers.ts";

let server: RunningServer;
const config = resolveConfig({ preset: "tiny" });
/** Real greedy episodes of an untrained model: an in-training-eval sample and a 300-chunk (sweep) one. */
let evalRecord: EpisodeRecord;
let sweepRecord: EpisodeRecord;
let runId = "";
let evalId = 0;
let sweepId = 0;
let seq = 0;

async function addRun(id: string, cfg: unknown, extra: { sweepOf?: string; kind?: string } = {}): Promise<string> {
  const h = await getDb();
  await h.write((db) => db.run.create({ data: { id, name: id, config: JSON.stringify(cfg), envName: "babilong", task: "qa1", ...extra } }));
  return id;
}

async function addEpisode(run: string, record: EpisodeRecord | Record<string, unknown>, phase = "eval", numChunks = 0): Promise<number> {
  const h = await getDb();
  const row = await h.write((db) =>
    db.episode.create({
      data: { runId: run, seq: ++seq, phase, step: 0, update: seq, sampleId: String(record.id), numChunks, coverage: 0, f1: 0, return: 0, record: JSON.stringify(record) },
    }),
  );
  return row.id;
}

async function chunks(run: string, ep: number, query: string): Promise<{ status: number; body: EpisodeChunksDto & { error?: string; fieldErrors?: Record<string, string> } }> {
  const res = await fetch(`${server.url}/api/runs/${run}/episodes/${ep}/chunks?${query}`);
  return { status: res.status, body: (await res.json()) as EpisodeChunksDto & { error?: string; fieldErrors?: Record<string, string> } };
}

before(async () => {
  server = await startServer({ port: 0, dataDir: tmpDir("qrag-chunks-"), spawnWorker: false, next: false, log: () => {} });
  await pickBackend("cpu");
  const nets = new QNetworks(config.algo.encoder, new Rng(7));
  try {
    const opts = { ...evalOptions(config), episode: { ...evalOptions(config).episode, feedback: { ...evalOptions(config).episode.feedback, neverTerminate: true } } };
    evalRecord = await greedyEpisode(nets, buildSource(config, "test").sample(5), opts);
    sweepRecord = await greedyEpisode(nets, buildSource(config, "test", 300).sample(2), opts);
  } finally {
    nets.dispose();
  }
  runId = await addRun("chunks-run", config);
  evalId = await addEpisode(runId, evalRecord);
  sweepId = await addEpisode(runId, sweepRecord, "sweep", 300);
});
after(() => server?.close());

test("greedy steps record the soft value V(s) and α; records without them still parse", () => {
  assert.ok(evalRecord.steps.length >= 2);
  for (const s of evalRecord.steps) {
    assert.equal(s.alpha, config.algo.hyperparams.alpha);
    assert.ok(Number.isFinite(s.v), "V(s) recorded");
    assert.ok(s.topk.length >= 5, "at least 5 candidates logged on a 20-chunk haystack");
  }
  const old = { ...evalRecord, steps: evalRecord.steps.map(({ v: _v, alpha: _a, ...rest }) => rest) };
  assert.ok(episodeRecordSchema.safeParse(old).success);
});

test("regenerated texts equal the record's picks and gold facts (in-training eval episode)", async () => {
  const n = evalRecord.num_chunks;
  const r = await chunks(runId, evalId, `from=0&to=${n}`);
  assert.equal(r.status, 200, r.body.error);
  assert.deepEqual([r.body.numChunks, r.body.from, r.body.to, r.body.texts.length], [n, 0, n, n]);
  evalRecord.pred_idx.forEach((idx, k) => assert.equal(r.body.texts[idx], evalRecord.pred_texts[k], `pick ${k} (#${idx})`));
  evalRecord.sf_idx.forEach((idx, k) => assert.equal(r.body.texts[idx], evalRecord.sf_texts[k], `gold ${k} (#${idx})`));
  const part = await chunks(runId, evalId, `from=3&to=7`);
  assert.deepEqual(part.body.texts, r.body.texts.slice(3, 7), "a sub-range is the same slice");
});

test("a sweep-length episode (300 chunks) regenerates in bounded pieces", async () => {
  assert.equal(sweepRecord.num_chunks, 300);
  const a = await chunks(runId, sweepId, `from=0&to=${MAX_CHUNK_RANGE}`);
  const b = await chunks(runId, sweepId, `from=${MAX_CHUNK_RANGE}&to=300`);
  assert.equal(a.status, 200, a.body.error);
  assert.equal(b.status, 200, b.body.error);
  const texts = [...a.body.texts, ...b.body.texts];
  assert.equal(texts.length, 300);
  sweepRecord.pred_idx.forEach((idx, k) => assert.equal(texts[idx], sweepRecord.pred_texts[k], `pick ${k} (#${idx})`));
  sweepRecord.sf_idx.forEach((idx, k) => assert.equal(texts[idx], sweepRecord.sf_texts[k], `gold ${k} (#${idx})`));
});

test("ranges are bounded: too long, empty, reversed, past the haystack, malformed → 400", async () => {
  const bad = async (q: string, field: string) => {
    const r = await chunks(runId, sweepId, q);
    assert.equal(r.status, 400, `${q} → ${r.status}`);
    assert.ok(r.body.fieldErrors && field in r.body.fieldErrors, `${q}: names ${field} (${JSON.stringify(r.body.fieldErrors)})`);
  };
  await bad(`from=0&to=${MAX_CHUNK_RANGE + 1}`, "to");
  await bad("from=5&to=5", "to");
  await bad("from=9&to=2", "to");
  await bad("from=250&to=301", "to");
  await bad("from=-1&to=3", "from");
  await bad("from=1.5&to=3", "from");
  await bad("to=3", "from");
  await bad("from=0&to=3&all=1", "all");
});

test("404s: unknown episode, another run's episode, file-backed datasets, ids that locate no sample, changed haystacks", async () => {
  const missing = await chunks(runId, 999_999, "from=0&to=1");
  assert.equal(missing.status, 404);
  assert.match(missing.body.error!, /episode 999999 of run chunks-run not found/);
  const other = await addRun("chunks-other", config);
  assert.equal((await chunks(other, evalId, "from=0&to=1")).status, 404, "an episode is found only under its own run");

  const hotpot = validateConfig({ ...config, envs: { name: "hotpotqa", train_path: "/nowhere/train.json", eval_path: "/nowhere/dev.json", max_steps: 4, positions_processor: "relative", sort_by_index: true } });
  const hp = await addRun("chunks-hotpot", hotpot);
  const files = await chunks(hp, await addEpisode(hp, { ...evalRecord, id: "5a8b57f25542995d1e6f1371" }), "from=0&to=1");
  assert.equal(files.status, 404);
  assert.match(files.body.error!, /chunk texts unavailable: .*hotpotqa.*cannot be regenerated/);

  const noId = await chunks(runId, await addEpisode(runId, { ...evalRecord, id: "uploaded-sample" }), "from=0&to=1");
  assert.equal(noId.status, 404);
  assert.match(noId.body.error!, /does not name a split and index/);

  // same id and size, but the gold text differs from what the config regenerates
  const secret = "SECRET chunk text that must not be echoed";
  const changed = await chunks(runId, await addEpisode(runId, { ...evalRecord, sf_texts: evalRecord.sf_texts.map(() => secret) }), "from=0&to=1");
  assert.equal(changed.status, 404);
  assert.match(changed.body.error!, /differs from the episode's/);
  assert.ok(!changed.body.error!.includes("SECRET"), "the error quotes no chunk text");

  const seeded: RunConfig = { ...config, seed: config.seed + 1 };
  const reseeded = await addRun("chunks-reseeded", seeded);
  const r = await chunks(reseeded, await addEpisode(reseeded, evalRecord), "from=0&to=1");
  assert.equal(r.status, 404, "another seed makes another haystack: refused, not served wrong");
});

test("a sweep job's episodes regenerate from the run it sweeps when its own config is not an engine config", async () => {
  const sw = await addRun("chunks-sweep-job", { lengths: [300] }, { kind: "sweep", sweepOf: runId });
  const ep = await addEpisode(sw, sweepRecord, "sweep", 300);
  const r = await chunks(sw, ep, "from=0&to=10");
  assert.equal(r.status, 200, r.body.error);
  assert.equal(r.body.texts.length, 10);
});
