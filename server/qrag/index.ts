/**
 * The engine's public face for the platform (server/api, server/runs, server/worker, server/main):
 * configs, events, errors, checkpoint inspection, path checks and the engine's settings
 * (`configureEngine`, settings.ts). Light to import: nothing here loads TensorFlow.js
 * (test/engine-face.test.ts holds it). Training itself (`train`, `pickBackend`) is in
 * ./runtime.ts, which the worker's engine process imports on its own. Lint forbids the platform any other path into server/qrag.
 */
export {
  buildRunConfig, configJsonSchema, ConfigError, describeConfig, fieldIssues, presetNames, resolveConfig, validateConfig,
  type ConfigIssue, type RunConfig, type RunConfigInput,
} from "./config/config.ts";
export type { EngineEvent } from "./events.ts";
export { checkpointFiles, findCheckpoint, isCheckpoint } from "./training/checkpoint.ts";
export { ENGINE_VERSION } from "./version.ts";
export { wasmThreadsAuto } from "./backend/wasm-threads.ts";
export { regenerateHaystack, HaystackUnavailable, type Haystack } from "./evaluation/replay.ts";
export { checkEnvPaths } from "./data/registry.ts";
export { checkEncoderPath } from "./model/hf/encoder-path.ts";
export { writeRandomBert, type BertSize } from "./model/hf/random-bert.ts";
export { writeTinyGguf, type TinyGgufOptions } from "./reader/tiny-gguf.ts";
export { openGgufReader, openOpenAiReader } from "./reader/open.ts";
export { openReader, parseReaderSpec, type ReaderSpec } from "./reader/spec.ts";
export {
  cachedReader, withTimeout, limitConcurrency, PromptTooLongError, ReaderTimeoutError, ReaderCallError,
  type Reader, type ReaderAnswer, type ReaderInput, type ReaderFailure,
} from "./reader/reader.ts";
export { readerPrompt, type ReaderDataset } from "./reader/prompts.ts";
export { scoreAnswer, type AnswerScore } from "./reader/score.ts";
export { resolveDataPath, isReservedDataPath, realDataRoot, listDataRoot, openedPath } from "./data-root.ts";
export { configureEngine, engineSettings, readerUrl, type EngineSettings } from "./settings.ts";
export { BACKEND_PREFS } from "./backend/names.ts";
export { openGgufChat, openOpenAiChat } from "./reader/open.ts";
export type { ChatModel, ChatReply, ChatRequest, OutputSchema } from "./reader/chat.ts";
export { runAgent, type AgentRunOptions } from "./llm-agent/run.ts";
export { parseModelSpec, type ModelSpec } from "./llm-agent/model-spec.ts";
export { AGENT_LIMITS } from "./llm-agent/limits.ts";
export { AGENT_FORMATS, type AgentFormat } from "./llm-agent/step-format.ts";
export { playgroundInput, playgroundSample } from "./evaluation/playground.ts";
