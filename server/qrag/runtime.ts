/**
 * The engine's training and sweep entry points for the worker's engine process (server/worker/engine-process.ts).
 * Importing this loads TensorFlow.js and picks a backend, so the dashboard server never does.
 */
export { train } from "./training/train.ts";
export { sweep } from "./evaluation/sweep.ts";
export { pickBackend } from "./backend/pick.ts";
export { openPlaygroundAgent, type PlaygroundAgent } from "./evaluation/playground-agent.ts";
