/**
 * The data root's resolver (server/qrag/data-root.ts) on real files, folders and symlinks: relative
 * and absolute paths inside, `..` escapes, links leading out (also dangling and chained), reserved
 * internals, and the root's listing. Plus: data readers name file and line, never the file's text.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { listDataRoot, readFileInDataRoot, resolveDataPath } from "../server/qrag/data-root.ts";
import { checkEnvPaths } from "../server/qrag/data/registry.ts";
import { loadHotpotqa } from "../server/qrag/data/hotpotqa.ts";
import { loadMusique } from "../server/qrag/data/musique.ts";
import { loadRulerFile } from "../server/qrag/data/ruler-file.ts";
import { tmpDir } from "./platform-helpers.ts";

const base = tmpDir("qrag-dataroot-");
after(() => fs.rmSync(base, { recursive: true, force: true }));
const root = path.join(base, "root");
const outside = path.join(base, "outside");
fs.mkdirSync(path.join(root, "books", "deep", "deeper", "deepest"), { recursive: true });
fs.mkdirSync(path.join(root, "runs", "abc"), { recursive: true });
fs.mkdirSync(outside, { recursive: true });
fs.writeFileSync(path.join(root, "train.jsonl"), "{}\n");
fs.writeFileSync(path.join(root, "books", "a.txt"), "A book.");
fs.writeFileSync(path.join(root, "books", "deep", "deeper", "deepest", "far.txt"), "far");
fs.writeFileSync(path.join(root, "qrag.db"), "db");
fs.writeFileSync(path.join(root, "worker-token"), "token");
fs.writeFileSync(path.join(root, "worker-local.id"), "id");
fs.writeFileSync(path.join(root, ".env"), "SECRET=1");
fs.writeFileSync(path.join(root, "runs", "abc", "metrics.jsonl"), "{}");
fs.writeFileSync(path.join(outside, "secret.txt"), "outside secret");
fs.symlinkSync(path.join(outside, "secret.txt"), path.join(root, "link-out.txt"));
fs.symlinkSync(outside, path.join(root, "dir-out"));
fs.symlinkSync(path.join(outside, "nothing-here"), path.join(root, "dangling-out"));
fs.symlinkSync("train.jsonl", path.join(root, "link-in.jsonl"));
fs.symlinkSync("link-out.txt", path.join(root, "chain-out.txt"));
fs.symlinkSync("books", path.join(root, "books-link"));
// a link through the root: "<root>/via/../x" is not "<root>/x" when via is a link elsewhere
fs.mkdirSync(path.join(outside, "sub"));
fs.symlinkSync(path.join(outside, "sub"), path.join(root, "via"));

const file = (p: string) => resolveDataPath(root, p, { kind: "file" });
const OUTSIDE = `must be inside the data root ${root}`;

test("paths inside the root resolve to their real path and are given back relative", () => {
  assert.deepEqual(file("train.jsonl"), { ok: true, abs: path.join(root, "train.jsonl"), rel: "train.jsonl" });
  assert.deepEqual(file(path.join(root, "train.jsonl")), { ok: true, abs: path.join(root, "train.jsonl"), rel: "train.jsonl" }, "absolute inside");
  assert.deepEqual(file("books/../train.jsonl"), { ok: true, abs: path.join(root, "train.jsonl"), rel: "train.jsonl" });
  assert.deepEqual(file("link-in.jsonl"), { ok: true, abs: path.join(root, "train.jsonl"), rel: "train.jsonl" }, "a link inside the root");
  assert.deepEqual(resolveDataPath(root, "books-link", { kind: "dir" }), { ok: true, abs: path.join(root, "books"), rel: "books" });
  assert.deepEqual(resolveDataPath(root, "books/", { kind: "dir" }), { ok: true, abs: path.join(root, "books"), rel: "books" });
});

test("paths outside the root are refused with one message, whether they exist or not", () => {
  for (const p of ["/etc/passwd", "/nonexistent/x", "../../../../etc/passwd", "../outside/secret.txt", "../outside/none.txt", path.join(outside, "secret.txt"), "books/../../outside/secret.txt"]) {
    assert.deepEqual(file(p), { ok: false, reason: "outside", message: OUTSIDE }, p);
  }
});

test("symlinks leading out of the root are refused (file, folder, chained, dangling, before ..)", () => {
  for (const p of ["link-out.txt", "dir-out/secret.txt", "chain-out.txt", "dangling-out", "via/secret.txt"]) {
    assert.deepEqual(file(p), { ok: false, reason: "outside", message: OUTSIDE }, p);
  }
  assert.deepEqual(resolveDataPath(root, "dir-out", { kind: "dir" }), { ok: false, reason: "outside", message: OUTSIDE });
  // ".." is folded before links are followed, and the path given back (what is opened) is the one checked
  assert.deepEqual(file("via/../train.jsonl"), { ok: true, abs: path.join(root, "train.jsonl"), rel: "train.jsonl" });
});

test("server internals under the root are not data", () => {
  for (const p of ["qrag.db", "worker-token", "local-worker.json", "worker-local.id", ".env", "runs/abc/metrics.jsonl", "books/../qrag.db"]) {
    const r = file(p);
    assert.equal(r.ok, false, p);
    assert.equal(!r.ok && r.reason, "reserved", p);
  }
});

test("inside the root, a missing path or the wrong kind says so", () => {
  assert.deepEqual(file("nope.jsonl"), { ok: false, reason: "not-found", message: `nope.jsonl not found in the data root ${root}` });
  assert.equal(resolveDataPath(root, "nope.jsonl", { kind: "file", mustExist: false }).ok, true);
  assert.deepEqual(file("books"), { ok: false, reason: "wrong-kind", message: "books is not a file" });
  assert.deepEqual(resolveDataPath(root, "train.jsonl", { kind: "dir" }), { ok: false, reason: "wrong-kind", message: "train.jsonl is not a folder" });
});

test("a config's paths are checked per field and stored relative", () => {
  const env = { name: "musique", train_path: path.join(root, "train.jsonl"), eval_path: "/etc/passwd" } as unknown as Parameters<typeof checkEnvPaths>[0];
  const r = checkEnvPaths(env, root);
  assert.deepEqual(r.issues, [{ path: "envs.eval_path", message: OUTSIDE }]);
  assert.equal((r.env as { train_path: string }).train_path, "train.jsonl");
  const noise = checkEnvPaths({ name: "babilong", noise: "sotu" } as unknown as Parameters<typeof checkEnvPaths>[0], root);
  assert.deepEqual(noise.issues, [], '"sotu" names no path');
  const out = checkEnvPaths({ name: "babilong", noise: outside } as unknown as Parameters<typeof checkEnvPaths>[0], root);
  assert.deepEqual(out.issues, [{ path: "envs.noise", message: OUTSIDE }]);
});

test("the listing is bounded and leaves out internals, dot-files and links out of the root", () => {
  const { entries, truncated } = listDataRoot(root);
  const paths = entries.map((e) => e.path);
  assert.equal(truncated, false);
  for (const p of ["train.jsonl", "books", "books/a.txt", "books/deep/deeper", "link-in.jsonl", "books-link"]) assert.ok(paths.includes(p), p);
  for (const p of ["qrag.db", "worker-token", "worker-local.id", ".env", "runs", "runs/abc", "link-out.txt", "dir-out", "chain-out.txt", "dangling-out", "via"]) {
    assert.ok(!paths.includes(p), `${p} is not listed`);
  }
  assert.ok(!paths.some((p) => p.split("/").length > 3), "depth ≤ 3");
  assert.ok(!paths.includes("books-link/a.txt"), "a link is not descended into");
  assert.deepEqual(entries.find((e) => e.path === "books/a.txt"), { path: "books/a.txt", kind: "file", size: 7 });
  assert.equal(entries.find((e) => e.path === "books")?.kind, "dir");
  const few = listDataRoot(root, { maxEntries: 2 });
  assert.equal(few.entries.length, 2);
  assert.equal(few.truncated, true);
});

test("data readers name the file and line, never the file's text", () => {
  const secret = "root:x:0:0:SECRET-MARKER:/root:/bin/bash";
  const f = path.join(root, "passwd.jsonl");
  fs.writeFileSync(f, `${secret}\n`);
  const arr = path.join(root, "passwd.json");
  fs.writeFileSync(arr, `[\n\n${secret}\n]`);
  const cases: [() => unknown, number][] = [
    [() => loadMusique(f, "passwd.jsonl"), 1],
    [() => loadRulerFile(f, "passwd.jsonl"), 1],
    [() => loadHotpotqa(arr, "passwd.jsonl"), 3],
  ];
  for (const [load, line] of cases) {
    assert.throws(load, (e: Error) => {
      assert.match(e.message, new RegExp(`^passwd\\.jsonl:${line}: invalid JSON`));
      assert.ok(!/SECRET|root:x|root/.test(e.message.replace(/^passwd\.jsonl/, "")), e.message);
      return true;
    });
  }
  // a valid JSON value of the wrong shape: field paths only, not the record's values (its id, titles)
  fs.writeFileSync(f, `${JSON.stringify({ id: "SECRET-ID", question: 3, answer: "SECRET-ANSWER", paragraphs: [] })}\n`);
  assert.throws(() => loadMusique(f, "passwd.jsonl"), (e: Error) => {
    assert.match(e.message, /^passwd\.jsonl:1: /);
    assert.ok(!/SECRET/.test(e.message), e.message);
    return true;
  });
  assert.throws(() => loadMusique(path.join(root, "missing.jsonl"), "missing.jsonl"), /^Error: missing\.jsonl: file not found$|missing\.jsonl: file not found/);
});

test("a file is checked once open: links out, internals and a swap after the path was resolved are refused, content never quoted", () => {
  assert.equal(readFileInDataRoot(root, path.join(root, "train.jsonl"), "train.jsonl").toString(), "{}\n");
  assert.equal(readFileInDataRoot(root, path.join(root, "link-in.jsonl"), "link-in.jsonl").toString(), "{}\n", "a link inside the root is fine");
  for (const f of ["link-out.txt", "chain-out.txt", "dir-out/secret.txt", "worker-token", ".env"]) {
    assert.throws(() => readFileInDataRoot(root, path.join(root, f), f), (e: Error) => e.message.startsWith(`${f}: ${OUTSIDE}`) && !e.message.includes("outside secret"), f);
  }
  assert.throws(() => readFileInDataRoot(root, path.join(root, "nope.txt"), "nope.txt"), /^InputError: nope\.txt: file not found$/);
  assert.throws(() => readFileInDataRoot(root, path.join(root, "books"), "books"), /books: not a file/);
  // the path checks out, then the file is swapped for a link out before it is read
  const swap = path.join(root, "swap.txt");
  fs.writeFileSync(swap, "fine");
  const r = file("swap.txt");
  assert.ok(r.ok);
  fs.rmSync(swap);
  fs.symlinkSync(path.join(outside, "secret.txt"), swap);
  assert.throws(() => readFileInDataRoot(root, r.ok ? r.abs : "", "swap.txt"), (e: Error) => e.message.startsWith(`swap.txt: ${OUTSIDE}`));
  fs.rmSync(swap);
});
