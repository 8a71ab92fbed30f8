/**
 * Multi-threaded tfjs-wasm in Node.
 *
 * tfjs-backend-wasm ships a pthreads build (XNNPACK thread pool over emscripten pthreads), but
 * disables it in Node (tfjs issue #3830): its worker and main scripts are handed to emscripten
 * as `blob:` URLs, which worker_threads cannot load. Three shims, active only while the backend
 * initialises, make it work:
 *   - blobs that become URLs are written to a temporary folder and their file path is returned;
 *     the bundled main script gets the module-scope names rollup gave its `require`s, and the
 *     worker script is told where that file is (it receives the main script as a cloned Blob);
 *   - `os.cpus()` is doubled, because the wasm build sizes its pool to min(requested,
 *     logical cores / 2) assuming hyper-threading; a 2-vCPU machine would get one thread;
 *   - the pool's workers are unref'd so they do not keep a finished process alive.
 * The folder is removed once the workers have loaded. `QRAG_WASM_THREADS=1` restores the
 * single-threaded build.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { engineSettings } from "../settings.ts";

/** emscripten's pre-spawned pool (PTHREAD_POOL_SIZE of the tfjs build); more would need blobs later. */
export const MAX_WASM_THREADS = 8;

/** One thread per logical core, less `reserveCores` kept for other work, within 1…8. */
export function wasmThreadsAuto(reserveCores = 0): number {
  return Math.max(1, Math.min(MAX_WASM_THREADS, os.cpus().length - reserveCores));
}

/** Threads for the wasm backend: the engine's wasmThreads (settings.ts, `QRAG_WASM_THREADS`: 1…8) or one per logical core. */
export function wasmThreadsWanted(setting: string | undefined = engineSettings().wasmThreads): number {
  const raw = (setting ?? "").trim();
  if (raw === "" || raw === "auto") return wasmThreadsAuto();
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_WASM_THREADS) {
    throw new Error(`QRAG_WASM_THREADS: expected an integer 1…${MAX_WASM_THREADS} or "auto", got "${raw}"`);
  }
  return n;
}

// Names the rollup bundle (tf-backend-wasm.node.js) binds its requires to inside the factory.
const BUNDLE_SCOPE =
  "var require$$0=require('fs'),require$$1=require('path'),require$$3=require('perf_hooks')," +
  "require$$4=require('os'),commonjsGlobal=globalThis;\n";
const MAIN_MARK = "var WasmBackendModuleThreadedSimd";

/** Runs `init` (the backend's initialisation) with the Node shims in place, then removes them. */
export async function withWasmThreadShims<T>(threads: number, init: () => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-wasm-"));
  const g = globalThis as { Blob: typeof Blob };
  const NativeBlob = g.Blob;
  const nativeCreate = URL.createObjectURL;
  const nativeCpus = os.cpus;
  let mainPath = "";
  let n = 0;
  class FileBlob extends NativeBlob {
    readonly source: string;
    constructor(parts: BlobPart[], opts?: BlobPropertyBag) {
      super(parts, opts);
      this.source = parts.every((p) => typeof p === "string") ? parts.join("") : "";
      if (this.source.startsWith(MAIN_MARK)) {
        mainPath = path.join(dir, "main.js");
        fs.writeFileSync(mainPath, BUNDLE_SCOPE + this.source);
      }
    }
  }
  g.Blob = FileBlob as unknown as typeof Blob;
  URL.createObjectURL = (obj: Blob) => {
    if (!(obj instanceof FileBlob) || !obj.source) return nativeCreate(obj);
    const file = path.join(dir, `blob-${n++}.js`);
    const worker = obj.source.includes("nodeWorkerThreads");
    // In the worker, the main script arrives as a structured-clone Blob: point it at our file.
    const prefix = worker ? `URL.createObjectURL=()=>${JSON.stringify(mainPath)};URL.revokeObjectURL=()=>{};\n` : "";
    fs.writeFileSync(file, prefix + obj.source);
    return file;
  };
  const cpus = nativeCpus();
  (os as { cpus: () => os.CpuInfo[] }).cpus = () => Array.from({ length: 2 * threads }, (_, i) => cpus[i % cpus.length]!);
  try {
    return await init();
  } finally {
    g.Blob = NativeBlob;
    URL.createObjectURL = nativeCreate;
    (os as { cpus: () => os.CpuInfo[] }).cpus = nativeCpus;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

interface PThreadPool {
  unusedWorkers: { unref(): void }[];
  runningWorkers: { unref(): void }[];
}

/** Lets the process exit while pool workers idle; `module` is the wasm backend's emscripten module. */
export function unrefPoolWorkers(module: unknown): void {
  const pt = (module as { PThread?: PThreadPool } | undefined)?.PThread;
  if (!pt) return;
  for (const w of [...pt.unusedWorkers, ...pt.runningWorkers]) w.unref();
}
