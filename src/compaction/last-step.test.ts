import { describe, expect, it } from 'vitest';
import type { Message } from '../model/types.js';
import type { ViewItem } from '../model/view.js';
import { TokenCounter } from '../tokens/counter.js';
import { cutLastStep } from './last-step.js';
import { MemoryResultStore } from './memory-result-store.js';

const counter = new TokenCounter({ family: 'claude' });
const size = (v: readonly ViewItem[]) => v.reduce((n, it) => n + counter.message(it.message), 0);
const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i}: output`).join('\n');

const call: Message = {
  role: 'assistant',
  parts: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: { command: 'make' } }],
};
const result = (text: string): Message => ({
  role: 'tool',
  parts: [{ type: 'tool-result', callId: 'c1', toolName: 'bash', content: [{ type: 'text', text }], isError: false }],
});
const answer = (text: string, thinking?: string): Message => ({
  role: 'assistant',
  parts: [
    ...(thinking ? [{ type: 'thinking' as const, text: thinking, signature: 'sig' }] : []),
    { type: 'text', text },
  ],
});

/** Cuts a view whose last step is its entry 1 (a person's message before it). */
const cutAnswer = (view: ViewItem[], target: number, report: (note: string) => void = () => {}) =>
  cutLastStep(view, { counter, target, size, entries: new Set([1]), store: new MemoryResultStore(), report });

describe('cutLastStep', () => {
  it('cuts a result already cut short from its whole text, and stores the whole text', async () => {
    const whole = lines(600, 'make');
    const excerpt = `${lines(100, 'make')}\n[… earlier excerpt …]`;
    const view: ViewItem[] = [
      { entry: 0, message: call },
      { entry: 1, message: result(excerpt), edit: 'compressed' },
      { entry: 2, message: answer('Done.') },
    ];
    const store = new MemoryResultStore();
    const target = size(view) - counter.text(excerpt) / 2;
    const out = await cutLastStep(view, {
      counter,
      target,
      size,
      entries: new Set([0, 1, 2]),
      store,
      report: () => {},
      original: (e) => (e === 1 ? result(whole) : undefined),
    });
    expect(size(out)).toBeLessThanOrEqual(target);
    const text = JSON.stringify(out[1]!.message);
    expect(text).toContain('make line 599');
    const ref = /ref_id\\": \\"(r_[0-9a-f]+)/.exec(text)![1]!;
    expect((await store.read(ref, { limit: 2000 })).text).toBe(whole);
    expect(out[0]!.message).toBe(call);
  });

  it("drops an ended turn's thinking before cutting any text, and leaves entries it was not given", async () => {
    const view: ViewItem[] = [
      { entry: 0, message: { role: 'user', parts: [{ type: 'text', text: 'Sum it up.' }] } },
      { entry: 1, message: answer(lines(40, 'answer'), 'Thinking it over. '.repeat(60)) },
    ];
    const notes: string[] = [];
    const target = size(view) - 100;
    const out = await cutAnswer(view, target, (n) => notes.push(n));
    expect(out[0]!.message).toBe(view[0]!.message);
    expect(out[1]!.message.parts.map((p) => p.type)).toEqual(['text']);
    expect(JSON.stringify(out[1]!.message)).toContain('answer line 39');
    expect(JSON.stringify(out[1]!.message)).toContain('answer line 20');
    expect(notes).toEqual([
      'the thinking of the last turn was dropped to fit the budget (providers do not read it again)',
    ]);
  });

  it('keeps the thinking while a tool-use loop is under way', async () => {
    const view: ViewItem[] = [
      { entry: 0, message: answer(lines(40, 'plan'), 'Thinking it over. '.repeat(60)) },
      { entry: 1, message: call },
      { entry: 2, message: result(lines(300, 'make')) },
    ];
    const out = await cutLastStep(view, {
      counter,
      target: size(view) - 200,
      size,
      entries: new Set([0, 1, 2]),
      store: new MemoryResultStore(),
      report: () => {},
    });
    expect(out[0]!.message.parts.some((p) => p.type === 'thinking')).toBe(true);
    expect(out[2]!.edit).toBe('compressed');
  });

  it('keeps as many first and last lines as the room holds, down to a few, rather than a reference alone', async () => {
    const view: ViewItem[] = [
      { entry: 0, message: { role: 'user', parts: [{ type: 'text', text: 'Explain it.' }] } },
      { entry: 1, message: answer(lines(60, 'answer')) },
    ];
    const whole = counter.message(view[1]!.message);
    // Room for a third of the answer and a little more: under the old least (120 tokens, aimed at with a 60-token
    // margin for the marker) it became a reference alone; now it keeps what fits.
    for (const room of [Math.round(whole * 0.3), Math.round(whole * 0.45)]) {
      const target = size(view) - whole + room;
      const out = await cutAnswer(view, target);
      expect(size(out)).toBeLessThanOrEqual(target);
      const text = JSON.stringify(out[1]!.message);
      expect(text).toContain('answer line 0');
      expect(text).toContain('answer line 59');
      // Most of the room used: what is kept is within 30 tokens of it.
      expect(counter.message(out[1]!.message)).toBeGreaterThan(room - 30);
    }
  });
});
