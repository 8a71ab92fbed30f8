/**
 * Issue 9 check (a), in real Chromium against the real server and its local worker: a tiny run is
 * trained, a sweep is started from its run page's form, and the sweep chart fills in live (points
 * appear while the sweep still runs); the table, the sweep page and its across-lengths view show
 * the stored figures. Screenshots: test-results/screenshots/sweep-*.png.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { EpisodeDto, RunDetailDto, SweepDto, SweepListDto } from "../lib/contracts/index.ts";
import { fmtNum } from "../lib/format.ts";
import { writeTinyGguf } from "../server/qrag/index.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

describe("sweeps in a real browser", { skip: skip ?? false, timeout: 10 * 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const api = async <T,>(p: string, init?: RequestInit): Promise<T> => (await (await fetch(`${server.url}${p}`, init)).json()) as T;
  const shot = async (name: string) => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    server = await startTestServer();
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 900 });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("start a sweep from the run page and watch the chart fill in live", async () => {
    const run = await api<RunDetailDto>("/api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ preset: "tiny", overrides: ["steps_count=30", "eval_interval=10", "eval_episodes=8"] }) });
    await waitFor("the tiny run to complete", async () => {
      const r = await api<RunDetailDto>(`/api/runs/${run.id}`);
      assert.notEqual(r.status, "failed", r.error ?? "");
      return r.status === "completed";
    }, 240_000);

    await page.goto(`${server.url}/runs/${run.id}`);
    await page.click('[data-testid="sweep-button"]');
    // a length over the bound is refused by the server, named beside its field, and nothing is queued
    await page.fill('[data-testid="sweep-lengths"]', "20,500000");
    await page.click('[data-testid="sweep-submit"]');
    await page.waitForSelector('[data-testid="sweep-error-lengths"]');
    assert.match((await page.textContent('[data-testid="sweep-error-lengths"]')) ?? "", /400000/);
    assert.equal((await api<SweepListDto>(`/api/runs/${run.id}/sweeps`)).sweeps.length, 0);

    // every value the chart's point count takes, with the sweep's status then, recorded in the page
    await page.evaluate(() => {
      const w = window as unknown as { __points: string[] };
      w.__points = [];
      new MutationObserver(() => {
        const n = Number(document.querySelector('[data-testid="sweep-chart"]')?.getAttribute("data-points") ?? 0);
        const status = document.querySelector('[data-testid="sweep-item"]')?.getAttribute("data-status") ?? "";
        const entry = `${n} ${status}`;
        if (w.__points.at(-1) !== entry) w.__points.push(entry);
      }).observe(document.body, { subtree: true, attributes: true, childList: true, attributeFilter: ["data-points", "data-status"] });
    });
    // the last length is large enough to take seconds, so earlier lengths must show before it ends
    await page.fill('[data-testid="sweep-lengths"]', "20,300,20000");
    await page.fill('[data-testid="sweep-samples"]', "4");
    // with an LLM reader: the tiny generated GGUF model, put in the data root
    writeTinyGguf(path.join(server.dataDir, "tiny.gguf"));
    await page.selectOption('[data-testid="sweep-reader"]', "gguf");
    await page.fill('[data-testid="sweep-reader-value"]', "tiny.gguf");
    await page.click('[data-testid="sweep-submit"]');
    await page.waitForSelector('[data-testid="sweep-item"]');
    const sweepId = (await page.getAttribute('[data-testid="sweep-item"]', "data-sweep-id"))!;
    await page.waitForSelector('[data-testid="sweep-item"][data-status="completed"]', { timeout: 180_000 });
    // 3 lengths × 5 methods (Q-RAG, after the threshold, after it + prune, BM25, dense)
    await page.waitForSelector('[data-testid="sweep-chart"][data-points="15"]');
    const seen = await page.evaluate(() => (window as unknown as { __points: string[] }).__points);
    assert.ok(seen.includes("5 running") || seen.includes("10 running"), `points drawn while the sweep still ran (saw ${seen.join(" → ")})`);
    await shot("sweep-run-page");
    await page.locator('[data-testid="sweep-section"]').screenshot({ path: path.join(SCREENSHOTS, "sweep.png") });

    // the table shows what the API stored, with its Wilson interval
    const stored = await api<SweepDto>(`/api/sweeps/${sweepId}`);
    const rows = page.locator('[data-testid="sweep-row"]');
    assert.equal(await rows.count(), 3);
    for (const p of stored.points) {
      const text = (await page.locator(`[data-testid="sweep-row"][data-chunks="${p.numChunks}"]`).textContent()) ?? "";
      assert.ok(text.includes(fmtNum(p.qrag.coverage, 3)), `row ${p.numChunks}: ${text}`);
      assert.match(text, /\[[\d.]+, [\d.]+\]/, "an interval beside the coverage");
      const pruned = p.qragPruned;
      assert.ok(pruned, "a dashboard sweep runs to max_steps and records the prune rule");
      assert.equal(await page.locator(`[data-testid="sweep-row"][data-chunks="${p.numChunks}"] [data-testid="sweep-pruned"]`).textContent(), `${fmtNum(pruned.coverage, 3)} / ${fmtNum(pruned.f1, 3)}`);
      // the reader answered every episode; its accuracy is in the table
      assert.equal(p.reader?.n, 4, `the reader at ${p.numChunks} chunks`);
      assert.match((await page.locator(`[data-testid="sweep-row"][data-chunks="${p.numChunks}"] [data-testid="sweep-accuracy"]`).textContent()) ?? "", new RegExp(`^${fmtNum(p.reader.accuracy, 3).replace(".", "\\.")} \\[`));
    }
    assert.match((await page.textContent('[data-testid="sweep-item"]')) ?? "", /reader gguf:tiny\.gguf/);
    // the chart's answer-accuracy series: one point per length
    await page.selectOption('[data-testid="sweep-section"] [data-testid="sweep-metric"]', "accuracy");
    await page.waitForSelector('[data-testid="sweep-section"] [data-testid="sweep-chart"][data-metric="accuracy"][data-points="3"]');
    await page.selectOption('[data-testid="sweep-section"] [data-testid="sweep-metric"]', "coverage");

    // a CLI sweep uploaded from the run page: a bad line is named (file and line), then a good file adds a sweep
    const good = stored.points.slice(0, 2).map((p) => JSON.stringify({ ...p, threshold: 0.9 }));
    await page.click('[data-testid="sweep-upload-button"]');
    await page.setInputFiles('[data-testid="sweep-points-file"]', { name: "cli-sweep.jsonl", mimeType: "application/json", buffer: Buffer.from([good[0], '{"numChunks": "many"}'].join("\n")) });
    await page.click('[data-testid="sweep-upload-submit"]');
    await page.waitForSelector('[data-testid="sweep-upload-error"]');
    assert.match((await page.textContent('[data-testid="sweep-upload-error"]')) ?? "", /cli-sweep\.jsonl line 2: numChunks/);
    assert.equal((await api<SweepListDto>(`/api/runs/${run.id}/sweeps`)).sweeps.length, 1, "nothing stored from the bad file");
    await page.setInputFiles('[data-testid="sweep-points-file"]', { name: "cli-sweep.jsonl", mimeType: "application/json", buffer: Buffer.from(good.join("\n")) });
    await page.click('[data-testid="sweep-upload-submit"]');
    await page.waitForSelector('[data-testid="sweep-item"] >> nth=1');
    // both sweeps overlay: 3 + 2 lengths × 5 methods
    await page.waitForSelector('[data-testid="sweep-section"] [data-testid="sweep-chart"][data-points="25"]');

    // the sweep page: its episodes and the same samples across lengths
    await page.click(`a[href="/sweeps/${sweepId}"]`);
    await page.waitForSelector('[data-testid="sweep-page"]');
    // the header names the swept run by its name, linked
    await page.locator('[data-testid="sweep-of"]', { hasText: run.name }).waitFor({ timeout: 10_000 });
    assert.equal(await page.getAttribute('[data-testid="sweep-of"]', "href"), `/runs/${run.id}`);
    await page.waitForSelector('[data-testid="across-row"]');
    assert.equal(await page.locator('[data-testid="across-row"]').count(), 4, "4 samples, each at every length");
    assert.equal(await page.locator('[data-testid="across-cell"]').count(), 12);
    const failures = stored.points.some((p) => p.qrag.coverage < 1);
    await page.click('[data-testid="across-filter-failures"]');
    if (!failures) await page.waitForSelector("text=No samples match.");
    else assert.ok((await page.locator('[data-testid="across-row"]').count()) >= 1);
    await page.click('[data-testid="across-filter-all"]');
    await shot("sweep-page");
    // the length selector lists that length's episodes: all 4 samples, and only them
    for (const length of [20, 300, 20000]) {
      await page.selectOption('[data-testid="sweep-episodes-length"]', String(length));
      const want = (await api<EpisodeDto[]>(`/api/runs/${sweepId}/episodes?phase=sweep&numChunks=${length}`)).map((e) => `/runs/${sweepId}/episodes/${e.id}`).sort();
      assert.equal(want.length, 4, `4 stored episodes at ${length} chunks`);
      await waitFor(`the episodes at ${length} chunks`, async () => {
        const hrefs = await page.locator('[data-testid="sweep-episodes"] a').evaluateAll((as) => as.map((a) => a.getAttribute("href")));
        return JSON.stringify([...hrefs].sort()) === JSON.stringify(want);
      }, 20_000);
    }
    // an episode of the sweep opens in the replay player
    await page.locator('[data-testid="sweep-episodes"] a').first().click();
    await page.waitForSelector('[data-testid="episode-view"]');
    // with the reader's answer, as text
    const epId = Number(/episodes\/(\d+)/.exec(page.url())![1]);
    const ep = await api<EpisodeDto>(`/api/runs/${sweepId}/episodes/${epId}`);
    assert.ok(ep.record?.reader, "the stored episode carries the reader's record");
    assert.equal(await page.textContent('[data-testid="reader-answer"]'), ep.record.reader.answer || "(empty)");

    // a second run with a CLI sweep uploaded: the compare view overlays both runs' sweeps
    const other = await api<RunDetailDto>("/api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ preset: "tiny", name: "other run" }) });
    await api(`/api/runs/${other.id}/cancel`, { method: "POST", headers: { "content-type": "application/json" } });
    const halved = stored.points.slice(0, 2).map((p) => JSON.stringify({ ...p, qrag: { ...p.qrag, coverage: p.qrag.coverage / 2 } })).join("\n");
    const up = await fetch(`${server.url}/api/runs/${other.id}/sweeps/upload`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ points: { name: "sweep.jsonl", text: halved } }) });
    assert.equal(up.status, 201);
    await page.goto(`${server.url}/compare?runs=${run.id},${other.id}`);
    // each run's latest sweep (the uploaded 2-length one for the first run) : 2 + 2 lengths × 5 methods
    await page.waitForSelector('[data-testid="sweep-overlay"][data-sweeps="2"] [data-testid="sweep-chart"][data-points="20"]');
    await page.locator('[data-testid="sweep-overlay"]').screenshot({ path: path.join(SCREENSHOTS, "sweep-overlay.png") });
    assert.deepEqual(errors, []);
  });
});
