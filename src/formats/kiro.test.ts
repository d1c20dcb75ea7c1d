import { describe, expect, it } from 'vitest';
import { activeMessages } from '../model/view.js';
import { detectFormat, sampleSource } from './detect.js';
import { inspectSession } from './inspect.js';
import { kiroFormat } from './kiro.js';
import { parseSession } from './read.js';

// Rows in the shape kiro-cli writes to ~/.kiro/sessions/cli/<id>.jsonl (see kiro.ts).
const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
const row = (kind: string, id: string, content: unknown[], extra: Record<string, unknown> = {}) => ({
  version: 'v1',
  kind,
  data: { message_id: id, content, ...extra },
});
const text = (data: string) => ({ kind: 'text', data });
const transcript = [
  row('Prompt', 'p1', [text('Why does the build fail?')], {
    meta: {
      timestamp: 1790109959,
      additionalContext: '--- CONTEXT ENTRY BEGIN ---\nbranch: main\n--- CONTEXT ENTRY END ---\n\n',
    },
  }),
  row('AssistantMessage', 'a1', [
    text(''),
    { kind: 'toolUse', data: { toolUseId: 'tooluse_1', name: 'shell', input: { command: 'npm run build' } } },
  ]),
  row(
    'ToolResults',
    'r1',
    [{ kind: 'toolResult', data: { toolUseId: 'tooluse_1', content: [text('error TS2322')], status: 'error' } }],
    { results: { tooluse_1: { tool: { kind: { BuiltIn: 'Shell' } }, result: { Error: 'exit 2' } } } },
  ),
  row('AssistantMessage', 'a2', [text('A type error in src/a.ts.')]),
];

describe('kiro format', () => {
  it('detects Kiro rows', () => {
    expect(kiroFormat.detect({ records: transcript, head: '' })).toBeGreaterThan(0.9);
    const d = detectFormat(sampleSource(jsonl(transcript), true));
    expect(d.kind === 'supported' && d.format.id).toBe('kiro');
    expect(kiroFormat.detect({ records: [{ kind: 'Prompt', data: 'x' }], head: '' })).toBe(0);
  });

  it("reads the hooks' context, the prompt, calls paired with results (errors flagged), replies", () => {
    const s = parseSession(jsonl(transcript));
    expect(s.problems).toEqual([]);
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool', 'assistant']);
    expect(view[0]!.synthetic).toBe(true);
    expect(view[1]!.parts).toEqual([{ type: 'text', text: 'Why does the build fail?' }]);
    expect(view[1]!.timestamp).toBe(1790109959000);
    expect(view[2]!.parts).toEqual([
      { type: 'tool-call', id: 'tooluse_1', name: 'shell', arguments: { command: 'npm run build' } },
    ]);
    expect(view[3]!.parts[0]).toMatchObject({ type: 'tool-result', callId: 'tooluse_1', isError: true });
    const report = inspectSession(s, 'kiro.jsonl', 1);
    expect(report.tools).toMatchObject({ calls: 1, results: 1, errors: 1 });
  });

  it('refuses bad rows with the line and what was expected', () => {
    const s = parseSession(
      jsonl([
        transcript[0],
        { version: 'v1', kind: 'Compaction', data: { message_id: 'c', content: [] } },
        { hello: 1 },
        row('Prompt', 'p2', 'x' as never),
      ]),
      { format: 'kiro' },
    );
    expect(s.problems.map((p) => p.line)).toEqual([2, 3, 4]);
    expect(s.problems[0]!.message).toMatch(/line 2: unknown Kiro row kind "Compaction"/);
    expect(s.problems[1]!.message).toMatch(/line 3: expected a Kiro session row/);
    expect(s.problems[2]!.message).toMatch(/line 4: .*"data\.content" is not a list/);
  });
});
