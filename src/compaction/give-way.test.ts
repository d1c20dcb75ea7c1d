/**
 * Never refuse what can shrink: what must stay gives way in its order (the last step, the thinking of a loop under way,
 * another agent's summary behind a reference, the first request, the latest instruction cut in place), and a target
 * below what cannot shrink still leaves a hand-off of the archived work, not a one-line note.
 */
import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { ContextManager } from '../manager/context-manager.js';
import { mergeConfig, DEFAULT_CONFIG } from '../manager/config.js';
import { ContextOverflowError } from '../manager/overflow.js';
import type { Session } from '../model/types.js';
import { activeView, isSummaryItem } from '../model/view.js';
import { PiTranscript } from '../../test/support/random-session.js';
import { compact, planCompaction } from './compact.js';
import { checkInvariants } from './invariants.js';
import { MemoryResultStore } from './memory-result-store.js';
import { summaryText } from './strategies/summarize.js';

const NOW = () => new Date(Date.UTC(2026, 0, 2));
const build = (t: PiTranscript): Session => parseSession(t.jsonl());
const body = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `${tag} line ${i}: some output of the tool`).join('\n');
const sizeOf = async (s: Session) =>
  (await compact(s, { target: Number.MAX_SAFE_INTEGER, strategies: [], prefixTokens: 0 })).beforeTokens;
const lastUser = (s: Session) =>
  s.entries.findLast((e) => e.message?.role === 'user' && !e.message.synthetic && !e.compaction)!.index;
const refOf = (text: string) => /read_result \{"ref_id": "(r_[0-9a-f]+)"/.exec(text)?.[1];

/** A pasted log: a person's latest message far larger than the rest. */
const PASTED = `Here is the CI log; find why the deploy fails.\n${body(400, 'ci')}\nThe failing step is the last one.`;

function pastedLogSession(): Session {
  const t = new PiTranscript();
  t.user('Set up the deploy pipeline for the service.');
  for (let i = 0; i < 3; i++)
    t.step({
      text: `Step ${i}.`,
      calls: [{ name: 'bash', args: { command: `make deploy${i}` }, result: body(30, `d${i}`) }],
    });
  t.user(PASTED);
  return build(t);
}

describe('the latest instruction gives way last, cut in place', () => {
  it('keeps its first and last lines with the whole behind a reference, and says so', async () => {
    const s = pastedLogSession();
    const store = new MemoryResultStore();
    const target = Math.floor((await sizeOf(s)) * 0.1);
    const r = await compact(s, { target, prefixTokens: 0, now: NOW, store });
    expect(r.reachedTarget).toBe(true);
    expect(r.gaveWay).toContain(`latest instruction (entry ${lastUser(s)})`);
    expect(r.summaryNotes.join('\n')).toMatch(/latest instruction \(entry \d+\) \(cut to its first and last lines/);
    const view = activeView(s);
    const latest = view.find((v) => v.entry === lastUser(s));
    // Still in its place, at the end: what the next step answers.
    expect(view[view.length - 1]).toBe(latest);
    const text = latest!.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    expect(text.startsWith('Here is the CI log; find why the deploy fails.')).toBe(true);
    expect(text).toContain('The failing step is the last one.');
    expect(text.length).toBeLessThan(PASTED.length / 2);
    const whole = await store.read(refOf(text)!, { offset: 0, limit: 2000 });
    expect(whole.text).toBe(PASTED);
    expect(checkInvariants(view)).toEqual([]);
  });

  it('is kept whole when anything else can make the room', async () => {
    const s = pastedLogSession();
    const target = Math.floor((await sizeOf(s)) * 0.8);
    const r = await compact(s, { target, prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(true);
    expect(r.gaveWay).toEqual([]);
    const latest = activeView(s).find((v) => v.entry === lastUser(s))!;
    expect(latest.message.parts[0]).toMatchObject({ type: 'text', text: PASTED });
  });

  it('is kept whole with shrinkProtected: false (the CLI --keep-protected), which refuses instead', async () => {
    const s = pastedLogSession();
    const target = Math.floor((await sizeOf(s)) * 0.1);
    const r = await compact(s, { target, prefixTokens: 0, now: NOW, shrinkProtected: false });
    expect(r.reachedTarget).toBe(false);
    expect(r.protectedParts.map((p) => p.what)).toContain(`latest instruction (entry ${lastUser(s)})`);
  });

  it('is in the plan: the last round cuts it, and no round archives it', () => {
    const s = pastedLogSession();
    const plan = planCompaction(s, { target: 100, prefixTokens: 0 });
    expect(plan.latest).toEqual([lastUser(s)]);
    expect(plan.rounds.map((r) => r.relax)).toEqual(expect.arrayContaining([0, 1, 2, 3, 4]));
    const last = plan.rounds[plan.rounds.length - 1]!;
    expect(last.relax).toBe(4);
    expect(last.protection.entries.has(lastUser(s))).toBe(false);
    expect(plan.rounds[0]!.protection.entries.has(lastUser(s))).toBe(true);
  });
});

describe("another agent's summary gives way behind a reference", () => {
  it('is quoted in abridge’s summary as far as it holds, with the reference that reads the whole back', async () => {
    const t = new PiTranscript();
    t.user('Port the retry logic to exponential backoff.');
    for (let i = 0; i < 3; i++)
      t.step({ calls: [{ name: 'bash', args: { command: `echo ${i}` }, result: body(10, `e${i}`) }] });
    const records = t.records;
    const earlier = `EARLIER-SUMMARY: the retry loop was rewritten.\n${body(200, 'detail')}`;
    records.push({
      type: 'compaction',
      id: 'c0001',
      parentId: records[records.length - 1]!.id,
      timestamp: '2026-01-01T00:00:00.000Z',
      summary: earlier,
      firstKeptEntryId: records[records.length - 2]!.id,
      tokensBefore: 5000,
    });
    (t as unknown as { last: string }).last = 'c0001';
    for (let i = 0; i < 4; i++)
      t.step({ calls: [{ name: 'bash', args: { command: `ls dir${i}` }, result: body(20, `l${i}`) }] });
    t.user('Now run the tests.');
    const s = build(t);
    const store = new MemoryResultStore();
    // Below the agent's summary alone: it must give way.
    const target = Math.floor((await sizeOf(s)) * 0.3);
    const r = await compact(s, { target, prefixTokens: 0, now: NOW, store });
    expect(r.reachedTarget).toBe(true);
    expect(r.gaveWay.some((w) => w.startsWith("the agent's own summary of earlier work"))).toBe(true);
    const summary = activeView(s).find((v) => isSummaryItem(v))!;
    const text = summaryText(summary.message);
    expect(text).toContain('EARLIER-SUMMARY: the retry loop was rewritten.');
    const ref = /The agent's own summary, whole: read_result \{"ref_id": "(r_[0-9a-f]+)"\}/.exec(text)?.[1];
    expect(ref).toBeDefined();
    expect((await store.read(ref!, { offset: 0, limit: 2000 })).text).toBe(earlier);
  });
});

describe('a target below what cannot shrink', () => {
  /** Project memory (a standing instruction that never gives way) larger than the target, and work to archive. */
  function memorySession(): Session {
    const t = new PiTranscript();
    t.synthetic(`# AGENTS.md\n${body(200, 'rule')}`);
    t.user('Rename the flag --fast to --quick everywhere.');
    for (let i = 0; i < 8; i++)
      t.step({
        text: `Renamed it in src/cli${i}.ts.`,
        calls: [{ name: 'bash', args: { command: `sed -i s/fast/quick/ src/cli${i}.ts` }, result: body(40, `c${i}`) }],
      });
    t.user('Now update the README.');
    return build(t);
  }

  it('still hands the archived work off: a summary, not a one-line note', async () => {
    const s = memorySession();
    const r = await compact(s, { target: 50, prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(false);
    const summary = activeView(s).find((v) => isSummaryItem(v));
    expect(summary).toBeDefined();
    const text = summaryText(summary!.message);
    expect(text).toMatch(/^## Summary of earlier conversation/);
    expect(text).toContain('src/cli');
    expect(text.split('\n').length).toBeGreaterThan(5);
    expect(r.afterTokens).toBeLessThan(r.beforeTokens);
  });
});

describe('the ContextManager below what must stay', () => {
  it('keeps a hand-off when its target is below what must stay, and names what must stay when it cannot fit', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 20_000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', config, system: 'Rules. '.repeat(600) });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Rename the flag --fast to --quick everywhere.' }] });
    for (let i = 0; i < 6; i++) {
      await cm.recordResponse({
        role: 'assistant',
        parts: [
          {
            type: 'tool-call',
            id: `c${i}`,
            name: 'bash',
            arguments: { command: `sed -i s/fast/quick/ src/cli${i}.ts` },
          },
        ],
      });
      await cm.append({
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: `c${i}`,
            toolName: 'bash',
            content: [{ type: 'text', text: body(40, `c${i}`) }],
            isError: false,
          },
        ],
      });
    }
    // A target a few tokens over nothing: below the system prompt alone.
    const r = await cm.compactNow({ target: 10 });
    expect(r.reachedTarget).toBe(false);
    // (The working session restarts from the compaction's view: the marker is the result's, and the store's.)
    const summary = r.marker?.summary ?? '';
    expect(summary).toMatch(/^## Summary of earlier conversation/);
    expect(summary).toContain('src/cli');

    // Project memory (a standing instruction, never shrunk) that cannot fit beside this system prompt: the error names
    // it, with the figure compaction's own plan gives.
    const tight = new ContextManager({ model: 'claude-sonnet-4-5', config, system: 'Rules. '.repeat(600) });
    await tight.append({
      role: 'user',
      synthetic: true,
      parts: [{ type: 'text', text: `# AGENTS.md\n${body(2500, 'rule')}` }],
    });
    await tight.append({ role: 'user', parts: [{ type: 'text', text: 'Do it.' }] });
    const err = await tight.prepare({ maxOutputTokens: 4000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContextOverflowError);
    const details = (err as ContextOverflowError).details;
    expect(details.mustStay?.map((p) => p.what)).toContain('project memory (entry 0)');
    expect(details.protected).toBe((details.mustStay ?? []).reduce((n, p) => n + p.tokens, 0));
    expect((err as Error).message).toMatch(/what must stay verbatim \(project memory \(entry 0\) ≈ \d+K/);
  });
});

describe('a system message in the middle of the view', () => {
  it('is among what must stay, and stays: an agent restates its instructions after its own compaction (Codex)', async () => {
    const text = (t: string) => [{ type: 'text' as const, text: t }];
    const messages = [
      { role: 'user' as const, parts: text('investigate whether issue 386 is stale') },
      { role: 'user' as const, parts: text('are you confident about the ones marked discard?') },
      { role: 'system' as const, parts: text(`<permissions instructions>\n${body(60, 'sandbox')}`) },
      ...Array.from({ length: 6 }, (_, i) => [
        {
          role: 'assistant' as const,
          parts: [{ type: 'tool-call' as const, id: `c${i}`, name: 'exec', arguments: { cmd: `gh issue view ${i}` } }],
        },
        {
          role: 'tool' as const,
          parts: [
            { type: 'tool-result' as const, callId: `c${i}`, content: text(body(40, `issue ${i}`)), isError: false },
          ],
        },
      ]).flat(),
      { role: 'user' as const, parts: text('push the docs fix to the PR') },
    ];
    const s: Session = {
      format: 'codex',
      info: {},
      entries: messages.map((message, index) => ({ index, kind: 'message' as const, message })),
      problems: [],
    };
    const r = await compact(s, { target: 300, prefixTokens: 0, now: NOW });
    expect(r.protectedParts.map((p) => p.what)).toContain('system message (entry 2)');
    expect(activeView(s).some((v) => v.entry === 2 && v.message === messages[2])).toBe(true);
  });
});
