/**
 * The CLI as users run it (a real child process: one success, one user error) and a small real
 * context-length sweep of a tiny trained checkpoint with both baselines. The CLI's argument errors
 * are tested in process in test/cli-args.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { train } from "../server/qrag/training/train.ts";
import { sweep } from "../server/qrag/evaluation/sweep.ts";
import type { EngineEvent, EpisodeRecord } from "../server/qrag/events.ts";
import { applyStop } from "../server/qrag/evaluation/stop-rules.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-cli-"));

function qrag(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, ["--import", "tsx", "server/qrag/cli.ts", ...args], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

test("qrag as a process: babi-check agrees 100% on the real stories (exit 0); a bad override is one line on stderr, exit 2", () => {
  const ok = qrag(["babi-check", ...fs.readdirSync("test/fixtures/babi").filter((f) => f.endsWith(".txt")).map((f) => path.join("test/fixtures/babi", f))]);
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out.trim().split("\n").at(-1)!, /^agree: (\d+)\/\1$/);
  const r = qrag(["train", "preset=tiny", "envs.num_sentences=abc"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /^qrag: .*envs\.num_sentences/s);
  assert.doesNotMatch(r.err, /\n\s+at /, "a user error has no stack");
});

test("sweep: per-length results with Q-RAG, BM25 and dense on the same samples", async () => {
  const config = resolveConfig({ preset: "tiny" });
  const res = await train(config, { runDir: path.join(tmp, "run") });
  const events: EngineEvent[] = [];
  const out = path.join(tmp, "sweep.jsonl");
  const epFile = path.join(tmp, "sweep-episodes.jsonl");
  const points = await sweep({ checkpoint: res.runDir, lengths: [20, 400], samples: 8, threshold: 0.2, onEvent: (e) => events.push(e), outFile: out, episodesFile: epFile });
  assert.deepEqual(points.map((p) => p.numChunks), [20, 400]);
  for (const p of points) {
    assert.equal(p.samples, 8);
    assert.equal(p.oracle_stop, false);
    assert.ok(p.tokens > p.numChunks * 5, `tokens ${p.tokens}`);
    for (const m of [p.qrag, p.qragFiltered, p.bm25!, p.dense!]) for (const v of Object.values(m)) assert.ok(Number.isFinite(v));
    assert.equal(p.baselineK, config.envs.max_steps);
  }
  // the threshold, then leave-one-out pruning at it, from each episode's leave-one-out values (a
  // low threshold, so the tiny model's prefixes hold several picks and some get pruned)
  let prunedSome = false;
  const eps = fs.readFileSync(epFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as EpisodeRecord & { numChunks: number });
  for (const p of points) {
    const mine = eps.filter((e) => e.numChunks === p.numChunks).map((e) => applyStop(e, { kind: "prune", threshold: p.threshold, tau: p.threshold }));
    assert.equal(mine.length, 8);
    prunedSome ||= mine.some((m, i) => m.kept < eps.filter((e) => e.numChunks === p.numChunks)[i].filtered.kept);
    const mean = (k: "coverage" | "f1" | "kept") => mine.reduce((a, m) => a + m[k], 0) / mine.length;
    assert.ok(p.qragPruned, "a sweep to max_steps scores the prune rule");
    assert.ok(Math.abs(p.qragPruned.coverage - mean("coverage")) < 1e-12 && Math.abs(p.qragPruned.f1 - mean("f1")) < 1e-12 && Math.abs(p.qragPruned.avgKept - mean("kept")) < 1e-12);
  }
  assert.ok(prunedSome, "pruning dropped picks somewhere");
  // the trained retriever finds qa1's single fact far more often than chance (6 of 400 → 0.015)
  assert.ok(points[1].qrag.coverage >= 0.5, `coverage at 400 chunks ${points[1].qrag.coverage}`);
  const progress = events.filter((e) => e.type === "progress");
  assert.equal(progress.at(-1)!.type === "progress" && progress.at(-1)!.done, 16);
  assert.equal(fs.readFileSync(out, "utf8").trim().split("\n").length, 2);
});
