"use client";
import Link from "next/link";
import { signOut, useMe } from "../lib/hooks/useMe.ts";

/** Who is signed in, with links to their tokens (and /admin for admins) and sign-out; nothing when no sign-in is required. */
export function UserBadge() {
  const me = useMe();
  if (!me.data?.authRequired) return null;
  return (
    <span className="row small" data-testid="user-badge">
      <Link href="/account" title={`signed in as ${me.data.name} (${me.data.role})`} data-testid="user-name">
        {me.data.name}
      </Link>
      <span className="muted">{me.data.role}</span>
      {me.data.role === "admin" && <Link href="/admin">Admin</Link>}
      <button className="link" onClick={() => void signOut()} data-testid="sign-out">
        Sign out
      </button>
    </span>
  );
}
