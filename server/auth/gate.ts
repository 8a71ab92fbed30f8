/**
 * The one place requests are identified: a session cookie (browsers) or `Authorization: Bearer`
 * (personal API tokens for scripts and the CLI) → a Principal. When the server does not require
 * accounts (loopback, no QRAG_AUTH) anyone reaching it is the local user, an implicit admin, so a
 * person on their own machine never sees a login. The router (server/api/router.ts), the page
 * redirect and the /ui socket middleware (server/main.ts) all ask this gate.
 */
import { LoginThrottle } from "./login-throttle.ts";
import type { IncomingHttpHeaders } from "node:http";
import { parse as parseCookies, serialize } from "cookie";
import type { DbHandle } from "../db/client.ts";
import { principalOfApiToken, principalOfSession, SESSION_MS, type Principal } from "./accounts.ts";

export const SESSION_COOKIE = "qrag_session";

/**
 * Rooms a signed-in /ui socket joins, so that ending a credential also ends the live sockets it
 * opened (sign-out, token revoked) and changing a user ends theirs (disabled, new role or password):
 * a socket checked once at connect would otherwise keep streaming runs.
 */
export const uiRoom = {
  user: (userId: number) => `auth:user:${userId}`,
  credential: (credential: string) => `auth:${credential}`,
};
export function uiRoomsOf(p: Principal): string[] {
  return [...(p.userId !== null ? [uiRoom.user(p.userId)] : []), ...(p.credential ? [uiRoom.credential(p.credential)] : [])];
}
export const LOCAL_PRINCIPAL: Principal = { name: "local", role: "admin", userId: null, via: "local" };

export interface AuthGate {
  /** Accounts are required (beyond loopback, or QRAG_AUTH=on). */
  readonly required: boolean;
  /** The caller; null only when accounts are required and no valid credentials came. */
  identify(headers: IncomingHttpHeaders): Promise<Principal | null>;
  /** Set-Cookie values for a new session and for signing out. */
  sessionCookie(secret: string): string;
  clearCookie(): string;
  /** The session secret in a Cookie header, if any. */
  sessionSecret(headers: IncomingHttpHeaders): string | undefined;
  /** The failed-sign-in throttle (login-throttle.ts): per account name, and over all names. */
  logins: LoginThrottle;
}

export function createAuthGate(h: DbHandle, o: { required: boolean; cookieSecure: boolean }): AuthGate {
  const sessionSecret = (headers: IncomingHttpHeaders) => {
    const raw = headers.cookie;
    if (!raw || raw.length > 8192) return undefined;
    const v = parseCookies(raw)[SESSION_COOKIE];
    return v && v.length <= 200 ? v : undefined;
  };
  const cookie = (value: string, maxAge: number) =>
    // HttpOnly: page scripts cannot read it; SameSite=Lax: no cross-site POST carries it
    serialize(SESSION_COOKIE, value, { httpOnly: true, sameSite: "lax", path: "/", secure: o.cookieSecure, maxAge });

  return {
    required: o.required,
    async identify(headers) {
      const auth = headers.authorization;
      const bearer = typeof auth === "string" && /^Bearer\s+/i.test(auth) ? auth.replace(/^Bearer\s+/i, "").trim() : undefined;
      let p: Principal | null = null;
      if (bearer && bearer.length <= 200) p = await principalOfApiToken(h, bearer);
      else {
        const s = sessionSecret(headers);
        if (s) p = await principalOfSession(h, s);
      }
      return p ?? (o.required ? null : LOCAL_PRINCIPAL);
    },
    sessionCookie: (secret) => cookie(secret, Math.floor(SESSION_MS / 1000)),
    clearCookie: () => cookie("", 0),
    sessionSecret,
    logins: new LoginThrottle(),
  };
}
