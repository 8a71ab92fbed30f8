/**
 * Every test file belongs to exactly one tier (scripts/test-tier.ts): a new file in none would
 * never run under `npm test`, so this fails (and so does the tier runner, before running anything).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { TIERS, classificationProblems } from "../scripts/test-tier.ts";

test("every test/*.test.ts file is in exactly one tier, and every listed file exists", () => {
  assert.deepEqual(classificationProblems(), []);
});

test("an unclassified, doubly classified or missing file is named", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-tiers-"));
  fs.mkdirSync(path.join(root, "test"));
  for (const name of [...TIERS.unit, ...TIERS.integration, ...TIERS.e2e].filter((n) => n !== "config")) fs.writeFileSync(path.join(root, "test", `${name}.test.ts`), "");
  fs.writeFileSync(path.join(root, "test", "brand-new.test.ts"), "");
  fs.writeFileSync(path.join(root, "test", "a-helper.ts"), "");
  try {
    assert.deepEqual(classificationProblems(root), [
      "test/brand-new.test.ts is in no tier: add it to unit, integration or e2e in scripts/test-tier.ts",
      "test/config.test.ts is listed in the unit tier but does not exist",
    ]);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("the unit tier holds no browser test and no file that starts a server", () => {
  const unit: readonly string[] = TIERS.unit;
  assert.deepEqual(unit.filter((n) => n.startsWith("browser-")), []);
  const starts = /(?<![.\w])(startServer|startTestServer|startPostgres|launchBrowser|spawn|spawnSync|execFile|execFileSync|fork|runCaseFile)\(|\.listen\(/;
  const offenders = unit.filter((n) => {
    const p = path.join(import.meta.dirname, `${n}.test.ts`);
    return fs.existsSync(p) && starts.test(fs.readFileSync(p, "utf8").replace(/\/\/.*$/gm, "")); // line comments aside
  });
  assert.deepEqual(offenders, []);
});
