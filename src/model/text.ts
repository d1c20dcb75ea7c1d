/**
 * Small scans of untrusted text (transcripts, tool outputs, model replies) in one pass each: what a trailing-run
 * regular expression (`/\n+$/`, `/[.,:;]+$/`) would cut, without its quadratic cost on a long run that does not end
 * the string (the engine retries the run from each of its characters).
 */

/** Whether `c` (one UTF-16 unit) is what `\s` matches in a JavaScript regular expression. */
export function isSpace(c: string): boolean {
  const n = c.charCodeAt(0);
  if (n <= 0x20) return n === 0x20 || (n >= 0x09 && n <= 0x0d);
  if (n < 0xa0) return false;
  return (
    n === 0xa0 ||
    n === 0x1680 ||
    (n >= 0x2000 && n <= 0x200a) ||
    n === 0x2028 ||
    n === 0x2029 ||
    n === 0x202f ||
    n === 0x205f ||
    n === 0x3000 ||
    n === 0xfeff
  );
}

/** Whether `c` is a line terminator, what `.` does not match: `\n`, `\r`, U+2028, U+2029. */
export function isLineTerminator(c: string): boolean {
  return c === '\n' || c === '\r' || c === '\u2028' || c === '\u2029';
}

/** Characters of a set: the characters of a string, or a predicate. */
export type CharSet = string | ((c: string) => boolean);

const inSet = (set: CharSet, c: string) => (typeof set === 'string' ? set.includes(c) : set(c));

/** Where the run of `set` characters that ends `s` starts (`s.length` when `s` does not end in one). */
export function trailingRunStart(s: string, set: CharSet, from = 0): number {
  let i = s.length;
  while (i > from && inSet(set, s[i - 1]!)) i--;
  return i;
}

/** Where the run of `set` characters that opens `s` ends (0 when `s` does not open with one). */
export function leadingRunEnd(s: string, set: CharSet): number {
  let i = 0;
  while (i < s.length && inSet(set, s[i]!)) i++;
  return i;
}

/** `s` without the run of `set` characters it ends with: `s.replace(/[set]+$/, '')` in one pass. */
export function trimEndOf(s: string, set: CharSet): string {
  const i = trailingRunStart(s, set);
  return i === s.length ? s : s.slice(0, i);
}

/** `s` without the run of `set` characters it opens with: `s.replace(/^[set]+/, '')`. */
export function trimStartOf(s: string, set: CharSet): string {
  const i = leadingRunEnd(s, set);
  return i === 0 ? s : s.slice(i);
}

/**
 * The `[…]` that ends `s` (`claude-sonnet-4-5[1m]` → `[1m]`), as `/\[[^\]]*\]$/` finds it: from the first `[` after
 * the `]` before the last; '' when there is none.
 */
export function bracketSuffix(s: string): string {
  if (s.length < 2 || !s.endsWith(']')) return '';
  const open = s.indexOf('[', s.lastIndexOf(']', s.length - 2) + 1);
  return open === -1 || open >= s.length - 1 ? '' : s.slice(open);
}
