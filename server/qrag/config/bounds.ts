/**
 * The zod building blocks of the run config's bounds, shared by config-schema.ts and the dataset
 * registry (datasets.ts). Every size a user can set has a ceiling: a run must not be able to
 * exhaust the worker's memory or time.
 */
import { z } from "zod";

export const int = (min = 0, max = 10_000_000) => z.number().int().min(min).max(max);
export const prob = z.number().min(0).max(1);
