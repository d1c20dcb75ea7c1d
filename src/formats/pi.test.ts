import { describe, expect, it } from 'vitest';
import { activeBranch } from '../model/branch.js';
import { parseSession } from './read.js';
import { writeSession } from './write.js';

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
const ts = '2026-01-01T00:00:00.000Z';
const e = (type: string, id: string, parentId: string | null, rest: Record<string, unknown>) => ({
  type,
  id,
  parentId,
  timestamp: ts,
  ...rest,
});

const v3 = [
  { type: 'session', version: 3, id: 'sess', timestamp: ts, cwd: '/repo' },
  e('model_change', 'm0', null, { provider: 'anthropic', modelId: 'claude-sonnet-4-5' }),
  e('thinking_level_change', 't0', 'm0', { thinkingLevel: 'high' }),
  e('message', 'u1', 't0', { message: { role: 'user', content: 'fix the bug', timestamp: 1 } }),
  e('message', 'a1', 'u1', {
    message: {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'look first', thinkingSignature: 'sig==' },
        { type: 'text', text: 'Reading.' },
        { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'src/a.ts' } },
      ],
      api: 'anthropic-messages',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      usage: { input: 3, output: 40, cacheRead: 1000, cacheWrite: 200, totalTokens: 1243 },
      stopReason: 'toolUse',
      timestamp: 2,
    },
  }),
  e('message', 'r1', 'a1', {
    message: {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'read',
      content: [
        { type: 'text', text: 'code' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      ],
      isError: false,
      timestamp: 3,
    },
  }),
  // A branch: the user went back to u1 and asked something else.
  e('branch_summary', 'b1', 'u1', { fromId: 'r1', summary: 'Tried reading src/a.ts.' }),
  e('message', 'u2', 'b1', {
    message: { role: 'user', content: [{ type: 'text', text: 'use grep instead' }], timestamp: 4 },
  }),
  e('custom_message', 'cm', 'u2', { customType: 'ext', content: 'injected', display: true }),
  e('message', 'x1', 'cm', {
    message: {
      role: 'bashExecution',
      command: 'npm test',
      output: '1 failed',
      exitCode: 1,
      cancelled: false,
      truncated: false,
      timestamp: 5,
    },
  }),
  e('compaction', 'k1', 'x1', { summary: 'Goal: fix the bug.', firstKeptEntryId: 'u2', tokensBefore: 50000 }),
  e('custom', 'cu', 'k1', { customType: 'ext', data: { n: 1 } }),
  e('label', 'l1', 'cu', { targetId: 'u2', label: 'here' }),
  e('session_info', 'si', 'l1', { name: 'Bug hunt' }),
];

describe('pi reader', () => {
  it('reads every v3 entry type', () => {
    const s = parseSession(jsonl(v3));
    expect(s.format).toBe('pi');
    expect(s.problems).toEqual([]);
    expect(s.info).toMatchObject({ id: 'sess', cwd: '/repo', version: 3, title: 'Bug hunt' });
    expect(s.entries.map((x) => x.kind)).toEqual([
      'header',
      'model-change',
      'thinking-level',
      'message',
      'message',
      'message',
      'branch-summary',
      'message',
      'message',
      'message',
      'compaction',
      'custom',
      'label',
      'session-info',
    ]);
    const a1 = s.entries[4]!.message!;
    expect(a1.parts).toEqual([
      { type: 'thinking', text: 'look first', signature: 'sig==' },
      { type: 'text', text: 'Reading.' },
      { type: 'tool-call', id: 'c1', name: 'read', arguments: { path: 'src/a.ts' } },
    ]);
    expect(a1.usage).toEqual({ input: 3, output: 40, cacheRead: 1000, cacheWrite: 200 });
    expect(a1.model).toBe('claude-sonnet-4-5');
    const r1 = s.entries[5]!.message!;
    expect(r1.role).toBe('tool');
    expect(r1.parts[0]).toEqual({
      type: 'tool-result',
      callId: 'c1',
      toolName: 'read',
      isError: false,
      content: [
        { type: 'text', text: 'code' },
        { type: 'image', mediaType: 'image/png', byteSize: 3, data: 'AAAA' },
      ],
    });
    // As pi sends it (its bashExecutionToText).
    expect(s.entries[9]!.message!.parts[0]).toEqual({
      type: 'text',
      text: 'Ran `npm test`\n```\n1 failed\n```\n\nCommand exited with code 1',
    });
    const marker = s.entries[10]!.compaction!;
    expect(marker).toMatchObject({
      number: 1,
      summary: 'Goal: fix the bug.',
      tokensBefore: 50000,
      firstKeptEntryId: 'u2',
      firstKeptEntry: 7,
      source: 'pi',
    });
    expect(marker.archived).toEqual({ fromEntry: 1, toEntry: 6 });
  });

  it('follows the active branch: the abandoned path is off it', () => {
    const s = parseSession(jsonl(v3));
    const ids = activeBranch(s).map((x) => x.id ?? 'header');
    expect(ids).toEqual(['header', 'm0', 't0', 'u1', 'b1', 'u2', 'cm', 'x1', 'k1', 'cu', 'l1', 'si']);
    expect(activeBranch(s, { leafId: 'r1' }).map((x) => x.id ?? 'header')).toEqual([
      'header',
      'm0',
      't0',
      'u1',
      'a1',
      'r1',
    ]);
  });

  it('reads the older header without version as a linear session', () => {
    const old = [
      {
        type: 'session',
        id: 'o',
        timestamp: ts,
        cwd: '/r',
        provider: 'anthropic',
        modelId: 'claude-opus-4-5',
        thinkingLevel: 'off',
      },
      {
        type: 'message',
        timestamp: ts,
        message: { role: 'user', content: [{ type: 'text', text: 'hi' }], timestamp: 1 },
      },
      { type: 'compaction', timestamp: ts, summary: 'S', firstKeptEntryIndex: 1, tokensBefore: 9 },
    ];
    const s = parseSession(jsonl(old));
    expect(s.info.version).toBeUndefined();
    expect(s.entries[0]!.model).toEqual({ provider: 'anthropic', id: 'claude-opus-4-5' });
    expect(activeBranch(s)).toHaveLength(3);
    expect(s.entries[2]!.compaction!.firstKeptEntry).toBe(1);
  });

  it('keeps an unknown entry type with a problem, and writes it back', () => {
    const text = jsonl([v3[0], { type: 'future_thing', id: 'f', parentId: null, timestamp: ts, x: 1 }]);
    const s = parseSession(text);
    expect(s.problems).toEqual([
      { line: 2, kind: 'unknown-entry-type', message: 'line 2: unknown pi entry type "future_thing"; kept as is' },
    ]);
    expect(writeSession(s)).toBe(text);
  });

  it('writes back byte-identically and appends new entries linked into the tree', () => {
    const text = jsonl(v3);
    const s = parseSession(text);
    expect(writeSession(s)).toBe(text);
    s.entries.push({
      index: s.entries.length,
      kind: 'message',
      message: { role: 'user', parts: [{ type: 'text', text: 'more' }] },
      timestamp: 10,
    });
    const out = writeSession(s);
    const last = JSON.parse(out.trim().split('\n').at(-1)!);
    expect(last).toMatchObject({
      type: 'message',
      parentId: 'si',
      message: { role: 'user', content: [{ type: 'text', text: 'more' }] },
    });
    const again = parseSession(out);
    expect(activeBranch(again).at(-1)!.message!.parts).toEqual([{ type: 'text', text: 'more' }]);
  });
});

describe('reading without keeping source text (keepSourceText: false, as inspect reads)', () => {
  it('drops only the rawText writing back needs; entries and problems are the same', () => {
    // The second record has other spacing than JSON.stringify writes; the last line is not JSON.
    const lines = jsonl(v3).split('\n');
    lines[1] = lines[1]!.replace('"type":', '"type" : ');
    const source = `${lines.filter(Boolean).join('\n')}\nnot json\n`;
    const kept = parseSession(source);
    const lean = parseSession(source, { keepSourceText: false });
    expect(kept.entries.filter((e) => e.rawText !== undefined).map((e) => e.line)).toEqual([2, v3.length + 1]);
    expect(lean.entries.filter((e) => e.rawText !== undefined).map((e) => e.line)).toEqual([v3.length + 1]);
    const withoutRaw = (s: typeof kept) => s.entries.map(({ rawText: _, ...rest }) => rest);
    expect(withoutRaw(lean)).toEqual(withoutRaw(kept));
    expect(lean.problems).toEqual(kept.problems);
  });
});
