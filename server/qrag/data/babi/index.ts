/** Public surface of the bAbI qa1–qa5 data layer (what code outside data/babi/ imports). */
export { BABI_TASKS } from "./vocab.ts";
export { babiSource } from "./source.ts";
