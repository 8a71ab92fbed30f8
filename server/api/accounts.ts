/**
 * REST handlers for accounts (bound in router.ts; the roles they need are in server/auth/roles.ts):
 * login/logout/me, one's own API tokens, and (admin) users, worker tokens and the audit trail.
 */
import { uiRoom } from "../auth/gate.ts";
import type { NewTokenDto, PrincipalDto } from "../../lib/contracts/index.ts";
import { createTokenBody, createUserBody, idParams, loginBody, patchUserBody, tokenIdQuery } from "../../lib/contracts/index.ts";
import { ApiError } from "../runs/errors.ts";
import * as accounts from "../auth/accounts.ts";
import { handler, json, parseWith, queryOf, readJson, type ApiDeps } from "./http.ts";

/** The caller (the router sets it before any non-public handler runs). */
function who(d: ApiDeps): accounts.Principal {
  if (!d.principal) throw new ApiError(401, "sign in first");
  return d.principal;
}

/** Personal tokens belong to a user account; the implicit local admin has none. */
function userIdOf(d: ApiDeps): number {
  const p = who(d);
  if (p.userId === null) throw new ApiError(409, "the local user has no account: add one with `npm run user -- add NAME` to use personal tokens");
  return p.userId;
}

const SAME_ANSWER = "wrong name or password";

export const authLogin = {
  POST: handler(async (req, _p, d) => {
    const body = parseWith(loginBody, await readJson(req), "body");
    const address = d.address ?? "";
    if (!d.auth.logins.allowed(body.name, address)) throw new ApiError(429, "too many failed sign-ins; try again in 15 minutes");
    const user = await accounts.checkPassword(d.db, body.name, body.password);
    if (!user) {
      d.auth.logins.failed(body.name, address);
      // the name (bounded by the schema) and the client's address, never the password
      await accounts.audit(d.db, { actor: body.name, action: "login.failed", detail: { address } });
      throw new ApiError(401, SAME_ANSWER);
    }
    d.auth.logins.succeeded(body.name);
    const s = await accounts.createSession(d.db, user.id);
    await accounts.audit(d.db, { actor: user.name, action: "login", detail: { address } });
    const res = json({ name: user.name, role: user.role, authRequired: d.auth.required } satisfies PrincipalDto);
    res.headers.append("set-cookie", d.auth.sessionCookie(s.secret));
    return res;
  }),
};

export const authLogout = {
  POST: handler(async (req, _p, d) => {
    const h: Record<string, string> = { cookie: req.headers.get("cookie") ?? "" };
    const secret = d.auth.sessionSecret(h);
    if (secret) d.endUiSockets([uiRoom.credential(await accounts.deleteSession(d.db, secret))]);
    const res = json({ ok: true });
    res.headers.append("set-cookie", d.auth.clearCookie());
    return res;
  }),
};

export const authMe = {
  GET: handler(async (_req, _p, d): Promise<PrincipalDto> => {
    const p = who(d);
    return { name: p.name, role: p.role, authRequired: d.auth.required };
  }),
};

export const tokensCollection = {
  GET: handler(async (_req, _p, d) => accounts.listApiTokens(d.db, userIdOf(d))),
  POST: handler(async (req, _p, d): Promise<NewTokenDto> => {
    const body = parseWith(createTokenBody, await readJson(req), "body");
    const t = await accounts.createApiToken(d.db, userIdOf(d), body.name);
    await accounts.audit(d.db, { actor: who(d).name, action: "token.create", targetKind: "token", targetId: String(t.id), detail: { name: t.name } });
    return t;
  }, 201),
  DELETE: handler(async (req, _p, d) => {
    const { id } = parseWith(tokenIdQuery, queryOf(req), "query");
    const t = await accounts.revokeApiToken(d.db, userIdOf(d), id);
    d.endUiSockets([uiRoom.credential(`token:${id}`)]);
    await accounts.audit(d.db, { actor: who(d).name, action: "token.revoke", targetKind: "token", targetId: String(id) });
    return t;
  }),
};

export const usersCollection = {
  GET: handler(async (_req, _p, d) => accounts.listUsers(d.db)),
  POST: handler(async (req, _p, d) => {
    const body = parseWith(createUserBody, await readJson(req), "body");
    const u = await accounts.createUser(d.db, body);
    await accounts.audit(d.db, { actor: who(d).name, action: "user.create", targetKind: "user", targetId: u.name, detail: { role: u.role } });
    return u;
  }, 201),
};

export const userItem = {
  PATCH: handler(async (req, p, d) => {
    const { id } = parseWith(idParams, p, "user id");
    const body = parseWith(patchUserBody, await readJson(req), "body");
    const u = await accounts.patchUser(d.db, id, body);
    // live sockets were admitted under the old role or password: they sign in again
    d.endUiSockets([uiRoom.user(id)]);
    const detail = { ...(body.role ? { role: body.role } : {}), ...(body.disabled !== undefined ? { disabled: body.disabled } : {}), ...(body.password ? { password: "changed" } : {}) };
    await accounts.audit(d.db, { actor: who(d).name, action: "user.edit", targetKind: "user", targetId: u.name, detail });
    return u;
  }),
};

export const workerTokensCollection = {
  GET: handler(async (_req, _p, d) => accounts.listWorkerTokens(d.db)),
  POST: handler(async (req, _p, d): Promise<NewTokenDto> => {
    const body = parseWith(createTokenBody, await readJson(req), "body");
    const t = await accounts.createWorkerToken(d.db, body.name);
    await accounts.audit(d.db, { actor: who(d).name, action: "worker-token.create", targetKind: "worker-token", targetId: String(t.id), detail: { name: t.name } });
    return t;
  }, 201),
};

export const workerTokenRevoke = {
  POST: handler(async (_req, p, d) => {
    const { id } = parseWith(idParams, p, "worker token id");
    const t = await accounts.revokeWorkerToken(d.db, id);
    // its live sockets go at once, not at their next reconnect
    d.revokeWorkerToken(id);
    await accounts.audit(d.db, { actor: who(d).name, action: "worker-token.revoke", targetKind: "worker-token", targetId: String(id), detail: { name: t.name } });
    return t;
  }),
};

export const auditList = { GET: handler(async (_req, _p, d) => accounts.listAudit(d.db, 200)) };
