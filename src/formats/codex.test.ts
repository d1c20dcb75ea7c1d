import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Entry, Message, Part, Session, ToolResultPart, Usage } from '../model/types.js';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { codexFormat } from './codex.js';
import { codexSentOutput, codexTruncationPolicy } from '../tokens/sent.js';
import { detectFormat, sampleSource } from './detect.js';
import { parseSession, readSession } from './read.js';
import { activeMessages } from '../model/view.js';

// ---------------------------------------------------------------------------------------------------------------------
// Synthetic fixtures

const T0 = Date.parse('2030-01-02T03:04:05.000Z');
let clock = 0;
function rec(type: string, payload: unknown): Record<string, unknown> {
  return { timestamp: new Date(T0 + 1000 * clock++).toISOString(), type, payload };
}
function jsonl(records: unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + '\n';
}
function parse(records: unknown[]): Session {
  return parseSession(jsonl(records), { format: 'codex', source: 'fixture.jsonl' });
}
function tokenCount(input: number, cached: number, output: number, reasoning: number, window = 200_000) {
  const last = {
    input_tokens: input,
    cached_input_tokens: cached,
    output_tokens: output,
    reasoning_output_tokens: reasoning,
    total_tokens: input + output,
  };
  return rec('event_msg', {
    type: 'token_count',
    info: { total_token_usage: last, last_token_usage: last, model_context_window: window },
    rate_limits: null,
  });
}
const meta = () =>
  rec('session_meta', {
    id: 'sess-0001',
    timestamp: '2030-01-02T03:00:00.000Z',
    cwd: '/work/demo',
    originator: 'codex_cli_rs',
    cli_version: '0.0.1',
    model_provider: 'openai',
    base_instructions: { text: 'You are a test agent.' },
  });
const turn = (model: string) =>
  rec('turn_context', { cwd: '/work/demo', approval_policy: 'never', model, effort: 'low', summary: 'auto' });
const msg = (role: string, type: string, text: string) =>
  rec('response_item', { type: 'message', role, content: [{ type, text }] });

function messages(s: Session): Message[] {
  return s.entries.flatMap((e) => (e.message ? [e.message] : []));
}
function parts<T extends Part['type']>(s: Session, type: T): Extract<Part, { type: T }>[] {
  return messages(s).flatMap((m) => m.parts.filter((p): p is Extract<Part, { type: T }> => p.type === type));
}

describe('codex reader: record types', () => {
  it('reads the session header with its base instructions as a system message', () => {
    const s = parse([meta(), turn('model-a')]);
    expect(s.format).toBe('codex');
    expect(s.info).toEqual({ id: 'sess-0001', cwd: '/work/demo', startedAt: Date.parse('2030-01-02T03:00:00.000Z') });
    const header = s.entries[0]!;
    expect(header.kind).toBe('header');
    expect(header.sourceType).toBe('session_meta');
    expect(header.message).toMatchObject({ role: 'system', parts: [{ type: 'text', text: 'You are a test agent.' }] });
    expect(s.problems).toEqual([]);
  });

  it('turns turn_context into a model change only when the model changes', () => {
    const s = parse([meta(), turn('model-a'), turn('model-a'), turn('model-b')]);
    expect(s.entries.slice(1).map((e) => [e.kind, e.model])).toEqual([
      ['model-change', { provider: 'openai', id: 'model-a' }],
      ['event', undefined],
      ['model-change', { provider: 'openai', id: 'model-b' }],
    ]);
  });

  it('reads messages: developer is system, content parts, images; UI echo events are not messages', () => {
    const png = 'iVBORw0KGgo=';
    const s = parse([
      meta(),
      turn('model-a'),
      msg('developer', 'input_text', '<permissions>sandbox</permissions>'),
      msg('user', 'input_text', '<environment_context>\n  <cwd>/work/demo</cwd>\n</environment_context>'),
      rec('response_item', {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'what is in this picture?' },
          { type: 'input_image', image_url: `data:image/png;base64,${png}` },
        ],
      }),
      rec('event_msg', { type: 'user_message', message: 'what is in this picture?', images: [] }),
      msg('assistant', 'output_text', 'A small square.'),
      rec('event_msg', { type: 'agent_message', message: 'A small square.' }),
    ]);
    const ms = messages(s);
    expect(ms.map((m) => m.role)).toEqual(['system', 'system', 'user', 'user', 'assistant']);
    expect(ms[1]!.parts).toEqual([{ type: 'text', text: '<permissions>sandbox</permissions>' }]);
    expect(ms[2]!.synthetic).toBe(true);
    expect(ms[3]!.synthetic).toBeUndefined();
    expect(ms[3]!.parts).toEqual([
      { type: 'text', text: 'what is in this picture?' },
      { type: 'image', mediaType: 'image/png', byteSize: 8, data: 'iVBORw0KGgo=' },
    ]);
    expect(ms[4]).toMatchObject({
      role: 'assistant',
      model: 'model-a',
      provider: 'openai',
      parts: [{ type: 'text', text: 'A small square.' }],
    });
    const echoes = s.entries.filter(
      (e) => e.sourceType === 'event_msg/user_message' || e.sourceType === 'event_msg/agent_message',
    );
    expect(echoes.map((e) => [e.kind, e.message])).toEqual([
      ['event', undefined],
      ['event', undefined],
    ]);
  });

  it('reads reasoning: summary text, encrypted content as signature, redacted when only encrypted', () => {
    const s = parse([
      meta(),
      turn('model-a'),
      rec('response_item', {
        type: 'reasoning',
        summary: [
          { type: 'summary_text', text: 'First.' },
          { type: 'summary_text', text: 'Second.' },
        ],
        encrypted_content: 'gAAA-opaque',
      }),
      rec('response_item', { type: 'reasoning', summary: [], encrypted_content: 'gAAB-opaque' }),
      rec('response_item', { type: 'reasoning', summary: [] }),
    ]);
    expect(parts(s, 'thinking')).toEqual([
      { type: 'thinking', text: 'First.\n\nSecond.', signature: 'gAAA-opaque' },
      { type: 'thinking', text: '', signature: 'gAAB-opaque', redacted: true },
      { type: 'thinking', text: '' },
    ]);
    expect(messages(s).filter((m) => m.role === 'assistant')).toHaveLength(3);
  });

  it('reads tool calls and their outputs in every output shape', () => {
    const s = parse([
      meta(),
      turn('model-a'),
      rec('response_item', {
        type: 'function_call',
        id: 'fc_1',
        name: 'exec_command',
        arguments: '{"cmd":"false"}',
        call_id: 'call_1',
      }),
      rec('response_item', {
        type: 'function_call_output',
        call_id: 'call_1',
        output:
          'Chunk ID: ab12cd\nWall time: 0.01 seconds\nProcess exited with code 2\nOriginal token count: 1\nOutput:\nboom\n',
      }),
      rec('response_item', {
        type: 'custom_tool_call',
        call_id: 'call_2',
        name: 'apply_patch',
        input: '*** Begin Patch\n*** End Patch',
      }),
      rec('response_item', {
        type: 'custom_tool_call_output',
        call_id: 'call_2',
        output: JSON.stringify({ output: 'Done!', metadata: { exit_code: 0, duration_seconds: 0 } }),
      }),
      rec('response_item', { type: 'function_call', name: 'shell', arguments: 'not json', call_id: 'call_3' }),
      rec('response_item', {
        type: 'function_call_output',
        call_id: 'call_3',
        output: JSON.stringify({ output: 'nope', metadata: { exit_code: 127 } }),
      }),
      rec('response_item', { type: 'function_call', name: 'view', arguments: '', call_id: 'call_4' }),
      rec('response_item', {
        type: 'function_call_output',
        call_id: 'call_4',
        output: { content: 'denied', success: false },
      }),
      rec('response_item', {
        type: 'function_call_output',
        call_id: 'call_5',
        output: 'Exit code: 0\nWall time: 0 seconds\nOutput:\nProcess exited with code 9\n',
      }),
      rec('response_item', {
        type: 'web_search_call',
        status: 'completed',
        action: { type: 'search', query: 'weather' },
      }),
    ]);
    expect(parts(s, 'tool-call')).toEqual([
      { type: 'tool-call', id: 'call_1', name: 'exec_command', arguments: { cmd: 'false' } },
      { type: 'tool-call', id: 'call_2', name: 'apply_patch', arguments: '*** Begin Patch\n*** End Patch' },
      { type: 'tool-call', id: 'call_3', name: 'shell', arguments: 'not json' },
      { type: 'tool-call', id: 'call_4', name: 'view', arguments: {} },
      {
        type: 'tool-call',
        id: 'codex-web-search-11',
        name: 'web_search',
        arguments: { type: 'search', query: 'weather' },
      },
    ]);
    const results = parts(s, 'tool-result');
    expect(results.map((r) => [r.callId, r.toolName, r.isError, r.content])).toEqual([
      [
        'call_1',
        'exec_command',
        true,
        [
          {
            type: 'text',
            text: 'Chunk ID: ab12cd\nWall time: 0.01 seconds\nProcess exited with code 2\nOriginal token count: 1\nOutput:\nboom\n',
          },
        ],
      ],
      ['call_2', 'apply_patch', false, [{ type: 'text', text: 'Done!' }]],
      ['call_3', 'shell', true, [{ type: 'text', text: 'nope' }]],
      ['call_4', 'view', true, [{ type: 'text', text: 'denied' }]],
      // The exit code in the command's own output is not the header's.
      [
        'call_5',
        undefined,
        false,
        [{ type: 'text', text: 'Exit code: 0\nWall time: 0 seconds\nOutput:\nProcess exited with code 9\n' }],
      ],
    ]);
    expect(
      messages(s)
        .filter((m) => m.role === 'tool')
        .every((m) => m.parts.length === 1),
    ).toBe(true);
  });

  it('normalizes token_count usage and puts it on the latest assistant message since the previous report', () => {
    const s = parse([
      meta(),
      turn('model-a'),
      rec('event_msg', { type: 'token_count', info: null, rate_limits: { primary: null } }),
      msg('user', 'input_text', 'hi'),
      rec('response_item', { type: 'reasoning', summary: [], encrypted_content: 'x' }),
      msg('assistant', 'output_text', 'hello'),
      tokenCount(1200, 1000, 30, 10, 272_000),
      tokenCount(1200, 1000, 30, 10, 272_000), // repeated report: no new assistant message
      turn('model-b'),
      rec('response_item', { type: 'function_call', name: 'exec_command', arguments: '{}', call_id: 'c1' }),
      rec('response_item', { type: 'function_call_output', call_id: 'c1', output: 'ok' }),
      tokenCount(50, 80, 5, 0), // cached above input: input clamps at 0
    ]);
    const assistants = messages(s).filter((m) => m.role === 'assistant');
    expect(assistants.map((m) => [m.model, m.usage])).toEqual([
      ['model-a', undefined],
      ['model-a', { input: 200, cacheRead: 1000, cacheWrite: 0, output: 30, reasoning: 10, contextWindow: 272_000 }],
      ['model-b', { input: 0, cacheRead: 80, cacheWrite: 0, output: 5, reasoning: 0, contextWindow: 200_000 }],
    ]);
    const reports = s.entries.filter((e) => e.sourceType === 'event_msg/token_count');
    expect(reports.map((e) => [e.kind, e.usage?.input])).toEqual([
      ['event', undefined],
      ['event', 200],
      ['event', 200],
      ['event', 0],
    ]);
  });

  it('reads compactions as markers: a replacement history as the messages after it, a summary alone as a synthetic message', () => {
    const s = parse([
      meta(),
      turn('model-a'),
      msg('user', 'input_text', 'first task'),
      msg('assistant', 'output_text', 'done'),
      tokenCount(900, 0, 100, 0),
      rec('compacted', {
        message: '',
        replacement_history: [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'first task' }] },
          { type: 'compaction', encrypted_content: 'opaque' },
        ],
      }),
      rec('event_msg', { type: 'context_compacted' }),
      msg('user', 'input_text', 'second task'),
      rec('compacted', { message: 'The user asked for two tasks.' }),
    ]);
    const compactions = s.entries.filter((e) => e.kind === 'compaction');
    expect(compactions.map((e) => e.index)).toEqual([5, 10]);
    const [a, b] = compactions.map((e) => e.compaction!);
    expect(a).toEqual({
      number: 1,
      summary: '[user]\nfirst task\n\n[encrypted compaction summary]',
      source: 'codex',
      tokensBefore: 1000,
      archived: { fromEntry: 1, toEntry: 4 },
    });
    expect(b).toMatchObject({
      number: 2,
      summary: 'The user asked for two tasks.',
      source: 'codex',
      archived: { fromEntry: 5, toEntry: 9 },
    });
    // The replacement history is what Codex sends after the first: its items, from the same record; the marker itself
    // carries no message.
    expect(compactions[0]!.message).toBeUndefined();
    expect(s.entries.slice(6, 8).map((e) => [e.fromSameRecord, e.message])).toEqual([
      [true, { role: 'user', parts: [{ type: 'text', text: 'first task' }], timestamp: compactions[0]!.timestamp }],
      [
        true,
        {
          role: 'assistant',
          model: 'model-a',
          provider: 'openai',
          parts: [
            {
              type: 'compaction',
              marker: {
                number: 1,
                summary: '',
                source: 'codex',
                native: { provider: 'openai', item: { type: 'compaction', encrypted_content: 'opaque' } },
              },
            },
          ],
          timestamp: compactions[0]!.timestamp,
        },
      ],
    ]);
    // A summary alone (older Codex) stands for the history as a synthetic user message.
    expect(compactions[1]!.message).toEqual({
      role: 'user',
      parts: [{ type: 'compaction', marker: b }],
      synthetic: true,
      timestamp: compactions[1]!.timestamp,
    });
    expect(s.entries[8]).toMatchObject({ kind: 'event', sourceType: 'event_msg/context_compacted' });
    expect(s.entries[8]!.message).toBeUndefined();
    // What the model sees after the first compaction and before the second: exactly its replacement history, then on.
    const before = parse([
      meta(),
      msg('user', 'input_text', 'first task'),
      msg('assistant', 'output_text', 'done'),
      rec('compacted', {
        message: 'x',
        replacement_history: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'kept' }] }],
      }),
      msg('user', 'input_text', 'next'),
    ]);
    expect(
      activeMessages(before).map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : p.type)).join('')),
    ).toEqual(['kept', 'next']);
  });

  it('keeps unknown record and item types with a problem, and every record as raw with its timestamp', () => {
    const records = [
      meta(),
      turn('model-a'),
      rec('future_record', { x: 1 }),
      rec('response_item', { type: 'hologram', data: 1 }),
      { type: 'event_msg', payload: 'not an object' },
    ];
    const s = parse(records);
    expect(s.entries.map((e) => e.kind)).toEqual(['header', 'model-change', 'unknown', 'unknown', 'unknown']);
    expect(s.problems.map((p) => [p.line, p.kind])).toEqual([
      [3, 'unknown-entry-type'],
      [4, 'unknown-entry-type'],
      [5, 'invalid-entry'],
    ]);
    expect(s.problems[0]!.message).toContain('future_record');
    expect(s.entries.map((e) => e.raw)).toEqual(records);
    expect(s.entries.map((e) => e.line)).toEqual([1, 2, 3, 4, 5]);
    expect(
      s.entries
        .slice(0, 4)
        .every((e, i) => e.timestamp === Date.parse((records[i] as { timestamp: string }).timestamp)),
    ).toBe(true);
  });
});

describe('codex detection', () => {
  it('claims rollout records with high confidence and nothing else', () => {
    expect(codexFormat.detect({ head: '', records: [meta(), turn('m'), msg('user', 'input_text', 'x')] })).toBe(0.95);
    expect(
      codexFormat.detect({
        head: '',
        records: [
          { type: 'session', id: 'x', timestamp: 't', cwd: '/' },
          { type: 'message', message: { role: 'user' } },
        ],
      }),
    ).toBe(0);
    expect(codexFormat.detect({ head: '', records: [{ type: 'response_item', payload: 'text' }] })).toBe(0);
    expect(codexFormat.detect({ head: '{}', document: { history: [] } })).toBe(0);
    const text = jsonl([meta(), turn('m'), msg('user', 'input_text', 'x')]);
    const detection = detectFormat(sampleSource(text, true));
    expect(detection.kind === 'supported' && detection.format.id).toBe('codex');
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Real transcripts

interface RawRecord {
  type?: string;
  payload?: Record<string, unknown>;
}

function rawRecords(file: string): RawRecord[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as RawRecord);
}

const ASSISTANT_ITEMS = new Set([
  'reasoning',
  'function_call',
  'custom_tool_call',
  'web_search_call',
  'local_shell_call',
]);
function isAssistantItem(r: RawRecord): boolean {
  const p = r.payload;
  if (r.type !== 'response_item' || !p) return false;
  return p.type === 'message' ? p.role === 'assistant' : ASSISTANT_ITEMS.has(String(p.type));
}

/** What the raw file implies, computed without the reader. */
function expectations(records: RawRecord[]) {
  const usages: Usage[] = [];
  let assistantSince = false;
  const calls = new Set<string>();
  let results = 0;
  let orphans = 0;
  let errors = 0;
  let model: string | undefined;
  const models: (string | undefined)[] = [];
  for (const r of records) {
    const p = r.payload ?? {};
    if (r.type === 'turn_context') model = p.model as string;
    if (isAssistantItem(r)) {
      assistantSince = true;
      models.push(model);
    }
    if (r.type === 'response_item' && (p.type === 'function_call' || p.type === 'custom_tool_call'))
      calls.add(p.call_id as string);
    if (r.type === 'response_item' && (p.type === 'function_call_output' || p.type === 'custom_tool_call_output')) {
      results++;
      if (!calls.has(p.call_id as string)) orphans++;
      const out = String(p.output);
      const headerEnd = out.indexOf('\nOutput:\n');
      const header = headerEnd >= 0 ? out.slice(0, headerEnd) : out.slice(0, 500);
      const code = /(?:^|\n)(?:Process exited with code|Exit code:) (\d+)(?:\n|$)/.exec(header)?.[1];
      if (code !== undefined && code !== '0') errors++;
    }
    if (r.type === 'event_msg' && p.type === 'token_count' && p.info) {
      const info = p.info as { last_token_usage: Record<string, number>; model_context_window?: number };
      if (assistantSince) {
        const u = info.last_token_usage;
        usages.push({
          input: u.input_tokens! - u.cached_input_tokens!,
          output: u.output_tokens!,
          cacheRead: u.cached_input_tokens!,
          cacheWrite: 0,
          reasoning: u.reasoning_output_tokens!,
          contextWindow: info.model_context_window!,
        });
      }
      assistantSince = false;
    }
  }
  const compacted = records.filter((r) => r.type === 'compacted').length;
  return { usages, results, orphans, errors, models, compacted };
}

function orphanResults(s: Session): ToolResultPart[] {
  const seen = new Set<string>();
  const orphans: ToolResultPart[] = [];
  for (const m of messages(s)) {
    for (const p of m.parts) {
      if (p.type === 'tool-call') seen.add(p.id);
      if (p.type === 'tool-result' && !seen.has(p.callId)) orphans.push(p);
    }
  }
  return orphans;
}

const codexFiles = corpusFiles('codex');

describe.skipIf(!corpusAvailable())(
  corpusAvailable() ? 'codex corpus' : `codex corpus (skipped: no corpus at ${CORPUS_DIR})`,
  () => {
    it('has files to read', () => {
      expect(codexFiles.length).toBeGreaterThan(0);
    });

    it.each(codexFiles.map((f) => [basename(f), f]))('%s', async (_name, file) => {
      const raw = rawRecords(file);
      const s = await readSession(file);
      expect(s.format).toBe('codex');
      expect(s.problems).toEqual([]);
      // One entry a record, and the messages a compaction's replacement history holds after it (from the same record).
      const records = s.entries.filter((e) => !e.fromSameRecord);
      expect(records).toHaveLength(raw.length);
      expect(records.every((e: Entry, i) => e.raw !== undefined && e.line === i + 1)).toBe(true);

      const meta = raw.find((r) => r.type === 'session_meta')!.payload!;
      expect(s.info.id).toBe(meta.id);
      expect(s.info.cwd).toBe(meta.cwd);
      expect(s.entries[0]!.message?.role).toBe('system');

      const want = expectations(raw);
      // The records' own messages (a compaction's replacement history restates earlier ones).
      const own: Session = { ...s, entries: records };
      const assistants = messages(own).filter((m) => m.role === 'assistant');
      // Usage: one assistant message per token report that followed assistant output, with the report's numbers.
      expect(assistants.filter((m) => m.usage).map((m) => m.usage)).toEqual(want.usages);
      expect(assistants.map((m) => m.model)).toEqual(want.models);

      // Tool results: one per output record, each paired with an earlier call unless the raw file says otherwise.
      const results = parts(own, 'tool-result');
      expect(results).toHaveLength(want.results);
      expect(orphanResults(s)).toHaveLength(want.orphans);
      expect(results.filter((r) => r.isError)).toHaveLength(want.errors);

      // user_message / agent_message events never double the response items.
      const rawUsers = raw.filter(
        (r) => r.type === 'response_item' && r.payload?.type === 'message' && r.payload.role === 'user',
      ).length;
      expect(
        messages(own).filter((m) => m.role === 'user' && !m.parts.some((p) => p.type === 'compaction')),
      ).toHaveLength(rawUsers);

      const markers = s.entries.filter((e) => e.compaction).map((e) => e.compaction!);
      expect(markers.map((m) => m.number)).toEqual(Array.from({ length: want.compacted }, (_, i) => i + 1));
      for (const m of markers) {
        expect(m.source).toBe('codex');
        expect(m.summary.length).toBeGreaterThan(0);
        expect(m.archived).toBeDefined();
      }
    });

    it('finds what the corpus is known to hold', async () => {
      let usages = 0;
      let orphans = 0;
      let errors = 0;
      let compactions = 0;
      for (const f of codexFiles) {
        const s = await readSession(f);
        usages += messages(s).filter((m) => m.usage).length;
        orphans += orphanResults(s).length;
        errors += parts(s, 'tool-result').filter((r) => r.isError).length;
        compactions += s.entries.filter((e) => e.kind === 'compaction').length;
      }
      // Guards against expectations that are trivially met (e.g. a reader that finds no usage and a raw scan that agrees).
      expect(usages).toBeGreaterThan(100);
      expect(errors).toBeGreaterThan(0);
      expect(compactions).toBeGreaterThan(0);
      expect(orphans).toBe(0);
    });
  },
);

describe('older Codex rollouts (no envelope)', () => {
  const lines = [
    {
      id: '0a1b2c3d-0000-4000-8000-000000000001',
      timestamp: '2025-05-20T10:00:00.000Z',
      instructions: 'You are Codex.',
      git: { branch: 'main' },
    },
    { record_type: 'state' },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files in src.' }] },
    { type: 'function_call', name: 'shell', arguments: '{"command":["ls","src"]}', call_id: 'call_1' },
    {
      type: 'function_call_output',
      call_id: 'call_1',
      output: '{"output":"a.ts\\nb.ts\\n","metadata":{"exit_code":1}}',
    },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'src has a.ts and b.ts.' }] },
  ];
  const s = parseSession(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);

  it('are detected and read like the enveloped ones', () => {
    expect(s.format).toBe('codex');
    expect(s.problems).toEqual([]);
    expect(s.info).toMatchObject({
      id: '0a1b2c3d-0000-4000-8000-000000000001',
      startedAt: Date.parse('2025-05-20T10:00:00.000Z'),
    });
    expect(s.entries.map((e) => e.message?.role ?? e.kind)).toEqual([
      'system',
      'event',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(s.entries[3]!.message!.parts[0]).toMatchObject({
      type: 'tool-call',
      id: 'call_1',
      name: 'shell',
      arguments: { command: ['ls', 'src'] },
    });
    expect(s.entries[4]!.message!.parts[0]).toMatchObject({ type: 'tool-result', callId: 'call_1', isError: true });
  });

  it('keep each original record as its raw', () => {
    expect(s.entries.map((e) => e.raw)).toEqual(lines);
  });
});

describe('Codex truncation of tool outputs in the history it sends', () => {
  const tokens = { mode: 'tokens', limit: 10_000 } as const;
  it('keeps an output within the policy × 1.2 as it is', () => {
    const text = 'x'.repeat(48_000);
    expect(codexSentOutput([text], tokens)).toEqual([text]);
    expect(codexSentOutput(['y'.repeat(12_000)], { mode: 'bytes', limit: 10_000 })).toEqual(['y'.repeat(12_000)]);
  });

  it('cuts the middle of a longer one: half the byte budget at each end, a marker between', () => {
    const text = `${'h'.repeat(30_000)}${'m'.repeat(10_000)}${'t'.repeat(30_000)}`;
    const [sent] = codexSentOutput([text], tokens);
    expect(sent!.startsWith('h'.repeat(24_000))).toBe(true);
    expect(sent!.endsWith('t'.repeat(24_000))).toBe(true);
    expect(sent).toContain(`…${Math.ceil(22_000 / 4)} tokens truncated…`);
    expect(sent!.length).toBe(48_000 + `…5500 tokens truncated…`.length);
    const [bytes] = codexSentOutput(['é'.repeat(10_000)], { mode: 'bytes', limit: 10_000 });
    // 2-byte characters: 6,000 bytes each side, no character split.
    expect(bytes).toBe(`${'é'.repeat(3000)}…4000 chars truncated…${'é'.repeat(3000)}`);
  });

  it('shares one budget among the text items of an output, in order', () => {
    const sent = codexSentOutput(['a'.repeat(40_000), 'b'.repeat(20_000), 'c'.repeat(100)], tokens);
    expect(sent[0]).toBe('a'.repeat(40_000));
    expect(Buffer.byteLength(sent[1]!.replace(/…\d+ tokens truncated…/, ''))).toBe(8_000);
    expect(sent[2]).toBe('');
  });

  it('takes the policy a rollout records in turn_context, else the one of the model', () => {
    const withPolicy = parse([
      meta(),
      rec('turn_context', { cwd: '/w', model: 'gpt-5.3-codex', truncation_policy: { mode: 'bytes', limit: 2000 } }),
    ]);
    expect(withPolicy.extra).toMatchObject({ cliVersion: '0.0.1', truncationPolicy: { mode: 'bytes', limit: 2000 } });
    expect(codexTruncationPolicy(withPolicy, 'gpt-5.4')).toEqual({ mode: 'bytes', limit: 2000 });
    const without = parse([meta(), turn('gpt-5.4')]);
    expect(codexTruncationPolicy(without, 'gpt-5.4')).toEqual({ mode: 'tokens', limit: 10_000 });
    expect(codexTruncationPolicy(without, 'some-local-model')).toEqual({ mode: 'bytes', limit: 10_000 });
  });
});
