/**
 * Which successful API calls leave an audit row, and what it names: the route's action and the
 * target's id (from the path, or from the answer for creations). Recorded by the router after
 * the handler succeeded, with the caller's name; user and token changes and failed logins are
 * recorded by their own handlers (server/api/accounts.ts), which know more.
 */
import type { AuditEntry } from "./accounts.ts";

type From = "path" | "answer" | "answer.run";
const ACTIONS: Record<string, { action: string; kind: string; id: From }> = {
  "POST /api/runs": { action: "run.create", kind: "run", id: "answer" },
  "PATCH /api/runs/:id": { action: "run.edit", kind: "run", id: "path" },
  "POST /api/runs/:id/cancel": { action: "run.cancel", kind: "run", id: "path" },
  "POST /api/runs/:id/resume": { action: "run.resume", kind: "run", id: "path" },
  "POST /api/runs/:id/clone": { action: "run.clone", kind: "run", id: "answer" },
  "POST /api/runs/import": { action: "run.import", kind: "run", id: "answer.run" },
  "POST /api/runs/:id/sweeps": { action: "sweep.create", kind: "sweep", id: "answer" },
  "POST /api/runs/:id/sweeps/upload": { action: "sweep.upload", kind: "sweep", id: "answer" },
  "POST /api/runs/:id/playground/episodes": { action: "episode.save", kind: "run", id: "path" },
  "POST /api/dashboards": { action: "dashboard.create", kind: "dashboard", id: "answer" },
  "PATCH /api/dashboards/:id": { action: "dashboard.edit", kind: "dashboard", id: "path" },
  "DELETE /api/dashboards/:id": { action: "dashboard.delete", kind: "dashboard", id: "path" },
};

/** The audit row of a successful call, or null when the route is not audited here. */
export function auditOf(actor: string, pattern: string, method: string, params: Record<string, string>, answer: unknown): AuditEntry | null {
  const a = ACTIONS[`${method} ${pattern}`];
  if (!a) return null;
  const body = (answer ?? {}) as { id?: unknown; run?: { id?: unknown } };
  const raw = a.id === "path" ? params.id : a.id === "answer" ? body.id : body.run?.id;
  const detail = pattern.includes(":id") && a.id !== "path" ? { from: params.id ?? null } : undefined;
  return { actor, action: a.action, targetKind: a.kind, targetId: typeof raw === "string" ? raw : undefined, detail };
}

/** Whether the answer must be read for the target id (creations). */
export const auditNeedsAnswer = (pattern: string, method: string) => ACTIONS[`${method} ${pattern}`]?.id.startsWith("answer") ?? false;
