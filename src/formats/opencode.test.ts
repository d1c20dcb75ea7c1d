import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { checkInvariants } from '../compaction/invariants.js';
import { activeView } from '../model/view.js';
import type { Message, Part, Session } from '../model/types.js';
import { detectFormat, sampleSource } from './detect.js';
import { OPENCODE_CLEARED_RESULT, OPENCODE_COMPACTION_PROMPT, opencodeFormat } from './opencode.js';
import { parseSession, readSession } from './read.js';

// ---------------------------------------------------------------------------------------------------------------------
// Synthetic fixtures (invented values, in the shape of `opencode export`: {info: Session.Info, messages: [{info, parts}]})

const T0 = Date.parse('2030-01-02T03:04:05.000Z');
const SES = 'ses_0123456789abcdefABCDEF';
let partSeq = 0;

function exportOf(messages: unknown[]): Record<string, unknown> {
  return {
    info: {
      id: SES,
      slug: 'calm-river',
      projectID: 'p'.repeat(40),
      directory: '/work/app',
      title: 'List the files',
      version: '1.2.3',
      time: { created: T0, updated: T0 + 60_000 },
    },
    messages,
    todos: [],
  };
}

function part(messageID: string, p: Record<string, unknown>): Record<string, unknown> {
  partSeq++;
  return { id: `prt_${String(partSeq).padStart(4, '0')}`, sessionID: SES, messageID, ...p };
}

function user(id: string, s: number, parts: Record<string, unknown>[]): Record<string, unknown> {
  return {
    info: {
      id,
      sessionID: SES,
      role: 'user',
      time: { created: T0 + s * 1000 },
      agent: 'build',
      model: { providerID: 'anthropic', modelID: 'claude-sonnet-4-5' },
    },
    parts: parts.map((p) => part(id, p)),
  };
}

const tokens = (input: number, output: number, read = 0, write = 0, reasoning = 0) => ({
  input,
  output,
  reasoning,
  cache: { read, write },
});

function assistant(
  id: string,
  parentID: string,
  s: number,
  parts: Record<string, unknown>[],
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    info: {
      id,
      sessionID: SES,
      role: 'assistant',
      time: { created: T0 + s * 1000, completed: T0 + s * 1000 + 500 },
      parentID,
      modelID: 'claude-sonnet-4-5',
      providerID: 'anthropic',
      mode: 'build',
      agent: 'build',
      path: { cwd: '/work/app', root: '/work/app' },
      cost: 0.01,
      tokens: tokens(0, 0),
      finish: 'stop',
      ...extra,
    },
    parts: parts.map((p) => part(id, p)),
  };
}

const completed = (callID: string, tool: string, input: unknown, output: string, compacted?: number) => ({
  type: 'tool',
  callID,
  tool,
  state: {
    status: 'completed',
    input,
    output,
    title: tool,
    metadata: {},
    time: compacted ? { start: T0, end: T0 + 1, compacted } : { start: T0, end: T0 + 1 },
  },
});

/** A prompt, a two-step answer (reasoning, a listing, a failed read, an old pruned result), then the final text. */
function wholeSession(): Record<string, unknown> {
  return exportOf([
    user('msg_001', 1, [
      { type: 'text', text: 'List the files.' },
      { type: 'agent', name: 'build' },
      { type: 'text', text: '<system-reminder>hidden</system-reminder>', ignored: true },
      { type: 'file', mime: 'text/plain', filename: 'a.ts', url: 'file:///work/app/a.ts' },
      { type: 'text', text: 'Called the Read tool: a.ts contents', synthetic: true },
    ]),
    assistant(
      'msg_002',
      'msg_001',
      2,
      [
        { type: 'step-start', snapshot: 'abc123' },
        {
          type: 'reasoning',
          text: 'I should list.',
          time: { start: T0 },
          metadata: { anthropic: { signature: 'sig' } },
        },
        { type: 'text', text: 'Looking.' },
        completed('toolu_ls', 'bash', { command: 'ls' }, 'a.ts\nb.ts'),
        {
          type: 'tool',
          callID: 'toolu_cat',
          tool: 'read',
          state: {
            status: 'error',
            input: { filePath: '/work/app/c.ts' },
            error: 'File not found',
            time: { start: T0, end: T0 },
          },
        },
        completed('toolu_old', 'grep', { pattern: 'x' }, 'a very long old output', T0 + 5000),
        {
          type: 'step-finish',
          reason: 'tool-calls',
          snapshot: 'abc124',
          cost: 0.01,
          tokens: tokens(100, 20, 900, 50, 7),
        },
        { type: 'patch', hash: 'abc124', files: ['/work/app/a.ts'] },
        { type: 'step-start', snapshot: 'abc124' },
        { type: 'text', text: 'There are two files.' },
        { type: 'step-finish', reason: 'stop', cost: 0.01, tokens: tokens(30, 8, 1000, 0) },
        { type: 'snapshot', snapshot: 'abc125' },
      ],
      { tokens: tokens(30, 8, 1000, 0) },
    ),
  ]);
}

function parse(doc: unknown): Session {
  return parseSession(JSON.stringify(doc, null, 2), { format: 'opencode' });
}

const messages = (s: Session): Message[] => s.entries.flatMap((e) => (e.message ? [e.message] : []));
const parts = <T extends Part['type']>(s: Session, type: T) =>
  messages(s).flatMap((m) => m.parts.filter((p): p is Extract<Part, { type: T }> => p.type === type));
const texts = (m: Message) =>
  m.parts.map((p) =>
    p.type === 'text' ? p.text : p.type === 'compaction' ? `[summary] ${p.marker.summary}` : `<${p.type}>`,
  );

describe('opencode: detection', () => {
  it('detects an export, pretty-printed as opencode writes it', () => {
    const detected = detectFormat(sampleSource(JSON.stringify(wholeSession(), null, 2), true));
    expect(detected).toMatchObject({ kind: 'supported', confidence: 0.95 });
    expect(detected.kind === 'supported' && detected.format.id).toBe('opencode');
    expect(opencodeFormat.detect({ head: '', document: exportOf([]) })).toBe(0.8);
  });

  it('scores other transcripts 0', () => {
    const gemini = {
      document: {
        sessionId: 's',
        projectHash: 'h',
        messages: [{ id: 'm1', type: 'user', timestamp: 'x', content: 'hi' }],
      },
    };
    const sweAgent = { document: { history: [{ role: 'user', content: 'x' }], trajectory: [], info: {} } };
    const anthropic = { document: { model: 'claude-x', messages: [{ role: 'user', content: 'hi' }] } };
    const bare = { document: [{ role: 'user', content: 'hi' }] };
    const infoWithoutExportMessages = { document: { info: { id: SES }, messages: [{ role: 'user', content: 'hi' }] } };
    for (const input of [gemini, sweAgent, anthropic, bare, infoWithoutExportMessages])
      expect(opencodeFormat.detect({ head: '', ...input })).toBe(0);
  });
});

describe('opencode: reading', () => {
  const s = parse(wholeSession());

  it('reads the session info', () => {
    expect(s.format).toBe('opencode');
    expect(s.info).toEqual({ id: SES, cwd: '/work/app', title: 'List the files', startedAt: T0 });
    expect(s.problems).toEqual([]);
  });

  it('sends user text but ignored parts, agent parts and text/plain files (their contents are synthetic text)', () => {
    const first = messages(s)[0]!;
    expect(first.role).toBe('user');
    expect(texts(first)).toEqual(['List the files.', 'Called the Read tool: a.ts contents']);
    expect(first.synthetic).toBeUndefined();
    expect(first.timestamp).toBe(T0 + 1000);
  });

  it('splits an assistant message into its steps, each with its results and usage', () => {
    expect(messages(s).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const [, step1, results, step2] = messages(s);
    expect(step1!.parts.map((p) => p.type)).toEqual(['thinking', 'text', 'tool-call', 'tool-call', 'tool-call']);
    expect(step1!.parts[0]).toEqual({ type: 'thinking', text: 'I should list.', signature: 'sig' });
    expect(step1!.usage).toEqual({ input: 100, output: 20, cacheRead: 900, cacheWrite: 50, reasoning: 7 });
    expect(step1!.model).toBe('claude-sonnet-4-5');
    expect(step1!.provider).toBe('anthropic');
    expect(texts(step2!)).toEqual(['There are two files.']);
    expect(step2!.usage).toEqual({ input: 30, output: 8, cacheRead: 1000, cacheWrite: 0 });
    expect(step2!.stopReason).toBe('stop');
    expect(results!.parts.map((p) => (p.type === 'tool-result' ? p.callId : p.type))).toEqual([
      'toolu_ls',
      'toolu_cat',
      'toolu_old',
    ]);
    // One source record: the later messages are written from the first entry's raw.
    expect(s.entries.map((e) => e.fromSameRecord ?? false)).toEqual([false, false, true, true]);
  });

  it('pairs calls and results by callID, flags errors, and sends a pruned result as the placeholder', () => {
    expect(parts(s, 'tool-call').map((c) => [c.id, c.name, c.arguments])).toEqual([
      ['toolu_ls', 'bash', { command: 'ls' }],
      ['toolu_cat', 'read', { filePath: '/work/app/c.ts' }],
      ['toolu_old', 'grep', { pattern: 'x' }],
    ]);
    expect(parts(s, 'tool-result').map((r) => [r.callId, r.toolName, r.content, r.isError])).toEqual([
      ['toolu_ls', 'bash', [{ type: 'text', text: 'a.ts\nb.ts' }], false],
      ['toolu_cat', 'read', [{ type: 'text', text: 'File not found' }], true],
      ['toolu_old', 'grep', [{ type: 'text', text: OPENCODE_CLEARED_RESULT }], false],
    ]);
    expect(checkInvariants(activeView(s))).toEqual([]);
  });

  it('leaves out what opencode does not send (step-start/finish, patch, snapshot)', () => {
    const all = JSON.stringify(messages(s));
    for (const word of ['abc123', 'abc124', 'abc125', 'tool-calls']) expect(all).not.toContain(word);
  });

  it('reads interrupted calls and aborted or failed messages as toModelMessages does', () => {
    const doc = exportOf([
      user('msg_001', 1, [{ type: 'text', text: 'Run it.' }]),
      assistant(
        'msg_002',
        'msg_001',
        2,
        [
          { type: 'step-start' },
          {
            type: 'tool',
            callID: 'c1',
            tool: 'bash',
            state: { status: 'running', input: { command: 'sleep 9' }, time: { start: T0 } },
          },
          {
            type: 'tool',
            callID: 'c2',
            tool: 'bash',
            state: {
              status: 'error',
              input: { command: 'make' },
              error: 'aborted',
              metadata: { interrupted: true, output: 'partial output' },
              time: { start: T0, end: T0 },
            },
          },
        ],
        { error: { name: 'MessageAbortedError', data: { message: 'aborted' } }, tokens: tokens(10, 2) },
      ),
      user('msg_003', 3, [{ type: 'text', text: 'Again.' }]),
      assistant('msg_004', 'msg_003', 4, [{ type: 'step-start' }, { type: 'text', text: 'half' }], {
        error: { name: 'APIError', data: { message: 'overloaded', isRetryable: true } },
        tokens: tokens(40, 0),
      }),
    ]);
    const r = parse(doc);
    expect(parts(r, 'tool-result').map((x) => [x.callId, x.content, x.isError])).toEqual([
      ['c1', [{ type: 'text', text: '[Tool execution was interrupted]' }], true],
      ['c2', [{ type: 'text', text: 'partial output' }], false],
    ]);
    // The failed message is not sent: an event that keeps what the request billed.
    const failed = r.entries.at(-1)!;
    expect(failed.message).toBeUndefined();
    expect(failed.kind).toBe('event');
    expect(failed.usage).toEqual({ input: 40, output: 0, cacheRead: 0, cacheWrite: 0 });
    expect(messages(r).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
  });

  it('takes the message tokens for the last step when there are no step-finish parts', () => {
    const r = parse(
      exportOf([
        user('msg_001', 1, [{ type: 'text', text: 'Hi.' }]),
        assistant('msg_002', 'msg_001', 2, [{ type: 'text', text: 'Hello.' }], { tokens: tokens(5, 3, 1200, 0, 0) }),
      ]),
    );
    expect(messages(r)[1]!.usage).toEqual({ input: 5, output: 3, cacheRead: 1200, cacheWrite: 0 });
  });

  it('reads images attached by the user inline from their data url', () => {
    const r = parse(
      exportOf([
        user('msg_001', 1, [
          { type: 'text', text: 'What is this?' },
          { type: 'file', mime: 'image/png', filename: 'x.png', url: 'data:image/png;base64,iVBORw0KGgo=' },
        ]),
      ]),
    );
    expect(messages(r)[0]!.parts[1]).toEqual({
      type: 'image',
      mediaType: 'image/png',
      data: 'iVBORw0KGgo=',
      byteSize: 8,
    });
  });
});

describe('opencode: compaction', () => {
  /** Two turns, a compaction (a user message with a compaction part, answered by a summary), a turn after it. */
  function compacted(tailStartId?: string): Record<string, unknown> {
    return exportOf([
      user('msg_001', 1, [{ type: 'text', text: 'First task.' }]),
      assistant('msg_002', 'msg_001', 2, [{ type: 'text', text: 'Done first.' }]),
      user('msg_003', 3, [{ type: 'text', text: 'Second task.' }]),
      assistant('msg_004', 'msg_003', 4, [{ type: 'text', text: 'Done second.' }]),
      user('msg_005', 5, [{ type: 'compaction', auto: true, ...(tailStartId ? { tail_start_id: tailStartId } : {}) }]),
      assistant(
        'msg_006',
        'msg_005',
        6,
        [{ type: 'step-start' }, { type: 'text', text: '## Goal\nTwo tasks, both done.' }],
        {
          summary: true,
          mode: 'compaction',
          agent: 'compaction',
        },
      ),
      user('msg_007', 7, [{ type: 'text', text: 'Continue if you have next steps', synthetic: true }]),
      assistant('msg_008', 'msg_007', 8, [{ type: 'text', text: 'Nothing left.' }]),
    ]);
  }

  it('shows what opencode sends after its summary: the compaction prompt, the summary, what followed', () => {
    const s = parse(compacted());
    expect(s.problems).toEqual([]);
    const marker = s.entries[4]!.compaction!;
    expect(marker).toMatchObject({
      number: 1,
      source: 'opencode',
      trigger: 'auto',
      summary: '## Goal\nTwo tasks, both done.',
      archived: { fromEntry: 0, toEntry: 3 },
    });
    const view = activeView(s);
    expect(view.map((v) => texts(v.message))).toEqual([
      [OPENCODE_COMPACTION_PROMPT],
      ['[summary] ## Goal\nTwo tasks, both done.'],
      ['Continue if you have next steps'],
      ['Nothing left.'],
    ]);
    expect(view.map((v) => v.message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(view[2]!.message.synthetic).toBe(true);
    expect(checkInvariants(view)).toEqual([]);
  });

  it('keeps the tail a compaction names (tail_start_id) in view', () => {
    const s = parse(compacted('msg_003'));
    const view = activeView(s);
    // In the order filterCompacted sends them: the kept tail, then the compaction's prompt and its summary.
    expect(view.flatMap((v) => texts(v.message))).toEqual([
      'Second task.',
      'Done second.',
      OPENCODE_COMPACTION_PROMPT,
      '[summary] ## Goal\nTwo tasks, both done.',
      'Continue if you have next steps',
      'Nothing left.',
    ]);
    expect(s.entries[4]!.compaction).toMatchObject({ firstKeptEntry: 2, firstKeptEntryId: 'msg_003' });
    expect(s.entries[4]!.message).toBeUndefined();
  });

  it('does not cut at a summary that has not finished or failed', () => {
    const doc = compacted();
    const msgs = doc.messages as { info: Record<string, unknown> }[];
    delete msgs[5]!.info.finish;
    const s = parse(doc);
    expect(s.entries.some((e) => e.compaction)).toBe(false);
    expect(activeView(s)).toHaveLength(8);
  });

  it('reads the older shape (a summary message, no compaction part) as the history starting at the summary', () => {
    const s = parse(
      exportOf([
        user('msg_001', 1, [{ type: 'text', text: 'First task.' }]),
        assistant('msg_002', 'msg_001', 2, [{ type: 'text', text: 'Done first.' }]),
        assistant('msg_003', 'msg_001', 3, [{ type: 'text', text: 'Summary of it all.' }], { summary: true }),
        user('msg_004', 4, [{ type: 'text', text: 'Next.' }]),
      ]),
    );
    expect(activeView(s).map((v) => texts(v.message))).toEqual([['[summary] Summary of it all.'], ['Next.']]);
  });
});

describe('opencode: problems', () => {
  it('reports a malformed part or message by its place and what was expected, and reads on', () => {
    const doc = wholeSession();
    const msgs = doc.messages as Record<string, unknown>[];
    (msgs[1]!.parts as unknown[]).splice(3, 0, { type: 'tool', tool: 'bash', state: { status: 'done' } }, 'oops', {
      type: 'hologram',
    });
    msgs.push(42 as unknown as Record<string, unknown>, { info: { role: 'system' }, parts: [] });
    const s = parse(doc);
    expect(s.problems.map((p) => p.message)).toEqual([
      '<input>: messages[1].parts[3] (a tool part) has no string "callID" and "tool"; left out',
      '<input>: messages[1].parts[4] is not an object (expected a part {"type", …}); left out',
      expect.stringMatching(/^<input>: messages\[1\]\.parts\[5\] has unknown type "hologram" \(expected one of text, /),
      '<input>: messages[2] is not an object (expected {"info": {…}, "parts": […]}); kept as is',
      '<input>: messages[3].info has role "system" (expected {"info": {"role": "user" or "assistant", …}, "parts": […]}); kept as is, not sent',
    ]);
    expect(s.problems.map((p) => p.line)).toEqual([2, 2, 2, 3, 4]);
    // The rest reads as before.
    expect(parts(s, 'tool-result')).toHaveLength(3);
    expect(s.entries.at(-1)!.kind).toBe('unknown');
  });

  it('refuses a document that is not an export', () => {
    for (const doc of [{ messages: [] }, { info: {} }, [], 'x']) {
      try {
        opencodeFormat.readDocument!(doc, 'x.json');
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(AbridgeError);
        expect((e as AbridgeError).code).toBe('INVALID_INPUT');
        expect((e as Error).message).toMatch(/^x\.json: not an opencode export: expected a JSON object \{"info"/);
      }
    }
  });
});

describe('opencode: readSession', () => {
  const dir = mkdtempSync(join(tmpdir(), 'abridge-opencode-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads an export file, detecting its format', async () => {
    const file = join(dir, `${SES}.json`);
    writeFileSync(file, `${JSON.stringify(wholeSession(), null, 2)}\n`);
    const s = await readSession(file);
    expect(s.format).toBe('opencode');
    expect(s.entries).toHaveLength(4);
    s.entries.forEach((e, i) => expect(e.index).toBe(i));
    expect(parts(s, 'tool-result').map((r) => [r.callId, r.isError])).toEqual([
      ['toolu_ls', false],
      ['toolu_cat', true],
      ['toolu_old', false],
    ]);
  });
});
