import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '../model/types.js';
import { TokenCounter } from '../tokens/counter.js';
import {
  ANTHROPIC_COMPACTION_MIN_TRIGGER,
  anthropicCompactionEdit,
  ClearingPlanner,
  holdsAnthropicCompaction,
  NATIVE_KEEP_TOOL_USES,
  responsesCompaction,
} from './native.js';

const counter = new TokenCounter({ family: 'claude' });

/** A view of `sizes.length` tool uses, each result `sizes[i]` words long. */
function view(sizes: readonly number[]): Message[] {
  const out: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'Fix the build.' }] }];
  sizes.forEach((n, i) => {
    out.push({ role: 'assistant', parts: [{ type: 'tool-call', id: `c${i}`, name: 'bash', arguments: { i } }] });
    out.push({
      role: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: `c${i}`,
          toolName: 'bash',
          content: [{ type: 'text', text: `result ${i} `.repeat(n) }],
          isError: false,
        },
      ],
    });
  });
  return out;
}

const resultTokens = (v: Message[]) => v.filter((m) => m.role === 'tool').map((m) => counter.part(m.parts[0]!));

describe('ClearingPlanner', () => {
  it('asks nothing while the prompt is under the compact mark, and no edit at all when no tool use can be cleared', () => {
    const p = new ClearingPlanner(counter);
    const few = view([500, 500, 500]);
    // (Its floor — the least clearing could leave — is the whole prompt: nothing may be cleared.)
    expect(p.plan(few, { sent: 90_000, compactAt: 80_000, target: 60_000, ratio: 1 })).toEqual({
      cleared: 0,
      freed: 0,
      floor: 90_000,
    });
  });

  it("its floor is the bill with every tool use cleared but the last 3: what a provider's compaction is weighed against", () => {
    const v = view(Array.from({ length: 6 }, () => 1000));
    const sizes = resultTokens(v);
    const plan = new ClearingPlanner(counter).plan(v, { sent: 50_000, compactAt: 60_000, target: 40_000, ratio: 1 });
    expect(plan.cleared).toBe(0);
    const freedOfFirst3 = sizes.slice(0, 3).reduce((a, b) => a + b, 0) - 3 * counter.text('[Tool result cleared]');
    expect(plan.floor).toBe(50_000 - freedOfFirst3);
  });

  it('moves the boundary to the target when the billed prompt reaches the compact mark, keeping the last uses', () => {
    const v = view(Array.from({ length: 12 }, () => 2000));
    const sizes = resultTokens(v);
    const total = sizes.reduce((a, b) => a + b, 0);
    const sent = 20_000 + total;
    const p = new ClearingPlanner(counter);
    // Under the mark: a safety net only (its trigger at the mark), nothing predicted cleared.
    const under = p.plan(v, { sent, compactAt: sent + 1, target: sent - 10_000, ratio: 1 });
    expect(under.cleared).toBe(0);
    expect(under.edit).toMatchObject({ trigger: { type: 'input_tokens', value: sent + 1 } });
    // At the mark: the fewest leading uses that bring the bill to the target.
    const target = sent - 3 * sizes[0]! + 100;
    const at = p.plan(v, { sent, compactAt: sent, target, ratio: 1 });
    expect(at.cleared).toBe(3);
    expect(sent - at.freed).toBeLessThanOrEqual(target);
    expect(at.edit).toMatchObject({ keep: { type: 'tool_uses', value: 12 - 3 } });
    // The same view, the bill under the mark again: the same boundary (the server clears what it cleared: the cache
    // holds), even with more room.
    const again = p.plan(v, { sent, compactAt: sent + 10_000, target, ratio: 1 });
    expect(again.cleared).toBe(3);
  });

  it("starts from the server's own figure for the boundary, and scales its count of the next uses by it", () => {
    const v = view(Array.from({ length: 10 }, () => 1000));
    const sizes = resultTokens(v);
    // abridge's own count of clearing the first 3 and the first 5 uses (a planner that has heard nothing).
    const fresh = (k: number) =>
      new ClearingPlanner(counter).plan(v, {
        sent: 50_000,
        compactAt: 40_000,
        target: 50_000 - (k - 0.5) * sizes[0]!,
        ratio: 1,
      });
    const three = fresh(3);
    const five = fresh(5);
    expect([three.cleared, five.cleared]).toEqual([3, 5]);
    const p = new ClearingPlanner(counter);
    p.plan(v, { sent: 50_000, compactAt: 40_000, target: 50_000 - 2.5 * sizes[0]!, ratio: 1 });
    // The server cleared 3 uses and says they freed 10% more than abridge counted.
    const server = Math.round(three.freed * 1.1);
    p.observe([{ type: 'clear_tool_uses_20250919', clearedToolUses: 3, clearedInputTokens: server }]);
    expect(p.plan(v, { sent: 50_000, compactAt: 60_000, target: 30_000, ratio: 1 }).freed).toBe(server);
    const more = p.plan(v, { sent: 50_000, compactAt: 40_000, target: 50_000 - 4.5 * sizes[0]!, ratio: 1 });
    expect(more.cleared).toBe(5);
    expect(more.freed).toBeCloseTo(server + (server / three.freed) * (five.freed - three.freed), 6);
  });

  it('property: within one view the boundary never moves back, never reaches the last kept uses, and a move reaches the target unless it cleared all it may', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 10, max: 3000 }), { minLength: 0, maxLength: 30 }),
        fc.array(fc.record({ grow: fc.integer({ min: 0, max: 5 }), sent: fc.integer({ min: 1000, max: 200_000 }) }), {
          minLength: 1,
          maxLength: 8,
        }),
        (sizes, turns) => {
          const all = view(sizes);
          const p = new ClearingPlanner(counter);
          const grown: Message[] = all.slice(0, 1);
          let uses = 0;
          let last = 0;
          for (const t of turns) {
            for (let k = 0; k < t.grow && uses < sizes.length; k++, uses++)
              grown.push(all[1 + 2 * uses]!, all[2 + 2 * uses]!);
            const compactAt = 100_000;
            const target = 60_000;
            const plan = p.plan(grown, { sent: t.sent, compactAt, target, ratio: 1.1 });
            const most = Math.max(0, uses - NATIVE_KEEP_TOOL_USES);
            expect(plan.cleared).toBeGreaterThanOrEqual(Math.min(last, most));
            expect(plan.cleared).toBeLessThanOrEqual(most);
            if (plan.cleared > last) expect(t.sent - plan.freed <= target || plan.cleared === most).toBe(true);
            if (plan.cleared > 0) expect(plan.edit).toMatchObject({ keep: { value: uses - plan.cleared } });
            last = plan.cleared;
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('forgets the boundary when the view is replaced (a compaction)', () => {
    const v = view(Array.from({ length: 8 }, () => 1000));
    const p = new ClearingPlanner(counter);
    expect(p.plan(v, { sent: 50_000, compactAt: 40_000, target: 20_000, ratio: 1 }).cleared).toBeGreaterThan(0);
    expect(p.plan(v.slice(0, 5), { sent: 5_000, compactAt: 40_000, target: 20_000, ratio: 1 }).cleared).toBe(0);
  });
});

describe('compaction edits', () => {
  it("Anthropic's fires under the predicted prompt, never under its least trigger", () => {
    expect(anthropicCompactionEdit(ANTHROPIC_COMPACTION_MIN_TRIGGER - 1)).toBeUndefined();
    expect(anthropicCompactionEdit(54_000)).toEqual({
      type: 'compact_20260112',
      trigger: { type: 'input_tokens', value: ANTHROPIC_COMPACTION_MIN_TRIGGER },
    });
    expect(anthropicCompactionEdit(100_000)).toMatchObject({ trigger: { value: 90_000 } });
  });

  it('the Responses entry: at the compact mark as a safety net, under the prompt to compact now', () => {
    expect(responsesCompaction(30_000, 32_000, false)).toEqual({ type: 'compaction', compact_threshold: 32_000 });
    expect(responsesCompaction(30_000, 32_000, true)).toEqual({ type: 'compaction', compact_threshold: 27_000 });
  });

  it('a view holding an Anthropic compaction block needs its beta', () => {
    const block: Message = {
      role: 'assistant',
      parts: [
        {
          type: 'compaction',
          marker: { number: 1, summary: 's', source: 'anthropic', native: { provider: 'anthropic', item: {} } },
        },
      ],
    };
    expect(holdsAnthropicCompaction([block])).toBe(true);
    expect(holdsAnthropicCompaction(view([10]))).toBe(false);
  });
});
