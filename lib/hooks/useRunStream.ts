"use client";
/**
 * Live tail of one run: subscribes on the /ui socket with the last sequence number the query
 * cache holds, and folds every "run:batch" into the cached metrics, logs and episodes (no
 * refetch; the run's own state arrives as "runs:state", see useRunsState). Batches are applied strictly in seq order: an early one is held back, and a gap
 * (seq ≠ last + 1) re-subscribes from the last applied seq so the server catches it up on what is missing.
 * After a reconnect the hook re-subscribes from the last applied seq as well.
 */
import { useEffect } from "react";
import { useQueryClient, type Query, type QueryClient } from "@tanstack/react-query";
import { getUiSocket } from "../socket.ts";
import { useSocketConnected } from "./useSocketConnected.ts";
import type { EpisodeDto, LogLineDto, MetricsDto, RunBatchMsg, RunDetailDto } from "../contracts/index.ts";
import { BatchSequencer, batchHas, mergeEpisodes, mergeLogs, mergeMetrics } from "../stream-merge.ts";
import { qk, type EpisodesParams, type MetricsParams } from "./keys.ts";

export interface RunStreamState {
  connected: boolean;
}

const RESYNC_WAIT_MS = 2_000;

function applyBatch(qc: QueryClient, runId: string, msg: RunBatchMsg) {
  const cache = qc.getQueryCache();
  for (const q of cache.findAll({ queryKey: qk.metricsAll(runId) })) {
    const data = q.state.data as MetricsDto | undefined;
    if (!data) continue;
    const params = q.queryKey[3] as MetricsParams;
    const next = mergeMetrics(data, msg, params.keys);
    if (next !== data) qc.setQueryData(q.queryKey, next);
  }
  if (batchHas(msg, "log")) {
    for (const q of cache.findAll({ queryKey: qk.logsAll(runId) })) {
      const data = q.state.data as LogLineDto[] | undefined;
      if (data) qc.setQueryData(q.queryKey, mergeLogs(data, msg, (q.queryKey[3] as { limit: number }).limit));
    }
  }
  if (batchHas(msg, "episode")) {
    for (const q of cache.findAll({ queryKey: qk.episodesAll(runId) })) {
      const data = q.state.data as EpisodeDto[] | undefined;
      const p = q.queryKey[3] as EpisodesParams;
      if (data) qc.setQueryData(q.queryKey, mergeEpisodes(data, msg, p.limit, p.phase));
    }
  }
}

/** Lowest watermark among the loaded entries that take batches (null: nothing loaded yet). */
function cacheWatermark(qc: QueryClient, runId: string): number | null {
  let w: number | null = null;
  const take = (s: number) => (w = w === null ? s : Math.min(w, s));
  for (const q of qc.getQueryCache().findAll({ queryKey: qk.metricsAll(runId) })) {
    const d = q.state.data as MetricsDto | undefined;
    if (d) take(d.lastSeq);
  }
  const run = qc.getQueryData<RunDetailDto>(qk.run(runId));
  if (run) take(run.lastSeq);
  return w;
}

const isRunEntry = (q: Query, runId: string) => q.queryKey[0] === "run" && q.queryKey[1] === runId && (q.queryKey.length === 2 || q.queryKey[2] === "metrics");

export function useRunStream(runId: string | undefined): RunStreamState {
  const qc = useQueryClient();
  const connected = useSocketConnected();

  useEffect(() => {
    if (!runId) return;
    const socket = getUiSocket();
    const cache = qc.getQueryCache();
    const seq = new BatchSequencer(RESYNC_WAIT_MS);
    const timers = new Map<string, ReturnType<typeof setTimeout>>();
    const later = (name: string, ms: number, fn: () => void) => {
      if (timers.has(name)) return;
      timers.set(name, setTimeout(() => (timers.delete(name), fn()), ms));
    };

    const subscribe = (afterSeq: number) => {
      seq.subscribed(afterSeq, Date.now());
      socket.emit("subscribe", { runId, afterSeq }, () => {});
    };
    const start = () => {
      if (!socket.connected) return;
      if (seq.cursor >= 0) return subscribe(seq.cursor);
      const w = cacheWatermark(qc, runId);
      if (w !== null) subscribe(w);
    };

    const onBatch = (msg: RunBatchMsg) => {
      if (msg.runId !== runId) return;
      const { apply, resubscribe } = seq.push(msg, Date.now());
      // a gap: ask the server to catch us up from what we have
      if (resubscribe) subscribe(seq.cursor);
      for (const b of apply) {
        applyBatch(qc, runId, b);
        if (batchHas(b, "episode")) later("episodes", 1_500, () => void qc.invalidateQueries({ queryKey: qk.episodesAll(runId) }));
        // the detail's checkpoint list comes from the database
        if (batchHas(b, "checkpoint") || batchHas(b, "run_end")) later("run", 500, () => void qc.invalidateQueries({ queryKey: qk.run(runId), exact: true }));
      }
    };

    // An entry (re)loaded over REST behind the stream's cursor needs the batches after its watermark.
    const unsubscribeCache = cache.subscribe((ev) => {
      if (ev.type !== "updated" || ev.action.type !== "success" || ev.action.manual || !isRunEntry(ev.query, runId)) return;
      const w = cacheWatermark(qc, runId);
      if (w === null || !socket.connected) return;
      if (seq.cursor < 0 || w < seq.cursor) subscribe(w);
    });

    socket.on("connect", start); // also after every reconnect: resume from the cursor
    socket.on("run:batch", onBatch);
    start();

    return () => {
      socket.off("connect", start);
      socket.off("run:batch", onBatch);
      unsubscribeCache();
      timers.forEach((t) => clearTimeout(t));
      if (socket.connected) socket.emit("unsubscribe", { runId });
    };
  }, [runId, qc]);

  return { connected };
}
