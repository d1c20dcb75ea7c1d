import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Message, Part, Session } from '../model/types.js';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { detectFormat, sampleSource } from './detect.js';
import { openHandsFormat } from './openhands.js';
import { parseSession, readSession } from './read.js';

// ---------------------------------------------------------------------------------------------------------------------
// Synthetic fixtures (invented values)

function parse(...instances: unknown[]): Session {
  return parseSession(`${instances.map((r) => JSON.stringify(r)).join('\n')}\n`, {
    format: 'openhands',
    source: 'output.jsonl',
  });
}
function messages(s: Session): Message[] {
  return s.entries.flatMap((e) => (e.message ? [e.message] : []));
}
function allParts(s: Session): Part[] {
  return messages(s).flatMap((m) => m.parts);
}
function texts(m: Message): string[] {
  return m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));
}
/** Results whose call no earlier message made: what providers refuse. */
function orphans(s: Session): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of allParts(s)) {
    if (p.type === 'tool-call') seen.add(p.id);
    if (p.type === 'tool-result' && !seen.has(p.callId)) out.push(p.callId);
  }
  return out;
}

let clock = 0;
/** A naive local time, as OpenHands writes them. */
function at(): string {
  const t = new Date(Date.UTC(2030, 0, 2, 3, 4, 5) + 1000 * clock++).toISOString();
  return t.replace('Z', '').replace(/\.(\d{3})$/, '.$1000');
}

/** A model response that made the given calls, as litellm serializes it. */
function response(id: string, content: string, calls: [string, string, unknown][]) {
  return {
    id,
    created: 1_900_000_000,
    model: 'vendor/model-x',
    object: 'chat.completion',
    choices: [
      {
        finish_reason: 'tool_calls',
        index: 0,
        message: {
          role: 'assistant',
          content,
          tool_calls: calls.map(([callId, name, args], index) => ({
            index,
            id: callId,
            type: 'function',
            function: { name, arguments: JSON.stringify(args) },
          })),
        },
      },
    ],
  };
}
function meta(callId: string, name: string, modelResponse: unknown, total = 1) {
  return { function_name: name, tool_call_id: callId, model_response: modelResponse, total_calls_in_response: total };
}
function runMetadata(exit: number, cwd = '/repo') {
  return {
    exit_code: exit,
    pid: -1,
    username: 'root',
    hostname: 'box',
    working_dir: cwd,
    py_interpreter_path: '',
    prefix: '',
    suffix: `\n[The command completed with exit code ${exit}.]`,
  };
}

const tools = [
  { type: 'function', function: { name: 'execute_bash', description: 'Run a command.', parameters: {} } },
  { type: 'function', function: { name: 'str_replace_editor', description: 'View or edit.', parameters: {} } },
];
const resp1 = response('resp-1', 'Look at the tests, then the source.', [
  ['call-1', 'execute_bash', { command: 'ls tests' }],
  ['call-2', 'str_replace_editor', { command: 'view', path: '/repo/a.py' }],
]);
const resp2 = response('resp-2', '', [['call-3', 'execute_bash', { command: 'pytest -q' }]]);
const resp3 = response('resp-3', 'Hmm.', [['call-4', 'think', { thought: 'The fix is in a.py.' }]]);
const resp4 = response('resp-4', 'I fixed it.', [['call-5', 'finish', { message: 'Done.', task_completed: 'true' }]]);
const failing = `${'F'.repeat(150)}${'E'.repeat(150)}`;

/** A run of the newer generation: events with `source`, function calls with their model response, token usages. */
const newer = {
  instance_id: 'demo__repo-1',
  instruction: 'Fix the failing test.',
  metadata: {
    agent_class: 'CodeActAgent',
    llm_config: { model: 'litellm_proxy/model-x', max_message_chars: 150 },
    agent_config: null,
    start_time: '2030-01-02 03:00:00',
  },
  history: [
    {
      id: 0,
      timestamp: at(),
      source: 'agent',
      message: 'You are a test agent.',
      action: 'system',
      args: { content: 'You are a test agent.', tools, openhands_version: '0.99.0', agent_class: 'CodeActAgent' },
    },
    {
      id: 1,
      timestamp: at(),
      source: 'user',
      message: 'Fix the failing test.',
      action: 'message',
      args: { content: 'Fix the failing test.', image_urls: null, wait_for_response: false },
    },
    {
      id: 2,
      timestamp: at(),
      source: 'user',
      message: 'Retrieving content for: Fix the',
      action: 'recall',
      args: { recall_type: 'workspace_context', query: 'Fix the failing test.' },
    },
    {
      id: 3,
      timestamp: at(),
      source: 'environment',
      message: 'Added workspace context',
      cause: 2,
      observation: 'recall',
      content: 'Added workspace context',
      extras: { recall_type: 'workspace_context', microagent_knowledge: [{ name: 'git', content: 'Use git.' }] },
    },
    {
      id: 4,
      timestamp: at(),
      source: 'agent',
      message: 'Running command: ls tests',
      action: 'run',
      args: { command: 'ls tests', is_input: false, thought: 'Look at the tests, then the source.', blocking: false },
      tool_call_metadata: meta('call-1', 'execute_bash', resp1, 2),
    },
    {
      id: 5,
      timestamp: at(),
      source: 'agent',
      message: 'Command `ls tests` executed with exit code 0.',
      cause: 4,
      observation: 'run',
      content: 'test_a.py',
      extras: { command: 'ls tests', metadata: runMetadata(0), hidden: false },
      success: true,
      tool_call_metadata: meta('call-1', 'execute_bash', resp1, 2),
    },
    {
      id: 6,
      timestamp: at(),
      source: 'environment',
      message: '',
      observation: 'agent_state_changed',
      content: '',
      extras: { agent_state: 'running' },
    },
    {
      id: 7,
      timestamp: at(),
      source: 'agent',
      message: 'Reading file: /repo/a.py',
      action: 'read',
      args: { path: '/repo/a.py', start: 0, end: -1, thought: '', impl_source: 'oh_aci', view_range: null },
      tool_call_metadata: meta('call-2', 'str_replace_editor', resp1, 2),
    },
    {
      id: 8,
      timestamp: at(),
      source: 'agent',
      message: 'I read the file /repo/a.py.',
      cause: 7,
      observation: 'read',
      content: 'print(1)',
      extras: { path: '/repo/a.py', impl_source: 'oh_aci' },
      tool_call_metadata: meta('call-2', 'str_replace_editor', resp1, 2),
    },
    {
      id: 9,
      timestamp: at(),
      source: 'agent',
      message: 'Running command: pytest -q',
      action: 'run',
      args: { command: 'pytest -q', is_input: false, thought: '' },
      tool_call_metadata: meta('call-3', 'execute_bash', resp2),
    },
    {
      id: 10,
      timestamp: at(),
      source: 'agent',
      message: 'Command `pytest -q` executed with exit code 1.',
      cause: 9,
      observation: 'run',
      content: failing,
      extras: { command: 'pytest -q', metadata: runMetadata(1), hidden: false },
      success: false,
      tool_call_metadata: meta('call-3', 'execute_bash', resp2),
    },
    {
      id: 11,
      timestamp: at(),
      source: 'agent',
      message: 'Parameter "command" is required.',
      observation: 'error',
      content: 'Parameter "command" is required.',
      extras: { error_id: '' },
    },
    {
      id: 12,
      timestamp: at(),
      source: 'agent',
      message: 'I am thinking...: Hmm.\nThe fix is in a.py.',
      action: 'think',
      args: { thought: 'Hmm.\nThe fix is in a.py.' },
      tool_call_metadata: meta('call-4', 'think', resp3),
    },
    {
      id: 13,
      timestamp: at(),
      source: 'agent',
      message: 'Your thought has been logged.',
      cause: 12,
      observation: 'think',
      content: 'Your thought has been logged.',
      extras: {},
      tool_call_metadata: meta('call-4', 'think', resp3),
    },
    {
      id: 14,
      timestamp: at(),
      source: 'agent',
      message: 'I fixed it.',
      action: 'finish',
      args: { final_thought: 'Done.', task_completed: 'true', outputs: {}, thought: 'I fixed it.' },
      tool_call_metadata: meta('call-5', 'finish', resp4),
    },
  ],
  metrics: {
    accumulated_cost: 0,
    token_usages: [
      {
        model: 'litellm_proxy/model-x',
        prompt_tokens: 1200,
        completion_tokens: 30,
        cache_read_tokens: 1000,
        cache_write_tokens: 100,
        response_id: 'resp-1',
      },
      {
        model: 'litellm_proxy/model-x',
        prompt_tokens: 1300,
        completion_tokens: 12,
        cache_read_tokens: 1100,
        cache_write_tokens: 0,
        response_id: 'resp-2',
      },
      {
        model: 'litellm_proxy/model-x',
        prompt_tokens: 1500,
        completion_tokens: 20,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        response_id: 'resp-3',
      },
      {
        model: 'litellm_proxy/model-x',
        prompt_tokens: 1600,
        completion_tokens: 25,
        cache_read_tokens: 1500,
        cache_write_tokens: 50,
        response_id: 'resp-4',
      },
      {
        model: 'litellm_proxy/model-x',
        prompt_tokens: 999,
        completion_tokens: 9,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        response_id: 'resp-lost',
      },
    ],
  },
  error: null,
  test_result: { git_patch: 'diff --git a/a.py b/a.py' },
};

/** A 2024 run: [action, observation] pairs, actions parsed from the model's text, no usage. */
const older = {
  id: 'Logic_7',
  instance: { id: 'Logic_7', answer: 'A' },
  instruction: 'Answer with A or B.',
  metadata: {
    agent_class: 'CodeActAgent',
    model_name: 'model-y-2024',
    max_iterations: 5,
    start_time: '2030-01-02 03:00:00',
  },
  history: [
    [
      {
        id: 0,
        timestamp: '2030-01-02T03:00:01.000000',
        source: 'user',
        message: 'Answer with A or B.',
        action: 'message',
        args: { content: 'Answer with A or B.', wait_for_response: false },
      },
      { message: 'No observation', observation: 'null', content: '', extras: {} },
    ],
    [
      {
        id: 3,
        timestamp: '2030-01-02T03:00:02.000000',
        source: 'agent',
        message: 'Running Python code interactively: 1+1',
        action: 'run_ipython',
        args: { code: '1+1', thought: 'Compute first.', kernel_init_code: 'from agentskills import *' },
      },
      {
        id: 4,
        timestamp: '2030-01-02T03:00:03.000000',
        source: 'agent',
        message: 'Code executed in IPython cell.',
        cause: 3,
        observation: 'run_ipython',
        content: '2',
        extras: { code: '1+1' },
      },
    ],
    [
      {
        id: 5,
        timestamp: '2030-01-02T03:00:04.000000',
        source: 'agent',
        message: 'Running command: cat x',
        action: 'run',
        args: { command: 'cat x', thought: '' },
      },
      {
        id: 6,
        timestamp: '2030-01-02T03:00:05.000000',
        source: 'agent',
        message: 'Command exited with 1',
        cause: 5,
        observation: 'run',
        content: 'cat: x: No such file',
        extras: { command_id: -1, command: 'cat x', exit_code: 1 },
      },
    ],
    [
      {
        id: 7,
        timestamp: '2030-01-02T03:00:06.000000',
        source: 'agent',
        message: 'The answer is A.',
        action: 'message',
        args: { content: 'The answer is A.', wait_for_response: true },
      },
      { message: 'No observation', observation: 'null', content: '', extras: {} },
    ],
    [
      {
        id: 8,
        timestamp: '2030-01-02T03:00:07.000000',
        source: 'user',
        message: 'Please continue.',
        action: 'message',
        args: { content: 'Please continue.', wait_for_response: false },
      },
      { message: 'No observation', observation: 'null', content: '', extras: {} },
    ],
    [
      {
        id: 9,
        timestamp: '2030-01-02T03:00:08.000000',
        source: 'agent',
        message: 'Running command: ls',
        action: 'run',
        args: { command: 'ls', thought: 'One more look.' },
      },
      { message: 'No observation', observation: 'null', content: '', extras: {} },
    ],
    [
      {
        id: 10,
        timestamp: '2030-01-02T03:00:09.000000',
        source: 'agent',
        message: 'All done!',
        action: 'finish',
        args: { outputs: {}, thought: '' },
      },
      { message: 'No observation', observation: 'null', content: '', extras: {} },
    ],
  ],
  final_message: 'A',
  error: null,
  test_result: { result: true },
};

describe('openhands reader: newer generation (events with tool_call_metadata)', () => {
  const s = parse(newer);
  const ms = messages(s);

  it('reads the messages ConversationMemory sends, one entry per event', () => {
    expect(s.format).toBe('openhands');
    expect(s.problems).toEqual([]);
    expect(s.entries).toHaveLength(newer.history.length);
    expect(s.entries.map((e) => e.raw)).toEqual(newer.history);
    expect(s.entries.map((e) => e.id)).toEqual(newer.history.map((h) => String(h.id)));
    expect(ms.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(orphans(s)).toEqual([]);
  });

  it('reads the system prompt, the task and the tools, and sends no recall or state change', () => {
    expect(ms[0]).toMatchObject({ role: 'system', parts: [{ type: 'text', text: 'You are a test agent.' }] });
    expect(ms[1]!.parts).toEqual([{ type: 'text', text: 'Fix the failing test.' }]);
    expect(ms[1]!.synthetic).toBeUndefined();
    expect(s.entries.filter((e) => !e.message).map((e) => [e.kind, e.sourceType])).toEqual([
      ['event', 'action/recall'],
      ['event', 'observation/recall'],
      ['event', 'observation/agent_state_changed'],
      ['event', 'action/read'],
    ]);
    expect(s.extra).toEqual({ agentClass: 'CodeActAgent', openhandsVersion: '0.99.0', request: { tools } });
    expect(s.info).toEqual({ id: 'demo__repo-1', startedAt: Date.UTC(2030, 0, 2, 3, 4, 5) });
  });

  it('gives both calls of one model response to one assistant message, with its usage', () => {
    const first = ms[2]!;
    expect(first.parts).toEqual([
      { type: 'text', text: 'Look at the tests, then the source.' },
      { type: 'tool-call', id: 'call-1', name: 'execute_bash', arguments: { command: 'ls tests' } },
      {
        type: 'tool-call',
        id: 'call-2',
        name: 'str_replace_editor',
        arguments: { command: 'view', path: '/repo/a.py' },
      },
    ]);
    expect(first.responseId).toBe('resp-1');
    expect(first.model).toBe('vendor/model-x');
    expect(first.stopReason).toBe('tool_calls');
    // prompt_tokens counts the cached prompt in: the full-rate input is the rest.
    expect(first.usage).toEqual({ input: 100, output: 30, cacheRead: 1000, cacheWrite: 100 });
    expect(first.timestamp).toBe(Date.UTC(2030, 0, 2, 3, 4, 9));
    // The second call's action carries no message of its own.
    expect(s.entries[7]!.message).toBeUndefined();
  });

  it('answers each call with the text OpenHands renders for its observation', () => {
    const results = allParts(s).filter((p) => p.type === 'tool-result');
    expect(results.map((r) => [r.callId, r.toolName, r.isError])).toEqual([
      ['call-1', 'execute_bash', false],
      ['call-2', 'str_replace_editor', false],
      ['call-3', 'execute_bash', true],
      ['call-4', 'think', false],
    ]);
    expect(results[0]!.content).toEqual([
      {
        type: 'text',
        text: 'test_a.py\n[The command completed with exit code 0.]\n[Current working directory: /repo]\n[Command finished with exit code 0]',
      },
    ]);
    expect(results[1]!.content).toEqual([{ type: 'text', text: 'print(1)' }]);
    // Past max_message_chars (150) the middle is cut out: its head and its tail (the shell's lines) are kept.
    const cut = (results[2]!.content[0] as { text: string }).text;
    expect(cut.startsWith(`${'F'.repeat(75)}\n[... Observation truncated due to length ...]\n`)).toBe(true);
    expect(cut).toHaveLength(150 + '\n[... Observation truncated due to length ...]\n'.length);
    expect(cut.endsWith('[Command finished with exit code 1]')).toBe(true);
    expect(cut).not.toContain('E'.repeat(10));
  });

  it('sends an error that answers no call as user text, and think and finish as the model wrote them', () => {
    expect(ms[5]!.parts).toEqual([
      { type: 'tool-call', id: 'call-3', name: 'execute_bash', arguments: { command: 'pytest -q' } },
    ]);
    expect(ms[5]!.usage).toEqual({ input: 200, output: 12, cacheRead: 1100, cacheWrite: 0 });
    expect(ms[7]).toMatchObject({
      role: 'user',
      synthetic: true,
      parts: [{ type: 'text', text: 'Parameter "command" is required.\n[Error occurred in processing last action]' }],
    });
    expect(ms[8]!.parts).toEqual([
      { type: 'text', text: 'Hmm.' },
      { type: 'tool-call', id: 'call-4', name: 'think', arguments: { thought: 'The fix is in a.py.' } },
    ]);
    expect(ms[10]).toMatchObject({
      role: 'assistant',
      responseId: 'resp-4',
      parts: [{ type: 'text', text: 'I fixed it.' }],
    });
    expect(ms[10]!.usage).toEqual({ input: 50, output: 25, cacheRead: 1500, cacheWrite: 50 });
    // A usage whose response the history does not hold is on no message.
    expect(ms.filter((m) => m.usage).length).toBe(4);
  });
});

describe('openhands reader: a function call whose model response was not kept', () => {
  it('takes the call from the action: its arguments, its thought as the text', () => {
    const s = parse({
      instance_id: 'no-response',
      history: [
        { id: 1, source: 'user', action: 'message', args: { content: 'Go.' } },
        {
          id: 2,
          source: 'agent',
          action: 'run',
          args: { command: 'ls', is_input: false, thought: 'List first.' },
          tool_call_metadata: { function_name: 'execute_bash', tool_call_id: 'c-1', total_calls_in_response: 1 },
        },
        {
          id: 3,
          source: 'agent',
          cause: 2,
          observation: 'run',
          content: 'a.py',
          extras: {},
          tool_call_metadata: { function_name: 'execute_bash', tool_call_id: 'c-1', total_calls_in_response: 1 },
        },
        {
          id: 4,
          source: 'agent',
          action: 'think',
          args: { thought: 'Only a.py.' },
          tool_call_metadata: { function_name: 'think', tool_call_id: 'c-2' },
        },
        {
          id: 5,
          source: 'agent',
          cause: 4,
          observation: 'think',
          content: 'Your thought has been logged.',
          extras: {},
          tool_call_metadata: { function_name: 'think', tool_call_id: 'c-2' },
        },
      ],
    });
    expect(s.problems).toEqual([]);
    const ms = messages(s);
    expect(ms.map((m) => m.parts)).toEqual([
      [{ type: 'text', text: 'Go.' }],
      [
        { type: 'text', text: 'List first.' },
        { type: 'tool-call', id: 'c-1', name: 'execute_bash', arguments: { command: 'ls', is_input: false } },
      ],
      [
        {
          type: 'tool-result',
          callId: 'c-1',
          toolName: 'execute_bash',
          content: [{ type: 'text', text: 'a.py' }],
          isError: false,
        },
      ],
      [{ type: 'tool-call', id: 'c-2', name: 'think', arguments: { thought: 'Only a.py.' } }],
      [
        {
          type: 'tool-result',
          callId: 'c-2',
          toolName: 'think',
          content: [{ type: 'text', text: 'Your thought has been logged.' }],
          isError: false,
        },
      ],
    ]);
    expect(ms.some((m) => m.usage || m.responseId)).toBe(false);
  });
});

describe('openhands reader: what ConversationMemory holds back', () => {
  const two = response('r-two', 'Both.', [
    ['c-a', 'execute_bash', { command: 'a' }],
    ['c-b', 'execute_bash', { command: 'b' }],
  ]);
  const half = response('r-half', 'Half.', [
    ['c-x', 'execute_bash', { command: 'x' }],
    ['c-y', 'execute_bash', { command: 'y' }],
  ]);
  const last = response('r-last', '', [['c-z', 'execute_bash', { command: 'z' }]]);
  const run = (id: number, callId: string, r: unknown) => ({
    id,
    source: 'agent',
    action: 'run',
    args: { command: callId, thought: '' },
    tool_call_metadata: meta(callId, 'execute_bash', r, 2),
  });
  const out = (id: number, callId: string, r: unknown) => ({
    id,
    source: 'agent',
    cause: id - 1,
    observation: 'run',
    content: `out ${callId}`,
    extras: { metadata: runMetadata(0) },
    tool_call_metadata: meta(callId, 'execute_bash', r, 2),
  });
  const s = parse({
    instance_id: 'hold',
    history: [
      { id: 1, source: 'user', action: 'message', args: { content: 'Go.' } },
      run(2, 'c-a', two),
      out(3, 'c-a', two),
      { id: 4, source: 'user', action: 'message', args: { content: 'Also check b.' } },
      run(5, 'c-b', two),
      out(6, 'c-b', two),
      run(7, 'c-x', half),
      out(8, 'c-x', half),
      run(9, 'c-z', last),
      out(10, 'c-z', last),
    ],
  });

  it('sends a response once all its calls are answered, after a message that came in between', () => {
    expect(s.problems).toEqual([]);
    expect(messages(s).map((m) => [m.role, ...texts(m)])).toEqual([
      ['user', 'Go.'],
      ['user', 'Also check b.'],
      ['assistant', 'Both.'],
      ['tool'],
      ['tool'],
      ['assistant'],
      ['tool'],
    ]);
    expect(s.entries.map((e) => e.id)).toEqual(['1', '4', '2', '3', '5', '6', '7', '8', '9', '10']);
  });

  it('never sends a response one of whose calls went unanswered, nor its answered results', () => {
    const calls = allParts(s).flatMap((p) => (p.type === 'tool-call' ? [p.id] : []));
    expect(calls).toEqual(['c-a', 'c-b', 'c-z']);
    expect(s.entries.filter((e) => e.id === '7' || e.id === '8').map((e) => [e.kind, e.message])).toEqual([
      ['event', undefined],
      ['event', undefined],
    ]);
    expect(orphans(s)).toEqual([]);
  });
});

describe('openhands reader: older generation ([action, observation] pairs, text actions)', () => {
  const s = parse(older);
  const ms = messages(s);

  it('reads answered text actions as calls with their observation as the result', () => {
    expect(s.problems).toEqual([]);
    expect(s.entries).toHaveLength(14);
    expect(s.entries.map((e) => e.raw)).toEqual(older.history.flat());
    expect(ms.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(ms[1]!.parts).toEqual([
      { type: 'text', text: 'Compute first.' },
      { type: 'tool-call', id: 'openhands-3', name: 'execute_ipython', arguments: { code: '1+1' } },
    ]);
    expect(ms[2]!.parts).toEqual([
      {
        type: 'tool-result',
        callId: 'openhands-3',
        toolName: 'execute_ipython',
        content: [{ type: 'text', text: '2' }],
        isError: false,
      },
    ]);
    expect(ms[3]!.parts).toEqual([
      { type: 'tool-call', id: 'openhands-5', name: 'execute_bash', arguments: { command: 'cat x' } },
    ]);
    expect(ms[4]!.parts[0]).toMatchObject({ callId: 'openhands-5', isError: true });
    expect(ms[1]!.model).toBe('model-y-2024');
    expect(ms.some((m) => m.usage)).toBe(false);
    expect(orphans(s)).toEqual([]);
  });

  it('keeps an unanswered action as text, and null observations and an empty finish without a message', () => {
    expect(ms[5]!.parts).toEqual([{ type: 'text', text: 'The answer is A.' }]);
    expect(ms[7]!.parts).toEqual([
      { type: 'text', text: 'One more look.' },
      { type: 'text', text: '{"command":"ls"}' },
    ]);
    expect(s.entries.filter((e) => !e.message).map((e) => e.sourceType)).toEqual([
      'observation/null',
      'observation/null',
      'observation/null',
      'observation/null',
      'action/finish',
      'observation/null',
    ]);
    expect(s.info).toEqual({ id: 'Logic_7', startedAt: Date.UTC(2030, 0, 2, 3, 0, 1) });
    expect(s.extra).toEqual({ agentClass: 'CodeActAgent' });
  });

  it('gives the same ids on every read', () => {
    expect(allParts(parse(older))).toEqual(allParts(parse(older)));
  });
});

describe('openhands reader: files and bad input', () => {
  it('reads the first of several instances and names them all in a problem', () => {
    const s = parse(older, { ...older, id: 'Logic_8' }, { ...newer, instance_id: 'demo__repo-2' });
    expect(s.info.id).toBe('Logic_7');
    expect(s.entries).toHaveLength(14);
    expect(s.entries.every((e) => e.line === 1)).toBe(true);
    expect(s.problems).toEqual([
      {
        line: 2,
        kind: 'more-sessions',
        message:
          'line 2: the file holds 3 OpenHands instances (Logic_7, Logic_8, demo__repo-2); a session is one conversation: the first, Logic_7, was read and the other 2 skipped (choose one with --instance <id>)',
      },
    ]);
    expect(s.extra?.instances).toEqual(['Logic_7', 'Logic_8', 'demo__repo-2']);
  });

  it('reads the instance asked for, and says which the file holds when it has no such one', () => {
    const text = [older, { ...older, id: 'Logic_8' }, { ...newer, instance_id: 'demo__repo-2' }]
      .map((r) => `${JSON.stringify(r)}\n`)
      .join('');
    const third = parseSession(text, { source: 'output.jsonl', instance: 'demo__repo-2' });
    expect(third.format).toBe('openhands');
    expect(third.info.id).toBe('demo__repo-2');
    expect(third.entries.every((e) => e.line === 3)).toBe(true);
    expect(messages(third).map((m) => m.role)).toEqual(messages(parse(newer)).map((m) => m.role));
    expect(third.problems.map((p) => p.message)).toEqual([
      'line 1: the file holds 3 OpenHands instances (Logic_7, Logic_8, demo__repo-2); a session is one conversation: demo__repo-2, was read and the other 2 skipped (choose one with --instance <id>)',
    ]);
    expect(() => parseSession(text, { source: 'output.jsonl', instance: 'Logic_9' })).toThrow(
      'output.jsonl: no OpenHands instance "Logic_9" in this file; it holds Logic_7, Logic_8, demo__repo-2',
    );
    // A format of one session a file has no instance to choose.
    const pi = `${JSON.stringify({ type: 'session', version: 3, id: 'p', timestamp: '2030-01-01T00:00:00.000Z', cwd: '/w' })}\n`;
    expect(() => parseSession(pi, { source: 's.jsonl', instance: 'x' })).toThrow(
      's.jsonl: --instance: the pi session JSONL format holds one session a file; there is no instance to choose',
    );
  });

  it('keeps bad history items with a problem naming the instance and the item, never an orphan result', () => {
    const s = parse({
      instance_id: 'bad-1',
      history: [
        { id: 1, source: 'user', action: 'message', args: { content: 'Go.' } },
        'stray text',
        { id: 2, source: 'agent', action: 'teleport', args: {} },
        { id: 3, source: 'agent', observation: 'hologram', content: 'x' },
        { id: 4, source: 'agent', foo: 1 },
        {
          id: 5,
          source: 'agent',
          observation: 'run',
          content: 'ghost output',
          extras: {},
          tool_call_metadata: { function_name: 'execute_bash', tool_call_id: 'ghost' },
        },
      ],
    });
    expect(s.entries.map((e) => e.kind)).toEqual(['message', 'unknown', 'unknown', 'unknown', 'unknown', 'event']);
    expect(s.problems.map((p) => [p.line, p.kind, p.message])).toEqual([
      [1, 'not-an-object', 'line 1: instance bad-1: history[1] is not an object; kept as is'],
      [1, 'unknown-entry-type', 'line 1: instance bad-1: history[2] has unknown action "teleport"; kept as is'],
      [1, 'unknown-entry-type', 'line 1: instance bad-1: history[3] has unknown observation "hologram"; kept as is'],
      [1, 'invalid-entry', 'line 1: instance bad-1: history[4] is neither an action nor an observation; kept as is'],
      [
        1,
        'invalid-entry',
        'line 1: instance bad-1: history[5] answers tool call ghost, which no action of the history made; kept without a message',
      ],
    ]);
    expect(allParts(s).filter((p) => p.type === 'tool-result')).toEqual([]);
  });

  it('reports a result that comes before its call instead of sending it', () => {
    const r = response('r-1', '', [['c-1', 'execute_bash', { command: 'ls' }]]);
    const s = parse({
      instance_id: 'early',
      history: [
        {
          id: 1,
          source: 'agent',
          observation: 'run',
          content: 'a',
          extras: {},
          tool_call_metadata: meta('c-1', 'execute_bash', r),
        },
        {
          id: 2,
          source: 'agent',
          action: 'run',
          args: { command: 'ls' },
          tool_call_metadata: meta('c-1', 'execute_bash', r),
        },
      ],
    });
    expect(s.problems.map((p) => p.message)).toEqual([
      'line 1: instance early: history[0] answers tool call c-1 out of turn (no message waiting for it holds that call); kept without a message',
    ]);
    expect(orphans(s)).toEqual([]);
  });

  it('keeps an instance without a history as is, with a problem', () => {
    const s = parse({ instance_id: 'no-history', metrics: {}, test_result: {} });
    expect(s.entries.map((e) => e.kind)).toEqual(['unknown']);
    expect(s.problems[0]!.message).toBe('line 1: instance no-history has no "history" array; kept as is');
  });
});

describe('openhands detection', () => {
  it('detects instance records, a single-instance document, and a first record longer than the head', () => {
    expect(openHandsFormat.detect({ head: '{', records: [newer as never, older as never] })).toBe(0.96);
    expect(openHandsFormat.detect({ head: '{', document: newer })).toBe(0.96);
    const long = { instance_id: 'big', test_result: {}, history: [{ content: 'x'.repeat(10_000) }] };
    const text = `${JSON.stringify(long)}\n${JSON.stringify(long)}\n`;
    // Only the head of a first line that does not fit: no record parses, the whole is not one document.
    const input = sampleSource(text.slice(0, 3000), false, () => text);
    expect(input.records).toBeUndefined();
    expect(input.document).toBeUndefined();
    expect(openHandsFormat.detect(input)).toBe(0.9);
    const detection = detectFormat(input);
    expect(detection.kind === 'supported' && detection.format.id).toBe('openhands');
  });

  it('detects nothing else', () => {
    expect(openHandsFormat.detect({ head: '{', document: { history: [], trajectory: [], info: {} } })).toBe(0);
    expect(openHandsFormat.detect({ head: '{', records: [{ type: 'session_meta', payload: {} }] })).toBe(0);
    expect(openHandsFormat.detect({ head: '{', records: [{ instance_id: 'x' }, { instance_id: 'y' }] })).toBe(0);
    expect(openHandsFormat.detect({ head: '{"id": "a", "history": []' })).toBe(0);
    expect(openHandsFormat.detect({ head: '{"type": "session", "id": "x"' })).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Real output files

interface RawEvent {
  action?: string;
  observation?: string;
  source?: string;
  cause?: number;
  tool_call_metadata?: { tool_call_id: string; model_response?: { id: string } };
}
interface RawInstance {
  instance_id?: string;
  id?: string;
  history: (RawEvent | [RawEvent, RawEvent])[];
  metrics?: { token_usages?: { response_id: string }[] };
}

/** Calls and results implied by the raw history, counted without the reader (every corpus response makes one call). */
function expectations(instance: RawInstance) {
  const events = instance.history.flatMap((h) => (Array.isArray(h) ? h : [h]));
  let calls = 0;
  let results = 0;
  const responses = new Set<string>();
  events.forEach((e, i) => {
    if (e.tool_call_metadata && e.action && e.action !== 'finish') calls++;
    if (e.tool_call_metadata && e.observation) results++;
    if (e.tool_call_metadata?.model_response) responses.add(e.tool_call_metadata.model_response.id);
    // A text action answered by the observation that follows it.
    const next = events[i + 1];
    if (!e.tool_call_metadata && e.source === 'agent' && (e.action === 'run' || e.action === 'run_ipython')) {
      if (next?.observation && next.observation !== 'null') {
        calls++;
        results++;
      }
    }
  });
  const usages = (instance.metrics?.token_usages ?? []).filter((u) => responses.has(u.response_id)).length;
  return { calls, results, usages };
}

const files = corpusFiles('openhands');

describe.skipIf(!corpusAvailable())(
  corpusAvailable() ? 'openhands corpus' : `openhands corpus (skipped: no corpus at ${CORPUS_DIR})`,
  () => {
    it('has files to read', () => {
      expect(files.length).toBeGreaterThan(0);
    });

    it.each(files.map((f) => [basename(f), f]))('%s: the first instance, the others named', async (_name, file) => {
      const lines = readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '');
      const first = JSON.parse(lines[0]!) as RawInstance;
      const s = await readSession(file);
      expect(s.format).toBe('openhands');
      expect(s.info.id).toBe(first.instance_id ?? first.id);
      expect(s.entries.map((e) => e.raw)).toEqual(first.history.flat());
      if (lines.length > 1) {
        expect(s.problems).toHaveLength(1);
        expect(s.problems[0]!.message).toContain(`holds ${lines.length} OpenHands instances`);
      } else expect(s.problems).toEqual([]);
    });

    it.each(files.map((f) => [basename(f), f]))(
      '%s: every instance pairs its calls and carries its usage',
      (_name, file) => {
        for (const line of readFileSync(file, 'utf8').split('\n')) {
          if (line.trim() === '') continue;
          const raw = JSON.parse(line) as RawInstance;
          const s = parseSession(line, { format: 'openhands' });
          const want = expectations(raw);
          expect(s.problems).toEqual([]);
          const parts = allParts(s);
          expect(parts.filter((p) => p.type === 'tool-call')).toHaveLength(want.calls);
          expect(parts.filter((p) => p.type === 'tool-result')).toHaveLength(want.results);
          expect(orphans(s)).toEqual([]);
          const assistants = messages(s).filter((m) => m.role === 'assistant');
          expect(assistants.filter((m) => m.usage && m.usage.input > 0)).toHaveLength(want.usages);
          for (const m of assistants) if (m.responseId) expect(m.usage).toBeDefined();
        }
      },
    );

    it('finds what the corpus is known to hold', async () => {
      const newerFile = files.find((f) => f.includes('examples-output'));
      if (!newerFile) return;
      const s = await readSession(newerFile);
      expect(s.info.id).toBe('ponylang__ponyc-4595');
      expect(
        messages(s)
          .map((m) => m.role)
          .slice(0, 3),
      ).toEqual(['system', 'user', 'assistant']);
      expect(messages(s).filter((m) => m.usage).length).toBe(23);
      expect((s.extra?.request as { tools?: unknown[] } | undefined)?.tools).toHaveLength(4);
    });
  },
);
