import { test } from "node:test";
import assert from "node:assert/strict";
import { QueryClient } from "@tanstack/react-query";
import { BatchSequencer, mergeEpisodes, mergeLogs, mergeMetrics } from "../lib/stream-merge.ts";
import { putRuns } from "../lib/run-cache.ts";
import { qk } from "../lib/hooks/keys.ts";
import type { EngineEvent, EpisodeRecord, MetricsDto, RunBatchMsg, RunDetailDto, RunDto, RunListDto } from "../lib/contracts/index.ts";

const batch = (seq: number, events: EngineEvent[] = []): RunBatchMsg => ({ runId: "r1", seq, events });
const metric = (key: "qf_loss" | "lr", update: number, value: number): EngineEvent => ({ type: "metric", key, step: update * 40, update, value, wall: update / 10 });

const run: RunDetailDto = {
  id: "r1", name: "tiny", status: "queued", preset: "tiny", envName: "babilong", task: "qa1", tags: [], notes: "",
  workerId: null, workerName: null, backend: null, device: null, createdAt: "2026-01-01T00:00:00.000Z", startedAt: null,
  finishedAt: null, durationSeconds: null, error: null, kind: "train", sweepOf: null, parentId: null, attempt: 1, lastSeq: 2, progressDone: 0,
  progressTotal: 60, summary: {}, createdBy: null, config: {}, resumeFrom: null, checkpoints: [], queue: "workers", resources: {}, executor: null, jobs: [],
};

test("metric points are appended once per cache entry, for the keys it holds", () => {
  const data: MetricsDto = { series: { qf_loss: [{ step: 0, update: 0, wall: 0, value: 1 }] }, lastSeq: 3 };
  const b4 = batch(4, [metric("qf_loss", 10, 0.5), metric("lr", 10, 1e-3), metric("qf_loss", 20, 0.25)]);
  const m = mergeMetrics(data, b4, ["qf_loss"]);
  assert.deepEqual(m.series.qf_loss.map((p) => p.value), [1, 0.5, 0.25]);
  assert.equal(m.series.lr, undefined);
  assert.equal(m.lastSeq, 4);
  assert.equal(mergeMetrics(m, b4, ["qf_loss"]), m, "a batch sent again changes nothing");
  assert.equal(mergeMetrics(m, batch(3, [metric("qf_loss", 5, 9)]), ["qf_loss"]), m, "a batch under the watermark is ignored");
  assert.equal(data.series.qf_loss.length, 1, "the cached object is not mutated");
});

test("runs the server publishes replace list rows and detail fields; an older copy never wins", () => {
  const qc = new QueryClient();
  const { config: _c, resumeFrom: _r, checkpoints: _k, ...row } = run;
  const other: RunDto = { ...row, id: "r2", name: "other" };
  qc.setQueryData<RunListDto>(qk.runList({ sort: "createdAt" }), { runs: [row, other], total: 2 });
  qc.setQueryData<RunListDto>(qk.runList({ status: "queued" }), { runs: [row], total: 1 });
  const detail: RunDetailDto = { ...run, checkpoints: [{ step: 4, update: 1, path: "/c", best: false, evalReturn: null, createdAt: "2026-01-01T00:00:00.000Z" }] };
  qc.setQueryData(qk.run("r1"), detail);

  const running: RunDto = { ...row, status: "running", lastSeq: 3, progressDone: 10, summary: { qf_loss: 0.5, update: 10 }, backend: "wasm" };
  const { unlisted } = putRuns(qc, [running, { ...row, id: "r9", lastSeq: 1 }]);
  assert.deepEqual(unlisted, ["r9"], "a run no list holds is reported, so lists can be refetched");
  for (const key of [qk.runList({ sort: "createdAt" }), qk.runList({ status: "queued" })]) {
    const r1 = qc.getQueryData<RunListDto>(key)!.runs.find((r) => r.id === "r1")!;
    assert.equal(r1.status, "running");
    assert.equal(r1.summary.qf_loss, 0.5);
  }
  assert.equal(qc.getQueryData<RunListDto>(qk.runList({ sort: "createdAt" }))!.runs[1], other, "other rows are untouched");
  const d = qc.getQueryData<RunDetailDto>(qk.run("r1"))!;
  assert.equal(d.progressDone, 10);
  assert.equal(d.backend, "wasm");
  assert.deepEqual(d.checkpoints, detail.checkpoints, "the detail keeps its checkpoints and config");
  assert.deepEqual(d.config, {});

  putRuns(qc, [{ ...row, status: "queued", lastSeq: 2 }]);
  assert.equal(qc.getQueryData<RunDetailDto>(qk.run("r1"))!.status, "running", "a stale copy (lower lastSeq) is ignored");
  putRuns(qc, [{ ...running, status: "cancelled" }]);
  assert.equal(qc.getQueryData<RunDetailDto>(qk.run("r1"))!.status, "cancelled", "a change at the same lastSeq (cancel) applies");
  assert.equal(run.status, "queued", "cached objects are not mutated");
});

test("log lines and episodes are not duplicated by a catch-up", () => {
  const logs = mergeLogs([], batch(5, [{ type: "log", level: "info", message: "a" }, { type: "log", level: "warn", message: "b" }]), 3);
  assert.deepEqual(logs.map((l) => [l.seq, l.message]), [[5, "a"], [5, "b"]]);
  assert.equal(mergeLogs(logs, batch(5, [{ type: "log", level: "info", message: "a" }]), 3), logs);
  assert.deepEqual(mergeLogs(logs, batch(6, [{ type: "log", level: "info", message: "c" }, { type: "log", level: "info", message: "d" }]), 3).map((l) => l.message), ["b", "c", "d"]);

  const rec = (id: string) => ({ id, question: "q", answer: "a", return: 1, metrics: { precision: 1, recall: 1, f1: 1, coverage: 1 } }) as unknown as EpisodeRecord;
  const ev = (id: string): EngineEvent => ({ type: "episode", phase: "eval", step: 0, update: 20, record: rec(id) });
  const eps = mergeEpisodes([], batch(7, [ev("s0"), ev("s1")]), 10, "eval");
  assert.deepEqual(eps.map((e) => e.sampleId), ["s1", "s0"], "latest first");
  assert.equal(mergeEpisodes(eps, batch(7, [ev("s0"), ev("s1")]), 10, "eval"), eps);
  assert.equal(mergeEpisodes(eps, batch(8, [{ ...ev("s2"), phase: "train" } as EngineEvent]), 10, "eval"), eps, "other phases are filtered out");
});

test("the sequencer applies in order, holds early batches and asks for a catch-up on a gap", () => {
  const s = new BatchSequencer(2_000);
  assert.deepEqual(s.push(batch(1), 0), { apply: [], resubscribe: false }, "nothing before the first subscription");
  s.subscribed(4, 0);
  assert.deepEqual(s.push(batch(5), 10).apply.map((b) => b.seq), [5]);
  assert.deepEqual(s.push(batch(5), 11).apply, [], "duplicate");
  // seq 6 is lost: 7 is held and a catch-up from 5 is asked for at once
  assert.deepEqual(s.push(batch(7), 12), { apply: [], resubscribe: true });
  s.subscribed(s.cursor, 12);
  assert.equal(s.cursor, 5);
  assert.equal(s.push(batch(8), 100).resubscribe, false, "a catch-up is on its way: no second request");
  assert.equal(s.push(batch(9), 2_600).resubscribe, true, "still missing after the wait: ask again");
  s.subscribed(s.cursor, 2_600);
  assert.deepEqual(s.push(batch(6), 2_700).apply.map((b) => b.seq), [6, 7, 8, 9]);
  assert.equal(s.cursor, 9);
  // a reconnect re-subscribes from the cursor; caught-up batches at or below it are ignored
  s.subscribed(s.cursor, 3_000);
  assert.deepEqual(s.push(batch(9), 3_001).apply, []);
  assert.deepEqual(s.push(batch(10), 3_002).apply.map((b) => b.seq), [10]);
});

test("lists whose chosen columns or filter depend on a moved summary are reported stale; others are not", () => {
  const qc = new QueryClient();
  const row: RunDto = { ...run, status: "running", lastSeq: 3, summary: { qf_loss: 0.5, update: 10 } };
  const other: RunDto = { ...row, id: "r2" };
  const plain = qk.runList({ sort: "createdAt" });
  const withCols = qk.runList({ cols: "best.eval_coverage" });
  const filtered = qk.runList({ where: "best.eval_coverage >= 0.5" });
  for (const key of [plain, withCols, filtered]) qc.setQueryData<RunListDto>(key, { runs: [row], total: 1 } as RunListDto);

  const same = putRuns(qc, [{ ...row, lastSeq: 4, progressDone: 11 }]);
  assert.deepEqual(same.stale, [], "progress alone leaves computed columns and filters right");
  const moved = putRuns(qc, [{ ...row, lastSeq: 5, summary: { qf_loss: 0.25, update: 20 } }]);
  assert.deepEqual(moved.stale, [withCols, filtered], "the chosen columns and the filter of a run whose summary moved");
  const elsewhere = putRuns(qc, [{ ...other, lastSeq: 6 }]);
  assert.deepEqual(elsewhere.unlisted, ["r2"]);
  assert.deepEqual(elsewhere.stale, [filtered], "a run the filter does not hold may now pass it");
});
