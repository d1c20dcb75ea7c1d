import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { activeMessages } from '../model/view.js';
import type { Message } from '../model/types.js';
import { replaySession } from '../analysis/replay.js';
import { detectFormat, sampleSource } from './detect.js';
import { parseSession } from './read.js';

const text = (m: Message) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');

/** What Aider's InputOutput writes: `user_input`, `ai_output`, and its own output as `> ` lines. */
const run = (date: string) => `\n# aider chat started at ${date}\n\n`;
const input = (s: string) => `\n#### ${s.split('\n').join('  \n#### ')}  \n`;
const reply = (s: string) => `\n${s.trim()}\n\n`;
const output = (...lines: string[]) => lines.map((l) => `> ${l}  \n`).join('');
const announce = (model: string) =>
  output(
    '/usr/local/bin/aider',
    'Aider v0.86.2',
    `Model: ${model} with diff edit format`,
    'Repo-map: using 1024 tokens',
  );

const history = [
  run('2026-03-01 09:00:00'),
  announce('gpt-4o'),
  input('add a --verbose flag to cli.py'),
  reply('Please add `cli.py` to the chat so I can edit it.'),
  output('Tokens: 2.9k sent, 21 received. Cost: $0.0075 message, $0.0075 session.'),
  output('cli.py', "Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: y"),
  reply('cli.py\n```python\n<<<<<<< SEARCH\nimport sys\n=======\nimport sys\nimport argparse\n>>>>>>> REPLACE\n```'),
  output('Tokens: 3.4k sent, 184 received. Cost: $0.01 message, $0.02 session.', 'Applied edit to cli.py'),
  run('2026-03-02 10:00:00'),
  announce('claude-sonnet-4-5'),
  input('why do the tests fail?\nthey passed yesterday'),
  reply(
    '<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>\nLet me look at the error.\n</thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>\n\n#### Cause\n\nThe fixture path changed.\n> quoted from the log\n\n# Fix\nRename it back.',
  ),
  output('Tokens: 12k sent, 2.1k cache write, 8.0k cache hit, 1.1k received. Cost: $0.02 message, $0.02 session.'),
  input('/add tests/conftest.py'),
  output('Added tests/conftest.py to the chat'),
  input('/ask is the rename safe?'),
  reply('Yes: nothing else imports it.'),
  output('Tokens: 13k sent, 40 received.'),
].join('');

describe('aider format', () => {
  it('is detected from its run heading, and markdown that only mentions aider is not', () => {
    const sample = (s: string) => detectFormat(sampleSource(s, true, () => s));
    const found = sample(history);
    expect(found.kind === 'supported' && found.format.id).toBe('aider');
    expect(sample('# Notes\n\nWe tried aider chat started at some point.\n').kind).not.toBe('supported');
  });

  it('reads each run as its own chat: the active view is the last run, as Aider sent it', () => {
    const s = parseSession(history, { source: 'h.md' });
    expect(s.format).toBe('aider');
    expect(s.problems).toEqual([]);
    expect(s.extra).toEqual({ runs: 2 });
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    // Input as typed: the `#### ` prefixes and the two trailing spaces Aider adds are not the person's.
    expect(text(view[0]!)).toBe('why do the tests fail?\nthey passed yesterday');
    // The reply without its reasoning; its own markdown heading, quote and `# ` line stay the reply's.
    expect(text(view[1]!)).toBe(
      '#### Cause\n\nThe fixture path changed.\n> quoted from the log\n\n# Fix\nRename it back.',
    );
    // `/ask` sends its question; `/add` is a command, not a message.
    expect(text(view[2]!)).toBe('is the rename safe?');
    expect(view[1]!.model).toBe('claude-sonnet-4-5');
    // The first run is kept, off the active branch.
    const all = s.entries.filter((e) => e.message).map((e) => e.message!);
    expect(all).toHaveLength(7);
    expect(text(all[0]!)).toBe('add a --verbose flag to cli.py');
    expect(all[1]!.model).toBe('gpt-4o');
    expect(s.info.startedAt).toBe(Date.UTC(2026, 2, 1, 9, 0, 0));
  });

  it('attaches each token report to the reply before it, as whole-prompt usage', () => {
    const s = parseSession(history, { source: 'h.md' });
    const replies = s.entries.filter((e) => e.message?.role === 'assistant').map((e) => e.message!);
    expect(replies.map((m) => m.usage)).toEqual([
      { input: 2900, output: 21, cacheRead: 0, cacheWrite: 0 },
      { input: 3400, output: 184, cacheRead: 0, cacheWrite: 0 },
      // sent counts the cache reads and (Aider adds them) the writes: input is the rest.
      { input: 1900, output: 1100, cacheRead: 8000, cacheWrite: 2100 },
      { input: 13000, output: 40, cacheRead: 0, cacheWrite: 0 },
    ]);
    // Confirmations and Aider's output are events, never messages.
    expect(s.entries.filter((e) => e.kind === 'event').map((e) => e.sourceType)).toEqual([
      'output',
      'output',
      'output',
      'output',
      'output',
      'command',
      'output',
      'output',
    ]);
  });

  it('replays the last run request by request', () => {
    const s = parseSession(history, { source: 'h.md' });
    const requests = replaySession(s);
    expect(requests.map((r) => r.reported)).toEqual([12000, 13000]);
  });

  it('starts a new chat at /clear and at /reset', () => {
    const h = [
      run('2026-03-01 09:00:00'),
      input('first task'),
      reply('Done.'),
      output('Tokens: 1.0k sent, 2 received.'),
      input('/clear'),
      input('second task'),
      reply('On it.'),
    ].join('');
    const view = activeMessages(parseSession(h, { source: 'h.md' }));
    expect(view.map(text)).toEqual(['second task', 'On it.']);
  });

  it('answers to its questions typed as input are not messages', () => {
    const h = [
      run('2026-03-01 09:00:00'),
      input('rename the module'),
      reply('Add `a.py`?'),
      input("Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: skip"),
      input('<blank>'),
    ].join('');
    const s = parseSession(h, { source: 'h.md' });
    expect(activeMessages(s).map(text)).toEqual(['rename the module', 'Add `a.py`?']);
    expect(s.entries.filter((e) => e.sourceType === 'answer')).toHaveLength(2);
  });

  it('keeps a message of Aider of several lines out of the chat (only its first line is prefixed)', () => {
    const h = [
      run('2026-03-01 09:00:00'),
      input('commit it'),
      reply('Run:\n```bash\ngit add a.py\ngit commit -m "x"\n```'),
      output('Tokens: 1.2k sent, 30 received.'),
      '> git add a.py \ngit commit -m "x"  \n',
      output('Run shell commands? (Y)es/(N)o [Yes]: y'),
      input('thanks'),
    ].join('');
    const view = activeMessages(parseSession(h, { source: 'h.md' }));
    expect(view.map(text)).toEqual(['commit it', 'Run:\n```bash\ngit add a.py\ngit commit -m "x"\n```', 'thanks']);
  });

  it('without the two-space convention (older files), the prefixes alone decide, as Aider reads them', () => {
    const h =
      '# aider chat started at 2024-01-01 10:00:00\n\n#### hello\n\nHi there.\n\n> Tokens: 500 sent, 3 received.\n';
    const s = parseSession(h, { source: 'h.md' });
    expect(activeMessages(s).map(text)).toEqual(['hello', 'Hi there.']);
    expect(activeMessages(s)[1]!.usage).toEqual({ input: 500, output: 3, cacheRead: 0, cacheWrite: 0 });
  });

  it('names the file and what was expected when it is no Aider history', () => {
    expect(() => parseSession('just some notes\n', { source: 'notes.md', format: 'aider' })).toThrow(
      /notes\.md: not an Aider chat history: expected "# aider chat started at <date>" headings/,
    );
  });

  it('reports a token report with no reply before it, by line', () => {
    const h = `${run('2026-03-01 09:00:00')}${output('Tokens: 1.0k sent, 2 received.')}`;
    const s = parseSession(h, { source: 'h.md' });
    expect(s.problems).toHaveLength(1);
    expect(s.problems[0]!.line).toBe(4);
    expect(s.problems[0]!.message).toMatch(/h\.md: line 4: a token report with no reply/);
  });
});

const aiderFiles = corpusFiles('other').filter((f) => f.endsWith('.aider.chat.history.md'));

describe.skipIf(!corpusAvailable() || aiderFiles.length === 0)(
  corpusAvailable() ? 'aider corpus' : `aider corpus (skipped: no corpus at ${CORPUS_DIR})`,
  () => {
    it.each(aiderFiles.map((f) => [f.split('/').pop()!, f]))(
      '%s: every run, every reply with its token report, no problems',
      (_name, file) => {
        const raw = readFileSync(file, 'utf8');
        const s = parseSession(raw, { source: file });
        expect(s.format).toBe('aider');
        expect(s.problems).toEqual([]);
        const lines = raw.split('\n');
        expect(s.extra?.runs).toBe(lines.filter((l) => l.startsWith('# aider chat started at ')).length);
        // Every token report the file holds is on a reply.
        const reports = lines.filter((l) => l.startsWith('> Tokens: ')).length;
        const withUsage = s.entries.filter((e) => e.message?.usage).length;
        expect(withUsage).toBe(reports);
        // The active view is the last run: it opens at the last heading.
        const last = lines.map((l, i) => [l, i + 1] as const).filter(([l]) => l.startsWith('# aider chat started'));
        const lastLine = last[last.length - 1]![1];
        const view = s.entries.filter((e) => e.message && (e.raw as { line: number }).line > lastLine);
        expect(activeMessages(s)).toHaveLength(view.length);
        // No reasoning of the model is in a message (a reply cut short keeps an unclosed tag, as Aider keeps it).
        for (const e of s.entries)
          if (e.message) expect(text(e.message)).not.toMatch(/<thinking-content-[0-9a-f]+>[\s\S]*<\/thinking-content-/);
      },
    );

    it('reads the AFI history as its runs (9) and requests (39)', () => {
      const file = aiderFiles.find((f) => f.includes('AFI-Protocol'));
      if (!file) return;
      const s = parseSession(readFileSync(join(file), 'utf8'), { source: file });
      expect(s.extra?.runs).toBe(9);
      expect(s.entries.filter((e) => e.message?.usage)).toHaveLength(39);
      expect(replaySession(s)).toHaveLength(14);
    });
  },
);
