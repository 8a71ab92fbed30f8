"use client";
import { dataFilesListId } from "../lib/contracts/index.ts";
import { useDataFiles } from "../lib/hooks/useDataFiles.ts";

/**
 * The data root and what it holds: the path fields of the launch form (train_path, noise, …) point
 * their `list` at these datalists, so the browser suggests files and folders that are there.
 */
export function DataRootSuggestions() {
  const files = useDataFiles();
  const entries = files.data?.entries ?? [];
  return (
    <div className="muted small" data-testid="data-root">
      {files.data ? (
        <>
          Dataset paths are relative to the data root <code>{files.data.root}</code> ({entries.length}
          {files.data.truncated ? "+" : ""} entries; nothing outside it can be read).
        </>
      ) : files.error ? (
        <>Could not list the data root: {(files.error as Error).message}</>
      ) : null}
      <datalist id={dataFilesListId("file")}>
        {entries.filter((e) => e.kind === "file").map((e) => (
          <option key={e.path} value={e.path} />
        ))}
      </datalist>
      <datalist id={dataFilesListId("dir")}>
        <option value="sotu">built-in public-domain noise (BabiLong)</option>
        {entries.filter((e) => e.kind === "dir").map((e) => (
          <option key={e.path} value={e.path} />
        ))}
      </datalist>
    </div>
  );
}
