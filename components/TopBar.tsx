"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { useWorkers } from "../lib/hooks/useWorkers.ts";
import { useQueues } from "../lib/hooks/useQueues.ts";
import { useSocketState } from "../lib/hooks/useSocketConnected.ts";
import { UserBadge } from "./UserBadge.tsx";

export function TopBar() {
  const path = usePathname();
  const workers = useWorkers();
  const socket = useSocketState();
  // waiting runs per queue: shown only where there is more than the connected workers' queue
  const queues = useQueues().data ?? [];
  const list = workers.data ?? [];
  const online = list.filter((w) => w.status !== "offline");
  const title = list.map((w) => `${w.name} (${w.backend}/${w.device}) ${w.status}`).join("\n") || "no workers registered";
  return (
    <header className="topbar">
      <Link href="/" className="brand">
        Q-RAG Studio
      </Link>
      <nav>
        <Link href="/" className={path === "/" ? "active" : ""}>
          Runs
        </Link>
        <Link href="/runs/new" className={path === "/runs/new" ? "active" : ""}>
          New run
        </Link>
        <Link href="/dashboards" className={path.startsWith("/dashboards") || path === "/compare" ? "active" : ""} data-testid="nav-dashboards">
          Dashboards
        </Link>
        <Link href="/import" className={path === "/import" ? "active" : ""}>
          Import
        </Link>
        <Link href="/playground" className={path === "/playground" ? "active" : ""} data-testid="nav-playground">
          Playground
        </Link>
      </nav>
      <span className="spacer" />
      {queues.length > 1 && (
        <span className="workers" data-testid="queue-counts" title={queues.map((q) => `${q.name}: ${q.pending} waiting, ${q.running} running`).join("\n")}>
          {queues.map((q) => (
            <Link key={q.name} href={`/?queue=${encodeURIComponent(q.name)}`} className="badge plain" data-testid="queue-count" data-queue={q.name} data-pending={q.pending}>
              {q.name} {q.pending} waiting
            </Link>
          ))}
        </span>
      )}
      <span className="workers" title={title} data-testid="workers-count">
        <span className={`badge ${workers.isLoading ? "plain" : online.length ? "ok" : "off"}`}>
          {workers.isLoading ? "workers …" : `${online.length} worker${online.length === 1 ? "" : "s"} online`}
        </span>
        <span className={`badge ${socket === "live" ? "ok" : socket === "offline" ? "off" : "plain"}`} title="live updates (socket.io)" data-testid="socket-badge" data-state={socket}>
          {socket === "live" ? "live" : socket === "offline" ? "offline" : "connecting…"}
        </span>
      </span>
      <UserBadge />
    </header>
  );
}
