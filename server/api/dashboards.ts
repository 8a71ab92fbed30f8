/** REST handlers for /api/dashboards and /api/dashboards/:id (bound to paths in router.ts). */
import { createDashboardBody, dashboardIdParams, patchDashboardBody } from "../../lib/contracts/index.ts";
import { createDashboard, deleteDashboard, getDashboard, listDashboards, patchDashboard } from "../runs/dashboards.ts";
import { handler, parseWith, readJson, type ApiDeps, type Params } from "./http.ts";

const idOf = (params: Params) => parseWith(dashboardIdParams, params, "dashboard id").id;
/** The caller the router set (the gate lets no request through without one). */
const who = (d: ApiDeps) => {
  if (!d.principal) throw new Error("dashboards: no principal on the request");
  return d.principal;
};

export const dashboardsCollection = {
  GET: handler(async (_req, _p, d) => listDashboards(d.db, who(d))),
  POST: handler(async (req, _p, d) => createDashboard(d.db, parseWith(createDashboardBody, await readJson(req), "body"), who(d)), 201),
};

export const dashboardItem = {
  GET: handler(async (_req, p, d) => getDashboard(d.db, idOf(p), who(d))),
  PATCH: handler(async (req, p, d) => patchDashboard(d.db, idOf(p), parseWith(patchDashboardBody, await readJson(req), "body"), who(d))),
  DELETE: handler(async (_req, p, d) => deleteDashboard(d.db, idOf(p), who(d))),
};
