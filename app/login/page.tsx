"use client";
/** Sign-in (only shown when the server requires accounts). Errors and names are rendered as text. */
import { useState, type FormEvent } from "react";

/** Where to go after signing in: a path on this site only (never //evil.example). */
function nextPath(): string {
  const n = new URLSearchParams(window.location.search).get("next") ?? "/";
  return n.startsWith("/") && !n.startsWith("//") && !n.startsWith("/\\") ? n : "/";
}

export default function LoginPage() {
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await fetch("/api/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name, password }) });
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { error?: string };
        setError(body.error ?? `sign-in failed (HTTP ${res.status})`);
        return;
      }
      // a full load, so the live socket connects with the new session cookie
      window.location.assign(nextPath());
    } finally {
      setBusy(false);
    }
  };

  return (
    <main>
      <form className="panel stack" style={{ maxWidth: 360, margin: "40px auto" }} onSubmit={(e) => void submit(e)} data-testid="login-form">
        <h2 style={{ margin: 0 }}>Sign in</h2>
        <div className="field">
          <label htmlFor="login-name">name</label>
          <input id="login-name" autoComplete="username" value={name} onChange={(e) => setName(e.target.value)} maxLength={64} required />
        </div>
        <div className="field">
          <label htmlFor="login-password">password</label>
          <input id="login-password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} maxLength={256} required />
        </div>
        {error && (
          <p className="error-text" role="alert" data-testid="login-error">
            {error}
          </p>
        )}
        <button className="primary" type="submit" disabled={busy}>
          Sign in
        </button>
        <p className="muted small">No account? An admin adds one on the Admin page or with npm run user -- add NAME.</p>
      </form>
    </main>
  );
}
