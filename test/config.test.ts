import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig, composeConfig, ConfigError, groupOptions, presetNames } from "../server/qrag/config/config.ts";

test("presets and groups resolve to a valid config with reference key names", () => {
  const c = resolveConfig({ overrides: ["envs=babilong", "envs.task=qa2", "steps_count=3000"] });
  assert.ok(c.envs.name === "babilong");
  assert.equal(c.envs.task, "qa2_two-supporting-facts");
  assert.equal(c.steps_count, 3000);
  assert.equal(c.algo.hyperparams.lambda, 0.65);
  assert.equal(c.max_action_length_in_memory, 64);
  const cpu = resolveConfig({ preset: "babilong-cpu", overrides: ["envs.task=qa3"] });
  assert.equal(cpu.algo.encoder.type, "bow");
  assert.ok(cpu.envs.name === "babilong" && cpu.envs.task === "qa3_three-supporting-facts");
  assert.deepEqual(groupOptions("envs"), ["babilong", "hotpotqa", "musique", "niah"]);
  assert.ok(presetNames().includes("tiny"));
  for (const p of presetNames()) assert.ok(resolveConfig({ preset: p }), p);
});

test("overrides are typed as YAML scalars and lists, and the last one wins", () => {
  const c = resolveConfig({ overrides: ["envs.num_sentences=[50,100]", "algo.optimizer.lr=1e-4", "envs.feedback.never_terminate=false", "+seed=7", "seed=8"] });
  assert.ok(c.envs.name === "babilong");
  assert.deepEqual(c.envs.num_sentences, [50, 100]);
  assert.equal(c.algo.optimizer.lr, 1e-4);
  assert.equal(c.envs.feedback.never_terminate, false);
  assert.equal(c.seed, 8);
});

test("bad configs are rejected with the field named", () => {
  const cases: [string[], RegExp][] = [
    [["steps_count=abc"], /steps_count: .*number/],
    [["envs.num_sentence=3"], /envs\.num_sentence: unknown key/],
    [["envs.task=qa9"], /envs\.task: expected qa1\.\.qa5/],
    [["algo.encoder.dim=30"], /algo\.encoder\.dim: must be divisible by 4/],
    [["batch_size=63"], /batch_size: must be a multiple of envs_parallel/],
    [["algo.hyperparams.gamma=1.5"], /algo\.hyperparams\.gamma/],
  ];
  for (const [ov, re] of cases) {
    assert.throws(() => resolveConfig({ overrides: ov }), (e: unknown) => e instanceof ConfigError && re.test(e.message), ov.join(" "));
  }
  assert.throws(() => resolveConfig({ overrides: ["envs=nope"] }), /envs=nope: no such option \(choose one of: babilong/);
  assert.throws(() => resolveConfig({ overrides: ["justakey"] }), /override "justakey": expected key=value/);
  assert.throws(() => resolveConfig({ preset: "missing" }), /preset "missing" not found/);
});

test("a malformed YAML preset is reported with its file and line", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-cfg-"));
  fs.cpSync(path.resolve("configs"), dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "presets", "broken.yaml"), "steps_count: 10\nbatch_size: [1, 2\n");
  assert.throws(() => composeConfig({ configDir: dir, preset: "broken" }), /broken\.yaml:\d+:/);
  fs.rmSync(dir, { recursive: true, force: true });
});
