"use client";
import { useSyncExternalStore } from "react";
import { getUiSocket } from "../socket.ts";

export type SocketState = "connecting" | "live" | "offline";

// "offline" only once a connection was lost or refused: before the first connect the page is
// still starting, and a red badge there would cry wolf on every load
let failed = false;

function subscribe(onChange: () => void) {
  const s = getUiSocket();
  const down = () => {
    failed = true;
    onChange();
  };
  s.on("connect", onChange);
  s.on("disconnect", down);
  s.on("connect_error", down);
  return () => {
    s.off("connect", onChange);
    s.off("disconnect", down);
    s.off("connect_error", down);
  };
}

/** The /ui socket: live, still connecting for the first time, or offline (lost or refused). */
export function useSocketState(): SocketState {
  return useSyncExternalStore(subscribe, () => (getUiSocket().connected ? "live" : failed ? "offline" : "connecting"), () => "connecting");
}

/** Whether the /ui socket is connected (false during server rendering). */
export function useSocketConnected(): boolean {
  return useSocketState() === "live";
}
