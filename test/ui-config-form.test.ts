/**
 * The launch form's field tree, drawn from the engine's JSON Schema (what GET /api/schema serves),
 * and the round trip draft → config through the engine's one pipeline (what POST
 * /api/runs/validate runs): messages land on the form's own field paths.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { JsonSchema } from "../lib/contracts/index.ts";
import { configFieldErrors, configToDraft, describeSchema, draftToConfig, setAt, switchVariant, type FieldNode } from "../lib/config-form.ts";
import { ConfigError, buildRunConfig, configJsonSchema, resolveConfig } from "../server/qrag/index.ts";
import { fieldErrorsOf } from "../server/runs/errors.ts";

const root = describeSchema(configJsonSchema() as JsonSchema);

/** What the server answers for a draft: the config, or field errors as the form reads them. */
function serverCheck(draft: unknown): { ok: true; config: unknown } | { ok: false; errors: Record<string, string> } {
  try {
    return { ok: true, config: buildRunConfig({ config: draftToConfig(root, draft) }) };
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return { ok: false, errors: configFieldErrors(fieldErrorsOf(e.issues)) };
  }
}

test("the form tree mirrors the schema: groups, variants, enums, numbers, lists, descriptions", () => {
  assert.equal(root.kind, "object");
  if (root.kind !== "object") return;
  const byKey = (n: FieldNode & { kind: "object" }, k: string) => n.children.find((c) => c.key === k)!;
  const steps = byKey(root, "steps_count");
  assert.ok(steps.kind === "number" && steps.bounds.int && steps.bounds.min === 1 && steps.bounds.minInclusive && !steps.optional);
  assert.equal(steps.hint, "optimizer steps");
  const seed = byKey(root, "seed");
  assert.ok(seed.optional && seed.defaultValue === 42);
  const backend = byKey(root, "backend");
  assert.ok(backend.kind === "enum" && backend.values.includes("wasm"));
  const envs = byKey(root, "envs");
  assert.ok(envs.kind === "variant" && envs.discriminator === "name");
  if (envs.kind !== "variant") return;
  assert.deepEqual(Object.keys(envs.options), ["babilong", "niah", "hotpotqa", "musique"]);
  const ns = byKey(envs.options.babilong, "num_sentences");
  assert.ok(ns.kind === "numbers" && ns.scalar && ns.path === "envs.num_sentences");
  const algo = byKey(root, "algo");
  assert.ok(algo.kind === "object");
  if (algo.kind !== "object") return;
  const betas = byKey(byKey(algo, "optimizer") as FieldNode & { kind: "object" }, "betas");
  assert.ok(betas.kind === "numbers" && betas.length === 2 && betas.path === "algo.optimizer.betas");
  const lr = byKey(byKey(algo, "optimizer") as FieldNode & { kind: "object" }, "lr");
  assert.ok(lr.kind === "number" && lr.bounds.min === 0 && lr.bounds.minInclusive === false && !lr.bounds.int);
});

test("a preset survives config → draft → config unchanged", () => {
  for (const preset of ["tiny", "babilong-cpu", "babilong-qa3-cpu", "babilong-qa3-shaped-cpu", "babilong-qa4-cpu", "niah-cpu", "niah-multikey-cpu"]) {
    const cfg = resolveConfig({ preset });
    const back = serverCheck(configToDraft(root, cfg));
    assert.ok(back.ok, `${preset}: ${JSON.stringify(!back.ok && back.errors)}`);
    if (back.ok) assert.deepEqual(back.config, cfg);
  }
});

test("an optional section with defaulted keys: set, it survives the round trip; left empty, it is left out", () => {
  const set = resolveConfig({ preset: "babilong-cpu", overrides: ["envs.partial_starts.prob=0.5", "envs.partial_starts.extra_from=related"] });
  const back = serverCheck(configToDraft(root, set));
  assert.ok(back.ok, JSON.stringify(!back.ok && back.errors));
  if (back.ok) assert.deepEqual((back.config as typeof set).envs.partial_starts, { prob: 0.5, extra_prob: 0, extra_from: "related" });
  const empty = draftToConfig(root, configToDraft(root, resolveConfig({ preset: "babilong-cpu" }))) as { envs: Record<string, unknown> };
  assert.equal("partial_starts" in empty.envs, false);
});

test("invalid fields get a message at their own path", () => {
  const draft = configToDraft(root, resolveConfig({ preset: "tiny" }));
  const bad = (path: string[], text: string) => {
    const r = serverCheck(setAt(draft, path, text));
    assert.ok(!r.ok, `${path.join(".")}=${text} accepted`);
    return r.ok ? {} : r.errors;
  };
  assert.equal(bad(["steps_count"], "-1").steps_count, "must be ≥ 1");
  assert.equal(bad(["steps_count"], "abc").steps_count, "must be a number");
  assert.equal(bad(["steps_count"], "2.5").steps_count, "must be a whole number");
  assert.equal(bad(["steps_count"], "").steps_count, "required");
  assert.equal(bad(["algo", "encoder", "dim"], "30")["algo.encoder.dim"], "must be divisible by 4 (two heads of rotary pairs)");
  assert.match(bad(["envs", "task"], "qa9")["envs.task"], /expected qa1\.\.qa5/);
  assert.equal(bad(["batch_size"], "33").batch_size, "must be a multiple of envs_parallel");
  assert.equal(bad(["name"], "x".repeat(201)).name.length > 0, true);
});

test("number lists, optional fields and switching the environment", () => {
  const draft = configToDraft(root, resolveConfig({ preset: "tiny" }));
  const withList = draftToConfig(root, setAt(draft, ["envs", "num_sentences"], "10, 20")) as { envs: { num_sentences: unknown } };
  assert.deepEqual(withList.envs.num_sentences, [10, 20]);
  const noName = draftToConfig(root, setAt(draft, ["name"], "")) as Record<string, unknown>;
  assert.ok(!("name" in noName));
  if (root.kind !== "object") return;
  const envs = root.children.find((c) => c.key === "envs")!;
  if (envs.kind !== "variant") return;
  const niah = switchVariant(envs, (draft as Record<string, unknown>).envs, "niah") as Record<string, unknown>;
  assert.equal(niah.name, "niah");
  assert.equal(niah.max_steps, "6"); // shared field kept
  assert.ok(!("noise" in niah));
  const r = serverCheck(setAt(setAt(draft, ["envs"], niah), ["envs", "task"], "niah_single_1"));
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
});

test("draftDiff lists the leaves a draft changes against its baseline, in the draft's order", async () => {
  const { draftDiff } = await import("../lib/config-form.ts");
  const base = { steps_count: "60", envs: { task: "qa1", noise: "sotu" }, flag: false };
  assert.deepEqual(draftDiff(base, base), []);
  const now = { steps_count: "90", envs: { task: "qa3", noise: "sotu" }, flag: true };
  assert.deepEqual(draftDiff(now, base), [
    { path: "steps_count", from: "60", to: "90" },
    { path: "envs.task", from: "qa1", to: "qa3" },
    { path: "flag", from: false, to: true },
  ]);
  // a key only one side has counts when it holds a value (a switched env variant)
  assert.deepEqual(draftDiff({ envs: { task: "qa1", extra: "" } }, { envs: { task: "qa1" } }), []);
  assert.deepEqual(draftDiff({ envs: { task: "qa1", path: "x" } }, { envs: { task: "qa1" } }), [{ path: "envs.path", from: undefined, to: "x" }]);
});
