"use client";
import Link from "next/link";
import { Suspense, useEffect, useMemo, useState, type FormEvent } from "react";
import { useRouter, useSearchParams } from "next/navigation";
import { configFieldErrors, configToDraft, describeSchema, draftDiff, draftToConfig, fieldPaths, getAt, setAt, switchVariant, type FieldNode } from "../../../lib/config-form.ts";
import { HttpError } from "../../../lib/api.ts";
import type { PresetDto, QueueDto, ResourceKey, RunDetailDto } from "../../../lib/contracts/index.ts";
import { resourceDraft, resourceRequestOf, type ResourceDraft } from "../../../lib/resource-form.ts";
import { useQueues } from "../../../lib/hooks/useQueues.ts";
import { QueueFields } from "../../../components/QueueFields.tsx";
import { useConfigSchema } from "../../../lib/hooks/useConfigSchema.ts";
import { usePresets } from "../../../lib/hooks/usePresets.ts";
import { useRun } from "../../../lib/hooks/useRun.ts";
import { useCreateRun, validateConfig } from "../../../lib/hooks/useRunActions.ts";
import { ConfigFields } from "../../../components/ConfigFields.tsx";
import { DataRootSuggestions } from "../../../components/DataRootSuggestions.tsx";

const PREFERRED_PRESET = "babilong-cpu";
/** `over`'s values laid over `base`, objects merged key by key (arrays and scalars replace). */
function overlay(base: unknown, over: unknown): unknown {
  const obj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!obj(base) || !obj(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = overlay(base[k], v);
  return out;
}
/** A draft value as the change list shows it. */
const shownValue = (v: unknown) => (v === undefined || v === "" ? "(empty)" : String(v));
/** Typing pauses this long before the server checks the config. */
const CHECK_AFTER_MS = 150;

/** The server's verdict on a config candidate: field errors (empty when valid). */
async function check(config: unknown): Promise<Record<string, string>> {
  try {
    const r = await validateConfig({ config });
    return r.ok ? {} : configFieldErrors(r.fieldErrors);
  } catch (err) {
    return { "": (err as Error).message };
  }
}

interface FormProps {
  root: FieldNode;
  presets: PresetDto[];
  initialPreset: string;
  initialConfig: unknown;
  initialTags: string[];
  parent: RunDetailDto | null;
  queues: QueueDto[];
}

/** Errors of the queue part of the form (the queue, the resource request), not the config's. */
const isQueueField = (p: string) => p === "queue" || p === "resources" || p.startsWith("resources.");

function LaunchForm({ root: ROOT, presets, initialPreset, initialConfig, initialTags, parent, queues }: FormProps) {
  const router = useRouter();
  const create = useCreateRun();
  const PATHS = useMemo(() => fieldPaths(ROOT), [ROOT]);
  const [preset, setPreset] = useState(initialPreset);
  const [draft, setDraft] = useState<unknown>(() => configToDraft(ROOT, initialConfig));
  // what changed fields are marked against: the preset chosen, or the run a clone comes from
  const [baseline, setBaseline] = useState<unknown>(() => configToDraft(ROOT, initialConfig));
  const changes = useMemo(() => draftDiff(draft, baseline), [draft, baseline]);
  const candidate = useMemo(() => draftToConfig(ROOT, draft), [ROOT, draft]);
  // the server's last verdict and the candidate it judged (a newer check may be on its way)
  const [checked, setChecked] = useState<{ for: unknown; errors: Record<string, string> } | null>(null);
  const [tags, setTags] = useState(initialTags.join(", "));
  const [notes, setNotes] = useState("");
  const [touched, setTouched] = useState<ReadonlySet<string>>(new Set());
  const [submitted, setSubmitted] = useState(false);
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  // where it runs: a clone's queue and request, else the default queue (a Slurm queue: its defaults)
  const requestFor = (name: string): ResourceDraft => resourceDraft(parent && parent.queue === name ? parent.resources : queues.find((q) => q.name === name)?.defaults);
  const [queue, setQueue] = useState(() => parent?.queue ?? queues[0]?.name ?? "workers");
  const [resources, setResources] = useState<ResourceDraft>(() => requestFor(parent?.queue ?? queues[0]?.name ?? "workers"));
  const slurmQueue = queues.find((q) => q.name === queue)?.kind === "slurm";
  const request = useMemo(() => (slurmQueue ? resourceRequestOf(resources) : { request: undefined, errors: {} }), [slurmQueue, resources]);
  const clearServerError = (p: string) => serverErrors[p] && setServerErrors(({ [p]: _drop, ...rest }) => rest);
  const chooseQueue = (name: string) => {
    setQueue(name);
    setResources(requestFor(name));
    setServerErrors((e) => Object.fromEntries(Object.entries(e).filter(([p]) => !isQueueField(p))));
  };
  const changeResource = (key: ResourceKey, value: string) => {
    setResources((r) => ({ ...r, [key]: value }));
    clearServerError(`resources.${key}`);
    clearServerError("resources");
  };

  useEffect(() => {
    let live = true;
    const t = setTimeout(() => void check(candidate).then((errors) => live && setChecked({ for: candidate, errors })), CHECK_AFTER_MS);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [candidate]);
  const checkErrors = checked?.errors ?? {};
  const shown: Record<string, string> = {};
  for (const [p, m] of Object.entries(checkErrors)) if (p && (submitted || touched.has(p))) shown[p] = m;
  for (const [p, m] of Object.entries(serverErrors)) if (!isQueueField(p)) shown[p] = m;
  const unplaced = Object.entries(serverErrors).filter(([p]) => !PATHS.has(p) && !isQueueField(p));
  const queueErrors: Record<string, string> = { ...request.errors, ...Object.fromEntries(Object.entries(serverErrors).filter(([p]) => isQueueField(p))) };

  const change = (path: string[], value: unknown) => {
    const p = path.join(".");
    setDraft((d: unknown) => setAt(d, path, value));
    setTouched((t) => new Set(t).add(p));
    if (serverErrors[p]) setServerErrors(({ [p]: _drop, ...rest }) => rest);
  };
  const changeVariant = (node: FieldNode & { kind: "variant" }, path: string[], name: string) => {
    setDraft((d: unknown) => setAt(d, path, switchVariant(node, getAt(d, path), name)));
  };
  const choosePreset = (name: string) => {
    const p = presets.find((x) => x.name === name);
    setPreset(name);
    if (p) {
      setDraft(configToDraft(ROOT, p.config));
      setBaseline(configToDraft(ROOT, p.config));
    }
    setTouched(new Set());
    setSubmitted(false);
    setServerErrors({});
    setFormError(null);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSubmitted(true);
    setFormError(null);
    if (Object.keys(request.errors).length) {
      document.querySelector<HTMLElement>(`[data-field="${Object.keys(request.errors)[0]}"] input`)?.focus();
      return;
    }
    const errors = checked && checked.for === candidate ? checked.errors : await check(candidate);
    setChecked({ for: candidate, errors });
    if (Object.keys(errors).length) {
      const first = Object.keys(errors)[0];
      document.querySelector<HTMLElement>(`[data-field="${first}"] input, [data-field="${first}"] select`)?.focus();
      if (errors[""]) setFormError(errors[""]);
      return;
    }
    const name = (candidate as { name?: unknown }).name;
    try {
      const run = await create.mutateAsync({
        name: typeof name === "string" ? name : undefined,
        preset: preset || undefined,
        config: candidate,
        tags: tags.split(",").map((t) => t.trim()).filter(Boolean),
        notes: notes || undefined,
        parentId: parent?.id,
        queue,
        resources: request.request,
      });
      router.push(`/runs/${run.id}`);
    } catch (err) {
      if (err instanceof HttpError && Object.keys(err.fieldErrors).length) {
        setServerErrors(configFieldErrors(err.fieldErrors));
        setFormError(err.message);
      } else setFormError((err as Error).message);
    }
  };

  const errorCount = Object.keys(shown).length + Object.keys(queueErrors).length;
  return (
    <form onSubmit={submit} noValidate data-testid="launch-form" className="stack">
      <section className="panel">
        <div className="form-grid">
          <div className="field" data-field="preset">
            <label htmlFor="f-preset">preset</label>
            <select id="f-preset" name="preset" value={preset} onChange={(e) => choosePreset(e.target.value)} data-testid="preset-select">
              {!presets.some((p) => p.name === preset) && <option value={preset}>{preset || "(custom)"}</option>}
              {presets.map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name}
                </option>
              ))}
            </select>
            <span className="hint">{parent ? <>cloned from <Link href={`/runs/${parent.id}`}>{parent.name}</Link></> : "from configs/presets"}</span>
          </div>
          <div className="field" data-field="tags">
            <label htmlFor="f-tags">tags</label>
            <input id="f-tags" value={tags} onChange={(e) => setTags(e.target.value)} placeholder="comma separated" />
          </div>
          <div className="field" data-field="notes" style={{ gridColumn: "span 2" }}>
            <label htmlFor="f-notes">notes</label>
            <input id="f-notes" value={notes} onChange={(e) => setNotes(e.target.value)} placeholder="optional" />
          </div>
        </div>
      </section>
      {(formError || unplaced.length > 0) && (
        <div className="form-banner" role="alert" data-testid="form-error">
          {formError}
          {unplaced.map(([p, m]) => (
            <div key={p}>
              {p ? <code>{p}</code> : null} {m}
            </div>
          ))}
        </div>
      )}
      <QueueFields queues={queues} queue={queue} onQueue={chooseQueue} draft={resources} onChange={changeResource} errors={queueErrors} />
      <DataRootSuggestions />
      <ConfigFields root={ROOT} draft={draft} baseline={baseline} errors={shown} onChange={change} onVariant={changeVariant} />
      <section className="panel small" data-testid="config-changes" data-count={changes.length}>
        {changes.length === 0 ? (
          <span className="muted">{parent ? "the same config as the run it is cloned from" : `the preset ${preset || "(custom)"} as it is`}</span>
        ) : (
          <>
            <b>
              {changes.length} value{changes.length === 1 ? "" : "s"} differ{changes.length === 1 ? "s" : ""} from {parent ? `the run it is cloned from (${parent.name})` : `the preset ${preset || "(custom)"}`}:
            </b>
            <ul className="changes">
              {changes.map((c) => (
                <li key={c.path} data-path={c.path}>
                  <code>{c.path}</code> <span className="muted">{shownValue(c.from)}</span> → <span>{shownValue(c.to)}</span>
                </li>
              ))}
            </ul>
          </>
        )}
      </section>
      <div className="row">
        <button type="submit" className="primary" disabled={create.isPending} data-testid="launch-button">
          {create.isPending ? "Launching…" : "Launch run"}
        </button>
        {errorCount > 0 && (
          <span className="error-text small">
            {errorCount} field{errorCount === 1 ? "" : "s"} to fix
          </span>
        )}
        {Object.keys(checkErrors).length > 0 && errorCount === 0 && (
          <span className="muted small" data-testid="incomplete-fields">
            to complete: {Object.keys(checkErrors).map((p) => p || "the config").join(", ")}
          </span>
        )}
      </div>
    </form>
  );
}

function NewRunPage() {
  const sp = useSearchParams();
  const cloneId = sp.get("clone") ?? undefined;
  const presets = usePresets();
  const schema = useConfigSchema();
  const clone = useRun(cloneId);
  const queues = useQueues();
  const root = useMemo(() => (schema.data ? describeSchema(schema.data.schema) : null), [schema.data]);

  let body;
  if (presets.error) body = <div className="form-banner">Could not load presets: {(presets.error as Error).message}</div>;
  else if (schema.error) body = <div className="form-banner">Could not load the config schema: {(schema.error as Error).message}</div>;
  // a failed poll keeps the queues it had (and the form its edits)
  else if (queues.error && !queues.data) body = <div className="form-banner">Could not load the queues: {(queues.error as Error).message}</div>;
  else if (clone.error) body = <div className="form-banner">Could not load run {cloneId}: {(clone.error as Error).message}</div>;
  else if (!presets.data || !root || !queues.data || (cloneId && !clone.data)) body = <div className="empty">Loading…</div>;
  else {
    const list = presets.data;
    const parent = cloneId ? clone.data! : null;
    // a clone of an imported run: its config is the reference's, which names only some of our
    // keys, so the rest come from a preset (not blank); "imported" describes the source, not the clone
    const base = list.find((x) => x.name === (parent?.preset ?? PREFERRED_PRESET)) ?? list[0];
    const start = parent
      ? parent.kind === "imported"
        ? { preset: base?.name ?? "", config: overlay(base?.config ?? {}, parent.config), tags: parent.tags.filter((t) => t !== "imported") }
        : { preset: parent.preset ?? "", config: parent.config, tags: parent.tags }
      : (() => {
          const p = list.find((x) => x.name === PREFERRED_PRESET) ?? list[0];
          return { preset: p?.name ?? "", config: p?.config ?? {}, tags: [] as string[] };
        })();
    body = <LaunchForm key={cloneId ?? "new"} root={root} presets={list} initialPreset={start.preset} initialConfig={start.config} initialTags={start.tags} parent={parent} queues={queues.data} />;
  }
  return (
    <main>
      <div className="page-head">
        <h1>{cloneId ? "Clone run" : "New run"}</h1>
        <span className="muted">fields are generated from the engine&apos;s config schema and checked by the server as you type</span>
      </div>
      {body}
    </main>
  );
}

export default function Page() {
  return (
    <Suspense fallback={<main className="empty">Loading…</main>}>
      <NewRunPage />
    </Suspense>
  );
}
