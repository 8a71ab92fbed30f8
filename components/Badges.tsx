import type { RunStatus } from "../lib/contracts/index.ts";

export function StatusBadge({ status }: { status: RunStatus | string }) {
  return (
    <span className={`badge status-${status}`} data-testid="status-badge" data-status={status}>
      <span className="dot" />
      {status}
    </span>
  );
}

export function BackendBadge({ backend, device }: { backend: string | null; device: string | null }) {
  if (!backend) return <span className="badge plain">backend —</span>;
  return (
    <span className="badge plain" title="tfjs backend and device" data-testid="backend-badge">
      {backend}
      {device ? ` · ${device}` : ""}
    </span>
  );
}

export function WorkerBadge({ name, online }: { name: string | null; online: boolean | null }) {
  if (!name) return <span className="badge plain">no worker</span>;
  return (
    <span className={`badge ${online === false ? "off" : "ok"}`} title={online === false ? "worker offline" : "worker"} data-testid="worker-badge">
      worker {name}
      {online === false ? " (offline)" : ""}
    </span>
  );
}

export function Progress({ done, total, wide }: { done: number; total: number; wide?: boolean }) {
  const pct = total > 0 ? Math.min(100, (100 * done) / total) : 0;
  return (
    <span className="row" style={{ gap: 6 }} title={`${done} / ${total}`}>
      <span className={`progress${wide ? " wide" : ""}`}>
        <div style={{ width: `${pct}%` }} />
      </span>
      <span className="muted small num">{total > 0 ? `${Math.round(pct)}%` : ""}</span>
    </span>
  );
}

/** Marks runs that did not train here (kind "imported"); training runs get none. */
export function KindBadge({ kind }: { kind: string }) {
  if (kind !== "imported") return null;
  return (
    <span className="badge plain" title="imported from files: read-only" data-testid="kind-badge" data-kind={kind}>
      imported
    </span>
  );
}
