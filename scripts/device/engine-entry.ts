/**
 * Entry of the device pack's engine bundle (.device/app/server/worker/engine-process.mjs, forked by
 * the worker bundle beside it): the literal import that the tfjs-backend-webgpu shim calls (see
 * bench-entry.ts), then the engine process itself.
 */
(globalThis as { __qragLoadTfjsWebgpu?: () => Promise<unknown> }).__qragLoadTfjsWebgpu = () => import("@tensorflow/tfjs-backend-webgpu");
await import("../../server/worker/engine-process.ts");
export {};
