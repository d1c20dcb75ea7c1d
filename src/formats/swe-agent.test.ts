import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import type { Message, Part, Session } from '../model/types.js';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { detectFormat, sampleSource } from './detect.js';
import { parseSession, readSession } from './read.js';
import { sweAgentFormat } from './swe-agent.js';

function parse(doc: unknown): Session {
  return parseSession(JSON.stringify(doc), { format: 'swe-agent', source: 'fixture.traj' });
}
function messages(s: Session): Message[] {
  return s.entries.flatMap((e) => (e.message ? [e.message] : []));
}
function allParts(s: Session): Part[] {
  return messages(s).flatMap((m) => m.parts);
}

const stats = { instance_cost: 0.5, tokens_sent: 1234, tokens_received: 56, api_calls: 3 };

/** A function-calling run: tool_calls answered by tool messages. */
const functionCalling = {
  environment: 'main',
  trajectory: [{ action: 'ls', observation: 'a.py', thought: '', response: '', state: '{}' }],
  info: { exit_status: 'submitted', submission: 'diff', model_stats: stats },
  replay_config: JSON.stringify({
    agent: { model: { name: 'model-x' } },
    problem_statement: { id: 'demo__repo-42', text: 'Fix it' },
  }),
  history: [
    { role: 'system', content: 'You are an agent.', agent: 'main', message_type: 'system_prompt' },
    { role: 'user', content: [{ type: 'text', text: 'Fix the bug.' }], agent: 'main', message_type: 'observation' },
    {
      role: 'assistant',
      content: 'Look first.',
      thought: 'Look first.',
      action: 'ls',
      agent: 'main',
      message_type: 'action',
      tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
    },
    { role: 'tool', content: 'a.py', agent: 'main', message_type: 'observation', tool_call_ids: ['call_a'] },
    {
      role: 'assistant',
      content: '',
      action: 'submit',
      agent: 'main',
      message_type: 'action',
      tool_calls: [{ id: 'call_b', type: 'function', function: { name: 'submit', arguments: '{}' } }],
    },
    {
      role: 'tool',
      content: [{ type: 'text', text: 'diff' }],
      agent: 'main',
      message_type: 'observation',
      tool_call_ids: ['call_b'],
    },
  ],
};

/** An older run: actions parsed from text, observations as user messages, a demonstration. */
const actionBased = {
  environment: 'swe_main',
  trajectory: [],
  info: { exit_status: 'submitted', model_stats: stats },
  history: [
    { role: 'system', content: 'SETTING: a shell.', agent: 'primary' },
    { role: 'user', content: 'Here is a demonstration...', agent: 'primary', is_demo: true },
    { role: 'user', content: 'Solve the task.', agent: 'primary' },
    {
      role: 'assistant',
      content: 'List files.\n```\nls -la\n```',
      thought: 'List files.',
      action: 'ls -la\n',
      agent: 'primary',
    },
    { role: 'user', content: 'total 0', agent: 'primary' },
    { role: 'assistant', content: 'Done.\n```\nsubmit\n```', thought: 'Done.', action: 'submit\n', agent: 'primary' },
  ],
};

describe('swe-agent reader', () => {
  it('reads a function-calling trajectory: tool calls paired with tool messages', () => {
    const s = parse(functionCalling);
    expect(s.format).toBe('swe-agent');
    expect(s.problems).toEqual([]);
    expect(s.info).toEqual({ id: 'demo__repo-42' });
    expect(s.extra).toEqual({ modelStats: stats, exitStatus: 'submitted', environment: 'main' });
    expect(messages(s).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(messages(s)[2]).toEqual({
      role: 'assistant',
      model: 'model-x',
      parts: [
        { type: 'text', text: 'Look first.' },
        { type: 'tool-call', id: 'call_a', name: 'bash', arguments: { command: 'ls' } },
      ],
    });
    // Empty content gives no text part.
    expect(messages(s)[4]!.parts).toEqual([{ type: 'tool-call', id: 'call_b', name: 'submit', arguments: {} }]);
    expect(allParts(s).filter((p) => p.type === 'tool-result')).toEqual([
      {
        type: 'tool-result',
        callId: 'call_a',
        toolName: 'bash',
        content: [{ type: 'text', text: 'a.py' }],
        isError: false,
      },
      {
        type: 'tool-result',
        callId: 'call_b',
        toolName: 'submit',
        content: [{ type: 'text', text: 'diff' }],
        isError: false,
      },
    ]);
    expect(messages(s)[1]!.parts).toEqual([{ type: 'text', text: 'Fix the bug.' }]);
    expect(s.entries.map((e) => e.sourceType)).toEqual([
      'system_prompt',
      'observation',
      'action',
      'observation',
      'action',
      'observation',
    ]);
    expect(s.entries.map((e) => e.raw)).toEqual(functionCalling.history);
    expect(messages(s).every((m) => m.usage === undefined)).toBe(true);
  });

  it('reads an action-based trajectory: an answered action becomes a bash call and its observation the result', () => {
    const s = parse(actionBased);
    expect(s.problems).toEqual([]);
    expect(s.info).toEqual({});
    const ms = messages(s);
    expect(ms.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool', 'assistant']);
    expect(ms[1]!.synthetic).toBe(true);
    expect(ms[2]!.synthetic).toBeUndefined();
    expect(ms[3]!.parts).toEqual([
      { type: 'text', text: 'List files.\n```\nls -la\n```' },
      { type: 'tool-call', id: 'swe-3', name: 'bash', arguments: { command: 'ls -la\n' } },
    ]);
    expect(ms[4]!.parts).toEqual([
      {
        type: 'tool-result',
        callId: 'swe-3',
        toolName: 'bash',
        content: [{ type: 'text', text: 'total 0' }],
        isError: false,
      },
    ]);
    // The last action has no observation: it stays text, so no call is left without its result.
    expect(ms[5]!.parts).toEqual([{ type: 'text', text: 'Done.\n```\nsubmit\n```' }]);
    expect(ms[3]!.model).toBeUndefined();
  });

  it('gives the same ids on every read', () => {
    const a = allParts(parse(actionBased)).filter((p) => p.type === 'tool-call');
    const b = allParts(parse(actionBased)).filter((p) => p.type === 'tool-call');
    expect(a).toEqual(b);
  });

  it('does not pair an action with a following demonstration', () => {
    const s = parse({
      info: {},
      history: [
        { role: 'assistant', content: 'x', action: 'ls' },
        { role: 'user', content: 'demo', is_demo: true },
      ],
    });
    expect(messages(s).map((m) => [m.role, m.parts.map((p) => p.type)])).toEqual([
      ['assistant', ['text']],
      ['user', ['text']],
    ]);
  });

  it('keeps history items that are not objects or have an unknown role, with problems', () => {
    const s = parse({
      info: {},
      trajectory: [],
      history: [{ role: 'user', content: 'hi' }, 'stray text', 42, { role: 'narrator', content: 'x' }],
    });
    expect(s.entries.map((e) => e.kind)).toEqual(['message', 'unknown', 'unknown', 'unknown']);
    expect(s.entries.map((e) => e.raw)).toEqual([
      { role: 'user', content: 'hi' },
      'stray text',
      42,
      { role: 'narrator', content: 'x' },
    ]);
    expect(s.problems.map((p) => [p.line, p.kind])).toEqual([
      [2, 'not-an-object'],
      [3, 'not-an-object'],
      [4, 'unknown-entry-type'],
    ]);
    expect(s.problems[0]!.message).toContain('history[1]');
  });

  it('refuses a document that is not a trajectory', () => {
    expect(() => parse({ messages: [] })).toThrow(AbridgeError);
    expect(() => parse({ messages: [] })).toThrow(/"history" array/);
  });

  it('detects trajectories and nothing else', () => {
    expect(sweAgentFormat.detect({ head: '{', document: functionCalling })).toBe(0.95);
    expect(sweAgentFormat.detect({ head: '{', document: { history: [], trajectory: [] } })).toBe(0.95);
    expect(sweAgentFormat.detect({ head: '{', document: { history: [] } })).toBe(0);
    expect(sweAgentFormat.detect({ head: '{', document: { messages: [], info: {} } })).toBe(0);
    expect(sweAgentFormat.detect({ head: '{', records: [{ history: [], info: {} }] })).toBe(0);
    const text = JSON.stringify(actionBased, null, 2);
    const detection = detectFormat(sampleSource(text, true, () => text));
    expect(detection.kind === 'supported' && detection.format.id).toBe('swe-agent');
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Real trajectories

interface RawItem {
  role?: string;
  action?: string;
  is_demo?: boolean;
  tool_calls?: { id: string }[];
  tool_call_ids?: string[];
}

/** Tool results and orphans implied by the raw history, computed without the reader. */
function expectations(history: RawItem[]) {
  let results = 0;
  let orphans = 0;
  let calls = 0;
  const ids = new Set<string>();
  history.forEach((item, i) => {
    if (item.tool_calls?.length) {
      calls += item.tool_calls.length;
      for (const c of item.tool_calls) ids.add(c.id);
    } else if (item.role === 'assistant' && item.action?.trim()) {
      const next = history[i + 1];
      if (next?.role === 'user' && !next.is_demo) {
        calls++;
        results++;
      }
    }
    for (const id of item.tool_call_ids ?? []) {
      results++;
      if (!ids.has(id)) orphans++;
    }
  });
  return { calls, results, orphans };
}

const sweFiles = corpusFiles('swe-agent');

describe.skipIf(!corpusAvailable())(
  corpusAvailable() ? 'swe-agent corpus' : `swe-agent corpus (skipped: no corpus at ${CORPUS_DIR})`,
  () => {
    it('has files to read', () => {
      expect(sweFiles.length).toBeGreaterThan(0);
    });

    it.each(sweFiles.map((f) => [basename(f), f]))('%s', async (_name, file) => {
      const raw = JSON.parse(readFileSync(file, 'utf8')) as { history: RawItem[]; info: { model_stats: unknown } };
      const s = await readSession(file);
      expect(s.format).toBe('swe-agent');
      expect(s.problems).toEqual([]);
      expect(s.entries).toHaveLength(raw.history.length);
      expect(s.entries.map((e) => e.raw)).toEqual(raw.history);
      expect(s.extra?.modelStats).toEqual(raw.info.model_stats);

      const want = expectations(raw.history);
      const parts = allParts(s);
      expect(parts.filter((p) => p.type === 'tool-call')).toHaveLength(want.calls);
      expect(parts.filter((p) => p.type === 'tool-result')).toHaveLength(want.results);

      // Every result names a call made before it (ids may repeat in replayed runs, so the check is "seen before").
      const seen = new Set<string>();
      let orphans = 0;
      for (const p of parts) {
        if (p.type === 'tool-call') seen.add(p.id);
        if (p.type === 'tool-result' && !seen.has(p.callId)) orphans++;
      }
      expect(orphans).toBe(want.orphans);

      // The demonstration is the only synthetic message.
      expect(messages(s).filter((m) => m.synthetic)).toHaveLength(raw.history.filter((h) => h.is_demo).length);
    });

    it('reads the ids and pairs the corpus is known to hold', async () => {
      let results = 0;
      let orphans = 0;
      for (const f of sweFiles) {
        const s = await readSession(f);
        const parts = allParts(s);
        results += parts.filter((p) => p.type === 'tool-result').length;
        const calls = new Set(parts.flatMap((p) => (p.type === 'tool-call' ? [p.id] : [])));
        orphans += parts.filter((p) => p.type === 'tool-result' && !calls.has(p.callId)).length;
      }
      expect(results).toBeGreaterThan(40);
      expect(orphans).toBe(0);
      const withId = sweFiles.find((f) => f.includes('marshmallow-1867'));
      if (withId) expect((await readSession(withId)).info.id).toBe('marshmallow-code__marshmallow-1867');
    });
  },
);
