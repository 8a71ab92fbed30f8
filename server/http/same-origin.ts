/**
 * Same-origin rules for the dashboard's HTTP server and its socket.io endpoint:
 * - DNS rebinding: while the server listens on loopback, a request must name a loopback host (or
 *   an allowed origin's host) in its Host header — a page on evil.example whose name now resolves
 *   to 127.0.0.1 gets 421 and cannot read the API;
 * - cross-site requests: a mutation (anything but GET/HEAD/OPTIONS) needs a JSON content type,
 *   which no HTML form or "simple" cross-site request can send without a preflight we never grant,
 *   and an Origin (when the client sends one) equal to the server's own or an allowed one;
 * - the socket endpoint refuses a browser Origin that is not the server's own or an allowed one
 *   (workers, which are not browsers, send none).
 */
import type { IncomingMessage } from "node:http";

export interface SameOriginOptions {
  /** The address the server listens on. */
  host: string;
  /** Extra origins (a reverse proxy's), exactly as browsers send them: scheme://host[:port]. */
  allowedOrigins: readonly string[];
}

export interface Refusal {
  status: number;
  error: string;
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);
export const isLoopback = (host: string) => LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);

/** The hostname of a Host header ("127.0.0.1:3000" → "127.0.0.1", "[::1]:3000" → "[::1]"). */
function hostnameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  return h.replace(/:\d+$/, "");
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export function sameOrigin(o: SameOriginOptions) {
  const allowed = new Set(o.allowedOrigins.map((x) => x.toLowerCase()));
  const allowedHosts = new Set([...allowed].map((x) => hostnameOf(new URL(x).host)));
  const loopbackOnly = isLoopback(o.host);

  const hostRefusal = (req: IncomingMessage): Refusal | null => {
    if (!loopbackOnly) return null;
    const name = hostnameOf(req.headers.host ?? "");
    if (isLoopback(name) || allowedHosts.has(name)) return null;
    return { status: 421, error: "this server answers to its loopback address only (set QRAG_ALLOWED_ORIGINS for a proxy)" };
  };

  /** The Origin header is the server's own (same scheme-less host) or an allowed origin. */
  const originAllowed = (req: IncomingMessage): boolean => {
    const origin = req.headers.origin;
    if (origin === undefined) return true;
    const lower = origin.toLowerCase();
    if (allowed.has(lower)) return true;
    if (!URL.canParse(lower)) return false; // "null" (sandboxed frames, file:) included
    const u = new URL(lower);
    return (u.protocol === "http:" || u.protocol === "https:") && u.host === (req.headers.host ?? "").toLowerCase();
  };

  return {
    /** Any HTTP request: null when it may proceed. */
    check(req: IncomingMessage): Refusal | null {
      const host = hostRefusal(req);
      if (host) return host;
      if (SAFE_METHODS.has((req.method ?? "GET").toUpperCase())) return null;
      if (req.headers["sec-fetch-site"] === "cross-site" || !originAllowed(req)) return { status: 403, error: "cross-origin request refused" };
      const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
      if (type !== "application/json") return { status: 415, error: "mutations need Content-Type: application/json" };
      return null;
    },
    /** socket.io's allowRequest: the handshake's Host and Origin. */
    allowSocket(req: IncomingMessage): boolean {
      return !hostRefusal(req) && originAllowed(req);
    },
  };
}
