/**
 * The dashboard's HTTP side (server/main.ts): the Next app, the one request handler that routes
 * between the same-origin guard, the REST API and Next's pages (behind the sign-in gate), the
 * socket.io server on the same HTTP server, and listening. The API and the sign-in check are
 * passed in (this folder imports nothing of the project but itself).
 */
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "socket.io";
import type { sameOrigin } from "./same-origin.ts";

type Guard = ReturnType<typeof sameOrigin>;
type Handle = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** A prepared Next app (pages), or null with `enabled` false. */
export async function startNext(o: { enabled: boolean; dev: boolean; dir: string; host: string; port: number }): Promise<{ handle: Handle; app: { close?: () => Promise<void> } } | null> {
  if (!o.enabled) return null;
  const { default: next } = await import("next");
  const app = next({ dev: o.dev, dir: o.dir, hostname: o.host, port: o.port || undefined });
  await app.prepare();
  const handle = app.getRequestHandler();
  return { handle: (req, res) => handle(req, res), app: app as unknown as { close?: () => Promise<void> } };
}

export interface DashboardRoutes {
  guard: Guard;
  /** Serves an /api/* request, or answers null when the API is not wired (before start, while closing: the request goes on to Next). */
  api: (req: IncomingMessage, res: ServerResponse) => Promise<void> | null;
  next: Handle | null;
  /** Whether a page request may be served (else it is sent to /login). */
  pageAllowed: (req: IncomingMessage) => Promise<unknown>;
  log: (msg: string) => void;
}

/** The HTTP server: guard first, then /api/* to the API, everything else to Next (behind `pageAllowed`), else 404. */
export function dashboardHttp(r: DashboardRoutes): HttpServer {
  const failed = (req: IncomingMessage, res: ServerResponse) => (err: Error) => {
    r.log(`request ${req.url} failed: ${err.message}`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  };
  return createServer((req, res) => {
    const refused = r.guard.check(req);
    if (refused) {
      res.writeHead(refused.status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ error: refused.error }));
      return;
    }
    const served = /^\/api(\/|$|\?)/.test(req.url ?? "") ? r.api(req, res) : null;
    if (served) {
      served.catch(failed(req, res));
    } else if (r.next) {
      const handle = r.next;
      r.pageAllowed(req)
        .then((who) => {
          if (who) return handle(req, res);
          res.writeHead(302, { location: `/login?next=${encodeURIComponent(req.url ?? "/")}`, "cache-control": "no-store" }).end();
        })
        .catch(failed(req, res));
    } else {
      res.writeHead(404).end();
    }
  });
}

/** socket.io on the dashboard's HTTP server; handshakes pass the same-origin guard. */
export function dashboardSockets(http: HttpServer, guard: Guard): Server {
  // destroyUpgrade:false leaves Next's own upgrade requests (dev HMR) alone
  return new Server(http, {
    destroyUpgrade: false,
    maxHttpBufferSize: 64 * 1024 * 1024,
    pingInterval: 10_000,
    pingTimeout: 20_000,
    allowRequest: (req, done) => done(null, guard.allowSocket(req)),
  });
}

/** Listens on host:port (0: any free port); the port taken and the server's URL. */
export async function listen(http: HttpServer, port: number, host: string): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const actualPort = (http.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return { port: actualPort, url: `http://${shownHost}:${actualPort}` };
}
