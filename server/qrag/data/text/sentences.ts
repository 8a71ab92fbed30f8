/**
 * Regex sentence splitter in the spirit of the reference's `split_into_sentences`
 * (envs/dataloaders/niah.py): a newline is a hard stop; dots inside common abbreviations,
 * initials, acronyms, decimal/dotted numbers and URLs do not end a sentence; otherwise split
 * after `.`, `?` or `!` (and any closing quotes/brackets) followed by whitespace and a word that
 * does not start in lower case.
 */
const ABBREVIATIONS = [
  "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "inc", "ltd", "co", "corp",
  "gen", "gov", "sen", "rep", "col", "capt", "lt", "sgt", "hon", "rev", "messrs", "no", "nos", "vol",
  "fig", "e.g", "i.e", "a.m", "p.m", "u.s", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
  "sept", "oct", "nov", "dec",
];
const ABBREV_SET = new Set(ABBREVIATIONS);
const PROTECT = "\u0000"; // stands in for a protected dot while splitting

function protectDots(line: string): string {
  return line
    // URLs and e-mail-like tokens
    .replace(/\b(?:https?:\/\/|www\.)\S+?(?=[.?!,;:)]*(?:\s|$))/gi, (m) => m.replace(/\./g, PROTECT))
    // dotted numbers: 3.14, 1.2.3
    .replace(/\d(?:\.\d+)+/g, (m) => m.replace(/\./g, PROTECT))
    // acronyms and initials: U.S.A., J. R. R. (single letter followed by a dot)
    .replace(/\b([A-Za-z])\.(?=\s*[A-Za-z]\.|\s+[A-Z][a-z])/g, `$1${PROTECT}`)
    // known abbreviations
    .replace(/\b([A-Za-z]+(?:\.[A-Za-z]+)?)\.(?=\s)/g, (m, w: string) => (ABBREV_SET.has(w.toLowerCase()) ? `${w}${PROTECT}` : m));
}

/** Splits text into trimmed, non-empty sentences. Deterministic, no external data. */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  for (const rawLine of text.split(/\r?\n/)) {
    const line = protectDots(rawLine);
    // the last branch takes text up to a terminator inside a word ("window.x", "node.js"), which
    // the loop below keeps in the sentence; without it matchAll skipped that text, dropping it
    const re = /[^.?!]*(?:[.?!]+["')\]\u201d\u2019]*(?=\s|$)|[^.?!]+$)|[^.?!]*[.?!]+/g;
    let buf = "";
    for (const m of line.matchAll(re)) {
      buf += m[0];
      // end the sentence only when the terminator is followed by whitespace (or the line end)
      // and the next word does not start in lower case (that is an abbreviation we missed)
      const end = (m.index ?? 0) + m[0].length;
      const rest = line.slice(end);
      if (/[.?!]["')\]\u201d\u2019]*$/.test(m[0]) && (rest === "" || /^\s+(?![a-z])/.test(rest))) {
        pushSentence(out, buf);
        buf = "";
      }
    }
    pushSentence(out, buf);
  }
  return out;
}

function pushSentence(out: string[], s: string): void {
  const t = s.split(PROTECT).join(".").trim();
  if (t) out.push(t);
}
