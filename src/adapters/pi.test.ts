/**
 * abridge inside a real pi agent (pi's SDK, headless, no network): 44 turns, each reading a 20–40 KB file, in a
 * 32,000-token window, against a loopback Anthropic server that refuses what Anthropic refuses. Nothing is refused;
 * abridge's compactions are in pi's session file; pi resumes from that file exactly what abridge reads in it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AuthStorage,
  createAgentSession,
  DefaultResourceLoader,
  ModelRegistry,
  SessionManager,
  SettingsManager,
} from '@mariozechner/pi-coding-agent';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { activeMessages } from '../model/view.js';
import { TITLE } from '../compaction/summarizers/render.js';
import {
  startFakeAnthropic,
  type AnthropicRequest,
  type FakeAnthropic,
  type ModelAnswer,
} from '../../test/support/anthropic-sse.js';
import { comparable, firstDifference, piResume } from '../../test/support/pi-loader.js';
import { handOffFor, isSummaryRequest } from '../../test/support/summary-model.js';
import { abridgeExtension, PI_CONTEXT_TYPE, type AbridgePiOptions } from './pi.js';

const WINDOW = 32_000;
const MAX_OUTPUT = 4_096;
const TURNS = 44;

const root = mkdtempSync(join(tmpdir(), 'abridge-pi-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const textOf = (m: AnthropicRequest['messages'][number]) =>
  typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join('');

/** The summary requests pi's model received (abridge's summarizer, called as pi calls its model), as prompts. */
const summaryPrompts = (fake: FakeAnthropic) =>
  fake.requests.filter((r) => isSummaryRequest(r.body.system)).map((r) => textOf(r.body.messages[0]!));

/**
 * The scripted model: asked to read a file, it calls `read`; given the result, it says it read it. Asked for a
 * summary (abridge's summarizer, through pi's model), it writes a careful hand-off.
 */
function answer(body: AnthropicRequest): ModelAnswer {
  if (isSummaryRequest(body.system)) return { text: handOffFor(textOf(body.messages[0]!), { mark: 'By pi’s model.' }) };
  const last = body.messages.at(-1)!;
  const blocks = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
  if (blocks.some((b) => b.type === 'tool_result')) return { text: 'I read it; it lists the retry attempts.' };
  const said = blocks.map((b) => b.text ?? '').join('\n');
  if (said.startsWith('Compact your context')) return { tool: { name: 'compact_context', input: {} } };
  const ref = said.match(/^Read back (r_[0-9a-f]+)/);
  if (ref) return { tool: { name: 'read_result', input: { ref_id: ref[1], limit: 5 } } };
  const asked = said.match(/f(\d+)\.txt/);
  return asked ? { text: 'Reading it.', tool: { name: 'read', input: { path: `f${asked[1]}.txt` } } } : { text: 'OK.' };
}

/** Writes `count` files f0.txt… of 20–40 KB into `cwd` (retry logs, one line per attempt). */
function writeFiles(cwd: string, count: number): void {
  mkdirSync(cwd, { recursive: true });
  for (let i = 0; i < count; i++) {
    const bytes = 20_000 + ((i * 7919) % 20_000);
    const line = (k: number) =>
      `f${i} attempt ${k}: retry after ${(k * 37) % 250} ms, status ${k % 7 === 0 ? 'ECONNRESET' : 'ok'} `.padEnd(
        99,
        '.',
      );
    writeFileSync(join(cwd, `f${i}.txt`), Array.from({ length: Math.ceil(bytes / 100) }, (_, k) => line(k)).join('\n'));
  }
}

/**
 * A headless pi agent (pi's SDK) on a loopback Anthropic model `claude-loopback` answering with `answer`, with
 * abridge's extension configured by `options` (or loaded by pi from `path`), in `root/<name>`. HOME is `root` while it
 * runs; `close` restores it.
 */
async function startPi(
  name: string,
  options: AbridgePiOptions | { path: string },
  settings: { files: number; keepRecentTokens: number; answer?: (body: AnthropicRequest) => ModelAnswer },
) {
  const cwd = join(root, name, 'work');
  const agentDir = join(root, name, 'agent');
  writeFiles(cwd, settings.files);
  mkdirSync(agentDir, { recursive: true });
  const fake = await startFakeAnthropic({ window: WINDOW, answer: settings.answer ?? answer });
  const previousHome = process.env.HOME;
  process.env.HOME = root;
  const authStorage = AuthStorage.inMemory();
  authStorage.setRuntimeApiKey('anthropic', 'sk-ant-test');
  const modelRegistry = ModelRegistry.inMemory(authStorage);
  const model = {
    id: 'claude-loopback',
    name: 'loopback',
    api: 'anthropic-messages' as const,
    provider: 'anthropic',
    baseUrl: fake.baseURL,
    reasoning: false,
    input: ['text' as const],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: WINDOW,
    maxTokens: MAX_OUTPUT,
  };
  const settingsManager = SettingsManager.inMemory({
    compaction: { enabled: true, reserveTokens: 8_192, keepRecentTokens: settings.keepRecentTokens },
    retry: { enabled: false },
  });
  const loader = new DefaultResourceLoader({
    cwd,
    agentDir,
    settingsManager,
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
    ...('path' in options
      ? { additionalExtensionPaths: [options.path] }
      : { extensionFactories: [abridgeExtension(options)] }),
  });
  await loader.reload();
  const { session } = await createAgentSession({
    cwd,
    agentDir,
    authStorage,
    modelRegistry,
    model,
    thinkingLevel: 'off',
    resourceLoader: loader,
    sessionManager: SessionManager.create(cwd, join(root, name, 'sessions')),
    settingsManager,
  });
  return {
    session,
    fake,
    /** pi's session file as records. */
    records: () =>
      readFileSync(session.sessionFile!, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    close: async () => {
      session.dispose();
      process.env.HOME = previousHome;
      await fake.close();
    },
  };
}

describe('abridge as a pi extension', () => {
  it(`keeps a ${TURNS}-turn pi agent inside a ${WINDOW.toLocaleString('en-US')}-token window; pi resumes what abridge reads`, async () => {
    const calls: Parameters<NonNullable<AbridgePiOptions['onCall']>>[0][] = [];
    const printed: string[] = [];
    const pi = await startPi(
      'long',
      { onCall: (c) => calls.push(c), print: (t) => printed.push(t) },
      { files: TURNS, keepRecentTokens: 8_000 },
    );
    const { session, fake } = pi;
    try {
      let compactedByHand = false;
      for (let i = 0; i < TURNS; i++) {
        await session.prompt(`Read f${i}.txt and tell me what it says.`);
        // A person's /compact halfway: pi compacts, abridge writes the summary. (pi refuses a /compact right after its
        // own automatic one — "Already compacted" — so it comes at the first turn from halfway on that allows it.)
        if (i >= TURNS / 2 && !compactedByHand && session.sessionManager.getBranch().at(-1)?.type !== 'compaction') {
          await session.compact();
          compactedByHand = true;
        }
        // The model compacts its own context, and reads back a result abridge offloaded or cleared.
        if (i === 30) await session.prompt('Compact your context now.');
        if (i === 34) {
          // The newest request that showed a reference (the latest compaction may have archived the results that had
          // one): what abridge stored stays readable.
          const ref = fake.requests
            .map((r) => JSON.stringify(r.body.messages).match(/r_[0-9a-f]{8,}/))
            .findLast((m) => m !== null);
          expect(ref).toBeTruthy();
          await session.prompt(`Read back ${ref![0]}.`);
        }
      }
      await session.prompt('/context');
      const file = session.sessionFile!;

      expect(compactedByHand).toBe(true);
      // Nothing refused: every request fit (prompt + max_tokens ≤ window) and kept its tool pairs — pi's model asked
      // for summaries (abridge's default) included.
      expect(fake.requests.filter((r) => r.refused).map((r) => r.refused)).toEqual([]);
      expect(Math.max(...fake.requests.map((r) => r.promptTokens + r.body.max_tokens))).toBeLessThanOrEqual(WINDOW);
      const agent = fake.requests.filter((r) => !isSummaryRequest(r.body.system));
      const summaries = summaryPrompts(fake);
      expect(summaries.length).toBeGreaterThan(0);
      expect(agent.length).toBeGreaterThanOrEqual(2 * TURNS + 4);
      // The tools and the command are pi's.
      expect((agent.at(-1)!.body.tools as { name: string }[]).map((t) => t.name)).toEqual(
        expect.arrayContaining(['read_result', 'compact_context']),
      );
      expect(printed.join('\n')).toContain('Recent turns');
      const results = agent.flatMap((r) =>
        r.body.messages.flatMap((m) =>
          typeof m.content === 'string'
            ? []
            : m.content.filter((b) => b.type === 'tool_result').map((b) => JSON.stringify(b.content)),
        ),
      );
      expect(results.some((t) => t.includes('Compacted the context'))).toBe(true);
      expect(results.some((t) => /\[ref r_[0-9a-f]+ · lines 0–4 of/.test(t))).toBe(true);
      // abridge compacted what the calls sent, and its figures are what the server counted (anchored on its bills).
      expect(calls.filter((c) => c.compaction?.marker).length).toBeGreaterThan(0);
      expect(calls).toHaveLength(agent.length);
      const errors = calls
        .map((c, i) => Math.abs(c.snapshot.used - agent[i]!.promptTokens) / agent[i]!.promptTokens)
        .sort((a, b) => a - b);
      const median = errors[Math.floor(errors.length / 2)]!;
      console.log(
        `abridge in pi: ${agent.length} requests and ${summaries.length} summary requests, 0 refused, ${calls.filter((c) => c.compaction?.marker).length} per-call compactions, predicted vs counted prompt: median error ${(median * 100).toFixed(1)}%, largest prompt + max_tokens ${Math.max(...fake.requests.map((r) => r.promptTokens + r.body.max_tokens))} of ${WINDOW}`,
      );
      expect(median).toBeLessThan(0.1);

      // In pi's file: pi's compaction records carrying abridge's summary (written by pi's model), and abridge's
      // per-call records.
      const text = readFileSync(file, 'utf8');
      const records = pi.records();
      const compactions = records.filter((r) => r.type === 'compaction');
      expect(compactions.length).toBeGreaterThan(0);
      for (const c of compactions) {
        expect(c.details).toMatchObject({ abridge: { source: 'abridge', layout: 'pi', summarizer: 'llm' } });
        expect(c.summary).toContain('By pi’s model.');
      }
      expect(records.filter((r) => r.type === 'custom' && r.customType === PI_CONTEXT_TYPE).length).toBeGreaterThan(0);
      // pi resumes from the file exactly what abridge reads in it.
      const resumed = piResume(text).sent;
      const abridgeView = activeMessages(parseSession(text));
      expect(firstDifference(resumed, abridgeView)).toBe(-1);
      expect(comparable(resumed).length).toBeGreaterThan(0);
    } finally {
      await pi.close();
    }
  }, 300_000);

  const KEEP = 'Keep the ECONNRESET attempts and the retry delays.';

  it('/compact <instructions>: pi’s model writes the summary, told what to keep; a truncated answer is retried once', async () => {
    let n = 0;
    const calls: Parameters<NonNullable<AbridgePiOptions['onCall']>>[0][] = [];
    const pi = await startPi(
      'compact-llm',
      { onCall: (c) => calls.push(c) },
      {
        files: 2,
        keepRecentTokens: 2_000,
        answer: (body) => {
          if (!isSummaryRequest(body.system)) return answer(body);
          const prompt = textOf(body.messages[0]!);
          return ++n === 1
            ? { text: handOffFor(prompt, { omit: ['Next step'], mark: 'First answer, cut short.' }) }
            : { text: handOffFor(prompt, { mark: 'Second answer, whole.' }) };
        },
      },
    );
    try {
      for (let i = 0; i < 2; i++) await pi.session.prompt(`Read f${i}.txt and tell me what it says.`);
      expect(calls.filter((c) => c.compaction?.marker)).toEqual([]);
      await pi.session.compact(`  ${KEEP} `);

      const prompts = summaryPrompts(pi.fake);
      expect(prompts).toHaveLength(2);
      for (const p of prompts) expect(p).toContain(`follow it first:\n${KEEP}\n</instructions>`);
      expect(prompts[0]).not.toContain('Your previous answer was not accepted');
      expect(prompts[1]).toContain('Your previous answer was not accepted: it left out the Next step section.');
      // The summary requests went to pi's model, within its window.
      const asked = pi.fake.requests.filter((r) => isSummaryRequest(r.body.system));
      expect(asked.map((r) => r.body.model)).toEqual(['claude-loopback', 'claude-loopback']);
      expect(asked.every((r) => !r.refused && r.promptTokens + r.body.max_tokens <= WINDOW)).toBe(true);

      const [compaction, ...more] = pi.records().filter((r) => r.type === 'compaction');
      expect(more).toEqual([]);
      expect(compaction!.summary).toBe(handOffFor(prompts[1]!, { mark: 'Second answer, whole.' }));
      expect(compaction!.details).toEqual({
        abridge: { source: 'abridge', layout: 'pi', summarizer: 'llm', messages: expect.any(Number) },
      });
      // What pi sends next holds that summary.
      const resumed = JSON.stringify(piResume(readFileSync(pi.session.sessionFile!, 'utf8')).sent);
      expect(resumed).toContain('Second answer, whole.');
      expect(resumed).not.toContain('First answer, cut short.');
    } finally {
      await pi.close();
    }
  }, 120_000);

  it("summarizer: 'extractive' makes no model call; /compact's instructions still lead the summary", async () => {
    const pi = await startPi('compact-extractive', { summarizer: 'extractive' }, { files: 2, keepRecentTokens: 2_000 });
    try {
      for (let i = 0; i < 2; i++) await pi.session.prompt(`Read f${i}.txt and tell me what it says.`);
      await pi.session.compact(KEEP);
      expect(summaryPrompts(pi.fake)).toEqual([]);
      const [compaction] = pi.records().filter((r) => r.type === 'compaction');
      expect(String(compaction!.summary).startsWith(TITLE)).toBe(true);
      expect(compaction!.summary).toContain(KEEP);
      expect(compaction!.details).toMatchObject({ abridge: { summarizer: 'extractive' } });
    } finally {
      await pi.close();
    }
  }, 120_000);

  it('the model’s compact_context instructions reach pi’s model; an answer without its sections twice gives the extractive summary, and pi’s record says so', async () => {
    const pi = await startPi(
      'tool-llm',
      {},
      {
        files: 0,
        keepRecentTokens: 2_000,
        answer: (body) => {
          if (isSummaryRequest(body.system)) return { text: '## Primary request\nRead the files.\n\nAll good.' };
          const last = textOf(body.messages.at(-1)!);
          if (last.startsWith('Compact your context'))
            return { tool: { name: 'compact_context', input: { instructions: KEEP } } };
          return answer(body);
        },
      },
    );
    try {
      await pi.session.prompt('The deploys keep failing; I will paste their logs.');
      // What the person pasted cannot be cleared like tool output: halving the context takes a summary.
      for (let k = 0; k < 3; k++) {
        const log = Array.from({ length: 120 }, (_, j) => `deploy ${k}.${j}: ECONNRESET after ${j * 13} ms`).join('\n');
        await pi.session.prompt(`Keep this deploy log in mind:\n${log}`);
      }
      await pi.session.prompt('Compact your context now.');
      const prompts = summaryPrompts(pi.fake);
      expect(prompts).toHaveLength(2);
      for (const p of prompts) expect(p).toContain(`follow it first:\n${KEEP}\n</instructions>`);
      expect(prompts[1]).toContain(
        'Your previous answer was not accepted: it left out the Current state, Next step sections',
      );
      const [context, ...more] = pi
        .records()
        .filter((r) => r.type === 'custom' && r.customType === PI_CONTEXT_TYPE)
        .map((r) => (r.data as { abridge: { summary?: string } }).abridge);
      expect(more).toEqual([]);
      expect(context!.summary!.startsWith(TITLE)).toBe(true);
      expect(context!.summary).toContain(KEEP);
      const last = pi.fake.requests.at(-1)!;
      expect(isSummaryRequest(last.body.system)).toBe(false);
      expect(JSON.stringify(last.body.messages)).toContain('Compacted the context');
      expect(JSON.stringify(last.body.messages)).not.toContain('All good.');

      // pi's /compact then: the same failures, and pi's compaction record says how its summary was made.
      await pi.session.compact(KEEP);
      expect(summaryPrompts(pi.fake)).toHaveLength(4);
      const [compaction] = pi.records().filter((r) => r.type === 'compaction');
      expect(String(compaction!.summary).startsWith(TITLE)).toBe(true);
      expect(compaction!.details).toMatchObject({
        abridge: {
          summarizer: 'llm',
          notes: [
            expect.stringMatching(
              /^the LLM summarizer failed \(claude-loopback left out the Current state, Next step sections.* \(2 attempts\)\); the extractive summary was used instead$/,
            ),
          ],
        },
      });
    } finally {
      await pi.close();
    }
  }, 120_000);

  it('/pin keeps the last message a person wrote, /pin <text> every message holding it, verbatim through compaction', async () => {
    const printed: string[] = [];
    const calls: Parameters<NonNullable<AbridgePiOptions['onCall']>>[0][] = [];
    const pi = await startPi(
      'pin',
      { summarizer: 'extractive', print: (t) => printed.push(t), onCall: (c) => calls.push(c) },
      { files: 12, keepRecentTokens: 2_000 },
    );
    const first =
      'Read f1.txt and tell me what it says. PIN-ONE: the deploy key lives in vault/ops, never in the repo.';
    const second = 'Read f2.txt and tell me what it says. PIN-TWO: answer in French from now on.';
    const third = 'Read f3.txt and tell me what it says. NOT-PINNED: a passing remark.';
    try {
      await pi.session.prompt('Read f0.txt and tell me what it says.');
      await pi.session.prompt(first);
      await pi.session.prompt('/pin');
      await pi.session.prompt(second);
      await pi.session.prompt(third);
      await pi.session.prompt('/pin PIN-TWO');
      await pi.session.prompt('/pin nothing-holds-this');
      for (let i = 4; i < 12; i++) await pi.session.prompt(`Read f${i}.txt and tell me what it says.`);
      expect(printed[0]).toMatch(/^abridge: 1 message pinned \(the last message you wrote\); 1 pinned in all/);
      expect(printed[1]).toMatch(/^abridge: 1 message pinned \(messages holding "PIN-TWO"\); 2 pinned in all/);
      expect(printed[2]).toMatch(/no message holds "nothing-holds-this"; nothing pinned/);
      expect(pi.records().filter((r) => r.customType === 'abridge.pins')).toHaveLength(2);
      // abridge compacted what the calls sent, keeping the pinned messages (named among what must stay)…
      const kept = calls.find((c) => c.compaction?.protectedParts.some((p) => p.what.startsWith('pinned message')));
      expect(kept).toBeDefined();
      expect(kept!.messages.some((m) => m.parts.some((p) => p.type === 'text' && p.text === first))).toBe(true);
      // …and pi's own compaction, which archives a prefix and cannot keep a message in place, got abridge's summary
      // quoting them whole.
      const piCompaction = pi.records().findLast((r) => r.type === 'compaction');
      expect(piCompaction).toBeDefined();
      const summary = String(piCompaction!.summary);
      expect(summary).toContain('## Pinned messages (verbatim)');
      expect(summary).toContain(`- (user) ${first}`);
      expect(summary).toContain(`- (user) ${second}`);
      // The last request holds both, word for word.
      const last = pi.fake.requests.filter((r) => !isSummaryRequest(r.body.system)).at(-1)!;
      const sent = JSON.stringify(last.body.messages);
      expect(sent).toContain(JSON.stringify(first).slice(1, -1));
      expect(sent).toContain(JSON.stringify(second).slice(1, -1));
      // /unpin lets it go at the next compaction.
      await pi.session.prompt('/unpin PIN-TWO');
      expect(printed.at(-1)).toMatch(/1 message unpinned .*1 pinned in all/);
    } finally {
      await pi.close();
    }
  }, 120_000);

  it('bad summarizer options are errors when pi loads the extension, naming the option', () => {
    expect(() => abridgeExtension({ summarizer: 'fast' as never })).toThrow(
      "abridge pi extension: summarizer: expected 'extractive', 'llm' or a Summarizer (an object with a summarize() method), got \"fast\"",
    );
    expect(() =>
      abridgeExtension({
        summarizer: 'extractive',
        summaryClient: { model: 'm', contextWindow: 1000, complete: async () => '' },
      }),
    ).toThrow("abridge pi extension: summaryClient is the model of summarizer 'llm', but summarizer is 'extractive'");
  });

  const built = resolve(dirname(fileURLToPath(import.meta.url)), '../../dist/adapters/pi.js');
  it('pi loads the built `abridge-context/pi` as an extension (its default export), with its tools and command', async () => {
    const dir = mkdtempSync(join(root, 'load-'));
    const loader = new DefaultResourceLoader({
      cwd: dir,
      agentDir: dir,
      additionalExtensionPaths: [built],
      noSkills: true,
      noContextFiles: true,
    });
    await loader.reload();
    const { extensions, errors } = loader.getExtensions();
    expect(errors).toEqual([]);
    expect(extensions).toHaveLength(1);
    expect([...extensions[0]!.tools.keys()].sort()).toEqual(['compact_context', 'read_result']);
    expect([...extensions[0]!.commands.keys()]).toEqual(['pin', 'unpin', 'context']);
  });

  it('the built `abridge-context/pi`, loaded by pi, reaches pi’s model for /compact <instructions> (pi-ai resolved from pi)', async () => {
    const pi = await startPi('built', { path: built }, { files: 2, keepRecentTokens: 2_000 });
    try {
      for (let i = 0; i < 2; i++) await pi.session.prompt(`Read f${i}.txt and tell me what it says.`);
      await pi.session.compact(KEEP);
      const prompts = summaryPrompts(pi.fake);
      expect(prompts).toHaveLength(1);
      expect(prompts[0]).toContain(`follow it first:\n${KEEP}\n</instructions>`);
      const [compaction] = pi.records().filter((r) => r.type === 'compaction');
      expect(compaction!.summary).toBe(handOffFor(prompts[0]!, { mark: 'By pi’s model.' }));
      expect(compaction!.details).toMatchObject({ abridge: { summarizer: 'llm' } });
    } finally {
      await pi.close();
    }
  }, 120_000);
});
