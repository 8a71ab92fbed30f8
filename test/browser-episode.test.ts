/**
 * The episode replay in a real browser (playwright-core + Debian chromium) against the real
 * server: a run with the engine's babilong-cpu config and a real greedy episode (untrained model,
 * 100-chunk haystack, 6 steps) are written straight into the server's SQLite file. Stepping with
 * the keyboard moves the haystack strip's highlighted cell (checked by data attribute and by the
 * pixel colour at that cell) and the top-k Q bars; space plays to the last step and stops;
 * hovering a cell fetches its text from the server, equal to the engine's chunk; untrusted chunk
 * text is shown literally and runs nothing. Screenshot: test-results/screenshots/episode.png.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { EpisodeDto, EpisodeRecord } from "../lib/contracts/index.ts";
import { STRIP_COLORS, STRIP_LAYOUT } from "../lib/analysis/replay.ts";
import { pruneView, thresholdView } from "../lib/analysis/threshold.ts";
import { fmtNum } from "../lib/format.ts";
import { applyStop } from "../server/qrag/evaluation/stop-rules.ts";
import { openDb } from "../server/db/client.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { greedyEpisode } from "../server/qrag/agent/greedy.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { evalOptions } from "../server/qrag/training/train.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { chunkAt, type Sample } from "../server/qrag/types.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

const XSS = `<img src=x onerror="window.__xss=1">`;
const SAMPLE_INDEX = 4;

describe("episode replay in a real browser", { skip: skip ?? false, timeout: 15 * 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const config = resolveConfig({ preset: "babilong-cpu" });
  let sample: Sample;
  let record: EpisodeRecord;
  const runId = "replay-run";
  let episodeId = 0;
  let xssId = 0;
  /** The same record under a run whose dataset is file-backed: its haystack cannot be regenerated. */
  let filesId = 0;
  /** The record with its last pick made a gold fact: a gold fact a later step picks. */
  let laterGoldId = 0;

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    server = await startTestServer();
    // a real greedy episode of an untrained model, run to max_steps (no oracle stop)
    await pickBackend("cpu");
    sample = buildSource(config, "test").sample(SAMPLE_INDEX);
    const nets = new QNetworks(config.algo.encoder, new Rng(11));
    try {
      const opts = evalOptions(config, { neverTerminate: true, leaveOneOut: true });
      record = await greedyEpisode(nets, sample, opts);
    } finally {
      nets.dispose();
    }
    const poisoned: EpisodeRecord = {
      ...record,
      question: `${XSS} ${record.question}`,
      pred_texts: record.pred_texts.map((t, k) => (k === 0 ? XSS : t)),
      steps: record.steps.map((s, k) => (k === 0 ? { ...s, text: XSS } : s)),
    };
    const db = await openDb(`file:${path.join(server.dataDir, "qrag.db")}`);
    try {
      await db.prisma.run.create({
        data: { id: runId, name: "replay", status: "completed", config: JSON.stringify(config), preset: "babilong-cpu", envName: "babilong", task: "qa2" },
      });
      const row = (r: EpisodeRecord, seq: number) => ({
        runId, seq, phase: "eval", step: 100, update: seq, sampleId: r.id, numChunks: 0,
        coverage: r.metrics.coverage, f1: r.metrics.f1, return: r.return, record: JSON.stringify(r),
      });
      episodeId = (await db.prisma.episode.create({ data: row(record, 1) })).id;
      xssId = (await db.prisma.episode.create({ data: row(poisoned, 2) })).id;
      const lastPick = record.pred_idx[record.pred_idx.length - 1];
      laterGoldId = (await db.prisma.episode.create({ data: row({ ...record, sf_idx: [...new Set([...record.sf_idx, lastPick])] }, 4) })).id;
      const hotpot = { ...config, envs: { name: "hotpotqa", train_path: "/nowhere/train.json", eval_path: "/nowhere/dev.json", max_steps: 6, positions_processor: "relative", sort_by_index: true } };
      await db.prisma.run.create({ data: { id: "replay-files", name: "files", status: "completed", config: JSON.stringify(hotpot), envName: "hotpotqa", task: "hotpotqa" } });
      filesId = (await db.prisma.episode.create({ data: { ...row(record, 3), runId: "replay-files" } })).id;
    } finally {
      await db.close();
    }
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 1000 });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const url = (id: number, q = "") => `${server.url}/runs/${runId}/episodes/${id}${q}`;
  const strip = () => page.locator('[data-testid="haystack-strip"]');
  const position = () => page.locator('[data-testid="step-position"]').textContent();

  /** CSS-pixel centre of `cell` in the strip's lane, from the view the wrapper exposes. */
  async function cellCentre(cell: number): Promise<{ x: number; y: number }> {
    const start = Number(await strip().getAttribute("data-view-start"));
    const span = Number(await strip().getAttribute("data-view-span"));
    const width = await page.locator('[data-testid="haystack-canvas"]').evaluate((c) => c.clientWidth);
    return { x: ((cell + 0.5 - start) / span) * width, y: STRIP_LAYOUT.laneTop + STRIP_LAYOUT.laneHeight / 2 };
  }

  /** The canvas pixel's colour at CSS position (x, y). */
  async function pixel(at: { x: number; y: number }): Promise<[number, number, number]> {
    return page.locator('[data-testid="haystack-canvas"]').evaluate((el, p) => {
      const c = el as HTMLCanvasElement;
      const dpr = c.width / c.clientWidth;
      const d = c.getContext("2d")!.getImageData(Math.floor(p.x * dpr), Math.floor(p.y * dpr), 1, 1).data;
      return [d[0], d[1], d[2]] as [number, number, number];
    }, at);
  }

  const rgb = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const near = (a: readonly number[], hex: string) => rgb(hex).every((v, i) => Math.abs(v - a[i]) <= 8);

  test("the recorded episode has what the replay shows", () => {
    assert.equal(record.num_chunks, 100);
    assert.equal(record.steps.length, config.envs.max_steps);
    assert.ok(record.steps.length >= 3);
    for (const s of record.steps) {
      assert.ok(s.topk.length >= 5, "at least 5 candidates per step");
      assert.ok(Number.isFinite(s.v) && s.alpha === config.algo.hyperparams.alpha);
    }
    assert.equal(record.loo?.length, record.steps.length, "leave-one-out Q of every prefix");
  });

  test("the prune toggle keeps what the engine's prune rule keeps, and shows each pick's Q without it", async () => {
    await page.goto(url(episodeId));
    await page.locator('[data-testid="prune-toggle"]').check();
    const ts = [0, 0.05, ...record.q_values.map((q) => Math.round(q * 100) / 100), 1];
    let prunedSome = false;
    for (const t of [...new Set(ts)]) {
      await page.locator('[data-testid="threshold-slider"]').fill(String(t));
      await waitFor(`threshold ${t} applied`, async () => (await page.locator('[data-testid="threshold-value"]').textContent()) === fmtNum(t, 2), 10_000);
      const want = applyStop(record, { kind: "prune", threshold: t, tau: t });
      const view = pruneView(record, t)!;
      const kept = await page.locator('[data-testid="episode-step"]').evaluateAll((els) => els.flatMap((e, i) => (e.getAttribute("data-kept") === "yes" ? [i] : [])));
      assert.deepEqual(kept, view.keep, `kept picks at ${t}`);
      assert.equal(kept.length, want.kept);
      const cells = await page.locator('[data-testid="prune-row"] td.num').allTextContents();
      assert.deepEqual(cells, [want.precision, want.recall, want.f1, want.coverage].map((v) => fmtNum(v, 3)), `prune scores at ${t}`);
      assert.equal(await page.locator('[data-testid="loo-q"]').count(), thresholdView(record, t).kept, "a Q-without-it for every pick of the prefix");
      prunedSome ||= kept.length < thresholdView(record, t).kept;
    }
    assert.ok(prunedSome, "some threshold prunes a pick of this episode");
    // off again: the plain threshold prefix
    await page.locator('[data-testid="prune-toggle"]').uncheck();
    assert.equal(await page.locator('[data-testid="episode-step"][data-kept="yes"]').count(), thresholdView(record, 1).kept);
  });

  test("a gold fact a later step picks is drawn gold (with a 'later' mark) until its step, then as the pick", async () => {
    const lastPick = record.pred_idx[record.pred_idx.length - 1];
    const n = record.steps.length;
    await page.goto(url(laterGoldId));
    await strip().waitFor();
    const c = await cellCentre(lastPick);
    for (let k = 0; k < n; k++) {
      if (k > 0) await page.keyboard.press("ArrowRight");
      await waitFor(`step ${k + 1}`, async () => (await position()) === `step ${k + 1} of ${n}`, 10_000);
      if (k < n - 1) {
        await waitFor(`step ${k + 1}: #${lastPick} gold`, async () => near(await pixel({ x: c.x, y: STRIP_LAYOUT.laneTop + 4 }), STRIP_COLORS.gold), 10_000);
        assert.ok(near(await pixel({ x: c.x, y: STRIP_LAYOUT.laneTop + STRIP_LAYOUT.laneHeight - 2 }), STRIP_COLORS.future), `step ${k + 1}: the 'picked later' mark under it`);
      } else await waitFor(`step ${n}: #${lastPick} is the current pick`, async () => near(await pixel(c), STRIP_COLORS.current), 10_000);
    }
  });

  test("keyboard stepping moves the strip's highlighted cell and the Q bars", async () => {
    const n = record.steps.length;
    const gold = new Set(record.sf_idx);
    await page.goto(url(episodeId));
    await strip().waitFor();
    for (let k = 0; k < n; k++) {
      if (k > 0) await page.keyboard.press("ArrowRight");
      const s = record.steps[k];
      await waitFor(`step ${k + 1}`, async () => (await position()) === `step ${k + 1} of ${n}`, 10_000);
      assert.equal(await strip().getAttribute("data-current-index"), String(s.index), `step ${k + 1}: highlighted cell`);
      const at = await cellCentre(s.index);
      await waitFor(`step ${k + 1}: cell #${s.index} painted as the current pick`, async () => near(await pixel(at), STRIP_COLORS.current), 10_000);
      const bars = page.locator('[data-testid="q-bar"]');
      assert.equal(await bars.count(), s.topk.length, `step ${k + 1}: one bar per candidate`);
      assert.deepEqual(await bars.evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-index")))), s.topk.map((c) => c.index), "bars in the record's order");
      const goldBars = await page.locator('[data-testid="q-bar"][data-gold="yes"]').evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-index"))));
      assert.deepEqual(goldBars, s.topk.filter((c) => c.gold || gold.has(c.index)).map((c) => c.index), `step ${k + 1}: gold bars`);
      const chosen = await page.locator('[data-testid="q-bar"][data-chosen="yes"]').evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-index"))));
      assert.deepEqual(chosen, [s.index], `step ${k + 1}: the chosen bar`);
      assert.ok(Math.abs(Number(await page.locator('[data-testid="soft-value-line"]').getAttribute("data-v")) - s.v!) < 1e-9, "the soft-value line at V(s)");
      // the state: the k earlier picks, in document order (babilong sorts by index)
      const state = await page.locator('[data-testid="state-chunk"]').evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-index"))));
      assert.deepEqual(state, record.pred_idx.slice(0, k).sort((a, b) => a - b), `step ${k + 1}: state chunks`);
    }
    // a gold fact the agent never picked keeps the gold colour
    const missed = record.sf_idx.find((i) => !record.pred_idx.includes(i));
    if (missed !== undefined) assert.ok(near(await pixel(await cellCentre(missed)), STRIP_COLORS.gold), `gold cell #${missed}`);
    await page.keyboard.press("Home");
    await waitFor("back to step 1", async () => (await position()) === `step 1 of ${n}`, 10_000);
    assert.equal(await strip().getAttribute("data-current-index"), String(record.steps[0].index));
  });

  test("space plays to the last step and stops there; space again starts over, and pauses", async () => {
    const n = record.steps.length;
    const player = page.locator('[data-testid="step-player"]');
    await page.goto(url(episodeId, "?step=1"));
    await player.waitFor();
    await page.locator('[data-testid="play-speed"]').selectOption("4");
    const seen = new Set<string>();
    await page.keyboard.press(" ");
    await waitFor("playing", async () => (await player.getAttribute("data-playing")) === "yes", 5_000);
    await waitFor("the last step reached and playback stopped", async () => {
      seen.add((await position()) ?? "");
      return (await position()) === `step ${n} of ${n}` && (await player.getAttribute("data-playing")) === "no";
    }, 20_000, 50);
    assert.ok(seen.size >= 3, `it went through the steps (${[...seen].join(", ")})`);
    assert.equal(new URL(page.url()).searchParams.get("step"), String(n));
    assert.equal(await strip().getAttribute("data-current-index"), String(record.steps[n - 1].index));
    await page.keyboard.press(" ");
    await waitFor("started over", async () => (await player.getAttribute("data-playing")) === "yes", 5_000);
    await page.keyboard.press(" ");
    await waitFor("paused", async () => (await player.getAttribute("data-playing")) === "no", 5_000);
    assert.notEqual(await position(), `step ${n} of ${n}`, "paused before the end");
  });

  test("hovering a cell fetches its text from the server: the engine's chunk; zoom and pan move the view", async () => {
    const requests: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/chunks?")) requests.push(r.url());
    });
    await page.mouse.move(0, 0); // nowhere near the strip: no hover asks for text
    await page.goto(url(episodeId, "?step=3"));
    await strip().waitFor();
    // opening the episode warms its haystack on the server (the first hover would wait for it)
    await waitFor("a chunks request before any hover", async () => requests.length >= 1, 10_000);
    const { record: shipped } = (await (await fetch(`${server.url}/api/runs/${runId}/episodes/${episodeId}`)).json()) as EpisodeDto;
    const box = (await page.locator('[data-testid="haystack-canvas"]').boundingBox())!;
    // a noise chunk (not in the record) and a gold fact
    const noise = [...Array(record.num_chunks).keys()].find((i) => !record.sf_idx.includes(i) && !record.pred_idx.includes(i) && !JSON.stringify(shipped).includes(JSON.stringify(chunkAt(sample.chunks, i))))!;
    assert.ok(noise !== undefined, "a chunk whose text the page was not sent");
    for (const cell of [noise, record.sf_idx[0]]) {
      const c = await cellCentre(cell);
      await page.mouse.move(box.x + c.x, box.y + c.y);
      await waitFor(`hover text of #${cell}`, async () => (await page.locator('[data-testid="hover-chunk"]').getAttribute("data-index")) === String(cell) && (await page.locator('[data-testid="hover-chunk-text"]').count()) === 1, 15_000);
      assert.equal(await page.locator('[data-testid="hover-chunk-text"]').textContent(), chunkAt(sample.chunks, cell), `#${cell} is the engine's chunk`);
    }
    assert.ok(requests.length >= 1, "fetched on demand");
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, "episode.png"), fullPage: true });

    const span0 = Number(await strip().getAttribute("data-view-span"));
    await page.locator('[data-testid="strip-zoom-in"]').click();
    await waitFor("zoomed in", async () => Number(await strip().getAttribute("data-view-span")) < span0, 5_000);
    const span1 = Number(await strip().getAttribute("data-view-span"));
    const start1 = Number(await strip().getAttribute("data-view-start"));
    await page.mouse.move(box.x + box.width / 2, box.y + 30);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 + (start1 > 0 ? 200 : -200), box.y + 30, { steps: 5 });
    await page.mouse.up();
    await waitFor("panned", async () => Number(await strip().getAttribute("data-view-start")) !== start1, 5_000);
    await page.mouse.move(box.x + box.width / 2, box.y + 30);
    await page.mouse.wheel(0, 300);
    await waitFor("wheel zooms out", async () => Number(await strip().getAttribute("data-view-span")) > span1, 5_000);
    await page.locator('[data-testid="strip-fit"]').click();
    await waitFor("fit shows all", async () => Number(await strip().getAttribute("data-view-span")) === record.num_chunks, 5_000);
  });

  test("chunk text is untrusted: shown literally, never run as HTML", async () => {
    await page.goto(url(xssId));
    await page.locator('[data-testid="episode-view"]').waitFor();
    assert.ok(((await page.locator('[data-testid="episode-question"]').textContent()) ?? "").includes(XSS), "question");
    assert.equal(await page.locator('[data-testid="step-chosen-text"]').textContent(), XSS, "the step's text");
    assert.ok(((await page.locator('[data-testid="state-question"]').textContent()) ?? "").includes(XSS), "the state's question");
    assert.ok(((await page.locator('[data-testid="episode-step"]').first().textContent()) ?? "").includes(XSS), "the step card");
    await page.keyboard.press("ArrowRight");
    await waitFor("step 2", async () => (await page.locator('[data-testid="state-chunk"]').count()) === 1, 10_000);
    assert.ok(((await page.locator('[data-testid="state-chunk"]').textContent()) ?? "").includes(XSS), "the pick in the next state");
    assert.equal(await page.locator('[data-testid="episode-view"] img').count(), 0, "no <img> element");
    assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined, "nothing ran");
    assert.deepEqual(errors, []);
  });

  test("when the haystack cannot be regenerated, hovering says the text is unavailable", async () => {
    await page.goto(`${server.url}/runs/replay-files/episodes/${filesId}`);
    await strip().waitFor();
    const box = (await page.locator('[data-testid="haystack-canvas"]').boundingBox())!;
    const c = await cellCentre(record.sf_idx[0]);
    await page.mouse.move(box.x + c.x, box.y + c.y);
    const msg = page.locator('[data-testid="hover-unavailable"]');
    await msg.waitFor({ timeout: 15_000 });
    assert.match((await msg.textContent()) ?? "", /hover text unavailable: .*hotpotqa.*cannot be regenerated/);
    assert.equal(await page.locator('[data-testid="hover-chunk-text"]').count(), 0);
  });
});
