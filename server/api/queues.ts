/** REST handler for /api/queues: the launch form's queue select and the top bar's pending counts. */
import { listQueues } from "../runs/queues.ts";
import { handler } from "./http.ts";

export const queues = {
  GET: handler(async (_req, _p, d) => listQueues(d.db)),
};
