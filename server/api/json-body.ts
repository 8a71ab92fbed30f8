/**
 * Checks of a JSON request body that must not cost the server more than the body's size: its
 * nesting depth, counted on the text before parsing (a 10 KB body of 5,000 nested arrays once
 * answered 500 and blocked the event loop for seconds: the checks after parsing recursed and
 * copied their path at every level), and unpaired surrogates, found with an explicit stack.
 */

/** The deepest nesting a body may have (run configs and dashboard specs need under 10). */
export const JSON_MAX_DEPTH = 32;

/** The deepest nesting of `[`/`{` in a JSON text, stopping early once past `limit`. Linear, no recursion. */
export function jsonDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let most = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > most && (most = depth) > limit) return most;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return most;
}

/** The first string (key or value) holding an unpaired UTF-16 surrogate, as a field path; null if none. */
export function loneSurrogateAt(root: unknown): string | null {
  // with the u flag a paired surrogate is one code point, so only unpaired halves match
  const bad = (t: string) => /[\uD800-\uDFFF]/u.test(t);
  // each entry keeps its parent: the path is built only for the one string reported
  interface Entry {
    value: unknown;
    key: string;
    parent: Entry | null;
  }
  const pathOf = (e: Entry | null, tail: string[] = []): string => {
    const parts = [...tail];
    for (let x = e; x && x.parent; x = x.parent) parts.unshift(x.key);
    return parts.join(".") || "body";
  };
  const stack: Entry[] = [{ value: root, key: "", parent: null }];
  while (stack.length) {
    const e = stack.pop()!;
    const v = e.value;
    if (typeof v === "string") {
      if (bad(v)) return pathOf(e);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], key: String(i), parent: e });
    } else if (v && typeof v === "object") {
      const entries = Object.entries(v);
      for (const [k] of entries) if (bad(k)) return pathOf(e, ["(key)"]);
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i][1], key: entries[i][0], parent: e });
    }
  }
  return null;
}
