import { describe, expect, it } from 'vitest';
import { activeBranch } from '../model/branch.js';
import { parseSession } from './read.js';
import { writeSession } from './write.js';
import { compact } from '../compaction/compact.js';
import type { StrategyName } from '../compaction/strategies/strategy.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { viewSession } from '../cli/compact.js';

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
let n = 0;
const rec = (type: string, uuid: string, parentUuid: string | null, rest: Record<string, unknown> = {}) => ({
  parentUuid,
  isSidechain: false,
  userType: 'external',
  cwd: '/repo',
  sessionId: 'S',
  version: '2.1.0',
  type,
  uuid,
  timestamp: `2026-01-01T00:00:${String(n++ % 60).padStart(2, '0')}.000Z`,
  ...rest,
});
const usage = { input_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 50 };
const asst = (id: string, content: unknown[]) => ({ message: { id, type: 'message', role: 'assistant', model: 'claude-opus-4-6', content, stop_reason: null, stop_sequence: null, usage } });

const transcript = [
  { type: 'file-history-snapshot', messageId: 'x', snapshot: {}, isSnapshotUpdate: false },
  rec('user', 'u1', null, { message: { role: 'user', content: 'run both checks' } }),
  rec('assistant', 'a1', 'u1', asst('msg_1', [{ type: 'thinking', thinking: 'two tools', signature: 'SIG' }])),
  rec('assistant', 'a2', 'a1', asst('msg_1', [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'npm test' } }])),
  rec('progress', 'p1', 'a2', { data: { type: 'bash_progress' }, toolUseID: 't1', parentToolUseID: 't1' }),
  rec('assistant', 'a3', 'p1', asst('msg_1', [{ type: 'tool_use', id: 't2', name: 'Bash', input: { command: 'npm run lint' } }])),
  rec('user', 'r1', 'a2', { message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok', is_error: false }] }, toolUseResult: {} }),
  rec('user', 'r2', 'a3', {
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: '3 errors' }], is_error: true }, { type: 'text', text: '[Request interrupted by user]' }] },
  }),
  rec('system', 'cb', null, { logicalParentUuid: 'r2', subtype: 'compact_boundary', content: 'Conversation compacted', isMeta: false, level: 'info', compactMetadata: { trigger: 'manual', preTokens: 150000 } }),
  rec('user', 'cs', 'cb', { isCompactSummary: true, isVisibleInTranscriptOnly: true, message: { role: 'user', content: 'Summary: checks ran; lint has 3 errors.' } }),
  rec('assistant', 'a4', 'cs', { ...asst('msg_2', [{ type: 'text', text: 'Fixing lint.' }]), isSidechain: false }),
  rec('user', 's1', null, { isSidechain: true, message: { role: 'user', content: 'subagent task' } }),
];

describe('Claude Code reader', () => {
  const s = parseSession(jsonl(transcript));

  it('is detected and read without problems', () => {
    expect(s.format).toBe('claude-code');
    expect(s.problems).toEqual([]);
    expect(s.info).toMatchObject({ id: 'S', cwd: '/repo' });
  });

  it('reads usage, response ids and content blocks', () => {
    const a2 = s.entries.find((e) => e.id === 'a2')!.message!;
    expect(a2.usage).toEqual({ input: 5, output: 50, cacheRead: 2000, cacheWrite: 100 });
    expect(a2.responseId).toBe('msg_1');
    expect(a2.parts).toEqual([{ type: 'tool-call', id: 't1', name: 'Bash', arguments: { command: 'npm test' } }]);
    expect(s.entries.find((e) => e.id === 'a1')!.message!.parts).toEqual([{ type: 'thinking', text: 'two tools', signature: 'SIG' }]);
  });

  it('splits a user record holding tool results and text into a tool message then a user message', () => {
    const i = s.entries.findIndex((e) => e.id === 'r2');
    expect(s.entries[i]!.message).toMatchObject({ role: 'tool', parts: [{ type: 'tool-result', callId: 't2', isError: true, content: [{ type: 'text', text: '3 errors' }] }] });
    expect(s.entries[i + 1]).toMatchObject({ fromSameRecord: true, message: { role: 'user', parts: [{ type: 'text', text: '[Request interrupted by user]' }] } });
  });

  it('joins compact_boundary and its summary into one marker', () => {
    const b = s.entries.find((e) => e.kind === 'compaction')!;
    expect(b.compaction).toMatchObject({ number: 1, summary: 'Summary: checks ran; lint has 3 errors.', tokensBefore: 150000, trigger: 'manual', source: 'claude-code' });
    const r2 = s.entries.find((e) => e.id === 'r2')!;
    expect(b.compaction!.archived).toEqual({ fromEntry: 0, toEntry: r2.index });
  });

  it('active branch crosses the compaction, keeps parallel calls and results, leaves out sidechains', () => {
    const roles = activeBranch(s)
      .filter((e) => e.message)
      .map((e) => `${e.id ?? '+'}:${e.message!.role}`);
    expect(roles).toEqual(['u1:user', 'a1:assistant', 'a2:assistant', 'a3:assistant', 'r1:tool', 'r2:tool', '+:user', 'cs:user', 'a4:assistant']);
    const after = activeBranch(s, { throughCompactions: false }).filter((e) => e.message).map((e) => e.id);
    expect(after).toEqual(['cs', 'a4']);
  });

  it('writes back byte-identically', () => {
    expect(writeSession(s)).toBe(jsonl(transcript));
  });

  it('converts to pi and back without losing messages', () => {
    const pi = parseSession(writeSession(s, 'pi'));
    expect(pi.format).toBe('pi');
    const texts = (x: typeof s) =>
      activeBranch(x)
        .filter((e) => e.message && e.message.role !== 'system')
        .flatMap((e) => e.message!.parts.map((p) => (p.type === 'text' ? p.text : p.type === 'tool-call' ? p.id : p.type === 'tool-result' ? `=${p.callId}` : p.type)));
    expect(texts(pi)).toEqual(texts(s).filter(() => true));
  });
});

describe('Claude Code writer: an abridge compaction', () => {
  const big = (tag: string) => Array.from({ length: 400 }, (_, i) => `${tag} line ${i}: value ${i * 7}`).join('\n');
  const steps: unknown[] = [rec('user', 'u0', null, { message: { role: 'user', content: 'fix the failing build' } })];
  let parent = 'u0';
  for (let i = 0; i < 8; i++) {
    // One response written as two records (text, then the call), as Claude Code streams it.
    steps.push(rec('assistant', `a${i}t`, parent, asst(`msg_${i}`, [{ type: 'text', text: `step ${i}` }])));
    steps.push(rec('assistant', `a${i}c`, `a${i}t`, asst(`msg_${i}`, [{ type: 'tool_use', id: `toolu_${i}`, name: 'Bash', input: { command: `make part${i}` } }])));
    steps.push(rec('user', `r${i}`, `a${i}c`, { message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: big(`out${i}`) }] } }));
    parent = `r${i}`;
  }
  steps.push(rec('system', 'lc', parent, { subtype: 'local_command', content: '<command-name>/model</command-name>', level: 'info', isMeta: false }));
  const source = jsonl(steps);

  const compacted = async (strategies?: StrategyName[]) => {
    const s = parseSession(source);
    const r = await compact(s, { target: 2500, force: true, summarizer: new ExtractiveSummarizer(), ...(strategies ? { strategies } : {}), now: () => new Date(Date.UTC(2026, 0, 2)) });
    expect(r.marker).toBeDefined();
    return s;
  };
  const records = (text: string) => text.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const view = (s: ReturnType<typeof parseSession>) => writeSession(viewSession(s), 'anthropic');

  it('reads a local command record as the user message Claude Code sends', () => {
    const s = parseSession(source);
    expect(s.entries.find((e) => e.id === 'lc')!.message).toMatchObject({ role: 'user', synthetic: true, parts: [{ type: 'text', text: '<command-name>/model</command-name>' }] });
  });

  for (const strategies of [undefined, ['summarize'], ['clear-tool-results']] as (StrategyName[] | undefined)[]) {
    it(`keeps every record, then appends a boundary and the compacted view as a new chain (${strategies?.join(', ') ?? 'default chain'})`, async () => {
      const s = await compacted(strategies);
      const out = records(writeSession(s));
      const original = records(source);
      expect(out.slice(0, original.length)).toEqual(original);
      const added = out.slice(original.length);
      const boundary = added[0]!;
      expect(boundary).toMatchObject({ type: 'system', subtype: 'compact_boundary', parentUuid: null, logicalParentUuid: 'lc', isSidechain: false });
      // A chain: each record's parent is the one before; uuids and response ids are all new.
      added.slice(1).forEach((r, i) => expect(r.parentUuid).toBe(added[i]!.uuid));
      const uuids = new Set(original.map((r) => r.uuid));
      for (const r of added) expect(uuids.has(r.uuid)).toBe(false);
      expect(new Set(added.map((r) => r.uuid)).size).toBe(added.length);
      const ids = new Set(original.map((r) => (r.message as { id?: string } | undefined)?.id).filter(Boolean));
      for (const r of added) if (r.type === 'assistant') expect(ids.has((r.message as { id: string }).id)).toBe(false);
      // What the chain holds is abridge's view as the Anthropic writer sends it; the summary is Claude Code's own record.
      const wire = JSON.parse(view(s)) as { messages: { role: string; content: unknown[] }[] };
      const summaries = added.filter((r) => r.isCompactSummary === true);
      expect(summaries.length).toBe(s.entries.some((e) => e.compaction?.summary) ? 1 : 0);
      if (strategies?.[0] === 'summarize') expect(summaries.length).toBe(1);
      const chain = added.slice(1).map((r) => ({ role: (r.message as { role: string }).role, content: blocks((r.message as { content: unknown }).content) }));
      const merged: { role: string; content: unknown[] }[] = [];
      for (const m of chain) {
        const last = merged[merged.length - 1];
        if (last?.role === m.role) last.content.push(...m.content);
        else merged.push({ role: m.role, content: [...m.content] });
      }
      expect(merged).toEqual(wire.messages.map((m) => ({ role: m.role, content: blocks(m.content) })));
      // Read back, abridge sees the same.
      expect(view(parseSession(writeSession(s)))).toBe(view(s));
    });
  }

  it('compacts again after reading its own output back: a second boundary and chain, the first kept', async () => {
    const s = await compacted();
    const once = writeSession(s);
    const again = parseSession(once);
    await compact(again, { target: 1500, force: true, summarizer: new ExtractiveSummarizer(), now: () => new Date(Date.UTC(2026, 0, 3)) });
    const twice = writeSession(again);
    expect(twice.startsWith(once)).toBe(true);
    const out = records(twice);
    expect(out.filter((r) => r.subtype === 'compact_boundary')).toHaveLength(2);
    expect(new Set(out.map((r) => r.uuid).filter(Boolean)).size).toBe(out.filter((r) => r.uuid).length);
    expect(view(parseSession(twice))).toBe(view(again));
  });
});

function blocks(content: unknown): unknown[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : (content as unknown[]);
}
