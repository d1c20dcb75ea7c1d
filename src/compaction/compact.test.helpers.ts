import { parseSession } from "../formats/read.js"; import type { Session, Message, ToolResultPart, ToolCallPart } from "../model/types.js"; import { PiTranscript } from "../test-support/random-session.js"; import { compact } from "./compact.js"; import { argumentsText } from "../model/parts.js"; import type { ViewItem } from "../model/view.js";
// Synthetic sessions

const NOW = () => new Date(Date.UTC(2026, 0, 2));
const TASK = 'Fix the flaky retry in src/net/retry.ts. Never change the public API of src/net/index.ts.';

/** `n` numbered lines of about 40 characters: `tag line 0001: …`. */
export function lines(n: number, tag: string): string {
  return Array.from({ length: n }, (_, i) => `${tag} line ${String(i + 1).padStart(4, '0')}: value ${i * 7} ok`).join('\n');
}

export const build = (t: PiTranscript): Session => parseSession(t.jsonl());

/** The task, then `steps` steps each with one call whose result is `resultLines` lines (tools alternate read / bash). */
export function toolSession(steps: number, resultLines = 60): { session: Session; outputs: Map<string, string> } {
  const t = new PiTranscript();
  t.user(TASK);
  const outputs = new Map<string, string>();
  for (let i = 0; i < steps; i++) {
    const bash = i % 2 === 1;
    const out = lines(resultLines, `out${i}`);
    const [id] = t.step({ text: `Step ${i}.`, calls: [bash ? { name: 'bash', args: { command: `npm test -- case${i}` }, result: out } : { name: 'read', args: { path: `src/file${i}.ts` }, result: out }] });
    outputs.set(id!, out);
  }
  return { session: build(t), outputs };
}

/** A session with evidence to summarize: instructions, paths, commands, errors, numbers; thinking in the last step. */
export function workSession(extraSteps = 8): Session {
  const t = new PiTranscript();
  t.user(TASK);
  t.step({ thinking: 'Start by reading the retry loop.', text: 'I will read the retry code first.', calls: [{ name: 'read', args: { path: 'src/net/retry.ts' }, result: lines(80, 'retry.ts') }] });
  t.step({ text: 'Let me run the failing test.', calls: [{ name: 'bash', args: { command: 'npx vitest run test/retry.test.ts' }, result: `FAIL test/retry.test.ts\nError: expected 3 retries, got 2\n${lines(40, 'vitest')}\nexit code 1`, isError: true }] });
  t.user('Please also keep the backoff under 250 ms; do not touch test/fixtures/slow.json.');
  t.step({ text: 'The root cause is an off-by-one in the attempt counter.', calls: [{ name: 'edit', args: { path: 'src/net/retry.ts', oldText: 'attempt < max', newText: 'attempt <= max' }, result: 'Edited src/net/retry.ts' }] });
  t.step({ calls: [{ name: 'bash', args: { command: 'npx vitest run test/retry.test.ts --reporter=dot' }, result: `${lines(60, 'dots')}\n12 tests passed` }] });
  for (let i = 0; i < extraSteps; i++) {
    const thinking = i === extraSteps - 1 ? { thinking: 'Last check before reporting.' } : {};
    t.step({ ...thinking, text: `Checking module ${i}.`, calls: [{ name: 'read', args: { path: `src/net/mod${i}.ts` }, result: lines(50, `mod${i}`) }] });
  }
  return build(t);
}

/** The context size compact() works with (provider tokens, prefix included). */
export async function sizeOf(session: Session, prefixTokens = 0): Promise<number> {
  return (await compact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [], prefixTokens })).beforeTokens;
}

export function textOf(m: Message): string {
  return m.parts
    .map((p) => {
      switch (p.type) {
        case 'text':
        case 'thinking':
          return p.text;
        case 'tool-call':
          return `${p.name} ${argumentsText(p.arguments)}`;
        case 'tool-result':
          return p.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
        case 'compaction':
          return p.marker.summary;
        default:
          return '';
      }
    })
    .join('\n');
}

const resultOf = (item: ViewItem): ToolResultPart => item.message.parts.find((p): p is ToolResultPart => p.type === 'tool-result')!;
const resultTextOf = (item: ViewItem): string => textOf({ role: 'tool', parts: [resultOf(item)] });
const toolItems = (view: readonly ViewItem[]) => view.filter((v) => v.message.role === 'tool');
const callOf = (view: readonly ViewItem[], id: string): ToolCallPart =>
  view.flatMap((v) => v.message.parts).find((p): p is ToolCallPart => p.type === 'tool-call' && p.id === id)!;

const REF = /"ref_id": "(r_[0-9a-f]{16})"/;
