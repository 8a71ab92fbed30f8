/**
 * Issue 29's UI in real Chromium, against the real dashboard (production Next build, no local
 * worker) with a Slurm queue on a real single-node Slurm (test/slurm-cluster.ts):
 *   - the launch form's queue select lists the queues with their waiting runs; picking the Slurm
 *     queue shows the resource fields filled with its defaults; out-of-bounds or malformed values
 *     are named at their field and nothing is launched;
 *   - the launched run's page shows its queue, request and Slurm job live: PENDING with Slurm's
 *     reason while another job holds the node, RUNNING on the node (elapsed time ticking) once it
 *     is free, its output in the page's log while it runs (once, also after it ended), a new job after `scancel` from a shell with the first among the earlier jobs (and its
 *     ending in the log), and
 *     CANCELLED after Cancel in the page; the top bar counts the waiting run;
 *   - Clone opens the form on the same queue and request; the runs table shows each run's queue,
 *     sorts and filters by it.
 * Screenshots: test-results/screenshots/slurm-*.png.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { RunDetailDto } from "../lib/contracts/index.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, watchedPage } from "./ui-browser-helpers.ts";
import { freePort, tmpDir, waitFor } from "./platform-helpers.ts";
import { api, getRun, startServer, waitHealthy, type Env, type Proc } from "./e2e-helpers.ts";
import { slurmDashboardEnv, slurmSkip, startSlurmCluster, type SlurmCluster } from "./slurm-cluster.ts";

const skip = browserUnavailable() ?? slurmSkip;
if (skip) console.log(`Slurm browser test skipped: ${skip}`);

describe("queues and Slurm jobs in a real browser", { skip: skip || false, timeout: 5 * 60_000 }, () => {
  let cluster: SlurmCluster;
  let server: Proc;
  let env: Env;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const shot = async (name: string) => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `slurm-${name}.png`), fullPage: true });
  };
  const slurm = (cmd: string, args: string[]) => execFileSync(cmd, args, { env: cluster.env, encoding: "utf8", timeout: 10_000 }).trim();
  const text = async (sel: string) => ((await page.textContent(sel)) ?? "").trim();
  /** Waits until `sel`'s text passes `ok` (the page's own live updates, no reload). */
  const textUntil = async (what: string, sel: string, ok: (t: string) => boolean, ms = 30_000) =>
    waitFor(what, async () => {
      const t = (await page.textContent(sel, { timeout: 1_000 }).catch(() => null))?.trim();
      return t !== undefined && t !== null && ok(t) ? t : null;
    }, ms, 100, () => `${sel}: ${JSON.stringify(errors)}\n${server.tail(20)}`);

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    cluster = await startSlurmCluster();
    const dataDir = tmpDir("qrag-slurm-ui-");
    const port = await freePort();
    env = { dbUrl: `file:${path.join(dataDir, "qrag.db")}`, dataDir, port, url: `http://127.0.0.1:${port}` };
    server = startServer(env, {
      worker: false,
      env: slurmDashboardEnv(cluster, { QRAG_SLURM_TIME_LIMIT_MIN: "20" }),
    });
    await waitHealthy(env, server);
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 900 });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await cluster?.stop();
  });

  test("launch on the Slurm queue, follow its job from PENDING to CANCELLED, clone it, find it in the table", async () => {
    await page.goto(`${env.url}/runs/new`);
    await page.waitForSelector('[data-testid="queue-select"]');
    const options = await page.$$eval('[data-testid="queue-select"] option', (os) => os.map((o) => [(o as HTMLOptionElement).value, o.textContent]));
    assert.deepEqual(options, [
      ["workers", "workers — connected workers (0 waiting)"],
      ["slurm", "slurm — Slurm partition debug (0 waiting)"],
    ]);
    // the connected workers take no request
    assert.equal(await page.locator('[data-field^="resources."]').count(), 0);

    await page.selectOption('[data-testid="queue-select"]', "slurm");
    await page.waitForSelector('[data-field="resources.gpus"] input');
    const values = await page.$$eval('[data-field^="resources."]', (fs) => fs.map((f) => [f.querySelector("label")!.textContent, (f.querySelector("input") as HTMLInputElement).value]));
    assert.deepEqual(values, [
      ["GPUs", "0"], ["GPU type", ""], ["CPUs", "1"], ["memory (MB)", "1500"], ["time limit (min)", "20"], ["account", ""], ["QoS", ""],
    ]);

    // out of bounds and malformed: named at the field, and Launch launches nothing
    await page.fill('[data-field="resources.gpus"] input', "65");
    await page.fill('[data-field="resources.time_limit_min"] input', "ten");
    assert.equal(await text('[data-field="resources.gpus"] .field-error'), "GPUs: at most 64");
    assert.equal(await text('[data-field="resources.time_limit_min"] .field-error'), "time limit (min): a whole number");
    await page.click('[data-testid="launch-button"]');
    await page.waitForFunction(() => document.activeElement?.closest("[data-field]")?.getAttribute("data-field") === "resources.gpus");
    assert.equal((await api<{ total: number }>(env, "GET", "/api/runs")).body.total, 0, "nothing launched");
    await shot("form-errors");
    await page.fill('[data-field="resources.gpus"] input', "0");
    await page.fill('[data-field="resources.time_limit_min"] input', "15");
    assert.equal(await page.locator('[data-field^="resources."] .field-error').count(), 0);

    // another job holds the whole node: ours waits, with Slurm's reason
    const blocker = slurm("sbatch", ["--parsable", "--exclusive", "-p", "debug", "-t", "5", "-o", "/dev/null", `--chdir=${cluster.jobsDir}`, "--wrap", "sleep 300"]);
    await page.selectOption('[data-testid="preset-select"]', "tiny");
    await page.selectOption('[data-testid="queue-select"]', "slurm");
    await page.fill('[data-field="resources.time_limit_min"] input', "15");
    await page.click('[data-testid="launch-button"]');
    await page.waitForURL((u) => /^\/runs\/(?!new$)[^/]+$/.test(u.pathname));
    const id = page.url().split("/").pop()!;
    await page.waitForSelector('[data-testid="executor-panel"]');
    assert.equal(await text('[data-testid="run-queue"]'), "slurm");
    assert.equal(await text('[data-testid="run-resources"]'), "· GPUs 0, CPUs 1, memory (MB) 1500, time limit (min) 15");
    // the page says what the API says (Slurm may move the reason from Priority to Resources meanwhile)
    const run1 = await waitFor("PENDING with Slurm's reason, as the API has it", async () => {
      const r = await getRun(env, id);
      const shown = await text('[data-testid="job-state"]');
      return /^(Resources|Priority)$/.test(r.executor?.reason ?? "") && shown === `PENDING (${r.executor!.reason})` ? r : null;
    }, 30_000, 100, () => server.tail(20));
    const job1 = run1.executor!.jobId!;
    assert.match(job1, /^\d+$/);
    assert.equal(await text('[data-testid="job-id"]'), job1);
    assert.equal(await text('[data-testid="job-elapsed"]'), "—", "not started");
    await textUntil("the top bar's waiting count", '[data-testid="queue-count"][data-queue="slurm"]', (t) => t === "slurm 1 waiting", 10_000);
    await shot("pending");

    // the node is free: the job runs there, its elapsed time ticking
    slurm("scancel", [blocker]);
    await textUntil("RUNNING on the node", '[data-testid="job-state"]', (t) => t === `RUNNING on ${cluster.node}`);
    assert.equal(await text('[data-testid="job-node"]'), cluster.node);
    const e1 = await textUntil("an elapsed time", '[data-testid="job-elapsed"]', (t) => /^\d+s$/.test(t), 10_000);
    await textUntil("the elapsed time to tick", '[data-testid="job-elapsed"]', (t) => /^\d+s$/.test(t) && Number.parseInt(t) > Number.parseInt(e1), 5_000);

    // the running job's output reaches the page's log while it runs (no reload): its worker's line on
    // stderr saying which run it took, drawn once, as the API has it
    const ownLine = `[job ${job1} stderr] `;
    const shownLines = () => page.$$eval('[data-testid="log-tail"] .line', (ls) => ls.map((l) => l.textContent ?? ""));
    const assigned = await waitFor("the running job's output in the page's log", async () => {
      const lines = (await shownLines()).filter((l) => l.includes(ownLine) && l.includes(`assigned run ${id}`));
      return lines.length ? lines : null;
    }, 15_000, 100, () => server.tail(20));
    assert.equal(assigned.length, 1, JSON.stringify(assigned));
    assert.equal((await getRun(env, id)).executor?.state, "RUNNING", "while the job runs");
    const apiLines = (await api<{ message: string }[]>(env, "GET", `/api/runs/${id}/logs?limit=300`)).body.filter((l) => l.message.startsWith(ownLine) && l.message.includes("assigned run"));
    assert.deepEqual(apiLines.map((l) => l.message), [assigned[0].slice(assigned[0].indexOf(ownLine))]);
    await shot("running-output");

    // scancel from a shell: the run gets a new job, the first is listed as an earlier one
    slurm("scancel", [job1]);
    const job2 = await textUntil("a second job", '[data-testid="job-id"]', (t) => /^\d+$/.test(t) && t !== job1, 60_000);
    await textUntil("job 1 among the earlier jobs", `[data-testid="earlier-jobs"] tr[data-job="${job1}"] [data-testid="job-state"]`, (t) => t.startsWith("CANCELLED"));
    assert.match(await text(`[data-testid="earlier-jobs"] tr[data-job="${job1}"]`), /^1/);
    assert.match(await text('[data-testid="current-job"]'), /job 2 of this run/);
    // the ended job's line reaches the page's log without a reload
    await textUntil("the ended job in the log", '[data-testid="log-tail"]', (t) => t.includes(`Slurm job ${job1} ended CANCELLED`), 10_000);
    assert.equal((await shownLines()).filter((l) => l.includes(ownLine) && l.includes(`assigned run ${id}`)).length, 1, "its output line once after it ended");
    await shot("second-job");

    // Cancel in the page: the run cancelled, its job CANCELLED
    page.once("dialog", (d) => void d.accept());
    await page.click('[data-testid="cancel-button"]');
    await page.waitForSelector('[data-testid="run-page"][data-status="cancelled"]', { timeout: 30_000 });
    await textUntil("the job CANCELLED", '[data-testid="job-state"]', (t) => t.startsWith("CANCELLED"), 15_000);
    assert.equal(await text('[data-testid="job-id"]'), job2);

    // Clone: the same queue and request in the form
    await page.click('[data-testid="clone-link"]');
    await page.waitForSelector('[data-field="resources.cpus"] input');
    assert.equal(await page.inputValue('[data-testid="queue-select"]'), "slurm");
    assert.equal(await page.inputValue('[data-field="resources.time_limit_min"] input'), "15");
    assert.equal(await page.inputValue('[data-field="resources.mem_mb"] input'), "1500");

    // the runs table: each run's queue, sorted and filtered by it
    const w = await api<RunDetailDto>(env, "POST", "/api/runs", { preset: "tiny", name: "on the workers" });
    assert.equal(w.status, 201);
    await page.goto(`${env.url}/`);
    await page.waitForSelector(`tr[data-run-id="${w.body.id}"]`);
    assert.equal(await text(`tr[data-run-id="${id}"] td[data-column="queue"]`), "slurm");
    assert.equal(await text(`tr[data-run-id="${w.body.id}"] td[data-column="queue"]`), "workers");
    const queuesShown = () => page.$$eval('[data-testid="runs-table"] tbody td[data-column="queue"]', (tds) => tds.map((t) => t.textContent));
    await page.click('th[data-sort="queue"]'); // desc first
    await page.waitForURL(/sort=queue/);
    await waitFor("rows sorted by queue", async () => JSON.stringify(await queuesShown()) === JSON.stringify(["workers", "slurm"]), 10_000);
    await page.click(`tr[data-run-id="${id}"] td[data-column="queue"] button`);
    await page.waitForURL(/queue=slurm/);
    await waitFor("only the Slurm queue's runs", async () => JSON.stringify(await queuesShown()) === JSON.stringify(["slurm"]), 10_000);
    await shot("table");
    assert.deepEqual(errors, []);
  });
});
