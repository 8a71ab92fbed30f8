"use client";
import { useSyncExternalStore } from "react";
import { getUiSocket } from "../socket.ts";

function subscribe(onChange: () => void) {
  const s = getUiSocket();
  s.on("connect", onChange);
  s.on("disconnect", onChange);
  return () => {
    s.off("connect", onChange);
    s.off("disconnect", onChange);
  };
}

/** Whether the /ui socket is connected (false during server rendering). */
export function useSocketConnected(): boolean {
  return useSyncExternalStore(subscribe, () => getUiSocket().connected, () => false);
}
