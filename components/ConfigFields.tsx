"use client";
/**
 * Renders the launch form from the field tree that lib/config-form.ts derives from the JSON Schema:
 * nested groups as fieldsets, the env variant as a select, enums and fields with known choices
 * (the schema's examples) as selects, fixed values as a one-option select, booleans as checkboxes,
 * numbers and number lists as text (so a non-number reaches zod and gets its message). A value that
 * differs from the baseline (the preset, or the run a clone comes from) is marked, with a reset.
 */
import { useState } from "react";
import type { FieldNode } from "../lib/config-form.ts";
import { getAt } from "../lib/config-form.ts";
import { dataFilesListId, dataPathKind } from "../lib/contracts/index.ts";

export interface FieldsProps {
  draft: unknown;
  /** The draft of the preset (or cloned run) the form started from: changed fields are marked. */
  baseline: unknown;
  /** Message per dotted path, already filtered to what should be shown. */
  errors: Record<string, string>;
  onChange: (path: string[], value: unknown) => void;
  onVariant: (node: FieldNode & { kind: "variant" }, path: string[], name: string) => void;
}

const split = (p: string) => (p ? p.split(".") : []);
const isGroup = (n: FieldNode) => n.kind === "object" || n.kind === "variant";

function describeBounds(n: FieldNode): string | undefined {
  if (n.kind !== "number" && n.kind !== "numbers") return undefined;
  const b = n.bounds;
  const parts: string[] = [];
  if (b.int) parts.push("integer");
  if (b.min !== undefined && Math.abs(b.min) < 1e15) parts.push(`${b.minInclusive ? "≥" : ">"} ${b.min}`);
  if (b.max !== undefined && Math.abs(b.max) < 1e15) parts.push(`${b.maxInclusive ? "≤" : "<"} ${b.max}`);
  return parts.join(", ") || undefined;
}

/** Whether a draft value differs from the baseline's (both as the form holds them: text, booleans). */
const differs = (a: unknown, b: unknown) => JSON.stringify(a ?? "") !== JSON.stringify(b ?? "");

function Leaf({ node, draft, baseline, errors, onChange }: { node: FieldNode } & Omit<FieldsProps, "onVariant">) {
  const path = split(node.path);
  const value = getAt(draft, path);
  const base = getAt(baseline, path);
  const changed = node.kind !== "literal" && differs(value, base);
  const reset = changed && (
    <button type="button" className="link small reset" onClick={() => onChange(path, base)} title={`back to ${base === "" || base === undefined ? "empty" : String(base)}`} data-testid="field-reset">
      reset
    </button>
  );
  const error = errors[node.path];
  const id = `f-${node.path}`;
  const hint = [node.hint, describeBounds(node)].filter(Boolean).join(" · ");
  const placeholder = node.defaultValue !== undefined ? `default ${Array.isArray(node.defaultValue) ? node.defaultValue.join(", ") : String(node.defaultValue)}` : node.optional ? "optional" : "";
  const common = { id, name: node.path, "aria-invalid": error ? true : undefined, "aria-describedby": error ? `${id}-err` : undefined };

  if (node.kind === "boolean") {
    return (
      <div className={`field check${changed ? " changed" : ""}`} data-field={node.path} data-changed={changed ? "yes" : undefined}>
        <input type="checkbox" {...common} checked={!!value} onChange={(e) => onChange(path, e.target.checked)} />
        <label htmlFor={id}>{node.key}</label>
        {reset}
        {hint && <span className="hint">{hint}</span>}
        {error && (
          <p className="field-error" id={`${id}-err`} role="alert">
            {error}
          </p>
        )}
      </div>
    );
  }
  let input;
  if (node.kind === "enum") {
    input = (
      <select {...common} value={typeof value === "string" ? value : ""} onChange={(e) => onChange(path, e.target.value)}>
        {node.optional && <option value="">{node.defaultValue !== undefined ? `(default ${String(node.defaultValue)})` : "(none)"}</option>}
        {node.values.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  } else if (node.kind === "string" && node.choices) {
    const current = typeof value === "string" ? value : "";
    input = (
      <select {...common} value={current} onChange={(e) => onChange(path, e.target.value)}>
        {node.optional && <option value="">{node.defaultValue !== undefined ? `(default ${String(node.defaultValue)})` : "(none)"}</option>}
        {current && !node.choices.includes(current) && <option value={current}>{current}</option>}
        {node.choices.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  } else if (node.kind === "literal") {
    // the only value the schema allows: shown as a select of one, not as a box that looks editable
    input = (
      <select {...common} value={String(node.value)} disabled>
        <option value={String(node.value)}>{String(node.value)}</option>
      </select>
    );
  } else {
    const pathKind = dataPathKind(node.path);
    input = (
      <input
        {...common}
        list={pathKind ? dataFilesListId(pathKind) : undefined}
        type="text"
        inputMode={node.kind === "number" ? "decimal" : undefined}
        autoComplete="off"
        spellCheck={false}
        placeholder={placeholder}
        value={typeof value === "string" ? value : value === undefined || value === null ? "" : String(value)}
        onChange={(e) => onChange(path, e.target.value)}
      />
    );
  }
  return (
    <div className={`field${changed ? " changed" : ""}`} data-field={node.path} data-changed={changed ? "yes" : undefined}>
      <label htmlFor={id}>
        {node.key}
        {reset}
      </label>
      {input}
      {error ? (
        <p className="field-error" id={`${id}-err`} role="alert">
          {error}
        </p>
      ) : (
        hint && <span className="hint">{hint}</span>
      )}
    </div>
  );
}

/** Which fields a part of the form shows (by dotted path; a variant's selector by its discriminator's path). */
type Pick = (path: string) => boolean;

/** The children a group shows for the current draft (a variant: its chosen option's), and its selector's path. */
function childrenOf(node: FieldNode, draft: unknown): { children: FieldNode[]; selectorPath?: string } {
  if (node.kind === "variant") {
    const current = String(getAt(draft, [...split(node.path), node.discriminator]) ?? Object.keys(node.options)[0]);
    const opt = node.options[current] ?? Object.values(node.options)[0];
    return { children: opt.children.filter((c) => c.key !== node.discriminator), selectorPath: `${node.path}.${node.discriminator}` };
  }
  return { children: node.kind === "object" ? node.children : [] };
}

/** The leaf paths (and selector paths) under a node that `pick` keeps. */
function pickedPaths(node: FieldNode, draft: unknown, pick: Pick): string[] {
  if (!isGroup(node)) return pick(node.path) ? [node.path] : [];
  const { children, selectorPath } = childrenOf(node, draft);
  return [...(selectorPath && pick(selectorPath) ? [selectorPath] : []), ...children.flatMap((c) => pickedPaths(c, draft, pick))];
}

function Group({ node, legend, pick, ...props }: { node: FieldNode; legend?: string; pick: Pick } & FieldsProps) {
  const path = split(node.path);
  const { children, selectorPath } = childrenOf(node, props.draft);
  let selector = null;
  if (node.kind === "variant" && selectorPath && pick(selectorPath)) {
    const current = String(getAt(props.draft, [...path, node.discriminator]) ?? Object.keys(node.options)[0]);
    const id = `f-${selectorPath}`;
    selector = (
      <div className="field" data-field={selectorPath}>
        <label htmlFor={id}>{node.discriminator}</label>
        <select id={id} name={selectorPath} value={current} onChange={(e) => props.onVariant(node, path, e.target.value)}>
          {Object.keys(node.options).map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </div>
    );
  } else if (!isGroup(node)) return <Leaf node={node} {...props} />;

  const leaves = children.filter((c) => !isGroup(c) && pick(c.path));
  const groups = children.filter((c) => isGroup(c) && pickedPaths(c, props.draft, pick).length > 0);
  if (!selector && leaves.length === 0 && groups.length === 0) return null;
  const groupError = props.errors[node.path];
  return (
    <fieldset className="group" data-group={node.path || "root"}>
      <legend>{legend ?? node.key}</legend>
      <div className="group-body">
        {groupError && <p className="field-error">{groupError}</p>}
        {(selector || leaves.length > 0) && (
          <div className="form-grid">
            {selector}
            {leaves.map((c) => (
              <Leaf key={c.path} node={c} {...props} />
            ))}
          </div>
        )}
        {groups.map((g) => (
          <Group key={g.path} node={g} pick={pick} {...props} />
        ))}
      </div>
    </fieldset>
  );
}

/**
 * The fields most runs set, shown first; every other field is under "Advanced" (the schema's
 * ≈ 60), which opens by itself when one of its fields has an error or differs from the baseline
 * (until the user opens or closes it); its summary counts those either way.
 */
export const COMMON_FIELDS: ReadonlySet<string> = new Set([
  "name", "seed", "steps_count", "batch_size", "eval_interval", "eval_episodes", "backend",
  "envs.name", "envs.task", "envs.num_sentences", "algo.encoder.type", "algo.encoder.path", "algo.optimizer.lr",
]);
const common: Pick = (p) => COMMON_FIELDS.has(p);
const advanced: Pick = (p) => !COMMON_FIELDS.has(p);

/** The config form's sections: top-level settings, then the envs and algo groups, for the fields `pick` keeps. */
function Sections({ root, pick, ...props }: { root: FieldNode & { kind: "object" }; pick: Pick } & FieldsProps) {
  const leaves = root.children.filter((c) => !isGroup(c));
  const groups = root.children.filter(isGroup);
  return (
    <>
      <Group node={{ ...root, children: leaves }} legend="training" pick={pick} {...props} />
      {groups.map((g) => (
        <Group key={g.path} node={g} pick={pick} {...props} />
      ))}
    </>
  );
}

/** The whole config form: the common fields, then the rest under "Advanced". */
export function ConfigFields({ root, ...props }: { root: FieldNode } & FieldsProps) {
  // null: open exactly while an advanced field has an error or a change; a click decides from then on
  const [choice, setChoice] = useState<boolean | null>(null);
  if (root.kind !== "object") return null;
  const paths = pickedPaths(root, props.draft, advanced);
  const errors = paths.filter((p) => props.errors[p]).length;
  const changed = paths.filter((p) => differs(getAt(props.draft, split(p)), getAt(props.baseline, split(p)))).length;
  const open = choice ?? (errors > 0 || changed > 0);
  const notes = [errors && `${errors} with an error`, changed && `${changed} changed`].filter(Boolean).join(", ");
  return (
    <div className="stack">
      <Sections root={root} pick={common} {...props} />
      <details className="advanced" open={open} data-testid="advanced-fields" data-fields={paths.length}>
        <summary
          onClick={(e) => {
            e.preventDefault(); // the open state is React's
            setChoice(!open);
          }}
        >
          Advanced: {paths.length} more fields{notes ? ` (${notes})` : ""}
        </summary>
        {open && <Sections root={root} pick={advanced} {...props} />}
      </details>
    </div>
  );
}
