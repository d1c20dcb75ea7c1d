/**
 * What Codex resumes is what abridge reported. A rollout abridge wrote — another agent's session converted (`abridge
 * convert --to codex`), or a Codex rollout compacted (`abridge compact --out`) — is put in a temporary CODEX_HOME and
 * resumed by the real Codex CLI (`codex exec resume <id>`) against a loopback Responses endpoint; the history it sends
 * is compared, item for item, with abridge's view of the written file: each message of the view as the response items
 * Codex records (`codexItems`), with its tool outputs as Codex sends them (its model's truncation policy, the middle cut
 * out: `harnessSends`, the rule every count of a Codex session uses).
 *
 * What the CLI adds, and the only things left out of the comparison: the developer messages before the history, its
 * skills, environment context and project memory after it, and the prompt; item ids, statuses and metadata; reasoning
 * items (Codex sends its own encrypted reasoning back; abridge's view keeps them, and they cannot be checked offline).
 * The model resumed with is one Codex 0.171's catalog knows (gpt-5.5): for a model it does not know, it cuts outputs by
 * its fallback policy (10,000 bytes), which abridge's rule gives only to models outside the GPT-5 family.
 * Needs the CLI: $ABRIDGE_CODEX_BIN (scripts/install-codex.sh; .ci/run exports it). Skips, saying so, without.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { compact } from '../compaction/compact.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { codexItems } from '../formats/codex-write.js';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import type { Message, Session } from '../model/types.js';
import { activeMessages, activeView } from '../model/view.js';
import { createRedactor } from '../redact/redact.js';
import { TokenCounter } from '../tokens/counter.js';
import { harnessSends } from '../tokens/sent.js';
import { codexBinary, comparableItems, resumedHistory, resumeWithCodex } from '../../test/support/codex-cli.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { SMALL_PI_SESSION } from '../../test/support/cli.js';
import { convertTranscript } from './convert.js';

const MODEL = 'gpt-5.5';
const PROMPT = 'abridge-codex-resume-check';
const POOL = 2;

const cli = codexBinary();
const skip = 'reason' in cli ? cli.reason : undefined;
if (skip) console.warn(`[codex resume] skipped: ${skip}`);

/**
 * abridge's view of a written rollout, as the items Codex sends for it: every message but the instructions its header
 * holds (Codex sends those as the request's `instructions`), from its first message that is not a developer message
 * (the CLI puts its own developer messages first: {@link resumedHistory} starts at the same place).
 */
function expectedItems(written: Session, model = MODEL): Record<string, unknown>[] {
  const sends = harnessSends(written, model);
  const sent = (m: Message): Message =>
    sends ? { ...m, parts: m.parts.map((p) => (p.type === 'tool-result' ? sends(p) : p)) } : m;
  const items = comparableItems(
    activeView(written)
      .filter((v) => v.entry === undefined || written.entries[v.entry]!.kind !== 'header')
      .flatMap((v) => codexItems(sent(v.message), { reasoning: false })),
  );
  const first = items.findIndex((i) => !(i.type === 'message' && i.role === 'developer'));
  return first === -1 ? [] : items.slice(first);
}

interface Outcome {
  file: string;
  equal: boolean;
  items: number;
  compacted: boolean;
  difference?: string;
}

async function check(label: string, text: string, compacted: boolean): Promise<Outcome> {
  const written = parseSession(text, { format: 'codex', source: label });
  const want = expectedItems(written);
  const run = await resumeWithCodex((cli as { bin: string }).bin, text, written.info.id!, PROMPT, MODEL);
  if (!run.input)
    return {
      file: label,
      equal: false,
      items: want.length,
      compacted,
      difference: `no conversation request (exit ${run.code}): ${run.stderr.slice(-300)}`,
    };
  const got = resumedHistory(run.input);
  const at = got.findIndex((g, i) => JSON.stringify(g) !== JSON.stringify(want[i]));
  const first = at === -1 && got.length !== want.length ? Math.min(got.length, want.length) : at;
  return {
    file: label,
    equal: first === -1,
    items: want.length,
    compacted,
    ...(first === -1
      ? {}
      : {
          difference: `item ${first} of ${got.length} sent / ${want.length} in view: sent ${JSON.stringify(got[first])?.slice(0, 200)} / view ${JSON.stringify(want[first])?.slice(0, 200)}`,
        }),
  };
}

async function pool<T, R>(items: readonly T[], n: number, f: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await f(items[i]!);
    }),
  );
  return out;
}

function report(name: string, results: readonly Outcome[]): number {
  const equal = results.filter((r) => r.equal).length;
  console.log(
    `[codex resume] ${name}: ${equal}/${results.length} equal\n${results
      .map(
        (r) =>
          `${r.equal ? 'equal' : 'DIFFERENT'} ${basename(r.file)}: ${r.items} items${r.compacted ? ', compacted' : ''}${r.difference ? `\n    ${r.difference}` : ''}`,
      )
      .join('\n')}`,
  );
  return equal;
}

const redact = createRedactor();

describe.skipIf(skip !== undefined)('Codex resumes what abridge wrote for it', () => {
  it("a pi session converted (the project's own fixture): the CLI sends abridge's view of it", async () => {
    const session = parseSession(SMALL_PI_SESSION, { format: 'pi' });
    const { text } = await convertTranscript(session, 'codex', { settings: DEFAULT_BUDGET_SETTINGS, redact });
    const r = await check('small pi session', text, false);
    expect(r.difference).toBeUndefined();
    // A user message, a call, its output and the reply.
    expect(r.items).toBeGreaterThanOrEqual(3);
  }, 180_000);

  it.skipIf(!corpusAvailable())(
    "every corpus pi and Claude Code transcript, converted: the CLI sends abridge's view of it",
    async () => {
      const sources = [...corpusFiles('pi'), ...corpusFiles('claude-code')];
      const results = await pool(sources, POOL, async (file) => {
        const session = parseSession((await readFile(file)).toString('utf8'), { source: file });
        const { text, compaction } = await convertTranscript(session, 'codex', {
          settings: DEFAULT_BUDGET_SETTINGS,
          redact,
        });
        return check(file, text, compaction?.entry !== undefined);
      });
      const equal = report('converted', results);
      expect(results.filter((r) => r.compacted).length, 'conversions compacted on the way').toBeGreaterThan(0);
      expect(equal, 'converted transcripts the CLI resumes exactly').toBe(results.length);
    },
    900_000,
  );

  it.skipIf(!corpusAvailable())(
    "every corpus Codex rollout compacted at a quarter of its view (compact --out): the CLI sends abridge's view",
    async () => {
      const outcomes = await pool(corpusFiles('codex'), POOL, async (file) => {
        const session = parseSession((await readFile(file)).toString('utf8'), { source: file });
        const counter = new TokenCounter();
        const visible = activeMessages(session).reduce((n, m) => n + counter.message(m), 0);
        const r = await compact(session, {
          target: Math.max(2_000, Math.round(visible / 4)),
          force: true,
          summarizer: new ExtractiveSummarizer(),
          store: new MemoryResultStore(),
          redact,
        });
        // A rollout of one request (the system prompt, project memory and one exchange) has nothing to archive.
        if (!r.entry) return undefined;
        const text = writeSession(session, 'codex', { redact });
        // Written back, the rollout's own lines are the same bytes: only the compaction is added after them.
        const original = (await readFile(file)).toString('utf8');
        expect(text.startsWith(original.replace(/\n$/, '')), basename(file)).toBe(true);
        return check(file, text, true);
      });
      const results = outcomes.filter((o): o is Outcome => o !== undefined);
      const equal = report('compacted', results);
      expect(results.length, 'rollouts compacted').toBeGreaterThanOrEqual(3);
      expect(equal, 'compacted rollouts the CLI resumes exactly').toBe(results.length);
    },
    900_000,
  );
});
