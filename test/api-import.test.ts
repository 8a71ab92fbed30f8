/**
 * POST /api/runs/import on the real server (server/main.ts, API only) with a temporary SQLite
 * file: a reference run folder through the CLI (`npm run import`), our own export read back
 * exactly, atomicity (a bad third file leaves no run, no points, no episodes), and the route's
 * own body limit.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import fs from "node:fs";
import path from "node:path";
import type { EpisodeDto, FieldErrorsDto, ImportRunDto, MetricsDto, RunDetailDto } from "../lib/contracts/index.ts";
import { getDb, type DbHandle } from "../server/db/client.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { encodeTfEvents } from "../server/runs/tfevents.ts";
import { readTfEvents } from "../server/runs/tfevents-read.ts";
import { MAX_BODY_BYTES } from "../server/api/router.ts";
import { ROOT, tmpDir } from "./platform-helpers.ts";
import { downloadExports, seedFinishedRun } from "./import-helpers.ts";

const FIXTURES = path.join(ROOT, "test", "fixtures", "reference-run");
let server: RunningServer;
let h: DbHandle;

before(async () => {
  server = await startServer({ port: 0, dataDir: tmpDir("qrag-import-"), spawnWorker: false, next: false, log: () => {} });
  h = await getDb();
});
after(() => server?.close());

async function post<T>(body: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}/api/runs/import`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T };
}
const get = async <T>(p: string): Promise<T> => (await (await fetch(`${server.url}${p}`)).json()) as T;
const counts = async () => ({ runs: await h.prisma.run.count(), points: await h.prisma.metricPoint.count(), episodes: await h.prisma.episode.count() });

/** The reference's scalars as its SummaryWriter logs them, plus a tag we do not chart. */
function referenceEvents(start: number): Buffer {
  const pts = [0, 1, 2, 3].flatMap((i) => [
    { key: "qf_loss", step: i * 96, wall: start + 10 * i + 1, value: 0.5 / (i + 1) },
    { key: "train r_sum", step: i * 96, wall: start + 10 * i + 2, value: 0.2 * i },
    { key: "eval r_sum", step: i * 96, wall: start + 10 * i + 3, value: 0.25 * i - 0.1 },
    { key: "misc/grad_hist_mean", step: i * 96, wall: start + 10 * i + 4, value: 7 },
  ]);
  return encodeTfEvents(pts, start);
}

test("a reference run folder through the CLI: eval_seed episodes and mapped TensorBoard scalars", async () => {
  const dir = tmpDir("qrag-ref-run-");
  for (const f of fs.readdirSync(FIXTURES)) fs.copyFileSync(path.join(FIXTURES, f), path.join(dir, f));
  fs.mkdirSync(path.join(dir, "tb_logs"));
  const start = 1_760_000_000;
  fs.writeFileSync(path.join(dir, "tb_logs", `events.out.tfevents.${start}.gpu1`), referenceEvents(start));
  // left out by the CLI: a hidden Hydra folder (a second config.yaml) and a checkpoint
  fs.mkdirSync(path.join(dir, ".hydra"));
  fs.writeFileSync(path.join(dir, ".hydra", "config.yaml"), "envs: {name: babilong}\n");
  fs.writeFileSync(path.join(dir, "model_last.pt"), Buffer.alloc(1024));
  fs.writeFileSync(path.join(dir, "config.yaml"), "envs:\n  name: babilong\n  task: qa2\nsteps_count: 9000\n");

  // the server runs in this process: the CLI must run beside it, not block it
  const cli = await promisify(execFile)(process.execPath, ["--import", "tsx", path.join(ROOT, "server", "cli", "import-run.ts"), dir, "--server", server.url, "--name", "reference qa2"], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  const id = /imported run (\w+) "reference qa2": 17 metric points, 5 episodes/.exec(cli.stdout)?.[1];
  assert.ok(id, cli.stdout);
  assert.match(cli.stdout, /warning: tb_logs\/events\.out\.tfevents\.\d+\.gpu1: 4 scalar value\(s\) under tags that map to no metric were skipped/);

  const run = await get<RunDetailDto>(`/api/runs/${id}`);
  assert.deepEqual([run.kind, run.status, run.workerId, run.resumeFrom, run.envName, run.task], ["imported", "completed", null, null, "babilong", "qa2"]);
  assert.equal(run.startedAt, new Date(start * 1000).toISOString(), "the first event's wall time is the start");
  assert.equal((run.config as { steps_count: number }).steps_count, 9000, "the reference config is kept as read");

  const m = await get<MetricsDto>(`/api/runs/${id}/metrics`);
  assert.deepEqual(Object.keys(m.series).sort(), ["eval_coverage", "eval_f1", "eval_precision", "eval_recall", "eval_return", "eval_steps", "qf_loss", "train_return"]);
  // float32 values as written; the SQLite driver keeps doubles to ~16 significant digits
  const near = (x: number, y: number) => Math.abs(x - y) <= 1e-15 * Math.max(1, Math.abs(y));
  assert.deepEqual(m.series.train_return.map((p) => [p.step, p.update, p.wall]), [0, 1, 2, 3].map((i) => [i * 96, 0, 10 * i + 2]));
  m.series.train_return.forEach((p, i) => assert.ok(near(p.value, Math.fround(0.2 * i)), `train_return ${i}: ${p.value}`));
  m.series.eval_return.forEach((p, i) => assert.ok(near(p.value, Math.fround(0.25 * i - 0.1)), `eval_return ${i}: ${p.value}`));

  const eps = await get<EpisodeDto[]>(`/api/runs/${id}/episodes?limit=100`);
  assert.equal(eps.length, 5);
  const rows = await h.prisma.episode.findMany({ where: { runId: id }, orderBy: [{ numChunks: "asc" }, { sampleId: "asc" }], select: { sampleId: true, numChunks: true, coverage: true } });
  assert.deepEqual(rows.map((r) => [r.numChunks, r.sampleId, r.coverage]), [[50, "0", 1], [50, "1", 1], [50, "2", 0], [160, "0", 1], [160, "1", 1]]);
  // the eval series the folder lacks come from its episodes (one evaluation: the mean over all 5);
  // eval_return stays the event file's
  const cov = rows.reduce((a, r) => a + r.coverage, 0) / rows.length;
  assert.deepEqual(m.series.eval_coverage.map((p) => [p.step, p.value]), [[0, cov]]);
  assert.equal(m.series.eval_f1.length, 1);
  assert.ok(m.series.eval_return.length > 1, "the event file's eval_return, not an average");
  assert.equal(run.summary.eval_coverage, cov, "the runs table's coverage column has a value");
  const one = await get<EpisodeDto>(`/api/runs/${id}/episodes/${eps.find((e) => e.sampleId === "2")!.id}`);
  assert.deepEqual(one.record?.pred_idx, [22, 45, 9]);
  assert.equal(one.record?.num_chunks, 50);
});

test("our own export imports back: the same points (exact) and the same episodes", async () => {
  const src = await seedFinishedRun(h, "exported <run>");
  const files = await downloadExports(server.url, src.id);
  const body = { files: files.map((f) => (f.name.includes("tfevents") ? { name: f.name, content: f.bytes.toString("base64"), encoding: "base64" } : { name: f.name, content: f.bytes.toString("utf8") })) };
  const r = await post<ImportRunDto>(body);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.points, src.points);
  assert.equal(r.body.episodes, src.episodes.length);
  assert.equal(r.body.run.name, "tiny-qa1 (imported)", "named after its config");
  const [a, b] = await Promise.all([get<MetricsDto>(`/api/runs/${src.id}/metrics`), get<MetricsDto>(`/api/runs/${r.body.run.id}/metrics`)]);
  assert.deepEqual(b.series, a.series);
  const records = async (id: string) => {
    const list = await get<EpisodeDto[]>(`/api/runs/${id}/episodes?limit=100`);
    const full = await Promise.all(list.map((e) => get<EpisodeDto>(`/api/runs/${id}/episodes/${e.id}`)));
    return full.map(({ id: _id, ...e }) => e).sort((x, y) => x.update - y.update || x.sampleId.localeCompare(y.sampleId));
  };
  assert.deepEqual(await records(r.body.run.id), await records(src.id));

  // the event file alone: float32 values, the same steps and (relative) wall times
  const near = (x: number, y: number, rel: number) => Math.abs(x - y) <= rel * Math.max(1, Math.abs(y));
  const tf = files.find((f) => f.name.includes("tfevents"))!;
  // written in step order across tags, as TensorBoard expects (--inspect: no out-of-order steps)
  const order = readTfEvents(tf.bytes, tf.name).events.filter((e) => e.scalars.length).map((e) => e.step);
  assert.ok(order.length > 0 && order.every((st, i) => i === 0 || st >= order[i - 1]), `event steps in file order: ${order.slice(0, 12).join(", ")} …`);
  const only = await post<ImportRunDto>({ name: "tb only", files: [{ name: tf.name, content: tf.bytes.toString("base64"), encoding: "base64" }] });
  assert.equal(only.status, 201);
  const c = await get<MetricsDto>(`/api/runs/${only.body.run.id}/metrics`);
  for (const [key, pts] of Object.entries(a.series)) {
    assert.deepEqual(c.series[key].map((p) => p.step), pts.map((p) => p.step), key);
    c.series[key].forEach((p, i) => {
      assert.ok(near(p.value, pts[i].value, 2 ** -23), `${key} value at ${p.step}: ${p.value} vs ${pts[i].value}`);
      assert.ok(near(p.wall, pts[i].wall, 1e-6), `${key} wall at ${p.step}`);
    });
  }
});

test("atomic: a bad third file answers 400 naming file, line and field, and nothing is written", async () => {
  const before = await counts();
  const good = fs.readFileSync(path.join(FIXTURES, "eval_seed1_ns50.jsonl"), "utf8");
  const lines = good.trim().split("\n");
  const bad = [lines[0], lines[1].replace('"pred_idx": [31, 7]', '"pred_idx": [31, "SECRET"]'), lines[2]].join("\n");
  const files = [
    { name: "tb_logs/events.out.tfevents.1.gpu1", content: referenceEvents(1_760_000_000).toString("base64"), encoding: "base64" },
    { name: "eval_seed1_ns160.jsonl", content: fs.readFileSync(path.join(FIXTURES, "eval_seed1_ns160.jsonl"), "utf8") },
    { name: "eval_seed1_ns50.jsonl", content: bad },
  ];
  const r = await post<FieldErrorsDto>({ files });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body.fieldErrors, { "eval_seed1_ns50.jsonl": "eval_seed1_ns50.jsonl line 2: pred_idx: expected array of integers" });
  assert.ok(!JSON.stringify(r.body).includes("SECRET"), "no file content in the answer");
  assert.deepEqual(await counts(), before, "no run, no points, no episodes");

  // every bad file is named in the same answer; unknown names and wrong encodings too
  const r2 = await post<FieldErrorsDto>({ files: [...files, { name: "model_last.pt", content: "x" }, { name: "events.out.tfevents.2.x", content: "not base64 at all!" , encoding: "base64" }] });
  assert.equal(r2.status, 400);
  assert.deepEqual(Object.keys(r2.body.fieldErrors).sort(), ["eval_seed1_ns50.jsonl", "events.out.tfevents.2.x", "model_last.pt"]);
  assert.equal(r2.body.fieldErrors["events.out.tfevents.2.x"], "events.out.tfevents.2.x: content: not valid base64");
  assert.deepEqual(await counts(), before);
});

test("the import route takes bodies over the default 4 MiB limit", async () => {
  const rows = ["key,step,update,wall,value"];
  for (let i = 0, size = 0; size < MAX_BODY_BYTES + 1024 * 1024; i++) {
    for (const k of ["qf_loss", "lr", "train_return"]) size += rows[rows.push(`${k},${i * 40},${i},${(i * 0.0123).toFixed(4)},${Math.cos(i) * 0.123456789}`) - 1].length + 1;
  }
  const content = rows.join("\n") + "\n";
  assert.ok(content.length > MAX_BODY_BYTES);
  const t0 = performance.now();
  const r = await post<ImportRunDto>({ name: "big", files: [{ name: "big-metrics.csv", content }] });
  const ms = performance.now() - t0;
  assert.equal(r.status, 201, JSON.stringify(r.body).slice(0, 300));
  assert.equal(r.body.points, rows.length - 1);
  console.log(`# imported ${r.body.points} points (${(content.length / 2 ** 20).toFixed(1)} MiB CSV) in ${ms.toFixed(0)} ms`);
});
