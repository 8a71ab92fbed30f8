/**
 * Compare-view benchmark (not a timed test): runs and metric points are seeded straight into the
 * real server's SQLite file, then headless chromium measures, click → chart painted:
 * - overlay: N runs (default 50) × P points (default 20,000) each, opened from the runs table
 *   (select all shown → Compare), then legend hide and solo clicks on the overlaid chart;
 * - one long series: a run with L points (default 100,000) opened the same way;
 * - the hover read-out on the overlay: mouse move → the read-out lists every line's value at the
 *   new step, painted (10 positions across the plot per repetition).
 * "Painted": a MutationObserver sees the chart's data attributes reach the expected state, then
 * the next animation frame plus one task has run (the frame is on screen by then).
 *
 *   node --import tsx test/compare.bench.ts [--runs 50] [--points 20000] [--long 100000] [--reps 5]
 *
 * Results go to stdout and bench-results/compare.json.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Page } from "playwright-core";
import { ROOT, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer } from "./ui-browser-helpers.ts";
import { seedRuns } from "./compare-seed.ts";

const { values: args } = parseArgs({ options: { runs: { type: "string", default: "50" }, points: { type: "string", default: "20000" }, long: { type: "string", default: "100000" }, reps: { type: "string", default: "5" } } });
const RUNS = Number(args.runs);
const POINTS = Number(args.points);
const LONG = Number(args.long);
const REPS = Number(args.reps);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number) => Math.round(x * 10) / 10;
const walk = (n: number, seed: number) => {
  let v = 1 + seed * 0.01;
  return Array.from({ length: n }, (_, i) => ({ step: i * 64, value: (v = Math.max(1e-4, v * 0.9997 + Math.sin(i * 0.01 + seed) * 0.002)) }));
};

/**
 * Plain JS shared by the probes: once `ok()` holds after a DOM change, waits for the next frame
 * plus one task (the frame is on screen by then) and resolves with ms since `since()`.
 */
const WHEN_PAINTED = `(ok, since, resolve) => {
  const obs = new MutationObserver(() => {
    if (!ok()) return;
    obs.disconnect();
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => resolve(performance.now() - since());
      ch.port2.postMessage(0);
    });
  });
  obs.observe(document.body, { subtree: true, childList: true, attributes: true });
}`;

/** Plain JS (no transpiler helpers reach the page): sets window.__done to click → painted ms. */
const PROBE = `({ clickSel, chartSel, want }) => {
  const whenPainted = ${WHEN_PAINTED};
  window.__done = new Promise((resolve) => {
    let t0 = 0;
    document.addEventListener("click", (e) => {
      if (e.target.closest(clickSel)) t0 = performance.now();
    }, { capture: true, once: true });
    const ok = () => {
      const el = document.querySelector(chartSel);
      if (!el || !t0) return false;
      const lines = Number(el.getAttribute("data-lines")) + Number(el.getAttribute("data-bands"));
      return (want.lines === undefined || lines === want.lines) && Number(el.getAttribute("data-points")) >= (want.minPoints || 1) && !!el.querySelector("path");
    };
    whenPainted(ok, () => t0, resolve);
  });
}`;

/** Plain JS: sets window.__hover to mouse move → the read-out showing a new step, painted. */
const HOVER_PROBE = `({ chartSel, prevAt, rows }) => {
  const whenPainted = ${WHEN_PAINTED};
  window.__hover = new Promise((resolve) => {
    let t0 = 0;
    document.querySelector(chartSel + " svg").addEventListener("mousemove", () => { t0 = t0 || performance.now(); }, { capture: true, once: true });
    const ok = () => {
      const r = document.querySelectorAll(chartSel + " .readout-row");
      return t0 && r.length === rows && r[0].getAttribute("data-at") !== prevAt;
    };
    whenPainted(ok, () => t0, resolve);
  });
}`;

/** Mouse moves across the plot: ms from each move to the read-out at the new step, painted. */
async function hoverReadout(page: Page, chartSel: string, rows: number): Promise<number[]> {
  const box = (await page.locator(`${chartSel} svg`).boundingBox())!;
  const out: number[] = [];
  for (let k = 1; k <= 10; k++) {
    const prevAt = await page.evaluate((sel) => document.querySelector(`${sel} .readout-row`)?.getAttribute("data-at") ?? "", chartSel);
    await page.evaluate(`(${HOVER_PROBE})(${JSON.stringify({ chartSel, prevAt, rows })})`);
    await page.mouse.move(box.x + 60 + ((box.width - 70) * k) / 11, box.y + box.height / 2);
    out.push(await page.evaluate(() => (window as unknown as { __hover: Promise<number> }).__hover));
  }
  return out;
}

/** Arms a probe, clicks, resolves with ms from the click to the painted chart. */
async function clickToPaint(page: Page, clickSel: string, chartSel: string, want: { lines?: number; minPoints?: number }): Promise<number> {
  await page.evaluate(`(${PROBE})(${JSON.stringify({ clickSel, chartSel, want })})`);
  await page.click(clickSel);
  return page.evaluate(() => (window as unknown as { __done: Promise<number> }).__done);
}

async function main() {
  const skip = browserUnavailable();
  if (skip) throw new Error(skip);
  ensureNextBuild((m) => console.error(`# ${m}`));
  const server = await startTestServer();
  try {
    const t = performance.now();
    const t0 = Date.now() - 3_600_000;
    const overlay = Array.from({ length: RUNS }, (_, i) => ({ id: `ov${String(i).padStart(3, "0")}`, name: `overlay ${i}`, set: { seed: i, "envs.task": `qa${(i % 3) + 1}` }, points: { qf_loss: walk(POINTS, i) }, createdAt: new Date(t0 + i * 1000) }));
    const long = { id: "long1", name: "long series", set: { seed: 999 }, points: { qf_loss: walk(LONG, 7) }, createdAt: new Date(t0 + RUNS * 1000 + 1000) };
    await seedRuns(`file:${path.join(server.dataDir, "qrag.db")}`, [...overlay, long]);
    const seedS = (performance.now() - t) / 1000;

    const browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 1360, height: 1000 } });
    const chart = '[data-testid="compare-chart-qf_loss"]';
    const openOverlay: number[] = [];
    const hide: number[] = [];
    const solo: number[] = [];
    const openLong: number[] = [];
    const hover: number[] = [];
    let apiLong = NaN;
    try {
      for (let r = 0; r < REPS; r++) {
        // the overlay: the runs table shows 50 per page, newest first (the long run, then 49 overlay runs)
        await page.goto(`${server.url}/?q=overlay`);
        await page.locator('[data-testid="select-run"]').first().waitFor();
        await page.click('[data-testid="select-all-shown"]');
        const n = await page.locator('[data-testid="select-run"]').count();
        openOverlay.push(await clickToPaint(page, '[data-testid="compare-button"]', chart, { lines: n, minPoints: n * 100 }));
        hover.push(...(await hoverReadout(page, chart, n)));
        await page.mouse.move(0, 0); // off the plot: the read-out closes before the legend clicks
        hide.push(await clickToPaint(page, '[data-testid="legend-item"]:nth-child(1) [data-testid="legend-toggle"]', chart, { lines: n - 1 }));
        solo.push(await clickToPaint(page, '[data-testid="legend-item"]:nth-child(2) [data-testid="legend-solo"]', chart, { lines: 1 }));
        // one 100k-point series
        await page.goto(`${server.url}/?q=long`);
        await page.locator('[data-testid="select-run"]').first().waitFor();
        await page.locator('[data-testid="select-run"]').first().click();
        openLong.push(await clickToPaint(page, '[data-testid="compare-button"]', chart, { lines: 1 }));
      }
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const s = performance.now();
        await (await fetch(`${server.url}/api/runs/long1/metrics?keys=qf_loss&width=600`)).json();
        times.push(performance.now() - s);
      }
      apiLong = median(times);
    } finally {
      await browser.close();
    }
    const stat = (xs: number[]) => ({ median: round(median(xs)), max: round(Math.max(...xs)), samples: xs.map(round) });
    const result = {
      date: new Date().toISOString(),
      seeded: { overlayRuns: RUNS, pointsPerRun: POINTS, longSeriesPoints: LONG, seedSeconds: round(seedS) },
      overlayOpenMs: stat(openOverlay),
      overlayHideMs: stat(hide),
      overlaySoloMs: stat(solo),
      longSeriesOpenMs: { ...stat(openLong), target: 500 },
      overlayReadoutMs: { ...stat(hover), target: 50 },
      longSeriesApiMs: round(apiLong),
    };
    console.log(JSON.stringify(result, null, 2));
    fs.mkdirSync(path.join(ROOT, "bench-results"), { recursive: true });
    fs.writeFileSync(path.join(ROOT, "bench-results", "compare.json"), JSON.stringify(result, null, 2) + "\n");
  } finally {
    await server.stop();
  }
}

await main();
