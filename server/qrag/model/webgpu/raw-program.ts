/**
 * One WGSL compute program recorded into tfjs-webgpu's own command stream, with several outputs.
 *
 * Why not `backend.runWebGPUProgram`: it binds exactly one output, and the fused kernels here
 * (AdamW writes p, m and v; LayerNorm writes y and its row statistics) need several. This records
 * the program the way tfjs does (same command encoder and compute pass, the same deferred-submit
 * batching, buffers owned by the queue until submitted), so it orders correctly with tfjs's own
 * kernels and its outputs are ordinary tfjs tensors. Bindings: inputs (read-only storage) 0…I−1,
 * outputs (read_write) I…I+O−1, the tensors written in place (read_write), then one uniform
 * struct of 4-byte scalars. Each program counts as one dispatch in device.ts's counters.
 */
import * as tf from "@tensorflow/tfjs";
import { noteCompile, noteDispatch, onePassPerProgram } from "../../backend/device.ts";

/** The parts of tfjs-backend-webgpu 4.22's WebGPUBackend this uses. */
export interface WebgpuBackendLike {
  device: GpuDeviceLike;
  commandEncoder: { beginComputePass(d: object): ComputePassLike } | null;
  computePassEncoder: ComputePassLike | null;
  dispatchCountInPass: number;
  commandQueueOwnedIds: WeakSet<object>;
  makeTensorInfo(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  uploadToGPU(dataId: object): void;
  tensorToBinding(t: tf.TensorInfo): unknown;
  makeUniforms(u: Uniform[]): unknown;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
}
export interface GpuDeviceLike {
  limits: Record<string, number>;
  /** Its features (a GPUSupportedFeatures set): shader-f16 among them where requested (half-storage.ts). */
  features?: { has(f: string): boolean };
  createShaderModule(d: { code: string; label?: string }): unknown;
  createComputePipeline(d: object): PipelineLike;
  createBindGroup(d: object): unknown;
}
export interface PipelineLike {
  getBindGroupLayout(i: number): unknown;
}
interface ComputePassLike {
  setPipeline(p: unknown): void;
  setBindGroup(i: number, g: unknown): void;
  dispatchWorkgroups(x: number, y: number, z: number): void;
}

export interface Uniform {
  type: "float32" | "uint32" | "int32";
  data: number[];
}

export interface RawProgram {
  /** Cache key of the compiled pipeline: must change whenever `code` does. */
  key: string;
  /** The WGSL source; `main` must take `@builtin(global_invocation_id)` and use `threadIndex`. */
  code: ShaderSource;
  inputs: tf.TensorInfo[];
  outputs: { shape: number[]; dtype?: tf.DataType }[];
  /** Existing tensors the program reads and writes (read_write, bound after the outputs): in-place.ts's variables. */
  inPlace?: tf.TensorInfo[];
  /** Uniform scalars, in the order of the WGSL `U` struct (after the `stride` field this adds). */
  uniforms: Uniform[];
  /** Threads to launch (one-dimensional; the helper folds it into x/y workgroups). */
  threads: number;
  /**
   * Workgroups to launch, when the program tiles a grid itself (its own `@workgroup_size`; the
   * `stride` uniform is then 0): overrides the fold of `threads`, which must be > 0.
   */
  workgroups?: [number, number, number];
}

/** Workgroup width of every raw program (the WGSL must say `@workgroup_size(WG)`). */
export const WG = 64;

/**
 * WGSL: `value` of every thread summed over the workgroup into `acc[0]` (a tree in workgroup
 * memory; `acc: array<T, WG>` and `lid` declared by the program; call it in uniform control flow).
 */
export function workgroupSum(value: string): string {
  return `acc[lid.x] = ${value};
  workgroupBarrier();
  for (var w = ${WG / 2}u; w > 0u; w = w / 2u) {
    if (lid.x < w) { acc[lid.x] += acc[lid.x + w]; }
    workgroupBarrier();
  }`;
}
/** WebGPU's bound on workgroups along one grid dimension (maxComputeWorkgroupsPerDimension's default). */
export const MAX_GROUPS = 65535;

const pipelines = new WeakMap<object, Map<string, PipelineLike>>();

/**
 * The x/y workgroups of a one-dimensional launch of `threads` threads (WG per group, folded into
 * rows of at most MAX_GROUPS) and its `stride` uniform (threads per row of workgroups).
 */
export function foldThreads(key: string, threads: number): { grid: [number, number, number]; stride: number } {
  const groups = Math.ceil(threads / WG);
  const gx = Math.max(1, Math.min(groups, MAX_GROUPS));
  const gy = Math.ceil(groups / gx);
  if (gy > MAX_GROUPS) throw new Error(`${key}: ${threads} threads is too many`);
  return { grid: [gx, gy, 1], stride: gx * WG };
}

/**
 * WGSL, or what generates it: a program run each update (the optimizer's) or built into each new
 * plan passes the generator, called only when its key is not compiled yet.
 */
export type ShaderSource = string | (() => string);

/** A program's WGSL, made now where it is generated on demand. */
export const shaderText = (code: ShaderSource): string => (typeof code === "string" ? code : code());

/** The compute pipeline of `code` under `key` on this device, compiled once (all raw programs share the cache). */
export function cachedPipeline(device: GpuDeviceLike, key: string, code: ShaderSource): PipelineLike {
  let cache = pipelines.get(device);
  if (!cache) pipelines.set(device, (cache = new Map()));
  let pipeline = cache.get(key);
  if (!pipeline) {
    const t0 = performance.now();
    // the one place a generator's WGSL is made: on a cache miss (test/shader-cache.test.ts)
    const wgsl = shaderText(code);
    const module = device.createShaderModule({ code: wgsl, label: key });
    pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" }, label: key });
    cache.set(key, pipeline);
    noteCompile(performance.now() - t0);
  }
  return pipeline;
}

/** Pipelines compiled on this device so far (tests: a repeated program compiles nothing). */
export function pipelineCount(device: GpuDeviceLike): number {
  return pipelines.get(device)?.size ?? 0;
}

export function webgpuBackend(): WebgpuBackendLike {
  if (tf.getBackend() !== "webgpu") throw new Error(`fused webgpu kernels need the webgpu backend (active: ${tf.getBackend()})`);
  return tf.backend() as unknown as WebgpuBackendLike;
}

/** Storage buffers one shader stage may bind on this device. */
export function storageBufferLimit(be: WebgpuBackendLike = webgpuBackend()): number {
  return be.device.limits.maxStorageBuffersPerShaderStage ?? 8;
}

/**
 * WGSL preamble: the uniform struct (first field `stride`: threads per row of workgroups) and the
 * flat thread index `threadIndex(gid)`.
 */
export function uniformStruct(fields: string[]): string {
  return `struct U { stride: u32, ${fields.join(", ")} };
fn threadIndex(gid: vec3<u32>) -> u32 { return gid.y * u.stride + gid.x; }`;
}

/**
 * A program over k flat arrays laid end to end (one thread per element of all of them): thread j
 * runs `bodies[i]` with `j` the index inside array i, whose length is the uniform `n${i}`. The
 * fields must include `n0 … n{k−1}: u32`.
 */
export function concatenatedArraysShader(fields: string[], read: string[], write: string[], bodies: string[]): string {
  const branches = bodies.map((b, i) => `  if (j < u.n${i}) {\n${b}\n    return;\n  }\n  j = j - u.n${i};`);
  return `${uniformStruct(fields)}
${storageDecls(read, write)}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  var j = threadIndex(gid);
${branches.join("\n")}
}`;
}

/** Records `prog` and returns its outputs (new tensor infos, owned by the caller). */
export function runRawProgram(be: WebgpuBackendLike, prog: RawProgram): tf.TensorInfo[] {
  const nIn = prog.inputs.length;
  const inPlace = prog.inPlace ?? [];
  const nStorage = nIn + prog.outputs.length + inPlace.length;
  if (nStorage > storageBufferLimit(be)) throw new Error(`${prog.key}: ${nStorage} storage buffers > device limit ${storageBufferLimit(be)}`);
  for (const t of [...prog.inputs, ...inPlace]) be.uploadToGPU(t.dataId);
  const outs = prog.outputs.map((o) => {
    const info = be.makeTensorInfo(o.shape, o.dtype ?? "float32");
    be.uploadToGPU(info.dataId);
    return info;
  });
  if (prog.threads === 0) return outs;
  const fold = foldThreads(prog.key, prog.threads);
  const grid = prog.workgroups ?? fold.grid;
  if (grid.some((g) => g > MAX_GROUPS)) throw new Error(`${prog.key}: workgroups ${grid.join("×")} exceed ${MAX_GROUPS} per dimension`);

  const pipeline = cachedPipeline(be.device, prog.key, prog.code);
  const uniforms = be.makeUniforms([{ type: "uint32", data: [prog.workgroups ? 0 : fold.stride] }, ...prog.uniforms]);
  const all = [...prog.inputs, ...outs, ...inPlace];
  const entries = all.map((t, i) => ({ binding: i, resource: be.tensorToBinding(t) }));
  entries.push({ binding: nStorage, resource: uniforms });
  for (const t of all) be.commandQueueOwnedIds.add(t.dataId);
  const bindGroup = be.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });

  be.ensureCommandEncoderReady();
  if (!be.computePassEncoder) be.computePassEncoder = be.commandEncoder!.beginComputePass({});
  be.computePassEncoder.setPipeline(pipeline);
  be.computePassEncoder.setBindGroup(0, bindGroup);
  be.computePassEncoder.dispatchWorkgroups(grid[0], grid[1], grid[2]);
  be.dispatchCountInPass++;
  noteDispatch(prog.key);
  if (onePassPerProgram()) be.endComputePassEncoder();
  if (tf.env().getNumber("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE") <= be.dispatchCountInPass) {
    be.endComputePassEncoder();
    be.submitQueue();
  }
  return outs;
}

/** Runs a raw program with float32 outputs of these shapes, each wrapped as a tensor (`workgroups`: RawProgram's). */
export function runToTensors(key: string, code: ShaderSource, inputs: tf.Tensor[], outputs: number[][], uniforms: Uniform[], threads: number, workgroups?: [number, number, number]): tf.Tensor[] {
  const infos = runRawProgram(webgpuBackend(), { key, code, inputs, outputs: outputs.map((shape) => ({ shape })), uniforms, threads, workgroups });
  return infos.map((i) => tf.engine().makeTensorFromTensorInfo(i));
}

/** Storage bindings: `read` names first, then `write` names, as `array<f32>` (`name:i32`: `array<i32>`). */
export function storageDecls(read: string[], write: string[]): string {
  const r = read.map((n, i) => {
    const [name, type] = n.split(":");
    return `@group(0) @binding(${i}) var<storage, read> ${name}: array<${type ?? "f32"}>;`;
  });
  const w = write.map((n, i) => {
    const [name, type] = n.split(":");
    return `@group(0) @binding(${read.length + i}) var<storage, read_write> ${name}: array<${type ?? "f32"}>;`;
  });
  return [...r, ...w, `@group(0) @binding(${read.length + write.length}) var<uniform> u: U;`].join("\n");
}
