/**
 * fused-steps.ts without a GPU: what it reads of a program's WGSL, the joint program's text (names
 * apart, bindings renumbered, each part's workgroups and builtins), and the schedule of two calls'
 * programs: fewest dispatches, each list in its order, nothing joined that shares a written buffer.
 * test/webgpu-fused.test.ts runs joint programs on webgpu against the same programs apart.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { independent, jointCode, jointSchedule, programShape, type JoinStep } from "../server/qrag/model/webgpu/fused-steps.ts";
import { storageDecls, uniformStruct } from "../server/qrag/model/webgpu/raw-program.ts";

/** A program in our programs' form: a uniform struct, storage bindings, a constant, a helper, a main of `threads` threads. */
function program(read: string[], write: string[], threads: [number, number], barrier = false, shared = 0): string {
  return `${uniformStruct(["n: u32"])}
${storageDecls(read, write)}
const K: u32 = 3u;
${shared ? `var<workgroup> acc: array<vec2<f32>, ${shared}>;` : ""}
fn twice(x: f32) -> f32 { return x * 2.0; }
@compute @workgroup_size(${threads[0]}, ${threads[1]})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let i = threadIndex(gid) + wid.x * K + lid.y;
  ${barrier ? "workgroupBarrier();" : ""}
  if (i < u.n) { ${write[0]}[i] = twice(${read[0]}[i]); }
}`;
}

test("programShape reads a program's bindings, workgroup size, workgroup memory and barriers", () => {
  const s = programShape(`enable f16;\n${program(["a", "b"], ["c"], [16, 4], true, 64)}`);
  assert.deepEqual(s.access, ["read", "read", "read_write", "uniform"]);
  assert.deepEqual(s.size, [16, 4, 1]);
  assert.equal(s.sharedBytes, 64 * 8);
  assert.equal(s.barriers, true);
  assert.deepEqual(s.enables, ["enable f16;"]);
  assert.equal(programShape(program(["a"], ["c"], [64, 1])).barriers, false);
  // a workgroup variable it cannot size makes the program unjoinable (null)
  assert.equal(programShape(program(["a"], ["c"], [64, 1]).replace("const K", "var<workgroup> odd: array<MyType, 4>;\nconst K")).sharedBytes, null);
});

test("jointCode: each part's names apart (struct members kept), its bindings after the earlier parts' and the uniforms last, its grid read from its uniforms (after its own fields), its workgroups a range of the joint grid, its builtins from its grid and shape", () => {
  const a = programShape(program(["x"], ["y"], [8, 8]));
  // b also declares a module constant named as a member of its uniform struct
  const b = programShape(program(["p", "q"], ["r"], [32, 1]).replace("const K", "const n: u32 = 7u;\nconst K"));
  const code = jointCode([a, b]);
  // bindings: a's x, y at 0, 1; b's p, q, r at 2, 3, 4; the uniforms at 5 (a's) and 6 (b's)
  for (const [binding, decl] of [[0, "var<storage, read> fz0_x"], [1, "var<storage, read_write> fz0_y"], [2, "var<storage, read> fz1_p"], [4, "var<storage, read_write> fz1_r"], [5, "var<uniform> fz0_u: fz0_U"], [6, "var<uniform> fz1_u: fz1_U"]] as const) {
    assert.match(code, new RegExp(`@binding\\(${binding}\\) ${decl.replace(/[()]/g, "\\$&")}`));
  }
  // the struct's members keep their names, their uses too (u.n, u.stride); module names are prefixed; the grid's sizes follow the fields
  assert.match(code, /struct fz1_U \{ stride: u32, n: u32, fz_gx: u32, fz_gy: u32, fz_gz: u32 \}/);
  assert.match(code, /const fz1_n: u32 = 7u;/);
  assert.match(code, /if \(i < fz1_u\.n\) \{ fz1_r\[i\] = fz1_twice\(fz1_p\[i\]\); \}/);
  assert.match(code, /fz0_threadIndex\(gid\) \+ wid\.x \* fz0_K/);
  // no shape in the code: one entry point of the larger part's threads; a's workgroups first, then b's; the 32-thread part leaves the others idle
  assert.equal(code.match(/@compute/g)?.length, 1);
  assert.match(code, /@workgroup_size\(64\)/);
  assert.match(code, /let fz_g0 = vec3<u32>\(fz0_u\.fz_gx, fz0_u\.fz_gy, fz0_u\.fz_gz\);/);
  assert.match(code, /let fz_at1 = fz_at0 \+ fz_g0\.x \* fz_g0\.y \* fz_g0\.z;/);
  assert.match(code, /if \(fz_l >= fz_at1 && fz_l < fz_at2\) \{ if \(fz_lix < 32u\) \{ fz1_main\(/);
  // a's builtins from its grid and 8×8 shape (the parameters in its order: gid, wid, lid)
  assert.ok(code.includes("fz0_main(fz_wid(fz_l - fz_at0, fz_g0) * vec3<u32>(8u, 8u, 1u) + fz_lid(fz_lix, 8u, 8u), fz_wid(fz_l - fz_at0, fz_g0), fz_lid(fz_lix, 8u, 8u))"), code);
  assert.ok(code.includes("fz1_main(fz_wid(fz_l - fz_at1, fz_g1) * vec3<u32>(32u, 1u, 1u) + fz_lid(fz_lix, 32u, 1u), fz_wid(fz_l - fz_at1, fz_g1), fz_lid(fz_lix, 32u, 1u))"), code);
  assert.match(code, /let fz_l = fz_w\.y \* fz_n\.x \+ fz_w\.x;/);
});

/** A step binding `refs` (read then written, as `program` declares them). */
function step(key: string, read: object[], write: object[], threads: [number, number] = [64, 1], barrier = false): JoinStep {
  const names = (xs: object[], p: string) => xs.map((_, i) => `${p}${i}`);
  return { key, code: program(names(read, "r"), names(write, "w"), threads, barrier), refs: [...read, ...write], grid: [4, 1, 1], uniforms: [0] };
}

test("independent: a written buffer (or an overlapping part of one) bound by the other step makes two steps dependent; shared reads and disjoint parts do not", () => {
  const [x, y, z] = [{}, {}, {}];
  const shape = (s: JoinStep) => programShape(s.code as string);
  const pair = (a: JoinStep, b: JoinStep) => independent(a, shape(a), b, shape(b));
  assert.equal(pair(step("a", [x], [y]), step("b", [x], [z])), true);
  assert.equal(pair(step("a", [x], [y]), step("b", [y], [z])), false);
  assert.equal(pair(step("a", [x], [y]), step("b", [z], [y])), false);
  assert.equal(pair(step("a", [y], [x]), step("b", [z], [y])), false);
  const buf = {};
  const part = (offset: number, size: number) => ({ of: buf, offset, size });
  assert.equal(pair(step("a", [x], [part(0, 256)]), step("b", [x], [part(256, 256)])), true);
  assert.equal(pair(step("a", [x], [part(0, 512)]), step("b", [part(256, 256)], [z])), false);
  // variables are read by both, never written
  assert.equal(pair(step("a", [{ weight: 0 }], [y]), step("b", [{ weight: 0 }], [z])), true);
});

test("jointSchedule: two chains of dependent programs take the fewest dispatches, each chain in its order; programs of unequal threads join only where the smaller has no barriers; binding limits hold", () => {
  const chain = (p: string, n: number, threads: (i: number) => [number, number] = () => [64, 1], barrier = false): JoinStep[] => {
    const bufs = Array.from({ length: n + 1 }, () => ({}));
    return Array.from({ length: n }, (_, i) => step(`${p}${i}`, [bufs[i]], [bufs[i + 1]], threads(i), barrier));
  };
  const limits = { maxStorageBuffersPerShaderStage: 16 };
  const A = chain("a", 5), B = chain("b", 3);
  const units = jointSchedule(A, B, limits);
  assert.equal(units.length, 5);
  // each list's steps in order, each once
  const order = (list: 0 | 1) => units.flatMap((u) => (u.kind === "cross" ? [list ? u.b : u.a] : u.list === list ? [u.step] : [])).map((s) => s.key);
  assert.deepEqual(order(0), A.map((s) => s.key));
  assert.deepEqual(order(1), B.map((s) => s.key));
  assert.equal(units.filter((u) => u.kind === "cross").length, 3);
  // a chain that writes what the other reads joins nothing
  const shared = {};
  const C = [step("c0", [{}], [shared])];
  const D = [step("d0", [shared], [{}])];
  assert.deepEqual(jointSchedule(C, D, limits).map((u) => u.kind), ["one", "one"]);
  // 128 threads beside 64: joined where the 64-thread programs have no barrier, not where they have one
  const wide = chain("w", 3, () => [128, 1]);
  assert.equal(jointSchedule(wide, chain("n", 3), limits).length, 3);
  assert.equal(jointSchedule(wide, chain("m", 3, () => [64, 1], true), limits).length, 6);
  // a step whose uniform slot has no room left for its grid's sizes (after 60 fields): apart
  const full = chain("f", 3);
  full.forEach((st) => (st.uniforms = { length: 61 }));
  assert.equal(jointSchedule(full, chain("g", 3), limits).length, 6);
  // over the device's storage bindings: apart
  assert.equal(jointSchedule(A, B, { maxStorageBuffersPerShaderStage: 3 }).length, 8);
  // a step's own joint with its next is a move too
  const E = chain("e", 2);
  E[0].joint = { with: E[1], key: "e0+e1", code: () => "", grid: [1, 1, 1] };
  assert.deepEqual(jointSchedule(E, [], limits).map((u) => u.kind), ["next"]);
});
