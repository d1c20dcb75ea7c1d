/**
 * One count: `inspect` (contextBreakdown), `compact`, `replay` and a ContextManager resuming the session give one
 * session the same size at the same point, and the prefix abridge infers for a session (what the transcript does not
 * hold) is the same wherever the session is cut.
 */
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contextBreakdown } from '../budget/breakdown.js';
import { compact } from '../compaction/compact.js';
import { parseSession, readSession } from '../formats/read.js';
import { ContextManager } from '../manager/context-manager.js';
import type { Session } from '../model/types.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import { importSession } from '../store/session-store.js';
import { conversationEntries } from '../model/branch.js';
import { activeMessages } from '../model/view.js';
import { FAMILY_RATIO } from '../tokens/defaults.js';
import { modelAt, trackerFor } from '../tokens/replay.js';
import { corpusAvailable, readableCorpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { replaySession } from './replay.js';

/** The session as it stood just before entry `start` (the first message of a response). */
const before = (s: Session, start: number): Session => ({ ...s, entries: s.entries.slice(0, start) });

/** The four counts at the point just before a recorded request (`start`: its first entry). */
async function countsAt(s: Session, start: number) {
  const cut = before(s, start);
  const inspect = contextBreakdown(s, { at: start - 1 });
  const compacted = await compact(
    { ...cut, entries: cut.entries.slice() },
    { target: Number.MAX_SAFE_INTEGER, strategies: [] },
  );
  const store = new MemorySessionStore();
  await importSession(store, cut, 'one-count');
  const manager = await ContextManager.resume(store, 'one-count', { model: inspect.model.id });
  return {
    inspect: inspect.used,
    compact: compacted.beforeTokens,
    manager: manager.size(),
    managerSnapshot: manager.breakdown().used,
    unrecorded: inspect.components.unrecorded,
    /** What the request carries besides its messages: the unrecorded part and the recorded tool definitions. */
    prefix: inspect.components.unrecorded + inspect.tools.builtIn + inspect.tools.mcp,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// A Codex rollout written here: long tool outputs Codex cut to its policy when it sent them, each request billed at
// what was sent (a 5,000-token prefix plus the messages as Codex sent them).

const T0 = Date.parse('2030-01-02T03:04:05.000Z');
const PREFIX = 5_000;
function rollout(): string {
  let clock = 0;
  const rec = (type: string, payload: unknown): Record<string, unknown> => ({
    timestamp: new Date(T0 + 1000 * clock++).toISOString(),
    type,
    payload,
  });
  const words = (n: number, seed: string) =>
    Array.from({ length: n }, (_, i) => `${seed}${i} line ${(i * 7919) % 1000} of the build output`).join('\n');
  const user = (text: string) =>
    rec('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
  const call = (id: string, command: string[]) =>
    rec('response_item', { type: 'function_call', name: 'shell', call_id: id, arguments: JSON.stringify({ command }) });
  const output = (id: string, text: string) =>
    rec('response_item', { type: 'function_call_output', call_id: id, output: text });
  const answer = (text: string) =>
    rec('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
  const records: (Record<string, unknown> | 'bill')[] = [
    rec('session_meta', {
      id: 'one-count-0001',
      cwd: '/work/demo',
      cli_version: '0.140.0',
      model_provider: 'openai',
      base_instructions: { text: 'You are Codex.' },
    }),
    rec('turn_context', { cwd: '/work/demo', model: 'gpt-5.4' }),
    user('Build the project and fix what fails.'),
    call('call_1', ['make']),
    'bill',
    // About 9,000 lines recorded; Codex sends 48,000 bytes of it (10,000 tokens × 1.2 × 4).
    output('call_1', words(9_000, 'b')),
    answer('It fails.'),
    'bill',
    user('Look at the linker error.'),
    call('call_2', ['make', 'link']),
    'bill',
    output('call_2', words(8_000, 'l')),
    answer('The linker misses libfoo.'),
    'bill',
    user('Fix it.'),
  ];
  // Each bill: what the records before it come to as Codex sent them.
  const lines: string[] = [];
  for (const r of records) {
    if (r !== 'bill') {
      lines.push(JSON.stringify(r));
      continue;
    }
    const sofar = parseSession(lines.join('\n') + '\n', { format: 'codex', source: 'one-count.jsonl' });
    const branch = conversationEntries(sofar);
    const counted = trackerFor(sofar, branch).counter;
    const messages = activeMessages(sofar).reduce((n, m) => n + counted.message(m), 0);
    const last = {
      input_tokens: Math.round(PREFIX + FAMILY_RATIO.gpt * messages),
      cached_input_tokens: 0,
      output_tokens: 50,
      reasoning_output_tokens: 0,
    };
    lines.push(
      JSON.stringify(
        rec('event_msg', {
          type: 'token_count',
          info: { total_token_usage: last, last_token_usage: last, model_context_window: 272_000 },
        }),
      ),
    );
  }
  return lines.join('\n') + '\n';
}

describe('one count of a session', () => {
  const s = parseSession(rollout(), { format: 'codex', source: 'one-count.jsonl' });
  const requests = replaySession(s);

  it('inspect, compact, replay and a resumed ContextManager agree before every anchored request', async () => {
    expect(requests.length).toBe(4);
    for (const r of requests.slice(1)) {
      const c = await countsAt(s, r.start);
      expect(c.compact).toBe(c.inspect);
      expect(r.predicted).toBe(c.inspect);
      expect(c.manager).toEqual({ tokens: c.inspect, anchored: true });
      expect(c.managerSnapshot).toBe(c.inspect);
    }
  });

  it('counts a Codex output as Codex sent it: its prediction follows the bills', () => {
    // Counted whole, the outputs would put the predictions after them tens of thousands of tokens over.
    for (const r of requests.slice(1)) expect(Math.abs(r.predicted - r.reported) / r.reported).toBeLessThan(0.02);
  });

  it('infers one prefix for the session wherever it is cut, the one its first bill showed', () => {
    const at = requests.map((r) => contextBreakdown(s, { at: r.start - 1 }).components.unrecorded);
    // Before the first bill: the harness' own estimate; from the first bill on, what that bill showed, unchanged.
    expect(new Set(at.slice(1)).size).toBe(1);
    expect(Math.abs(at[1]! - PREFIX)).toBeLessThan(PREFIX * 0.05);
    expect(contextBreakdown(s).components.unrecorded).toBe(at[1]);
  });

  it.each([0.5, 0.25])('compacts the rollout to %s of its size, and inspect then says what compact said', async (f) => {
    const whole = { ...s, entries: s.entries.slice() };
    const size = contextBreakdown(s).used;
    const r = await compact(whole, { target: Math.floor(size * f) });
    expect(r.beforeTokens).toBe(size);
    expect(r.reachedTarget).toBe(true);
    expect(contextBreakdown(whole).used).toBe(r.afterTokens);
    const view = JSON.stringify(activeMessages(whole));
    // The latest instruction stays; the build's output is behind a reference, not gone.
    expect(view).toContain('Fix it.');
    expect(view).toMatch(/read_result/);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Every fixture transcript, and every corpus transcript

/** inspect, compact, replay and a ContextManager agree at three points of a transcript; its prefix is learned once. */
async function oneCountOf(file: string): Promise<void> {
  const s = await readSession(file);
  const requests = replaySession(s);
  // Points just before a response: three of them (at 30%, 70% and the last), whether or not it was billed.
  const branch = conversationEntries(s);
  const starts = branch
    .filter((e, i) => e.message?.role === 'assistant' && i > 0 && branch[i - 1]!.message?.role !== 'assistant')
    .map((e) => e.index);
  const points = [
    ...new Set([0.3, 0.7, 1].map((f) => starts[Math.min(starts.length - 1, Math.floor(starts.length * f))])),
  ].filter((x): x is number => x !== undefined && x > 0);
  expect(points.length).toBeGreaterThan(0);
  const billed = new Map(requests.map((r) => [r.start, r]));
  const prefixes = new Map<string, Set<number>>();
  for (const start of points) {
    const c = await countsAt(s, start);
    expect(c.compact, `compact at entry ${start}`).toBe(c.inspect);
    // Replay predicts with the model the request went to; the cut knows it when a message or model change named it.
    const r = billed.get(start);
    if (r && modelAt(s, before(s, start).entries) === r.model)
      expect(r.predicted, `replay at entry ${start}`).toBe(c.inspect);
    // Before its first bill a manager counts its own system prompt, not the recorded harness': anchored, the bill
    // decides for both.
    if (c.manager.anchored) {
      expect(c.manager.tokens, `the manager at entry ${start}`).toBe(c.inspect);
      expect(c.managerSnapshot, `the manager's snapshot at entry ${start}`).toBe(c.inspect);
    }
    const model = modelAt(s, before(s, start).entries) ?? '';
    if (requests.some((q) => q.start < start && q.model === model)) {
      const seen = prefixes.get(model) ?? new Set();
      seen.add(c.prefix);
      prefixes.set(model, seen);
    }
  }
  // A prefix learned once: the same at every point after the model's first bill.
  for (const [model, seen] of prefixes) expect([...seen], `the prefix of ${model}`).toHaveLength(1);
}

describe('one count of every fixture transcript', async () => {
  const fixtures = await fixtureTranscripts();
  it.each(fixtures.map((f) => [`${f.folder}/${f.name}`, f.file]))('%s', (_name, file) => oneCountOf(file));
});

const files = corpusAvailable() ? readableCorpusFiles() : [];
describe.skipIf(!corpusAvailable())('one count of every corpus transcript', () => {
  it.each(files.map((f) => [`${f.folder}/${basename(f.file)}`, f.file]))('%s', (_name, file) => oneCountOf(file));
});
