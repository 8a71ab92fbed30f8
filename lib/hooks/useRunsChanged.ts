"use client";
/**
 * Keeps the runs table and run details fresh: the server emits "runs:changed" {runIds} whenever a
 * run's status, summary or progress changes. Lists are refetched at most once a second; a run with
 * a live stream in this tab already gets its progress from the batches, so its detail is refetched
 * (for server-side changes such as a lost lease) at most every few seconds.
 */
import { useEffect } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { getUiSocket } from "../socket.ts";
import type { RunsChangedMsg } from "../protocol.ts";
import { qk } from "./keys.ts";
import { streamedRuns } from "./useRunStream.ts";

const LIST_EVERY_MS = 1_000;
const DETAIL_EVERY_MS = 1_000;
const STREAMED_DETAIL_EVERY_MS = 4_000;

export function useRunsChanged() {
  const qc = useQueryClient();
  useEffect(() => {
    const socket = getUiSocket();
    const timers = new Map<string, ReturnType<typeof setTimeout>>();
    const throttle = (name: string, ms: number, fn: () => void) => {
      if (timers.has(name)) return;
      timers.set(name, setTimeout(() => (timers.delete(name), fn()), ms));
    };
    const onChanged = (msg: RunsChangedMsg) => {
      throttle("list", LIST_EVERY_MS, () => void qc.invalidateQueries({ queryKey: qk.runs() }));
      for (const id of msg.runIds ?? []) {
        if (!qc.getQueryData(qk.run(id))) continue;
        throttle(`run:${id}`, streamedRuns.has(id) ? STREAMED_DETAIL_EVERY_MS : DETAIL_EVERY_MS, () =>
          void qc.invalidateQueries({ queryKey: qk.run(id), exact: true }),
        );
      }
    };
    // after a reconnect, anything may have changed while we were away
    const onReconnect = () => void qc.invalidateQueries({ queryKey: qk.runs() });
    socket.on("runs:changed", onChanged);
    socket.io.on("reconnect", onReconnect);
    return () => {
      socket.off("runs:changed", onChanged);
      socket.io.off("reconnect", onReconnect);
      timers.forEach((t) => clearTimeout(t));
    };
  }, [qc]);
}
