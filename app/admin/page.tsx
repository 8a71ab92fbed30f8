"use client";
/** Admin: users (add, role, disable), worker tokens (create, revoke) and the latest 200 audit events. All names render as text. */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { TokenList } from "../../components/TokenList.tsx";
import { apiGet, apiPatch, apiPost } from "../../lib/api.ts";
import { ROLES, type AuditEventDto, type Role, type UserDto } from "../../lib/contracts/index.ts";
import { fmtDateTime } from "../../lib/format.ts";
import { useMe } from "../../lib/hooks/useMe.ts";

function Users() {
  const qc = useQueryClient();
  const users = useQuery({ queryKey: ["users"], queryFn: ({ signal }) => apiGet<UserDto[]>("/api/users", signal) });
  const [form, setForm] = useState({ name: "", password: "", role: "member" as Role });
  const [error, setError] = useState<string | null>(null);
  const act = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      await qc.invalidateQueries({ queryKey: ["users"] });
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const add = (e: FormEvent) => {
    e.preventDefault();
    void act(async () => {
      await apiPost("/api/users", form);
      setForm({ name: "", password: "", role: "member" });
    });
  };
  return (
    <section className="panel stack">
      <h3 style={{ margin: 0 }}>Users</h3>
      <form className="row" onSubmit={add}>
        <input placeholder="name" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} maxLength={64} required />
        <input placeholder="password (10+ characters)" type="password" autoComplete="new-password" value={form.password} onChange={(e) => setForm({ ...form, password: e.target.value })} maxLength={256} required />
        <select value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value as Role })}>
          {ROLES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
        <button type="submit">Add user</button>
        {error && <span className="error-text small">{error}</span>}
      </form>
      <table>
        <thead>
          <tr>
            <th>name</th>
            <th>role</th>
            <th>created</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(users.data ?? []).map((u) => (
            <tr key={u.id}>
              <td>{u.name}</td>
              <td>
                <select value={u.role} onChange={(e) => void act(() => apiPatch(`/api/users/${u.id}`, { role: e.target.value }))}>
                  {ROLES.map((r) => (
                    <option key={r}>{r}</option>
                  ))}
                </select>
              </td>
              <td className="muted">{fmtDateTime(u.createdAt)}</td>
              <td>
                <button className={u.disabled ? "" : "danger"} onClick={() => void act(() => apiPatch(`/api/users/${u.id}`, { disabled: !u.disabled }))}>
                  {u.disabled ? "Enable" : "Disable"}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Audit() {
  const events = useQuery({ queryKey: ["audit"], queryFn: ({ signal }) => apiGet<AuditEventDto[]>("/api/audit", signal), refetchInterval: 10_000 });
  return (
    <section className="panel stack">
      <h3 style={{ margin: 0 }}>Audit trail (latest 200)</h3>
      <table data-testid="audit">
        <thead>
          <tr>
            <th>when</th>
            <th>who</th>
            <th>action</th>
            <th>target</th>
            <th>detail</th>
          </tr>
        </thead>
        <tbody>
          {(events.data ?? []).map((e) => (
            <tr key={e.id}>
              <td className="muted">{fmtDateTime(e.at)}</td>
              <td>{e.actor}</td>
              <td className="mono">{e.action}</td>
              <td className="mono">{e.targetKind ? `${e.targetKind} ${e.targetId ?? ""}` : ""}</td>
              <td className="mono small">{Object.keys(e.detail).length ? JSON.stringify(e.detail) : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export default function AdminPage() {
  const me = useMe();
  if (me.data && me.data.role !== "admin") return <main className="muted">The admin page needs the admin role.</main>;
  return (
    <main className="stack">
      <h2 style={{ margin: 0 }}>Admin</h2>
      <Users />
      <section className="panel stack">
        <h3 style={{ margin: 0 }}>Worker tokens</h3>
        <p className="muted small">One per remote worker (npm run worker -- --url … --token …). Revoking one disconnects its worker at once.</p>
        <TokenList url="/api/worker-tokens" revoke={(id) => apiPost(`/api/worker-tokens/${id}/revoke`)} testid="worker-tokens" />
      </section>
      <Audit />
    </main>
  );
}
