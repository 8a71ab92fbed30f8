/**
 * The client's address. The peer of the TCP connection is the client unless it is a trusted
 * reverse proxy (QRAG_TRUSTED_PROXIES): then X-Forwarded-For is read right to left, skipping
 * trusted hops, and the first untrusted address is the client (Express's rule, by its
 * `proxy-addr`). Never trusting the header by default keeps a client from choosing its address.
 */
import type { IncomingMessage } from "node:http";
import proxyAddr from "proxy-addr";

/**
 * The address function for a trust list (compiled once); a bad entry throws at start, naming the
 * setting and the entry's position (not its text).
 */
export function clientAddressOf(trusted: readonly string[]): (req: IncomingMessage) => string {
  if (trusted.length === 0) return (req) => req.socket.remoteAddress ?? "";
  trusted.forEach((entry, i) => {
    try {
      proxyAddr.compile(entry);
    } catch {
      throw new Error(`QRAG_TRUSTED_PROXIES: entry ${i + 1} is not an address, a CIDR (10.0.0.0/8) or one of loopback, linklocal, uniquelocal`);
    }
  });
  const trust = proxyAddr.compile([...trusted]);
  return (req) => proxyAddr(req, trust);
}
