/**
 * Accounts: login, the signed-in principal, users, personal API tokens, worker tokens and the
 * audit trail (REST bodies and answers, shared by the browser and server/auth). Every string a
 * client can send is bounded here.
 */
import { z } from "zod";

export const ROLES = ["viewer", "member", "admin"] as const;
export type Role = (typeof ROLES)[number];
/** viewer < member < admin: a role may do what every lower role may. */
export const roleRank = (r: Role): number => ROLES.indexOf(r);

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 256;

/** User names: shown in the UI and the audit trail, so plain and short. */
export const userName = z
  .string()
  .trim()
  .min(1, "required")
  .max(64, "at most 64 characters")
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@-]*$/, "letters, digits and . _ @ - only, starting with a letter or digit");
const password = z.string().min(MIN_PASSWORD_LENGTH, `at least ${MIN_PASSWORD_LENGTH} characters`).max(MAX_PASSWORD_LENGTH, `at most ${MAX_PASSWORD_LENGTH} characters`);
/** A token's label ("ci", "laptop"). */
export const tokenLabel = z.string().trim().min(1, "required").max(64, "at most 64 characters").regex(/^[\w .@-]+$/, "letters, digits, space and _ . @ - only");
const intId = z.coerce.number().int().min(1).max(2 ** 31 - 1);

/** Login checks the password only, so its bounds are loose (an old short password still logs in). */
export const loginBody = z.strictObject({ name: z.string().min(1, "required").max(64, "at most 64 characters"), password: z.string().min(1, "required").max(MAX_PASSWORD_LENGTH, `at most ${MAX_PASSWORD_LENGTH} characters`) });
export type LoginBody = z.infer<typeof loginBody>;

export const createUserBody = z.strictObject({ name: userName, password, role: z.enum(ROLES).default("member") });
export type CreateUserBody = z.input<typeof createUserBody>;
export const patchUserBody = z.strictObject({ role: z.enum(ROLES).optional(), disabled: z.boolean().optional(), password: password.optional() });
export type PatchUserBody = z.infer<typeof patchUserBody>;

export const createTokenBody = z.strictObject({ name: tokenLabel });
export type CreateTokenBody = z.infer<typeof createTokenBody>;
export const idParams = z.strictObject({ id: intId });
/** DELETE /api/tokens?id=… */
export const tokenIdQuery = z.strictObject({ id: intId });

/** Who is calling: a signed-in user, a token's owner, or (no auth required) the local user. */
export interface PrincipalDto {
  name: string;
  role: Role;
  /** False on a loopback server without QRAG_AUTH: nobody signs in. */
  authRequired: boolean;
}

export interface UserDto {
  id: number;
  name: string;
  role: Role;
  disabled: boolean;
  createdAt: string;
}

export interface TokenDto {
  id: number;
  name: string;
  /** The secret's first characters, to tell tokens apart. */
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** A new token's answer: the secret is shown this once and stored only as its hash. */
export type NewTokenDto = TokenDto & { secret: string };

export interface AuditEventDto {
  id: number;
  at: string;
  actor: string;
  action: string;
  targetKind: string | null;
  targetId: string | null;
  detail: Record<string, unknown>;
}
