/**
 * Passwords and opaque secrets. Passwords are hashed with argon2id (@node-rs/argon2, its
 * defaults: 19 MiB, 2 passes); session cookies and API/worker tokens are 32 random bytes whose
 * sha256 is all the database keeps, so a copied table cannot be presented as credentials.
 */
import crypto from "node:crypto";
import { hash, verify } from "@node-rs/argon2";

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false; // a malformed stored hash is a failed login, not a 500
  }
}

/**
 * A dummy hash verified when the user does not exist, so "unknown user" costs the same time as
 * "wrong password" and the two cannot be told apart by timing.
 */
let dummy: Promise<string> | null = null;
export function dummyHash(): Promise<string> {
  return (dummy ??= hashPassword(crypto.randomBytes(16).toString("hex")));
}

export function sha256(text: string): string {
  return crypto.createHash("sha256").update(text).digest("hex");
}

/** A new secret: `<kind>_<43 base64url chars>`; the kind tells a leaked string's purpose at a glance. */
export function newSecret(kind: "qs" | "qt" | "qw"): string {
  return `${kind}_${crypto.randomBytes(32).toString("base64url")}`;
}

/** Shown in lists to tell tokens apart (never enough to guess one). */
export const prefixOf = (secret: string) => secret.slice(0, 10);

/** Constant-time equality of two strings' sha256 digests (lengths never leak). */
export function sameSecret(a: string, b: string): boolean {
  return crypto.timingSafeEqual(crypto.createHash("sha256").update(a).digest(), crypto.createHash("sha256").update(b).digest());
}
