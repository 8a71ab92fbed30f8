"use client";
/**
 * The banner under an upload form (a CLI sweep, an agent evaluation) when the server refused the
 * file: one line per bad place ("sweep.jsonl line 2": "numChunks: …"), else the error's message.
 */
import { HttpError } from "../../lib/api.ts";

export function UploadError({ error, testId }: { error: Error | null; testId: string }) {
  if (!error) return null;
  const errors = error instanceof HttpError ? error.fieldErrors : {};
  return (
    <div className="form-banner" data-testid={testId}>
      {Object.keys(errors).length ? (
        <ul className="facts">
          {Object.entries(errors).map(([where, msg]) => (
            <li key={where}>
              <b>{where}</b>: {msg}
            </li>
          ))}
        </ul>
      ) : (
        error.message
      )}
    </div>
  );
}
