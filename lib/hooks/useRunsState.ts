"use client";
/**
 * Keeps the runs table and run details fresh: the server broadcasts "runs:state" with every run
 * whose status, summary, progress or worker changed, as it derived them; they are merged into the
 * cache (run-cache.ts). A list is refetched (at most once a second) only when a run it may now
 * include or exclude changed (a run it does not hold yet, a status change, a deleted run), or when
 * its chosen columns or filter depend on a summary that moved (run-cache.ts `stale`).
 */
import { useEffect } from "react";
import { useQueryClient, type QueryKey } from "@tanstack/react-query";
import { getUiSocket } from "../socket.ts";
import type { RunListDto, RunsStateMsg } from "../contracts/index.ts";
import { putRuns } from "../run-cache.ts";
import { qk } from "./keys.ts";

const LIST_EVERY_MS = 1_000;

function statusChanged(qc: ReturnType<typeof useQueryClient>, msg: RunsStateMsg): boolean {
  const status = new Map(msg.runs.map((r) => [r.id, r.status]));
  for (const q of qc.getQueryCache().findAll({ queryKey: qk.runs() })) {
    for (const r of (q.state.data as RunListDto | undefined)?.runs ?? []) if (status.has(r.id) && status.get(r.id) !== r.status) return true;
  }
  return false;
}

export function useRunsState() {
  const qc = useQueryClient();
  useEffect(() => {
    const socket = getUiSocket();
    let timer: ReturnType<typeof setTimeout> | null = null;
    // all lists, or only those named (their columns or filter went stale), at most once a second
    let pending: QueryKey[] | "all" = [];
    const refetchLists = (which: QueryKey[] | "all") => {
      pending = which === "all" || pending === "all" ? "all" : [...pending, ...which];
      timer ??= setTimeout(() => {
        timer = null;
        const keys = pending;
        pending = [];
        if (keys === "all") void qc.invalidateQueries({ queryKey: qk.runs() });
        else for (const queryKey of keys) void qc.invalidateQueries({ queryKey, exact: true });
      }, LIST_EVERY_MS);
    };
    const onState = (msg: RunsStateMsg) => {
      const refetch = statusChanged(qc, msg) || msg.gone.length > 0;
      // sweep jobs are never in the runs table: one that no list holds needs no refetch
      const sweeps = new Set(msg.runs.filter((r) => r.kind === "sweep").map((r) => r.id));
      const put = putRuns(qc, msg.runs);
      // a new run or a status change moves the top bar's per-queue counts
      if (put.unlisted.length || refetch) void qc.invalidateQueries({ queryKey: qk.queues(), exact: true });
      if (put.unlisted.some((id) => !sweeps.has(id)) || refetch) refetchLists("all");
      else if (put.stale.length) refetchLists(put.stale);
    };
    // after a reconnect, anything may have changed while we were away
    const onReconnect = () => void qc.invalidateQueries({ queryKey: qk.runs() });
    socket.on("runs:state", onState);
    socket.io.on("reconnect", onReconnect);
    return () => {
      socket.off("runs:state", onState);
      socket.io.off("reconnect", onReconnect);
      if (timer) clearTimeout(timer);
    };
  }, [qc]);
}
