/**
 * No import cycles among the project's own modules under server/, lib/, components/ and app/
 * (scripts/import-cycles.ts). A cycle is broken by moving what both sides share (a type, a
 * constant) into a small module both import, named for what it holds — not by a lazy import.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { importCycles, runtimeImports } from "../scripts/import-cycles.ts";

test("no run-time import cycle under server/, lib/, components/, app/", () => {
  assert.deepEqual(importCycles(), []);
});

test("no type-only import cycle either", () => {
  assert.deepEqual(importCycles(undefined, undefined, true), []);
});

test("type-only imports are told apart from run-time ones", () => {
  const src = [
    'import type { A } from "./a.ts";',
    'import { type B, type C } from "./b.ts";',
    'import { d, type E } from "./d.ts";',
    'export { f } from "./f.ts";',
    'export type { G } from "./g.ts";',
    'import "./side.ts";',
    'import fs from "node:fs";',
    '// import { x } from "./commented.ts";',
    "import {\n  h,\n  i,\n} from './h.ts';",
  ].join("\n");
  assert.deepEqual(runtimeImports(src), ["./d.ts", "./f.ts", "./side.ts", "./h.ts"]);
  assert.deepEqual(runtimeImports(src, true), ["./a.ts", "./b.ts", "./d.ts", "./f.ts", "./g.ts", "./side.ts", "./h.ts"]);
});

test("a cycle is found and named", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-cycles-"));
  try {
    fs.mkdirSync(path.join(root, "server", "x"), { recursive: true });
    fs.writeFileSync(path.join(root, "server", "a.ts"), 'import { b } from "./x/b.ts";\nexport const a = b;\n');
    fs.writeFileSync(path.join(root, "server", "x", "b.ts"), 'import { c } from "../c.ts";\nexport const b = c;\n');
    fs.writeFileSync(path.join(root, "server", "c.ts"), 'import type { A } from "./a.ts";\nimport { a } from "./a.ts";\nexport const c = 1;\n');
    fs.writeFileSync(path.join(root, "server", "d.ts"), 'import { c } from "./c.ts";\nexport const d = c;\n');
    assert.deepEqual(importCycles(["server"], root), [["server/a.ts", "server/c.ts", "server/x/b.ts"]]);
    fs.writeFileSync(path.join(root, "server", "c.ts"), 'import type { A } from "./a.ts";\nexport const c = 1;\n');
    assert.deepEqual(importCycles(["server"], root), []);
    assert.deepEqual(importCycles(["server"], root, true), [["server/a.ts", "server/c.ts", "server/x/b.ts"]]);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
