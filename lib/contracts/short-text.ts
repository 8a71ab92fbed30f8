/**
 * The one form in which an error text repeats what a client or a file gave it (an unknown key, an
 * id, a path): printable — control, format and unpaired surrogate characters as \uXXXX — and at
 * most `max` characters, so an error never carries long input or bytes a terminal or page would
 * act on.
 */
export const SHORT_TEXT_MAX = 64;

export function shortText(s: string, max = SHORT_TEXT_MAX): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this escapes
  const printable = s.replace(/[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]|[\ud800-\udfff]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return printable.length > max ? `${printable.slice(0, max - 1)}…` : printable;
}
