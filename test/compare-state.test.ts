/**
 * The compare view's pure parts: aligning runs bucketed over different ranges onto one step grid
 * before banding, the runs table's shift-click ranges, and the URL ⇄ state ⇄ dashboard spec.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { alignSteps, groupBand } from "../lib/analysis/bands.ts";
import { toggleRows } from "../lib/selection.ts";
import { DEFAULT_PANELS, searchFromState, specFromState, stateFromSearch, withDefaults } from "../lib/compare-state.ts";
import { dashboardSpec } from "../lib/contracts/index.ts";
import { axisOf, brushKeeps, brushOf, columnValue, fractionOn, keptRuns } from "../lib/analysis/summary-axes.ts";
import { bucketSeries } from "../lib/contracts/index.ts";
import { moveAxisTo, slotAt } from "../lib/analysis/axis-order.ts";

const series = (steps: number[], f: (s: number) => number) => steps.map((step) => ({ step, value: f(step) }));
const range = (from: number, to: number, by: number) => Array.from({ length: Math.floor((to - from) / by) + 1 }, (_, i) => from + i * by);

test("alignSteps leaves runs alone when their steps fit the grid", () => {
  const a = series([0, 10, 20], (s) => s);
  const b = series([0, 10, 20, 30], (s) => s + 1);
  assert.deepEqual(alignSteps([a, b], 10), [a, b]);
});

test("alignSteps puts runs bucketed over different ranges on shared steps, so they band", () => {
  // run a logs 0..1000, run b 0..600, every 2 steps; the server buckets each for its own last step
  const pts = (last: number, off: number) => range(0, last, 2).map((step) => ({ step, update: step, wall: step, value: step / 100 + off }));
  const a = bucketSeries(pts(1000, 0), 100).map((p) => ({ step: p.step, value: p.value }));
  const b = bucketSeries(pts(600, 1), 100).map((p) => ({ step: p.step, value: p.value }));
  const shared = new Set(a.map((p) => p.step).filter((s) => b.some((q) => q.step === s)));
  assert.ok(shared.size < 40, `raw buckets barely line up (${shared.size} shared steps)`);
  const aligned = alignSteps([a, b], 100);
  const band = groupBand(aligned);
  // a's buckets (16 steps wide) within b's range (b's are 8 wide and nest in them): each is banded
  const aInRange = a.filter((p) => Math.floor(p.step / 16) <= Math.floor(600 / 16)).length;
  assert.ok(aInRange >= 35 && band.points.length === aInRange, `all of b's range is banded (${band.points.length} of ${aInRange} points)`);
  for (const p of band.points) {
    assert.equal(p.runs, 2);
    assert.ok(Math.abs(p.mean - (p.step / 100 + 0.5)) < 0.12, `mean at ${p.step} near the truth: ${p.mean}`);
  }
  assert.ok(band.endsAt !== null && band.endsAt > 590 && band.endsAt < 630, `the band ends after b's last step: ${band.endsAt}`);
  for (const s of aligned) {
    assert.ok(s.length <= 100);
    assert.deepEqual(s.map((p) => p.step), [...s.map((p) => p.step)].sort((x, y) => x - y), "steps stay in order");
  }
});

test("shift-click selects the range from the last clicked row; a plain click toggles one", () => {
  const order = ["a", "b", "c", "d", "e"];
  let sel = toggleRows(order, new Set(), null, "b", false);
  assert.deepEqual([...sel], ["b"]);
  sel = toggleRows(order, sel, "b", "e", true);
  assert.deepEqual([...sel].sort(), ["b", "c", "d", "e"]);
  sel = toggleRows(order, sel, "e", "c", true);
  assert.deepEqual([...sel].sort(), ["b"], "shift on a selected row clears the range (c..e)");
  sel = toggleRows(order, sel, "gone", "a", true);
  assert.deepEqual([...sel].sort(), ["a", "b"], "an anchor not shown: a plain click");
  sel = toggleRows(order, sel, "a", "a", false);
  assert.deepEqual([...sel].sort(), ["b"]);
});

test("compare state round-trips through the URL and is a valid dashboard spec", () => {
  const s = withDefaults({ runs: ["r1", "r2"], group: "envs.task", band: "minmax", smoothing: 0.25, hidden: ["g:\"qa1\""], panels: ["qf_loss", "eval_f1"] });
  const back = stateFromSearch(new URLSearchParams(searchFromState(s)));
  assert.deepEqual(back, s);
  assert.ok(dashboardSpec.safeParse(specFromState(s)).success);
  const f = withDefaults({ filter: { status: ["running"], q: "qa2", tag: "t" } });
  assert.deepEqual(stateFromSearch(new URLSearchParams(searchFromState(f))), f);
  assert.ok(dashboardSpec.safeParse(specFromState(f)).success);
  assert.equal(searchFromState(withDefaults({ runs: ["x"] })), "runs=x", "defaults stay out of the link");
  // a hand-edited link: bad values fall back to defaults
  const odd = stateFromSearch(new URLSearchParams("runs=a,b%20c,d&band=wide&smooth=7&x=time&group=a;b&status=bogus"));
  assert.deepEqual(odd, withDefaults({ runs: ["a", "d"] }));
  assert.deepEqual(odd.panels, [...DEFAULT_PANELS]);
});

test("the summary panels round-trip through the URL and the spec; a bad brush is dropped alone, bad axes drop the panel", () => {
  const s = withDefaults({
    runs: ["r1"],
    pcoord: { axes: ["algo.optimizer.lr", "envs.task"], metric: "best.eval_coverage", brushes: [{ key: "algo.optimizer.lr", lo: 0.001, hi: 0.002 }, { key: "envs.task", values: ["qa1", "a \"quoted\" one"] }] },
    scatter: { x: "envs.task", y: "last.eval_f1" },
  });
  const back = stateFromSearch(new URLSearchParams(searchFromState(s)));
  assert.deepEqual(back, s);
  assert.ok(dashboardSpec.safeParse(specFromState(s)).success);
  assert.equal(stateFromSearch(new URLSearchParams(searchFromState(withDefaults({ runs: ["r1"] })))).pcoord, undefined, "absent stays absent (old links, old dashboards)");
  const bad = JSON.stringify([{ key: "algo.optimizer.lr", lo: 2, hi: 1 }, { key: "envs.task", values: ["qa2"] }]);
  const lenient = stateFromSearch(new URLSearchParams(`runs=r1&pc=envs.task&pcm=best.eval_coverage&pcb=${encodeURIComponent(bad)}`));
  assert.deepEqual(lenient.pcoord, { axes: ["envs.task"], metric: "best.eval_coverage", brushes: [{ key: "envs.task", values: ["qa2"] }] });
  assert.equal(stateFromSearch(new URLSearchParams("runs=r1&pc=envs.task&pcm=envs.task")).pcoord, undefined, "the metric must be a summary");
  assert.equal(stateFromSearch(new URLSearchParams("runs=r1&pcm=best.eval_coverage&pcb={")).pcoord?.brushes, undefined, "unreadable brushes: none");
  assert.equal(stateFromSearch(new URLSearchParams("runs=r1&sc=envs.task,best.nope")).scatter, undefined);
  assert.ok(!dashboardSpec.safeParse({ runs: ["r1"], pcoord: { axes: Array.from({ length: 8 }, (_, i) => `k${i}`), metric: "best.eval_coverage" } }).success, "axes are bounded");
});

test("summary axes: numbers on round ends, categories evenly, brushes keep what lies inside", () => {
  const num = axisOf("lr", [0.001, 0.004, undefined, 0.002]);
  assert.equal(num.kind, "num");
  assert.deepEqual(num.kind === "num" && num.domain, [0.001, 0.004]);
  assert.equal(fractionOn(num, 0.0025), 0.5);
  assert.equal(fractionOn(num, undefined), null);
  const cat = axisOf("task", ["qa2", "qa1", "qa3", "qa1", true]);
  assert.deepEqual(cat.kind === "cat" && cat.cats, ["qa1", "qa2", "qa3", "true"]);
  assert.deepEqual(["qa1", "qa2", "qa3", true].map((v) => fractionOn(cat, v)), [0.125, 0.375, 0.625, 0.875]);
  assert.deepEqual(brushOf(cat, 0.3, 0.7), { key: "task", values: ["qa2", "qa3"] });
  const b = brushOf(num, 0.6, 0.2);
  assert.deepEqual(b, { key: "lr", lo: 0.0016, hi: 0.0028 });
  assert.deepEqual([0.0015, 0.002, 0.0028, 0.003, null].map((v) => brushKeeps(b, v)), [false, true, true, false, false]);
  const runs = [{ id: "a", name: "a", values: { lr: 0.002, task: "qa1" } }, { id: "b", name: "b", values: { lr: 0.003, task: "qa1" } }];
  assert.deepEqual([...keptRuns(runs, [b], ["lr"])], ["a"]);
  assert.deepEqual([...keptRuns(runs, [b], ["task"])], ["a", "b"], "a brush on an axis not shown is ignored");
  // two decades and more: log, so 1e-5 and 1e-4 do not merge at the bottom under 1e-2
  const lr = axisOf("lr", [1e-5, 1e-4, 1e-3, 1e-2]);
  assert.ok(lr.kind === "num" && lr.log && lr.domain[0] === 1e-5 && lr.domain[1] === 1e-2);
  assert.deepEqual([1e-5, 1e-4, 1e-3, 1e-2, 0].map((v) => fractionOn(lr, v)?.toFixed(6) ?? null), ["0.000000", "0.333333", "0.666667", "1.000000", null]);
  const lb = brushOf(lr, 0.3, 0.7);
  assert.deepEqual([1e-5, 1e-4, 1e-3, 1e-2].map((v) => brushKeeps(lb, v)), [false, true, true, false]);
  assert.equal(axisOf("x", [1, 50]).kind === "num" && (axisOf("x", [1, 50]) as { log: boolean }).log, false, "under two decades: linear");
  assert.equal(columnValue("algo.optimizer.lr", { algo: { optimizer: { lr: 0.5 } } }, undefined), 0.5);
  assert.equal(columnValue("best.eval_coverage", {}, { "best.eval_coverage": 0.9 }), 0.9);
  assert.equal(columnValue("best.eval_coverage", {}, { "best.eval_coverage": null }), undefined);
});

test("the runs-table panel, axis order, hand-set scales and a filter expression round-trip through the URL and the spec", () => {
  const s = withDefaults({
    filter: { status: ["completed"], where: "envs.task = qa2 and best.eval_coverage >= 0.9" },
    pcoord: { axes: ["envs.task", "algo.optimizer.lr"], metric: "best.eval_coverage", scales: [{ key: "algo.optimizer.lr", scale: "log" }, { key: "best.eval_coverage", scale: "linear" }] },
    table: { cols: ["algo.optimizer.lr", "best.eval_coverage"], sort: "best.eval_coverage", order: "asc" },
  });
  assert.deepEqual(stateFromSearch(new URLSearchParams(searchFromState(s))), s);
  assert.ok(dashboardSpec.safeParse(specFromState(s)).success);
  const empty = withDefaults({ runs: ["r1"], table: { cols: [] } });
  assert.deepEqual(stateFromSearch(new URLSearchParams(searchFromState(empty))).table, { cols: [] }, "a table without chosen columns is still a table");
  assert.equal(stateFromSearch(new URLSearchParams("runs=r1&table=1&cols=best.nope")).table, undefined, "a bad column drops the panel");
  const lenient = stateFromSearch(new URLSearchParams("runs=r1&pc=algo.optimizer.lr&pcm=best.eval_coverage&pcs=algo.optimizer.lr:log,envs.task:cubic"));
  assert.deepEqual(lenient.pcoord?.scales, [{ key: "algo.optimizer.lr", scale: "log" }], "a bad scale is dropped alone");
  // a hand-set scale wins over the automatic one, except log where a value is not positive
  const lin = axisOf("lr", [1e-5, 1e-2], "linear");
  assert.ok(lin.kind === "num" && !lin.log);
  const log = axisOf("lr", [1, 4], "log");
  assert.ok(log.kind === "num" && log.log);
  const zero = axisOf("lr", [0, 4], "log");
  assert.ok(zero.kind === "num" && !zero.log);
});

test("a dragged parallel-coordinates axis lands in the nearest slot; the others keep their order", () => {
  // three movable axes at x = 70, 270, 470 (the metric at 670 is not a slot)
  assert.equal(slotAt(70 + 110, 70, 200, 3), 1, "dropped past the half-way point: the next slot");
  assert.equal(slotAt(70 + 90, 70, 200, 3), 0, "short of it: its own");
  assert.equal(slotAt(900, 70, 200, 3), 2, "past the last movable axis: the last slot, never the metric's");
  assert.equal(slotAt(-500, 70, 200, 3), 0);
  assert.equal(slotAt(400, 70, 0, 1), 0, "a lone axis stays");
  assert.deepEqual(moveAxisTo(["a", "b", "c"], "a", 2), ["b", "c", "a"]);
  assert.deepEqual(moveAxisTo(["a", "b", "c"], "c", 0), ["c", "a", "b"]);
  assert.deepEqual(moveAxisTo(["a", "b", "c"], "b", 1), ["a", "b", "c"]);
  assert.deepEqual(moveAxisTo(["a", "b"], "x", 0), ["a", "b"], "an unknown axis changes nothing");
});
