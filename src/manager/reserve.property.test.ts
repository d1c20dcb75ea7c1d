// The default reserve: with no max output given, a request asks for min(the model's maximum output, 32,000, half the
// window), so that no window of 16K or more makes prepare() throw before anything was said (issue 36: a 40K-window
// manager of a 128K-output model threw on its first prepare()).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ModelCatalog } from '../budget/catalog.js';
import type { Message } from '../model/types.js';
import { ContextManager } from './context-manager.js';

const MODELS = [
  'claude-opus-4-6',
  'claude-sonnet-4-6',
  'claude-haiku-4-5',
  'gpt-5.4',
  'gpt-4o',
  'gemini-2.5-pro',
  'a-model-nobody-knows',
];
const RUNS = Number(process.env.ABRIDGE_PROPERTY_RUNS ?? 40);

const toolTurn = (i: number, bytes: number): [Message, Message] => [
  {
    role: 'assistant',
    parts: [{ type: 'tool-call', id: `c${i}`, name: 'bash', arguments: { command: `cat part-${i}.log` } }],
  },
  {
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: `c${i}`,
        toolName: 'bash',
        content: [
          {
            type: 'text',
            text: Array.from({ length: Math.ceil(bytes / 40) }, (_, k) => `line ${i}.${k} ${'y'.repeat(28)}`).join(
              '\n',
            ),
          },
        ],
        isError: false,
      },
    ],
  },
];

describe('the default reserve', () => {
  it('no prepare() throws for a window of 16K or more when no max output is given, and the reserve is min(model max, 32,000, window / 2)', async () => {
    const catalog = new ModelCatalog();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 16_000, max: 2_000_000 }),
        fc.constantFrom(...MODELS),
        fc.constantFrom('anthropic' as const, 'openai-chat' as const, 'openai-responses' as const),
        fc.array(fc.integer({ min: 200, max: 60_000 }), { maxLength: 10 }),
        async (window, model, provider, outputs) => {
          const cm = new ContextManager({ model, provider, contextWindow: window, system: 'You fix bugs.' });
          const expected = Math.min(catalog.lookup(model).maxOutputTokens, 32_000, Math.floor(window / 2));
          await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Fix the failing test.' }] });
          for (let i = 0; i <= outputs.length; i++) {
            const turn = await cm.prepare();
            expect(turn.pressure.maxOutputTokens).toBe(expected);
            expect(turn.pressure.predicted + turn.pressure.maxOutputTokens).toBeLessThanOrEqual(window);
            const body = turn.request as Record<string, unknown>;
            const asked = body.max_tokens ?? body.max_completion_tokens ?? body.max_output_tokens;
            expect(asked).toBe(expected);
            if (i === outputs.length) break;
            const [call, result] = toolTurn(i, outputs[i]!);
            await cm.recordResponse(call);
            await cm.append(result);
          }
        },
      ),
      { numRuns: RUNS },
    );
  }, 120_000);

  it('a max output the caller gives is the reserve, whatever the window', async () => {
    const cm = new ContextManager({ model: 'claude-opus-4-6', contextWindow: 40_000, maxOutputTokens: 4_096 });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Hello' }] });
    expect((await cm.prepare()).pressure.maxOutputTokens).toBe(4_096);
    expect((await cm.prepare({ maxOutputTokens: 12_000 })).pressure.maxOutputTokens).toBe(12_000);
    // The catalog's 128K maximum output, a 40K window: half of it.
    const fresh = new ContextManager({ model: 'claude-opus-4-6', contextWindow: 40_000 });
    await fresh.append({ role: 'user', parts: [{ type: 'text', text: 'Hello' }] });
    expect((await fresh.prepare()).pressure.maxOutputTokens).toBe(20_000);
  });
});
