/**
 * Issue 10's input findings, re-run against the real server (no Next, a real SQLite file):
 * lone surrogates and invalid UTF-8 answer 400 naming the field (they were 500s quoting Prisma),
 * a JSON syntax error never quotes the body, metric key lists are capped, and sizes that drive a
 * worker's memory or time (chunks per sample, eval episodes) have ceilings — nothing is written.
 * Issue 26's first defect: a deeply nested body (5,000 arrays in 10 KB) answered 500 and blocked
 * the event loop; it is refused by its depth before parsing.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { FieldErrorsDto, RunDetailDto, RunListDto } from "../lib/contracts/index.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { tmpDir } from "./platform-helpers.ts";
import { JSON_MAX_DEPTH, jsonDepth, loneSurrogateAt } from "../server/api/json-body.ts";
import { shortText } from "../lib/contracts/short-text.ts";
import { notFound } from "../server/runs/errors.ts";

let server: RunningServer;
before(async () => {
  server = await startServer({ port: 0, dataDir: tmpDir("qrag-inputs-"), spawnWorker: false, next: false, log: () => {} });
});
after(() => server?.close());

const send = async (method: string, path: string, body: string | Uint8Array) => {
  const r = await fetch(`${server.url}${path}`, { method, headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : new Uint8Array(body) });
  return { status: r.status, body: (await r.json()) as FieldErrorsDto };
};
const runCount = async () => ((await (await fetch(`${server.url}/api/runs?limit=1`)).json()) as RunListDto).total;

test("unpaired surrogates and invalid UTF-8 are 400s naming the field; nothing is written", async () => {
  const before = await runCount();
  const post = await send("POST", "/api/runs", '{"preset":"tiny","name":"\\ud800"}');
  assert.equal(post.status, 400);
  assert.equal(post.body.fieldErrors.name, "contains an unpaired surrogate (not valid Unicode text)");
  const nested = await send("POST", "/api/runs", '{"preset":"tiny","tags":["ok","x\\udfff"]}');
  assert.deepEqual(Object.keys(nested.body.fieldErrors), ["tags.1"]);
  const paired = await send("POST", "/api/runs", '{"preset":"tiny","name":"emoji \\ud83d\\ude00"}');
  assert.equal(paired.status, 201, "a paired surrogate is a real character");
  const id = (paired.body as unknown as RunDetailDto).id;
  const patch = await send("PATCH", `/api/runs/${id}`, '{"notes":"\\udc00"}');
  assert.equal(patch.status, 400);
  assert.ok(patch.body.fieldErrors.notes);
  const bytes = await send("POST", "/api/runs", Buffer.concat([Buffer.from('{"preset":"tiny","name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]));
  assert.equal(bytes.status, 400);
  assert.match(bytes.body.error, /UTF-8/);
  assert.equal(await runCount(), before + 1, "only the valid run was created");
});

test("a JSON syntax error gives a position, never the body's text", async () => {
  const r = await send("POST", "/api/runs", '{"preset": tiny-secret-value}');
  assert.equal(r.status, 400);
  assert.match(r.body.fieldErrors.body, /^not valid JSON/);
  assert.ok(!JSON.stringify(r.body).includes("secret"));
});

test("sizes that drive memory or time have ceilings, named per field", async () => {
  const before = await runCount();
  const big = await send("POST", "/api/runs", JSON.stringify({ preset: "tiny", overrides: ["envs.num_sentences=30000000", "eval_episodes=1000000", "algo.encoder.dim=100000"] }));
  assert.equal(big.status, 400);
  assert.match(big.body.fieldErrors["config.envs.num_sentences"], /400000/);
  assert.match(big.body.fieldErrors["config.eval_episodes"], /10000/);
  assert.ok(big.body.fieldErrors["config.algo.encoder.dim"]);
  assert.equal(await runCount(), before);
  const keys = Array.from({ length: 300 }, (_, i) => `k${i}`).join(",");
  const run = (await (await fetch(`${server.url}/api/runs?limit=1`)).json()) as RunListDto;
  const m = await fetch(`${server.url}/api/runs/${run.runs[0].id}/metrics?keys=${keys}`);
  assert.equal(m.status, 400);
  assert.equal(((await m.json()) as FieldErrorsDto).fieldErrors.keys, "at most 64 keys");
});

test("a body nested deeper than JSON_MAX_DEPTH is a 400 naming the limit, on sign-in too, before any parsing; 32 levels still parse", async () => {
  const deep = "[".repeat(5000) + "]".repeat(5000);
  for (const path of ["/api/auth/login", "/api/runs"]) {
    const r = await send("POST", path, `{"name":${deep}}`);
    assert.equal(r.status, 400, path);
    assert.equal(r.body.fieldErrors.body, `nests deeper than ${JSON_MAX_DEPTH} levels`, path);
  }
  // at the limit the body parses and reaches the schema, which names the field instead
  const atLimit = await send("POST", "/api/runs", `{"preset":"tiny","name":${"[".repeat(JSON_MAX_DEPTH - 1)}${"]".repeat(JSON_MAX_DEPTH - 1)}}`);
  assert.equal(atLimit.status, 400);
  assert.ok(atLimit.body.fieldErrors.name, JSON.stringify(atLimit.body));
});

test("jsonDepth counts brackets outside strings only (escapes included); loneSurrogateAt walks without recursion", () => {
  assert.equal(jsonDepth('{"a":[1,{"b":"[[[{"}]}'), 3);
  assert.equal(jsonDepth(String.raw`["\\"," [ ",["\"]"]]`), 2);
  assert.equal(jsonDepth("[[[[[[", 3), 4, "stops once past the limit");
  assert.equal(jsonDepth("42"), 0);
  // a value far deeper than any JSON body could be: no stack overflow, and the field path
  let v: unknown = "x\ud800";
  for (let i = 0; i < 100_000; i++) v = [v];
  const path = loneSurrogateAt({ a: v });
  assert.equal(path?.split(".").length, 100_001);
  assert.ok(path?.startsWith("a.0.0"));
  assert.equal(loneSurrogateAt({ ok: ["fine", { "k\udc00": 1 }] }), "ok.1.(key)");
  assert.equal(loneSurrogateAt("\ud800"), "body");
  assert.equal(loneSurrogateAt({ a: ["\ud83d\ude00"] }), null);
});

test("error texts repeat ids, unknown keys and paths only in a short, printable form", async () => {
  // an id over the schema's 100 characters is refused without being repeated; one within is repeated whole
  const longId = "r".repeat(1024);
  const r = await fetch(`${server.url}/api/runs/${longId}`);
  assert.equal(r.status, 400);
  assert.ok(!(await r.text()).includes("r".repeat(65)));
  const r100 = await fetch(`${server.url}/api/runs/${"s".repeat(100)}`);
  assert.equal(r100.status, 404);
  assert.match(((await r100.json()) as { error: string }).error, /^run s{100} not found$/);
  assert.equal(notFound(`run ${"t".repeat(500)}`).message.length, 2 * 64 + " not found".length);
  const key = `k${"x".repeat(1000)}\u001b[31m`;
  const post = await send("POST", "/api/runs", JSON.stringify({ preset: "tiny", [key]: 1 }));
  assert.equal(post.status, 400);
  const fields = Object.keys(post.body.fieldErrors);
  assert.equal(fields.length, 1);
  assert.ok(fields[0].length <= 64 && fields[0].endsWith("…"), fields[0]);
  assert.ok(!JSON.stringify(post.body).includes("\u001b"), "no control character comes back");
  assert.equal(shortText("a\u0007b\u202ec"), "a\\u0007b\\u202ec");
  assert.equal(shortText("x".repeat(10), 5), "xxxx…");
});
