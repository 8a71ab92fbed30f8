/**
 * Issue 28 item 7 and issue 30's dashboard side, in real Chromium: a CLI sweep with LLM-reader
 * answers is uploaded to a run; the sweep chart draws the paper's published Q-RAG curve as a
 * labelled dashed line placed at our points of the same BabiLong configs (checked in pixels
 * against the y-axis), switches to the reader's answer accuracy with its values drawn where they
 * belong, offers every paper method, and the replay player shows the reader's answer (as text),
 * verdict and prompt. Screenshot: test-results/screenshots/sweep-paper.png.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { EpisodeDto, EpisodeRecord, ReaderSummary, RunDetailDto, SweepDto, SweepPoint } from "../lib/contracts/index.ts";
import { BABILONG_PAPER_CURVES } from "../lib/analysis/paper-figures.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

const scores = (coverage: number) => ({ precision: 0.5, recall: coverage, f1: 0.6, coverage });
const summary = (accuracy: number, n: number): ReaderSummary => ({
  model: "gguf:tiny.gguf", n, correct: accuracy * n, accuracy, ci: { low: accuracy - 0.2, high: Math.min(1, accuracy + 0.1) }, failures: 0, failureKinds: {},
  promptTokens: 420, completionTokens: 3, msPerAnswer: 61, retries: 0,
});
// three of the paper's configs (50, 160, 1,200 sentences), measured at 35 tokens per chunk
const ACCURACY: Record<number, number> = { 50: 0.9, 160: 0.8, 1200: 0.6 };
const points: SweepPoint[] = [50, 160, 1200].map((n, i) => ({
  numChunks: n, label: ["1K", "4K", "32K"][i], tokens: n * 35, samples: 10, oracle_stop: false, threshold: 0.5, qrag: scores(1 - i * 0.1), qragFiltered: { ...scores(0.9 - i * 0.1), avgKept: 2 },
  bm25: scores(0.5), dense: scores(0.4), baselineK: 3, episodeSeconds: 0.01, encodeSeconds: 0.005, reader: summary(ACCURACY[n], 10),
}));
const INJECTED = `<img src=x onerror="window.__xss=1">garden`;
const episode = (id: string, numChunks: number): EpisodeRecord => ({
  id, question: "Where is Mary?", answer: "garden", sf_idx: [3], pred_idx: [3, 7], q_values: [0.9, 0.2], sf_texts: ["Mary went to the garden."], pred_texts: ["Mary went to the garden.", "noise"],
  return: 1, num_chunks: numChunks, oracle_stop: false, metrics: scores(1), filtered: { ...scores(1), threshold: 0.5, kept: 1 },
  steps: [3, 7].map((index, k) => ({ index, text: "t", position: index / numChunks, q: k ? 0.2 : 0.9, q1: 0.9, q2: 0.9, gold: index === 3, reward: 0, topk: [] })),
  reader: { model: "gguf:tiny.gguf", prompt: "Context: Mary went to the garden.\n\nQuestion: Where is Mary?", answer: INJECTED, correct: 0, tokens: { prompt: 420, completion: 9 }, ms: 58, retries: 1 },
});

/** Pixel y of a value on the chart's y-axis, from the drawn tick lines of 0 and 1 (labels may be nudged inside). */
async function yOf(page: Page): Promise<(v: number) => number> {
  const axis = '[data-testid="sweep-chart"] .recharts-yAxis';
  const labels = await page.locator(`${axis}-tick-labels text`).allTextContents();
  const ys = await page.locator(`${axis}-tick-lines line`).evaluateAll((ls) => ls.map((l) => Number(l.getAttribute("y1"))));
  assert.equal(ys.length, labels.length, "one tick line per label");
  const [y0, y1] = [ys[labels.indexOf("0")], ys[labels.indexOf("1")]];
  return (v) => y0 + (y1 - y0) * v;
}
/** Every dot of the paper's curves ("paper") or our lines ("sweep"), in drawing order. */
const dots = (page: Page, kind: "paper" | "sweep") =>
  page.locator(`[data-testid="sweep-chart"] circle.${kind}-dot`).evaluateAll((cs) => cs.map((c) => ({ x: Number(c.getAttribute("cx")), y: Number(c.getAttribute("cy")) })));

describe("the paper's curves and the reader's accuracy in a real browser", { skip: skip ?? false, timeout: 5 * 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const api = async <T,>(p: string, init?: RequestInit): Promise<T> => (await (await fetch(`${server.url}${p}`, init)).json()) as T;
  const post = (p: string, body: unknown) => api<unknown>(p, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

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

  test("reference lines at our configs, the reader's accuracy drawn and tabled, the reader in the replay player", async () => {
    const run = (await post("/api/runs", { preset: "tiny", name: "paper curves" })) as RunDetailDto;
    await post(`/api/runs/${run.id}/cancel`, {});
    const eps = [episode("s1", 50), { ...episode("s2", 50), reader: { ...episode("s2", 50).reader!, answer: "garden", correct: 1, retries: 0 } }];
    const up = (await post(`/api/runs/${run.id}/sweeps/upload`, {
      points: { name: "sweep.jsonl", text: points.map((p) => JSON.stringify(p)).join("\n") },
      episodes: { name: "eps.jsonl", text: eps.map((e) => JSON.stringify({ numChunks: 50, ...e })).join("\n") },
    })) as SweepDto;
    assert.equal(up.points?.length, 3, JSON.stringify(up).slice(0, 400));

    await page.goto(`${server.url}/runs/${run.id}`);
    const chart = '[data-testid="sweep-section"] [data-testid="sweep-chart"]';
    await page.waitForSelector(`${chart}[data-points="12"]`); // 3 lengths × 4 methods (no prune figures in this upload)
    // the paper's Q-RAG curve (avg qa1–5: the run is qa1), labelled as answer accuracy with its source
    assert.equal(await page.getAttribute(chart, "data-references"), "qrag-avg");
    const legend = page.locator('[data-testid="sweep-paper-legend"]');
    assert.equal(await legend.count(), 1);
    assert.equal(await legend.textContent(), "paper: Q-RAG (avg qa1–5), answer accuracy");
    assert.match((await legend.getAttribute("title")) ?? "", /read off the plot/);
    // its three points (1K, 4K, 32K; 128K is beyond our range) sit at our points' x and at the paper's values
    const y = await yOf(page);
    const paper = await dots(page, "paper");
    const ours = await dots(page, "sweep");
    const qrag = BABILONG_PAPER_CURVES.find((c) => c.id === "qrag-avg")!;
    assert.equal(paper.length, 3);
    const ourXs = [...new Set(ours.map((d) => Math.round(d.x)))].sort((a, b) => a - b);
    assert.deepEqual(paper.map((d) => Math.round(d.x)), ourXs, "paper lengths drawn at our points of the same configs");
    paper.forEach((d, i) => assert.ok(Math.abs(d.y - y(qrag.values[(["1K", "4K", "32K"] as const)[i]]!)) < 1.5, `paper point ${i} at its value: ${d.y} vs ${y(qrag.values[(["1K", "4K", "32K"] as const)[i]]!)} (0 at ${y(0)}, 1 at ${y(1)})`));

    // the reader's answer accuracy: one line, its values where the axis puts them; the table agrees
    await page.selectOption('[data-testid="sweep-section"] [data-testid="sweep-metric"]', "accuracy");
    await page.waitForSelector(`${chart}[data-points="3"][data-metric="accuracy"]`);
    const acc = await dots(page, "sweep");
    assert.deepEqual(acc.map((d) => Math.round(d.x)), ourXs);
    acc.forEach((d, i) => assert.ok(Math.abs(d.y - y(ACCURACY[points[i].numChunks])) < 1.5, `accuracy at ${points[i].numChunks} chunks drawn at ${ACCURACY[points[i].numChunks]}`));
    assert.deepEqual(await page.locator('[data-testid="sweep-accuracy"]').allTextContents(), ["0.9 [0.7, 1]", "0.8 [0.6, 0.9]", "0.6 [0.4, 0.7]"]);
    // every paper method: one legend entry per curve with a value in range, Q-RAG's first
    await page.selectOption('[data-testid="sweep-section"] [data-testid="sweep-paper"]', "all");
    await page.waitForSelector(`${chart}[data-references^="qrag-avg titans-avg"]`);
    const ids = ((await page.getAttribute(chart, "data-references")) ?? "").split(" ");
    assert.deepEqual(ids, BABILONG_PAPER_CURVES.filter((c) => c.id !== "qrag-qa3").map((c) => c.id));
    assert.equal(await legend.count(), ids.length);
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.locator('[data-testid="sweep-section"]').screenshot({ path: path.join(SCREENSHOTS, "sweep-paper.png") });
    await page.selectOption('[data-testid="sweep-section"] [data-testid="sweep-paper"]', "none");
    await page.waitForSelector(`${chart}[data-references=""]`);
    assert.equal(await page.locator(`${chart} .paper-curve, ${chart} circle.paper-dot`).count(), 0);

    // the replay player: the reader's answer as text (never markup), its verdict, the prompt as sent
    const stored = await api<EpisodeDto[]>(`/api/runs/${up.run.id}/episodes?phase=sweep&numChunks=50`);
    const wrong = stored.find((e) => e.sampleId === "s1")!;
    await page.goto(`${server.url}/runs/${up.run.id}/episodes/${wrong.id}`);
    await page.waitForSelector('[data-testid="reader-panel"]');
    assert.equal(await page.textContent('[data-testid="reader-answer"]'), INJECTED);
    assert.equal(await page.textContent('[data-testid="reader-verdict"]'), "wrong");
    assert.equal(await page.locator('[data-testid="reader-panel"] img').count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
    assert.match((await page.textContent('[data-testid="reader-panel"]')) ?? "", /420 prompt \+ 9 answer tokens · 58 ms · 1 retry/);
    await page.click('[data-testid="reader-panel"] summary');
    assert.equal(await page.textContent('[data-testid="reader-prompt"]'), eps[0].reader!.prompt);
    const right = stored.find((e) => e.sampleId === "s2")!;
    await page.goto(`${server.url}/runs/${up.run.id}/episodes/${right.id}`);
    await page.waitForSelector('[data-testid="reader-verdict"]');
    assert.equal(await page.textContent('[data-testid="reader-verdict"]'), "correct");
    assert.deepEqual(errors, []);
  });
});
