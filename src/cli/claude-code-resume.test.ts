/**
 * What Claude Code resumes is what abridge reported. Every Claude Code transcript of the corpus is compacted at two
 * budgets (the fixed prefix + 50% / 25% of the visible conversation, as bench/compact.js sets them), with clearing only,
 * and twice in a row (written and read back between), written with the Claude Code writer (what `abridge compact
 * --out` does), resumed by the real CLI (`claude -p --resume`) against a loopback Anthropic endpoint, and the messages
 * it sends are compared with abridge's `--emit anthropic` view; the written file read back by abridge gives that view
 * too. A subagent's transcript that abridge left unchanged (nothing to compact) stays all sidechain, which `--resume`
 * does not open: such cases must fail with "No conversation found" and are counted apart.
 *
 * What the CLI adds or rewrites, and the only things normalized away (see `compareResumed`):
 * - its new turn: a last user message made of `<system-reminder>` blocks (environment, model, tools, skills, date…)
 *   and the prompt; and, when the resumed conversation ends with a user message, the assistant message
 *   "No response requested." it puts before that turn;
 * - `cache_control` on blocks, `caller: {type: "direct"}` on tool_use blocks;
 * - when it joins consecutive user records into one message, a "\n" at the end of the text block before each seam;
 * - the subagent tool's old name: a `Task` tool_use is sent as `Agent`.
 * Needs the CLI: $ABRIDGE_CLAUDE_BIN (scripts/install-claude-code.sh; .ci/run exports it). Skips, saying so, without.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contextBreakdown } from '../budget/breakdown.js';
import { compact } from '../compaction/compact.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import type { Session } from '../model/types.js';
import type { StrategyName } from '../compaction/strategies/strategy.js';
import { TokenCounter } from '../tokens/counter.js';
import { claudeBinary, resumeWithClaudeCode } from '../../test/support/claude-code-cli.js';
import { type Comparison, compareResumed, NO_RESPONSE, PROMPT } from '../../test/support/claude-code-compare.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { viewSession } from './compact.js';
import { convertTranscript } from './convert.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { createRedactor } from '../redact/redact.js';

const POOL = 3;

/** Prompt tokens of wire messages, counted the way abridge counts a session (read as an Anthropic request). */
function tokensOf(model: string, messages: readonly unknown[]): number {
  const s = parseSession(JSON.stringify({ model, max_tokens: 1, messages }));
  const counter = new TokenCounter();
  return s.entries.reduce((n, e) => n + (e.message ? counter.message(e.message) : 0), 0);
}

interface Variant {
  name: string;
  /** Share of the visible conversation each compaction keeps, one compaction per entry (written and read back between). */
  fractions: number[];
  strategies?: StrategyName[];
}

/** The budgets the issue asks for, a compaction that only clears tool results, and one compaction after another. */
const VARIANTS: Variant[] = [
  { name: '50%', fractions: [0.5] },
  { name: '25%', fractions: [0.25] },
  { name: 'clear-only 25%', fractions: [0.25], strategies: ['clear-tool-results'] },
  { name: 'repeated 50% then 50%', fractions: [0.5, 0.5] },
];

interface Case {
  file: string;
  variant: string;
  sessionId: string;
  transcript: string;
  /** abridge compacted something (else the file is written back as it was). */
  compacted: boolean;
  subagent: boolean;
  view: { model: string; messages: unknown[] };
  readBack: unknown[];
}

async function prepare(file: string, variant: Variant): Promise<Case> {
  let transcript = (await readFile(file)).toString('utf8');
  let session: Session = parseSession(transcript, { source: file });
  const subagent = session.entries.every((e) => !e.message || e.sidechain === true);
  let compacted = false;
  for (const [i, fraction] of variant.fractions.entries()) {
    if (i > 0) session = parseSession(transcript, { source: `${file} (compacted ${i}×)` });
    const snap = contextBreakdown(session);
    const fixed = snap.components.unrecorded;
    const target = fixed + Math.round((snap.used - fixed) * fraction);
    const r = await compact(session, {
      target,
      force: true,
      summarizer: new ExtractiveSummarizer(),
      ...(variant.strategies ? { strategies: variant.strategies } : {}),
    });
    if (r.marker) compacted = true;
    transcript = writeSession(session, 'claude-code');
  }
  const view = JSON.parse(writeSession(viewSession(session), 'anthropic')) as { model: string; messages: unknown[] };
  const back = parseSession(transcript);
  const readBack = (JSON.parse(writeSession(viewSession(back), 'anthropic')) as { messages: unknown[] }).messages;
  return { file, variant: variant.name, sessionId: session.info.id!, transcript, compacted, subagent, view, readBack };
}

async function pool<T, R>(items: readonly T[], size: number, run: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(size, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await run(items[i]!);
      }
    }),
  );
  return out;
}

const cli = claudeBinary();
const files = corpusAvailable() ? corpusFiles('claude-code') : [];
const skip = 'reason' in cli ? cli.reason : files.length === 0 ? 'no Claude Code transcripts in the corpus' : undefined;
if (skip) console.log(`[claude-code resume] skipped: ${skip}`);

describe.skipIf(skip !== undefined)('Claude Code resumes exactly what abridge reported', () => {
  it("every corpus transcript × (50%, 25%, clear-only, repeated): the CLI sends abridge's view", async () => {
    const bin = (cli as { bin: string }).bin;
    const cases = await Promise.all(files.flatMap((f) => VARIANTS.map((v) => prepare(f, v))));
    const results = await pool(cases, POOL, async (c) => {
      const run = await resumeWithClaudeCode(bin, c.transcript, c.sessionId, PROMPT, c.view.model);
      const cmp: Comparison = run.main
        ? compareResumed(run.main.messages, c.view.messages)
        : {
            equal: false,
            differences: [
              `no conversation request (exit ${run.code}): ${run.stdout.slice(0, 200)} ${run.stderr.slice(0, 200)}`,
            ],
            normalized: { reminders: 0, noResponse: 0, seams: 0, renamed: 0 },
            resumed: [],
          };
      const tokens = run.main
        ? { sent: tokensOf(c.view.model, cmp.resumed), view: tokensOf(c.view.model, c.view.messages) }
        : undefined;
      // A subagent's transcript that abridge left as it was is still all sidechain: `--resume` finds no conversation.
      const notResumable =
        !run.main && c.subagent && !c.compacted && /No conversation found/.test(run.stdout + run.stderr);
      return {
        c,
        cmp,
        tokens,
        notResumable,
        readBackEqual: JSON.stringify(c.readBack) === JSON.stringify(c.view.messages),
      };
    });
    const lines = results.map(({ c, cmp, tokens, notResumable, readBackEqual }) => {
      const t = tokens
        ? `${tokens.sent}/${tokens.view} tokens (${(((tokens.sent - tokens.view) / tokens.view) * 100).toFixed(2)}%)`
        : '';
      const verdict = cmp.equal
        ? 'equal'
        : notResumable
          ? 'not resumable (subagent transcript, nothing compacted)'
          : 'DIFFERENT';
      return `${verdict} ${basename(c.file)} @${c.variant}: ${c.compacted ? 'compacted' : 'unchanged'}, ${c.view.messages.length} messages, ${t}, read back ${readBackEqual ? 'same' : 'DIFFERENT'}; normalized ${JSON.stringify(cmp.normalized)}${cmp.equal || notResumable ? '' : `\n    ${cmp.differences.join('\n    ')}`}`;
    });
    const equal = results.filter((r) => r.cmp.equal).length;
    const skipped = results.filter((r) => r.notResumable).length;
    console.log(
      `[claude-code resume] ${equal}/${results.length} equal, ${skipped} not resumable, ${results.length - equal - skipped} different (${files.length} transcripts × ${VARIANTS.length} variants)\n${lines.join('\n')}`,
    );
    expect(results.filter((r) => r.c.compacted).length).toBeGreaterThan(results.length / 2);
    for (const r of results) {
      const what = `${basename(r.c.file)} @${r.c.variant}`;
      expect(r.readBackEqual, `${what}: read back with abridge`).toBe(true);
      if (r.notResumable) continue;
      expect(r.cmp.differences, what).toEqual([]);
      // Within 2% — or, for a view of a few dozen tokens, within the "\n" the CLI puts at each seam it joins.
      expect(Math.abs(r.tokens!.sent - r.tokens!.view), `${what}: tokens`).toBeLessThanOrEqual(
        Math.max(0.02 * r.tokens!.view, r.cmp.normalized.seams),
      );
    }
  }, 600_000);
});

// A session of another agent converted for Claude Code (`abridge convert --to claude-code`): the CLI resumes abridge's
// view of the converted file.
describe.skipIf(skip !== undefined)('Claude Code resumes what abridge converted for it', () => {
  it("every corpus pi and Codex transcript, converted: the CLI sends abridge's view of it", async () => {
    const bin = (cli as { bin: string }).bin;
    const sources = [...corpusFiles('pi'), ...corpusFiles('codex')];
    const redact = createRedactor();
    const results = await pool(sources, POOL, async (file) => {
      const session = parseSession((await readFile(file)).toString('utf8'), { source: file });
      const { converted, text, compaction } = await convertTranscript(session, 'claude-code', {
        settings: DEFAULT_BUDGET_SETTINGS,
        redact,
      });
      const view = JSON.parse(writeSession(viewSession(converted), 'anthropic')) as {
        model: string;
        messages: unknown[];
      };
      // Resumed with a Claude model (the CLI makes no request for another's: a session moved from a GPT or Gemini agent
      // goes on with Claude).
      const model = /^claude-/.test(view.model) ? view.model : 'claude-sonnet-4-6';
      const run = await resumeWithClaudeCode(bin, text, converted.info.id!, PROMPT, model);
      const cmp = run.main
        ? compareResumed(run.main.messages, view.messages)
        : { equal: false, differences: [`no conversation request (exit ${run.code}): ${run.stderr.slice(0, 200)}`] };
      return { file, compacted: compaction?.entry !== undefined, messages: view.messages.length, cmp };
    });
    const equal = results.filter((r) => r.cmp.equal).length;
    console.log(
      `[claude-code resume] converted: ${equal}/${results.length} equal\n${results
        .map(
          (r) =>
            `${r.cmp.equal ? 'equal' : 'DIFFERENT'} ${basename(r.file)}: ${r.messages} messages${r.compacted ? ', compacted' : ''}${r.cmp.equal ? '' : `\n    ${r.cmp.differences.join('\n    ')}`}`,
        )
        .join('\n')}`,
    );
    // Every one (45 of 45 in the corpus): the converted records are those of the view's request, where the CLI would
    // rebuild others (an assistant record of nothing sent as "(no content)", records of one response's text and calls
    // under other ids sent apart, a call's id reused or read as a batch entry: see convertedSession).
    for (const r of results) expect(r.cmp.differences, basename(r.file)).toEqual([]);
    expect(equal, 'converted transcripts the CLI resumes exactly').toBe(results.length);
  }, 600_000);
});

describe('compareResumed', () => {
  const view = [
    { role: 'user', content: 'fix it' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Task', input: { prompt: 'look' } }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't1', content: '[tool result cleared]' },
        { type: 'text', text: 'stop' },
      ],
    },
  ];
  const sent = (result: string) => [
    { role: 'user', content: [{ type: 'text', text: 'fix it', cache_control: { type: 'ephemeral' } }] },
    {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't1', name: 'Agent', input: { prompt: 'look' }, caller: { type: 'direct' } }],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't1', content: result },
        { type: 'text', text: 'stop' },
      ],
    },
    { role: 'assistant', content: [{ type: 'text', text: NO_RESPONSE }] },
    {
      role: 'user',
      content: [
        { type: 'text', text: '<system-reminder>\ndate\n</system-reminder>' },
        { type: 'text', text: PROMPT },
      ],
    },
  ];
  it('takes away only what the CLI adds', () => {
    const c = compareResumed(sent('[tool result cleared]'), view);
    expect(c.differences).toEqual([]);
    expect(c.normalized).toEqual({ reminders: 1, noResponse: 1, seams: 0, renamed: 1 });
  });
  it('finds a result the CLI sent whole where abridge cleared it', () => {
    expect(compareResumed(sent('the whole 40 KB output'), view).differences).toEqual([
      expect.stringContaining('message 2 block 0'),
    ]);
  });
});
