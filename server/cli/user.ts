/**
 * `npm run user -- <command>`: accounts from the command line, on the database the server uses
 * (DATABASE_URL or <QRAG_DATA_DIR>/qrag.db; migrations are applied first, so it works before the
 * server's first start). This is how the first admin is made.
 *
 *   add NAME [--role viewer|member|admin] [--password-stdin]   (prompts twice, without echo, by default)
 *   list | set-role NAME ROLE | disable NAME | enable NAME | password NAME [--password-stdin]
 *   token NAME [--label L]        mint a personal API token for NAME (scripts, npm run import)
 *   worker-token NAME             mint a token for one remote worker (npm run worker -- --token …)
 */
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { Writable } from "node:stream";
import { Command, CommanderError } from "commander";
import { createUserBody, patchUserBody, ROLES, tokenLabel, type Role } from "../../lib/contracts/index.ts";
import { closeDb, getDb, type DbHandle } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { settings } from "../settings.ts";
import * as accounts from "../auth/accounts.ts";

const ACTOR = "cli";

async function db(): Promise<DbHandle> {
  const url = settings().databaseUrlFor(settings().dataDir);
  await migrate(url);
  return getDb(url);
}

/** A line from the terminal with echo off (the muted output swallows what readline would print). */
async function promptHidden(question: string): Promise<string> {
  const muted = new Writable({ write: (_c, _e, cb) => cb() });
  process.stderr.write(question);
  const rl = readline.createInterface({ input: process.stdin, output: muted, terminal: true });
  const answer = await new Promise<string>((resolve) => rl.question("", resolve));
  rl.close();
  process.stderr.write("\n");
  return answer;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

/** Where the command writes and reads: the process's streams, or a test's. */
export interface UserCliIo {
  out(text: string): void;
  err(text: string): void;
  /** All of stdin as text, its last line break dropped. */
  stdin(): Promise<string>;
}

const PROCESS_IO: UserCliIo = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t), stdin: readStdin };

async function newPassword(fromStdin: boolean, io: UserCliIo): Promise<string> {
  if (fromStdin) return io.stdin();
  if (!process.stdin.isTTY) throw new Error("no terminal to prompt on: pass --password-stdin and pipe the password");
  const a = await promptHidden("password: ");
  const b = await promptHidden("again: ");
  if (a !== b) throw new Error("the passwords differ");
  return a;
}

/** zod issues → "field: message" lines (never the password itself). */
function check<T>(r: { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } }): T {
  if (r.success) return r.data;
  throw new Error(r.error.issues.map((i) => `${i.path.join(".") || "value"}: ${i.message}`).join("; "));
}

async function userId(h: DbHandle, name: string): Promise<number> {
  const u = await h.prisma.user.findUnique({ where: { name }, select: { id: true } });
  if (!u) throw new Error(`no user ${name}`);
  return u.id;
}

async function patch(io: UserCliIo, name: string, p: { role?: Role; disabled?: boolean; password?: string }, detail: Record<string, string | boolean>) {
  const h = await db();
  const u = await accounts.patchUser(h, await userId(h, name), check(patchUserBody.safeParse(p)));
  await accounts.audit(h, { actor: ACTOR, action: "user.edit", targetKind: "user", targetId: name, detail });
  io.out(`${u.name}: ${u.role}${u.disabled ? " (disabled)" : ""}\n`);
}

/**
 * The commands. In the process (PROCESS_IO) commander's own errors print and exit as commander
 * does; given other io (tests) they are written there and thrown as a CommanderError.
 */
function userProgram(io: UserCliIo): Command {
  const out = (v: string) => io.out(`${v}\n`);
  const err = (v: string) => io.err(`${v}\n`);
  const program = new Command("user");
  if (io !== PROCESS_IO) program.exitOverride().configureOutput({ writeOut: (t) => io.out(t), writeErr: (t) => io.err(t) });
  program.description("manage Q-RAG Studio accounts and tokens");
  program
    .command("add <name>")
    .option("--role <role>", `one of ${ROLES.join(", ")}`, "member")
    .option("--password-stdin", "read the password from stdin (scripts)")
    .action(async (name: string, o: { role: string; passwordStdin?: boolean }) => {
      check(createUserBody.pick({ name: true, role: true }).safeParse({ name, role: o.role })); // before the prompt
      const body = check(createUserBody.safeParse({ name, role: o.role, password: await newPassword(!!o.passwordStdin, io) }));
      const h = await db();
      const u = await accounts.createUser(h, body);
      await accounts.audit(h, { actor: ACTOR, action: "user.create", targetKind: "user", targetId: u.name, detail: { role: u.role } });
      out(`added ${u.name} (${u.role})`);
    });
  program.command("list").action(async () => {
    for (const u of await accounts.listUsers(await db())) out(`${u.name}\t${u.role}${u.disabled ? "\tdisabled" : ""}\t${u.createdAt}`);
  });
  program.command("set-role <name> <role>").action((name: string, role: string) => patch(io, name, { role: role as Role }, { role }));
  program.command("disable <name>").action((name: string) => patch(io, name, { disabled: true }, { disabled: true }));
  program.command("enable <name>").action((name: string) => patch(io, name, { disabled: false }, { disabled: false }));
  program
    .command("password <name>")
    .option("--password-stdin", "read the password from stdin (scripts)")
    .action(async (name: string, o: { passwordStdin?: boolean }) => patch(io, name, { password: await newPassword(!!o.passwordStdin, io) }, { password: "changed" }));
  program
    .command("token <name>")
    .description("mint a personal API token (shown once)")
    .option("--label <label>", "what the token is for", "cli")
    .action(async (name: string, o: { label: string }) => {
      const h = await db();
      const t = await accounts.createApiToken(h, await userId(h, name), check(tokenLabel.safeParse(o.label)));
      await accounts.audit(h, { actor: ACTOR, action: "token.create", targetKind: "token", targetId: String(t.id), detail: { name: t.name, user: name } });
      err(`token "${t.name}" for ${name} (shown once; send it as Authorization: Bearer, or QRAG_TOKEN for npm run import):`);
      out(t.secret);
    });
  program
    .command("worker-token <name>")
    .description("mint a token for one remote worker (shown once; revoke it on /admin)")
    .action(async (name: string) => {
      const h = await db();
      const t = await accounts.createWorkerToken(h, check(tokenLabel.safeParse(name)));
      await accounts.audit(h, { actor: ACTOR, action: "worker-token.create", targetKind: "worker-token", targetId: String(t.id), detail: { name: t.name } });
      err(`worker token "${t.name}" (shown once; npm run worker -- --token …):`);
      out(t.secret);
    });
  return program;
}

/**
 * Runs `npm run user -- …` on `argv` (the arguments after the script's name) and resolves to the
 * exit code: 0, 1 with "error: …" on stderr for a refused command (a short password, an unknown
 * role or user), or commander's own code for its errors. Checks that need no database (names,
 * roles, passwords) come before it is opened.
 */
export async function runUser(argv: readonly string[], io: UserCliIo = PROCESS_IO): Promise<number> {
  try {
    await userProgram(io).parseAsync([...argv], { from: "user" });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    io.err(`error: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await closeDb();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runUser(process.argv.slice(2)).then((code) => {
    if (code !== 0) process.exitCode = code;
  });
}
