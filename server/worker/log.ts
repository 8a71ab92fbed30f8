/** Concise stderr logging for the trainer worker, and error messages safe to print or send. */

export type LogLevel = "info" | "warn" | "error";
export type Logger = (level: LogLevel, message: string) => void;

/** A logger writing `HH:MM:SS worker[name] level message` lines to stderr. */
export function stderrLogger(name: string): Logger {
  return (level, message) => {
    const t = new Date().toISOString().slice(11, 19);
    const tag = level === "info" ? "" : `${level}: `;
    process.stderr.write(`${t} worker[${name}] ${tag}${message}\n`);
  };
}

/** A logger that prints nothing (library use, tests). */
export const silentLogger: Logger = () => {};

const MAX_MESSAGE = 2_000;
const MAX_LINE = 400;

/**
 * The message of anything thrown, kept short: tfjs-wasm errors can carry whole minified source
 * lines, so every line is capped and the whole message too.
 */
export function errorMessage(e: unknown): string {
  let s: string;
  if (e instanceof Error) s = e.message || e.name;
  else if (typeof e === "string") s = e;
  else {
    try {
      s = JSON.stringify(e) ?? String(e);
    } catch {
      s = String(e);
    }
  }
  return clip(s);
}

/** Caps each line and the total length of a message (idempotent). */
export function clip(s: string): string {
  const lines = s.split("\n").map((l) => (l.length > MAX_LINE ? l.slice(0, MAX_LINE - 1) + "…" : l));
  const out = lines.join("\n");
  return out.length > MAX_MESSAGE ? out.slice(0, MAX_MESSAGE - 1) + "…" : out;
}
