/**
 * A fast token estimate that needs no vocabulary. It walks the text once, splitting it the way o200k-style tokenizers
 * pre-split text (letter runs by case, digits in groups of three, punctuation runs, whitespace runs, a leading space
 * or symbol joined to the word after it), and prices each piece from tables of how many o200k tokens such pieces take
 * on average. The tables were measured by `bench/fit-estimator.js` (`node bench/fit-estimator.js`) over real agent transcripts: they describe the
 * tokenizer, not any transcript, so they hold for prose, code, JSON, logs and hashes alike.
 *
 * Hex and base64 need no special case: their letter/digit alternation splits into many short pieces, which is what
 * makes them expensive for real tokenizers too (a chars/4 rule undercounts them by half).
 */

// Tokens for a piece of length 1..16 (index = length); longer pieces add `slope` tokens per extra character.
interface Table {
  byLength: Float64Array;
  slope: number;
}

function table(values: number[], slope: number): Table {
  const byLength = new Float64Array(17);
  for (let i = 1; i <= 16; i++) byLength[i] = values[Math.min(i, values.length) - 1]!;
  return { byLength, slope };
}

function price(t: Table, len: number): number {
  return len <= 16 ? t.byLength[len]! : t.byLength[16]! + (len - 16) * t.slope;
}

// Word tables by shape (l: lowercase, C: Capitalized, U: UPPER, M: MIXed caps then lower) and by what precedes the
// word: nothing, one space, or one symbol (`.ts`, `_id`, `/src`).
const LOWER = table([1, 1, 1.11, 1.05, 1.08, 1.12, 1.17, 1.13, 1.46, 2.06, 1.4, 2.5, 2.6, 2.8, 3, 3.2], 0.2);
const LOWER_SPACE = table([1, 1, 1, 1.01, 1.02, 1.02, 1.02, 1.04, 1.06, 1.08, 1.18, 1.13, 1.13, 1.16, 1.16, 1.5], 0.12);
const LOWER_SYMBOL = table(
  [1, 1.01, 1.13, 1.31, 1.26, 1.42, 1.6, 1.61, 1.72, 1.86, 2.14, 2.13, 3.1, 2.8, 3.1, 3.2],
  0.2,
);
const CAP = table([1, 1.04, 1.04, 1.07, 1.02, 1.04, 1.02, 1.04, 1.2, 1.52, 1.22, 1.2, 1.47, 1.48, 1.6, 1.8], 0.15);
const CAP_SPACE = table([1, 1, 1, 1.01, 1.02, 1.05, 1.05, 1.12, 1.18, 1.25, 1.65, 1.4, 1.42, 1.46, 1.4, 1.8], 0.15);
const CAP_SYMBOL = table(
  [1.5, 1.6, 1.77, 1.73, 1.72, 1.89, 1.94, 1.84, 1.97, 2.03, 2.55, 2.23, 2.28, 2.7, 2.5, 3],
  0.2,
);
const UPPER = table([1, 1.04, 1.29, 1.43, 1.95, 1.82, 2.5, 2.9, 3.05, 3.5, 3.6, 3.7, 3.8, 3.9, 4, 4.2], 0.3);
const UPPER_SPACE = table([1, 1, 1, 1.2, 1.13, 1.73, 1.43, 2.35, 1.85, 2.47, 2.17, 2.39, 2.4, 2.6, 2.8, 3], 0.25);
const UPPER_SYMBOL = table(
  [1.2, 1.46, 1.68, 1.29, 1.73, 2.47, 1.96, 3.5, 2.44, 3, 3.54, 3.85, 4.1, 4.2, 4.3, 4.5],
  0.3,
);
// Mixed pieces (an acronym run into a word: `HTTPServer`, `TSConfig`) are rare and noisy; a smooth rise by length.
const MIXED = table([1.5, 1.6, 1.8, 2, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 3, 3.1, 3.2], 0.15);
const MIXED_SPACE = table([1.2, 1.3, 1.4, 1.5, 1.4, 1.3, 1.5, 1.8, 2, 2.2, 2.3, 2.5, 2.7, 2.9, 3, 3.1], 0.15);
const MIXED_SYMBOL = table([2, 2.2, 2.4, 2.6, 2.6, 2.5, 2.8, 3, 3.1, 3.2, 3.3, 3.5, 3.7, 3.9, 4.1, 4.3], 0.15);
/** The word tables by shape × 3 + prefix (shape: 0 lower, 1 Capitalized, 2 UPPER, 3 MIXed; prefix: 0 none, 1 space, 2 symbol). */
const WORD_TABLES: readonly Table[] = [
  LOWER,
  LOWER_SPACE,
  LOWER_SYMBOL,
  CAP,
  CAP_SPACE,
  CAP_SYMBOL,
  UPPER,
  UPPER_SPACE,
  UPPER_SYMBOL,
  MIXED,
  MIXED_SPACE,
  MIXED_SYMBOL,
];
// Punctuation runs, alone or with one leading space; whitespace runs that hold a newline.
const SYMBOLS = table([1, 1.01, 1.19, 1.6, 2.1, 2.6, 3, 3.4, 3.8, 4.2, 4.6, 5, 5.4, 5.8, 6.1, 6.4], 0.3);
const SPACE_SYMBOLS = table([1, 1, 1.05, 1.4, 1.9, 2.4, 2.9, 3.3, 3.4, 3.5, 3.6, 3.8, 4.2, 4.6, 5, 5.4], 0.3);
const NEWLINES = table([1, 1.44, 1.91, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], 0.02);

/** CJK characters (kana, hanzi/kanji, hangul) cost about this much each; letters of other scripts, these. */
const CJK_PER_CHAR = 0.78;
const OTHER_SCRIPT_PER_CHAR = 0.22;
const OTHER_SCRIPT_LONG_RUN_PER_CHAR = 0.45;
const ASTRAL_CHAR = 2.5;

// Character classes, by code unit.
const C_LOWER = 1;
const C_UPPER = 2;
const C_DIGIT = 3;
const C_SPACE = 4; // space and tab
const C_NEWLINE = 5; // \n and \r
const C_SYMBOL = 6;
const C_CJK = 7;
const C_OTHER_LETTER = 8;
const C_ASTRAL = 9;
const C_UNICODE_SYMBOL = 10;

/**
 * The class of every UTF-16 code unit, built on the first estimate (64 KB, well under a millisecond): the scanning
 * loops below then read a table instead of calling a function per character, which is what a cold process
 * (interpreted, not yet optimized code) spends most of its time on.
 */
let classes: Uint8Array | undefined;
function classTable(): Uint8Array {
  if (classes) return classes;
  const t = new Uint8Array(65536);
  for (let c = 0; c < 256; c++) {
    if ((c >= 97 && c <= 122) || (c >= 0xdf && c <= 0xff && c !== 0xf7)) t[c] = C_LOWER;
    else if ((c >= 65 && c <= 90) || (c >= 0xc0 && c <= 0xde && c !== 0xd7)) t[c] = C_UPPER;
    else if (c >= 48 && c <= 57) t[c] = C_DIGIT;
    else if (c === 32 || c === 9) t[c] = C_SPACE;
    else if (c === 10 || c === 13) t[c] = C_NEWLINE;
    else t[c] = C_SYMBOL;
  }
  // Latin Extended-A/B (Polish, Czech, Turkish…) tokenizes like the Latin letters it extends.
  t.fill(C_LOWER, 0x100, 0x250);
  t.fill(C_OTHER_LETTER, 0x250, 0x2000);
  t.fill(C_UNICODE_SYMBOL, 0x2000);
  for (const [from, to] of [
    [0x3040, 0x30ff],
    [0x3400, 0x9fff],
    [0xac00, 0xd7af],
    [0xf900, 0xfaff],
    [0xff00, 0xffef],
  ] as const)
    t.fill(C_CJK, from, to + 1);
  t.fill(C_ASTRAL, 0xd800, 0xdc00); // high surrogates: the first half of a character beyond the BMP
  classes = t;
  estimateTokens(PRIMER);
  return t;
}

/**
 * Text that takes every branch of `estimateTokens` (each word shape with each prefix, short and long pieces, digits,
 * whitespace with and without newlines, a space before symbols, symbol runs, CJK, other scripts, astral characters,
 * Unicode symbols), estimated once when the class table is built. V8 optimizes the estimator after a few hundred KB
 * of text, from what the interpreter has seen so far; a branch it has not seen yet then throws the optimized code
 * away, and each recompile costs tens of milliseconds while a fresh process runs the estimator interpreted (measured
 * on the pi-mono transcript: two such deoptimizations in `abridge inspect`, ~30 ms of its time). Estimating this
 * text first costs well under a millisecond and changes no estimate.
 */
const PRIMER =
  'The quick Brown fox JUMPS over HTTPServer and TSConfig: ./src/index.ts _id /usr/LOCAL .Net x = 12345678;\n\n' +
  '  if (a) {\n\treturn b;\n}  -- ==> [] {} ... "quoted" `tick` averyveryverylonglowercaseword' +
  ' AVERYVERYLONGUPPERCASEWORD Averyverylongcapitalizedword HTTPAVERYLONGMIXEDWordxx .averyveryverylonglowercaseword' +
  ' _AVERYVERYLONGUPPERCASEWORD /Averyverylongcapitalizedword -HTTPAVERYLONGMIXEDWordxx !!!!!!!!!!!!!!!!!!!!!!!!' +
  '  !!!!!!!!!!!!!!!!!!!! \r\n 日本語のテキスト 한국어 中文 Привет мир Ελληνικά ภาษาไทยยาวมากมากมาก 😀 🚀 → ✓ •' +
  ' ─────── ⎯⎯ é ß Ł std::vector\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n end \n';

/**
 * Gets the estimator optimized while the caller does something else: estimates the primer (~35 KB of text, a few
 * milliseconds) often enough that V8 marks the estimator for optimization, and compiles it on a background thread.
 * A command about to read a large transcript and then estimate all of it calls this first, so that the estimates run
 * optimized from their start instead of interpreted until the compile is done (~45 ms of `abridge inspect` on the
 * 2.4 MB pi-mono transcript, for the few milliseconds this takes).
 */
export function warmEstimator(rounds = WARM_ROUNDS): void {
  for (let i = 0; i < rounds; i++) estimateTokens(PRIMER);
}
// Fewer rounds (25) left the estimator unmarked in about a third of fresh processes on this machine; 50 did not.
const WARM_ROUNDS = 50;

/**
 * Symbols beyond ASCII (arrows, bullets, check marks, box drawing) are one token each in o200k, except box-drawing
 * lines, whose runs merge, and rarer technical symbols (U+2300–U+23FF, e.g. the `⎯` rules test runners print), which
 * fall back to their three UTF-8 bytes.
 */
function unicodeSymbolTokens(c: number): number {
  if (c >= 0x2500 && c <= 0x257f) return 0.25;
  if (c >= 0x2300 && c <= 0x23ff) return 3;
  return 1;
}

// Letters are the classes 1 and 2 (C_LOWER, C_UPPER); every code unit has a class ≥ 1. Compared inline, not called.

/** Estimated o200k tokens of `text`. About as fast as reading the string once. */
export function estimateTokens(text: string): number {
  const CLASS = classTable();
  const n = text.length;
  let tokens = 0;
  let i = 0;
  while (i < n) {
    const k = CLASS[text.charCodeAt(i)]!;
    // A space or one symbol right before a word joins it.
    let prefix = 0; // 0 none, 1 space, 2 symbol
    let j = i;
    if ((k === C_SPACE || k === C_SYMBOL) && i + 1 < n && CLASS[text.charCodeAt(i + 1)]! <= C_UPPER) {
      prefix = text.charCodeAt(i) === 32 ? 1 : 2;
      j = i + 1;
    }
    const kj = prefix ? CLASS[text.charCodeAt(j)]! : k;
    if (kj <= C_UPPER) {
      let e = j;
      while (e < n && CLASS[text.charCodeAt(e)]! === C_UPPER) e++;
      const ups = e - j;
      while (e < n && CLASS[text.charCodeAt(e)]! === C_LOWER) e++;
      const len = e - i;
      const lows = e - j - ups;
      const t = WORD_TABLES[(lows === 0 ? 6 : ups === 0 ? 0 : ups === 1 ? 3 : 9) + prefix]!;
      // price(t, len), written out: this is the hottest line, and a cold process runs it unoptimized.
      tokens += len <= 16 ? t.byLength[len]! : t.byLength[16]! + (len - 16) * t.slope;
      i = e;
      continue;
    }
    switch (k) {
      case C_DIGIT: {
        let e = i + 1;
        while (e < n && e - i < 3 && CLASS[text.charCodeAt(e)]! === C_DIGIT) e++;
        tokens += 1;
        i = e;
        continue;
      }
      case C_SPACE:
      case C_NEWLINE: {
        let e = i;
        let newline = false;
        for (; e < n; e++) {
          const c = CLASS[text.charCodeAt(e)]!;
          if (c === C_NEWLINE) newline = true;
          else if (c !== C_SPACE) break;
        }
        // The last space goes with what follows, unless that is a digit or the end.
        const next = e < n ? CLASS[text.charCodeAt(e)]! : 0;
        if (e < n && next !== C_DIGIT && text.charCodeAt(e - 1) === 32) {
          if (e - i === 1) {
            // A lone space before symbols: priced with the symbol run.
            if (next === C_SYMBOL) {
              let s = e;
              while (s < n && CLASS[text.charCodeAt(s)]! === C_SYMBOL) s++;
              tokens += price(SPACE_SYMBOLS, s - i);
              i = s;
              continue;
            }
            i = e;
            continue;
          }
          e--;
        }
        tokens += newline ? price(NEWLINES, countNewlines(text, i, e)) : 1;
        i = e;
        continue;
      }
      case C_CJK: {
        let e = i;
        while (e < n && CLASS[text.charCodeAt(e)]! === C_CJK) e++;
        tokens += Math.max(1, (e - i) * CJK_PER_CHAR);
        i = e;
        continue;
      }
      case C_OTHER_LETTER: {
        let e = i;
        while (e < n && CLASS[text.charCodeAt(e)]! === C_OTHER_LETTER) e++;
        // Words of alphabetic scripts (Cyrillic, Greek, Arabic…) are often whole tokens; long unspaced runs (Thai) are not.
        const len = e - i;
        tokens +=
          0.4 + Math.min(len, 8) * OTHER_SCRIPT_PER_CHAR + Math.max(0, len - 8) * OTHER_SCRIPT_LONG_RUN_PER_CHAR;
        i = e;
        continue;
      }
      case C_ASTRAL:
        tokens += ASTRAL_CHAR;
        i += 2;
        continue;
      case C_UNICODE_SYMBOL: {
        let e = i;
        let run = 0;
        for (; e < n; e++) {
          const c = text.charCodeAt(e);
          if (CLASS[c] !== C_UNICODE_SYMBOL) break;
          run += unicodeSymbolTokens(c);
        }
        tokens += Math.max(1, run);
        i = e;
        continue;
      }
      default: {
        let e = i;
        while (e < n && CLASS[text.charCodeAt(e)]! === C_SYMBOL) e++;
        // The last symbol before a word joins the word.
        if (e < n && e - i > 1 && CLASS[text.charCodeAt(e)]! <= C_UPPER) e--;
        tokens += price(SYMBOLS, e - i);
        i = e;
      }
    }
  }
  return Math.round(tokens);
}

function countNewlines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (text.charCodeAt(i) === 10) n++;
  return Math.max(1, n);
}
