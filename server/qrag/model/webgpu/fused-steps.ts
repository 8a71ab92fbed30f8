/**
 * Two programs that do not depend on each other as one dispatch: the second's workgroups follow
 * the first's in one grid, each part running its own WGSL as it was written. The state and action
 * encoders' forwards and backwards are such pairs program by program (recorded-encoder.ts
 * recordJointly records two calls together, jointSchedule pairs their programs), and a plan's
 * backward has a few such neighbours (joinSteps): each dispatch costs the host and the GPU's
 * front end the same whatever its size, and a small program beside a big one fills idle units.
 *
 * The parts' WGSL is joined as text: each part's module-scope names get a prefix of their own, its
 * bindings are renumbered after the first part's (storage first, then the two uniform structs),
 * and its entry point becomes a function that the joint entry point calls with the builtins its
 * own grid and workgroup shape would have given it (the grid read from its uniforms). The parts
 * have as many threads a workgroup, or the one of fewer has no barrier (its extra threads skip it).
 *
 * Independence is read from the bindings: no buffer range one part writes is bound by the other.
 */
import { MAX_GROUPS, shaderText, type ShaderSource } from "./raw-program.ts";

/** What joining reads of a plan's step (recorded-encoder.ts Step): a binding is a buffer, a part of one ({of, offset, size}), or a variable ({weight}). */
export interface JoinStep {
  key: string;
  code: ShaderSource;
  refs: readonly object[];
  grid: [number, number, number];
  /** Its uniform fields (after `stride`): the joint program reads its grid in the words after them. */
  uniforms: { length: number };
  /** Set by joinSteps on the first of two joined steps. */
  joint?: Joint;
}

type Access = "read" | "read_write" | "uniform";

/** What joining needs of one program's WGSL. */
export interface ProgramShape {
  /** `enable …;` directives (hoisted to the joint program's top). */
  enables: string[];
  /** The rest of the code. */
  text: string;
  /** Its bindings' access by binding index. */
  access: Access[];
  /** @workgroup_size's x, y, z. */
  size: [number, number, number];
  /** Bytes of its workgroup variables; null where a declaration is not understood. */
  sharedBytes: number | null;
  /** Whether its threads meet at barriers (then a workgroup must have exactly its threads). */
  barriers: boolean;
}

const BINDING = /@group\(0\)\s*@binding\((\d+)\)\s*var<(storage,\s*read_write|storage,\s*read|storage|uniform)>/g;
const SIZE = /@compute\s+@workgroup_size\(([^)]*)\)/;

/** Bytes of one element of a workgroup array (WGSL's sizes; vec3 aligned as vec4). */
function elementBytes(t: string): number | null {
  const m = /^(?:atomic<)?(vec([234])<)?(f32|u32|i32|f16)>?>?$/.exec(t.replace(/\s/g, ""));
  if (!m) return null;
  const scalar = m[3] === "f16" ? 2 : 4;
  const n = m[2] ? Number(m[2]) : 1;
  return scalar * (n === 3 ? 4 : n);
}

/** Parses what joining needs from a program's WGSL. */
export function programShape(code: string): ProgramShape {
  const enables: string[] = [];
  const text = code.replace(/^\s*enable\s+[\w\s,]+;\s*$/gm, (line) => {
    enables.push(line.trim());
    return "";
  });
  const access: Access[] = [];
  for (const m of text.matchAll(BINDING)) access[Number(m[1])] = m[2].startsWith("uniform") ? "uniform" : m[2].includes("read_write") ? "read_write" : "read";
  const sz = SIZE.exec(text);
  if (!sz) throw new Error("fused-steps: a program without @workgroup_size");
  const dims = sz[1].split(",").map((s) => Number(s.trim().replace(/u$/, "")));
  const size: [number, number, number] = [dims[0], dims[1] ?? 1, dims[2] ?? 1];
  let sharedBytes: number | null = 0;
  for (const m of text.matchAll(/var<workgroup>\s+\w+\s*:\s*([^;]+);/g)) {
    const arr = /^array<(.+),\s*(\d+)u?>$/.exec(m[1].trim());
    const bytes = arr ? elementBytes(arr[1]) : elementBytes(m[1].trim());
    if (bytes === null || sharedBytes === null) {
      sharedBytes = null;
      continue;
    }
    sharedBytes += bytes * (arr ? Number(arr[2]) : 1);
  }
  return { enables, text, access, size, sharedBytes, barriers: /Barrier\s*\(|workgroupUniformLoad/.test(text) };
}

/** Module-scope names a program declares (functions, structs, module variables, constants, aliases). */
function declaredNames(text: string): string[] {
  const names = new Set<string>();
  for (const re of [/\bfn\s+(\w+)/g, /\bstruct\s+(\w+)/g, /\bvar<[^>]*>\s+(\w+)/g, /\bconst\s+(\w+)/g, /\balias\s+(\w+)/g, /\boverride\s+(\w+)/g]) {
    for (const m of text.matchAll(re)) names.add(m[1]);
  }
  return [...names];
}

/**
 * `text` with its module-scope names prefixed: every use but a member access (`.name`) and a
 * struct's member declarations (a name before `:` inside a struct's braces).
 */
function prefixNames(text: string, prefix: string): string {
  const names = new Set(declaredNames(text));
  const rename = (s: string, inStruct: boolean): string =>
    s.replace(/(?<![\w.])([A-Za-z_]\w*)(?!\w)/g, (w, _n, at: number) => {
      if (!names.has(w)) return w;
      if (inStruct && /^\s*:/.test(s.slice(at + w.length))) return w;
      return prefix + w;
    });
  // struct bodies apart: their member names stay
  return text.split(/(struct\s+\w+\s*\{[^}]*\})/).map((part, i) => rename(part, i % 2 === 1)).join("");
}

/** The joint grid of parts with `total` workgroups: x up to MAX_GROUPS, then rows of it. */
function jointGrid(total: number): [number, number, number] {
  const gx = Math.max(1, Math.min(total, MAX_GROUPS));
  return [gx, Math.ceil(total / gx), 1];
}

/**
 * Uniform words a step's slot holds (recorded-encoder.ts: 256 bytes): `stride`, its fields, then
 * its grid's three sizes (GRID_FIELDS), which a joint program reads there (uniformGridAt).
 */
export const SLOT_WORDS = 64;
const GRID_FIELDS = ["fz_gx", "fz_gy", "fz_gz"];

/** The word of a step's uniform slot where its grid's sizes start (after `stride` and its fields), or null where the slot has no room for them. */
export function uniformGridAt(fields: number): number | null {
  const at = 1 + fields;
  return at + GRID_FIELDS.length <= SLOT_WORDS ? at : null;
}

/**
 * The WGSL of parts run as one program: part i's names prefixed `fz${i}_`, its storage bindings
 * after the earlier parts', its uniform struct after all storage bindings (in part order), its
 * workgroups after the earlier parts' in the joint grid (jointGrid). Each part's grid comes from
 * its uniform struct, whose fields GRID_FIELDS extend (the caller writes them after the part's own
 * fields): the code does not depend on the shapes, so a pair of programs compiles once (constant
 * grids had lavapipe's LLVM compile each shape anew, at its first dispatch).
 */
export function jointCode(parts: readonly ProgramShape[]): string {
  const threads = Math.max(...parts.map(threadsOf));
  const storage = parts.map(storageCount);
  const totalStorage = storage.reduce((a, b) => a + b, 0);
  const enables = [...new Set(parts.flatMap((p) => p.enables))];
  const bodies: string[] = [];
  const calls: string[] = [];
  let firstStorage = 0;
  parts.forEach((p, i) => {
    const prefix = `fz${i}_`;
    let text = prefixNames(p.text, prefix);
    // bindings: storage k → firstStorage + k; the uniform → after every part's storage
    text = text.replace(/@group\(0\)\s*@binding\((\d+)\)\s*var<([^>]*)>/g, (_m, k: string, kind: string) => {
      const at = kind.startsWith("uniform") ? totalStorage + i : firstStorage + Number(k);
      return `@group(0) @binding(${at}) var<${kind}>`;
    });
    // its uniform struct (uniformStruct's U) with its grid's sizes last
    const struct = new RegExp(`(struct\\s+${prefix}U\\s*\\{[^}]*?)(,?\\s*)\\}`);
    if (!struct.test(text)) throw new Error("fused-steps: no uniform struct U");
    text = text.replace(struct, (_m, body: string) => `${body}, ${GRID_FIELDS.map((f) => `${f}: u32`).join(", ")} }`);
    // the entry point: a function taking its builtins as plain parameters
    const head = new RegExp(`@compute\\s+@workgroup_size\\([^)]*\\)\\s*fn\\s+${prefix}main\\s*\\(`).exec(text);
    if (!head) throw new Error("fused-steps: no entry point main");
    // its parameters, to the parenthesis that closes them (builtins have their own)
    const open = head.index + head[0].length;
    let close = open;
    for (let depth = 1; depth > 0; close++) depth += text[close] === "(" ? 1 : text[close] === ")" ? -1 : 0;
    const params = text.slice(open, close - 1).split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
      const pm = /^@builtin\((\w+)\)\s*(\w+)\s*:\s*(.+)$/.exec(s);
      if (!pm) throw new Error(`fused-steps: an entry parameter that is not a builtin: ${s.slice(0, 40)}`);
      return { builtin: pm[1], name: pm[2], type: pm[3] };
    });
    text = `${text.slice(0, head.index)}fn ${prefix}main(${params.map((q) => `${q.name}: ${q.type}`).join(", ")})${text.slice(close)}`;
    bodies.push(text);
    const [sx, sy, sz] = p.size;
    const g = `fz_g${i}`;
    const wid = `fz_wid(fz_l - fz_at${i}, ${g})`;
    const lid = `fz_lid(fz_lix, ${sx}u, ${sy}u)`;
    const args = params.map((q) => {
      switch (q.builtin) {
        case "local_invocation_index": return "fz_lix";
        case "local_invocation_id": return lid;
        case "workgroup_id": return wid;
        case "num_workgroups": return g;
        case "global_invocation_id": return `${wid} * vec3<u32>(${sx}u, ${sy}u, ${sz}u) + ${lid}`;
        default: throw new Error(`fused-steps: builtin ${q.builtin}`);
      }
    });
    // a part of fewer threads (one without barriers: joinable) leaves the others idle
    const call = `${prefix}main(${args.join(", ")});`;
    const own = threadsOf(p);
    const u = `${prefix}u`;
    calls.push(`let ${g} = vec3<u32>(${GRID_FIELDS.map((f) => `${u}.${f}`).join(", ")});`);
    calls.push(`let fz_at${i + 1} = fz_at${i} + ${g}.x * ${g}.y * ${g}.z;`);
    calls.push(`if (fz_l >= fz_at${i} && fz_l < fz_at${i + 1}) { ${own < threads ? `if (fz_lix < ${own}u) { ${call} }` : call} }`);
    firstStorage += storage[i];
  });
  return `${enables.join("\n")}
fn fz_lid(i: u32, sx: u32, sy: u32) -> vec3<u32> { return vec3<u32>(i % sx, (i / sx) % sy, i / (sx * sy)); }
fn fz_wid(j: u32, g: vec3<u32>) -> vec3<u32> { return vec3<u32>(j % g.x, (j / g.x) % g.y, j / (g.x * g.y)); }
${bodies.join("\n")}
@compute @workgroup_size(${threads})
fn main(@builtin(workgroup_id) fz_w: vec3<u32>, @builtin(num_workgroups) fz_n: vec3<u32>, @builtin(local_invocation_index) fz_lix: u32) {
  let fz_l = fz_w.y * fz_n.x + fz_w.x;
  let fz_at0 = 0u;
  ${calls.join("\n  ")}
}`;
}

/** A step's buffer ranges and whether it writes them (its binding's access). */
function ranges(s: JoinStep, shape: ProgramShape): { buf: object | string; from: number; to: number; writes: boolean }[] {
  return s.refs.map((r, i) => {
    const writes = shape.access[i] === "read_write";
    if ("weight" in r) return { buf: `weight ${String(r.weight)}`, from: 0, to: Infinity, writes };
    if ("of" in r && "offset" in r && "size" in r) return { buf: r.of as object, from: r.offset as number, to: (r.offset as number) + (r.size as number), writes };
    return { buf: r, from: 0, to: Infinity, writes };
  });
}

/** Whether neither step writes a range the other binds. */
export function independent(a: JoinStep, sa: ProgramShape, b: JoinStep, sb: ProgramShape): boolean {
  const ra = ranges(a, sa), rb = ranges(b, sb);
  return !ra.some((x) => rb.some((y) => (x.writes || y.writes) && x.buf === y.buf && x.from < y.to && y.from < x.to));
}

/** The device limits joining checks. */
export interface JoinLimits {
  maxStorageBuffersPerShaderStage?: number;
  maxUniformBuffersPerShaderStage?: number;
  maxComputeWorkgroupStorageSize?: number;
}

/** Two steps joined (on the first's `joint`): the second, the joint program's key, code and grid. */
export interface Joint {
  with: JoinStep;
  key: string;
  code: () => string;
  grid: [number, number, number];
  /** Its bind groups (recorded-encoder.ts groupFor). */
  groups?: { bound: unknown[]; bindGroup: unknown; pipeline: unknown }[];
}

const threadsOf = (s: ProgramShape): number => s.size[0] * s.size[1] * s.size[2];
/** Its storage bindings (every binding but its uniform struct). */
const storageCount = (s: ProgramShape): number => s.access.filter((a) => a !== "uniform").length;
/** Workgroups its grid has. */
const groupCount = (s: JoinStep): number => s.grid[0] * s.grid[1] * s.grid[2];

/**
 * Whether a and b (in this order) may run as one program on a device of `limits`: as many threads
 * a workgroup, or the one of fewer without barriers (its extra threads return at once).
 */
function joinable(a: JoinStep, sa: ProgramShape, b: JoinStep, sb: ProgramShape, limits: JoinLimits): boolean {
  const [fewer] = [sa, sb].sort((x, y) => threadsOf(x) - threadsOf(y));
  return (threadsOf(sa) === threadsOf(sb) || !fewer.barriers)
    && sa.access.filter((x) => x === "uniform").length === 1 && sb.access.filter((x) => x === "uniform").length === 1
    && storageCount(sa) + storageCount(sb) <= (limits.maxStorageBuffersPerShaderStage ?? 8)
    && 2 <= (limits.maxUniformBuffersPerShaderStage ?? 12)
    && sa.sharedBytes !== null && sb.sharedBytes !== null && sa.sharedBytes + sb.sharedBytes <= (limits.maxComputeWorkgroupStorageSize ?? 16384)
    && groupCount(a) + groupCount(b) <= MAX_GROUPS * MAX_GROUPS
    && [a, b].every((s) => uniformGridAt(s.uniforms.length) !== null)
    && independent(a, sa, b, sb);
}

/** Program shapes by key (a key names one code). */
const shapes = new Map<string, ProgramShape>();
function shapeOf(s: JoinStep): ProgramShape {
  let sh = shapes.get(s.key);
  if (!sh) shapes.set(s.key, (sh = programShape(shaderText(s.code))));
  return sh;
}

/** a and b as one program, or null where they may not be (joinable). */
function jointOf(a: JoinStep, b: JoinStep, limits: JoinLimits): Joint | null {
  const [sa, sb] = [shapeOf(a), shapeOf(b)];
  if (!joinable(a, sa, b, sb, limits)) return null;
  return { with: b, key: `fz[${a.key}|${b.key}]`, code: () => jointCode([sa, sb]), grid: jointGrid(groupCount(a) + groupCount(b)) };
}

/**
 * Pairs neighbours of `steps` that may run as one program (joinable), left to right: sets the
 * first's `joint`. recordSteps then dispatches a pair once where both are in the list it records.
 */
export function joinSteps(steps: readonly JoinStep[], limits: JoinLimits): number {
  let joined = 0;
  for (let i = 0; i + 1 < steps.length; i++) {
    const joint = jointOf(steps[i], steps[i + 1], limits);
    if (!joint) continue;
    steps[i].joint = joint;
    joined++;
    i++;
  }
  return joined;
}

/**
 * One dispatch of two programs lists recorded together (jointSchedule): a step of one list, a
 * step and its next in its list (its `joint`), or a step of each list joined (`cross`).
 */
export type ScheduledUnit<S extends JoinStep> =
  | { kind: "one"; list: 0 | 1; step: S }
  | { kind: "next"; list: 0 | 1; step: S; joint: Joint }
  | { kind: "cross"; a: S; b: S; joint: Joint };

/**
 * The fewest dispatches that run two programs lists of independent calls (two plans' forwards,
 * or their backwards), each list in its order: a dynamic program over (i, j), the steps of each
 * recorded so far, whose moves are the units above.
 */
export function jointSchedule<S extends JoinStep>(A: readonly S[], B: readonly S[], limits: JoinLimits): ScheduledUnit<S>[] {
  const n = A.length, m = B.length;
  const cost: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(Infinity));
  const move: (ScheduledUnit<S> | null)[][] = Array.from({ length: n + 1 }, () => new Array<ScheduledUnit<S> | null>(m + 1).fill(null));
  cost[n][m] = 0;
  const consider = (i: number, j: number, unit: ScheduledUnit<S>, di: number, dj: number) => {
    const c = 1 + cost[i + di][j + dj];
    if (c < cost[i][j]) {
      cost[i][j] = c;
      move[i][j] = unit;
    }
  };
  for (let i = n; i >= 0; i--) {
    for (let j = m; j >= 0; j--) {
      if (i === n && j === m) continue;
      if (i < n) {
        consider(i, j, { kind: "one", list: 0, step: A[i] }, 1, 0);
        const next = A[i].joint;
        if (next && next.with === A[i + 1]) consider(i, j, { kind: "next", list: 0, step: A[i], joint: next }, 2, 0);
      }
      if (j < m) {
        consider(i, j, { kind: "one", list: 1, step: B[j] }, 0, 1);
        const next = B[j].joint;
        if (next && next.with === B[j + 1]) consider(i, j, { kind: "next", list: 1, step: B[j], joint: next }, 0, 2);
      }
      if (i < n && j < m) {
        const joint = jointOf(A[i], B[j], limits);
        if (joint) consider(i, j, { kind: "cross", a: A[i], b: B[j], joint }, 1, 1);
      }
    }
  }
  const out: ScheduledUnit<S>[] = [];
  for (let i = 0, j = 0; i < n || j < m; ) {
    const u = move[i][j]!;
    out.push(u);
    if (u.kind === "cross") {
      i++;
      j++;
    } else if (u.list === 0) i += u.kind === "next" ? 2 : 1;
    else j += u.kind === "next" ? 2 : 1;
  }
  return out;
}
