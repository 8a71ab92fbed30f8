/**
 * Which role each API route needs, in one table keyed by the router's path patterns:
 * - public: health (reveals nothing then), login and logout;
 * - viewer: every GET, the launch form's dry-run validation, the playground's unsaved episode,
 *   one's own API tokens;
 * - member: launching, cancelling, resuming, cloning and editing runs, sweeps, dashboards, imports;
 * - admin: users, worker tokens, the audit trail, and deleting (a member deletes a dashboard of
 *   their own: the dashboards service checks the owner).
 * Anything not listed defaults by method (GET → viewer, else member), so a new route is never
 * public by accident.
 */
import type { Role } from "../../lib/contracts/index.ts";

export type Need = Role | "public";

const EXACT: Record<string, Need> = {
  "GET /api/health": "public",
  "POST /api/auth/login": "public",
  "POST /api/auth/logout": "public",
  "POST /api/runs/validate": "viewer",
  // the playground's run stores nothing (bounded engine processes); saving it is a member's
  "POST /api/runs/:id/playground": "viewer",
  "DELETE /api/dashboards/:id": "member",
};
/** Patterns every method of which needs the role. */
const PREFIX: [string, Need][] = [
  ["/api/tokens", "viewer"],
  ["/api/users", "admin"],
  ["/api/worker-tokens", "admin"],
  ["/api/audit", "admin"],
];

export function requiredRole(pattern: string, method: string): Need {
  const exact = EXACT[`${method} ${pattern}`];
  if (exact) return exact;
  for (const [p, need] of PREFIX) if (pattern === p || pattern.startsWith(`${p}/`)) return need;
  if (method === "DELETE") return "admin";
  return method === "GET" || method === "HEAD" ? "viewer" : "member";
}
