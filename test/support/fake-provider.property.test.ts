/**
 * Invariants of the fake provider's bill over random conversations: the parts of a bill add up to the prompt, growing a
 * conversation never bills less, resending a request reads what its breakpoints wrote, and a valid conversation is
 * never refused while a conversation with one tool result removed always is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAnthropic } from './fake-provider/anthropic.js';
import { AnthropicCache, OpenAICache, TokenCounter } from './fake-provider/billing.js';
import { parseChat } from './fake-provider/openai-chat.js';
import { RefusalError, type WireEnv } from './fake-provider/wire.js';

const RUNS = Number(process.env.ABRIDGE_PROPERTY_RUNS ?? 100);
const anthropicHeaders = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
const env = (ratio: number): WireEnv => ({ options: { window: 10_000_000 }, counter: new TokenCounter(ratio) });
const tools = [
  {
    name: 'bash',
    description: 'Run a command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];

const word = fc.constantFrom(
  'router',
  'cache',
  'order',
  'failed',
  'test',
  'src/db/pool.ts',
  '{"a":1}',
  'é',
  '🙂',
  '\n',
  'x'.repeat(40),
);
const text = fc.array(word, { minLength: 1, maxLength: 60 }).map((ws) => ws.join(' ').trim() || 'x');
const turn = fc.record({
  say: text,
  command: text,
  result: fc.array(text, { minLength: 1, maxLength: 30 }).map((t) => t.join('\n')),
});
const conversation = fc.record({
  system: fc.array(text, { minLength: 1, maxLength: 80 }).map((t) => t.join(' ')),
  turns: fc.array(turn, { minLength: 1, maxLength: 8 }),
});

function anthropicMessages(turns: { say: string; command: string; result: string }[]): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [{ role: 'user', content: 'Fix the failing test.' }];
  turns.forEach((t, i) => {
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: t.say },
        { type: 'tool_use', id: `toolu_${i}`, name: 'bash', input: { command: t.command } },
      ],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: t.result }] });
  });
  return messages;
}

function withBreakpointOnLast(messages: Record<string, unknown>[]): Record<string, unknown>[] {
  const copy = structuredClone(messages);
  const last = copy.at(-1)!;
  const blocks =
    typeof last.content === 'string'
      ? [{ type: 'text', text: last.content }]
      : (last.content as Record<string, unknown>[]);
  blocks.at(-1)!.cache_control = { type: 'ephemeral' };
  last.content = blocks;
  return copy;
}

describe('fake provider bill (property)', () => {
  it('Anthropic: parts add up, growth never bills less, a resent request reads what it wrote', () => {
    fc.assert(
      fc.property(conversation, fc.double({ min: 1, max: 1.5, noNaN: true }), ({ system, turns }, ratio) => {
        const cache = new AnthropicCache(1024);
        let previous = 0;
        for (let n = 0; n <= turns.length; n++) {
          const body = {
            model: 'm',
            max_tokens: 100,
            tools,
            system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }],
            messages: withBreakpointOnLast(anthropicMessages(turns.slice(0, n))),
          };
          const parsed = parseAnthropic(body, anthropicHeaders, env(ratio));
          const total = parsed.segments.reduce((s, x) => s + x.tokens, 0);
          expect(total).toBeGreaterThan(previous);
          previous = total;
          const first = cache.evaluate(parsed.segments);
          expect(first.read + first.write + first.uncached).toBe(total);
          expect(Math.min(first.read, first.write, first.uncached)).toBeGreaterThanOrEqual(0);
          first.commit();
          const again = cache.evaluate(parsed.segments);
          // Everything up to the last breakpoint (the last block) was written if it reached the minimum.
          if (total >= 1024) expect(again).toMatchObject({ read: total, write: 0, uncached: 0 });
          else expect(again.read).toBe(first.read);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('Anthropic: a valid conversation is accepted; removing one tool result is refused', () => {
    fc.assert(
      fc.property(conversation, fc.nat(), ({ system, turns }, k) => {
        const messages = anthropicMessages(turns);
        parseAnthropic({ model: 'm', max_tokens: 10, tools, system, messages }, anthropicHeaders, env(1.15));
        const drop = 2 + 2 * (k % turns.length); // a user message carrying a tool_result
        const broken = [...messages.slice(0, drop), ...messages.slice(drop + 1)];
        expect(() =>
          parseAnthropic({ model: 'm', max_tokens: 10, tools, system, messages: broken }, anthropicHeaders, env(1.15)),
        ).toThrow(RefusalError);
      }),
      { numRuns: RUNS },
    );
  });

  it('OpenAI Chat: cached tokens are 0 or 1,024 + k·128, never above the common prefix', () => {
    fc.assert(
      fc.property(conversation, ({ system, turns }) => {
        const cache = new OpenAICache();
        const messages: Record<string, unknown>[] = [
          { role: 'system', content: system },
          { role: 'user', content: 'Fix it.' },
        ];
        let lastPrompt = 0;
        for (const [i, t] of turns.entries()) {
          const parsed = parseChat({ model: 'm', messages }, { authorization: 'Bearer k' }, env(1));
          const outcome = cache.evaluate(parsed.segments);
          expect(outcome.read === 0 || (outcome.read >= 1024 && (outcome.read - 1024) % 128 === 0)).toBe(true);
          // The previous prompt is a prefix of this one except its 3-token reply priming.
          expect(outcome.read).toBeLessThanOrEqual(Math.max(0, lastPrompt - 3));
          outcome.commit();
          lastPrompt = outcome.total;
          messages.push({
            role: 'assistant',
            content: t.say,
            tool_calls: [
              {
                id: `call_${i}`,
                type: 'function',
                function: { name: 'bash', arguments: JSON.stringify({ command: t.command }) },
              },
            ],
          });
          messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: t.result });
        }
      }),
      { numRuns: RUNS },
    );
  });
});
