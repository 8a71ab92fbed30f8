/** REST handlers for /api/dashboards and /api/dashboards/:id (bound to paths in router.ts). */
import { createDashboardBody, dashboardIdParams, patchDashboardBody } from "../../lib/contracts/index.ts";
import { createDashboard, deleteDashboard, getDashboard, listDashboards, patchDashboard } from "../runs/dashboards.ts";
import { handler, parseWith, readJson, type Params } from "./http.ts";

const idOf = (params: Params) => parseWith(dashboardIdParams, params, "dashboard id").id;

export const dashboardsCollection = {
  GET: handler(async (_req, _p, d) => listDashboards(d.db)),
  POST: handler(async (req, _p, d) => createDashboard(d.db, parseWith(createDashboardBody, await readJson(req), "body")), 201),
};

export const dashboardItem = {
  GET: handler(async (_req, p, d) => getDashboard(d.db, idOf(p))),
  PATCH: handler(async (req, p, d) => patchDashboard(d.db, idOf(p), parseWith(patchDashboardBody, await readJson(req), "body"))),
  DELETE: handler(async (_req, p, d) => deleteDashboard(d.db, idOf(p))),
};
