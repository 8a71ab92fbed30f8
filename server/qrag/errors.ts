/** Errors that name what was wrong with the user's input: a config field, or a file and line. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InputError";
  }
}

/** Malformed data file: message is prefixed `file:line: ` so editors and users can jump to it. */
export class DataFileError extends InputError {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    detail: string,
  ) {
    super(line === undefined ? `${file}: ${detail}` : `${file}:${line}: ${detail}`);
    this.name = "DataFileError";
  }
}
