/**
 * The command-line tools' one way to the dashboard's REST API. Every request goes through
 * `apiFetch`, so authentication (a token header, when the dashboard gets one) is added here only.
 */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fieldErrors: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiCallError";
  }
}

/** `token`: a personal API token (npm run user -- token NAME), sent as `Authorization: Bearer`. */
export async function apiFetch<T>(server: string, path: string, init: { method: "GET" | "POST"; body?: unknown; token?: string }): Promise<T> {
  let res: Response;
  try {
    res = await fetch(new URL(path, server), {
      method: init.method,
      headers: {
        accept: "application/json",
        ...((init.method ?? "GET") === "GET" ? {} : { "content-type": "application/json" }),
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  } catch (e) {
    throw new ApiCallError(0, `cannot reach ${server}: ${(e as Error).message}`);
  }
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const d = (data ?? {}) as { error?: unknown; fieldErrors?: Record<string, string> };
    throw new ApiCallError(res.status, typeof d.error === "string" ? d.error : `HTTP ${res.status}`, d.fieldErrors ?? {});
  }
  return data as T;
}
