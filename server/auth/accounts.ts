/**
 * Users, sessions, personal API tokens and worker tokens in the database (the REST handlers and
 * the `npm run user` CLI both come here). Secrets leave this module once, on creation.
 */
import type { AuditEventDto, NewTokenDto, PatchUserBody, Role, TokenDto, UserDto } from "../../lib/contracts/index.ts";
import { ROLES } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { conflict, notFound } from "../runs/errors.ts";
import { dummyHash, hashPassword, newSecret, prefixOf, sha256, verifyPassword } from "./secrets.ts";

/** Who is calling. `local` is the implicit admin of a loopback server without QRAG_AUTH. */
export interface Principal {
  name: string;
  role: Role;
  userId: number | null;
  via: "session" | "token" | "local";
  /** Which credential: the session's id (its secret's sha256) or the API token's id. */
  credential?: string;
}

export const SESSION_MS = 14 * 24 * 3600_000;
/** lastUsedAt is refreshed at most this often (not a write per request). */
const TOUCH_MS = 60_000;

const asRole = (r: string): Role => ((ROLES as readonly string[]).includes(r) ? (r as Role) : "viewer");
const userDto = (u: { id: number; name: string; role: string; disabled: boolean; createdAt: Date }): UserDto => ({ id: u.id, name: u.name, role: asRole(u.role), disabled: u.disabled, createdAt: u.createdAt.toISOString() });
const tokenDto = (t: { id: number; name: string; prefix: string; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null }): TokenDto => ({
  id: t.id, name: t.name, prefix: t.prefix, createdAt: t.createdAt.toISOString(), lastUsedAt: t.lastUsedAt?.toISOString() ?? null, revokedAt: t.revokedAt?.toISOString() ?? null,
});

// ---- users -------------------------------------------------------------------------------------

export async function createUser(h: DbHandle, u: { name: string; password: string; role: Role }): Promise<UserDto> {
  if (await h.prisma.user.findUnique({ where: { name: u.name }, select: { id: true } })) throw conflict(`user ${u.name} exists`);
  const passwordHash = await hashPassword(u.password);
  return userDto(await h.write((db) => db.user.create({ data: { name: u.name, passwordHash, role: u.role } })));
}

export async function listUsers(h: DbHandle): Promise<UserDto[]> {
  return (await h.prisma.user.findMany({ orderBy: { name: "asc" } })).map(userDto);
}

/** Role, disabled flag or password; disabling (or a new password) ends the user's sessions. */
export async function patchUser(h: DbHandle, id: number, p: PatchUserBody): Promise<UserDto> {
  const passwordHash = p.password !== undefined ? await hashPassword(p.password) : undefined;
  const row = await h.write(async (db) => {
    const n = await db.user.updateMany({ where: { id }, data: { role: p.role, disabled: p.disabled, passwordHash } });
    if (n.count === 0) throw notFound(`user ${id}`);
    if (p.disabled || passwordHash) await db.session.deleteMany({ where: { userId: id } });
    return db.user.findUniqueOrThrow({ where: { id } });
  });
  return userDto(row);
}

export async function userByName(h: DbHandle, name: string): Promise<UserDto | null> {
  const u = await h.prisma.user.findUnique({ where: { name } });
  return u ? userDto(u) : null;
}

/** The user when name and password match an enabled account; null otherwise (same cost either way). */
export async function checkPassword(h: DbHandle, name: string, password: string): Promise<UserDto | null> {
  const u = await h.prisma.user.findUnique({ where: { name } });
  const ok = await verifyPassword(u?.passwordHash ?? (await dummyHash()), password);
  return u && ok && !u.disabled ? userDto(u) : null;
}

// ---- sessions ----------------------------------------------------------------------------------

/** A new session; the returned secret goes into the cookie, its sha256 into the table. */
export async function createSession(h: DbHandle, userId: number): Promise<{ secret: string; expiresAt: Date }> {
  const secret = newSecret("qs");
  const expiresAt = new Date(Date.now() + SESSION_MS);
  await h.write(async (db) => {
    await db.session.deleteMany({ where: { expiresAt: { lt: new Date() } } }); // housekeeping
    await db.session.create({ data: { id: sha256(secret), userId, expiresAt } });
  });
  return { secret, expiresAt };
}

/** Deletes a session; returns its credential key (see Principal.credential). */
export async function deleteSession(h: DbHandle, secret: string): Promise<string> {
  const id = sha256(secret);
  await h.write((db) => db.session.deleteMany({ where: { id } }));
  return `session:${id}`;
}

export async function principalOfSession(h: DbHandle, secret: string): Promise<Principal | null> {
  const s = await h.prisma.session.findUnique({ where: { id: sha256(secret) }, include: { user: true } });
  if (!s || s.expiresAt.getTime() <= Date.now() || s.user.disabled) return null;
  return { name: s.user.name, role: asRole(s.user.role), userId: s.user.id, via: "session", credential: `session:${s.id}` };
}

// ---- personal API tokens -----------------------------------------------------------------------

export async function createApiToken(h: DbHandle, userId: number, name: string): Promise<NewTokenDto> {
  const secret = newSecret("qt");
  const row = await h.write((db) => db.apiToken.create({ data: { userId, name, hash: sha256(secret), prefix: prefixOf(secret) } }));
  return { ...tokenDto(row), secret };
}

export async function listApiTokens(h: DbHandle, userId: number): Promise<TokenDto[]> {
  return (await h.prisma.apiToken.findMany({ where: { userId }, orderBy: { id: "desc" } })).map(tokenDto);
}

/** Revokes one of the user's own tokens (404 for anyone else's: ids are not secrets, ownership is). */
export async function revokeApiToken(h: DbHandle, userId: number, id: number): Promise<TokenDto> {
  return h.write(async (db) => {
    const n = await db.apiToken.updateMany({ where: { id, userId, revokedAt: null }, data: { revokedAt: new Date() } });
    const t = await db.apiToken.findFirst({ where: { id, userId } });
    if (!t) throw notFound(`token ${id}`);
    if (n.count === 0 && !t.revokedAt) throw conflict(`token ${id} could not be revoked`);
    return tokenDto(t);
  });
}

export async function principalOfApiToken(h: DbHandle, secret: string): Promise<Principal | null> {
  // looked up by its sha256: timing of the index lookup tells nothing about the secret itself
  const t = await h.prisma.apiToken.findUnique({ where: { hash: sha256(secret) }, include: { user: true } });
  if (!t || t.revokedAt || t.user.disabled) return null;
  if (!t.lastUsedAt || Date.now() - t.lastUsedAt.getTime() > TOUCH_MS) {
    void h.write((db) => db.apiToken.update({ where: { id: t.id }, data: { lastUsedAt: new Date() } })).catch(() => undefined);
  }
  return { name: t.user.name, role: asRole(t.user.role), userId: t.user.id, via: "token", credential: `token:${t.id}` };
}

// ---- worker tokens -----------------------------------------------------------------------------

export async function createWorkerToken(h: DbHandle, name: string): Promise<NewTokenDto> {
  const secret = newSecret("qw");
  const row = await h.write((db) => db.workerToken.create({ data: { name, hash: sha256(secret), prefix: prefixOf(secret) } }));
  return { ...tokenDto(row), secret };
}

export async function listWorkerTokens(h: DbHandle): Promise<TokenDto[]> {
  return (await h.prisma.workerToken.findMany({ orderBy: { id: "desc" } })).map(tokenDto);
}

export async function revokeWorkerToken(h: DbHandle, id: number): Promise<TokenDto> {
  return h.write(async (db) => {
    await db.workerToken.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
    const t = await db.workerToken.findUnique({ where: { id } });
    if (!t) throw notFound(`worker token ${id}`);
    return tokenDto(t);
  });
}

/** The id and name of the unrevoked worker token with this secret, else null. */
export async function checkWorkerToken(h: DbHandle, secret: string): Promise<{ id: number; name: string } | null> {
  const t = await h.prisma.workerToken.findUnique({ where: { hash: sha256(secret) } });
  if (!t || t.revokedAt) return null;
  void h.write((db) => db.workerToken.update({ where: { id: t.id }, data: { lastUsedAt: new Date() } })).catch(() => undefined);
  return { id: t.id, name: t.name };
}

// ---- audit trail -------------------------------------------------------------------------------

export interface AuditEntry {
  actor: string;
  action: string;
  targetKind?: string;
  targetId?: string;
  /** Ids and role names only: never request bodies or file contents. */
  detail?: Record<string, string | number | boolean | null>;
}

export async function audit(h: DbHandle, e: AuditEntry): Promise<void> {
  await h.write((db) =>
    db.auditEvent.create({ data: { actor: e.actor.slice(0, 64), action: e.action, targetKind: e.targetKind ?? null, targetId: e.targetId?.slice(0, 200) ?? null, detail: JSON.stringify(e.detail ?? {}) } }),
  );
}

export async function listAudit(h: DbHandle, limit = 200): Promise<AuditEventDto[]> {
  const rows = await h.prisma.auditEvent.findMany({ orderBy: { id: "desc" }, take: limit });
  return rows.map((r) => {
    let detail: Record<string, unknown> = {};
    try {
      detail = JSON.parse(r.detail) as Record<string, unknown>;
    } catch {
      // keep {}
    }
    return { id: r.id, at: r.at.toISOString(), actor: r.actor, action: r.action, targetKind: r.targetKind, targetId: r.targetId, detail };
  });
}
