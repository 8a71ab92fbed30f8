/**
 * The command lines' argument handling, in process with their output captured (server/qrag/cli.ts
 * runQrag, server/cli/user.ts runUser): bad flags, overrides, roles and passwords are refused with
 * the field named and the exit code the real command gives, before any checkpoint is looked up,
 * anything trains or a database is opened. test/cli-sweep.test.ts and test/cli-user.test.ts keep
 * the spawned smoke tests of the real commands.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runQrag } from "../server/qrag/cli.ts";
import { runUser } from "../server/cli/user.ts";

async function qrag(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runQrag(args, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

test("qrag babi-check: a disagreement exits 1 naming its line", async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-cli-args-"));
  const bad = path.join(tmp, "qa1_single-supporting-fact_test.txt");
  fs.writeFileSync(bad, "1 Mary moved to the bathroom.\n2 John went to the hallway.\n3 Where is Mary? \tgarden\t1\n");
  const r = await qrag(["babi-check", bad]);
  assert.equal(r.code, 1);
  assert.match(r.out, /test\.txt:3: expected Mary->garden \{1\}, derived bathroom \{1\}/);
  assert.match(r.out, /agree: 0\/1/);
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("qrag train rejects a bad override naming the field (exit 2), and config prints the resolved preset", async () => {
  const r = await qrag(["train", "preset=tiny", "envs.num_sentences=abc"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /^qrag: .*envs\.num_sentences/s);
  const c = await qrag(["config", "preset=tiny", "--json"]);
  assert.equal(c.code, 0, c.err);
  assert.equal(JSON.parse(c.out).envs.num_sentences, 20);
});

test("commander's own errors (unknown option or command, missing argument) exit 1 with commander's message", async () => {
  const u = await qrag(["eval", "x", "--no-such-flag"]);
  assert.equal(u.code, 1);
  assert.match(u.err, /error: unknown option '--no-such-flag'/);
  const m = await qrag(["eval"]);
  assert.equal(m.code, 1);
  assert.match(m.err, /error: missing required argument 'checkpoint'/);
  const c = await qrag(["no-such-command"]);
  assert.equal(c.code, 1);
  assert.match(c.err, /error: unknown command 'no-such-command'/);
});

test("qrag eval / sweep / eval-official / bench refuse out-of-range numbers, naming the flag, before loading anything", async () => {
  const cases: [string[], RegExp][] = [
    [["eval", "no-such-run", "--samples", "0"], /--samples must be a whole number from 1 to 100000/],
    [["eval", "no-such-run", "--samples", "1e9"], /--samples must be a whole number from 1 to 100000/],
    [["eval", "no-such-run", "--num-sentences", "2.5"], /--num-sentences must be a whole number from 1 to 400000/],
    [["eval", "no-such-run", "--threshold", "high"], /--threshold must be a number/],
    [["sweep", "no-such-run", "--samples", "-3"], /--samples must be a whole number/],
    [["sweep", "no-such-run", "--lengths", "50,999999999"], /--lengths: item 2 \("999999999"\) is not a whole number from 1 to 400000/],
    [["eval-official", "--checkpoint", "no-such-run", "--files", "x.jsonl", "--samples", "ten"], /--samples must be a whole number/],
    [["bench", "--checkpoint", "no-such-run", "--samples", "100,1000000000"], /--samples: item 2 \("1000000000"\) is not a whole number from 1 to 100000/],
    [["bench", "--checkpoint", "no-such-run", "--seeds", "1,,2"], /--seeds: item 2 \(""\) is not a whole number from 0 to 2147483647/],
  ];
  for (const [args, msg] of cases) {
    const r = await qrag(args);
    assert.notEqual(r.code, 0, args.join(" "));
    assert.match(r.err, msg, args.join(" "));
    assert.doesNotMatch(r.err, /no-such-run/, "the flag is checked before the checkpoint is looked up");
  }
});

test("qrag bench --parts niah: bad --variants, a --samples count per length, a climbing --tag and a bad --set are refused (exit 2) before any training", async () => {
  const run = (args: string[]) => qrag(["bench", "--parts", "niah", ...args, "--out", path.join(os.tmpdir(), "niah-cli.json")]);
  const a = await run(["--variants", "niah_single_1,bogus"]);
  assert.equal(a.code, 2, a.err);
  assert.match(a.err, /unknown NIAH variant\(s\) bogus/);
  const b = await run(["--samples", "5,5"]);
  assert.equal(b.code, 2, b.err);
  assert.match(b.err, /--samples needs one count per length \(3\), got 2/);
  // --tag names a folder under runs/ and bench-results/: nothing that climbs out of them
  const c = await run(["--tag", "../elsewhere"]);
  assert.equal(c.code, 2, c.err);
  assert.match(c.err, /--tag: "\.\.\/elsewhere" must be a plain folder name/);
  const d = await run(["--set", "algo.encoder.word_bigrams"]);
  assert.equal(d.code, 2, d.err);
  assert.match(d.err, /algo\.encoder\.word_bigrams/);
});

test("npm run user: a short password, an unknown role or a missing name exit 1 naming the problem, before the database is opened", async () => {
  const user = async (args: string[], stdin = "") => {
    let out = "";
    let err = "";
    const code = await runUser(args, { out: (t) => void (out += t), err: (t) => void (err += t), stdin: async () => stdin });
    return { code, out, err };
  };
  // a database URL nothing can open: reaching it would be a different error
  const saved = process.env.DATABASE_URL;
  process.env.DATABASE_URL = "postgresql://nobody@127.0.0.1:1/none";
  try {
    const short = await user(["add", "root", "--role", "admin", "--password-stdin"], "short");
    assert.equal(short.code, 1);
    assert.match(short.err, /^error: password: at least 10 characters/);
    const role = await user(["add", "root", "--role", "wizard", "--password-stdin"], "long enough password");
    assert.equal(role.code, 1);
    assert.match(role.err, /^error: role: /);
    const missing = await user(["add"]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /error: missing required argument 'name'/);
    assert.equal(short.out + role.out + missing.out, "");
  } finally {
    if (saved === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = saved;
  }
});
