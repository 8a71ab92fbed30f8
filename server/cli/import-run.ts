/**
 * `npm run import -- <folder> [--server URL] [--name N]`: posts a finished run's files to the
 * dashboard (POST /api/runs/import), which turns them into a read-only imported run. The folder
 * is a reference run folder (eval_seed*.jsonl, tb_logs/events.out.tfevents.*, config.yaml) or
 * files downloaded from our export; files are chosen by name as in the browser's Import page, and
 * hidden folders (Hydra's .hydra/) and anything else (checkpoints) are left out.
 */
import fs from "node:fs";
import path from "node:path";
import { Command } from "commander";
import { IMPORT_MAX_BODY_BYTES, IMPORT_MAX_FILES, importEncodingOf, importFileKind, type ImportFile, type ImportRunDto } from "../../lib/contracts/index.ts";
import { ApiCallError, apiFetch } from "./api-client.ts";
import { settings } from "../settings.ts";

const MAX_DEPTH = 4;

/** Importable files under `root` (relative posix names), in a stable order. */
function collectImportFiles(root: string): ImportFile[] {
  const out: ImportFile[] = [];
  const walk = (dir: string, depth: number) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.name.startsWith(".") || e.name === "node_modules") continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory() && depth < MAX_DEPTH) walk(p, depth + 1);
      if (!e.isFile()) continue;
      const kind = importFileKind(e.name);
      if (!kind) continue;
      const encoding = importEncodingOf(kind);
      const bytes = fs.readFileSync(p);
      out.push({ name: path.relative(root, p).split(path.sep).join("/"), content: bytes.toString(encoding), encoding });
    }
  };
  walk(root, 0);
  return out;
}

async function main(argv: string[]): Promise<void> {
  const program = new Command("import")
    .description("import a finished run's files (reference outputs or our export) into the dashboard")
    .argument("<folder>", "folder with eval_seed*.jsonl / events.out.tfevents.* / *metrics.csv|json / *episodes.jsonl / config.yaml")
    .option("--server <url>", "dashboard URL", process.env.QRAG_SERVER ?? "http://127.0.0.1:3000")
    .option("--name <name>", "name of the imported run")
    .option("--token <token>", "personal API token, when the dashboard requires sign-in (default $QRAG_TOKEN)")
    .parse(argv);
  const [folder] = program.args;
  const opts = program.opts<{ server: string; name?: string; token?: string }>();
  if (!fs.existsSync(folder) || !fs.statSync(folder).isDirectory()) throw new Error(`${folder}: not a folder`);
  const files = collectImportFiles(folder);
  if (!files.length) throw new Error(`${folder}: no importable files (eval_seed*.jsonl, events.out.tfevents.*, *metrics.csv|json|jsonl, *episodes.jsonl, *config.yaml)`);
  if (files.length > IMPORT_MAX_FILES) throw new Error(`${folder}: ${files.length} files, at most ${IMPORT_MAX_FILES} per import`);
  const body = { ...(opts.name ? { name: opts.name } : {}), files };
  const size = Buffer.byteLength(JSON.stringify(body));
  if (size > IMPORT_MAX_BODY_BYTES) throw new Error(`${folder}: ${size} bytes to send, the server takes at most ${IMPORT_MAX_BODY_BYTES}`);
  console.log(`importing ${files.length} file(s) from ${folder}: ${files.map((f) => f.name).join(", ")}`);
  const r = await apiFetch<ImportRunDto>(opts.server, "/api/runs/import", { method: "POST", body, token: opts.token ?? settings().auth.apiToken });
  for (const w of r.warnings) console.log(`warning: ${w}`);
  console.log(`imported run ${r.run.id} "${r.run.name}": ${r.points} metric points, ${r.episodes} episodes`);
  console.log(new URL(`/runs/${r.run.id}`, opts.server).toString());
}

main(process.argv).catch((e: Error) => {
  if (e instanceof ApiCallError) {
    console.error(`import failed: ${e.message}`);
    for (const [file, msg] of Object.entries(e.fieldErrors)) console.error(`  ${file}: ${msg.startsWith(file) ? msg.slice(file.length + 2) : msg}`);
  } else console.error(`import failed: ${e.message}`);
  process.exit(1);
});
