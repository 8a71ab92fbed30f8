import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { wilsonInterval } from "../lib/contracts/intervals.ts";
import { needlesFound, niahScore } from "../server/qrag/bench/niah-metric.ts";
import { niahTables } from "../server/qrag/bench/niah-table.ts";
import { benchNiah, selectGroups, lengthLabel, NIAH_GROUPS, PAPER_NIAH } from "../server/qrag/bench/niah.ts";
import { niahSource, NIAH_TASKS } from "../server/qrag/data/niah/generate.ts";
import { chunkAt } from "../server/qrag/types.ts";
import { InputError } from "../server/qrag/errors.ts";

test("needlesFound: RULER string_match_all numerator, lower-cased substring over the joined picks", () => {
  const picks = ["The sky is blue.", "One of the special magic numbers for late-somebody is: 1155477."];
  assert.equal(needlesFound(picks, ["1155477"]), 1);
  assert.equal(needlesFound(picks, ["1155477", "1628578"]), 1);
  assert.equal(needlesFound(picks, ["1628578"]), 0);
  assert.equal(needlesFound([], ["1155477"]), 0);
  // case-insensitive both ways (a uuid written in upper case still matches)
  assert.equal(needlesFound(["value: 3F2504E0-4F89-41D3-9A0C-0305E82C3301."], ["3f2504e0-4f89-41d3-9a0c-0305e82c3301"]), 1);
  assert.equal(needlesFound(["value: 3f2504e0-4f89-41d3-9a0c-0305e82c3301."], ["3F2504E0-4F89-41D3-9A0C-0305E82C3301"]), 1);
  // picks are joined with a space: a needle cannot be completed across two picks
  assert.equal(needlesFound(["value 115", "5477"], ["1155477"]), 0);
});

test("niahScore: mean of per-sample shares × 100, pooled-needle and all-found Wilson intervals", () => {
  const s = niahScore([
    { found: 2, total: 4 },
    { found: 4, total: 4 },
    { found: 1, total: 1 },
    { found: 0, total: 1 },
  ]);
  assert.equal(s.samples, 4);
  assert.equal(s.score, 62.5); // (0.5 + 1 + 1 + 0) / 4
  assert.equal(s.needles, 10);
  assert.equal(s.needlesFound, 7);
  assert.equal(s.allFound, 0.5);
  const w = wilsonInterval(7, 10)!;
  assert.ok(Math.abs(s.score95!.low - 100 * w.low) < 1e-9 && Math.abs(s.score95!.high - 100 * w.high) < 1e-9);
  assert.deepEqual(s.allFound95, wilsonInterval(2, 4));
  const empty = niahScore([]);
  assert.equal(empty.samples, 0);
  assert.equal(empty.score95, null);
});

test("needlesFound on a generated RULER sample: the support chunk holds the needle, other chunks do not", () => {
  const src = niahSource({ task: "niah_multivalue", maxSeqLength: 1024, seed: 3, split: "test" });
  const s = src.sample(0);
  const refs = s.answer.split(",");
  assert.equal(refs.length, 4);
  const support = s.supportIdx.map((i) => chunkAt(s.chunks, i));
  assert.equal(needlesFound(support, refs), 4);
  assert.equal(needlesFound(support.slice(0, 1), refs), 1);
  const others = Array.from({ length: s.chunks.length }, (_, i) => i).filter((i) => !s.supportIdx.includes(i)).slice(0, 5);
  assert.equal(needlesFound(others.map((i) => chunkAt(s.chunks, i)), refs), 0);
});

test("groups cover the 8 variants once; --variants selects groups and rejects unknown names", () => {
  assert.deepEqual(NIAH_GROUPS.flatMap((g) => g.variants).sort(), [...NIAH_TASKS].sort());
  for (const g of NIAH_GROUPS) assert.ok(g.variants.includes(g.trainOn), g.group);
  const sel = selectGroups(["niah_single_3", "niah_multiquery"]);
  assert.deepEqual(sel.map((g) => [g.group, g.variants]), [["single", ["niah_single_3"]], ["multiquery", ["niah_multiquery"]]]);
  assert.equal(selectGroups(undefined).length, 4);
  assert.throws(() => selectGroups(["niah_single_9"]), InputError);
  assert.equal(PAPER_NIAH["1M"].avg, 99.7);
  assert.equal(lengthLabel(4096), "4K");
  assert.equal(lengthLabel(131072), "128K");
  assert.equal(lengthLabel(1048576), "1M");
});

test("benchNiah on a tiny configuration: trains per group, one point per variant and length, JSON written", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-niah-"));
  const outFile = path.join(dir, "niah.json");
  const r = (await benchNiah(() => {}, {
    variants: ["niah_single_1", "niah_single_2", "niah_multivalue"],
    lengths: [512, 1024],
    samples: [3, 2],
    overrides: ["steps_count=2", "eval_episodes=3", "envs_parallel=2", "batch_size=4", "learning_start=4", "envs.max_seq_length=1024"],
    runsDir: dir,
    outFile,
  })) as { complete: boolean; runs: { group: string; updates: number; trainSeconds: number; points: { variant: string; label: string; samples: number; score: number; needles: number; needlesFound: number; score95: unknown; allFound95: unknown; filtered: { score: number }; tokens: number }[] }[]; average: { label: string; variants: number; score: number }[] };
  assert.equal(r.complete, true);
  assert.deepEqual(r.runs.map((x) => x.group), ["single", "multivalue"]);
  for (const run of r.runs) {
    assert.equal(run.updates, 2);
    assert.ok(run.trainSeconds > 0);
    assert.ok(fs.existsSync(path.join(dir, `bench-niah-${run.group}`, "checkpoints", "best")));
  }
  const pts = r.runs.flatMap((x) => x.points.map((p) => `${p.variant}@${p.label}:${p.samples}`)).sort();
  assert.deepEqual(pts, ["niah_multivalue@1K:2", "niah_multivalue@512 tokens:3", "niah_single_1@1K:2", "niah_single_1@512 tokens:3", "niah_single_2@1K:2", "niah_single_2@512 tokens:3"]);
  for (const p of r.runs.flatMap((x) => x.points)) {
    assert.equal(p.needles, p.samples * (p.variant === "niah_multivalue" ? 4 : 1));
    assert.ok(p.score >= 0 && p.score <= 100 && p.filtered.score <= p.score + 1e-9);
    assert.ok(p.score95 && p.allFound95);
    assert.ok(p.tokens > 0 && p.tokens <= (p.label === "1K" ? 1024 : 512) - 128);
  }
  assert.deepEqual(r.average.map((a) => [a.label, a.variants]), [["512 tokens", 3], ["1K", 3]]);
  const saved = JSON.parse(fs.readFileSync(outFile, "utf8")) as typeof r;
  assert.deepEqual(saved.average, r.average);
  // reuse: no training, the 512-token points and the training figures are kept, 1K measured again
  const again = (await benchNiah(() => {}, { variants: ["niah_single_1", "niah_single_2", "niah_multivalue"], lengths: [1024], samples: [1], reuse: true, runsDir: dir, outFile })) as typeof r;
  assert.deepEqual(again.runs.map((x) => [x.group, x.updates, x.trainSeconds]), r.runs.map((x) => [x.group, x.updates, x.trainSeconds]));
  const pts2 = again.runs.flatMap((x) => x.points.map((p) => `${p.variant}@${p.label}:${p.samples}`)).sort();
  assert.deepEqual(pts2, ["niah_multivalue@1K:1", "niah_multivalue@512 tokens:3", "niah_single_1@1K:1", "niah_single_1@512 tokens:3", "niah_single_2@1K:1", "niah_single_2@512 tokens:3"]);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("niahTables: one row per variant with score, Wilson interval, samples and the paper's figure", () => {
  const pt = (variant: string, lbl: string, score: number, samples: number) => ({
    variant, label: lbl, tokens: 100, chunks: 10, samples, score, score95: { low: 90, high: 100 },
    filtered: { samples, score: score - 10, score95: null }, generateSeconds: 0.5, episodeSeconds: 0.25,
  });
  const input = {
    complete: false, started: "2026-11-24T00:00:00Z", machine: { cpus: 2, model: "X", node: "v20", wasmThreads: "1" },
    lengths: [4096, 1048576],
    runs: [{ group: "multikey", trainOn: "niah_multikey_2", updates: 100, trainSeconds: 90, heldOutCoverage: { first: { coverage: 0.5 }, last: { update: 100, coverage: 1 } }, points: [pt("niah_multikey_2", "4K", 97.5, 200), pt("niah_multikey_2", "1M", 100, 10)] }],
    average: [{ label: "4K", variants: 1, score: 97.5 }, { label: "1M", variants: 1, score: 100 }],
    paper: PAPER_NIAH,
  };
  const md = niahTables(input);
  assert.match(md, /\| MK2 \| 97\.5 \[90, 100\] \(200\) \| 87\.5 \| 100 \| 100 \[90, 100\] \(10\) \| 90 \| 98\.5 \|/);
  assert.match(md, /\| \*\*NIAH Avg\*\* \| 97\.5 \(1 variants\) \| 87\.5 \| 100 \| 100 \(1 variants\) \| 90 \| 99\.7 \|/);
  assert.match(md, /\| multikey \| MK2 \| 100 \| 1\.5 min \| 0\.50 → 1\.00 \(update 100\) \|/);
  assert.match(md, /run cut short/);
  assert.doesNotMatch(md, /\| S1 \|/);
  assert.doesNotMatch(md, /Config overrides/);
  // a bench run with --set says so under its table
  const withSet = niahTables({ ...input, overrides: ["algo.encoder.word_bigrams=true", "algo.encoder.vocab_size=65536"] });
  assert.match(withSet, /wasm threads 1 \(run cut short: missing cells were not measured\)\. Config overrides: `algo\.encoder\.word_bigrams=true`, `algo\.encoder\.vocab_size=65536`\./);
});
