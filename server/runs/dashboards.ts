/**
 * Saved dashboards: a named compare spec (runs or a filter, panels, grouping, chart settings)
 * stored as JSON text. The spec is validated by the contract on the way in, and again on the
 * way out so that a row written by an older version cannot hand the browser a malformed spec.
 * Each has an owner: the owner or an admin edits and deletes it; everyone else reads it and may
 * save a copy (a new dashboard of their own).
 */
import crypto from "node:crypto";
import { dashboardSpec, type CreateDashboardBody, type DashboardDto, type PatchDashboardBody } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { ApiError, notFound } from "./errors.ts";

/** Who asks: a user's name and role (the dashboard's own name for a loopback caller is "local"). */
export interface DashboardCaller {
  name: string;
  role: string;
}

/** Most dashboards the list answers (newest change first). */
export const MAX_DASHBOARDS_LISTED = 500;

interface Row {
  id: string;
  name: string;
  spec: string;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Owners edit their own; admins edit any, including those saved before owners existed. */
const mayEdit = (r: Pick<Row, "createdBy">, who: DashboardCaller) => who.role === "admin" || (r.createdBy !== null && r.createdBy === who.name);

function toDto(r: Row, who: DashboardCaller): DashboardDto {
  let raw: unknown = null;
  try {
    raw = JSON.parse(r.spec);
  } catch {
    // reported below as an unreadable spec
  }
  const spec = dashboardSpec.safeParse(raw);
  if (!spec.success) throw new Error(`dashboard ${r.id} has an unreadable spec`);
  return { id: r.id, name: r.name, spec: spec.data, owner: r.createdBy, canEdit: mayEdit(r, who), createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString() };
}

const newId = () => `d${Date.now().toString(36)}${crypto.randomBytes(4).toString("hex")}`;

export async function listDashboards(h: DbHandle, who: DashboardCaller): Promise<DashboardDto[]> {
  const rows = await h.prisma.dashboard.findMany({ orderBy: [{ updatedAt: "desc" }, { id: "asc" }], take: MAX_DASHBOARDS_LISTED });
  return rows.map((r) => toDto(r, who));
}

export async function getDashboard(h: DbHandle, id: string, who: DashboardCaller): Promise<DashboardDto> {
  const r = await h.prisma.dashboard.findUnique({ where: { id } });
  if (!r) throw notFound(`dashboard ${id}`);
  return toDto(r, who);
}

export async function createDashboard(h: DbHandle, body: CreateDashboardBody, who: DashboardCaller): Promise<DashboardDto> {
  const r = await h.write((db) => db.dashboard.create({ data: { id: newId(), name: body.name, spec: JSON.stringify(body.spec), createdBy: who.name } }));
  return toDto(r, who);
}

/** 403 unless `who` may change the dashboard (checked inside the write, with the change). */
function ownerOnly(r: Pick<Row, "createdBy">, who: DashboardCaller): void {
  if (mayEdit(r, who)) return;
  const owner = r.createdBy === null ? "an admin" : `its owner (${r.createdBy}) or an admin`;
  throw new ApiError(403, `only ${owner} may change this dashboard; save a copy to make your own`);
}

export async function patchDashboard(h: DbHandle, id: string, body: PatchDashboardBody, who: DashboardCaller): Promise<DashboardDto> {
  const r = await h.write(async (db) => {
    const row = await db.dashboard.findUnique({ where: { id }, select: { createdBy: true } });
    if (!row) return null;
    ownerOnly(row, who);
    return db.dashboard.update({ where: { id }, data: { ...(body.name !== undefined ? { name: body.name } : {}), ...(body.spec ? { spec: JSON.stringify(body.spec) } : {}) } });
  });
  if (!r) throw notFound(`dashboard ${id}`);
  return toDto(r, who);
}

export async function deleteDashboard(h: DbHandle, id: string, who: DashboardCaller): Promise<{ deleted: string }> {
  const n = await h.write(async (db) => {
    const row = await db.dashboard.findUnique({ where: { id }, select: { createdBy: true } });
    if (!row) return 0;
    ownerOnly(row, who);
    return (await db.dashboard.deleteMany({ where: { id } })).count;
  });
  if (n === 0) throw notFound(`dashboard ${id}`);
  return { deleted: id };
}
