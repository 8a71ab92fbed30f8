"use client";
/** One socket.io connection to the /ui namespace per browser tab, shared by all hooks. */
import { io, type Socket } from "socket.io-client";
import { UI_NAMESPACE, type ServerToUi, type UiToServer } from "./contracts/index.ts";

export type UiSocket = Socket<ServerToUi, UiToServer>;
let socket: UiSocket | null = null;

export function getUiSocket(): UiSocket {
  if (!socket) {
    // websocket first (lowest latency); long-polling stays as the fallback
    socket = io(UI_NAMESPACE, { transports: ["websocket", "polling"], reconnectionDelayMax: 3_000 });
  }
  return socket;
}
