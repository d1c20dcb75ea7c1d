import { describe, expect, it } from 'vitest';
import { checkInvariants } from '../compaction/invariants.js';
import { activeView } from '../model/view.js';
import type { Message } from '../model/types.js';
import { writeSession } from '../formats/write.js';
import { parseSession } from '../formats/read.js';
import { ContextManager } from './context-manager.js';
import { mergeConfig, DEFAULT_CONFIG } from './config.js';

const output = (i: number) => Array.from({ length: 120 }, (_, k) => `src/mod${i}/file${k}.ts:${k + 1}: const value${k} = compute(${k}, "step ${i}");`).join('\n');

function turn(cm: ContextManager, i: number, promptTokens: number): void {
  const call: Message = { role: 'assistant', parts: [{ type: 'text', text: `Step ${i}: reading module ${i}.` }, { type: 'tool-call', id: `call_${i}`, name: 'bash', arguments: { command: `grep -rn value src/mod${i}` } }] };
  cm.recordResponse(call, { input: 3, output: 40, cacheRead: Math.max(0, promptTokens - 200), cacheWrite: 197 });
  cm.append({ role: 'tool', parts: [{ type: 'tool-result', callId: `call_${i}`, toolName: 'bash', isError: i % 7 === 0, content: [{ type: 'text', text: output(i) }] }] });
}

describe('ContextManager', () => {
  it('warns once, compacts at the compact level to the target, and keeps the whole history', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 40_000, reserveTokens: 4000, prefixTokens: 1000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', config, now: () => new Date(0) });
    const events: string[] = [];
    cm.on('context-warning', () => events.push('warning'));
    cm.on('auto-compacting', () => events.push('auto-compacting'));
    cm.on('compaction-complete', (r) => events.push(`complete ${r.before > r.after}`));
    cm.on('context-blocked', () => events.push('blocked'));
    cm.append({ role: 'user', parts: [{ type: 'text', text: 'Find every use of value in src/ and list the modules. Never edit tests.' }] });
    let compactions = 0;
    for (let i = 0; i < 40; i++) {
      const prepared = await cm.prepare();
      if (prepared.compaction) {
        compactions++;
        expect(prepared.snapshot.used).toBeLessThanOrEqual(prepared.snapshot.marks.compact);
      }
      expect(prepared.snapshot.used).toBeLessThan(prepared.snapshot.effective);
      expect(checkInvariants(activeView(cm.session))).toEqual([]);
      turn(cm, i, prepared.snapshot.used);
    }
    expect(compactions).toBeGreaterThan(0);
    expect(events.filter((e) => e === 'warning').length).toBeLessThanOrEqual(compactions + 1);
    expect(events).toContain('auto-compacting');
    expect(events).toContain('complete true');
    expect(events).not.toContain('blocked');
    // Nothing deleted: 1 user message + 40 × (response + result) + markers.
    expect(cm.session.entries.filter((e) => e.kind === 'message')).toHaveLength(81);
    // The session can be written as a pi transcript and read back with the same view.
    const back = parseSession(writeSession(cm.session));
    expect(activeView(back).map((v) => v.message.role)).toEqual(activeView(cm.session).map((v) => v.message.role));
  });

  it('gives the agent read_result and compact_context tools that work on its context', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 200_000, prefixTokens: 1000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', config });
    cm.append({ role: 'user', parts: [{ type: 'text', text: 'Survey the modules.' }] });
    for (let i = 0; i < 12; i++) turn(cm, i, 1000 + i * 3000);
    const [readResult, compactContext] = await cm.tools();
    expect(readResult!.name).toBe('read_result');
    const line = await compactContext!.run({});
    expect(line).toMatch(/^Compacted the context: [\d,]+ → [\d,]+ tokens/);
    const cleared = activeView(cm.session)
      .flatMap((v) => v.message.parts)
      .flatMap((p) => (p.type === 'tool-result' ? p.content : []))
      .map((c) => (c.type === 'text' ? c.text : ''))
      .find((t) => t.includes('read_result'));
    const ref = cleared?.match(/"ref_id": "(r_[0-9a-f]{16})"/)?.[1];
    expect(ref).toBeDefined();
    const text = await readResult!.run({ ref_id: ref, offset: 0, limit: 2 });
    expect(text).toContain('src/mod');
  });
});

describe('ContextManager: a shared result store', () => {
  it("is seen through the session's view: one session's agent cannot read another's refs", async () => {
    const { MemoryResultStore } = await import('../store/memory-result-store.js');
    const shared = new MemoryResultStore();
    const a = new ContextManager({ model: 'claude-sonnet-4-5', store: shared });
    const b = new ContextManager({ model: 'claude-sonnet-4-5', store: shared });
    const { refId } = await a.store.put('tool output of session A\n');
    const readA = (await a.tools()).find((t) => t.name === 'read_result')!;
    const readB = (await b.tools()).find((t) => t.name === 'read_result')!;
    expect(await readA.run({ ref_id: refId })).toBe(`[ref ${refId} · line 0 of 1 · end]\ntool output of session A\n`);
    expect(await readB.run({ ref_id: refId })).toMatch(/^Error: No stored result with ref_id "r_[0-9a-f]{16}" in this session's stored results\./);
  });
});
