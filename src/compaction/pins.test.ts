import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import type { Session } from '../model/types.js';
import { activeView, isSummaryItem } from '../model/view.js';
import { PiTranscript } from '../../test/support/random-session.js';
import { compact } from './compact.js';
import { checkInvariants } from './invariants.js';
import { summaryText } from './strategies/summarize.js';

const lines = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `${tag} line ${String(i + 1).padStart(4, '0')}: value ${i * 7} ok`).join('\n');

/** A task, then `steps` steps of one read each (60-line results), then a last request. */
function session(steps = 12): { session: Session; resultEntry: (i: number) => number } {
  const t = new PiTranscript();
  t.user('Fix the retry in src/net/retry.ts.');
  for (let i = 0; i < steps; i++)
    t.step({
      text: `Step ${i}.`,
      calls: [{ name: 'read', args: { path: `src/f${i}.ts` }, result: lines(60, `out${i}`) }],
    });
  t.user('Now run the tests.');
  const s = parseSession(t.jsonl());
  const results = s.entries.filter((e) => e.message?.role === 'tool').map((e) => e.index);
  return { session: s, resultEntry: (i) => results[i]! };
}

const tokens = async (s: Session) =>
  (await compact(s, { target: Number.MAX_SAFE_INTEGER, strategies: [], prefixTokens: 0 })).beforeTokens;

describe('pins', () => {
  it('a pinned tool result stays verbatim through every strategy, its call beside it', async () => {
    const { session: s, resultEntry } = session();
    const pinned = resultEntry(1);
    const before = JSON.stringify(s.entries[pinned]!.message);
    const target = Math.round((await tokens(s)) * 0.3);
    const r = await compact(s, { target, force: true, prefixTokens: 0, pinned: [pinned] });
    expect(r.reachedTarget).toBe(true);
    expect(r.strategiesRun.map((x) => x.name)).toContain('summarize');
    const view = activeView(s);
    const at = view.findIndex((v) => v.entry === pinned);
    expect(JSON.stringify(view[at]!.message)).toBe(before);
    // Its call is in the message just before it: the pair is whole.
    expect(view[at - 1]!.entry).toBe(pinned - 1);
    expect(checkInvariants(view)).toEqual([]);
    expect(r.protectedParts.find((p) => p.what === `pinned message (entry ${pinned})`)?.tokens).toBeGreaterThan(0);
    // Older and newer unpinned work around it was archived or edited.
    expect(view.some((v) => isSummaryItem(v))).toBe(true);
  });

  it('pins by a test of the message and by its own field', async () => {
    for (const how of ['test', 'field'] as const) {
      const { session: s, resultEntry } = session();
      const pinned = resultEntry(0);
      if (how === 'field') s.entries[pinned]!.message!.pinned = true;
      const r = await compact(s, {
        target: Math.round((await tokens(s)) * 0.3),
        force: true,
        prefixTokens: 0,
        ...(how === 'test'
          ? {
              pinned: (m) =>
                m.parts.some(
                  (p) =>
                    p.type === 'tool-result' && p.content.some((c) => c.type === 'text' && c.text.startsWith('out0 ')),
                ),
            }
          : {}),
      });
      expect(r.reachedTarget, how).toBe(true);
      const shown = activeView(s).find((v) => v.entry === pinned);
      expect(shown?.message, how).toBe(s.entries[pinned]!.message);
    }
  });

  it('pins that make the target unreachable are named with their tokens, and nothing pinned gives way', async () => {
    const { session: s, resultEntry } = session();
    const pins = [resultEntry(2), resultEntry(5), resultEntry(8)];
    const r = await compact(s, { target: 600, force: true, prefixTokens: 0, pinned: pins });
    expect(r.reachedTarget).toBe(false);
    const named = r.protectedParts.filter((p) => p.what.startsWith('pinned message'));
    expect(named.map((p) => p.what)).toEqual(pins.map((e) => `pinned message (entry ${e})`));
    expect(named.reduce((n, p) => n + p.tokens, 0)).toBeGreaterThan(600);
    expect(r.protectedTokens).toBeGreaterThan(600);
    const view = activeView(s);
    for (const e of pins) expect(view.find((v) => v.entry === e)?.message).toBe(s.entries[e]!.message);
    expect(r.gaveWay.join(' ')).not.toMatch(/pinned/);
  });

  it('a pinned latest instruction is never cut in place', async () => {
    const t = new PiTranscript();
    t.user('Fix the retry in src/net/retry.ts.');
    t.step({ text: 'Step.', calls: [{ name: 'read', args: { path: 'src/a.ts' }, result: lines(60, 'out') }] });
    t.user(`Now run the tests, and keep this list:\n${lines(80, 'keep')}`);
    const s = parseSession(t.jsonl());
    const last = s.entries.length - 1;
    const r = await compact(s, { target: 200, force: true, prefixTokens: 0, pinned: [last] });
    expect(r.reachedTarget).toBe(false);
    expect(activeView(s).find((v) => v.entry === last)?.message).toBe(s.entries[last]!.message);
  });

  it("a message's pinned field stays out of every transcript and request a writer makes", async () => {
    const { session: s, resultEntry } = session(6);
    s.entries[resultEntry(0)]!.message!.pinned = true;
    s.entries[resultEntry(5)]!.message!.pinned = true;
    const r = await compact(s, { target: 1500, force: true, prefixTokens: 0 });
    expect(r.marker).toBeDefined();
    for (const format of ['pi', 'claude-code', 'anthropic', 'openai-chat', 'openai-responses', 'ai-sdk'] as const)
      expect(writeSession(s, format), format).not.toMatch(/"pinned"/);
    expect(activeView(s).find((v) => v.entry === resultEntry(0))?.message).toBe(s.entries[resultEntry(0)]!.message);
  });

  it('refuses pins that are not entry numbers', async () => {
    const { session: s } = session(2);
    await expect(compact(s, { target: 100, pinned: [-1] })).rejects.toThrow(/option "pinned" must be entry numbers/);
    await expect(compact(s, { target: 100, pinned: 'x' as never })).rejects.toThrow(/option "pinned"/);
  });
});

describe('an edited summary', () => {
  it('stands in for the generated one, whole, and the view says whether it fits', async () => {
    const { session: a } = session();
    const { session: b } = session();
    const target = Math.round((await tokens(a)) * 0.15);
    const generated = await compact(a, { target, force: true, prefixTokens: 0 });
    const text = 'Read src/f0.ts to src/f7.ts; the retry loop lives in src/net/retry.ts. (edited by a person)';
    const edited = await compact(b, { target, force: true, prefixTokens: 0, summary: text });
    expect(edited.marker!.summary).toBe(text);
    expect(edited.marker!.archived).toEqual(generated.marker!.archived);
    const view = activeView(b);
    expect(summaryText(view.find(isSummaryItem)!.message)).toBe(text);
    expect(edited.reachedTarget).toBe(true);
    expect(edited.editedSummary!.tokens).toBeLessThanOrEqual(edited.editedSummary!.room);
    expect(checkInvariants(view)).toEqual([]);
  });

  it('too long for the room: the target is missed and the sizes said', async () => {
    const { session: s } = session();
    const target = Math.round((await tokens(s)) * 0.15);
    const r = await compact(s, { target, force: true, prefixTokens: 0, summary: lines(400, 'mine') });
    expect(r.reachedTarget).toBe(false);
    expect(r.editedSummary!.tokens).toBeGreaterThan(r.editedSummary!.room);
    expect(r.marker!.summary).toBe(lines(400, 'mine'));
  });

  it('refused when nothing is archived, or empty', async () => {
    const { session: s } = session(2);
    await expect(
      compact(s, { target: 1, force: true, strategies: ['clear-tool-results'], summary: 'x' }),
    ).rejects.toThrow(/no summary to replace/);
    await expect(compact(s, { target: 100, summary: ' ' })).rejects.toThrow(/option "summary"/);
  });
});
