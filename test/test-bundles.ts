/**
 * esbuild bundles of processes that tests start again and again: the trainer worker with its engine
 * process and the dashboard server (crash-points kills one per trial; platform-e2e, scale-out and
 * the Slurm executor's dashboards, whose local worker and Slurm jobs then run the worker's bundle
 * beside it: server/worker-entry.ts), and the webgpu case files (a fresh process per case). Under tsx every start resolves and loads hundreds of modules through
 * its loader hooks, about 2.5 s of CPU before a server answers, a case runs its first line or an
 * engine trains; a bundle starts in about 1 s. What runs is the same code (esbuild is also what tsx
 * transpiles with); only module loading differs, which none of these tests is about.
 *
 * A bundle sits where its source sits relative to a temporary folder that links the repository's
 * node_modules (the packages left external, and files found by package: wasm binaries, word
 * vectors, the noise corpus), test/fixtures, prisma/ and configs/, so paths computed from
 * `import.meta.url` (the engine process beside the worker, the migrations, the fixtures, a bundled
 * worker's presets) hold. The server bundle finds the presets through QRAG_CONFIG_DIR (`BUNDLE_ENV`):
 * the engine's default config folder is computed from its own location, one folder too high there.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ROOT, tmpDir } from "./platform-helpers.ts";

/** As scripts/device/pack.ts's bundles, plus __dirname/__filename (tfjs-backend-wasm's loader reads them); one file each, not split (the LLM packages are in node_modules here). */
const ESBUILD_ARGS = [
  "--bundle", "--platform=node", "--format=esm", "--target=node20", "--log-level=warning",
  "--external:webgpu", "--external:node-llama-cpp", "--external:@node-llama-cpp/*", "--external:openai",
  "--banner:js=import { createRequire as __cr } from 'node:module'; import { fileURLToPath as __fu } from 'node:url'; import { dirname as __dn } from 'node:path'; " +
    "const require = __cr(import.meta.url); const __filename = __fu(import.meta.url); const __dirname = __dn(__filename);",
];

/** Environment a bundled process needs besides the usual. */
export const BUNDLE_ENV: Record<string, string> = { QRAG_CONFIG_DIR: path.join(ROOT, "configs") };

/** Links to the repository inside bundle folders, unlinked (never followed) before the folders go. */
const links: string[] = [];
const roots: string[] = [];
process.once("exit", () => {
  for (const l of links) fs.rmSync(l, { force: true });
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
});
function link(target: string, at: string): void {
  fs.symlinkSync(target, at, "dir");
  links.push(at);
}

/** A temporary stand-in for the repository root (removed when the test process exits): its node_modules and test/fixtures linked. */
function bundleRoot(): string {
  const dir = tmpDir("qrag-bundle-");
  roots.push(dir);
  link(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  fs.mkdirSync(path.join(dir, "test"));
  link(path.join(ROOT, "test", "fixtures"), path.join(dir, "test", "fixtures"));
  return dir;
}

/** Bundles `source` (relative to the repository) to the same place under `root`, as .mjs. */
function bundle(root: string, source: string, external: string[]): string {
  const out = path.join(root, source.replace(/\.ts$/, ".mjs"));
  const esbuild = path.join(ROOT, "node_modules", ".bin", "esbuild");
  execFileSync(esbuild, [path.join(ROOT, source), ...ESBUILD_ARGS, ...external.map((e) => `--external:${e}`), `--outfile=${out}`], { stdio: ["ignore", "inherit", "inherit"] });
  return out;
}

/** Packages the platform's bundles leave external (native addons, Next; as scripts/device/pack.ts). */
const PLATFORM_EXTERNAL = ["better-sqlite3", "@node-rs/argon2", "next", "pg-native", "bufferutil", "utf-8-validate", "@tensorflow/tfjs-node", "@tensorflow/tfjs-node-gpu"];

let platform: { root: string; server?: string; worker?: string } | undefined;
const platformRoot = (): { root: string; server?: string; worker?: string } => {
  if (platform) return platform;
  const root = bundleRoot();
  // the server migrates its database from <root>/prisma/<provider>/migrations; a bundled worker
  // finds the presets in <root>/configs (a Slurm job's worker gets no QRAG_CONFIG_DIR)
  link(path.join(ROOT, "prisma"), path.join(root, "prisma"));
  link(path.join(ROOT, "configs"), path.join(root, "configs"));
  return (platform = { root });
};

/**
 * The worker's entry (start it with plain `node` and BUNDLE_ENV), its engine process beside it;
 * built once per test process (about 1.5 s). tfjs is inside: the worker runs wasm or cpu here.
 */
export function workerBundle(): string {
  const p = platformRoot();
  if (!p.worker) {
    bundle(p.root, "server/worker/engine-process.ts", PLATFORM_EXTERNAL);
    p.worker = bundle(p.root, "server/worker/main.ts", PLATFORM_EXTERNAL);
  }
  return p.worker;
}

/**
 * The dashboard server's entry (plain `node`, BUNDLE_ENV), with or without Next and its local
 * worker: the Next production build (.next/, public/, next.config.ts) is linked into the bundle's
 * root, which the server serves pages from, and its local worker is the worker's bundle beside it
 * (server/main.ts runs main.mjs there without tsx). Next itself stays a package in node_modules.
 */
export function serverBundle(): string {
  const p = platformRoot();
  if (!p.server) {
    workerBundle();
    for (const f of [".next", "public", "next.config.ts"]) if (fs.existsSync(path.join(ROOT, f))) link(path.join(ROOT, f), path.join(p.root, f));
    p.server = bundle(p.root, "server/main.ts", PLATFORM_EXTERNAL);
  }
  return p.server;
}

const cases = new Map<string, string>();

/**
 * A webgpu case file's bundle. tfjs stays external: the backend picker imports
 * @tensorflow/tfjs-backend-webgpu by a computed name, at run time, from node_modules, and it must
 * find the same tfjs-core there as the bundle's code uses.
 */
export function caseBundle(source: string): string {
  let out = cases.get(source);
  if (!out) cases.set(source, (out = bundle(bundleRoot(), source, ["@tensorflow/*"])));
  return out;
}
