"use client";
/**
 * Renders the launch form from the field tree that lib/config-form.ts derives from the JSON Schema:
 * nested groups as fieldsets, the env variant as a select, enums and fields with known choices
 * (the schema's examples) as selects, fixed values as a one-option select, booleans as checkboxes,
 * numbers and number lists as text (so a non-number reaches zod and gets its message). A value that
 * differs from the baseline (the preset, or the run a clone comes from) is marked, with a reset.
 */
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

function Group({ node, legend, ...props }: { node: FieldNode; legend?: string } & FieldsProps) {
  const path = split(node.path);
  let children: FieldNode[];
  let selector = null;
  if (node.kind === "variant") {
    const current = String(getAt(props.draft, [...path, node.discriminator]) ?? Object.keys(node.options)[0]);
    const opt = node.options[current] ?? Object.values(node.options)[0];
    children = opt.children.filter((c) => c.key !== node.discriminator);
    const id = `f-${node.path}.${node.discriminator}`;
    selector = (
      <div className="field" data-field={`${node.path}.${node.discriminator}`}>
        <label htmlFor={id}>{node.discriminator}</label>
        <select id={id} name={`${node.path}.${node.discriminator}`} value={current} onChange={(e) => props.onVariant(node, path, e.target.value)}>
          {Object.keys(node.options).map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </div>
    );
  } else if (node.kind === "object") {
    children = node.children;
  } else return <Leaf node={node} {...props} />;

  const leaves = children.filter((c) => !isGroup(c));
  const groups = children.filter(isGroup);
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
          <Group key={g.path} node={g} {...props} />
        ))}
      </div>
    </fieldset>
  );
}

/** The whole config form: top-level settings, then the envs and algo groups. */
export function ConfigFields({ root, ...props }: { root: FieldNode } & FieldsProps) {
  if (root.kind !== "object") return null;
  const leaves = root.children.filter((c) => !isGroup(c));
  const groups = root.children.filter(isGroup);
  return (
    <div className="stack">
      <Group node={{ ...root, children: leaves }} legend="training" {...props} />
      {groups.map((g) => (
        <Group key={g.path} node={g} {...props} />
      ))}
    </div>
  );
}
