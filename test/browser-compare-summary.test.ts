/**
 * The compare view's summary panels in a real browser (playwright-core + Debian chromium) against
 * the real server, runs seeded straight into its SQLite file with known config values and eval
 * coverage: the parallel-coordinates polylines are read back point by point against the values
 * (numeric axes on their drawn domain, categories evenly) and a hovered line is read out, a drag on an axis keeps exactly the
 * runs inside it and writes the brush into the URL (and a reload keeps it), the scatter draws each
 * run where its values say and its hover names it (as text), and a dashboard carries both panels.
 * Screenshots: test-results/screenshots/compare-summary.png, compare-brushed-bands.png (docs/img/compare-brushed.png).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { DashboardDto } from "../lib/contracts/index.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";
import { seedRuns, type SeedRun } from "./compare-seed.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

/** Eval coverage rising to `best` at step 40, then falling to best − 0.1 (so best ≠ last). */
const coverage = (best: number) => [0, 20, 40, 60].map((step) => ({ step, value: step === 40 ? best : step === 60 ? best - 0.1 : best / 2 }));
const RUN_VALUES = [
  { id: "pca", lr: 0.001, task: "qa1", best: 0.7 },
  { id: "pcb", lr: 0.002, task: "qa1", best: 0.8 },
  { id: "pcc", lr: 0.003, task: "qa2", best: 0.9 },
  { id: "pcd", lr: 0.004, task: "qa2", best: 0.5 },
  { id: "pce", lr: 0.001, task: "qa3", best: 0.95 },
];
// one name is markup: it must come out as text
const nameOf = (id: string) => (id === "pce" ? "<img src=x onerror=alert(1)> qa3" : `run ${id}`);
const RUNS: SeedRun[] = RUN_VALUES.map((r) => ({ id: r.id, name: nameOf(r.id), set: { "algo.optimizer.lr": r.lr, "envs.task": r.task, seed: 1 }, points: { eval_coverage: coverage(r.best) } }));
const IDS = RUNS.map((r) => r.id);
const BASE = `/compare?runs=${IDS.join(",")}`;
const PC = `${BASE}&pc=algo.optimizer.lr,envs.task&pcm=best.eval_coverage`;
const SC = `${BASE}&sc=algo.optimizer.lr,best.eval_coverage`;

const close = (a: number, b: number, tol: number, what: string) => assert.ok(Math.abs(a - b) <= tol, `${what}: ${a} vs ${b}`);

describe("compare: parallel coordinates and scatter in a real browser", { skip: skip ?? false, timeout: 12 * 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const until = (what: string, fn: () => Promise<boolean>) => waitFor(what, async () => (await fn()) || null, 20_000, 100);

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    server = await startTestServer();
    const t0 = Date.now() - 60_000;
    await seedRuns(`file:${path.join(server.dataDir, "qrag.db")}`, RUNS.map((r, i) => ({ ...r, createdAt: new Date(t0 + i * 1000) })));
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1400, height: 1100 });
    page.on("dialog", (d) => {
      errors.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`console: ${m.text()}`);
    });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    assert.deepEqual(errors, [], "no page errors");
  });

  /** Axis geometry as drawn. */
  async function axes() {
    return page.locator('[data-testid="pcoord-axis"]').evaluateAll((els) =>
      els.map((e) => ({ key: e.getAttribute("data-axis")!, kind: e.getAttribute("data-kind")!, x: Number(e.getAttribute("data-x")), top: Number(e.getAttribute("data-top")), bottom: Number(e.getAttribute("data-bottom")), min: Number(e.getAttribute("data-min")), max: Number(e.getAttribute("data-max")), cats: e.getAttribute("data-cats") ? (JSON.parse(e.getAttribute("data-cats")!) as string[]) : [] })),
    );
  }
  /** Each run's polyline points and whether the brushes keep it. */
  async function lines() {
    const ls = await page.locator('[data-testid="pcoord-line"]').evaluateAll((els) => els.map((e) => ({ run: e.getAttribute("data-run")!, kept: e.getAttribute("data-kept") === "1", points: e.getAttribute("points")! })));
    return new Map(ls.map((l) => [l.run, { kept: l.kept, pts: l.points.split(" ").map((p) => p.split(",").map(Number) as [number, number]) }]));
  }
  const keptIds = async () => [...(await lines())].filter(([, l]) => l.kept).map(([id]) => id).sort();
  const waitLines = () => until("a polyline per run with the metric axis drawn", async () => (await page.locator('[data-testid="pcoord-line"]').count()) === IDS.length && (await page.locator('[data-testid="pcoord-axis"][data-axis="best.eval_coverage"]').getAttribute("data-max", { timeout: 1_000 }).catch(() => "")) !== "");

  /** Drags along an axis from one value to another (numeric axes: values; categorical: fractions). */
  async function drag(axis: string, fromF: number, toF: number) {
    const area = page.locator(`[data-testid="pcoord-brush-area"][data-axis="${axis}"]`);
    await area.scrollIntoViewIfNeeded();
    const box = (await area.boundingBox())!;
    const x = box.x + box.width / 2;
    const y = (f: number) => box.y + (1 - f) * box.height;
    await page.mouse.move(x, y(fromF));
    await page.mouse.down();
    await page.mouse.move(x, y((fromF + toF) / 2), { steps: 3 });
    await page.mouse.move(x, y(toF), { steps: 3 });
    await page.mouse.up();
  }
  const brushesInUrl = () => JSON.parse(new URL(page.url()).searchParams.get("pcb") ?? "[]") as { key: string; lo?: number; hi?: number; values?: string[] }[];

  test("the panel is switched on from the toolbar and saved in the URL", async () => {
    await page.goto(`${server.url}${BASE}`);
    // controlled by the URL: the box changes once the page's URL did
    await page.locator('[data-testid="show-pcoord"]').click();
    await page.waitForURL(/pcm=best\.eval_coverage/);
    await page.locator('[data-testid="show-scatter"]').click();
    await page.waitForURL(/sc=/);
    await until("both panels", async () => (await page.locator('[data-testid="pcoord-panel"]').count()) === 1 && (await page.locator('[data-testid="scatter-panel"]').count()) === 1);
    await page.locator('[data-testid="pcoord-close"]').click();
    await until("pcoord gone from the URL", async () => !new URL(page.url()).searchParams.has("pcm"));
  });

  test("each polyline passes through its run's values: lr on its domain, task evenly, best coverage last", async () => {
    await page.goto(`${server.url}${PC}`);
    await waitLines();
    const ax = await axes();
    assert.deepEqual(ax.map((a) => a.key), ["algo.optimizer.lr", "envs.task", "best.eval_coverage"]);
    assert.deepEqual(ax.map((a) => a.kind), ["num", "cat", "num"]);
    assert.deepEqual(await page.locator('[data-testid="pcoord-axis"]').evaluateAll((els) => els.map((e) => e.getAttribute("data-scale"))), ["linear", "linear", "linear"], "a ratio of 4: linear axes");
    assert.deepEqual(ax[1].cats, ["qa1", "qa2", "qa3"]);
    // the domains cover the values (round ends)
    assert.ok(ax[0].min <= 0.001 && ax[0].max >= 0.004 && ax[0].max - ax[0].min < 0.01, `lr domain ${ax[0].min}..${ax[0].max}`);
    assert.ok(ax[2].min <= 0.5 && ax[2].max >= 0.95 && ax[2].max <= 1.5, `coverage domain ${ax[2].min}..${ax[2].max}`);
    const ls = await lines();
    for (const r of RUN_VALUES) {
      const l = ls.get(r.id);
      assert.ok(l, `a line for ${r.id}`);
      assert.equal(l.pts.length, 3);
      const yNum = (a: (typeof ax)[number], v: number) => a.top + (1 - (v - a.min) / (a.max - a.min)) * (a.bottom - a.top);
      const yCat = (a: (typeof ax)[number], c: string) => a.top + (1 - (a.cats.indexOf(c) + 0.5) / a.cats.length) * (a.bottom - a.top);
      const want = [yNum(ax[0], r.lr), yCat(ax[1], r.task), yNum(ax[2], r.best)];
      l.pts.forEach(([x, y], i) => {
        close(x, ax[i].x, 0.01, `${r.id} x on axis ${i}`);
        close(y, want[i], 0.01, `${r.id} y on ${ax[i].key}`);
      });
      assert.ok(l.kept, "no brush: every run kept");
    }
    // best, not last: pcc's best (0.9) sits above pcb's (0.8) though its last is 0.8
    assert.ok(ls.get("pcc")!.pts[2][1] < ls.get("pcb")!.pts[2][1]);

    // hovering a line (midway between the first two axes) reads out its run and values
    const svg = page.locator('[data-testid="pcoord-svg"]');
    await svg.scrollIntoViewIfNeeded();
    const sb = (await svg.boundingBox())!;
    const [[ax0, ay0], [ax1, ay1]] = ls.get("pcd")!.pts;
    await page.mouse.move(sb.x + (ax0 + ax1) / 2, sb.y + (ay0 + ay1) / 2);
    const ro = page.locator('[data-testid="pcoord-readout"]');
    await until("the read-out of pcd", async () => (await ro.getAttribute("data-run", { timeout: 1_000 }).catch(() => null)) === "pcd");
    assert.equal(await ro.textContent(), "run pcd · algo.optimizer.lr = 0.004 · envs.task = qa2 · best.eval_coverage = 0.5");
  });

  test("a drag on the lr axis keeps exactly the runs inside it and writes the brush into the URL; a reload keeps it", async () => {
    await page.goto(`${server.url}${PC}`);
    await waitLines();
    const lr = (await axes())[0];
    const f = (v: number) => (v - lr.min) / (lr.max - lr.min);
    await drag("algo.optimizer.lr", f(0.0015), f(0.0035));
    await page.waitForURL(/pcb=/);
    await until("pcb and pcc kept", async () => (await keptIds()).join() === "pcb,pcc");
    const [b] = brushesInUrl();
    assert.equal(b.key, "algo.optimizer.lr");
    close(b.lo!, 0.0015, 0.0001, "brush lo");
    close(b.hi!, 0.0035, 0.0001, "brush hi");
    assert.match((await page.locator('[data-testid="pcoord-count"]').textContent()) ?? "", /^2 of 5 runs kept/);

    // a second brush on the categorical axis, over qa2 only: one run left
    await drag("envs.task", 0.45, 0.55);
    await until("only pcc kept", async () => (await keptIds()).join() === "pcc");
    assert.deepEqual(brushesInUrl().find((x) => x.key === "envs.task")?.values, ["qa2"]);

    await page.reload();
    await waitLines();
    assert.deepEqual(await keptIds(), ["pcc"], "the URL's brushes are applied on load");
    assert.equal(await page.locator('[data-testid="pcoord-brush"]').count(), 2, "both brushes drawn");

    // a click on the lr axis clears its brush: qa2's two runs
    const area = page.locator('[data-testid="pcoord-brush-area"][data-axis="algo.optimizer.lr"]');
    await area.scrollIntoViewIfNeeded();
    const box = (await area.boundingBox())!;
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await until("pcc and pcd kept", async () => (await keptIds()).join() === "pcc,pcd");
    assert.deepEqual(brushesInUrl().map((x) => x.key), ["envs.task"]);
  });

  test("the scatter draws each run at its values; hovering names the run (as text) and both values; brushed-out runs are dimmed", async () => {
    await page.goto(`${server.url}${SC}&pc=envs.task&pcm=best.eval_coverage&pcb=${encodeURIComponent(JSON.stringify([{ key: "envs.task", values: ["qa1"] }]))}`);
    const svg = page.locator('[data-testid="scatter-svg"]');
    await until("five points", async () => (await page.locator('[data-testid="scatter-point"]').count()) === 5 && (await svg.getAttribute("data-ymax")) !== "");
    const g = Object.fromEntries(await Promise.all(["x0", "x1", "y0", "y1", "xmin", "xmax", "ymin", "ymax"].map(async (k) => [k, Number(await svg.getAttribute(`data-${k}`))])));
    const pts = await page.locator('[data-testid="scatter-point"]').evaluateAll((els) => els.map((e) => ({ run: e.getAttribute("data-run")!, cx: Number(e.getAttribute("cx")), cy: Number(e.getAttribute("cy")), kept: e.getAttribute("data-kept") === "1" })));
    for (const r of RUN_VALUES) {
      const p = pts.find((q) => q.run === r.id)!;
      close(p.cx, g.x0 + ((r.lr - g.xmin) / (g.xmax - g.xmin)) * (g.x1 - g.x0), 0.01, `${r.id} cx`);
      close(p.cy, g.y0 - ((r.best - g.ymin) / (g.ymax - g.ymin)) * (g.y0 - g.y1), 0.01, `${r.id} cy`);
      assert.equal(p.kept, r.task === "qa1", `${r.id} dimmed unless qa1`);
    }
    for (const r of RUN_VALUES) {
      await page.locator(`[data-testid="scatter-point"][data-run="${r.id}"]`).hover();
      const ro = page.locator('[data-testid="scatter-readout"]');
      await until(`read-out of ${r.id}`, async () => (await ro.getAttribute("data-run", { timeout: 1_000 }).catch(() => null)) === r.id);
      // the one read-out of both panels: the name, then " · key = value" per column
      assert.equal(await ro.textContent(), `${nameOf(r.id)} · algo.optimizer.lr = ${r.lr} · best.eval_coverage = ${r.best}`);
    }
    assert.equal(await page.locator('[data-testid="scatter-readout"] img').count(), 0, "a run name is text, never markup");
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.goto(`${server.url}${SC}&pc=algo.optimizer.lr,envs.task&pcm=best.eval_coverage&pcb=${encodeURIComponent(JSON.stringify([{ key: "envs.task", values: ["qa1", "qa2"] }]))}`);
    await waitLines();
    await page.screenshot({ path: path.join(SCREENSHOTS, "compare-summary.png"), fullPage: true });
  });

  test("a run hidden in the legend leaves both panels", async () => {
    await page.goto(`${server.url}${PC.replace("/compare?", "/compare?sc=algo.optimizer.lr,best.eval_coverage&")}`);
    await waitLines();
    await page.locator('[data-testid="legend-item"][data-id="pce"] [data-testid="legend-toggle"]').click();
    await page.waitForURL(/hidden=pce/);
    await until("four lines and four points", async () => (await page.locator('[data-testid="pcoord-line"]').count()) === 4 && (await page.locator('[data-testid="scatter-point"]').count()) === 4);
    assert.equal(await page.locator('[data-testid="pcoord-line"][data-run="pce"]').count(), 0);
  });

  /** Each drawn run line of a compare chart: its stroke opacity and whether it is marked faint. */
  const chartLines = (panel: string) =>
    page.locator(`[data-testid="compare-chart-${panel}"] path[data-line]`).evaluateAll((els) => Object.fromEntries(els.map((e) => [e.getAttribute("data-line")!, Number(getComputedStyle(e).strokeOpacity)])));
  const faintLegend = () => page.locator('[data-testid="legend-item"][data-faint="1"]').evaluateAll((els) => els.map((e) => e.getAttribute("data-id")!).sort());

  test("a brush fades the runs it leaves out in the line charts, their read-out and the legend; a dashboard keeps it", async () => {
    await page.goto(`${server.url}${PC}&panels=eval_coverage`);
    await waitLines();
    await until("five opaque lines", async () => Object.values(await chartLines("eval_coverage")).filter((o) => o === 1).length === 5);
    const lr = (await axes())[0];
    const f = (v: number) => (v - lr.min) / (lr.max - lr.min);
    await drag("algo.optimizer.lr", f(0.0015), f(0.0035));
    await page.waitForURL(/pcb=/);
    await until("pcb and pcc drawn, the rest faint", async () => {
      const o = await chartLines("eval_coverage");
      return Object.keys(o).length === 5 && IDS.every((id) => o[id] === (id === "pcb" || id === "pcc" ? 1 : 0.15));
    });
    assert.deepEqual(await faintLegend(), ["pca", "pcd", "pce"]);
    // the crosshair reads out the kept runs only
    const chart = page.locator('[data-testid="compare-chart-eval_coverage"] svg');
    await chart.scrollIntoViewIfNeeded();
    const cb = (await chart.boundingBox())!;
    await page.mouse.move(cb.x + cb.width - 20, cb.y + cb.height / 2);
    const rows = page.locator('[data-testid="compare-chart-eval_coverage-readout"] .readout-row');
    await until("a read-out", async () => (await rows.count()) > 0);
    assert.deepEqual((await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-run")!))).sort(), ["pcb", "pcc"]);
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, "compare-brush-faint.png"), fullPage: true });

    // saved as a dashboard, it opens with the same runs faint
    await page.locator('[data-testid="dashboard-name"]').fill("brushed");
    await page.locator('[data-testid="save-dashboard"]').click();
    await page.waitForURL(/\/dashboards\//);
    await until("the dashboard's faint lines", async () => {
      const o = await chartLines("eval_coverage");
      return Object.keys(o).length === 5 && IDS.every((id) => o[id] === (id === "pcb" || id === "pcc" ? 1 : 0.15));
    });
    // clearing the brush there brings every line back
    await page.locator('[data-testid="pcoord-clear"]').click();
    await until("five opaque lines again", async () => Object.values(await chartLines("eval_coverage")).filter((o) => o === 1).length === 5);
    assert.deepEqual(await faintLegend(), []);
  });

  test("an axis moved right and switched to log is drawn so, kept in the URL and in a dashboard", async () => {
    await page.goto(`${server.url}${PC}`);
    await waitLines();
    await page.locator('[data-testid="pcoord-move-right"][data-axis="algo.optimizer.lr"]').click();
    await page.waitForURL(/pc=envs\.task%2Calgo\.optimizer\.lr|pc=envs\.task,algo\.optimizer\.lr/);
    await until("lr drawn second", async () => (await axes()).map((a) => a.key).join() === "envs.task,algo.optimizer.lr,best.eval_coverage");
    let ax = await axes();
    assert.ok(ax[0].x < ax[1].x && ax[1].x < ax[2].x, "drawn left to right in the new order");
    assert.equal(await page.locator('[data-testid="pcoord-move-right"][data-axis="algo.optimizer.lr"]').isDisabled(), true, "the last axis before the metric cannot move right");
    // lr on a log scale by hand (a ratio of 4 is linear by default)
    const scale = page.locator('[data-testid="pcoord-axis"][data-axis="algo.optimizer.lr"]');
    assert.equal(await scale.getAttribute("data-scale"), "linear");
    await page.locator('[data-testid="pcoord-scale"][data-axis="algo.optimizer.lr"]').click();
    await page.waitForURL(/pcs=/);
    await until("lr on log", async () => (await scale.getAttribute("data-scale")) === "log");
    assert.equal(new URL(page.url()).searchParams.get("pcs"), "algo.optimizer.lr:log");
    const check = async () => {
      ax = await axes();
      assert.deepEqual(ax.map((a) => a.key), ["envs.task", "algo.optimizer.lr", "best.eval_coverage"]);
      const a = ax[1];
      const ls = await lines();
      for (const r of RUN_VALUES) {
        const [x, y] = ls.get(r.id)!.pts[1];
        close(x, a.x, 0.01, `${r.id} on the second axis`);
        close(y, a.top + (1 - Math.log10(r.lr / a.min) / Math.log10(a.max / a.min)) * (a.bottom - a.top), 0.01, `${r.id} lr on log`);
      }
    };
    await check();
    await page.locator('[data-testid="dashboard-name"]').fill("moved axes");
    await page.locator('[data-testid="save-dashboard"]').click();
    await page.waitForURL(/\/dashboards\//);
    await waitLines();
    await until("lr on log in the dashboard", async () => (await scale.getAttribute("data-scale")) === "log");
    await check();
  });

  test("an axis dragged by its title sideways takes the slot it is dropped in; the URL and a reload keep the order", async () => {
    await page.goto(`${server.url}${PC}`);
    await waitLines();
    const before = await axes();
    const handle = page.locator('[data-testid="pcoord-axis-handle"][data-axis="algo.optimizer.lr"]');
    await handle.scrollIntoViewIfNeeded();
    const hb = (await handle.boundingBox())!;
    const svgBox = (await page.locator('[data-testid="pcoord-svg"]').boundingBox())!;
    assert.equal(await page.locator('[data-testid="pcoord-axis-handle"][data-axis="best.eval_coverage"]').count(), 0, "the metric stays last: no handle");
    // from the lr axis's title to just past the task axis (past the metric's position is still the last slot)
    const y = hb.y + hb.height / 2;
    await page.mouse.move(before[0].x + svgBox.x, y);
    await page.mouse.down();
    await page.mouse.move(svgBox.x + (before[0].x + before[1].x) / 2, y, { steps: 4 });
    await page.mouse.move(svgBox.x + before[1].x + 20, y, { steps: 4 });
    await page.mouse.up();
    await page.waitForURL(/pc=envs\.task%2Calgo\.optimizer\.lr|pc=envs\.task,algo\.optimizer\.lr/);
    const check = async () => {
      await until("lr drawn second", async () => (await axes()).map((a) => a.key).join() === "envs.task,algo.optimizer.lr,best.eval_coverage");
      const ax = await axes();
      const ls = await lines();
      for (const r of RUN_VALUES) close(ls.get(r.id)!.pts[1][0], ax[1].x, 0.01, `${r.id} on the second axis`);
      close(ax[1].x, before[1].x, 0.01, "lr now where the task axis was");
    };
    await check();
    // a drop short of half-way leaves the order as it is (no URL change)
    const h2 = (await handle.boundingBox())!;
    await page.mouse.move(h2.x + h2.width / 2, h2.y + h2.height / 2);
    await page.mouse.down();
    await page.mouse.move(h2.x + h2.width / 2 - 30, h2.y + h2.height / 2, { steps: 3 });
    await page.mouse.up();
    await page.reload();
    await waitLines();
    await check();
  });

  test("grouped bands and their table leave out the runs a brush leaves out, and the caption says how many", async () => {
    // lr in [0.0015, 0.0045] keeps pcb (qa1), pcc and pcd (qa2); pca (qa1) and pce (qa3) are out
    const brush = encodeURIComponent(JSON.stringify([{ key: "algo.optimizer.lr", lo: 0.0015, hi: 0.0045 }]));
    await page.goto(`${server.url}${PC}&group=envs.task&panels=eval_coverage&pcb=${brush}`);
    await waitLines();
    const table = page.locator('[data-testid="band-summary-eval_coverage"]');
    const caption = table.locator('[data-testid="band-caption"]');
    await until("the caption", async () => (await caption.count()) === 1);
    assert.equal(await caption.textContent(), "n = 3 of 5, 2 brushed out in the parallel coordinates");
    const rows = () => table.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => ({ group: tr.getAttribute("data-group"), runs: tr.getAttribute("data-runs"), mean: tr.getAttribute("data-mean"), cells: Array.from(tr.querySelectorAll("td")).map((td) => td.textContent) })));
    await until("qa2's mean over its two runs", async () => (await rows()).some((r) => r.group === 'g:"qa2"' && r.mean !== ""));
    const byGroup = Object.fromEntries((await rows()).map((r) => [r.group, r]));
    // last eval: best − 0.1 → pcb 0.7; pcc 0.8 and pcd 0.4 → 0.6
    assert.equal(byGroup['g:"qa1"'].cells[1], "1 of 2", "qa1 counts only pcb");
    close(Number(byGroup['g:"qa1"'].mean), 0.7, 1e-9, "qa1's mean is pcb's value, without pca's");
    assert.equal(byGroup['g:"qa2"'].cells[1], "2");
    close(Number(byGroup['g:"qa2"'].mean), 0.6, 1e-9, "qa2's mean");
    assert.equal(byGroup['g:"qa3"'].cells[1], "0 of 1");
    assert.equal(byGroup['g:"qa3"'].mean, "", "no statistics for a group the brush leaves out");
    assert.match((await page.locator(`[data-testid="legend-item"][data-id='g:"qa1"']`).textContent()) ?? "", /\(n = 1 of 2\)/, "the legend counts qa1's kept run");
    // the brush reaches past the lr axis's top (0.0045 > 0.004): drawn only along the axis
    const lrAxis = (await axes())[0];
    const rect = page.locator('[data-testid="pcoord-brush"][data-axis="algo.optimizer.lr"]');
    assert.ok(Number(await rect.getAttribute("y")) >= lrAxis.top - 0.01, "the brush starts at the axis's top, not above it");
    // the chart: qa1 is down to one run (a line), qa2 a band, qa3 a faint line
    const chart = page.locator('[data-testid="compare-chart-eval_coverage"]');
    assert.equal(await chart.getAttribute("data-bands"), "1");
    assert.equal(await chart.locator("[data-band]").getAttribute("data-band"), 'g:"qa2"');
    assert.deepEqual(await chart.locator("path[data-line]").evaluateAll((els) => els.map((e) => `${e.getAttribute("data-line")}:${e.getAttribute("data-faint")}`).sort()), ['g:"qa1":0', 'g:"qa3":1']);
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    // the page down to the parallel coordinates (the README's picture: no config diff)
    const pc = (await page.locator('[data-testid="pcoord-panel"]').boundingBox())!;
    const scrollY = await page.evaluate(() => window.scrollY);
    await page.screenshot({ path: path.join(SCREENSHOTS, "compare-brushed-bands.png"), fullPage: true, clip: { x: 0, y: 0, width: 1400, height: pc.y + scrollY + pc.height + 16 } });
    // clearing the brush: every run back in, no caption
    await page.locator('[data-testid="pcoord-clear"]').click();
    await until("no caption", async () => (await caption.count()) === 0);
    await until("qa1 over both runs", async () => (await rows()).find((r) => r.group === 'g:"qa1"')?.cells[1] === "2");
  });

  test("a filtered comparison reads 'loading runs…' until its list answers, never '0 runs'; 0 only for an empty answer", async () => {
    // hold the comparison's list request until the loading state has been read
    let release!: () => void;
    let held = new Promise<void>((r) => (release = r));
    let seen = false;
    // the comparison's list (200 newest) and the runs page's (a page of 50)
    const isList = (u: URL) => u.pathname === "/api/runs" && ["200", "50"].includes(u.searchParams.get("limit") ?? "") && !u.searchParams.has("ids");
    await page.route(isList, async (route) => {
      seen = true;
      await held;
      // a request still held when the test ends is answered by nothing: ignore its late continue
      await route.continue().catch(() => {});
    });
    try {
      await page.goto(`${server.url}/compare?filter=1&where=${encodeURIComponent("best.eval_coverage >= 0.75")}`);
      await until("the list request held", async () => seen);
      const count = page.locator('[data-testid="compare-count"]');
      await until("the count drawn", async () => (await count.count()) === 1);
      assert.equal(await count.textContent(), "loading runs…");
      assert.equal(await page.locator('[data-testid="compare-loading"]').textContent(), "Loading runs…");
      assert.ok(!/\b0 runs\b/.test((await page.locator("main").textContent()) ?? ""), "no '0 runs' while loading");
      release();
      await until("3 runs", async () => (await count.textContent()) === "3 runs matching the filter");
      // the runs page: "Loading runs…" until its page answers, never the empty table's "No runs match"
      let releasePage!: () => void;
      const pageHeld = new Promise<void>((r) => (releasePage = r));
      release = releasePage;
      held = pageHeld;
      seen = false;
      await page.goto(`${server.url}/?where=${encodeURIComponent("best.eval_coverage >= 0.75")}`);
      await until("the runs page's request held", async () => seen);
      await until("the loading text", async () => ((await page.locator("main").textContent()) ?? "").includes("Loading runs…"));
      assert.ok(!((await page.locator("main").textContent()) ?? "").includes("No runs match"), "no empty table while loading");
      releasePage();
      await until("three rows", async () => (await page.locator('[data-testid="runs-table"] tbody tr[data-run-id]').count()) === 3);
    } finally {
      release();
      await page.unroute(isList);
    }
    await page.goto(`${server.url}/compare?filter=1&where=${encodeURIComponent("best.eval_coverage >= 2")}`);
    await until("0 runs after the answer", async () => (await page.locator('[data-testid="compare-count"]').textContent()) === "0 runs matching the filter");
    assert.match((await page.locator('[data-testid="compare-empty"]').textContent()) ?? "", /^No runs match the filter\./);
  });

  test("a runs view saved as a dashboard reopens with the same columns, filter, sort and values; saving into it changes its columns", async () => {
    const view = `/?cols=algo.optimizer.lr,best.eval_coverage&where=${encodeURIComponent("best.eval_coverage >= 0.75")}&sort=best.eval_coverage&order=asc`;
    /** The rows of a runs table as shown: run id and each chosen column's text, in order (the queue column is always there). */
    const table = (scope: string) =>
      page.locator(`${scope} [data-testid="runs-table"] tbody tr[data-run-id]`).evaluateAll((trs) => trs.map((tr) => [tr.getAttribute("data-run-id")!, ...Array.from(tr.querySelectorAll('td[data-column]:not([data-column="queue"])')).map((td) => `${td.getAttribute("data-column")}=${td.textContent}`)].join(" ")));
    await page.goto(`${server.url}${view}`);
    await until("three rows", async () => (await table("main")).length === 3);
    const shown = await table("main");
    assert.deepEqual(shown, ["pcb algo.optimizer.lr=0.002 best.eval_coverage=0.8", "pcc algo.optimizer.lr=0.003 best.eval_coverage=0.9", "pce algo.optimizer.lr=0.001 best.eval_coverage=0.95"]);
    await page.locator('[data-testid="save-view-name"]').fill("good runs");
    await page.locator('[data-testid="save-view"]').click();
    await page.waitForURL(/\/dashboards\//);
    const panel = '[data-testid="runs-table-panel"]';
    await until("the dashboard's table", async () => (await table(panel)).length === 3);
    assert.deepEqual(await table(panel), shown, "the same columns, rows, order and values");
    assert.deepEqual((await page.locator(`${panel} th.chosen`).allTextContents()).map((t) => t.trim()), ["algo.optimizer.lr", "best.eval_coverage ▲"], "sorted on the best coverage, ascending");
    // the count reads 0 until the dashboard's run list has loaded: wait for it, then hold it to 3
    await until("the charts show the same runs", async () => /^3 runs matching the filter/.test((await page.locator('[data-testid="compare-count"]').textContent()) ?? ""));
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, "dashboard-runs-table.png"), fullPage: true });
    const id = new URL(page.url()).pathname.split("/").pop()!;
    // a header click there sorts (lr, descending), and the owner saves it
    await page.locator(`${panel} th[data-sort="algo.optimizer.lr"]`).click();
    const byLr = ["pcc", "pcb", "pce"];
    await until("sorted on lr", async () => (await table(panel)).map((r) => r.split(" ")[0]).join() === byLr.join());
    await page.locator('[data-testid="save-dashboard-changes"]').click();
    await until("saved", async () => (await page.locator('[data-testid="save-dashboard-changes"]').textContent()) === "Saved");
    await page.reload();
    await until("the table after a reload", async () => (await table(panel)).length === 3);
    assert.deepEqual((await table(panel)).map((r) => r.split(" ")[0]), byLr, "the saved sort");
    assert.deepEqual((await table(panel)).sort(), [...shown].sort(), "the same values");

    // back on the runs page: one more column, saved into that dashboard
    await page.goto(`${server.url}${view.replace("cols=", "cols=envs.task,")}`);
    await until("three rows with the task", async () => (await table("main"))[0]?.includes("envs.task=qa1") ?? false);
    await page.locator('[data-testid="save-view-target"]').selectOption(id);
    await page.locator('[data-testid="save-view"]').click();
    await page.waitForURL(new RegExp(`/dashboards/${id}$`));
    await until("the task column in the dashboard", async () => (await table(panel))[0]?.startsWith("pcb envs.task=qa1 algo.optimizer.lr=0.002") ?? false);
    const saved = (await (await fetch(`${server.url}/api/dashboards/${id}`)).json()) as DashboardDto;
    assert.deepEqual(saved.spec.table, { cols: ["envs.task", "algo.optimizer.lr", "best.eval_coverage"], sort: "best.eval_coverage", order: "asc" });
    assert.deepEqual(saved.spec.filter, { where: "best.eval_coverage >= 0.75" });
  });

  test("a dashboard saves both panels and a brush; one saved before them still opens; bad specs are refused", async () => {
    const spec = { runs: IDS, panels: ["eval_coverage"], pcoord: { axes: ["algo.optimizer.lr"], metric: "best.eval_coverage", brushes: [{ key: "best.eval_coverage", lo: 0.75, hi: 1 }] }, scatter: { x: "envs.task", y: "best.eval_coverage" } };
    const post = (body: unknown) => fetch(`${server.url}/api/dashboards`, { method: "POST", headers: { "content-type": "application/json", origin: server.url }, body: JSON.stringify(body) });
    const res = await post({ name: "summary panels", spec });
    assert.equal(res.status, 201, await res.clone().text());
    const d = (await res.json()) as DashboardDto;
    assert.deepEqual(d.spec.pcoord, spec.pcoord);
    assert.deepEqual(d.spec.scatter, spec.scatter);
    await page.goto(`${server.url}/dashboards/${d.id}`);
    await waitLines();
    assert.deepEqual(await keptIds(), ["pcb", "pcc", "pce"], "the saved brush applies");
    assert.equal(await page.locator('[data-testid="scatter-panel"]').count(), 1);

    const old = (await (await post({ name: "old", spec: { runs: IDS, panels: ["eval_coverage"] } })).json()) as DashboardDto;
    await page.goto(`${server.url}/dashboards/${old.id}`);
    await until("the old dashboard's chart", async () => (await page.locator('[data-testid="compare-chart-eval_coverage"]').count()) === 1);
    assert.equal(await page.locator('[data-testid="pcoord-panel"]').count(), 0);

    const tooMany = await post({ name: "bad", spec: { ...spec, pcoord: { axes: Array.from({ length: 8 }, (_, i) => `algo.k${i}`), metric: "best.eval_coverage" } } });
    assert.equal(tooMany.status, 400);
    const notSummary = await post({ name: "bad", spec: { ...spec, scatter: { x: "envs.task", y: "envs.task" } } });
    assert.equal(notSummary.status, 400);
  });
});
