/** REST handler for GET /api/data-files: the data root's files and folders (bound in router.ts). */
import path from "node:path";
import { DATA_FILES_MAX_DEPTH, DATA_FILES_MAX_ENTRIES, type DataFilesDto } from "../../lib/contracts/index.ts";
import { listDataRoot } from "../qrag/index.ts";
import { settings } from "../settings.ts";
import { handler } from "./http.ts";

export const dataFiles = {
  GET: handler(async (_req, _p, d): Promise<DataFilesDto> => {
    const root = path.resolve(d.dataRoot ?? settings().dataRoot);
    return { root, ...listDataRoot(root, { maxEntries: DATA_FILES_MAX_ENTRIES, maxDepth: DATA_FILES_MAX_DEPTH }) };
  }),
};
