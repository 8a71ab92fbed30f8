/** REST handler for an episode's haystack texts (bound to a path in router.ts). */
import { episodeChunksQuery, episodeIdParams } from "../../lib/contracts/index.ts";
import { getEpisodeChunks } from "../runs/chunks.ts";
import { handler, parseWith, queryOf } from "./http.ts";

export const episodeChunks = {
  GET: handler(async (req, p, d) => {
    const { id, episodeId } = parseWith(episodeIdParams, p, "episode id");
    return getEpisodeChunks(d.db, id, episodeId, parseWith(episodeChunksQuery, queryOf(req), "query"), d.dataRoot);
  }),
};
