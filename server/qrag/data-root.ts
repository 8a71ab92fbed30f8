/**
 * The data root: the one folder every file or folder a run config names must lie in (issue 10).
 * The dashboard checks configs with it before a run is stored; the worker and the engine check
 * again with their own root before reading (a remote worker's root may sit elsewhere, so configs
 * store paths relative to the root).
 *
 * A path is taken relative to the root (absolute paths must point into it). `..` is normalised
 * first, then every symlink on the way is followed (dangling ones too), so a link inside the root
 * pointing outside is refused. Nothing outside the root is ever looked at: a path whose normalised
 * form is outside is refused before the file system is asked, so the answer is the same whether it
 * exists or not. Messages name the field and the root, never file contents.
 */
import fs from "node:fs";
import path from "node:path";
import { shortText } from "../../lib/contracts/short-text.ts";
import { InputError } from "./errors.ts";

export type DataPathKind = "file" | "dir";

export type DataPathResult =
  | { ok: true; /** The real absolute path to open. */ abs: string; /** Relative to the root, "/"-separated ("." for the root). */ rel: string }
  | { ok: false; reason: "outside" | "reserved" | "not-found" | "wrong-kind" | "empty"; message: string };

/**
 * Server internals that may sit under the root and are never data: the worker token, database
 * files (SQLite and its journals), worker id files, the local worker record, and dot-files (.env, .ssh, …) at any depth;
 * the `runs/` folder (other runs' files) at the top.
 */
export function isReservedDataPath(rel: string): boolean {
  const segs = rel.split("/").filter((s) => s !== "" && s !== ".");
  if (segs[0] === "runs") return true;
  return segs.some((s) => s.startsWith(".") || s === "worker-token" || s === "local-worker.json" || /\.db(-journal|-wal|-shm)?$/i.test(s) || /^worker-.*\.id$/.test(s));
}

const MAX_LINKS = 40;

/**
 * Follows every symlink of an absolute, normalised path, component by component (as the OS
 * would); components that do not exist are appended as they are.
 */
function realResolve(abs: string): string {
  const queue = abs.split(path.sep).filter(Boolean);
  let cur = path.parse(abs).root;
  let links = 0;
  while (queue.length) {
    const seg = queue.shift()!;
    if (seg === ".") continue;
    if (seg === "..") {
      cur = path.dirname(cur);
      continue;
    }
    const next = path.join(cur, seg);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(next);
    } catch {
      return path.resolve(next, ...queue);
    }
    if (!st.isSymbolicLink()) {
      cur = next;
      continue;
    }
    if (++links > MAX_LINKS) throw new InputError("too many symbolic links");
    const target = fs.readlinkSync(next);
    // not path.join: it would fold a "x/.." of the target before x's own links are followed
    const t = path.isAbsolute(target) ? target : `${cur}${path.sep}${target}`;
    queue.unshift(...t.split(path.sep).filter(Boolean));
    cur = path.parse(t).root;
  }
  return cur;
}

function inside(p: string, root: string): boolean {
  const rel = path.relative(root, p);
  return rel === "" || (!rel.startsWith(`..${path.sep}`) && rel !== ".." && !path.isAbsolute(rel));
}

/** The root's real path (the root itself may be reached through a link, e.g. /tmp on macOS). */
export function realDataRoot(root: string): string {
  return realResolve(path.resolve(root));
}

/**
 * Resolves `value` (a config's path) inside `root`. `kind` is what must be there; `mustExist`
 * false skips the existence check (the API of a dashboard whose workers hold the files).
 */
export function resolveDataPath(root: string, value: string, opts: { kind: DataPathKind; mustExist?: boolean }): DataPathResult {
  const lexRoot = path.resolve(root);
  const realRoot = realDataRoot(root);
  const outside = { ok: false as const, reason: "outside" as const, message: `must be inside the data root ${lexRoot}` };
  if (value.trim() === "" || value.includes("\0")) return { ok: false, reason: "empty", message: "expected a path inside the data root" };
  const lex = path.resolve(lexRoot, value);
  // the normalised path decides before anything outside the root is looked at
  if (!inside(lex, lexRoot) && !inside(lex, realRoot)) return outside;
  let real: string;
  try {
    real = realResolve(lex);
  } catch {
    return outside;
  }
  if (!inside(real, realRoot)) return outside;
  const rel = path.relative(realRoot, real).split(path.sep).join("/") || ".";
  if (isReservedDataPath(rel)) return { ok: false, reason: "reserved", message: `is reserved for the server (database, worker token, run folders), not data` };
  if (opts.mustExist !== false) {
    let st: fs.Stats;
    try {
      st = fs.statSync(real);
    } catch {
      return { ok: false, reason: "not-found", message: `${shortText(rel)} not found in the data root ${lexRoot}` };
    }
    if (opts.kind === "file" && !st.isFile()) return { ok: false, reason: "wrong-kind", message: `${shortText(rel)} is not a file` };
    if (opts.kind === "dir" && !st.isDirectory()) return { ok: false, reason: "wrong-kind", message: `${shortText(rel)} is not a folder` };
  }
  return { ok: true, abs: real, rel };
}

/** Like resolveDataPath, but throws an InputError `<field>: <message>` when refused. */
export function dataPathOrThrow(root: string, field: string, value: string, kind: DataPathKind): { abs: string; rel: string } {
  const r = resolveDataPath(root, value, { kind });
  if (!r.ok) throw new InputError(`${field}: ${r.message}`);
  return r;
}

/**
 * Reads a file the engine was given, checking *the opened file* against the data root: the file
 * is opened first, then the descriptor's real path (links resolved by the kernel, so nothing can
 * be swapped between a check and the open) must lie inside the root and not be a server internal.
 * `label` names the file in errors (a path relative to the root); messages never quote content.
 */
export function readFileInDataRoot(root: string, file: string, label: string): Buffer {
  const fd = openInDataRoot(root, file, label);
  try {
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** How a reader of user files opens them: `rootReader(root)` in the engine, `readOwnFile` for its own. */
export type ReadFile = (file: string, label: string) => Buffer;

/** Reads through the data-root check of `root` (every file a config names). */
export const rootReader = (root: string): ReadFile => (file, label) => readFileInDataRoot(root, file, label);

/** Reads a file that is not the user's (an npm package's, a test fixture): no data-root check. */
export const readOwnFile: ReadFile = (file, label) => {
  try {
    return fs.readFileSync(file);
  } catch (e) {
    throw new InputError(`${label}: ${unreadable(e)}`);
  }
};

/** Why a file could not be opened, without its path or content: "file not found" or the error code. */
export function unreadable(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  return code === "ENOENT" ? "file not found" : `cannot read file (${code ?? "error"})`;
}

/** `readFileInDataRoot`'s open and check alone: a descriptor the caller reads and closes. */
export function openInDataRoot(root: string, file: string, label: string): number {
  let fd: number;
  try {
    fd = fs.openSync(file, "r");
  } catch (e) {
    throw new InputError(`${label}: ${unreadable(e)}`);
  }
  try {
    const realRoot = realDataRoot(root);
    const real = openedPath(fd, file);
    if (!inside(real, realRoot) || isReservedDataPath(path.relative(realRoot, real).split(path.sep).join("/"))) {
      throw new InputError(`${label}: must be inside the data root ${path.resolve(root)} (links are followed)`);
    }
    if (!fs.fstatSync(fd).isFile()) throw new InputError(`${label}: not a file`);
    return fd;
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/**
 * The real path of an open descriptor: /proc/self/fd on Linux; elsewhere the path's real path,
 * accepted only if it is the same file as the descriptor (device and inode), so a swap between the
 * open and this look is refused.
 */
export function openedPath(fd: number, file: string): string {
  try {
    return fs.realpathSync(`/proc/self/fd/${fd}`);
  } catch {
    const real = fs.realpathSync(file);
    const a = fs.fstatSync(fd);
    const b = fs.statSync(real);
    if (a.dev !== b.dev || a.ino !== b.ino) throw new InputError(`${path.basename(file)}: changed while it was opened`);
    return real;
  }
}

export interface DataEntry {
  /** Relative to the root, "/"-separated. */
  path: string;
  kind: DataPathKind;
  /** Bytes (0 for folders). */
  size: number;
}

/**
 * What the data root holds, for the launch form's suggestions: breadth-first, folders before their
 * contents, at most `maxEntries` entries and `maxDepth` levels, leaving out reserved internals
 * (database, worker token, runs/, dot-files) and links that lead out of the root. A link inside
 * is listed as what it points to but not descended into (no cycles).
 */
export function listDataRoot(root: string, opts: { maxEntries?: number; maxDepth?: number } = {}): { entries: DataEntry[]; truncated: boolean } {
  const maxEntries = opts.maxEntries ?? 500;
  const maxDepth = opts.maxDepth ?? 3;
  const realRoot = realDataRoot(root);
  const entries: DataEntry[] = [];
  const queue: { rel: string; depth: number }[] = [{ rel: "", depth: 0 }];
  while (queue.length) {
    const { rel, depth } = queue.shift()!;
    let names: fs.Dirent[];
    try {
      names = fs.readdirSync(path.join(realRoot, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const d of names) {
      const p = rel ? `${rel}/${d.name}` : d.name;
      if (isReservedDataPath(p)) continue;
      let kind: DataPathKind;
      let size = 0;
      if (d.isSymbolicLink()) {
        const r = resolveDataPath(realRoot, p, { kind: "file", mustExist: false });
        if (!r.ok) continue;
        try {
          const st = fs.statSync(r.abs);
          kind = st.isDirectory() ? "dir" : "file";
          size = st.isFile() ? st.size : 0;
        } catch {
          continue;
        }
      } else if (d.isDirectory()) {
        kind = "dir";
        if (depth + 1 < maxDepth) queue.push({ rel: p, depth: depth + 1 });
      } else if (d.isFile()) {
        kind = "file";
        try {
          size = fs.statSync(path.join(realRoot, p)).size;
        } catch {
          continue;
        }
      } else continue;
      if (entries.length >= maxEntries) return { entries, truncated: true };
      entries.push({ path: p, kind, size });
    }
  }
  return { entries, truncated: false };
}
