/** Engine version recorded in run metadata and checkpoints. */
export const ENGINE_VERSION = "0.1.0";
