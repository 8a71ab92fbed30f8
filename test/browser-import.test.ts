/**
 * Issue 9 check (d) in a real browser: a finished run (points + episodes) written straight into
 * the test server's database, its exports downloaded through the API, then imported through the
 * Import page (a bad file first: its error shows beside it and nothing is created; then the export
 * folder): the new run has the same points (GET /api/runs/:id/metrics equal) and episodes, opens
 * like any run, and the runs table marks it "imported".
 *
 * Without chromium the test is skipped with a message, except under CI=true where that fails.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { EpisodeDto, MetricsDto, RunListDto } from "../lib/contracts/index.ts";
import { openDb, type DbHandle } from "../server/db/client.ts";
import { downloadExports, seedFinishedRun, type SeededRun } from "./import-helpers.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

describe("import page in a real browser", { skip: skip ?? false, timeout: 15 * 60_000 }, () => {
  let server: TestServer;
  let db: DbHandle;
  let browser: Browser;
  let page: Page;
  let src: SeededRun;
  let folder: string;
  const errors: string[] = [];
  const get = async <T,>(p: string): Promise<T> => (await (await fetch(`${server.url}${p}`)).json()) as T;

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    server = await startTestServer();
    db = await openDb(`file:${path.join(server.dataDir, "qrag.db")}`);
    src = await seedFinishedRun(db, "to export & import");
    folder = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-export-"));
    for (const f of await downloadExports(server.url, src.id)) fs.writeFileSync(path.join(folder, f.name), f.bytes);
    fs.writeFileSync(path.join(folder, "README.txt"), "not a run file");
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 900 });
  });

  after(async () => {
    await browser?.close();
    await db?.close();
    await server?.stop();
    if (folder) fs.rmSync(folder, { recursive: true, force: true });
  });

  test("exports imported through the page: errors per file first, then the same points and episodes", async () => {
    const runCount = async () => (await get<RunListDto>("/api/runs?limit=1")).total;
    const before = await runCount();
    await page.goto(`${server.url}/`);
    await page.click('header nav a:has-text("Import")');
    await page.waitForURL(/\/import$/);

    // a broken episodes file beside a good metrics file: the error names file, line and field
    const epName = fs.readdirSync(folder).find((n) => n.endsWith("-episodes.jsonl"))!;
    const csvName = fs.readdirSync(folder).find((n) => n.endsWith("-metrics.csv"))!;
    const lines = fs.readFileSync(path.join(folder, epName), "utf8").trim().split("\n");
    const broken = JSON.parse(lines[1]);
    broken.record.pred_idx = ["<img src=x onerror=alert(1)>"];
    await page.setInputFiles('[data-testid="import-files-input"]', [
      { name: csvName, mimeType: "text/csv", buffer: fs.readFileSync(path.join(folder, csvName)) },
      { name: epName, mimeType: "application/x-ndjson", buffer: Buffer.from([lines[0], JSON.stringify(broken), ...lines.slice(2)].join("\n")) },
    ]);
    await page.click('[data-testid="import-submit"]');
    const err = page.locator(`[data-testid="import-file-row"][data-name="${epName}"] [data-testid="import-file-error"]`);
    await err.waitFor({ timeout: 30_000 });
    assert.equal(await err.textContent(), `${epName} line 2: record.pred_idx.0: expected number`);
    assert.equal(await page.locator("img").count(), 0, "nothing of the file is rendered as markup");
    assert.equal(await runCount(), before, "nothing was created");

    // the downloaded export folder, picked as a folder
    await page.setInputFiles('[data-testid="import-folder-input"]', folder);
    await page.locator('[data-testid="import-file-row"][data-kind="skipped"][data-name="README.txt"]').waitFor();
    assert.equal(await page.locator('[data-testid="import-file-row"]:not([data-kind="skipped"])').count(), 5);
    await page.click('[data-testid="import-submit"]');
    const result = page.locator('[data-testid="import-result"]');
    await result.waitFor({ timeout: 60_000 });
    const id = (await result.getAttribute("data-run-id"))!;
    assert.match((await result.textContent()) ?? "", new RegExp(`${src.points} metric points, ${src.episodes.length} episodes`));
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, "import.png"), fullPage: true });

    // the same points, as the charts read them
    const [a, b] = await Promise.all([get<MetricsDto>(`/api/runs/${src.id}/metrics`), get<MetricsDto>(`/api/runs/${id}/metrics`)]);
    assert.ok(Object.keys(a.series).length >= 5);
    assert.deepEqual(b.series, a.series);
    // and the same episodes
    const recs = async (runId: string) => {
      const list = await get<EpisodeDto[]>(`/api/runs/${runId}/episodes?limit=100`);
      const full = await Promise.all(list.map((e) => get<EpisodeDto>(`/api/runs/${runId}/episodes/${e.id}`)));
      return full.map((e) => [e.update, e.sampleId, e.record]).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
    };
    assert.deepEqual(await recs(id), await recs(src.id));

    // the run opens like any other: its episodes are listed and open
    await page.click('[data-testid="import-run-link"]');
    await page.waitForURL(new RegExp(`/runs/${id}$`));
    await waitFor("the imported run's episodes listed", async () => (await page.locator('[data-testid="episode-link"]').count()) === src.episodes.length, 30_000);
    await page.locator('[data-testid="episode-link"]').first().click();
    await page.waitForURL(new RegExp(`/runs/${id}/episodes/\\d+`));
    await page.getByText("Where is item").first().waitFor({ timeout: 30_000 });

    // the runs table marks it
    await page.goto(`${server.url}/`);
    await page.locator(`tr[data-run-id="${id}"] [data-testid="kind-badge"]`).waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(`tr[data-run-id="${src.id}"] [data-testid="kind-badge"]`).count(), 0, "a trained run has no badge");
    assert.deepEqual(errors, []);
  });
});
