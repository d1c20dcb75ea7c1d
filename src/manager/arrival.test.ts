// Room-aware arrival (issue 36, item 4): a tool result is shortened as it arrives only when it would take more than half
// of the free room (or over half the effective window), and `read_result` is offered once there is something to read.
import { describe, expect, it } from 'vitest';
import type { Message } from '../model/types.js';
import { ContextManager } from './context-manager.js';

/** A tool turn whose result is `bytes` of varied log lines. */
function toolTurn(id: string, bytes: number): [Message, Message] {
  // Varied, as build output is (a repeated word would count far fewer tokens than its bytes suggest).
  const lines = Array.from(
    { length: Math.ceil(bytes / 60) },
    (_, i) => `src/${id}/module${i % 37}/file${i}.ts:${(i * 7) % 500}:3 warning: unused variable 'x${i}' (no-unused)`,
  );
  return [
    { role: 'assistant', parts: [{ type: 'tool-call', id, name: 'bash', arguments: { command: `cat ${id}.log` } }] },
    {
      role: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: id,
          toolName: 'bash',
          content: [{ type: 'text', text: lines.join('\n').slice(0, bytes) }],
          isError: false,
        },
      ],
    },
  ];
}

const textOf = (m: Message | undefined) =>
  m?.parts
    .flatMap((p) => (p.type === 'tool-result' ? p.content.map((c) => (c.type === 'text' ? c.text : '')) : []))
    .join('') ?? '';

async function manager(...fills: number[]) {
  const cm = new ContextManager({
    model: 'claude-sonnet-4-6',
    provider: 'anthropic',
    contextWindow: 40_000,
    maxOutputTokens: 4_096,
    system: 'You fix bugs.',
  });
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Fix the failing test.' }] });
  for (const [i, bytes] of fills.entries()) {
    const [call, result] = toolTurn(`fill${i}`, bytes);
    await cm.recordResponse(call);
    await cm.append(result);
  }
  return cm;
}

const toolNames = (request: unknown) => ((request as { tools?: { name: string }[] }).tools ?? []).map((t) => t.name);

describe('room-aware arrival', () => {
  it('a 33 KB result in an almost empty 40K window is kept whole, and read_result is not offered (nothing to read)', async () => {
    const cm = await manager();
    const [call, result] = toolTurn('a', 33_000);
    await cm.recordResponse(call);
    await cm.append(result);
    const view = (await cm.prepare()).messages;
    expect(textOf(view.at(-1))).toBe(textOf(result));
    expect(toolNames((await cm.prepare()).request)).not.toContain('read_result');
    expect(toolNames((await cm.prepare()).request)).toContain('compact_context');
  });

  it('the same result with the window two-thirds full is shortened to what fits, offloaded whole, and read_result is offered from then on', async () => {
    // Two 24 KB results, each kept whole as it came (the first into an empty window, the second into what was left).
    const cm = await manager(24_000, 24_000);
    expect(cm.session.entries.filter((e) => e.message?.role === 'tool').map((e) => textOf(e.message).length)).toEqual([
      textOf(toolTurn('fill0', 24_000)[1]).length,
      textOf(toolTurn('fill1', 24_000)[1]).length,
    ]);
    expect(toolNames((await cm.prepare()).request)).not.toContain('read_result');
    const [call, result] = toolTurn('b', 33_000);
    await cm.recordResponse(call);
    await cm.append(result);
    const last = cm.session.entries.at(-1)!.message!;
    const kept = textOf(last);
    expect(kept.length).toBeLessThan(textOf(result).length * 0.9);
    expect(kept.length).toBeGreaterThan(2_000);
    expect(kept).toMatch(/read_result/);
    expect((await cm.results.list()).map((r) => r.chars)).toContain(textOf(result).length);
    expect(toolNames((await cm.prepare()).request)).toContain('read_result');
  });

  it('a result over half the effective window is offloaded even into an empty window', async () => {
    const cm = await manager();
    const [call, result] = toolTurn('c', 200_000);
    await cm.recordResponse(call);
    await cm.append(result);
    const kept = textOf(cm.session.entries.at(-1)!.message!);
    expect(kept.length).toBeLessThan(100_000);
    expect((await cm.results.list()).map((r) => r.chars)).toContain(textOf(result).length);
  });

  it('offloadResultsOver still fixes the limit', async () => {
    const cm = new ContextManager({ model: 'claude-sonnet-4-6', contextWindow: 40_000, offloadResultsOver: 1_000 });
    const [call, result] = toolTurn('d', 33_000);
    await cm.recordResponse(call);
    await cm.append(result);
    expect(textOf(cm.session.entries.at(-1)!.message!).length).toBeLessThan(6_000);
  });
});
