/**
 * `abridge compact --out` of a Claude Code transcript: what the writer appends for an abridge compaction (the real CLI
 * reading it back is checked in claude-code-resume.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import type { StrategyName } from '../compaction/strategies/strategy.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import { viewSession } from './compact.js';

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
const asst = (id: string, content: unknown[]) => ({
  message: {
    id,
    type: 'message',
    role: 'assistant',
    model: 'claude-opus-4-6',
    content,
    stop_reason: null,
    stop_sequence: null,
    usage,
  },
});

describe('Claude Code writer: an abridge compaction', () => {
  const big = (tag: string) => Array.from({ length: 400 }, (_, i) => `${tag} line ${i}: value ${i * 7}`).join('\n');
  const steps: unknown[] = [rec('user', 'u0', null, { message: { role: 'user', content: 'fix the failing build' } })];
  let parent = 'u0';
  for (let i = 0; i < 8; i++) {
    // One response written as two records (text, then the call), as Claude Code streams it.
    steps.push(rec('assistant', `a${i}t`, parent, asst(`msg_${i}`, [{ type: 'text', text: `step ${i}` }])));
    steps.push(
      rec(
        'assistant',
        `a${i}c`,
        `a${i}t`,
        asst(`msg_${i}`, [{ type: 'tool_use', id: `toolu_${i}`, name: 'Bash', input: { command: `make part${i}` } }]),
      ),
    );
    steps.push(
      rec('user', `r${i}`, `a${i}c`, {
        message: {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: big(`out${i}`) }],
        },
      }),
    );
    parent = `r${i}`;
  }
  steps.push(
    rec('system', 'lc', parent, {
      subtype: 'local_command',
      content: '<command-name>/model</command-name>',
      level: 'info',
      isMeta: false,
    }),
  );
  const source = jsonl(steps);

  const compacted = async (strategies?: StrategyName[]) => {
    const s = parseSession(source);
    const r = await compact(s, {
      target: 2500,
      force: true,
      summarizer: new ExtractiveSummarizer(),
      ...(strategies ? { strategies } : {}),
      now: () => new Date(Date.UTC(2026, 0, 2)),
    });
    expect(r.marker).toBeDefined();
    return s;
  };
  const records = (text: string) =>
    text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const view = (s: ReturnType<typeof parseSession>) => writeSession(viewSession(s), 'anthropic');

  for (const strategies of [undefined, ['summarize'], ['clear-tool-results']] as (StrategyName[] | undefined)[]) {
    it(`keeps every record, then appends a boundary and the compacted view as a new chain (${strategies?.join(', ') ?? 'default chain'})`, async () => {
      const s = await compacted(strategies);
      const out = records(writeSession(s));
      const original = records(source);
      expect(out.slice(0, original.length)).toEqual(original);
      const added = out.slice(original.length);
      const boundary = added[0]!;
      expect(boundary).toMatchObject({
        type: 'system',
        subtype: 'compact_boundary',
        parentUuid: null,
        logicalParentUuid: 'lc',
        isSidechain: false,
      });
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
      const chain = added.slice(1).map((r) => ({
        role: (r.message as { role: string }).role,
        content: blocks((r.message as { content: unknown }).content),
      }));
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
    // First a clear-only compaction, so that the second one (with summaries) has old work left to archive.
    const s = await compacted(['clear-tool-results']);
    const once = writeSession(s);
    const again = parseSession(once);
    const second = await compact(again, {
      target: 1500,
      force: true,
      summarizer: new ExtractiveSummarizer(),
      now: () => new Date(Date.UTC(2026, 0, 3)),
    });
    expect(second.entry).toBeDefined();
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
