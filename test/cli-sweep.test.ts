/**
 * The CLI as users run it (a real child process) and a small real context-length sweep of a tiny
 * trained checkpoint with both baselines.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../server/qrag/config.ts";
import { train } from "../server/qrag/train.ts";
import { sweep } from "../server/qrag/sweep.ts";
import type { EngineEvent } from "../server/qrag/events.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-cli-"));

function qrag(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, ["--import", "tsx", "server/qrag/cli.ts", ...args], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

test("qrag babi-check: 100% on the real stories, a disagreement fails with its line", () => {
  const ok = qrag(["babi-check", ...fs.readdirSync("test/fixtures/babi").filter((f) => f.endsWith(".txt")).map((f) => path.join("test/fixtures/babi", f))]);
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out.trim().split("\n").at(-1)!, /^agree: (\d+)\/\1$/);
  const bad = path.join(tmp, "qa1_single-supporting-fact_test.txt");
  fs.writeFileSync(bad, "1 Mary moved to the bathroom.\n2 John went to the hallway.\n3 Where is Mary? \tgarden\t1\n");
  const r = qrag(["babi-check", bad]);
  assert.equal(r.code, 1);
  assert.match(r.out, /test\.txt:3: expected Mary->garden \{1\}, derived bathroom \{1\}/);
  assert.match(r.out, /agree: 0\/1/);
});

test("qrag train rejects a bad override naming the field, and config prints the resolved preset", () => {
  const r = qrag(["train", "preset=tiny", "envs.num_sentences=abc"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /envs\.num_sentences/);
  const c = qrag(["config", "preset=tiny", "--json"]);
  assert.equal(c.code, 0, c.err);
  assert.equal(JSON.parse(c.out).envs.num_sentences, 20);
});

test("sweep: per-length results with Q-RAG, BM25 and dense on the same samples", async () => {
  const config = resolveConfig({ preset: "tiny" });
  const res = await train(config, { runDir: path.join(tmp, "run") });
  const events: EngineEvent[] = [];
  const out = path.join(tmp, "sweep.jsonl");
  const points = await sweep({ checkpoint: res.runDir, lengths: [20, 400], samples: 8, onEvent: (e) => events.push(e), outFile: out });
  assert.deepEqual(points.map((p) => p.numChunks), [20, 400]);
  for (const p of points) {
    assert.equal(p.samples, 8);
    assert.equal(p.oracle_stop, false);
    assert.ok(p.tokens > p.numChunks * 5, `tokens ${p.tokens}`);
    for (const m of [p.qrag, p.qragFiltered, p.bm25!, p.dense!]) for (const v of Object.values(m)) assert.ok(Number.isFinite(v));
    assert.equal(p.baselineK, config.envs.max_steps);
  }
  // the trained retriever finds qa1's single fact far more often than chance (6 of 400 → 0.015)
  assert.ok(points[1].qrag.coverage >= 0.5, `coverage at 400 chunks ${points[1].qrag.coverage}`);
  const progress = events.filter((e) => e.type === "progress");
  assert.equal(progress.at(-1)!.type === "progress" && progress.at(-1)!.done, 16);
  assert.equal(fs.readFileSync(out, "utf8").trim().split("\n").length, 2);
});
