"use client";
/** One socket.io connection to the /ui namespace per browser tab, shared by all hooks. */
import { io, type Socket } from "socket.io-client";
import { UI_NAMESPACE } from "./protocol.ts";

let socket: Socket | null = null;

export function getUiSocket(): Socket {
  if (!socket) {
    // websocket first (lowest latency); long-polling stays as the fallback
    socket = io(UI_NAMESPACE, { transports: ["websocket", "polling"], reconnectionDelayMax: 3_000 });
  }
  return socket;
}
