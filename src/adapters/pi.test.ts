/**
 * abridge inside a real pi agent (pi's SDK, headless, no network): 44 turns, each reading a 20–40 KB file, in a
 * 32,000-token window, against a loopback Anthropic server that refuses what Anthropic refuses. Nothing is refused;
 * abridge's compactions are in pi's session file; pi resumes from that file exactly what abridge reads in it.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
import { startFakeAnthropic, type AnthropicRequest, type ModelAnswer } from '../../test/support/anthropic-sse.js';
import { comparable, firstDifference, piResume } from '../../test/support/pi-loader.js';
import { abridgeExtension, PI_CONTEXT_TYPE, type AbridgePiOptions } from './pi.js';

const WINDOW = 32_000;
const MAX_OUTPUT = 4_096;
const TURNS = 44;

const root = mkdtempSync(join(tmpdir(), 'abridge-pi-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The scripted model: asked to read a file, it calls `read`; given the result, it says it read it. */
function answer(body: AnthropicRequest): ModelAnswer {
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

describe('abridge as a pi extension', () => {
  it(`keeps a ${TURNS}-turn pi agent inside a ${WINDOW.toLocaleString('en-US')}-token window; pi resumes what abridge reads`, async () => {
    const cwd = join(root, 'work');
    const agentDir = join(root, 'agent');
    mkdirSync(cwd, { recursive: true });
    mkdirSync(agentDir, { recursive: true });
    for (let i = 0; i < TURNS; i++) {
      const bytes = 20_000 + ((i * 7919) % 20_000);
      const line = (k: number) =>
        `f${i} attempt ${k}: retry after ${(k * 37) % 250} ms, status ${k % 7 === 0 ? 'ECONNRESET' : 'ok'} `.padEnd(
          99,
          '.',
        );
      writeFileSync(
        join(cwd, `f${i}.txt`),
        Array.from({ length: Math.ceil(bytes / 100) }, (_, k) => line(k)).join('\n'),
      );
    }
    const fake = await startFakeAnthropic({ window: WINDOW, answer });
    const previousHome = process.env.HOME;
    process.env.HOME = root;
    try {
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
        compaction: { enabled: true, reserveTokens: 8_192, keepRecentTokens: 8_000 },
        retry: { enabled: false },
      });
      const calls: Parameters<NonNullable<AbridgePiOptions['onCall']>>[0][] = [];
      const printed: string[] = [];
      const loader = new DefaultResourceLoader({
        cwd,
        agentDir,
        settingsManager,
        noSkills: true,
        noPromptTemplates: true,
        noThemes: true,
        noContextFiles: true,
        extensionFactories: [abridgeExtension({ onCall: (c) => calls.push(c), print: (t) => printed.push(t) })],
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
        sessionManager: SessionManager.create(cwd, join(root, 'sessions')),
        settingsManager,
      });
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
          const ref = JSON.stringify(fake.requests.at(-1)!.body.messages).match(/r_[0-9a-f]{8,}/);
          expect(ref).not.toBeNull();
          await session.prompt(`Read back ${ref![0]}.`);
        }
      }
      await session.prompt('/context');
      const file = session.sessionFile!;
      session.dispose();

      expect(compactedByHand).toBe(true);
      // Nothing refused: every request fit (prompt + max_tokens ≤ window) and kept its tool pairs.
      expect(fake.requests.filter((r) => r.refused).map((r) => r.refused)).toEqual([]);
      expect(fake.requests.length).toBeGreaterThanOrEqual(2 * TURNS + 4);
      expect(Math.max(...fake.requests.map((r) => r.promptTokens + r.body.max_tokens))).toBeLessThanOrEqual(WINDOW);
      // The tools and the command are pi's.
      expect((fake.requests.at(-1)!.body.tools as { name: string }[]).map((t) => t.name)).toEqual(
        expect.arrayContaining(['read_result', 'compact_context']),
      );
      expect(printed.join('\n')).toContain('Recent turns');
      const results = fake.requests.flatMap((r) =>
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
      const errors = calls
        .map((c, i) => Math.abs(c.snapshot.used - fake.requests[i]!.promptTokens) / fake.requests[i]!.promptTokens)
        .sort((a, b) => a - b);
      const median = errors[Math.floor(errors.length / 2)]!;
      console.log(
        `abridge in pi: ${fake.requests.length} requests, 0 refused, ${calls.filter((c) => c.compaction?.marker).length} per-call compactions, predicted vs counted prompt: median error ${(median * 100).toFixed(1)}%, largest prompt + max_tokens ${Math.max(...fake.requests.map((r) => r.promptTokens + r.body.max_tokens))} of ${WINDOW}`,
      );
      expect(median).toBeLessThan(0.1);

      // In pi's file: pi's compaction records carrying abridge's summary, and abridge's per-call records.
      const text = readFileSync(file, 'utf8');
      const records = text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const compactions = records.filter((r) => r.type === 'compaction');
      expect(compactions.length).toBeGreaterThan(0);
      for (const c of compactions) expect(c.details).toMatchObject({ abridge: { source: 'abridge', layout: 'pi' } });
      expect(records.filter((r) => r.type === 'custom' && r.customType === PI_CONTEXT_TYPE).length).toBeGreaterThan(0);
      // pi resumes from the file exactly what abridge reads in it.
      const resumed = piResume(text).sent;
      const abridgeView = activeMessages(parseSession(text));
      expect(firstDifference(resumed, abridgeView)).toBe(-1);
      expect(comparable(resumed).length).toBeGreaterThan(0);
    } finally {
      process.env.HOME = previousHome;
      await fake.close();
    }
  }, 300_000);

  const built = resolve(dirname(fileURLToPath(import.meta.url)), '../../dist/adapters/pi.js');
  it.skipIf(!existsSync(built))(
    'pi loads the built `abridge/pi` as an extension (its default export), with its tools and command',
    async () => {
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
      expect([...extensions[0]!.commands.keys()]).toEqual(['context']);
    },
  );
});
