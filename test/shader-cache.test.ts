/** Generated WGSL is made once: a pipeline's source only on its key's first compile (matmul.ts's among them), no program's source at its call. */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { cachedPipeline, pipelineCount, type GpuDeviceLike } from "../server/qrag/model/webgpu/raw-program.ts";
import { MATMUL_TILES, matmulShader } from "../server/qrag/model/webgpu/matmul.ts";

/** A device that records what it compiles. */
function fakeDevice(): GpuDeviceLike & { modules: string[] } {
  const modules: string[] = [];
  return {
    modules,
    createShaderModule: (d: { code: string }) => (modules.push(d.code), { code: d.code }),
    createComputePipeline: (d: object) => ({ ...d, getBindGroupLayout: () => ({}) }),
  } as unknown as GpuDeviceLike & { modules: string[] };
}

test("a pipeline's generated source is asked for only when its key is first compiled; a string source compiles as given", () => {
  const device = fakeDevice();
  let generated = 0;
  const source = () => (generated++, "@compute @workgroup_size(1) fn main() {}");
  const a = cachedPipeline(device, "k1", source);
  const b = cachedPipeline(device, "k1", source);
  assert.equal(a, b);
  assert.equal(generated, 1, "the generator ran again for a compiled key");
  cachedPipeline(device, "k2", "// plain");
  assert.deepEqual(device.modules, ["@compute @workgroup_size(1) fn main() {}", "// plain"]);
  assert.equal(pipelineCount(device), 2);
});

test("matmulShader: the same program for the same tile and options; options that differ only inside a nested field, or the tile, give another", () => {
  const t = MATMUL_TILES["32x32-k16"];
  const base = matmulShader(t, true, { bias: true, trans: { a: true } });
  assert.equal(matmulShader(t, true, { bias: true, trans: { a: true } }), base);
  assert.notEqual(matmulShader(t, true, { bias: true, trans: { b: true } }), base);
  assert.notEqual(matmulShader(t, false, { bias: true, trans: { a: true } }), base);
  assert.notEqual(matmulShader(MATMUL_TILES["64x64-k16"], true, { bias: true, trans: { a: true } }), base);
  assert.match(base, /@workgroup_size\(8, 8, 1\)/, "the 32×32 tile: 8×8 threads of 4×4");
});

/**
 * Where programs are built (model/webgpu/), WGSL is passed as a constant or a generator, never as a
 * generator's result: a raw program runs at every call (17 lock-steps an iteration, the optimizer's
 * groups) and a plan's steps are built for each new shape, and each would generate its WGSL again
 * only for the pipeline cache to drop it.
 */
test("model/webgpu/: no program's WGSL is generated at the call (a `code:` property or a `flat`/`runToTensors` source that is a call)", () => {
  const dir = path.join(import.meta.dirname, "../server/qrag/model/webgpu");
  const found: string[] = [];
  for (const name of fs.readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const src = ts.createSourceFile(name, fs.readFileSync(path.join(dir, name), "utf8"), ts.ScriptTarget.Latest, true);
    const at = (n: ts.Node) => `${name}:${src.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
    const visit = (n: ts.Node): void => {
      if (ts.isPropertyAssignment(n) && n.name.getText() === "code" && ts.isCallExpression(n.initializer)) found.push(at(n));
      if (ts.isCallExpression(n)) {
        const callee = ts.isPropertyAccessExpression(n.expression) ? n.expression.name.text : n.expression.getText();
        if ((callee === "flat" || callee === "runToTensors") && n.arguments[1] && ts.isCallExpression(n.arguments[1])) found.push(at(n));
      }
      ts.forEachChild(n, visit);
    };
    visit(src);
  }
  assert.deepEqual(found, [], "WGSL generated at the call: pass `() => …` instead");
});
