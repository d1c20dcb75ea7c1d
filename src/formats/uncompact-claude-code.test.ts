/**
 * Undoing a compaction in a Claude Code transcript: read back by abridge, the undone file gives the view before the
 * compaction (with what Claude Code recorded after it), compared as the Anthropic request it makes; the file keeps
 * every line it had. Where $ABRIDGE_CLAUDE_BIN is set, the real CLI resumes it (`claude -p --resume`) and sends that
 * view (compared as in src/cli/claude-code-resume.test.ts).
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import { viewSession } from '../cli/compact.js';
import { conversationEntries } from '../model/branch.js';
import type { Message, Session } from '../model/types.js';
import { activeMessages, viewOf } from '../model/view.js';
import { claudeBinary, resumeWithClaudeCode } from '../../test/support/claude-code-cli.js';
import { compareResumed, PROMPT } from '../../test/support/claude-code-compare.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { TokenCounter } from '../tokens/counter.js';
import { parseSession } from './read.js';
import { writeSession } from './write.js';
import { CLAUDE_CODE_UNDO_FIELD } from './claude-code.js';
import { compactionsInView, uncompactText } from './uncompact.js';

const counter = new TokenCounter();
const tokens = (ms: readonly Message[]) => ms.reduce((n, m) => n + counter.message(m), 0);

/** Messages as the Anthropic request abridge makes of them (what the CLI is compared with). */
function wire(messages: readonly Message[]): { model: string; messages: unknown[] } {
  const s: Session = {
    format: 'anthropic',
    info: {},
    entries: messages.map((message, index) => ({ index, kind: 'message' as const, message })),
    problems: [],
  };
  return JSON.parse(writeSession(viewSession(s), 'anthropic')) as { model: string; messages: unknown[] };
}

async function compacted(text: string, fraction: number): Promise<string> {
  const session = parseSession(text);
  await compact(session, { target: Math.floor(tokens(activeMessages(session)) * fraction), force: true });
  return writeSession(session, 'claude-code');
}

function undo(text: string, options: { marker?: number; all?: boolean } = {}): { text: string; session: Session } {
  const r = uncompactText(text, options);
  expect(r.format).toBe('claude-code');
  expect(r.text.startsWith(text)).toBe(true);
  return { text: r.text, session: parseSession(r.text) };
}

const expectSameWire = (label: string, a: readonly Message[], b: readonly Message[]) =>
  expect(wire(a).messages, label).toEqual(wire(b).messages);

const cli = claudeBinary();
const withCli = 'bin' in cli ? it : it.skip;

/** Where the CLI is at hand: `claude -p --resume` sends abridge's view of the undone file. */
async function cliResumes(text: string, session: Session): Promise<void> {
  if (!('bin' in cli)) return;
  const view = wire(activeMessages(session));
  const model = /^claude-/.test(view.model) ? view.model : 'claude-sonnet-4-6';
  const run = await resumeWithClaudeCode(cli.bin, text, session.info.id!, PROMPT, model);
  expect(run.main, run.stderr.slice(0, 300)).toBeDefined();
  expect(compareResumed(run.main!.messages, view.messages).differences).toEqual([]);
}

describe('uncompact a Claude Code transcript', async () => {
  const fixture = (await fixtureTranscripts()).find((f) => f.folder === 'claude-code')!;
  const original = readFileSync(fixture.file, 'utf8');
  const before = activeMessages(parseSession(original));

  it("restores the view before abridge's compaction, the undo boundary naming what it undid", async () => {
    const once = await compacted(original, 0.5);
    expect(tokens(activeMessages(parseSession(once)))).toBeLessThan(tokens(before));
    const { text, session } = undo(once);
    expectSameWire('the view before', activeMessages(session), before);
    const boundary = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .findLast((r) => r.subtype === 'compact_boundary')!;
    expect(boundary[CLAUDE_CODE_UNDO_FIELD]).toMatchObject({ undone: [{ number: 1 }] });
    expect(compactionsInView(session)).toHaveLength(0);
    expect(() => uncompactText(text)).toThrow(/no compaction in view/);
  });

  it('keeps what Claude Code recorded after the compaction', { timeout: 120_000 }, async () => {
    const once = await compacted(original, 0.5);
    const s = parseSession(once);
    const last = conversationEntries(s).at(-1)!.id!;
    const rec = {
      parentUuid: last,
      isSidechain: false,
      userType: 'external',
      cwd: s.info.cwd ?? '',
      sessionId: s.info.id,
      version: '2.1.330',
      uuid: '11111111-2222-4333-a444-555555555555',
      timestamp: '2026-01-01T00:00:00.000Z',
      type: 'user',
      message: { role: 'user', content: 'One more thing.' },
    };
    const grown = `${once}${JSON.stringify(rec)}\n`;
    const { text, session } = undo(grown);
    await cliResumes(text, session);
    expectSameWire('before, then what was added', activeMessages(session), [
      ...before,
      activeMessages(parseSession(grown)).at(-1)!,
    ]);
  });

  it('--marker N and --all across two compactions; undone twice', { timeout: 180_000 }, async () => {
    const once = await compacted(original, 0.6);
    const afterFirst = activeMessages(parseSession(once));
    const twice = await compacted(once, 0.5);
    expect(compactionsInView(parseSession(twice)).map((e) => e.compaction!.number)).toEqual([1, 2]);
    const last = undo(twice);
    expectSameWire('before the second', activeMessages(last.session), afterFirst);
    await cliResumes(last.text, last.session);
    const all = undo(twice, { all: true });
    await cliResumes(all.text, all.session);
    expectSameWire('--marker 2', activeMessages(undo(twice, { marker: 2 }).session), afterFirst);
    expectSameWire('--all', activeMessages(undo(twice, { all: true }).session), before);
    expectSameWire('--marker 1', activeMessages(undo(twice, { marker: 1 }).session), before);
    const again = undo(last.text);
    expectSameWire('undone twice', activeMessages(again.session), before);
    await cliResumes(again.text, again.session);
    expect(() => uncompactText(twice, { marker: 3 })).toThrow(/no compaction #3/);
    expect(() => uncompactText(last.text, { marker: 2 })).toThrow(/#2 is not in view/);
  });

  withCli(
    'the Claude Code CLI resumes the view before',
    async () => {
      const { text, session } = undo(await compacted(original, 0.5));
      const view = wire(activeMessages(session));
      const run = await resumeWithClaudeCode((cli as { bin: string }).bin, text, session.info.id!, PROMPT, view.model);
      expect(run.main, run.stderr.slice(0, 300)).toBeDefined();
      expect(compareResumed(run.main!.messages, view.messages).differences).toEqual([]);
      expect(view.messages).toEqual(wire(before).messages);
    },
    180_000,
  );
});

const files = corpusAvailable() ? corpusFiles('claude-code') : [];
const withCompactions = files.filter((f) => readFileSync(f, 'utf8').includes('"compact_boundary"'));
describe.skipIf(withCompactions.length === 0)(
  'uncompact corpus Claude Code transcripts with their own compactions',
  () => {
    it('each compaction undone gives the view before it, then what followed', async () => {
      for (const file of withCompactions) {
        const text = readFileSync(file, 'utf8');
        const session = parseSession(text);
        for (const m of compactionsInView(session)) {
          const branch = conversationEntries(session);
          const k = branch.indexOf(m);
          const later = branch
            .slice(k + 1)
            .filter((e) => e.message && !e.compaction && !e.message.parts.some((p) => p.type === 'compaction'))
            .map((e) => e.message!);
          const expected = [...viewOf(branch.slice(0, k)).map((v) => v.message), ...later];
          const { text: out, session: after } = undo(text, { marker: m.compaction!.number });
          expectSameWire(`${basename(file)} #${m.compaction!.number}`, activeMessages(after), expected);
          await cliResumes(out, after);
        }
      }
    }, 300_000);
  },
);
