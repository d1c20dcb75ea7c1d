import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { parseSession, readSession } from '../formats/read.js';
import { activeBranch } from '../model/branch.js';
import { promptTokens } from '../model/parts.js';
import type { Message, Session } from '../model/types.js';
import { corpusAvailable, corpusFile, corpusFiles } from '../../test/support/corpus.js';
import { TokenCounter } from '../tokens/counter.js';
import { followEntries, trackerFor } from '../tokens/replay.js';
import { COMPONENT_IDS, type BudgetSettings } from './types.js';
import { DEFAULT_BUDGET_SETTINGS } from './defaults.js';
import { contextBreakdown, type ContextBreakdown } from './breakdown.js';
import { ContextManager } from '../manager/context-manager.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import { loadSession } from '../store/session-store.js';
import { grepSteps } from '../../test/support/agent-loop.js';

const settings = (over: Partial<BudgetSettings> = {}): BudgetSettings => ({ ...DEFAULT_BUDGET_SETTINGS, ...over });
const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
const ts = '2026-01-01T00:00:00.000Z';
const e = (type: string, id: string, parentId: string | null, rest: Record<string, unknown>) => ({
  type,
  id,
  parentId,
  timestamp: ts,
  ...rest,
});
const MODEL = 'claude-opus-4-1-20250805';
const SUMMARY = 'SUMMARY: the user wants the failing test in src/a.ts fixed; a.ts was read and exports a constant.';
const MEMORY = '# AGENTS.md\nAlways run npm test before committing. Use ESM imports and strict TypeScript.';

/** A pi session: a turn with usage, a compaction keeping the tool result, an AGENTS.md injection, a prompt and a reply. */
const piRecords = [
  { type: 'session', version: 3, id: 'sess', timestamp: ts, cwd: '/repo' },
  e('message', 'u1', null, {
    message: { role: 'user', content: 'Fix the failing test in src/a.ts please.', timestamp: 1 },
  }),
  e('message', 'a1', 'u1', {
    message: {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking at it now.' },
        { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'src/a.ts' } },
      ],
      provider: 'anthropic',
      model: MODEL,
      usage: { input: 10, output: 50, cacheRead: 1000, cacheWrite: 500, totalTokens: 1560 },
      stopReason: 'toolUse',
      timestamp: 2,
    },
  }),
  e('message', 'r1', 'a1', {
    message: {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'read',
      content: [{ type: 'text', text: 'export const a = 1;\n'.repeat(50) }],
      isError: false,
      timestamp: 3,
    },
  }),
  e('compaction', 'k1', 'r1', { summary: SUMMARY, firstKeptEntryId: 'r1', tokensBefore: 5000 }),
  e('custom_message', 'cm', 'k1', { customType: 'memory', content: MEMORY, display: false }),
  e('message', 'u2', 'cm', { message: { role: 'user', content: 'Now also update the README.', timestamp: 4 } }),
  e('message', 'a2', 'u2', {
    message: {
      role: 'assistant',
      content: [{ type: 'text', text: 'Done: README updated with the new section.' }],
      provider: 'anthropic',
      model: MODEL,
      usage: { input: 20, output: 30, cacheRead: 2000, cacheWrite: 100, totalTokens: 2150 },
      stopReason: 'stop',
      timestamp: 5,
    },
  }),
];
const pi = parseSession(jsonl(piRecords));
const msg = (id: string): Message => pi.entries.find((x) => x.id === id)!.message!;
const sumComponents = (s: ContextBreakdown) => COMPONENT_IDS.reduce((n, k) => n + s.components[k], 0);

/** What the tracker itself predicts for the session cut at `at`. */
function trackerPrediction(session: Session, at: number) {
  const branch = activeBranch(session).filter((x) => !x.sidechain);
  const tracker = trackerFor(session, branch);
  followEntries(
    branch.filter((x) => x.index <= at),
    tracker,
  );
  return tracker.predict();
}

describe('contextBreakdown on a synthetic pi session', () => {
  const snap = contextBreakdown(pi);
  // A fresh counter of the session's family (claude) counts like the tracker's.
  const c = new TokenCounter({ family: 'claude' });
  // The only usable calibration pair is cut by the compaction, so the ratio stays the claude seed.
  const ratio = 1.16;

  it('reads the fixture as expected', () => {
    expect(pi.format).toBe('pi');
    expect(pi.problems).toEqual([]);
    expect(pi.entries.map((x) => x.kind)).toEqual([
      'header',
      'message',
      'message',
      'message',
      'compaction',
      'message',
      'message',
      'message',
    ]);
  });

  it('uses the model of the session and its budget', () => {
    expect(snap.model).toMatchObject({ id: MODEL, source: 'catalog', contextWindow: 200_000 });
    expect([snap.window, snap.reserve, snap.effective]).toEqual([200_000, 32_000, 168_000]);
    expect(snap.marks).toEqual({ warn: 134_400, compact: 151_200, block: 164_640, target: 100_800 });
  });

  it('used is the last reported prompt plus the reply, in provider tokens — the tracker prediction', () => {
    expect(snap.anchored).toBe(true);
    expect(snap.used).toBe(Math.round(2120 + ratio * c.message(msg('a2'))));
    const p = trackerPrediction(pi, 7);
    expect(p.ratio).toBe(ratio);
    expect(snap.used).toBe(p.predicted);
  });

  it('components: the summary holds the compaction summary, the prompt is the last human message, AGENTS.md is memory', () => {
    // What the bill shows beyond the prefix is the messages': each component its counted share of it.
    const counted = {
      summary: c.message(msg('k1')),
      prompt: c.message(msg('u2')),
      memory: c.message(msg('cm')),
      // Recent: the tool result kept by the compaction and the reply; u1 and a1 were archived.
      recent: c.message(msg('r1')) + c.message(msg('a2')),
    };
    const share = (snap.used - snap.components.unrecorded) / Object.values(counted).reduce((a, b) => a + b, 0);
    expect(share).toBeGreaterThan(ratio / 2);
    expect(share).toBeLessThan(ratio * 2);
    for (const [k, n] of Object.entries(counted))
      expect(snap.components[k as keyof typeof counted], k).toBe(Math.round(share * n));
    expect(snap.components.summary).toBeGreaterThan(Math.round(c.text(SUMMARY)));
    expect(snap.components.memory).toBeGreaterThan(0);
    for (const k of ['system', 'skills', 'tools', 'knowledgeBase', 'crossIssue'] as const)
      expect(snap.components[k]).toBe(0);
  });

  it('unrecorded is the prefix the first bill showed (bill − ratio × what it was sent), wherever the session is cut', () => {
    const prefix = Math.round(1510 - ratio * c.message(msg('u1')));
    expect(snap.components.unrecorded).toBe(prefix);
    expect(contextBreakdown(pi, { at: 3 }).components.unrecorded).toBe(prefix);
    expect(contextBreakdown(pi, { at: 5 }).components.unrecorded).toBe(prefix);
    // The components and the prefix make up `used` (each rounded on its own).
    expect(Math.abs(sumComponents(snap) + snap.components.unrecorded - snap.used)).toBeLessThanOrEqual(
      COMPONENT_IDS.length,
    );
  });

  it('derived figures', () => {
    expect(snap.fill).toBe(snap.used / 168_000);
    expect(snap.level).toBe('ok');
    expect(snap.untilCompaction).toBe(151_200 - snap.used);
    expect(snap.compactionBuffer).toBe(16_800);
    expect(snap.free).toBe(168_000 - snap.used);
    expect(snap.counts).toEqual({ messages: 5, toolResults: 1, compactions: 1, entries: 8 });
    expect(snap.asOf).toEqual({ entry: 7, line: 8, ofEntries: 8 });
    expect(snap.counting).toBe('estimate');
    expect(snap.tools).toEqual({ builtIn: 0, mcp: 0, deferred: 0 });
    expect(snap.allocations).toBeUndefined();
  });

  it('`at` cuts the session before the compaction', () => {
    const s3 = contextBreakdown(pi, { at: 3 });
    expect(s3.asOf).toEqual({ entry: 3, line: 4, ofEntries: 8 });
    expect(s3.counts).toEqual({ messages: 3, toolResults: 1, compactions: 0, entries: 4 });
    expect(s3.anchored).toBe(true);
    // Anchored on a1's report (1,510), plus a1 itself and the tool result.
    expect(s3.used).toBe(Math.round(1510 + ratio * (c.message(msg('a1')) + c.message(msg('r1')))));
    expect(s3.used).toBe(trackerPrediction(pi, 3).predicted);
    expect(s3.components.summary).toBe(0);
    expect(s3.components.memory).toBe(0);
    expect(s3.components.prompt).toBe(Math.round(ratio * c.message(msg('u1'))));
    expect(s3.components.recent).toBe(Math.round(ratio * (c.message(msg('a1')) + c.message(msg('r1')))));
    expect(Math.abs(s3.components.unrecorded + sumComponents(s3) - s3.used)).toBeLessThanOrEqual(COMPONENT_IDS.length);
  });

  it('`at` right after the compaction: the context is the summary and what it kept, not anchored', () => {
    const s4 = contextBreakdown(pi, { at: 4 });
    expect(s4.anchored).toBe(false);
    expect(s4.counts).toEqual({ messages: 2, toolResults: 1, compactions: 1, entries: 5 });
    // Counted, with the prefix the first bill showed.
    expect(s4.components.summary).toBe(Math.round(ratio * c.message(msg('k1'))));
    expect(s4.components.unrecorded).toBe(snap.components.unrecorded);
    expect(s4.components.prompt).toBe(0);
    expect(s4.used).toBe(trackerPrediction(pi, 4).predicted);
  });

  it.each([8, -1, 2.5, 100])('a bad `at` (%s) throws INVALID_INPUT naming the range', (at) => {
    let err: unknown;
    try {
      contextBreakdown(pi, { at });
    } catch (x) {
      err = x;
    }
    expect(err).toBeInstanceOf(AbridgeError);
    expect((err as AbridgeError).code).toBe('INVALID_INPUT');
    expect((err as AbridgeError).message).toBe(`--at ${at}: expected an entry index from 0 to 7`);
  });

  it('allocations are reported when configured', () => {
    const s = contextBreakdown(pi, {
      settings: settings({ allocations: { summary: { share: 0.1 }, memory: { tokens: 10 } } }),
    });
    expect(s.allocations!.rows).toEqual([
      { key: 'summary', cap: 20_000, used: s.components.summary, unused: 20_000 - s.components.summary },
      { key: 'memory', cap: 10, used: s.components.memory, unused: 0 },
      { key: 'response', cap: 32_000, used: 0, unused: 0 },
    ]);
    // Everything but summary and recent counts against the room, memory at most its cap.
    const others = s.components.prompt + s.components.unrecorded + 10;
    expect(s.allocations!.conversationRoom).toBe(168_000 - others);
  });

  it('settings change the window, reserve and thresholds', () => {
    const s = contextBreakdown(pi, {
      settings: settings({
        contextWindow: 10_000,
        reserveTokens: 2_000,
        thresholds: { warn: 0.1, compact: 0.2, block: 0.3, target: 0.05 },
      }),
    });
    expect(s.model.source).toBe('config');
    expect([s.window, s.reserve, s.effective]).toEqual([10_000, 2_000, 8_000]);
    expect(s.fill).toBe(s.used / 8_000);
    expect(s.level).toBe('compact'); // used ≈ 2,140: 27% of 8,000
    expect(s.marks).toEqual({ warn: 800, compact: 1_600, block: 2_400, target: 400 });
  });

  it('counts exactly with an exact tokenizer', () => {
    const s = contextBreakdown(pi, { exact: { encoding: 'chars', count: (t) => Math.ceil(t.length / 4) } });
    expect(s.counting).toBe('exact');
    expect(s.anchored).toBe(true);
    // 4 tokens of claude message framing + ⌈chars / 4⌉ a message, each its share of what the bill shows beyond the
    // prefix: the prompt and AGENTS.md (two text messages) in proportion to their exact counts.
    const counted = (text: string) => 4 + Math.ceil(text.length / 4);
    const share = s.components.memory / counted(MEMORY);
    expect(Math.abs(s.components.prompt - share * counted('Now also update the README.'))).toBeLessThanOrEqual(1);
    expect(s.used).toBe(
      Math.round(2120 + 1.16 * (4 + Math.ceil('Done: README updated with the new section.'.length / 4))),
    ); // 2,137
  });

  it('without any usage: the harness prefix plus the counted content, not anchored', () => {
    const noUsage = parseSession(jsonl(piRecords.slice(0, 2)));
    const s = contextBreakdown(noUsage);
    expect(s.anchored).toBe(false);
    expect(s.model).toMatchObject({ id: 'unknown', source: 'default', contextWindow: 128_000 });
    const u1 = noUsage.entries[1]!.message!;
    expect(s.used).toBe(Math.round(2500 + 1.15 * new TokenCounter().message(u1)));
    expect(s.components.prompt).toBe(Math.round(1.15 * new TokenCounter().message(u1)));
    expect(s.components.unrecorded).toBe(s.used - s.components.prompt);
    const s0 = contextBreakdown(noUsage, { settings: settings({ prefixTokens: 0, model: 'gpt-4o' }) });
    expect(s0.model).toMatchObject({ id: 'gpt-4o', source: 'catalog' });
    expect(s0.components.unrecorded).toBe(0);
  });
});

/** Claude Code records, as the reader tests build them. */
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
const ccUsage = {
  input_tokens: 5,
  cache_creation_input_tokens: 100,
  cache_read_input_tokens: 20_000,
  output_tokens: 50,
};
const claudeMd =
  "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nContents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\nUse pnpm, never npm. Run the linter before committing.\n</system-reminder>";
const ccRecords = [
  rec('user', 'm0', null, { isMeta: true, message: { role: 'user', content: claudeMd } }),
  rec('user', 'u1', 'm0', { message: { role: 'user', content: 'add a lint script' } }),
  rec('assistant', 'a1', 'u1', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: MODEL,
      content: [{ type: 'text', text: 'Added "lint": "eslint ." to package.json.' }],
      stop_reason: 'end_turn',
      usage: ccUsage,
    },
  }),
];

describe('contextBreakdown on a synthetic Claude Code session', () => {
  const cc = parseSession(jsonl(ccRecords));
  const snap = contextBreakdown(cc);
  const c = new TokenCounter({ family: 'claude' });

  it('a CLAUDE.md injection is memory; the typed request is the prompt', () => {
    expect(cc.format).toBe('claude-code');
    expect(snap.components.memory).toBe(Math.round(1.16 * c.message(cc.entries[0]!.message!)));
    expect(snap.components.memory).toBeGreaterThan(0);
    expect(snap.components.prompt).toBe(Math.round(1.16 * c.message(cc.entries[1]!.message!)));
    expect(snap.components.recent).toBe(Math.round(1.16 * c.message(cc.entries[2]!.message!)));
  });

  it('a harness reminder after the typed request is not the prompt', () => {
    const reminder = rec('user', 'm2', 'u1', {
      isMeta: true,
      message: { role: 'user', content: '<system-reminder>Today is 2026-01-01.</system-reminder>' },
    });
    const a1 = { ...ccRecords[2]!, parentUuid: 'm2' };
    const s2 = parseSession(jsonl([ccRecords[0], ccRecords[1], reminder, a1]));
    expect(s2.entries[2]!.message!.synthetic).toBe(true);
    const snap2 = contextBreakdown(s2);
    // Within a token: the share of the bill each counted token gets is of rounded figures.
    expect(Math.abs(snap2.components.prompt - 1.16 * c.message(s2.entries[1]!.message!))).toBeLessThanOrEqual(1);
    expect(
      Math.abs(
        snap2.components.recent - 1.16 * (c.message(s2.entries[2]!.message!) + c.message(s2.entries[3]!.message!)),
      ),
    ).toBeLessThanOrEqual(1);
  });

  it('used = reported prompt (20,105) + the reply; unrecorded = what that bill showed beyond its messages', () => {
    expect(snap.anchored).toBe(true);
    expect(snap.used).toBe(Math.round(20_105 + 1.16 * c.message(cc.entries[2]!.message!)));
    expect(snap.components.unrecorded).toBe(
      Math.round(20_105 - 1.16 * (c.message(cc.entries[0]!.message!) + c.message(cc.entries[1]!.message!))),
    );
    expect(Math.abs(snap.components.unrecorded + sumComponents(snap) - snap.used)).toBeLessThanOrEqual(
      COMPONENT_IDS.length,
    );
  });

  // BUG (snapshot.ts): the snapshot drops every sidechain entry, so a subagent's own transcript (Claude Code
  // agent-*.jsonl, where every record is isSidechain: true) yields no model ('unknown', default window), no anchor and
  // used = the 24,000-token harness prefix, whatever the transcript reported (corpus: agent-a881341.jsonl reports a
  // 42,183-token prompt, the snapshot says 24,000).
  it('a transcript whose every record is a sidechain (a subagent file) is measured, not ignored', () => {
    const side = parseSession(jsonl(ccRecords.map((r) => ({ ...r, isSidechain: true }))));
    const s = contextBreakdown(side);
    expect(s.model.id).toBe(MODEL); // is 'unknown'
    expect(s.anchored).toBe(true); // is false
    expect(s.used).toBe(snap.used); // is 24,000
  });
});

describe('contextBreakdown on an Anthropic request body', () => {
  const tools = [
    {
      name: 'read',
      description: 'Read a file from disk and return its content with line numbers.',
      input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
    {
      name: 'mcp__github__search',
      description: 'Search GitHub issues and pull requests.',
      input_schema: { type: 'object', properties: { q: { type: 'string' } } },
    },
  ];
  const deferred = {
    name: 'load_later',
    description: 'A tool loaded on demand only. '.repeat(30),
    defer_loading: true,
    input_schema: { type: 'object', properties: {} },
  };
  const body = (t: unknown[]) =>
    JSON.stringify({
      model: MODEL,
      max_tokens: 1000,
      system: 'You are a careful coding agent.',
      messages: [{ role: 'user', content: 'List the files in src.' }],
      tools: t,
    });
  const session = parseSession(body(tools));
  const snap = contextBreakdown(session);

  it('the system prompt and the tool definitions are components; built-in and MCP tools are told apart', () => {
    expect(session.format).toBe('anthropic');
    expect(snap.components.system).toBeGreaterThan(0);
    expect(snap.components.prompt).toBeGreaterThan(0);
    expect(snap.components.tools).toBeGreaterThan(0);
    expect(snap.tools.builtIn).toBeGreaterThan(0);
    expect(snap.tools.mcp).toBeGreaterThan(0);
    expect(snap.tools.deferred).toBe(0);
    expect(snap.anchored).toBe(false);
    expect(snap.components.unrecorded).toBe(0);
    expect(Math.abs(sumComponents(snap) - snap.used)).toBeLessThanOrEqual(COMPONENT_IDS.length);
  });

  // BUG (snapshot.ts): the model of a request body (`extra.request.model`) is ignored — only assistant messages and
  // model-change entries name it — so a request for a known model gets the 'unknown' default window and family.
  it('the model a request body names is used', () => {
    expect(snap.model.id).toBe(MODEL); // is 'unknown' (source 'default', 128,000)
  });

  // BUG (tokens/replay.ts requestPrefixTokens vs budget/components.ts): the prediction adds the request's tool
  // definitions as an unscaled prefix (counted tokens, not × the family ratio) while the breakdown counts them × ratio,
  // so `visible > used` and every component is scaled down: components.tools ≠ tools.builtIn + tools.mcp.
  it('components.tools equals built-in + MCP tool tokens of the same snapshot', () => {
    expect(snap.components.tools).toBe(snap.tools.builtIn + snap.tools.mcp);
  });

  // BUG (tokens/replay.ts requestPrefixTokens): deferred tools (defer_loading), which components.ts says are not in the
  // prompt, are counted into the prefix all the same; they inflate `used` and show up as "unrecorded".
  it('a deferred tool does not add to used', () => {
    const withDeferred = contextBreakdown(parseSession(body([...tools, deferred])));
    expect(withDeferred.tools.deferred).toBeGreaterThan(0);
    expect(withDeferred.components.unrecorded).toBe(0); // is ~230
    expect(withDeferred.used).toBe(snap.used); // is ~360 vs ~120
  });

  // BUG (tokens/replay.ts trackerFor): `prefixTokens` replaces the harness prefix *and* the request body's tool
  // definitions, so prefixTokens: 0 ("my harness adds nothing unrecorded") drops the tools from `used`, and the breakdown
  // then scales every component down to fit (system, prompt and tools shrink ~5×).
  it('prefixTokens: 0 keeps the tool definitions of a request body in used', () => {
    const s0 = contextBreakdown(session, { settings: settings({ prefixTokens: 0 }) });
    expect(s0.used).toBeGreaterThanOrEqual(snap.tools.builtIn + snap.tools.mcp);
  });
});

const runCorpus = corpusAvailable() ? describe : describe.skip;
if (!corpusAvailable()) console.warn('budget corpus tests skipped: ../shared/corpus not found (set ABRIDGE_CORPUS)');

function checkFinite(s: ContextBreakdown): void {
  for (const v of [
    s.used,
    s.fill,
    s.window,
    s.reserve,
    s.effective,
    s.untilCompaction,
    s.compactionBuffer,
    s.free,
    ...Object.values(s.marks),
    ...Object.values(s.components),
    ...Object.values(s.tools),
  ]) {
    expect(Number.isFinite(v)).toBe(true);
  }
  for (const v of Object.values(s.components)) expect(v).toBeGreaterThanOrEqual(0);
  expect(s.window).toBeGreaterThan(0);
  expect(s.effective).toBe(s.window - s.reserve);
  const t = s.thresholds;
  const expected = s.fill >= t.block ? 'block' : s.fill >= t.compact ? 'compact' : s.fill >= t.warn ? 'warn' : 'ok';
  expect(s.level).toBe(expected);
  expect(s.fill).toBe(s.used / s.effective);
}

runCorpus('contextBreakdown on every pi / claude-code / codex corpus transcript', () => {
  for (const folder of ['pi', 'claude-code', 'codex']) {
    for (const file of corpusFiles(folder)) {
      it(`${folder}/${basename(file)}`, async () => {
        const session = await readSession(file);
        const snap = contextBreakdown(session);
        checkFinite(snap);
        const hasUsage = session.entries.some(
          (x) => (x.message?.usage && promptTokens(x.message.usage) > 0) || (x.usage && promptTokens(x.usage) > 0),
        );
        if (hasUsage) expect(snap.used).toBeGreaterThan(0);
        // Midway through too.
        checkFinite(contextBreakdown(session, { at: Math.floor(session.entries.length / 2) }));

        // When the last entry carries usage, the next prompt is that prompt plus the reply (in the reply's tokens).
        const last = session.entries[session.entries.length - 1]!;
        const usage = last.message?.usage ?? last.usage;
        const subagentFile = session.entries.every((x) => !x.message || x.sidechain); // see the sidechain BUG test above
        if (!usage || promptTokens(usage) === 0 || subagentFile) return;
        const prompt = promptTokens(usage);
        const lastReply = [...session.entries].reverse().find((x) => x.message?.role === 'assistant')?.message;
        if (lastReply?.parts.some((p) => p.type === 'thinking')) {
          // Reasoning is billed as output but not all of it comes back in the next prompt (encrypted, or summarized):
          // the next prompt lies between the last prompt and the last prompt plus all of its output.
          expect(snap.used).toBeGreaterThanOrEqual(prompt);
          expect(snap.used).toBeLessThanOrEqual((prompt + usage.output) * 1.02);
        } else {
          expect(Math.abs(snap.used - (prompt + usage.output)) / (prompt + usage.output)).toBeLessThanOrEqual(0.02);
        }
      });
    }
  }

  const subagent = corpusFile('claude-code', 'marot__spotter__agent-a881341.jsonl');
  it.runIf(corpusFiles('claude-code').includes(subagent)).fails(
    'BUG: claude-code/marot__spotter__agent-a881341.jsonl (all sidechain) is within 2% of its last report',
    async () => {
      const session = await readSession(subagent);
      const u = session.entries[session.entries.length - 1]!.message!.usage!;
      const snap = contextBreakdown(session);
      expect(Math.abs(snap.used - (promptTokens(u) + u.output)) / (promptTokens(u) + u.output)).toBeLessThanOrEqual(
        0.02,
      ); // is −43%
    },
  );
});

describe('contextBreakdown on a stored session with undos', () => {
  it('counts.compactions is the compactions still in view: not an undo checkpoint, nor what it took back', async () => {
    const store = new MemorySessionStore();
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', store, sessionId: 's' });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Find every use of value.' }] });
    await grepSteps(cm, 0, 8);
    expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(1);
    await grepSteps(cm, 8, 4);
    expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(2);
    const compactions = async () => contextBreakdown(await loadSession(store, 's')).counts.compactions;
    expect(await compactions()).toBe(2);

    expect((await cm.undoCompaction()).undone).toEqual([2]); // checkpoint #3
    expect(await compactions()).toBe(1);
    // As of the entry before the checkpoint, #2 was still in view.
    const log = await loadSession(store, 's');
    const checkpoint = log.entries.find((e) => e.compaction?.number === 3)!;
    expect(contextBreakdown(log, { at: checkpoint.index - 1 }).counts.compactions).toBe(2);

    await grepSteps(cm, 12, 4);
    expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(4);
    expect(await compactions()).toBe(2);
    expect((await cm.undoCompaction({ all: true })).undone).toEqual([4, 1]); // checkpoint #5
    expect(await compactions()).toBe(0);
  });
});
