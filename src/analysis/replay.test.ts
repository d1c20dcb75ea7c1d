import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import type { Session } from '../model/types.js';
import { codexPrefixTokens, harnessPrefixTokens } from '../tokens/defaults.js';
import { replaySession, summarizeReplay } from './replay.js';
import { readSession } from '../formats/read.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { basename } from 'node:path';

let clock = 0;
const rec = (type: string, payload: unknown) => ({
  timestamp: new Date(Date.UTC(2030, 0, 2) + 1000 * clock++).toISOString(),
  type,
  payload,
});
const parse = (records: unknown[]): Session =>
  parseSession(records.map((r) => JSON.stringify(r)).join('\n') + '\n', { format: 'codex', source: 'fixture.jsonl' });
const meta = (cliVersion: string) =>
  rec('session_meta', {
    id: 'sess-0001',
    timestamp: '2030-01-02T03:00:00.000Z',
    cwd: '/w',
    originator: 'codex_cli_rs',
    cli_version: cliVersion,
    model_provider: 'openai',
    base_instructions: { text: 'You are a test agent.' },
  });
const msg = (role: string, type: string, text: string) =>
  rec('response_item', { type: 'message', role, content: [{ type, text }] });
function tokenCount(input: number, cached: number, output: number, reasoning: number) {
  const last = {
    input_tokens: input,
    cached_input_tokens: cached,
    output_tokens: output,
    reasoning_output_tokens: reasoning,
    total_tokens: input + output,
  };
  return rec('event_msg', {
    type: 'token_count',
    info: { total_token_usage: last, last_token_usage: last, model_context_window: 200_000 },
    rate_limits: null,
  });
}

describe('replay of Codex rollouts', () => {
  it('the tools Codex sends and does not record, by CLI version', () => {
    expect(codexPrefixTokens('0.124.0')).toBe(5100);
    expect(codexPrefixTokens('0.142.2')).toBe(3000);
    expect(codexPrefixTokens(undefined)).toBe(3000);
  });

  it('the prefix of the agents whose older versions do not record their system prompt: added only then', () => {
    const line = (r: unknown) => `${JSON.stringify(r)}\n`;
    const copilot = (withPrompt: boolean) =>
      parseSession(
        [
          { type: 'session.start', data: { sessionId: 's', version: 1, producer: 'copilot-agent' }, id: 'a' },
          ...(withPrompt ? [{ type: 'system.message', data: { role: 'system', content: 'You are…' }, id: 'b' }] : []),
          { type: 'user.message', data: { content: 'hi' }, id: 'c' },
        ]
          .map(line)
          .join(''),
        { format: 'copilot-cli' },
      );
    expect(harnessPrefixTokens(copilot(true))).toBe(4500);
    expect(harnessPrefixTokens(copilot(false))).toBe(4500 + 11000);
    const openhands = (withPrompt: boolean) =>
      parseSession(
        line({
          instance_id: 'x',
          history: [
            ...(withPrompt
              ? [{ id: 0, source: 'agent', action: 'system', args: { content: 'You are OpenHands.' }, message: '' }]
              : []),
            { id: 1, source: 'user', action: 'message', args: { content: 'Fix it.' }, message: 'Fix it.' },
          ],
        }),
        { format: 'openhands' },
      );
    expect(harnessPrefixTokens(openhands(true))).toBe(0);
    expect(harnessPrefixTokens(openhands(false))).toBe(3500);
    expect(harnessPrefixTokens(parse([meta('0.124.0')]))).toBe(5100);
  });

  it('replay counts what Codex sent: a long output predicts the prompt of its truncated form', () => {
    const long = Array.from({ length: 6000 }, (_, i) => `line ${i}: ${'word '.repeat(6)}`).join('\n');
    const session = (policy: unknown) =>
      parse([
        meta('0.140.0'),
        rec('turn_context', { cwd: '/w', model: 'gpt-5.4', ...(policy ? { truncation_policy: policy } : {}) }),
        msg('user', 'input_text', 'list the files'),
        rec('response_item', { type: 'function_call', name: 'exec_command', arguments: '{"cmd":"ls"}', call_id: 'c1' }),
        tokenCount(5000, 0, 20, 0),
        rec('response_item', { type: 'function_call_output', call_id: 'c1', output: long }),
        rec('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] }),
        tokenCount(9000, 0, 5, 0),
      ]);
    const cut = replaySession(session({ mode: 'bytes', limit: 2000 }));
    const whole = replaySession(session({ mode: 'tokens', limit: 100_000 }));
    expect(cut).toHaveLength(2);
    // 2,400 bytes of the output are counted instead of ~250,000.
    expect(whole[1]!.predicted - cut[1]!.predicted).toBeGreaterThan(40_000);
    expect(cut[1]!.predicted - cut[0]!.reported).toBeLessThan(1500);
  });

  it('the first request of a rollout carries the tools of its Codex version', () => {
    const first = (version: string) =>
      replaySession(
        parse([
          meta(version),
          rec('turn_context', { cwd: '/w', model: 'gpt-5.4' }),
          msg('user', 'input_text', 'hello'),
          rec('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] }),
          tokenCount(4000, 0, 2, 0),
        ]),
      )[0]!;
    expect(first('0.124.0').predicted - first('0.142.2').predicted).toBe(5100 - 3000);
    expect(first('0.142.2').anchored).toBe(false);
  });

  it.skipIf(!corpusAvailable())(
    'every Codex rollout of the corpus: prediction p90 within 5% of what was billed',
    async () => {
      const files = corpusFiles('codex');
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) {
        const requests = replaySession(await readSession(f));
        expect(requests.length, basename(f)).toBeGreaterThan(0);
        expect(summarizeReplay(requests).gpt!.predicted.p90, basename(f)).toBeLessThanOrEqual(0.05);
      }
    },
  );
});
