import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { ImagePart, Message, Part, TextPart, ToolCallPart, ToolResultPart } from '../model/types.js';
import { MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, TOOL_RESULT_OVERHEAD, TokenCounter } from './counter.js';
import { estimateTokens } from './estimate.js';
import { loadExactTokenizer, type ExactTokenizer } from './exact.js';
import { PROVIDER_FAMILIES } from './family.js';
import { imageTokens } from './images.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A tokenizer that counts one token per 3 characters (rounded up) and records every call. */
function fakeTokenizer() {
  const count = vi.fn((text: string) => Math.ceil(text.length / 3));
  const tokenizer: ExactTokenizer = { encoding: 'fake', count };
  return { tokenizer, count };
}

const text = (t: string): TextPart => ({ type: 'text', text: t });
const call = (id: string, name: string, args: unknown): ToolCallPart => ({
  type: 'tool-call',
  id,
  name,
  arguments: args,
});
const result = (callId: string, content: ToolResultPart['content'], toolName = 'read_file_tool'): ToolResultPart => ({
  type: 'tool-result',
  callId,
  toolName,
  content,
  isError: false,
});

/** A short session's messages; 'README.md' contents are read twice (equal text, different part objects). */
function sessionMessages(): Message[] {
  const readme = '# abridge\n\nContext-window management for LLM agents.\n';
  return [
    { role: 'system', parts: [text('You are a careful coding agent.')] },
    { role: 'user', parts: [text('Summarize README.md, twice.')] },
    {
      role: 'assistant',
      parts: [
        { type: 'thinking', text: 'Read the file first.', signature: 'EqQBCkYIBxgCKkD'.repeat(50) },
        call('toolu_01', 'read', { path: 'README.md' }),
      ],
    },
    { role: 'tool', parts: [result('toolu_01', [text(readme)])] },
    { role: 'assistant', parts: [call('toolu_02', 'read', { path: 'README.md' })] },
    { role: 'tool', parts: [result('toolu_02', [text(readme)])] },
    {
      role: 'assistant',
      parts: [
        text('It manages context windows.'),
        { type: 'thinking', text: 'gAAAAABo-redacted-blob', redacted: true },
      ],
    },
  ];
}

/** The texts the counter should tokenize for sessionMessages(), each once. */
const DISTINCT_TEXTS = [
  'You are a careful coding agent.',
  'Summarize README.md, twice.',
  'Read the file first.',
  'toolu_01',
  'read',
  '{"path":"README.md"}',
  '# abridge\n\nContext-window management for LLM agents.\n',
  'toolu_02',
  'It manages context windows.',
];

describe('TokenCounter caching', () => {
  it('counting a session twice tokenizes each distinct text once', () => {
    const { tokenizer, count } = fakeTokenizer();
    const counter = new TokenCounter({ exact: tokenizer, family: 'claude' });
    const messages = sessionMessages();
    const first = messages.reduce((n, m) => n + counter.message(m), 0);
    expect(count).toHaveBeenCalledTimes(DISTINCT_TEXTS.length);
    expect(new Set(count.mock.calls.map((c) => c[0]))).toEqual(new Set(DISTINCT_TEXTS));
    const second = messages.reduce((n, m) => n + counter.message(m), 0);
    expect(second).toBe(first);
    expect(count).toHaveBeenCalledTimes(DISTINCT_TEXTS.length);
    // The same content in fresh part objects (a re-read session) still reuses the text cache.
    const third = sessionMessages().reduce((n, m) => n + counter.message(m), 0);
    expect(third).toBe(first);
    expect(count).toHaveBeenCalledTimes(DISTINCT_TEXTS.length);
    // And the total is what the rules give.
    const c = (t: string) => Math.ceil(t.length / 3);
    const expected =
      7 * MESSAGE_OVERHEAD +
      c('You are a careful coding agent.') +
      c('Summarize README.md, twice.') +
      c('Read the file first.') +
      2 * (TOOL_CALL_OVERHEAD + c('toolu_01') + c('read') + c('{"path":"README.md"}')) +
      2 * (TOOL_RESULT_OVERHEAD + c('toolu_01') + c('# abridge\n\nContext-window management for LLM agents.\n')) +
      c('It manages context windows.');
    expect(first).toBe(expected);
  });

  it('a part object is counted once: later edits to it are not seen (parts are immutable by contract)', () => {
    const counter = new TokenCounter();
    const p = { type: 'text', text: 'short' } as { type: 'text'; text: string };
    const before = counter.part(p);
    expect(before).toBe(estimateTokens('short'));
    p.text = 'a much longer text than before, with many more words in it than the first one had';
    expect(counter.part(p)).toBe(before);
    expect(counter.message({ role: 'user', parts: [p] })).toBe(MESSAGE_OVERHEAD + before);
    // Estimates of a part's text are shared by every estimating counter (whatever its family): a fresh one does not
    // see the edit either, and a gpt counter differs only by its framing.
    expect(new TokenCounter().part(p)).toBe(before);
    expect(new TokenCounter({ family: 'gpt' }).message({ role: 'user', parts: [p] })).toBe(3 + before);
    expect(estimateTokens(p.text)).toBeGreaterThan(before);
    // A new part object with the same text is counted afresh, and a counter with a tokenizer shares nothing.
    expect(new TokenCounter().part({ type: 'text', text: p.text })).toBe(estimateTokens(p.text));
    expect(new TokenCounter({ exact: { encoding: 'test', count: (t: string) => t.length } }).part(p)).toBe(
      p.text.length,
    );
  });

  it('tool-result content parts are cached too', () => {
    const { tokenizer, count } = fakeTokenizer();
    const counter = new TokenCounter({ exact: tokenizer });
    const inner = text('shared output');
    counter.part(result('c1', [inner]));
    counter.part(result('c2', [inner]));
    expect(count.mock.calls.map((c) => c[0])).toEqual(['c1', 'shared output', 'c2']);
  });

  it('the text cache is bounded: it is cleared after 50,000 distinct texts', () => {
    const { tokenizer, count } = fakeTokenizer();
    const counter = new TokenCounter({ exact: tokenizer });
    counter.text('first');
    counter.text('first');
    expect(count).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 50_000; i++) counter.text(`t${i}`);
    expect(count).toHaveBeenCalledTimes(50_001);
    counter.text('first');
    expect(count).toHaveBeenCalledTimes(50_002);
  });

  it('empty text is 0 without calling the tokenizer', () => {
    const { tokenizer, count } = fakeTokenizer();
    const counter = new TokenCounter({ exact: tokenizer });
    expect(counter.text('')).toBe(0);
    expect(counter.part(text(''))).toBe(0);
    expect(count).not.toHaveBeenCalled();
  });
});

describe('TokenCounter rules', () => {
  it('thinking: the signature is not counted; redacted thinking is 0', () => {
    const { tokenizer, count } = fakeTokenizer();
    const counter = new TokenCounter({ exact: tokenizer });
    const signature = 'Sig'.repeat(10_000);
    expect(counter.part({ type: 'thinking', text: 'plan the change', signature })).toBe(
      Math.ceil('plan the change'.length / 3),
    );
    expect(counter.part({ type: 'thinking', text: 'x'.repeat(9_000), signature, redacted: true })).toBe(0);
    expect(count.mock.calls.map((c) => c[0])).toEqual(['plan the change']);
    // Estimate mode alike.
    const est = new TokenCounter();
    expect(est.part({ type: 'thinking', text: 'plan the change', signature })).toBe(estimateTokens('plan the change'));
    expect(est.part({ type: 'thinking', text: 'x'.repeat(9_000), redacted: true })).toBe(0);
  });

  it('tool call: overhead + id + name + JSON arguments', () => {
    const { tokenizer, count } = fakeTokenizer();
    const counter = new TokenCounter({ exact: tokenizer });
    const args = { command: 'git log --oneline -n 5', timeout: 30_000 };
    const json = JSON.stringify(args);
    const n = counter.part(call('call_abc123XYZ', 'bash', args));
    expect(n).toBe(
      TOOL_CALL_OVERHEAD + Math.ceil('call_abc123XYZ'.length / 3) + Math.ceil(4 / 3) + Math.ceil(json.length / 3),
    );
    expect(count.mock.calls.map((c) => c[0]).sort()).toEqual(['bash', 'call_abc123XYZ', json].sort());
    // Raw (unparsed) argument text is counted as is.
    expect(counter.part(call('c9', 'edit', '{"path": "a.ts", broken'))).toBe(
      TOOL_CALL_OVERHEAD + 1 + 2 + Math.ceil('{"path": "a.ts", broken'.length / 3),
    );
    // No arguments at all.
    expect(counter.part(call('c8', 'now', undefined))).toBe(TOOL_CALL_OVERHEAD + 1 + 1);
  });

  it('tool result: overhead + call id + content (the tool name is not sent)', () => {
    const { tokenizer, count } = fakeTokenizer();
    const counter = new TokenCounter({ exact: tokenizer, family: 'claude' });
    const image: ImagePart = { type: 'image', width: 1000, height: 1000 };
    const n = counter.part(
      result(
        'call_77',
        [text('line one\nline two'), image, { type: 'file', byteSize: 2048, name: 'a.pdf' }],
        'a_tool_name_not_counted',
      ),
    );
    expect(n).toBe(TOOL_RESULT_OVERHEAD + Math.ceil(7 / 3) + Math.ceil(17 / 3) + 1334 + 80);
    expect(count.mock.calls.map((c) => c[0])).not.toContain('a_tool_name_not_counted');
    expect(counter.part(result('call_78', []))).toBe(TOOL_RESULT_OVERHEAD + Math.ceil(7 / 3));
  });

  it('images are priced by the counter family, never as text', () => {
    const image: ImagePart = { type: 'image', width: 1000, height: 1000, data: 'iVBORw0KGgo'.repeat(1000) };
    const byFamily = Object.fromEntries(PROVIDER_FAMILIES.map((f) => [f, new TokenCounter({ family: f }).part(image)]));
    expect(byFamily).toEqual({ claude: 1334, gpt: 765, gemini: 4 * 258, other: 1334 });
    for (const f of PROVIDER_FAMILIES) expect(byFamily[f]).toBe(imageTokens(image, f));
    expect(new TokenCounter().family).toBe('other');
    const { tokenizer, count } = fakeTokenizer();
    new TokenCounter({ exact: tokenizer, family: 'gpt' }).message({ role: 'user', parts: [image] });
    expect(count).not.toHaveBeenCalled();
  });

  it('files by size, compaction markers by their summary', () => {
    const counter = new TokenCounter();
    expect(counter.part({ type: 'file', byteSize: 10 * 1024 })).toBe(400);
    expect(counter.part({ type: 'file', byteSize: 100 })).toBe(4);
    expect(counter.part({ type: 'file' })).toBe(0);
    const summary = 'Goal: make the counter exact. Done: estimator, images. Next: predictor.';
    expect(counter.part({ type: 'compaction', marker: { number: 1, summary, source: 'pi' } })).toBe(
      estimateTokens(summary),
    );
  });

  it('a message is its overhead plus its parts', () => {
    const counter = new TokenCounter();
    const parts: Part[] = [text('hello there'), call('c1', 'ls', { dir: '.' })];
    expect(counter.message({ role: 'assistant', parts })).toBe(
      MESSAGE_OVERHEAD + counter.part(parts[0]!) + counter.part(parts[1]!),
    );
    expect(counter.message({ role: 'user', parts: [] })).toBe(MESSAGE_OVERHEAD);
  });
});

describe('TokenCounter exact mode', () => {
  let o200k: ExactTokenizer;
  beforeAll(async () => {
    o200k = await loadExactTokenizer('o200k_base');
  });

  it('equals the o200k count for text parts', () => {
    const counter = new TokenCounter({ exact: o200k });
    expect(counter.exact).toBe(true);
    const samples = [
      'The quick brown fox jumps over the lazy dog.',
      'export const x: Map<string, number[]> = new Map();\n\tif (x.size > 0) { return; }',
      '{"type":"tool_use","id":"toolu_01XyZ","input":{"path":"/tmp/a b.txt"}}',
      'commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: A <a@b.c>',
      '日本語のテキストとEnglish mixed 😀 — done.',
      // Special-token text in a transcript is plain text, not a control token (and must not throw).
      'the model printed <|endoftext|> and <|im_start|> literally',
    ];
    for (const s of samples) {
      expect(counter.part(text(s)), s).toBe(o200k.count(s));
      expect(counter.part({ type: 'thinking', text: s }), s).toBe(o200k.count(s));
    }
    expect(o200k.count('The quick brown fox jumps over the lazy dog.')).toBe(10);
    expect(o200k.count('<|endoftext|>')).toBeGreaterThan(1);
    expect(new TokenCounter().exact).toBe(false);
  });

  it('cl100k loads too and differs from o200k on non-English text', async () => {
    const cl100k = await loadExactTokenizer('cl100k_base');
    expect(cl100k.encoding).toBe('cl100k_base');
    const s = 'Вчера вечером мы долго обсуждали новый проект.';
    expect(cl100k.count(s)).toBeGreaterThan(o200k.count(s));
    expect(await loadExactTokenizer('o200k_base')).toBe(o200k);
  });
});

describe('importing abridge loads no encoding', () => {
  it('dist/index.js resolves no gpt-tokenizer module until loadExactTokenizer is called', () => {
    // The package as shipped: dist/, built by vitest's global setup (test/global-setup.ts) before the tests run.
    const entry = join(repo, 'dist/index.js');
    expect(existsSync(entry), `${entry}: not built`).toBe(true);
    const tmp = mkdtempSync(join(tmpdir(), 'abridge-import-'));
    try {
      const log = join(tmp, 'resolved.txt');
      // A resolve hook records every module the child resolves.
      const probe = `
import { register } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const log = ${JSON.stringify(log)};
writeFileSync(log, '');
const hooks = "import { appendFileSync } from 'node:fs';\\n" +
  "export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(" + JSON.stringify(log) + ", r.url + '\\\\n'); return r; }";
register('data:text/javascript,' + encodeURIComponent(hooks));
const seen = () => readFileSync(log, 'utf8').split('\\n').filter(Boolean);
let t = performance.now();
const abridge = await import(pathToFileURL(${JSON.stringify(entry)}).href);
const importMs = performance.now() - t;
const afterImport = seen();
t = performance.now();
const tok = await abridge.loadExactTokenizer('o200k_base');
const count = tok.count('hello world');
const loadMs = performance.now() - t;
const afterLoad = seen();
console.log(JSON.stringify({ importMs, loadMs, count, exports: Object.keys(abridge).length, afterImport, afterLoad }));
`;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: tmp, encoding: 'utf8' });
      expect(child.status, child.stderr).toBe(0);
      const out = JSON.parse(child.stdout.trim().split('\n').pop()!) as {
        importMs: number;
        loadMs: number;
        count: number;
        exports: number;
        afterImport: string[];
        afterLoad: string[];
      };
      const tokenizerModules = (urls: string[]) => urls.filter((u) => u.includes('/gpt-tokenizer/'));
      console.log(
        `import dist/index.js: ${out.importMs.toFixed(0)} ms, ${out.afterImport.length} modules, ${tokenizerModules(out.afterImport).length} from gpt-tokenizer; ` +
          `first loadExactTokenizer: ${out.loadMs.toFixed(0)} ms, ${tokenizerModules(out.afterLoad).length} gpt-tokenizer modules`,
      );
      expect(out.exports).toBeGreaterThan(10);
      // The module that defines loadExactTokenizer is loaded (bundled into dist/index.js or a chunk it imports).
      expect(out.afterImport.some((u) => u.endsWith('/dist/index.js'))).toBe(true);
      expect(tokenizerModules(out.afterImport)).toEqual([]);
      // The probe does see the encoding once it is asked for (so the check above can fail).
      expect(tokenizerModules(out.afterLoad).some((u) => u.includes('o200k_base'))).toBe(true);
      expect(out.count).toBe(2);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
