/**
 * Issue 30 part 2 on the dashboard, in real Chromium: a `qrag agent --out` file written by runAgent
 * itself (test/agent-file-fixture.ts: the real client against a local endpoint with scripted
 * replies) is uploaded through the run page's form beside a Q-RAG sweep with reader accuracy; the
 * sweep chart draws the agent's answer accuracy as its own labelled line at Q-RAG's x for the same
 * lengths and at its values (pixels against the y-axis), with its Wilson bars; the agent table shows
 * steps, tokens and time; the compare overlay draws it too; the replay player shows the agent's
 * steps with their kinds, the retrievals on the haystack strip, and model text as literal text.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { EpisodeDto, RunDetailDto, SweepListDto, SweepPoint } from "../lib/contracts/index.ts";
import { fmtNum } from "../lib/format.ts";
import { STRIP_LAYOUT } from "../lib/analysis/replay.ts";
import { INJECTION, writeAgentFile, type AgentFile } from "./agent-file-fixture.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

const scores = (coverage: number) => ({ precision: 0.5, recall: coverage, f1: 0.6, coverage });
const READER: Record<number, number> = { 20: 0.9, 40: 0.7 };
const points: SweepPoint[] = [20, 40].map((n) => ({
  numChunks: n, label: `${n}`, tokens: n * 35, samples: 10, oracle_stop: false, threshold: 0.5, qrag: scores(0.9), qragFiltered: { ...scores(0.8), avgKept: 2 }, baselineK: 3, episodeSeconds: 0.01, encodeSeconds: 0.005,
  reader: { model: "gguf:tiny.gguf", n: 10, correct: READER[n] * 10, accuracy: READER[n], ci: { low: READER[n] - 0.2, high: READER[n] + 0.05 }, failures: 0, failureKinds: {}, promptTokens: 400, completionTokens: 3, msPerAnswer: 50, retries: 0 },
}));

/** Pixel y of a value on the chart's y-axis, from the drawn tick lines of 0 and 1. */
async function yOf(page: Page, chart: string): Promise<(v: number) => number> {
  const labels = await page.locator(`${chart} .recharts-yAxis-tick-labels text`).allTextContents();
  const ys = await page.locator(`${chart} .recharts-yAxis-tick-lines line`).evaluateAll((ls) => ls.map((l) => Number(l.getAttribute("y1"))));
  const [y0, y1] = [ys[labels.indexOf("0")], ys[labels.indexOf("1")]];
  return (v) => y0 + (y1 - y0) * v;
}
const circles = (page: Page, sel: string) => page.locator(sel).evaluateAll((cs) => cs.map((c) => ({ x: Number(c.getAttribute("cx")), y: Number(c.getAttribute("cy")) })));

describe("the R3-style agent beside Q-RAG in a real browser", { skip: skip ?? false, timeout: 5 * 60_000 }, () => {
  let server: TestServer, browser: Browser, page: Page, tmp: string, agent: AgentFile;
  const errors: string[] = [];
  const api = async <T,>(p: string, init?: RequestInit): Promise<T> => (await (await fetch(`${server.url}${p}`, init)).json()) as T;
  const post = (p: string, body: unknown) => api<unknown>(p, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-browser-agent-"));
    agent = await writeAgentFile(tmp);
    server = await startTestServer({ env: { QRAG_DATA_ROOT: tmp } }); // the fixture's tiny.gguf is in tmp
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 900 });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test("upload from the run page; the agent's accuracy line, table, overlay and episode steps", async () => {
    // the agent file's samples are babilong-cpu's qa1 test samples: the run's config regenerates its haystacks
    const run = (await post("/api/runs", { preset: "babilong-cpu", overrides: ["envs.task=qa1"], name: "agent beside qrag" })) as RunDetailDto;
    await post(`/api/runs/${run.id}/cancel`, {});
    await post(`/api/runs/${run.id}/sweeps/upload`, { points: { name: "sweep.jsonl", text: points.map((p) => JSON.stringify(p)).join("\n") } });

    await page.goto(`${server.url}/runs/${run.id}`);
    await page.click('[data-testid="agent-upload-button"]');
    await page.setInputFiles('[data-testid="agent-file"]', agent.file);
    await page.click('[data-testid="agent-upload-submit"]');
    await page.waitForSelector('[data-testid="sweep-item"] >> nth=1');
    const label = `R3-style agent (${agent.summaries[0].model}, bm25)`;
    assert.match((await page.locator('[data-testid="sweep-item"]').nth(1).textContent()) ?? "", new RegExp(`^${label.replace(/[()[\].*+?^$|\\]/g, "\\$&")}`));

    // answer accuracy: the reader's line and the agent's, the agent at Q-RAG's x for its lengths and at its values
    const chart = '[data-testid="sweep-section"] [data-testid="sweep-chart"]';
    await page.selectOption(`${chart} [data-testid="sweep-metric"]`, "accuracy");
    await page.waitForSelector(`${chart}[data-points="4"][data-metric="accuracy"]`);
    assert.deepEqual(await page.locator(`${chart} [data-testid="sweep-agent-legend"]`).allTextContents(), [label]);
    const y = await yOf(page, chart);
    const agentDots = await circles(page, `${chart} circle.agent-dot`);
    const readerDots = (await circles(page, `${chart} circle.sweep-dot`)).filter((d) => !agentDots.some((a) => a.x === d.x && a.y === d.y));
    assert.equal(agentDots.length, 2);
    assert.deepEqual(agentDots.map((d) => Math.round(d.x)), readerDots.map((d) => Math.round(d.x)), "the agent's lengths at Q-RAG's measured tokens");
    const acc = agent.summaries.map((s) => s.accuracy);
    assert.deepEqual(acc, [1, 0.5]);
    agentDots.forEach((d, i) => assert.ok(Math.abs(d.y - y(acc[i])) < 1.5, `agent accuracy at ${agent.summaries[i].numChunks} chunks drawn at ${acc[i]} (${d.y} vs ${y(acc[i])})`));
    readerDots.forEach((d, i) => assert.ok(Math.abs(d.y - y(READER[points[i].numChunks])) < 1.5, "the reader's accuracy beside it"));
    // its Wilson interval at 40 chunks: the error bar's ends at the stored interval
    const ci = agent.summaries[1].ci!;
    const stroke = await page.getAttribute(`${chart} .agent-curve path.recharts-line-curve`, "stroke");
    const bar = await page.locator(`${chart} .recharts-errorBar[stroke="${stroke}"] line`).evaluateAll((ls) => ls.map((l) => [Number(l.getAttribute("y1")), Number(l.getAttribute("y2"))]));
    const ends = bar.flat();
    for (const v of [ci.low, ci.high]) assert.ok(ends.some((e) => Math.abs(e - y(v)) < 1.5), `an error-bar end at ${v} (${y(v)}): ${JSON.stringify(bar)}`);
    // the table: accuracy with its interval, steps, tokens, time per sample
    const rows = page.locator('[data-testid="agent-row"]');
    assert.equal(await rows.count(), 2);
    for (const [i, s] of agent.summaries.entries()) {
      const row = rows.nth(i);
      assert.equal(await row.locator('[data-testid="agent-accuracy"]').textContent(), `${fmtNum(s.accuracy, 3)} [${fmtNum(s.ci!.low, 2)}, ${fmtNum(s.ci!.high, 2)}]`);
      assert.equal(await row.locator('[data-testid="agent-steps"]').textContent(), fmtNum(s.meanSteps, 2));
      assert.equal(await row.locator('[data-testid="agent-tokens"]').textContent(), `${Math.round(s.promptTokens).toLocaleString("en-US")} + ${Math.round(s.completionTokens).toLocaleString("en-US")}`);
    }
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.locator('[data-testid="sweep-section"]').screenshot({ path: path.join(SCREENSHOTS, "agent-beside-qrag.png") });

    // the compare overlay: the run's latest sweep and its agent evaluation
    await page.goto(`${server.url}/compare?runs=${run.id}`);
    const overlay = '[data-testid="sweep-overlay"]';
    await page.waitForSelector(`${overlay}[data-sweeps="2"]`);
    await page.selectOption(`${overlay} [data-testid="sweep-metric"]`, "accuracy");
    await page.waitForSelector(`${overlay} [data-testid="sweep-chart"][data-points="4"]`);
    assert.match((await page.locator(`${overlay} [data-testid="sweep-agent-legend"]`).textContent()) ?? "", /R3-style agent \(.*, bm25\)$/);
    assert.equal(await page.locator(`${overlay} circle.agent-dot`).count(), 2);

    // the replay player: the wrong answer at 40 chunks (the injection), from the sweep page's episode list
    const sweeps = await api<SweepListDto>(`/api/runs/${run.id}/sweeps`);
    const agentSweep = sweeps.sweeps.find((s) => s.spec.source === "agent")!;
    const eps = await api<EpisodeDto[]>(`/api/runs/${agentSweep.run.id}/episodes?phase=agent&numChunks=40`);
    const wrong = eps.find((e) => e.return === 0)!;
    const sample = agent.samples.find((s) => s.num_chunks === 40 && s.id === wrong.sampleId)!;
    await page.goto(`${server.url}/sweeps/${agentSweep.run.id}`);
    await page.selectOption('[data-testid="sweep-episodes-length"]', "40");
    await page.click(`[data-testid="sweep-episodes"] a[href$="/episodes/${wrong.id}"]`);
    await page.waitForSelector('[data-testid="agent-episode"]');
    assert.deepEqual(await page.locator('[data-testid="agent-step"]').evaluateAll((ls) => ls.map((l) => l.getAttribute("data-kind"))), ["reason", "query", "retrieve", "reason", "answer"]);
    assert.deepEqual(await page.locator('[data-testid="agent-step-kind"]').allTextContents(), ["reason", "query", "retrieved", "reason", "answer"]);
    const texts = await page.locator('[data-testid="agent-step-text"]').allTextContents();
    assert.deepEqual(texts, sample.steps.map((s) => s.text), "every step's text as the model wrote it");
    assert.ok(texts[0].includes(INJECTION) && texts[4] === INJECTION);
    assert.equal(await page.textContent('[data-testid="agent-answer"]'), INJECTION);
    assert.equal(await page.textContent('[data-testid="agent-verdict"]'), "wrong");
    assert.equal(await page.locator('[data-testid="agent-episode"] img').count(), 0, "model text never becomes markup");
    assert.equal(await page.evaluate(() => (window as unknown as { __agentXss?: number }).__agentXss), undefined);
    const ids = sample.steps[2].ids!;
    assert.equal(await page.textContent('[data-testid="agent-step-ids"]'), ids.map((id, k) => `#${id}${sample.steps[2].gold![k] ? "★" : ""}`).join(" "));
    // the strip marks nothing before the retrieval, then the retrieval's last chunk as current
    const strip = '[data-testid="haystack-strip"]';
    assert.equal(await page.getAttribute(strip, "data-current-index"), "");
    await page.locator('[data-testid="agent-step"]').nth(2).click();
    await page.waitForSelector(`${strip}[data-current-index="${ids.at(-1)}"]`);
    assert.equal(await page.getAttribute(strip, "data-num-chunks"), "40");
    // hovering the gold fact's cell shows its text, served from the regenerated haystack
    const gold = sample.sf_idx[0];
    const canvas = page.locator('[data-testid="haystack-canvas"]');
    const box = (await canvas.boundingBox())!;
    const [start, span] = [Number(await page.getAttribute(strip, "data-view-start")), Number(await page.getAttribute(strip, "data-view-span"))];
    await page.mouse.move(box.x + ((gold + 0.5 - start) / span) * box.width, box.y + STRIP_LAYOUT.laneTop + STRIP_LAYOUT.laneHeight / 2);
    await page.waitForSelector(`[data-testid="hover-chunk"][data-index="${gold}"] [data-testid="hover-chunk-text"]`, { timeout: 15_000 });
    assert.equal(await page.textContent('[data-testid="hover-chunk-text"]'), sample.sf_texts![0], "the gold fact's text on hover");
    await page.locator('[data-testid="agent-episode"]').screenshot({ path: path.join(SCREENSHOTS, "agent-episode.png") });
    assert.deepEqual(errors, []);
  });

  test("run the agent from the run page: the form queues a job the worker runs on the tiny GGUF model; its row and table appear", async () => {
    const run = (await post("/api/runs", { preset: "tiny", name: "agent from the form" })) as RunDetailDto;
    await post(`/api/runs/${run.id}/cancel`, {});
    await page.goto(`${server.url}/runs/${run.id}`);
    await page.click('[data-testid="agent-run-button"]');
    // no checkpoint yet: only bm25 can be chosen
    assert.deepEqual(await page.locator('[data-testid="agent-retriever"] option').evaluateAll((os) => os.map((o) => [o.getAttribute("value"), (o as HTMLOptionElement).disabled])), [["bm25", false], ["dense", true], ["qrag", true]]);
    await page.fill('[data-testid="agent-model"]', "nowhere.gguf");
    await page.fill('[data-testid="agent-lengths"]', "20");
    await page.fill('[data-testid="agent-samples"]', "1");
    await page.fill('[data-testid="agent-max-calls"]', "1");
    await page.click('[data-testid="agent-submit"]');
    await page.waitForSelector('[data-testid="agent-error-model"]');
    assert.match((await page.textContent('[data-testid="agent-error-model"]')) ?? "", /./);
    await page.fill('[data-testid="agent-model"]', "tiny.gguf");
    await page.click('[data-testid="agent-submit"]');
    await page.waitForSelector('[data-testid="sweep-item"][data-status="completed"]', { timeout: 120_000 });
    assert.match((await page.locator('[data-testid="sweep-item"]').textContent()) ?? "", /^R3-style agent \(gguf:tiny\.gguf, bm25\)/);
    await page.waitForSelector('[data-testid="agent-row"][data-chunks="20"]');
    const sweeps = await api<SweepListDto>(`/api/runs/${run.id}/sweeps`);
    const s = sweeps.sweeps[0].agent![0];
    assert.equal(s.n, 1);
    assert.equal(await page.textContent('[data-testid="agent-row"] [data-testid="agent-steps"]'), fmtNum(s.meanSteps, 2));
    assert.deepEqual(errors, []);
  });
});
