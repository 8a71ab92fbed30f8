/**
 * The REST API as the dashboard serves it (server/api/router.ts inside server/main.ts, no Next):
 * routing, 404/405/413, the launch form's live check (POST /api/runs/validate) and the schema the
 * form is drawn from, on a real server with a temporary SQLite file.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import YAML from "yaml";
import type { ConfigSchemaDto, EngineEvent, EpisodeRecord, RunDetailDto, ValidatedConfigDto } from "../lib/contracts/index.ts";
import { MAX_BODY_BYTES } from "../server/api/router.ts";
import { getDb } from "../server/db/client.ts";
import { ingestBatch } from "../server/runs/ingest.ts";
import { claimRun } from "../server/runs/scheduler.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { tmpDir } from "./platform-helpers.ts";
import { readEvents } from "./tfevents-reader.ts";
import tar from "tar-stream";

let server: RunningServer;

before(async () => {
  server = await startServer({ port: 0, dataDir: tmpDir("qrag-api-"), spawnWorker: false, next: false, log: () => {} });
});
after(() => server?.close());

async function call<T>(method: string, path: string, body?: string): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(`${server.url}${path}`, { method, body, headers: method === "GET" ? {} : { "content-type": "application/json" } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

test("routes: unknown paths 404, wrong methods 405 with Allow, path parameters decoded", async () => {
  assert.equal((await call("GET", "/api/health")).status, 200);
  const nope = await call<{ error: string }>("GET", "/api/nope");
  assert.equal(nope.status, 404);
  assert.match(nope.body.error, /no API route \/api\/nope/);
  const long = await call<{ error: string }>("GET", `/api/${"x".repeat(4000)}`);
  assert.equal(long.status, 404);
  assert.ok(long.body.error.length < 100, `the path is clipped in the error: ${long.body.error.length} characters`);
  const put = await call<{ error: string }>("PUT", "/api/runs");
  assert.equal(put.status, 405);
  assert.equal(put.headers.get("allow"), "GET, POST");
  const missing = await call<{ error: string }>("GET", `/api/runs/${encodeURIComponent("no-such-run")}`);
  assert.equal(missing.status, 404);
  assert.match(missing.body.error, /run no-such-run not found/);
  assert.equal((await call("GET", "/api/runs/bad%20id")).status, 400, "a decoded id that fails the contract is a 400");
});

const runCount = async () => (await call<{ total: number }>("GET", "/api/runs?limit=1")).body.total;

test("a body over the limit is refused with 413 before it is read", async () => {
  const before = await runCount();
  const big = JSON.stringify({ notes: "x".repeat(MAX_BODY_BYTES) });
  const r = await call<{ error: string }>("POST", "/api/runs", big);
  assert.equal(r.status, 413);
  assert.match(r.body.error, /request body over/);
  assert.equal(await runCount(), before, "nothing was created");
});

test("the form's live check answers the engine's verdict per field, and writes nothing", async () => {
  const tiny = resolveConfig({ preset: "tiny" });
  const before = await runCount();
  const ok = await call<ValidatedConfigDto>("POST", "/api/runs/validate", JSON.stringify({ config: tiny }));
  assert.equal(ok.status, 200);
  assert.ok(ok.body.ok);
  assert.deepEqual(ok.body.config, tiny);
  const bad = await call<ValidatedConfigDto>("POST", "/api/runs/validate", JSON.stringify({ config: { ...tiny, steps_count: "many", envs: { ...tiny.envs, task: "qa9" } } }));
  assert.equal(bad.status, 200);
  assert.ok(!bad.body.ok);
  if (!bad.body.ok) {
    assert.equal(bad.body.fieldErrors["config.steps_count"], "must be a number");
    assert.match(bad.body.fieldErrors["config.envs.task"], /expected qa1\.\.qa5/);
  }
  const malformed = await call<{ fieldErrors: Record<string, string> }>("POST", "/api/runs/validate", JSON.stringify({ config: tiny, extra: 1 }));
  assert.equal(malformed.status, 400, "a malformed request is still a 400");
  assert.ok("extra" in malformed.body.fieldErrors);
  assert.equal(await runCount(), before, "checking writes nothing");
  const created = await call<RunDetailDto>("POST", "/api/runs", JSON.stringify({ config: tiny, name: "api-router" }));
  assert.equal(created.status, 201);
  assert.deepEqual(created.body.config, ok.body.config, "validate and create run the same pipeline");
});

test("the schema endpoint serves the run config's JSON Schema with descriptions", async () => {
  const r = await call<ConfigSchemaDto>("GET", "/api/schema");
  assert.equal(r.status, 200);
  assert.equal(r.body.schema.type, "object");
  assert.equal(r.body.schema.properties?.steps_count?.description, "optimizer steps");
  assert.ok(r.body.schema.required?.includes("envs"));
  assert.equal(r.body.schema.properties?.envs?.oneOf?.length, 4, "one option per registered dataset");
});

test("export: metrics as CSV and JSON, episodes as JSONL, the config as YAML, all as stored", async () => {
  const tiny = resolveConfig({ preset: "tiny" });
  const run = (await call<RunDetailDto>("POST", "/api/runs", JSON.stringify({ config: tiny, name: "export me/1" }))).body;
  const h = await getDb();
  assert.ok(await claimRun(h, run.id, "w-export", 60_000));
  const metric = (key: "qf_loss" | "lr", step: number, value: number): EngineEvent => ({ type: "metric", key, step, update: step / 40, value, wall: step / 100 });
  const record = (id: string, q: number[]): EpisodeRecord => ({
    id, question: "Where is Mary?", answer: "garden", sf_idx: [2], pred_idx: [2, 5], q_values: q, sf_texts: ["Mary went to the garden."], pred_texts: ["Mary went to the garden.", "noise"],
    return: 1, num_chunks: 10, oracle_stop: true, metrics: { precision: 0.5, recall: 1, f1: 2 / 3, coverage: 1 },
    filtered: { precision: 1, recall: 1, f1: 1, coverage: 1, threshold: 0.5, kept: 1 }, steps: [],
  });
  const events: EngineEvent[] = [
    metric("qf_loss", 40, 0.5), metric("lr", 40, 1e-3), metric("qf_loss", 80, 0.25),
    { type: "episode", phase: "eval", step: 80, update: 2, record: record("s0", [0.9, 0.1]) },
    { type: "episode", phase: "eval", step: 80, update: 2, record: record("s1", [0.8, 0.3]) },
  ];
  assert.ok((await ingestBatch(h, { runId: run.id, seq: 1, events }, "w-export")).ok);

  const csv = await fetch(`${server.url}/api/runs/${run.id}/export/metrics.csv`);
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get("content-disposition") ?? "", new RegExp(`attachment; filename="export_me_1-${run.id}-metrics.csv"`));
  const lines = (await csv.text()).trim().split("\n");
  assert.equal(lines[0], "key,step,update,wall,value");
  const rows = lines.slice(1).map((l) => l.split(",")).map(([key, step, update, wall, value]) => ({ key, step: +step, update: +update, wall: +wall, value: +value }));
  const want = events.filter((e) => e.type === "metric").map(({ key, step, update, wall, value }) => ({ key, step, update, wall, value }));
  const byKey = (a: { key: string; step: number }, b: { key: string; step: number }) => a.key.localeCompare(b.key) || a.step - b.step;
  assert.deepEqual(rows, [...want].sort(byKey));
  assert.deepEqual((await call<unknown[]>("GET", `/api/runs/${run.id}/export/metrics.json`)).body, [...want].sort(byKey));

  const jsonl = (await (await fetch(`${server.url}/api/runs/${run.id}/export/episodes.jsonl`)).text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(jsonl.map((e) => [e.phase, e.step, e.update, e.record.id]), [["eval", 80, 2, "s0"], ["eval", 80, 2, "s1"]]);
  assert.deepEqual(jsonl[1].record, (events[4] as Extract<EngineEvent, { type: "episode" }>).record);

  const yaml = await (await fetch(`${server.url}/api/runs/${run.id}/export/config.yaml`)).text();
  assert.deepEqual(YAML.parse(yaml), tiny, "the YAML reads back as the stored config");

  const tf = await fetch(`${server.url}/api/runs/${run.id}/export/tfevents`);
  assert.match(tf.headers.get("content-disposition") ?? "", /filename="events\.out\.tfevents\.\d+\.[\w.-]+"/);
  const [header, ...scalars] = readEvents(new Uint8Array(await tf.arrayBuffer()));
  assert.equal(header.fileVersion, "brain.Event:2");
  const started = Date.parse((await call<RunDetailDto>("GET", `/api/runs/${run.id}`)).body.startedAt!) / 1000;
  assert.deepEqual(
    scalars.map((e) => ({ key: e.values[0].tag, step: Number(e.step), value: e.values[0].value, wall: e.wall })),
    [...want].sort(byKey).map((p) => ({ key: p.key, step: p.step, value: Math.fround(p.value), wall: started + p.wall })),
    "TensorBoard reads the same scalars, at the run's start plus the engine's clock",
  );

  assert.equal((await call("GET", `/api/runs/${run.id}/export/passwords.txt`)).status, 400, "only the listed files");
  assert.equal((await call("GET", "/api/runs/nope/export/metrics.csv")).status, 404);
});

test("compare export: the five files over several runs, each row or document naming its run", async () => {
  const tiny = resolveConfig({ preset: "tiny" });
  const h = await getDb();
  const made: { id: string; name: string; values: number[] }[] = [];
  for (const [name, values] of [["alpha, \"first\"", [0.5, 0.25]], ["beta", [0.75]]] as const) {
    const run = (await call<RunDetailDto>("POST", "/api/runs", JSON.stringify({ config: { ...tiny, seed: made.length + 1 }, name }))).body;
    assert.ok(await claimRun(h, run.id, `w-cmp-${made.length}`, 60_000));
    const events: EngineEvent[] = values.map((value, i) => ({ type: "metric", key: "qf_loss", step: 40 * (i + 1), update: i + 1, value, wall: i }));
    events.push({ type: "episode", phase: "eval", step: 40, update: 1, record: { id: `s-${name}`, question: "q", answer: "a", sf_idx: [0], pred_idx: [0], q_values: [1], sf_texts: ["x"], pred_texts: ["x"], return: 1, num_chunks: 2, oracle_stop: true, metrics: { precision: 1, recall: 1, f1: 1, coverage: 1 }, filtered: { precision: 1, recall: 1, f1: 1, coverage: 1, threshold: 0.5, kept: 1 }, steps: [] } });
    assert.ok((await ingestBatch(h, { runId: run.id, seq: 1, events }, `w-cmp-${made.length}`)).ok);
    made.push({ id: run.id, name, values: [...values] });
  }
  const ids = made.map((r) => r.id).join(",");
  const get = (file: string) => fetch(`${server.url}/api/compare/export/${file}?ids=${ids}`);

  const csv = await get("metrics.csv");
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get("content-disposition") ?? "", /filename="compare-2-runs-metrics\.csv"/);
  const lines = (await csv.text()).trim().split("\n");
  assert.equal(lines[0], "run_id,run_name,key,step,update,wall,value");
  assert.deepEqual(lines.slice(1), [
    `${made[0].id},"alpha, ""first""",qf_loss,40,1,0,0.5`,
    `${made[0].id},"alpha, ""first""",qf_loss,80,2,1,0.25`,
    `${made[1].id},beta,qf_loss,40,1,0,0.75`,
  ], "a run name with a comma and quotes is one quoted CSV field");
  const json = (await (await get("metrics.json")).json()) as { id: string; name: string; points: { value: number }[] }[];
  assert.deepEqual(json.map((r) => [r.id, r.name, r.points.map((p) => p.value)]), made.map((r) => [r.id, r.name, r.values]));
  const jsonl = (await (await get("episodes.jsonl")).text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(jsonl.map((e) => [e.run_id, e.run_name, e.record.id]), made.map((r) => [r.id, r.name, `s-${r.name}`]));
  const docs = YAML.parseAllDocuments(await (await get("config.yaml")).text());
  assert.deepEqual(docs.map((d) => (d.toJS() as { seed: number }).seed), [1, 2], "one YAML document per run, in the order asked");

  const tarBody = Buffer.from(await (await get("tfevents")).arrayBuffer());
  const entries: { name: string; body: Buffer }[] = [];
  const ex = tar.extract();
  ex.on("entry", (header, stream, next) => {
    const parts: Buffer[] = [];
    stream.on("data", (c: unknown) => void parts.push(c as Buffer));
    stream.on("end", () => (entries.push({ name: header.name, body: Buffer.concat(parts) }), next()));
  });
  await new Promise<void>((resolve, reject) => (ex.on("finish", resolve), ex.on("error", reject), ex.end(tarBody)));
  assert.equal(entries.length, 2);
  entries.forEach((e, i) => {
    assert.match(e.name, new RegExp(`^[\\w.-]+-${made[i].id}/events\\.out\\.tfevents\\.\\d+\\.`), "one folder per run: tensorboard --logdir shows them side by side");
    const [, ...scalars] = readEvents(new Uint8Array(e.body));
    assert.deepEqual(scalars.map((ev) => ev.values[0].value), made[i].values.map(Math.fround));
  });

  assert.equal((await fetch(`${server.url}/api/compare/export/metrics.csv?ids=${made[0].id},nope`)).status, 404);
  assert.equal((await fetch(`${server.url}/api/compare/export/metrics.csv?ids=`)).status, 400);
  assert.equal((await fetch(`${server.url}/api/compare/export/metrics.csv?ids=${Array.from({ length: 201 }, (_, i) => `r${i}`).join(",")}`)).status, 400);
});

test("runs list: chosen columns (config keys, metric stats), a filter expression, sort on a column; bad ones name the token", async () => {
  const h = await getDb();
  const made: RunDetailDto[] = [];
  for (const [task, cov] of [["qa1", [0.5, 0.9, 0.7]], ["qa2", [0.2, 0.4]], ["qa2", [0.6, 0.95]]] as const) {
    const config = resolveConfig({ preset: "tiny", overrides: [`envs.task=${task}`, `seed=${made.length + 7}`] });
    const run = (await call<RunDetailDto>("POST", "/api/runs", JSON.stringify({ config, name: `cols ${made.length}`, tags: ["cols-test"] }))).body;
    assert.ok(await claimRun(h, run.id, `w-cols-${made.length}`, 60_000));
    const events: EngineEvent[] = cov.map((value, i) => ({ type: "metric", key: "eval_coverage", step: 10 * (i + 1), update: i + 1, value, wall: i }));
    assert.ok((await ingestBatch(h, { runId: run.id, seq: 1, events }, `w-cols-${made.length}`)).ok);
    made.push((await call<RunDetailDto>("GET", `/api/runs/${run.id}`)).body);
  }
  const taskOf = (r: RunDetailDto) => (r.config as { envs: { task: string } }).envs.task;
  type Page = { runs: (RunDetailDto & { columns: Record<string, unknown> })[]; total: number };
  const list = (qs: string) => call<Page>("GET", `/api/runs?tag=cols-test&${qs}`);

  const all = (await list(`cols=${encodeURIComponent("envs.task,best.eval_coverage,min.eval_coverage,last.eval_coverage,seed")}&sort=best.eval_coverage&order=desc`)).body;
  assert.deepEqual(all.runs.map((r) => r.name), ["cols 2", "cols 0", "cols 1"], "sorted by the best coverage, highest first");
  assert.deepEqual(all.runs.map((r) => r.columns), [
    { "envs.task": taskOf(made[2]), "best.eval_coverage": 0.95, "min.eval_coverage": 0.6, "last.eval_coverage": 0.95, seed: 9 },
    { "envs.task": taskOf(made[0]), "best.eval_coverage": 0.9, "min.eval_coverage": 0.5, "last.eval_coverage": 0.7, seed: 7 },
    { "envs.task": taskOf(made[1]), "best.eval_coverage": 0.4, "min.eval_coverage": 0.2, "last.eval_coverage": 0.4, seed: 8 },
  ]);
  const filtered = (await list(`where=${encodeURIComponent(`envs.task = ${taskOf(made[1])} and best.eval_coverage >= 0.9`)}&cols=seed`)).body;
  assert.deepEqual([filtered.total, filtered.runs.map((r) => r.name)], [1, ["cols 2"]]);
  const paged = (await list(`where=${encodeURIComponent("best.eval_coverage > 0.3")}&sort=seed&order=asc&limit=1&offset=1`)).body;
  assert.deepEqual([paged.total, paged.runs.map((r) => r.name)], [3, ["cols 1"]], "filter, sort, then the page");

  // the compare view's summaries: only the runs named, with their columns
  const some = (await call<Page>("GET", `/api/runs?ids=${made[0].id},${made[2].id},nope&cols=best.eval_coverage`)).body;
  assert.deepEqual(some.runs.map((r) => [r.id, r.columns]).sort(), [[made[0].id, { "best.eval_coverage": 0.9 }], [made[2].id, { "best.eval_coverage": 0.95 }]].sort());
  assert.equal((await call("GET", `/api/runs?ids=${Array.from({ length: 201 }, (_, i) => `r${i}`).join(",")}`)).status, 400, "at most 200 ids");
  assert.equal((await call("GET", "/api/runs?ids=a%20b")).status, 400, "ids are checked");

  const bad = await call<{ fieldErrors: Record<string, string> }>("GET", `/api/runs?where=${encodeURIComponent("envs.task qa2")}`);
  assert.equal(bad.status, 400);
  assert.match(bad.body.fieldErrors.where, /expected an operator .* got "qa2" at character 11/);
  const badCol = await call<{ fieldErrors: Record<string, string> }>("GET", "/api/runs?cols=best.bogus");
  assert.equal(badCol.status, 400);
  assert.match(badCol.body.fieldErrors.cols, /unknown metric bogus/);
  for (const [qs, field] of [["sort=sideways", "sort"], ["cols=envs.bogus", "cols"], [`where=${encodeURIComponent("algo.nope = 1")}`, "where"]] as const) {
    const r = await call<{ fieldErrors: Record<string, string> }>("GET", `/api/runs?${qs}`);
    assert.equal(r.status, 400, qs);
    assert.match(r.body.fieldErrors[field], /^unknown config key (sideways|envs\.bogus|algo\.nope) /, qs);
  }
});
