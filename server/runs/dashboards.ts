/**
 * Saved dashboards: a named compare spec (runs or a filter, panels, grouping, chart settings)
 * stored as JSON text. The spec is validated by the contract on the way in, and again on the
 * way out so that a row written by an older version cannot hand the browser a malformed spec.
 */
import crypto from "node:crypto";
import { dashboardSpec, type CreateDashboardBody, type DashboardDto, type PatchDashboardBody } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { notFound } from "./errors.ts";

/** Most dashboards the list answers (newest change first). */
export const MAX_DASHBOARDS_LISTED = 500;

interface Row {
  id: string;
  name: string;
  spec: string;
  createdAt: Date;
  updatedAt: Date;
}

function toDto(r: Row): DashboardDto {
  let raw: unknown = null;
  try {
    raw = JSON.parse(r.spec);
  } catch {
    // reported below as an unreadable spec
  }
  const spec = dashboardSpec.safeParse(raw);
  if (!spec.success) throw new Error(`dashboard ${r.id} has an unreadable spec`);
  return { id: r.id, name: r.name, spec: spec.data, createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString() };
}

const newId = () => `d${Date.now().toString(36)}${crypto.randomBytes(4).toString("hex")}`;

export async function listDashboards(h: DbHandle): Promise<DashboardDto[]> {
  const rows = await h.prisma.dashboard.findMany({ orderBy: [{ updatedAt: "desc" }, { id: "asc" }], take: MAX_DASHBOARDS_LISTED });
  return rows.map(toDto);
}

export async function getDashboard(h: DbHandle, id: string): Promise<DashboardDto> {
  const r = await h.prisma.dashboard.findUnique({ where: { id } });
  if (!r) throw notFound(`dashboard ${id}`);
  return toDto(r);
}

export async function createDashboard(h: DbHandle, body: CreateDashboardBody): Promise<DashboardDto> {
  const r = await h.write((db) => db.dashboard.create({ data: { id: newId(), name: body.name, spec: JSON.stringify(body.spec) } }));
  return toDto(r);
}

export async function patchDashboard(h: DbHandle, id: string, body: PatchDashboardBody): Promise<DashboardDto> {
  const r = await h.write(async (db) => {
    if (!(await db.dashboard.findUnique({ where: { id }, select: { id: true } }))) return null;
    return db.dashboard.update({ where: { id }, data: { ...(body.name !== undefined ? { name: body.name } : {}), ...(body.spec ? { spec: JSON.stringify(body.spec) } : {}) } });
  });
  if (!r) throw notFound(`dashboard ${id}`);
  return toDto(r);
}

export async function deleteDashboard(h: DbHandle, id: string): Promise<{ deleted: string }> {
  const n = await h.write((db) => db.dashboard.deleteMany({ where: { id } }));
  if (n.count === 0) throw notFound(`dashboard ${id}`);
  return { deleted: id };
}
