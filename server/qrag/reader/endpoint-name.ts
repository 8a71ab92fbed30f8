/** How messages, cache keys and run configs name an endpoint: never with its credentials. */
import { InputError } from "../errors.ts";

/** Host and path of a base URL, without credentials or query: what messages and cache keys name. */
export function endpointName(baseURL: string): string {
  let u: URL;
  try {
    u = new URL(baseURL);
  } catch {
    throw new InputError("--reader-url: expected an http(s) URL such as http://127.0.0.1:8000/v1");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new InputError("--reader-url: expected an http(s) URL");
  return `${u.host}${u.pathname.replace(/\/+$/, "")}`;
}
