/**
 * GET /api/data-files: what the data root holds (issue 10, part 3), for the launch form's path
 * suggestions. Paths are relative to the root, which is what a config stores.
 */
export interface DataFileEntryDto {
  path: string;
  kind: "file" | "dir";
  size: number;
}

export interface DataFilesDto {
  /** The dashboard's data root (absolute, as configured). */
  root: string;
  entries: DataFileEntryDto[];
  /** More entries exist than were listed (DATA_FILES_MAX_ENTRIES). */
  truncated: boolean;
}

export const DATA_FILES_MAX_ENTRIES = 500;
export const DATA_FILES_MAX_DEPTH = 3;

/** The run-config fields that name a file or folder in the data root (the launch form suggests entries for them). */
export function dataPathKind(fieldPath: string): "file" | "dir" | undefined {
  if (fieldPath === "envs.train_path" || fieldPath === "envs.eval_path") return "file";
  if (fieldPath === "envs.noise" || fieldPath === "envs.path") return "dir";
  if (fieldPath === "envs.babi_dir") return "dir"; // real bAbI files (issue 11)
  if (fieldPath === "algo.encoder.path") return "dir"; // an hf model folder
  if (fieldPath === "algo.encoder.word_vectors") return "file"; // or the npm package's name
  return undefined;
}

/** The id of the launch form's <datalist> of data-root entries of one kind. */
export const dataFilesListId = (kind: "file" | "dir") => `data-files-${kind}`;
