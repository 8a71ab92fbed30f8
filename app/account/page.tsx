"use client";
/** One's own personal API tokens (for scripts and `npm run import`). */
import { TokenList } from "../../components/TokenList.tsx";
import { apiDelete } from "../../lib/api.ts";
import { useMe } from "../../lib/hooks/useMe.ts";

export default function AccountPage() {
  const me = useMe();
  return (
    <main className="stack">
      <h2 style={{ margin: 0 }}>{me.data ? `${me.data.name} (${me.data.role})` : "Account"}</h2>
      <section className="panel stack">
        <h3 style={{ margin: 0 }}>Personal API tokens</h3>
        <p className="muted small">Send one as Authorization: Bearer … from scripts, or set QRAG_TOKEN for npm run import.</p>
        {me.data?.authRequired === false ? (
          <p className="muted">This server does not require sign-in, so there are no personal tokens.</p>
        ) : (
          <TokenList url="/api/tokens" revoke={(id) => apiDelete(`/api/tokens?id=${id}`)} testid="personal-tokens" />
        )}
      </section>
    </main>
  );
}
