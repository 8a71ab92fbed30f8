/** POST /api/runs/import: a finished run's files → a read-only imported run (server/runs/import.ts). */
import { importRunBody } from "../../lib/contracts/index.ts";
import { importRun } from "../runs/import.ts";
import { handler, parseWith, readJson } from "./http.ts";

export const runsImport = {
  POST: handler(async (req, _p, d) => importRun(d.db, parseWith(importRunBody, await readJson(req), "body"), d), 201),
};
