/**
 * TensorFlow.js backend selection for Node.
 *
 * Order: tfjs-node-gpu → webgpu (a hardware adapter) → tfjs-node → wasm → cpu. The two native
 * packages are not dependencies of this project (their install downloads libtensorflow, which
 * fails offline); they are used only if someone installed them. webgpu comes from the optional
 * packages `webgpu` + `@tensorflow/tfjs-backend-webgpu` (backend-webgpu.ts). The wasm binaries are
 * loaded from node_modules (no network). wasm uses its pthreads build with one thread per core
 * (`QRAG_WASM_THREADS`, see wasm-threads.ts).
 *
 * `QRAG_BACKEND` (or the argument) forces one backend: `tensorflow` (tfjs-node-gpu if installed,
 * else tfjs-node) | `tensorflow-gpu` (tfjs-node-gpu only) | `webgpu` (a software adapter too) |
 * `wasm` | `cpu` (aliases: `node-gpu`, `tfjs-node-gpu`, `gpu`, `node`, `tfjs-node`, `dawn`);
 * `auto` (or empty) = the order above. The names, aliases and their parse: backend-names.ts. A forced backend that cannot load is an error that names
 * why; on auto, the next one is tried and the reasons come back in `skipped` (the worker logs webgpu's).
 */
import * as tf from "@tensorflow/tfjs";
import { createRequire } from "node:module";
import path from "node:path";
import { engineSettings } from "../settings.ts";
import { BACKENDS, parseBackendPref, type BackendChoice } from "./names.ts";
import { adapterLabel, installWebgpu, type WebgpuAdapter } from "./webgpu.ts";
import { patchWebgpuAddN } from "./webgpu-addn.ts";
import { patchWebgpuUpload } from "./webgpu-upload.ts";
import { errorText } from "../util/error-text.ts";
import { unrefPoolWorkers, wasmThreadsWanted, withWasmThreadShims } from "./wasm-threads.ts";

interface BackendInfo {
  /** tfjs backend name as registered: "tensorflow", "webgpu", "wasm" or "cpu". */
  backend: string;
  /** Human-readable device, e.g. "wasm (1 thread, SIMD)", "cpu", "webgpu: nvidia …", "tensorflow GPU (tfjs-node-gpu)". */
  device: string;
  /** The WebGPU adapter (webgpu backend only). */
  adapter?: WebgpuAdapter;
  /** On auto: why each backend before the chosen one was not used (one line each). */
  skipped?: string[];
}

type Choice = BackendChoice;
/** `auto` tries them in this order. */
const AUTO_ORDER: readonly Choice[] = BACKENDS;

export { parseBackendPref };

// Module names held in variables so TypeScript neither resolves nor requires their types.
const NODE_GPU_PKG: string = "@tensorflow/tfjs-node-gpu";
const NODE_PKG: string = "@tensorflow/tfjs-node";
const WEBGPU_PKG: string = "@tensorflow/tfjs-backend-webgpu";

let current: { choice: Choice; info: BackendInfo } | undefined;
let pending: { key: string; promise: Promise<BackendInfo> } | undefined;
let wasmPathsSet = false;

/**
 * Selects and initialises a backend. Idempotent: once a backend is active, a second call (auto,
 * or forcing the same backend) returns the same result without re-initialising; forcing a
 * different backend switches to it.
 */
export function pickBackend(pref?: string): Promise<BackendInfo> {
  const choice = parseBackendPref(pref ?? engineSettings().backend);
  if (current && tf.getBackend() === current.info.backend && (choice === "auto" || choice === current.choice)) {
    return Promise.resolve(current.info);
  }
  if (pending && pending.key === choice) return pending.promise;
  const promise = doPick(choice).then(
    (res) => {
      current = res;
      pending = undefined;
      return res.info;
    },
    (err: unknown) => {
      pending = undefined;
      throw err;
    },
  );
  pending = { key: choice, promise };
  return promise;
}

async function doPick(choice: Choice | "auto"): Promise<{ choice: Choice; info: BackendInfo }> {
  // Silence tfjs console chatter (the cpu backend's "Hi, looks like you are running TensorFlow.js
  // in Node.js" banner and similar); prod mode only affects these log/warn calls.
  tf.env().set("PROD", true);
  if (choice !== "auto") return { choice, info: await tryOne(choice) };
  const reasons: string[] = [];
  for (const c of AUTO_ORDER) {
    try {
      const info = await tryOne(c, true);
      return { choice: c, info: reasons.length ? { ...info, skipped: reasons } : info };
    } catch (e) {
      reasons.push(`${c}: ${errorText(e)}`);
    }
  }
  throw new Error(`no tfjs backend could be initialised (${reasons.join("; ")})`);
}

async function tryOne(c: Choice, auto = false): Promise<BackendInfo> {
  switch (c) {
    case "webgpu": {
      // navigator.gpu must exist before tfjs-backend-webgpu is imported: it registers itself only then
      const adapter = await installWebgpu(!auto);
      try {
        await import(WEBGPU_PKG);
      } catch (e) {
        throw new Error(`${WEBGPU_PKG} is not installed or failed to load (${errorText(e)})`);
      }
      patchWebgpuAddN();
      await activate("webgpu", WEBGPU_PKG);
      patchWebgpuUpload();
      return { backend: "webgpu", device: adapterLabel(adapter), adapter };
    }
    case "tensorflow-gpu":
    case "tensorflow": {
      // "tensorflow" takes tfjs-node-gpu when installed, else tfjs-node (both register the
      // "tensorflow" backend); "tensorflow-gpu" insists on the GPU package.
      const pkgs = c === "tensorflow-gpu" ? [NODE_GPU_PKG] : [NODE_GPU_PKG, NODE_PKG];
      const reasons: string[] = [];
      for (const pkg of pkgs) {
        let mod: unknown;
        try {
          mod = await import(pkg);
        } catch (e) {
          reasons.push(`${pkg} is not installed or failed to load (${errorText(e)})`);
          continue;
        }
        await activate("tensorflow", pkg);
        return { backend: "tensorflow", device: nativeDevice(mod, pkg === NODE_GPU_PKG) };
      }
      throw new Error(reasons.join("; "));
    }
    case "wasm": {
      let wasm: typeof import("@tensorflow/tfjs-backend-wasm");
      try {
        wasm = await import("@tensorflow/tfjs-backend-wasm");
      } catch (e) {
        throw new Error(`@tensorflow/tfjs-backend-wasm failed to load (${errorText(e)})`);
      }
      if (!wasmPathsSet) {
        const require = createRequire(import.meta.url);
        const wasmFile = require.resolve("@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm");
        wasm.setWasmPaths(path.dirname(wasmFile) + path.sep);
        wasmPathsSet = true;
      }
      const threads = wasmThreadsWanted();
      if (threads > 1) {
        // Threaded build: needs the Node shims of wasm-threads.ts while it initialises.
        tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", true);
        wasm.setThreadsCount(threads);
        await withWasmThreadShims(threads, () => activate("wasm", "@tensorflow/tfjs-backend-wasm"));
        unrefPoolWorkers((tf.backend() as unknown as { wasm?: unknown }).wasm);
      } else {
        tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", false);
        await activate("wasm", "@tensorflow/tfjs-backend-wasm");
      }
      let simd = false;
      try {
        simd = Boolean(await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"));
      } catch {
        /* flag missing: report without SIMD */
      }
      let used = 1;
      try {
        used = wasm.getThreadsCount();
      } catch {
        /* older builds: single thread */
      }
      return {
        backend: "wasm",
        device: `wasm (${used} thread${used === 1 ? "" : "s"}${simd ? ", SIMD" : ""})`,
      };
    }
    case "cpu":
      await activate("cpu", "@tensorflow/tfjs-backend-cpu");
      return { backend: "cpu", device: "cpu" };
  }
}

async function activate(name: string, pkg: string): Promise<void> {
  let ok = false;
  try {
    ok = await tf.setBackend(name);
  } catch (e) {
    throw new Error(`tfjs backend "${name}" (${pkg}) failed to initialise: ${errorText(e)}`);
  }
  if (!ok || tf.getBackend() !== name) {
    throw new Error(`tfjs backend "${name}" (${pkg}) is not available`);
  }
  await tf.ready();
}

/** Best-effort device description for the native backends. */
function nativeDevice(mod: unknown, gpu: boolean): string {
  const base = gpu ? "tensorflow GPU (tfjs-node-gpu)" : "tensorflow CPU (tfjs-node)";
  // tfjs-node exposes no public device query; look for a GPU name if some build reports one.
  try {
    const m = mod as { getGPUName?: () => string; version?: { "tfjs-node"?: string } };
    if (gpu && typeof m.getGPUName === "function") {
      const name = m.getGPUName();
      if (name) return `${name} (tfjs-node-gpu)`;
    }
  } catch {
    /* ignore */
  }
  return base;
}
