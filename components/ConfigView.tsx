/** A run's config as a compact, YAML-like tree. */
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function scalar(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(scalar).join(", ")}]`;
  if (typeof v === "string") return /^[\w./-]*$/.test(v) && v !== "" ? v : JSON.stringify(v);
  return String(v);
}

function lines(v: unknown, indent: number, out: { indent: number; key: string; value?: string }[]) {
  if (!isObj(v)) return;
  for (const [k, val] of Object.entries(v)) {
    if (isObj(val)) {
      out.push({ indent, key: k });
      lines(val, indent + 1, out);
    } else out.push({ indent, key: k, value: scalar(val) });
  }
}

export function ConfigView({ config }: { config: unknown }) {
  const out: { indent: number; key: string; value?: string }[] = [];
  lines(config, 0, out);
  return (
    <pre className="config-tree" data-testid="config-view">
      {out.map((l, i) => (
        <div key={i}>
          {"  ".repeat(l.indent)}
          <span className="k">{l.key}:</span>
          {l.value !== undefined ? ` ${l.value}` : ""}
        </div>
      ))}
    </pre>
  );
}
