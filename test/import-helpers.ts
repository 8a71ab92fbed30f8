/**
 * Helpers of the import tests: a finished run written straight into a database (points of several
 * keys, eval episodes at two updates), and its files downloaded through the export API.
 */
import type { EpisodeRecord, MetricKey } from "../lib/contracts/index.ts";
import { EXPORT_FILES } from "../lib/contracts/index.ts";
import type { DbHandle } from "../server/db/client.ts";
import { describeConfig, resolveConfig } from "../server/qrag/index.ts";

export function episodeRecord(id: string, pred: number[], gold: number[], q: number[]): EpisodeRecord {
  const hit = pred.filter((p) => gold.includes(p)).length;
  const precision = pred.length ? hit / pred.length : 0;
  const recall = gold.length ? hit / gold.length : 0;
  const f1 = precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
  const metrics = { precision, recall, f1, coverage: hit === gold.length ? 1 : 0 };
  return {
    id, question: `Where is item ${id}?`, answer: "garden", sf_idx: gold, pred_idx: pred, q_values: q,
    sf_texts: gold.map((g) => `fact ${g} <b>not markup</b>`), pred_texts: pred.map((p) => `chunk ${p}`),
    return: metrics.coverage, num_chunks: 20, text_len: 640, oracle_stop: true, metrics,
    filtered: { ...metrics, threshold: 0.5, kept: pred.length },
    steps: pred.map((p, i) => ({ index: p, text: `chunk ${p}`, position: i * 20 + 3, q: q[i], q1: q[i] - 0.01, q2: q[i] + 0.01, gold: gold.includes(p), reward: gold.includes(p) ? 0.5 : 0, topk: [{ index: p, q: q[i], gold: gold.includes(p) }] })),
  };
}

export interface SeededRun {
  id: string;
  points: number;
  episodes: EpisodeRecord[];
}

const KEYS: MetricKey[] = ["qf_loss", "train_return", "eval_return", "eval_coverage", "lr"];

/** A completed training run with `steps` points per key (values not float32-exact) and 2×3 episodes. */
export async function seedFinishedRun(h: DbHandle, name: string, steps = 25): Promise<SeededRun> {
  const id = `seed${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  const points = KEYS.flatMap((key, k) =>
    Array.from({ length: steps }, (_, i) => ({ runId: id, key, step: (i + 1) * 40, update: i + 1, wall: 0.123 * (i + 1) + k / 1000, value: Math.sin(i + k) / 3 + k + 1e-9 * i })),
  );
  const episodes = [0, 1, 2].flatMap((j) => [episodeRecord(`s${j}`, [j, 7, 9], [j, 9], [0.91, 0.42, 0.77]), episodeRecord(`s${j}`, [j, 9], [j, 9], [0.95, 0.88])]);
  const config = resolveConfig({ preset: "tiny" });
  const { envName, task } = describeConfig(config);
  await h.prisma.run.create({
    data: {
      id, name, status: "completed", config: JSON.stringify(config), envName, task, startedAt: new Date(Date.now() - 60_000), finishedAt: new Date(),
      summary: JSON.stringify({ qf_loss: points.findLast((p) => p.key === "qf_loss")!.value }),
    },
  });
  await h.prisma.metricPoint.createMany({ data: points });
  await h.prisma.episode.createMany({
    data: episodes.map((r, i) => ({ runId: id, seq: 1, phase: "eval", step: i % 2 ? 1000 : 500, update: i % 2 ? 25 : 12, sampleId: r.id, coverage: r.metrics.coverage, f1: r.metrics.f1, return: r.return, record: JSON.stringify(r) })),
  });
  return { id, points: points.length, episodes };
}

/** Every export of a run as downloaded: [file name from Content-Disposition, bytes]. */
export async function downloadExports(base: string, runId: string): Promise<{ name: string; bytes: Buffer }[]> {
  return Promise.all(
    EXPORT_FILES.map(async (f) => {
      const res = await fetch(`${base}/api/runs/${runId}/export/${f}`);
      if (!res.ok) throw new Error(`export ${f}: HTTP ${res.status}`);
      const name = /filename="([^"]+)"/.exec(res.headers.get("content-disposition") ?? "")?.[1] ?? f;
      return { name, bytes: Buffer.from(await res.arrayBuffer()) };
    }),
  );
}
