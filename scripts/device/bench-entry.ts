/**
 * Entry of the device bundle (.device/bench/bench.mjs): `npm run bench` without node_modules.
 * backend.ts imports @tensorflow/tfjs-backend-webgpu by a name held in a variable, which esbuild
 * cannot follow; the shim package that pack.ts writes under .device/node_modules calls this
 * literal import instead, so the bundled copy (sharing the bundle's tfjs-core) is the one loaded.
 */
(globalThis as { __qragLoadTfjsWebgpu?: () => Promise<unknown> }).__qragLoadTfjsWebgpu = () => import("@tensorflow/tfjs-backend-webgpu");
// in the split bundle main.ts is a chunk, not the script node started: call its CLI, not its main-module check
const { benchCli } = await import("../../server/qrag/bench/main.ts");
await benchCli(process.argv.slice(2));
export {};
