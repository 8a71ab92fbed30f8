/**
 * An uploaded `qrag agent --out` file (the R3-RAG-style agent, issue 30) stored as a completed
 * sweep job of the run it is compared with: a Run of kind "sweep" whose spec says source "agent",
 * one SweepPoint row per summary row (its `point` holds the AgentSummary) and one Episode row
 * (phase "agent") per sample row (its `record` holds the AgentSample). So the sweep list, the
 * chart overlays, cancel/delete and the replay player's episode routes serve it unchanged; only
 * the readers of `point` and `record` look at the source/phase first (sweepDtos, getEpisode).
 */
import type { AgentSample, AgentSummary, AgentUpload, SweepDto, SweepSpec } from "../../lib/contracts/index.ts";
import { AGENT_PHASE, MAX_AGENT_SAMPLES_PER_LENGTH, MAX_AGENT_STEPS, MAX_SWEEP_CHUNKS, agentRowSchema } from "../../lib/contracts/index.ts";
import type { Db, DbHandle } from "../db/client.ts";
import { insertRows } from "../db/bulk-insert.ts";
import { badRequest, conflict, notFound } from "./errors.ts";
import { newRunId, type RunsDeps } from "./service.ts";
import { completedSweepRun, parseJsonl, sweepDtos } from "./sweeps.ts";

const MAX_LENGTHS = 8;

/** How an agent evaluation is named on the chart and in the sweep list. */
export const agentLabel = (model: string, retriever: string) => `R3-style agent (${model}, ${retriever})`.slice(0, 200);

/** Everything wrong with the rows, keyed "file line N" (or the file); never a line's text. */
function check(file: string, samples: { line: number; value: AgentSample }[], summaries: { line: number; value: AgentSummary }[], errors: Record<string, string>): void {
  if (!summaries.length && !Object.keys(errors).length) errors[file] = "no summary rows (expected sample rows, then one summary row per length, as `qrag agent --out` writes)";
  if (summaries.length > MAX_LENGTHS) errors[file] = `at most ${MAX_LENGTHS} lengths per evaluation (got ${summaries.length})`;
  const byLength = new Map<number, number>();
  const first = summaries[0]?.value;
  for (const { line, value: s } of summaries) {
    const where = `${file} line ${line}`;
    if (s.numChunks < 2 || s.numChunks > MAX_SWEEP_CHUNKS) errors[where] = `numChunks: ${s.numChunks} is outside 2 … ${MAX_SWEEP_CHUNKS}`;
    else if (byLength.has(s.numChunks)) errors[where] = `numChunks: ${s.numChunks} repeats line ${byLength.get(s.numChunks)}`;
    else if (s.model !== first.model || s.retriever !== first.retriever) errors[where] = "model: one evaluation per file (its model and retriever differ from the first summary row's)";
    byLength.set(s.numChunks, line);
  }
  const seen = new Map<string, number>();
  const perLength = new Map<number, number>();
  for (const { line, value: e } of samples) {
    const where = `${file} line ${line}`;
    const key = `${e.num_chunks}:${e.id}`;
    const count = (perLength.get(e.num_chunks) ?? 0) + 1;
    perLength.set(e.num_chunks, count);
    const badStep = e.steps.findIndex((st) => st.ids?.some((i) => i < 0 || i >= e.num_chunks));
    const badIdx = [...e.sf_idx, ...e.pred_idx].some((i) => i < 0 || i >= e.num_chunks);
    if (!byLength.has(e.num_chunks)) errors[where] = `num_chunks: ${e.num_chunks} has no summary row in ${file}`;
    else if (seen.has(key)) errors[where] = `id: sample ${JSON.stringify(e.id.slice(0, 80))} at ${e.num_chunks} chunks repeats line ${seen.get(key)}`;
    else if (count > MAX_AGENT_SAMPLES_PER_LENGTH) errors[where] = `num_chunks: at most ${MAX_AGENT_SAMPLES_PER_LENGTH} samples per length`;
    else if (e.steps.length > MAX_AGENT_STEPS) errors[where] = `steps: at most ${MAX_AGENT_STEPS} steps per sample (got ${e.steps.length})`;
    else if (badStep >= 0) errors[where] = `steps.${badStep}.ids: a chunk id outside the haystack (0 … ${e.num_chunks - 1})`;
    else if (badIdx) errors[where] = `sf_idx/pred_idx: a chunk id outside the haystack (0 … ${e.num_chunks - 1})`;
    else if (e.sf_texts && e.sf_texts.length !== e.sf_idx.length) errors[where] = `sf_texts: ${e.sf_texts.length} texts for ${e.sf_idx.length} supporting facts (sf_idx)`;
    seen.set(key, line);
  }
}

/** Stores the file in one transaction: any bad line (named by file, line and field) leaves nothing behind. */
export async function uploadAgent(h: DbHandle, runId: string, body: AgentUpload, deps: RunsDeps): Promise<SweepDto> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { name: true, kind: true, envName: true, task: true } });
  if (!run) throw notFound(`run ${runId}`);
  if (run.kind === "sweep") throw conflict(`run ${runId} is a sweep job; upload to the run it evaluates`);
  const errors: Record<string, string> = {};
  const rows = parseJsonl(body.file.name, body.file.text, agentRowSchema, errors);
  const samples = rows.flatMap((r) => (r.value.type === "sample" ? [{ line: r.line, value: r.value }] : []));
  const summaries = rows.flatMap((r) => (r.value.type === "summary" ? [{ line: r.line, value: r.value }] : []));
  check(body.file.name, samples, summaries, errors);
  if (Object.keys(errors).length) throw badRequest(`invalid agent file: ${Object.keys(errors).slice(0, 5).join("; ")}`, errors);

  const { model, retriever } = summaries[0].value;
  const sorted = summaries.map((s) => s.value).sort((a, b) => a.numChunks - b.numChunks);
  const spec: SweepSpec = {
    checkpoint: "uploaded",
    checkpointLabel: agentLabel(model, retriever),
    lengths: sorted.map((s) => s.numChunks),
    samples: Math.max(...sorted.map((s) => s.n)),
    threshold: 0,
    baselines: false,
    oracleStop: false,
    source: "agent",
    agent: { model: model.slice(0, 300), retriever: retriever.slice(0, 300) },
  };
  const id = newRunId();
  await h.write((db) =>
    db.$transaction(
      async (tx) => {
        await tx.run.create({ data: completedSweepRun(id, runId, run, spec, body.name, samples.length, deps.actor) });
        // tokens: the agent does not measure its haystack; the chart places it at Q-RAG's x for the same length
        await tx.sweepPoint.createMany({ data: sorted.map((s) => ({ runId: id, numChunks: s.numChunks, tokens: 0, samples: s.n, point: JSON.stringify(s) })) });
        await insertRows(
          tx as unknown as Db, h.provider, "Episode",
          ["runId", "seq", "phase", "step", "update", "sampleId", "numChunks", "coverage", "f1", "return", "record"],
          samples.map(({ value: e }) => [id, 0, AGENT_PHASE, 0, 0, e.id, e.num_chunks, e.metrics.coverage, e.metrics.f1, e.correct, JSON.stringify(e)]),
          { paramsPerStatement: 9000 },
        );
      },
      { maxWait: 20_000, timeout: 120_000 },
    ),
  );
  deps.notifier.changed([id]);
  const [created] = await sweepDtos(h, { id });
  return created;
}
