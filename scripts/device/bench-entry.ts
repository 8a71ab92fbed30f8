/**
 * Entry of the device bundle (.device/bench.mjs): `npm run bench` without node_modules.
 * backend.ts imports @tensorflow/tfjs-backend-webgpu by a name held in a variable, which esbuild
 * cannot follow; the shim package that pack.ts writes under .device/node_modules calls this
 * literal import instead, so the bundled copy (sharing the bundle's tfjs-core) is the one loaded.
 */
(globalThis as { __qragLoadTfjsWebgpu?: () => Promise<unknown> }).__qragLoadTfjsWebgpu = () => import("@tensorflow/tfjs-backend-webgpu");
await import("../../server/qrag/bench/main.ts");
export {};
