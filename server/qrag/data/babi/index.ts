/** Public surface of the bAbI qa1–qa5 data layer. */
export { BABI_TASKS, BABI_TASK_NAMES, toBabiTask, type BabiTask } from "./vocab.ts";
export type { BabiFact, BabiLine, BabiQA, BabiQuery, BabiResolution, BabiStory } from "./types.ts";
export { parseBabiFile, formatBabiStory } from "./format.ts";
export { BabiSentenceError, parseFact, parseQuery } from "./sentences.ts";
export { BabiConsistencyError, BabiKnowledge } from "./knowledge.ts";
export { BabiResolveError, askableQueries, resolveQuestion } from "./resolve.ts";
export { BabiWorld } from "./world.ts";
export { generateStory, questionsPerStory } from "./generate.ts";
export { storyQuestions } from "./questions.ts";
export { babiSource, type BabiSourceOptions } from "./source.ts";
export { checkBabiFiles, detectTask, formatCheckReport, taskFromFileName, type BabiCheckResult } from "./check.ts";
