/**
 * Import cycles among the project's own modules. Reads every `.ts`/`.tsx` file under the folders
 * named (server/, lib/, components/, app/ by default), takes its static relative imports and
 * re-exports (`import … from "./x.ts"`, `export … from "./x.ts"`, `import "./x.ts"`), leaves out
 * type-only ones (`import type`, `export type`, or a brace list whose every name is `type X`: they
 * vanish at run time), and reports each strongly connected component of more than one file (or a
 * file importing itself) as one cycle.
 *
 * `tsx scripts/import-cycles.ts [--types] [DIR...]` prints the cycles, one a line, and exits 1 when
 * there are any (`--types` counts type-only imports too); test/import-cycles.test.ts fails on any
 * run-time cycle, and on any type-only one too.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const ROOT = path.resolve(import.meta.dirname, "..");
export const DEFAULT_DIRS = ["server", "lib", "components", "app"];

const SOURCE = /\.(ts|tsx)$/;

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules" && !entry.name.startsWith(".")) out.push(...sourceFiles(p));
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

/** Comments out of the way (strings are left as they are: an import path never holds a comment). */
const stripComments = (src: string) => src.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");

/** The relative specifiers a file imports or re-exports: at run time only, or with `withTypes` type-only ones too. */
export function runtimeImports(src: string, withTypes = false): string[] {
  const text = stripComments(src);
  const specs: string[] = [];
  // an import/export clause holds names, braces, commas, `*`, `as` and `type` only (so `export const … from` text never matches)
  const statement = /(?:^|[;\n])\s*(import|export)\s+([\w$*\s{},]*?)\s*from\s*["']([^"']+)["']|(?:^|[;\n])\s*import\s*["']([^"']+)["']/g;
  for (const m of text.matchAll(statement)) {
    if (m[4] !== undefined) {
      specs.push(m[4]); // a bare side-effect import
      continue;
    }
    const clause = m[2];
    if (!withTypes && /^type\b/.test(clause)) continue; // import type / export type
    const braces = /^\{([\s\S]*)\}$/.exec(clause.trim());
    if (!withTypes && braces) {
      const names = braces[1].split(",").map((s) => s.trim()).filter(Boolean);
      if (names.length > 0 && names.every((n) => /^type\s/.test(n))) continue; // every name type-only
    }
    specs.push(m[3]);
  }
  return specs.filter((s) => s.startsWith("."));
}

function resolve(from: string, spec: string, known: Set<string>): string | null {
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, "index.ts"), path.join(base, "index.tsx")]) if (known.has(candidate)) return candidate;
  return null;
}

/** The import graph: file → the files it imports at run time (absolute paths). */
export function importGraph(dirs = DEFAULT_DIRS, root = ROOT, withTypes = false): Map<string, string[]> {
  const files = dirs.flatMap((d) => sourceFiles(path.join(root, d)));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps = runtimeImports(fs.readFileSync(f, "utf8"), withTypes)
      .map((s) => resolve(f, s, known))
      .filter((d): d is string => d !== null);
    graph.set(f, [...new Set(deps)]);
  }
  return graph;
}

/** The strongly connected components with a cycle in them (Tarjan), each sorted, relative to root. */
export function importCycles(dirs = DEFAULT_DIRS, root = ROOT, withTypes = false): string[][] {
  const graph = importGraph(dirs, root, withTypes);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.map((f) => path.relative(root, f)).sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const withTypes = process.argv.includes("--types");
  const args = process.argv.slice(2).filter((a) => a !== "--types");
  const cycles = importCycles(args.length ? args : DEFAULT_DIRS, ROOT, withTypes);
  for (const c of cycles) console.log(c.join(" ↔ "));
  if (!cycles.length) console.log("no import cycles");
  process.exitCode = cycles.length ? 1 : 0;
}
