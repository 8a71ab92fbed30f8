/**
 * The one ValueWithInterval of the sweep and agent tables, rendered to markup: the value to 3
 * digits and its interval "[low, high]" to 2, the same text in each table that uses it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { ValueWithInterval, intervalTitle } from "../components/ValueWithInterval.tsx";
import { AgentTable } from "../components/sweeps/AgentTable.tsx";
import type { AgentSummary } from "../lib/contracts/index.ts";

/** The text a user reads (tags dropped). */
const text = (html: string) => html.replace(/<[^>]*>/g, "");

test("a value with its interval reads 'value [low, high]'; without one, the value alone", () => {
  assert.equal(text(renderToStaticMarkup(createElement(ValueWithInterval, { value: 0.83456, ci: { low: 0.71234, high: 0.91987 } }))), "0.835 [0.71, 0.92]");
  assert.equal(text(renderToStaticMarkup(createElement(ValueWithInterval, { value: 0.5, ci: null }))), "0.5");
  assert.equal(text(renderToStaticMarkup(createElement(ValueWithInterval, { value: null, ci: null }))), "—");
  assert.equal(intervalTitle({ low: 0.71234, high: 0.91987 }), "95 % interval 0.712 – 0.92");
  assert.equal(intervalTitle(null), undefined);
});

test("the agent table's accuracy cell is drawn by it", () => {
  const s = { numChunks: 10, n: 20, accuracy: 0.65, ci: { low: 0.4329, high: 0.8188 }, coverage: 0.9, meanSteps: 2, meanCalls: 3, meanRetrieved: 4, promptTokens: 100, completionTokens: 10, msPerSample: 12, failures: 0, failureKinds: {}, forced: {} } as unknown as AgentSummary;
  const html = renderToStaticMarkup(createElement(AgentTable, { summaries: [s] }));
  const cell = /<td[^>]*data-testid="agent-accuracy"[^>]*>(.*?)<\/td>/.exec(html)?.[1] ?? "";
  assert.equal(text(cell), "0.65 [0.43, 0.82]");
  assert.match(cell, /data-testid="value-interval"/);
});
