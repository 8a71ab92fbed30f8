/**
 * The engine child's watcher (server/worker/exit-with-parent.ts): a child whose main thread never
 * yields (as in a long CPU training iteration) is dead within 1 s of its parent's kill -9; before
 * the watcher, only the IPC disconnect ended it, once its event loop turned (1.9–4 s after a
 * killed worker). Linux only (/proc tells a dead process, zombie included, from a live one).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { waitFor } from "./platform-helpers.ts";

const WATCHER = path.resolve(import.meta.dirname, "../server/worker/exit-with-parent.ts");

/** Alive and not a zombie. */
function running(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

test("a child busy on its main thread is dead within 1 s of its parent's kill -9", { skip: process.platform !== "linux" && "needs /proc" }, async () => {
  // child (a file: an -e child's watcher did not see its parent change): the watcher, then a loop
  // that never yields; parent: starts the child and prints its pid once it is busy
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-orphan-"));
  const childFile = path.join(dir, "child.mts");
  fs.writeFileSync(childFile, `import { exitWithParent } from ${JSON.stringify(WATCHER)};\nawait exitWithParent();\nprocess.stdout.write("busy\\n");\nfor (const end = Date.now() + 20000; Date.now() < end; );\n`);
  const parentCode = `
    const { spawn } = require("node:child_process");
    const c = spawn(process.execPath, ["--import", "tsx", ${JSON.stringify(childFile)}], { stdio: ["ignore", "pipe", "inherit"] });
    c.stdout.once("data", () => console.log(c.pid));
    setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ["-e", parentCode], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  parent.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const childPid = await waitFor("the busy child", () => (/^\d+\n/.test(out) ? Number(out.trim()) : undefined), 30_000, 20);
  assert.ok(running(childPid));
  parent.kill("SIGKILL");
  const t0 = performance.now();
  try {
    await waitFor("the child's death", () => !running(childPid), 1_000, 10);
    console.log(`# child dead ${Math.round(performance.now() - t0)} ms after its parent's kill -9`);
  } finally {
    if (running(childPid)) process.kill(childPid, "SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
