/**
 * `abridge convert`: one agent's session as a transcript another agent resumes. pi's own loader resumes every
 * converted corpus transcript (Claude Code and Codex to pi) as abridge's view of the converted file, message for
 * message; abridge's view of a converted file is the source's view without its harness's system messages; Claude Code
 * transcripts written from pi and Codex read back the same (the Claude Code CLI's own resume of them is checked in
 * claude-code-resume.test.ts, where the CLI is installed).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { parseSession, readSession } from '../formats/read.js';
import type { Message, Session } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { createRedactor } from '../redact/redact.js';
import { TokenCounter } from '../tokens/counter.js';
import { runCli, SMALL_PI_SESSION } from '../../test/support/cli.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { comparable, firstDifference, piResume } from '../../test/support/pi-loader.js';
import { writeSession } from '../formats/write.js';
import { viewSession } from './compact.js';
import { convertTranscript, withProviderCompactionAsText, type ConvertTarget } from './convert.js';

const dir = mkdtempSync(join(tmpdir(), 'abridge-convert-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const redact = createRedactor();
const settings = DEFAULT_BUDGET_SETTINGS;

/** The view as the target is to resume it: the source's, without its system messages, redacted, tool names aside. */
function expected(session: Session): Message[] {
  return activeMessages(session)
    .filter((m) => m.role !== 'system')
    .map(withProviderCompactionAsText)
    .map((m) => JSON.parse(redact(JSON.stringify(m))) as Message);
}
/** Tool results name their tool in pi's records only: compared without it. */
const unnamed = (ms: readonly Message[]) =>
  ms.map((m) => ({
    ...m,
    parts: m.parts.map((p) =>
      p.type === 'tool-result' ? { ...p, toolName: undefined, isErrorExplicit: undefined } : p,
    ),
  }));

function expectSame(label: string, a: readonly Message[], b: readonly Message[]): void {
  const at = firstDifference(a, b);
  if (at !== -1)
    expect
      .soft({ label, at, a: comparable(a)[at], b: comparable(b)[at], lengths: [a.length, b.length] })
      .toBeUndefined();
}

/** Every text of the messages and of their results, in order (empty ones aside). */
const textsOf = (ms: readonly Message[]) =>
  ms
    .flatMap((m) =>
      m.parts.flatMap((p) =>
        p.type === 'text'
          ? [p.text.trim()]
          : p.type === 'tool-result'
            ? p.content.flatMap((c) => (c.type === 'text' ? [c.text.trim()] : []))
            : [],
      ),
    )
    .filter((t) => t !== '');

/** The Anthropic request a session's view makes (`compact --emit anthropic`). */
const requestOf = (s: Session) =>
  (JSON.parse(writeSession(viewSession(s), 'anthropic')) as { messages: unknown[] }).messages;

const run = corpusAvailable() ? describe : describe.skip;
run('every corpus transcript, converted, is resumed as abridge reports it', () => {
  const cases: [string, ConvertTarget][] = [
    ...corpusFiles('claude-code').map((f): [string, ConvertTarget] => [f, 'pi']),
    ...corpusFiles('codex').map((f): [string, ConvertTarget] => [f, 'pi']),
    ...corpusFiles('pi').map((f): [string, ConvertTarget] => [f, 'claude-code']),
    ...corpusFiles('codex').map((f): [string, ConvertTarget] => [f, 'claude-code']),
  ];
  it.each(cases)(
    '%s → %s',
    async (file, to) => {
      const session = await readSession(file);
      const { text, converted, compaction } = await convertTranscript(session, to, { settings, redact });
      const back = parseSession(text, { format: to });
      const view = activeMessages(back);
      expect(back.problems, basename(file)).toEqual([]);
      // The file holds the view abridge reports of the conversion (compacted when it would not fit the default
      // window) — for Claude Code, as the API request it makes (what its CLI sends, and is checked against where it is
      // installed: consecutive messages of a role are one); uncompacted, that is the source's view (its system prompt
      // left behind).
      if (to === 'claude-code') expect(requestOf(back), basename(file)).toEqual(requestOf(converted));
      else expectSame(`${basename(file)}: converted view`, unnamed(view), unnamed(expected(converted)));
      // Uncompacted, the source's view is carried: for pi whole (tool names aside); for Claude Code every text said and
      // every result's text, in order — its ids made the API's, another provider's reasoning and the calls no result
      // answers left out, as its CLI would leave them.
      if (!compaction?.entry) {
        if (to === 'pi') expectSame(`${basename(file)}: source view`, unnamed(view), unnamed(expected(session)));
        else expect(textsOf(view), basename(file)).toEqual(textsOf(expected(session)));
      }
      // pi's own code resumes exactly that view.
      if (to === 'pi') expectSame(`${basename(file)}: pi resumes`, piResume(text).sent, view);
    },
    120_000,
  );
});

describe('convert, compacting on the way', () => {
  it("compacts to the target's window when the session would not fit it, and pi resumes the compacted view", async () => {
    // A generated Claude Code session of ~60K tokens, converted for a 40,000-token window.
    const lines: object[] = [];
    let parent: string | null = null;
    for (let i = 0; i < 30; i++) {
      const u = `u${i}`;
      const a = `a${i}`;
      const r = `r${i}`;
      lines.push({
        type: 'user',
        uuid: u,
        parentUuid: parent,
        sessionId: 's',
        cwd: '/w',
        timestamp: `2026-01-01T00:${String(i).padStart(2, '0')}:00.000Z`,
        message: {
          role: 'user',
          content:
            i === 0
              ? 'Fix the failing build.'
              : [
                  {
                    type: 'tool_result',
                    tool_use_id: `t${i - 1}`,
                    content: `output ${i - 1}\n${'line of build output\n'.repeat(400)}`,
                  },
                ],
        },
      });
      lines.push({
        type: 'assistant',
        uuid: a,
        parentUuid: u,
        sessionId: 's',
        cwd: '/w',
        timestamp: `2026-01-01T00:${String(i).padStart(2, '0')}:30.000Z`,
        message: {
          id: `m${i}`,
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [
            { type: 'text', text: `Step ${i}.` },
            { type: 'tool_use', id: `t${i}`, name: 'Bash', input: { command: `make step${i}` } },
          ],
        },
      });
      parent = a;
      void r;
    }
    const file = join(dir, 'big.jsonl');
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const session = await readSession(file);
    const windowSettings = { ...settings, contextWindow: 40_000 };
    const { text, compaction, target } = await convertTranscript(session, 'pi', { settings: windowSettings, redact });
    expect(compaction?.entry).toBeDefined();
    expect(compaction?.reachedTarget).toBe(true);
    const back = parseSession(text, { format: 'pi' });
    const view = activeMessages(back);
    const counter = new TokenCounter();
    expect(view.reduce((n, m) => n + counter.message(m), 0)).toBeLessThanOrEqual(target!);
    expectSame('pi resumes the compacted conversion', piResume(text).sent, view);
    // Through the command: the same, with --json saying so.
    const out = join(dir, 'big.pi.jsonl');
    const r = runCli(['convert', file, '--to', 'pi', '--context-window', '40000', '-o', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ from: 'claude-code', to: 'pi', compacted: true, out });
    expect(readFileSync(out, 'utf8').split('\n')[0]).toMatch(/^\{"type":"session","version":3,/);
  });
});

describe('convert to Claude Code: records its CLI sends as abridge views them', () => {
  const says = (text: string): Message => ({ role: 'user', parts: [{ type: 'text', text }] });
  const answers = (...parts: Message['parts']): Message => ({ role: 'assistant', parts, provider: 'openai' });
  const calls = (id: string, args: unknown = {}) => answers({ type: 'tool-call', id, name: 'exec', arguments: args });
  const result = (callId: string, text: string): Message => ({
    role: 'tool',
    parts: [{ type: 'tool-result', callId, content: [{ type: 'text', text }], isError: false }],
  });
  const sessionOf = (messages: Message[]): Session => ({
    format: 'codex',
    info: { id: 'src' },
    entries: messages.map((message, index) => ({ index, kind: 'message', message })),
    problems: [],
  });
  async function recordsOf(messages: Message[]): Promise<[string, unknown][]> {
    const { text } = await convertTranscript(sessionOf(messages), 'claude-code', { settings, redact });
    return text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; message: { content: unknown } })
      .map((r) => [r.type, r.message.content]);
  }

  it('one assistant record per turn of the view, none empty, arguments an object, no whitespace ending it', async () => {
    // As Codex records a response (reasoning, text, each call an item of its own), an aborted response of nothing, a
    // custom tool's call of plain text, a reply ending with a newline.
    const records = await recordsOf([
      says('fix it'),
      answers({ type: 'thinking', text: 'hmm', signature: '{"encrypted":"x"}' }),
      answers({ type: 'text', text: 'Looking.' }),
      calls('a', { cmd: 'ls' }),
      calls('b', '*** Begin Patch'),
      result('a', 'x.ts'),
      result('b', 'done'),
      answers({ type: 'text', text: '' }),
      says('and?'),
      answers({ type: 'text', text: 'Fixed.\n' }),
    ]);
    expect(records).toEqual([
      ['user', [{ type: 'text', text: 'fix it' }]],
      [
        'assistant',
        [
          { type: 'text', text: 'Looking.' },
          { type: 'tool_use', id: 'a', name: 'exec', input: { cmd: 'ls' } },
          { type: 'tool_use', id: 'b', name: 'exec', input: { arguments: '*** Begin Patch' } },
        ],
      ],
      ['user', [{ type: 'tool_result', tool_use_id: 'a', content: 'x.ts' }]],
      ['user', [{ type: 'tool_result', tool_use_id: 'b', content: 'done' }]],
      ['user', [{ type: 'text', text: 'and?' }]],
      ['assistant', [{ type: 'text', text: 'Fixed.' }]],
    ]);
  });

  it('one id per call, none read as an entry of another call', async () => {
    const records = await recordsOf([
      says('go'),
      calls('a'),
      result('a', '1'),
      calls('a'),
      result('a', '2'),
      calls('a_2'),
      result('a_2', '3'),
      answers({ type: 'text', text: 'Done.' }),
    ]);
    const ids = records.flatMap(([, content]) =>
      (content as { id?: string; tool_use_id?: string }[]).flatMap((b) => b.id ?? b.tool_use_id ?? []),
    );
    expect(ids).toEqual(['a', 'a', 'a-2', 'a-2', 'a_2-2', 'a_2-2']);
  });
});

describe('convert, the command', () => {
  const pi = join(dir, 'small.pi.jsonl');
  writeFileSync(pi, SMALL_PI_SESSION);

  it('writes to standard output without --out, the sentence on standard error', () => {
    const r = runCli(['convert', pi, '--to', 'claude-code']);
    expect(r.code, r.stderr).toBe(0);
    const back = parseSession(r.stdout, { format: 'claude-code' });
    expect(activeMessages(back).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(r.stderr).toMatch(/converted .*small\.pi\.jsonl \(pi\) to claude-code: 3 messages/);
  });

  it('refuses what it cannot do, naming it (exit 2)', () => {
    const bad = runCli(['convert', pi, '--to', 'gemini-cli']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--to: expected one of pi, claude-code, codex, got "gemini-cli"/);
    const missing = runCli(['convert', pi]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--to: expected one of pi, claude-code, codex, got nothing/);
    const same = runCli(['convert', pi, '--to', 'pi']);
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(/already a pi transcript: abridge compact --out/);
    const budget = runCli(['convert', pi, '--to', 'claude-code', '--budget', 'lots']);
    expect(budget.code).toBe(2);
    expect(budget.stderr).toMatch(/--budget: expected a whole number ≥ 1, got "lots"/);
    const over = runCli(['convert', pi, '--to', 'claude-code', '-o', pi]);
    expect(over.code).toBe(2);
    expect(readFileSync(pi, 'utf8')).toBe(SMALL_PI_SESSION);
  });

  it('a converted Claude Code session converted back gives the same view', async () => {
    const cc = join(dir, 'small.cc.jsonl');
    expect(runCli(['convert', pi, '--to', 'claude-code', '-o', cc]).code).toBe(0);
    const again = join(dir, 'small.again.pi.jsonl');
    expect(runCli(['convert', cc, '--to', 'pi', '-o', again]).code).toBe(0);
    const first = activeMessages(await readSession(pi));
    const last = activeMessages(await readSession(again));
    expectSame('pi → claude-code → pi', unnamed(last), unnamed(first));
    expectSame('pi resumes it', piResume(readFileSync(again, 'utf8')).sent, activeMessages(await readSession(again)));
  });

  it('a session moved through Codex and Claude Code back to pi gives the same view', async () => {
    const codex = join(dir, 'small.codex.jsonl');
    const run = runCli(['convert', pi, '--to', 'codex', '-o', codex, '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ from: 'pi', to: 'codex', compacted: false });
    const cc = join(dir, 'small.codex.cc.jsonl');
    expect(runCli(['convert', codex, '--to', 'claude-code', '-o', cc]).code).toBe(0);
    const back = join(dir, 'small.codex.cc.pi.jsonl');
    expect(runCli(['convert', cc, '--to', 'pi', '-o', back]).code).toBe(0);
    expect((await readSession(codex)).format).toBe('codex');
    const first = activeMessages(await readSession(pi));
    const last = activeMessages(await readSession(back));
    expectSame('pi → codex → claude-code → pi', unnamed(last), unnamed(first));
  });
});
