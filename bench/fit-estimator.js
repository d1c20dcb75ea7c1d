// node bench/fit-estimator.js — measures how many o200k tokens each kind of pre-token takes, by length, over every
// text of the ../shared/corpus transcripts: the source of the tables in src/tokens/estimate.ts. Prints one line per
// class: `length:mean tokens(occurrences)`. Classes: w<shape><prefix> words (shape l lower, C Capitalized, U UPPER,
// M MIXed; prefix s space, p symbol), d digit groups, p symbol runs, ps space+symbols, s spaces, n newline runs,
// k CJK runs, o other-script runs, e astral characters. Run `npm run build` first.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { readSession } from '../dist/index.js';

const corpus = process.env.ABRIDGE_CORPUS ?? resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/corpus');
const texts = [];
for (const folder of ['pi', 'claude-code', 'codex', 'swe-agent']) {
  const dir = join(corpus, folder);
  if (!existsSync(dir)) continue;
  for (const f of readdirSync(dir)) {
    const s = await readSession(join(dir, f));
    for (const e of s.entries)
      for (const p of e.message?.parts ?? []) {
        if (p.type === 'text' || p.type === 'thinking') texts.push(p.text);
        else if (p.type === 'tool-call') texts.push(JSON.stringify(p.arguments));
        else if (p.type === 'tool-result') for (const c of p.content) if (c.type === 'text') texts.push(c.text);
      }
  }
}

const isLower = (c) => (c >= 97 && c <= 122) || (c >= 0xdf && c <= 0xff && c !== 0xf7);
const isUpper = (c) => (c >= 65 && c <= 90) || (c >= 0xc0 && c <= 0xde && c !== 0xd7);
const isDigit = (c) => c >= 48 && c <= 57;
const isWs = (c) => c === 32 || c === 9 || c === 10 || c === 13;
const isCjk = (c) =>
  (c >= 0x3040 && c <= 0x30ff) ||
  (c >= 0x3400 && c <= 0x9fff) ||
  (c >= 0xac00 && c <= 0xd7af) ||
  (c >= 0xf900 && c <= 0xfaff) ||
  (c >= 0xff00 && c <= 0xffef);
const isOtherLetter = (c) => c >= 0x100 && c < 0x2000 && !isCjk(c);

const agg = new Map();
const cache = new Map();
function add(cls, s) {
  let t = cache.get(s);
  if (t === undefined) {
    t = countTokens(s);
    cache.set(s, t);
  }
  const key = cls + ':' + Math.min(s.length, 40);
  const a = agg.get(key) ?? { n: 0, t: 0 };
  a.n++;
  a.t += t;
  agg.set(key, a);
}

for (const text of texts) {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    const start = i;
    // optional one-char prefix (space or punctuation) before letters
    let prefix = '';
    let j = i;
    if (
      !isDigit(c) &&
      !isUpper(c) &&
      !isLower(c) &&
      !isOtherLetter(c) &&
      !isCjk(c) &&
      c !== 10 &&
      c !== 13 &&
      j + 1 < n
    ) {
      const d = text.charCodeAt(j + 1);
      if (isUpper(d) || isLower(d)) {
        prefix = c === 32 ? 's' : 'p';
        j++;
      }
    }
    const c0 = text.charCodeAt(j);
    if (isUpper(c0) || isLower(c0)) {
      let k = j;
      while (k < n && isUpper(text.charCodeAt(k))) k++;
      const ups = k - j;
      while (k < n && isLower(text.charCodeAt(k))) k++;
      const lows = k - j - ups;
      const shape = lows === 0 ? 'U' : ups === 0 ? 'l' : ups === 1 ? 'C' : 'M';
      add('w' + shape + prefix, text.slice(start, k));
      i = k;
      continue;
    }
    if (isDigit(c)) {
      let k = i;
      while (k < n && k - i < 3 && isDigit(text.charCodeAt(k))) k++;
      add('d', text.slice(i, k));
      i = k;
      continue;
    }
    if (isWs(c)) {
      let k = i;
      let nl = false;
      while (k < n && isWs(text.charCodeAt(k))) {
        if (text.charCodeAt(k) === 10) nl = true;
        k++;
      }
      // the last space before a word or punctuation goes with it
      if (k < n && k - i > 1 && text.charCodeAt(k - 1) === 32 && !isDigit(text.charCodeAt(k))) k--;
      else if (k < n && k - i === 1 && c === 32 && !isDigit(text.charCodeAt(k))) {
        /* single space: prefix of next pretoken */
        const d = text.charCodeAt(k);
        if (!isUpper(d) && !isLower(d) && !isOtherLetter(d) && !isCjk(d)) {
          let m = k;
          while (
            m < n &&
            !isWs(text.charCodeAt(m)) &&
            !isUpper(text.charCodeAt(m)) &&
            !isLower(text.charCodeAt(m)) &&
            !isDigit(text.charCodeAt(m)) &&
            !isCjk(text.charCodeAt(m)) &&
            !isOtherLetter(text.charCodeAt(m))
          )
            m++;
          add('ps', text.slice(i, m));
          i = m;
          continue;
        }
        i = k;
        continue;
      }
      add(nl ? 'n' : 's', text.slice(i, k));
      i = k;
      continue;
    }
    if (isCjk(c)) {
      let k = i;
      while (k < n && isCjk(text.charCodeAt(k))) k++;
      add('k', text.slice(i, k));
      i = k;
      continue;
    }
    if (isOtherLetter(c)) {
      let k = i;
      while (k < n && isOtherLetter(text.charCodeAt(k))) k++;
      add('o', text.slice(i, k));
      i = k;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff) {
      add('e', text.slice(i, i + 2));
      i += 2;
      continue;
    }
    // punctuation run
    let k = i;
    while (k < n) {
      const d = text.charCodeAt(k);
      if (
        isWs(d) ||
        isUpper(d) ||
        isLower(d) ||
        isDigit(d) ||
        isCjk(d) ||
        isOtherLetter(d) ||
        (d >= 0xd800 && d <= 0xdbff)
      )
        break;
      k++;
    }
    // a run ending right before letters gives its last char to the word
    if (k < n && k - i > 1 && (isUpper(text.charCodeAt(k)) || isLower(text.charCodeAt(k)))) k--;
    add('p', text.slice(i, k));
    i = k;
  }
}
const out = {};
for (const [k, v] of [...agg.entries()].sort()) out[k] = [v.n, +(v.t / v.n).toFixed(3)];
const cls = {};
for (const [k, [n, t]] of Object.entries(out)) {
  const c = k.split(':')[0];
  cls[c] ??= [];
  cls[c].push(`${k.split(':')[1]}:${t}(${n})`);
}
for (const [c, v] of Object.entries(cls)) console.log(c, v.slice(0, 26).join(' '));
