"use client";
/**
 * The launch form's "where it runs" part: the queue select (the queues GET /api/queues lists, with
 * how many runs wait in each) and, for a Slurm queue, the resource request fields, pre-filled
 * with the queue's defaults; each error is shown at its field.
 */
import { RESOURCE_FIELDS, type QueueDto, type ResourceKey } from "../lib/contracts/index.ts";
import { resourceBounds, type ResourceDraft } from "../lib/resource-form.ts";

interface Props {
  queues: QueueDto[];
  queue: string;
  onQueue: (name: string) => void;
  draft: ResourceDraft;
  onChange: (key: ResourceKey, value: string) => void;
  /** By field path ("resources.gpus", "queue"). */
  errors: Record<string, string>;
}

export function queueLabel(q: QueueDto): string {
  const where = q.kind === "slurm" ? `Slurm partition ${q.partition}` : "connected workers";
  return `${q.name} — ${where} (${q.pending} waiting)`;
}

export function QueueFields({ queues, queue, onQueue, draft, onChange, errors }: Props) {
  const chosen = queues.find((q) => q.name === queue);
  return (
    <section className="panel" data-testid="queue-fields">
      <h2>Where it runs</h2>
      <div className="form-grid">
        <div className="field" data-field="queue" style={{ gridColumn: "span 2" }}>
          <label htmlFor="f-queue">queue</label>
          <select id="f-queue" value={queue} onChange={(e) => onQueue(e.target.value)} data-testid="queue-select" aria-invalid={errors.queue ? true : undefined}>
            {!chosen && <option value={queue}>{queue}</option>}
            {queues.map((q) => (
              <option key={q.name} value={q.name}>
                {queueLabel(q)}
              </option>
            ))}
          </select>
          {errors.queue || errors.resources ? (
            <p className="field-error" role="alert">
              {errors.queue ?? `resources: ${errors.resources}`}
            </p>
          ) : (
            <span className="hint">{chosen?.kind === "slurm" ? "each run becomes one sbatch job" : "an idle connected worker takes it"}</span>
          )}
        </div>
        {chosen?.kind === "slurm" &&
          RESOURCE_FIELDS.map(({ key, label, kind }) => {
            const path = `resources.${key}`;
            const error = errors[path];
            const id = `f-${path}`;
            const byDefault = chosen.defaults[key];
            return (
              <div className="field" key={key} data-field={path}>
                <label htmlFor={id}>{label}</label>
                <input
                  id={id}
                  name={path}
                  type="text"
                  inputMode={kind === "count" ? "numeric" : undefined}
                  autoComplete="off"
                  spellCheck={false}
                  value={draft[key] ?? ""}
                  placeholder={byDefault !== undefined ? `default ${byDefault}` : "optional"}
                  onChange={(e) => onChange(key, e.target.value)}
                  aria-invalid={error ? true : undefined}
                  aria-describedby={error ? `${id}-err` : undefined}
                />
                {error ? (
                  <p className="field-error" id={`${id}-err`} role="alert">
                    {label}: {error}
                  </p>
                ) : (
                  <span className="hint">{kind === "count" ? resourceBounds(key) : "a Slurm name"}</span>
                )}
              </div>
            );
          })}
      </div>
    </section>
  );
}
