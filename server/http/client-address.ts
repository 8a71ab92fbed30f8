/**
 * The client's address. The peer of the TCP connection is the client unless it is a trusted
 * reverse proxy (QRAG_TRUSTED_PROXIES): then X-Forwarded-For is read right to left, skipping
 * trusted hops, and the first untrusted address is the client (Express's rule, by its
 * `proxy-addr`). Never trusting the header by default keeps a client from choosing its address.
 */
import type { IncomingMessage } from "node:http";
import proxyAddr from "proxy-addr";

/** True when every entry is an address, a CIDR or one of proxy-addr's names (loopback, …). */
export function isTrustList(list: readonly string[]): boolean {
  try {
    proxyAddr.compile([...list]);
    return true;
  } catch {
    return false;
  }
}

/** The address function for a trust list (compiled once). */
export function clientAddressOf(trusted: readonly string[]): (req: IncomingMessage) => string {
  if (trusted.length === 0) return (req) => req.socket.remoteAddress ?? "";
  const trust = proxyAddr.compile([...trusted]);
  return (req) => proxyAddr(req, trust);
}
