import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { estimateTokenCount } from 'tokenx';
import { beforeAll, describe, expect, it } from 'vitest';
import { readSession } from '../formats/read.js';
import { argumentsText } from '../model/parts.js';
import type { Part } from '../model/types.js';
import { corpusAvailable, corpusFile, corpusFiles } from '../../test/support/corpus.js';
import { estimateTokens } from './estimate.js';
import { loadExactTokenizer, type ExactTokenizer } from './exact.js';

let o200k: ExactTokenizer;
beforeAll(async () => {
  o200k = await loadExactTokenizer('o200k_base');
});

// Deterministic pseudo-random bytes (LCG), so that every run tests the same texts.
function bytes(n: number, seed: number): Buffer {
  const out = Buffer.alloc(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}
const sha1 = (x: string) => createHash('sha1').update(x).digest('hex');

const TEXTS = {
  prose:
    'The committee met on Tuesday to review the proposal for the new library. After a long discussion about budgets, opening hours and the needs of students, most members agreed that the building should be open later in the evening. Several people raised concerns about staffing: the current team is already stretched, and hiring takes months. In the end, the chair suggested a trial period of six weeks, after which the committee would look at attendance figures and decide whether to continue. Everyone seemed relieved that a decision had finally been reached, although a few members still had doubts about the cost of heating the reading rooms through the winter.',
  typescript: `import { readFile } from 'node:fs/promises';
import type { Session, Entry } from './model/types.js';

export interface LoadOptions {
  /** Skip entries older than this timestamp. */
  since?: number;
  onProgress?: (done: number, total: number) => void;
}

export async function loadSessions(paths: string[], options: LoadOptions = {}): Promise<Map<string, Session>> {
  const out = new Map<string, Session>();
  let done = 0;
  for (const path of paths) {
    const text = await readFile(path, 'utf8');
    const entries: Entry[] = text
      .split('\\n')
      .filter((line) => line.trim().length > 0)
      .map((line, index) => ({ index, kind: 'message', raw: JSON.parse(line) as unknown }));
    if (options.since !== undefined) {
      const cutoff = options.since;
      entries.splice(0, entries.findIndex((e) => (e.timestamp ?? 0) >= cutoff));
    }
    out.set(path, { format: 'pi', info: {}, entries, problems: [] });
    options.onProgress?.(++done, paths.length);
  }
  return out;
}
`,
  json: JSON.stringify(
    {
      id: 'req_01HZX4',
      model: 'claude-sonnet-4-5',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'List the files in src/tokens and explain each one.' }] },
        {
          role: 'assistant',
          content: [
            {
              type: 'tool_use',
              id: 'toolu_01A2B3C4D5',
              name: 'bash',
              input: { command: 'ls -la src/tokens', timeout: 120000 },
            },
          ],
        },
      ],
      usage: { input_tokens: 1532, output_tokens: 87, cache_read_input_tokens: 20480, cache_creation_input_tokens: 0 },
      stop_reason: 'tool_use',
      metadata: { user_id: 'u-7781', tags: ['eval', 'tokens', 'nightly'] },
    },
    null,
    2,
  ),
  shellLog: `$ npm test

> abridge@0.1.0 test
> vitest run

 RUN  v3.2.4 /work/main

 ✓ src/formats/jsonl.test.ts (14 tests) 38ms
 ✗ src/tokens/counter.test.ts (6 tests | 1 failed) 112ms
   × counts tool results once
TypeError: Cannot read properties of undefined (reading 'length')
    at TokenCounter.countPart (/work/main/src/tokens/counter.ts:71:42)
    at TokenCounter.part (/work/main/src/tokens/counter.ts:58:20)
    at TokenCounter.message (/work/main/src/tokens/counter.ts:88:31)
    at file:///work/main/src/tokens/counter.test.ts:41:23
    at processTicksAndRejections (node:internal/process/task_queues:95:5)
npm ERR! code ELIFECYCLE
npm ERR! errno 1
npm ERR! abridge@0.1.0 test: \`vitest run\`
npm ERR! Exit status 1
`,
  gitLog: Array.from(
    { length: 12 },
    (_, i) =>
      `commit ${sha1(`c${i}`)}\nAuthor: Dev ${i} <dev${i}@example.com>\nDate:   Mon Mar ${i + 1} 10:${10 + i}:00 2026 +0100\n\n    Fix token count for case ${i}\n`,
  ).join('\n'),
  hashes: Array.from({ length: 40 }, (_, i) => sha1(`h${i}`)).join('\n'),
  base64: bytes(3000, 42).toString('base64'),
  cjk: '自然言語処理の分野では、文章を単語やサブワードに分割する処理をトークン化と呼びます。トークン化の方法によって、モデルが扱う語彙の大きさや計算量が変わります。中文的分词问题也很重要，因为中文句子里没有空格。한국어 문장도 형태소 단위로 나누는 경우가 많습니다。',
  emoji:
    'Release day 🎉🚀! Tests ✅ passing, coverage 📈 up, bugs 🐛 squashed. Thanks team 🙏❤️ — see you at the party 🥳🍕🍻 tonight! 😀😃😄😁😆',
  indentation:
    Array.from(
      { length: 30 },
      (_, i) => `${' '.repeat(4 * (i % 6))}${i % 3 === 0 ? '}' : `value_${i} = compute(${i});`}`,
    ).join('\n') + '\n\n\n\t\t\tend\n\n\n\n        \n',
};
const CYRILLIC =
  'Вчера вечером мы долго обсуждали новый проект. Команда решила, что сначала нужно переписать модуль подсчёта токенов, а затем заняться сжатием истории. Все согласились, что тесты должны проверять реальные значения, а не только отсутствие ошибок.';

const TOLERANCE = 0.25;
const relErr = (estimate: number, exact: number) => (estimate - exact) / exact;
const charsOver4 = (t: string) => Math.ceil(t.length / 4);

describe('estimateTokens against exact o200k on synthetic texts', () => {
  it('every text is within ±25% of the exact count', () => {
    const rows = Object.entries(TEXTS).map(([name, text]) => {
      const exact = o200k.count(text);
      const estimate = estimateTokens(text);
      return {
        name,
        chars: text.length,
        exact,
        estimate,
        err: `${(relErr(estimate, exact) * 100).toFixed(1)}%`,
        charsOver4: charsOver4(text),
        tokenx: estimateTokenCount(text),
      };
    });
    console.table(rows);
    for (const r of rows) {
      expect(r.exact, r.name).toBeGreaterThan(20);
      expect(
        Math.abs(relErr(r.estimate, r.exact)),
        `${r.name}: estimate ${r.estimate} vs exact ${r.exact}`,
      ).toBeLessThanOrEqual(TOLERANCE);
    }
  });

  it('is closer to exact than chars/4 for hashes and base64 (which chars/4 undercounts by half or more)', () => {
    for (const name of ['gitLog', 'hashes', 'base64'] as const) {
      const text = TEXTS[name];
      const exact = o200k.count(text);
      const est = Math.abs(estimateTokens(text) - exact);
      const c4 = Math.abs(charsOver4(text) - exact);
      expect(charsOver4(text), `${name}: chars/4 undercounts`).toBeLessThan(exact * 0.7);
      expect(est, `${name}: |estimate − exact| ${est} vs |chars/4 − exact| ${c4}`).toBeLessThan(c4 / 2);
    }
  });

  it('Cyrillic prose is within ±25% of the exact count', () => {
    const exact = o200k.count(CYRILLIC);
    expect(Math.abs(relErr(estimateTokens(CYRILLIC), exact))).toBeLessThanOrEqual(TOLERANCE);
  });

  it('Cyrillic is counted within a factor of the exact count', () => {
    const exact = o200k.count(CYRILLIC);
    expect(estimateTokens(CYRILLIC)).toBeGreaterThanOrEqual(exact * 0.75);
    expect(estimateTokens(CYRILLIC)).toBeLessThan(exact * 2.5);
  });
});

describe('estimateTokens edge cases', () => {
  it('the empty string is 0 tokens', () => {
    expect(estimateTokens('')).toBe(0);
  });

  it('any single BMP character (not a surrogate) is 1 token, except rare technical symbols (their 3 UTF-8 bytes)', () => {
    const off: string[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const expected = c >= 0x2300 && c <= 0x23ff ? 3 : 1;
      if (estimateTokens(String.fromCharCode(c)) !== expected) off.push(c.toString(16));
    }
    expect(off).toEqual([]);
    // The rule follows o200k: the `⎯` rule vitest prints is 3 tokens a character, box drawing merges.
    expect(o200k.count('⎯'.repeat(10))).toBe(30);
    expect(estimateTokens('⎯'.repeat(10))).toBe(30);
    expect(estimateTokens('─'.repeat(10))).toBeLessThanOrEqual(3);
    for (const ch of ['a', 'Z', '7', ' ', '\n', '\t', '{', '日', 'Ж', '€'])
      expect(estimateTokens(ch), JSON.stringify(ch)).toBe(1);
  });

  it('huge strings do not throw and scale linearly', () => {
    const unit = TEXTS.typescript + TEXTS.shellLog;
    const times = 10_000;
    const big = unit.repeat(times); // ~17 MB
    expect(big.length).toBeGreaterThan(15_000_000);
    const one = estimateTokens(unit);
    const all = estimateTokens(big);
    expect(Number.isFinite(all)).toBe(true);
    expect(all / (one * times)).toBeGreaterThan(0.98);
    expect(all / (one * times)).toBeLessThan(1.02);
    // One enormous run of a single class (no split points at all).
    expect(estimateTokens('a'.repeat(20_000_000))).toBeGreaterThan(1_000_000);
    expect(estimateTokens('\n'.repeat(5_000_000))).toBeGreaterThan(0);
    expect(estimateTokens('='.repeat(5_000_000))).toBeGreaterThan(1_000_000);
    expect(estimateTokens('😀'.repeat(1_000_000))).toBeGreaterThan(1_000_000);
  });
});

describe('estimateTokens properties', () => {
  // Any UTF-16 sequence, lone surrogates included.
  const utf16 = fc.string({
    unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    maxLength: 200,
  });

  it('is a non-negative finite integer for any string', () => {
    for (const arb of [utf16, fc.string({ unit: 'binary', maxLength: 200 }), fc.string({ maxLength: 200 })]) {
      fc.assert(
        fc.property(arb, (s) => {
          const n = estimateTokens(s);
          return Number.isInteger(n) && n >= 0 && (s.length === 0 ? n === 0 : n >= 1);
        }),
        { numRuns: 2000 },
      );
    }
  });

  it('is additive within ±2 under concatenation', () => {
    for (const arb of [fc.string({ unit: 'grapheme', maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 60 })]) {
      fc.assert(
        fc.property(arb, arb, (a, b) => Math.abs(estimateTokens(a + b) - estimateTokens(a) - estimateTokens(b)) <= 2),
        { numRuns: 5000 },
      );
    }
  });

  it('is additive within ±2 for documents of words and separators (how message parts meet)', () => {
    const word = fc.oneof(
      fc.constantFrom(
        'the',
        'quick',
        'brown',
        'fox',
        'function',
        'return',
        'value',
        'index',
        'Session',
        'Error',
        'TokenCounter',
        'getValue',
        'HTTP',
        '42',
        '2026',
        '3.14',
        '日本語',
        '🎉',
        'café',
      ),
      fc.string({ unit: fc.constantFrom('a', 'e', 'r', 't', 's', 'n'), minLength: 1, maxLength: 8 }),
    );
    const sep = fc.constantFrom(
      ' ',
      '\n',
      '\n\n',
      '  ',
      '\t',
      '. ',
      ', ',
      '(',
      ')',
      '{',
      '}',
      ';\n',
      ' = ',
      '/',
      ': ',
      '"',
      ' // ',
      '\n    ',
    );
    const doc = fc.array(fc.tuple(word, sep), { maxLength: 20 }).map((a) => a.map(([w, s]) => w + s).join(''));
    fc.assert(
      fc.property(doc, doc, (a, b) => Math.abs(estimateTokens(a + b) - estimateTokens(a) - estimateTokens(b)) <= 2),
      { numRuns: 5000 },
    );
  });

  // Known defect: the MIXED-case tables are not monotone in length (8 letters 4.6 tokens, 9 letters 1.89), so joining
  // one capital to a Capitalized word jumps by 3+ tokens, and plain ASCII strings break the ±2 property (fast-check
  // finds such pairs within ~1000 runs of fc.string()). When the tables are fixed this starts failing: make it a plain
  // `it` and add fc.string() to the property above.
  const MIXED_CASE_PAIRS = [
    ['Y', 'Yaaaaaa'],
    ['xoP3MINK', 'onfn'],
  ] as const;
  it('o200k itself is additive within ±2 on the mixed-case pairs', () => {
    for (const [a, b] of MIXED_CASE_PAIRS)
      expect(Math.abs(o200k.count(a + b) - o200k.count(a) - o200k.count(b))).toBeLessThanOrEqual(2);
  });
  it('is additive within ±2 for ASCII mixed-case joins', () => {
    for (const [a, b] of MIXED_CASE_PAIRS) {
      expect(
        Math.abs(estimateTokens(a + b) - estimateTokens(a) - estimateTokens(b)),
        `${a} + ${b}`,
      ).toBeLessThanOrEqual(2);
    }
  });
});

const run = corpusAvailable() ? describe : describe.skip;
if (!corpusAvailable()) console.warn('estimate corpus tests skipped: ../shared/corpus not found (set ABRIDGE_CORPUS)');

run('estimateTokens over the corpus', () => {
  it('weighted absolute error over all text parts is < 8% and below tokenx', async () => {
    const rows: Record<string, { parts: number; exact: number; estimate: string; tokenx: string; charsOver4: string }> =
      {};
    let exactAll = 0;
    let errAll = 0;
    let errTokenxAll = 0;
    let partsAll = 0;
    for (const folder of ['pi', 'claude-code', 'codex']) {
      let exact = 0;
      let err = 0;
      let errTokenx = 0;
      let errC4 = 0;
      let parts = 0;
      const files = corpusFiles(folder);
      expect(files.length, folder).toBeGreaterThan(0);
      for (const file of files) {
        const session = await readSession(file);
        const texts: string[] = [];
        for (const e of session.entries) {
          for (const p of e.message?.parts ?? []) {
            if (p.type === 'text') texts.push(p.text);
            else if (p.type === 'thinking' && !p.redacted) texts.push(p.text);
            else if (p.type === 'tool-call') texts.push(argumentsText(p.arguments));
            else if (p.type === 'tool-result') for (const c of p.content) if (c.type === 'text') texts.push(c.text);
          }
        }
        for (const t of texts) {
          if (t.length === 0) continue;
          const x = o200k.count(t);
          exact += x;
          err += Math.abs(estimateTokens(t) - x);
          errTokenx += Math.abs(estimateTokenCount(t) - x);
          errC4 += Math.abs(charsOver4(t) - x);
          parts++;
        }
      }
      rows[folder] = {
        parts,
        exact,
        estimate: `${((err / exact) * 100).toFixed(2)}%`,
        tokenx: `${((errTokenx / exact) * 100).toFixed(2)}%`,
        charsOver4: `${((errC4 / exact) * 100).toFixed(2)}%`,
      };
      exactAll += exact;
      errAll += err;
      errTokenxAll += errTokenx;
      partsAll += parts;
    }
    const wae = errAll / exactAll;
    const waeTokenx = errTokenxAll / exactAll;
    rows.all = {
      parts: partsAll,
      exact: exactAll,
      estimate: `${(wae * 100).toFixed(2)}%`,
      tokenx: `${(waeTokenx * 100).toFixed(2)}%`,
      charsOver4: '',
    };
    console.log('weighted absolute error vs o200k (Σ|est − exact| / Σ exact):');
    console.table(rows);
    expect(partsAll).toBeGreaterThan(1000);
    expect(exactAll).toBeGreaterThan(500_000);
    expect(wae).toBeLessThan(0.08);
    expect(wae).toBeLessThan(waeTokenx);
  });
});

// Pinned estimates: the figures of the estimator as of this test's writing (sum and SHA-1 of the list of estimates).
// A change that is only meant to make the estimator faster must keep them exactly; a change of its tables or rules
// updates them on purpose.
describe('estimateTokens gives the same estimates as before (pinned)', () => {
  const UNICODE = [
    'é',
    'ß',
    'Ł',
    '日',
    '本',
    '語',
    'ア',
    '한',
    'Ж',
    'д',
    'λ',
    'ก',
    '😀',
    '🚀',
    '→',
    '✓',
    '•',
    '─',
    '⎯',
    '€',
  ];
  const SYMBOLS = '.,;:_-/\\(){}[]<>"\'=+*&|!?#@$%^~`';
  /** Deterministic random texts: words of both cases, spaces, digits, symbol runs, newlines, other scripts, emoji. */
  function randomTexts(count: number, seed: number): string[] {
    let s = seed >>> 0;
    const next = () => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return s >>> 24;
    };
    const out: string[] = [];
    for (let k = 0; k < count; k++) {
      const len = next() + next();
      let t = '';
      for (let i = 0; i < len; i++) {
        const b = next();
        if (b < 140) t += String.fromCharCode(97 + (b % 26));
        else if (b < 165) t += String.fromCharCode(65 + (b % 26));
        else if (b < 195) t += ' ';
        else if (b < 207) t += String.fromCharCode(48 + (b % 10));
        else if (b < 232) t += SYMBOLS[b % SYMBOLS.length];
        else if (b < 242) t += '\n\t\r\n'[b % 4];
        else t += UNICODE[b % UNICODE.length];
      }
      out.push(t);
    }
    return out;
  }
  const digest = (estimates: number[]) => ({
    sum: estimates.reduce((a, b) => a + b, 0),
    sha1: sha1(estimates.join(',')),
  });

  it('on 3,000 random texts', () => {
    expect(digest(randomTexts(3000, 42).map(estimateTokens))).toEqual({
      sum: 375910,
      sha1: '0ba8951c1b32223e4fa1c9a509f3b5db3eb39a1c',
    });
  });

  it.runIf(corpusAvailable())('on every text of the pi-mono transcript', async () => {
    const session = await readSession(corpusFile('pi', 'badlogic__pi-mono__before-compaction.jsonl'));
    const texts: string[] = [];
    const visit = (p: Part) => {
      if (p.type === 'text' || (p.type === 'thinking' && !p.redacted)) texts.push(p.text);
      else if (p.type === 'tool-call') texts.push(p.id, p.name, argumentsText(p.arguments));
      else if (p.type === 'tool-result') {
        texts.push(p.callId);
        for (const c of p.content) visit(c);
      } else if (p.type === 'compaction') texts.push(p.marker.summary);
    };
    for (const e of session.entries) for (const p of e.message?.parts ?? []) visit(p);
    expect(texts.length).toBe(2620);
    expect(digest(texts.map(estimateTokens))).toEqual({
      sum: 429571,
      sha1: 'cb01e60fe86c8b4b9e1d92dc3a0e201499220fd0',
    });
  });
});
