"use client";
/** A list of tokens (personal or worker) with create and revoke; a new secret is shown once. */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { apiGet, apiPost } from "../lib/api.ts";
import type { NewTokenDto, TokenDto } from "../lib/contracts/index.ts";
import { fmtDateTime } from "../lib/format.ts";

export function TokenList({ url, revoke, testid }: { url: string; revoke: (id: number) => Promise<unknown>; testid: string }) {
  const qc = useQueryClient();
  const tokens = useQuery({ queryKey: ["tokens", url], queryFn: ({ signal }) => apiGet<TokenDto[]>(url, signal) });
  const [label, setLabel] = useState("");
  const [fresh, setFresh] = useState<NewTokenDto | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: ["tokens", url] });

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      setFresh(await apiPost<NewTokenDto>(url, { name: label }));
      setLabel("");
      await refresh();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <div className="stack" data-testid={testid}>
      <form className="row" onSubmit={(e) => void create(e)}>
        <input placeholder="label (e.g. ci, gpu-box)" value={label} onChange={(e) => setLabel(e.target.value)} maxLength={64} required />
        <button type="submit">Create token</button>
        {error && <span className="error-text small">{error}</span>}
      </form>
      {fresh && (
        <p className="small" data-testid="token-secret">
          New token <b>{fresh.name}</b> (copy it now, it is not shown again): <code>{fresh.secret}</code>
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>label</th>
            <th>prefix</th>
            <th>created</th>
            <th>last used</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(tokens.data ?? []).map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td className="mono">{t.prefix}…</td>
              <td className="muted">{fmtDateTime(t.createdAt)}</td>
              <td className="muted">{t.lastUsedAt ? fmtDateTime(t.lastUsedAt) : "never"}</td>
              <td>{t.revokedAt ? <span className="muted">revoked</span> : <button className="danger" onClick={() => void revoke(t.id).then(refresh)}>Revoke</button>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
