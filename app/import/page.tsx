"use client";
/**
 * Import a finished run from files: the reference implementation's outputs (eval_seed*.jsonl,
 * events.out.tfevents.*, config.yaml) or our own export. Files are picked one by one or as a
 * folder; only names the importer reads are sent (the rest is listed as skipped), and the
 * server's per-file errors are shown beside their files. File names and messages are rendered as
 * text only.
 */
import Link from "next/link";
import { useState, type FormEvent } from "react";
import { HttpError } from "../../lib/api.ts";
import { REFERENCE_TAGS } from "../../lib/contracts/metrics.ts";
import { IMPORT_MAX_BODY_BYTES, IMPORT_MAX_FILES, importEncodingOf, importFileKind, type ImportFile, type ImportFileKind, type ImportRunDto } from "../../lib/contracts/index.ts";
import { useImportRun } from "../../lib/hooks/useImportRun.ts";

interface Picked {
  /** The path inside a picked folder, or the file name. */
  name: string;
  file: File;
  kind: ImportFileKind | null;
}

/** Folder pickers are not in React's input typings (a non-standard attribute all browsers read). */
const folderProps = { webkitdirectory: "", directory: "" } as Record<string, string>;

function toBase64(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let s = "";
  // String.fromCharCode on the whole array would overflow the argument stack for large files
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function readPicked(p: Picked): Promise<ImportFile> {
  const encoding = importEncodingOf(p.kind!);
  return { name: p.name, encoding, content: encoding === "base64" ? toBase64(await p.file.arrayBuffer()) : await p.file.text() };
}

const fmtSize = (n: number) => (n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`);

export default function ImportPage() {
  const importRun = useImportRun();
  const [picked, setPicked] = useState<Picked[]>([]);
  const [name, setName] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [result, setResult] = useState<ImportRunDto | null>(null);

  const onPick = (list: FileList | null) => {
    const files = Array.from(list ?? []).map((file) => {
      const rel = (file as File & { webkitRelativePath?: string }).webkitRelativePath;
      // a folder's own name is the first segment: drop it, and skip hidden folders (Hydra's .hydra/)
      const name = rel ? rel.split("/").slice(1).join("/") : file.name;
      const hidden = name.split("/").some((seg) => seg.startsWith("."));
      return { name, file, kind: hidden ? null : importFileKind(name) };
    });
    setPicked(files.sort((a, b) => Number(!a.kind) - Number(!b.kind) || a.name.localeCompare(b.name)));
    setErrors({});
    setFormError(null);
    setResult(null);
  };

  const chosen = picked.filter((p) => p.kind);
  const size = chosen.reduce((s, p) => s + p.file.size * (p.kind === "tfevents" ? 4 / 3 : 1), 0);
  const tooBig = size > IMPORT_MAX_BODY_BYTES;
  const tooMany = chosen.length > IMPORT_MAX_FILES;

  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    setErrors({});
    setFormError(null);
    setResult(null);
    try {
      const files = await Promise.all(chosen.map(readPicked));
      setResult(await importRun.mutateAsync({ ...(name.trim() ? { name: name.trim() } : {}), files }));
    } catch (err) {
      if (err instanceof HttpError && Object.keys(err.fieldErrors).length) {
        const byFile = Object.fromEntries(Object.entries(err.fieldErrors).filter(([k]) => chosen.some((p) => p.name === k)));
        setErrors(byFile);
        const other = Object.entries(err.fieldErrors).filter(([k]) => !(k in byFile));
        setFormError(other.length ? `${err.message}: ${other.map(([k, v]) => `${k}: ${v}`).join("; ")}` : err.message);
      } else setFormError((err as Error).message);
    }
  };

  return (
    <main>
      <div className="page-head">
        <h1>Import a run</h1>
        <span className="muted">read-only runs from the reference implementation&apos;s outputs or our own export</span>
      </div>
      <form className="stack" onSubmit={onSubmit}>
        <div className="panel stack">
          <p className="muted small" style={{ margin: 0 }}>
            Reads <span className="mono">eval_seed*.jsonl</span> (reference eval episodes), <span className="mono">events.out.tfevents.*</span> (TensorBoard scalars:
            {Object.keys(REFERENCE_TAGS)
              .map((t) => `"${t}"`)
              .join(", ")}{" "}
            or our metric keys), <span className="mono">*metrics.csv / .json / .jsonl</span>,{" "}
            <span className="mono">*episodes.jsonl</span> and <span className="mono">config.yaml</span>. Other files are skipped. The whole import succeeds or nothing is kept.
          </p>
          <div className="row">
            <label className="button">
              Choose files…
              <input type="file" multiple hidden onChange={(e) => onPick(e.target.files)} data-testid="import-files-input" />
            </label>
            <label className="button">
              Choose a folder…
              <input type="file" multiple hidden {...folderProps} onChange={(e) => onPick(e.target.files)} data-testid="import-folder-input" />
            </label>
            <input type="text" placeholder="name (optional)" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} aria-label="run name" data-testid="import-name" style={{ width: 260 }} />
          </div>
        </div>
        {picked.length > 0 && (
          <div className="panel">
            <table className="table" data-testid="import-files">
              <thead>
                <tr>
                  <th>File</th>
                  <th>Read as</th>
                  <th className="num">Size</th>
                  <th>Problem</th>
                </tr>
              </thead>
              <tbody>
                {picked.map((p) => (
                  <tr key={p.name} data-testid="import-file-row" data-name={p.name} data-kind={p.kind ?? "skipped"}>
                    <td className="mono">{p.name}</td>
                    <td>{p.kind ?? <span className="muted">skipped</span>}</td>
                    <td className="num">{fmtSize(p.file.size)}</td>
                    <td className="error-text" style={{ whiteSpace: "normal" }} data-testid={errors[p.name] ? "import-file-error" : undefined}>
                      {errors[p.name] ?? ""}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {(tooBig || tooMany) && (
          <div className="form-banner">
            {tooBig ? `About ${fmtSize(size)} to send; an import takes at most ${fmtSize(IMPORT_MAX_BODY_BYTES)} (use \`npm run import\` on a smaller folder).` : `At most ${IMPORT_MAX_FILES} files per import.`}
          </div>
        )}
        {formError && (
          <div className="form-banner" data-testid="import-error">
            {formError}
          </div>
        )}
        <div className="row">
          <button type="submit" className="primary" disabled={!chosen.length || tooBig || tooMany || importRun.isPending} data-testid="import-submit">
            {importRun.isPending ? "Importing…" : `Import ${chosen.length} file${chosen.length === 1 ? "" : "s"}`}
          </button>
        </div>
        {result && (
          <div className="panel stack" data-testid="import-result" data-run-id={result.run.id}>
            <div>
              Imported{" "}
              <Link href={`/runs/${result.run.id}`} data-testid="import-run-link">
                {result.run.name}
              </Link>
              : {result.points} metric points, {result.episodes} episodes.
            </div>
            {result.warnings.length > 0 && (
              <ul className="muted small" style={{ margin: 0 }} data-testid="import-warnings">
                {result.warnings.map((w, i) => (
                  <li key={i}>{w}</li>
                ))}
              </ul>
            )}
          </div>
        )}
      </form>
    </main>
  );
}
