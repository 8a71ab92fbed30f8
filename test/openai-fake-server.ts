/**
 * A local OpenAI-compatible endpoint for the reader's tests: POST /v1/chat/completions in the
 * OpenAI wire format (JSON, or server-sent events with a usage chunk), generating for real with a
 * GGUF model through node-llama-cpp (one sequence, greedy, the model's chat wrapper: what
 * llama-reader.ts does, so both providers give the same text). Errors are llama.cpp server's and
 * OpenAI's shapes; `faults` are taken one per request, in order, before any generation.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  getLlama, LlamaChatSession, LlamaLogLevel, resolveChatWrapper, type ChatHistoryItem, type LlamaGrammar,
} from "node-llama-cpp";

export type Fault =
  | { kind: "status"; status: number; headers?: Record<string, string>; message?: string }
  | { kind: "hang" } // never answers
  | { kind: "stall" } // 200 and SSE headers, then nothing
  | { kind: "garbage" } // 200, a body that is not JSON
  | { kind: "content"; content: string }; // 200 with this message text, no generation

export interface FakeServer {
  url: string;
  faults: Fault[];
  /** Each request's Authorization header and body, in arrival order. */
  requests: { auth: string | undefined; body: Record<string, unknown> }[];
  maxInFlight: number;
  close(): Promise<void>;
}

export async function startFakeOpenAi(modelFile: string, o: { key: string; responseFormat?: boolean; contextSize?: number }): Promise<FakeServer> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: modelFile });
  const context = await model.createContext({ contextSize: o.contextSize ?? 2048, threads: 1 });
  const sequence = context.getSequence();
  const chatWrapper = resolveChatWrapper(model);
  let queue: Promise<unknown> = Promise.resolve();
  let inFlight = 0;
  const hung = new Set<http.ServerResponse>();

  const generate = async (system: string, user: string, maxTokens: number, grammar: LlamaGrammar | undefined, onText?: (t: string) => void) => {
    const history: ChatHistoryItem[] = [{ type: "system", text: system }, { type: "user", text: user }, { type: "model", response: [] }];
    const promptTokens = chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer).length;
    if (promptTokens + maxTokens > context.contextSize) return { tooLong: promptTokens };
    await sequence.clearHistory();
    const out0 = sequence.tokenMeter.usedOutputTokens;
    const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: system, chatWrapper, autoDisposeSequence: false });
    try {
      const text = await session.prompt(user, { maxTokens, temperature: 0, ...(grammar ? { grammar } : {}), ...(onText ? { onTextChunk: onText } : {}) });
      return { text, promptTokens, completionTokens: sequence.tokenMeter.usedOutputTokens - out0 };
    } finally {
      session.dispose({ disposeSequence: false });
    }
  };

  const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: string) => {
    const auth = req.headers.authorization;
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return json(res, 400, { error: { message: "invalid JSON body", type: "invalid_request_error" } });
    }
    server.requests.push({ auth, body });
    if (req.url !== "/v1/chat/completions" || req.method !== "POST") return json(res, 404, { error: { message: `no route ${req.url}` } });
    if (auth !== `Bearer ${o.key}`) {
      // OpenAI quotes the key it was given back in this message
      return json(res, 401, { error: { message: `Incorrect API key provided: ${auth?.slice(7)}.`, type: "invalid_request_error", code: "invalid_api_key" } });
    }
    const fault = server.faults.shift();
    if (fault?.kind === "status") return json(res, fault.status, { error: { message: fault.message ?? `fault ${fault.status}`, type: "server_error" } }, fault.headers);
    if (fault?.kind === "hang") return void hung.add(res);
    if (fault?.kind === "garbage") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end("<html>502 bad gateway</html>");
    }
    if (fault?.kind === "stall") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(": keep-alive\n\n");
      return void hung.add(res);
    }
    const messages = body.messages as { role: string; content: string }[];
    const system = messages.find((m) => m.role === "system")?.content ?? "", user = messages.find((m) => m.role === "user")?.content ?? "";
    const format = body.response_format as { type: string; json_schema?: { schema: object } } | undefined;
    if (format && !o.responseFormat) return json(res, 400, { error: { message: "response_format is not supported by this server", type: "invalid_request_error" } });
    const created = Math.floor(Date.now() / 1000), id = `chatcmpl-${server.requests.length}`;
    if (fault?.kind === "content") {
      return json(res, 200, { id, object: "chat.completion", created, model: body.model, choices: [{ index: 0, message: { role: "assistant", content: fault.content }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    }
    const grammar = format?.json_schema ? await llama.createGrammarForJsonSchema(format.json_schema.schema as never) : undefined;
    const stream = body.stream === true;
    const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    if (stream) res.writeHead(200, { "content-type": "text/event-stream" });
    const run = queue.then(() => generate(system, user, Number(body.max_tokens ?? 32), grammar, stream ? (t) => res.write(chunk({ content: t }, null)) : undefined));
    queue = run.catch(() => undefined);
    const r = await run;
    if ("tooLong" in r) {
      // llama.cpp server's answer to a prompt over its window
      return json(res, 400, { error: { code: 400, message: "the request exceeds the available context size, try increasing it", type: "exceed_context_size_error", n_prompt_tokens: r.tooLong, n_ctx: context.contextSize } });
    }
    const usage = { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens };
    if (!stream) return json(res, 200, { id, object: "chat.completion", created, model: body.model, choices: [{ index: 0, message: { role: "assistant", content: r.text }, finish_reason: "stop" }], usage });
    res.write(chunk({}, "stop"));
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage })}\n\n`);
    res.end("data: [DONE]\n\n");
  };

  const server = { url: "", faults: [] as Fault[], requests: [] as FakeServer["requests"], maxInFlight: 0 };
  const httpServer = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8").on("data", (d: string) => (raw += d)).on("end", () => {
      server.maxInFlight = Math.max(server.maxInFlight, ++inFlight);
      res.on("close", () => inFlight--);
      handle(req, res, raw).catch((e: unknown) => json(res, 500, { error: { message: String(e) } }));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  server.url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/v1`;
  return Object.assign(server, {
    async close() {
      for (const r of hung) r.destroy();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
      await llama.dispose();
    },
  });
}
