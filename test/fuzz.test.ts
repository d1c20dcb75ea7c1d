// Mutation fuzz of real transcripts (issue 13): byte flips, truncations, duplicated/removed/swapped lines, type changes,
// deleted keys, huge values and invalid UTF-8 over pi, Claude Code, Codex, SWE-agent, Copilot CLI, OpenHands, Aider, Gemini CLI,
// Qwen Code and opencode (a real session in their record shapes), the DeepSeek harness and request-body inputs. Every
// case is read, inspected, compacted and replayed through the library (a sample also through the built CLI), and must
// end in a result or a clear AbridgeError: no other exception (a crash), no hang, and for the JSONL transcripts abridge
// writes (pi, Claude Code) writing the session back must give the mutated input again, byte for byte.
//
//   ABRIDGE_FUZZ_CASES (default 300; `npm run fuzz` runs 4,000), ABRIDGE_FUZZ_CLI (CLI sample, default 6),
//   ABRIDGE_FUZZ_SEED (default 13).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { contextBreakdown } from '../src/budget/breakdown.js';
import { compact } from '../src/compaction/compact.js';
import { ExtractiveSummarizer } from '../src/compaction/summarizers/extractive.js';
import { AbridgeError } from '../src/errors.js';
import { inspectSession } from '../src/formats/inspect.js';
import { parseSession } from '../src/formats/read.js';
import { getFormat } from '../src/formats/registry.js';
import { writeSession } from '../src/formats/write.js';
import { MemoryResultStore } from '../src/compaction/memory-result-store.js';
import { builtDist } from './support/session-store-suite.js';
import { corpusAvailable, corpusFile } from './support/corpus.js';
import { EXAMPLE_PI, fixtureTranscripts } from './support/fixture-transcripts.js';
import { MUTATION_KINDS, mutate, prng, type MutationKind } from './support/mutate.js';
import { replaySession } from '../src/analysis/replay.js';
import type { Message } from '../src/model/types.js';

const CASES = Number(process.env.ABRIDGE_FUZZ_CASES ?? 300);
const CLI_CASES = Number(process.env.ABRIDGE_FUZZ_CLI ?? 6);
const SEED = Number(process.env.ABRIDGE_FUZZ_SEED ?? 13);
/** A case taking longer than this counts as a hang (the CLI sample is killed at it). */
const CASE_TIMEOUT_MS = 20_000;
const MAX_LINES = 300;

/** The first `n` lines of a JSONL file: still a whole transcript, and a fuzz case stays fast. */
function head(path: string, n = MAX_LINES): Buffer {
  const buf = readFileSync(path);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const nl = buf.indexOf(0x0a, at);
    if (nl === -1) return buf;
    at = nl + 1;
  }
  return buf.subarray(0, at);
}

function sources(): { name: string; bytes: Buffer }[] {
  const out: { name: string; bytes: Buffer }[] = [];
  const add = (folder: string, file: string, whole = false) =>
    out.push({
      name: `${folder}/${file}`,
      bytes: whole ? readFileSync(corpusFile(folder, file)) : head(corpusFile(folder, file)),
    });
  add('pi', 'anuragsinghbhandari__gitclaw__2026-02-11T17-55-09-367Z_66ced8ac-1f2d-4634-b1b3-35f9920bc10a.jsonl');
  add('pi', 'badlogic__pi-mono__compact.jsonl');
  add('claude-code', 'marot__spotter__short.jsonl');
  add('claude-code', 'marot__spotter__tool_heavy.jsonl');
  add('codex', 's977043__plangate__codex-log-sample.jsonl');
  add('codex', 'EntityProcess__agentv__00-34f597b72d-1-full.jsonl');
  add('swe-agent', 'princeton-nlp__SWE-agent__6e44b9__sweagenttestrepo-1c2844.traj', true);
  add('swe-agent', 'princeton-nlp__SWE-agent__i_got_id_demo.traj', true);
  add('other', 'Copilotclaw__copilotclaw__6a7cf5a4-12e5-4c11-9518-8fd66737b0a6-events.jsonl');
  // Markdown: its first lines are whole runs too (input, replies, token reports).
  add('other', 'AFI-Protocol__afi-core__.aider.chat.history.md');
  // Whole (394 KB, most of it streaming chunks): its request-header deltas come after line 690.
  add('other', 'HarleyCoops__deepseek-Entire.io__live-mode-switching-2026-07-07.session.jsonl', true);
  add('openhands', 'japer-technology__githubification-OpenHands__gpt-4o-2024-05-13_maxiter_10_N_v1.5-output.jsonl');
  // Request bodies, as abridge writes them from a real session (the corpus holds none), and other agents' formats.
  out.push(
    ...derivedSources(
      head(
        corpusFile(
          'pi',
          'anuragsinghbhandari__gitclaw__2026-02-11T17-55-09-367Z_66ced8ac-1f2d-4634-b1b3-35f9920bc10a.jsonl',
        ),
        120,
      ),
      messagesOf('marot__spotter__tool_heavy.jsonl'),
    ),
  );
  return out;
}

/**
 * Documents made from a pi transcript's head and a Claude Code transcript's messages: request bodies as abridge writes
 * them, and the record shapes of Gemini CLI, Qwen Code, opencode, Droid, Cursor, Kiro, Kimi CLI and Grok Build (neither the
 * corpus nor the fixtures hold these).
 */
function derivedSources(piHead: Buffer, claudeMessages: Message[]): { name: string; bytes: Buffer }[] {
  const out: { name: string; bytes: Buffer }[] = [];
  // Request bodies, as abridge writes them from a session.
  const base = parseSession(piHead);
  for (const f of ['anthropic', 'openai-chat', 'openai-responses', 'ai-sdk'])
    out.push({ name: `request/${f}.json`, bytes: Buffer.from(writeSession(base, f)) });
  // Gemini CLI (the corpus holds none): a real session's messages in its record shapes, as its .json and its .jsonl.
  const gemini = geminiRecords(claudeMessages);
  const meta = { sessionId: 'fuzz', projectHash: 'a'.repeat(64), startTime: '2026-01-01T00:00:00.000Z' };
  out.push({ name: 'gemini/session.json', bytes: Buffer.from(JSON.stringify({ ...meta, messages: gemini }, null, 2)) });
  out.push({
    name: 'gemini/session.jsonl',
    bytes: Buffer.from(
      `${[meta, ...gemini, { $set: { summary: 'fuzz' } }].map((r) => JSON.stringify(r)).join('\n')}\n`,
    ),
  });
  out.push({
    name: 'qwen-code/session.jsonl',
    bytes: Buffer.from(
      `${qwenRecords(claudeMessages)
        .map((r) => JSON.stringify(r))
        .join('\n')}\n`,
    ),
  });
  out.push({ name: 'droid/session.jsonl', bytes: Buffer.from(jsonlOf(droidRecords(claudeMessages))) });
  out.push({ name: 'cursor/transcript.jsonl', bytes: Buffer.from(jsonlOf(cursorLines(claudeMessages))) });
  out.push({ name: 'kiro/session.jsonl', bytes: Buffer.from(jsonlOf(kiroRows(claudeMessages))) });
  out.push({ name: 'kimi-cli/context.jsonl', bytes: Buffer.from(kimiContext(claudeMessages)) });
  out.push({ name: 'grok-build/chat_history.jsonl', bytes: Buffer.from(jsonlOf(grokRows(claudeMessages))) });
  out.push({
    name: 'opencode/export.json',
    bytes: Buffer.from(JSON.stringify(opencodeExport(claudeMessages), null, 2)),
  });
  return out;
}

function messagesOf(claudeCodeFile: string): Message[] {
  return messagesIn(head(corpusFile('claude-code', claudeCodeFile)));
}

function messagesIn(transcript: Buffer): Message[] {
  return parseSession(transcript).entries.flatMap((e) => (e.message ? [e.message] : []));
}

const text = (m: Message) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');

/** Each call's result text, by call id. */
function resultsByCall(messages: Message[]): Map<string, string> {
  const results = new Map<string, string>();
  for (const m of messages)
    for (const p of m.parts)
      if (p.type === 'tool-result')
        results.set(p.callId, p.content.map((c) => (c.type === 'text' ? c.text : '')).join(''));
  return results;
}

/** Messages as Qwen Code records them: Gemini Contents linked by parentUuid, a tool_result record for each call. */
function qwenRecords(messages: Message[]): Record<string, unknown>[] {
  const results = resultsByCall(messages);
  const out: Record<string, unknown>[] = [];
  const add = (type: string, message: unknown, extra: Record<string, unknown> = {}) =>
    out.push({
      uuid: `q${out.length}`,
      parentUuid: out.length ? `q${out.length - 1}` : null,
      sessionId: 'fuzz',
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, out.length)).toISOString(),
      type,
      cwd: '/w',
      version: '0.5.0',
      message,
      ...extra,
    });
  for (const m of messages) {
    if (m.role === 'user') add('user', { role: 'user', parts: [{ text: text(m) }] });
    if (m.role !== 'assistant') continue;
    const calls = m.parts.flatMap((p) => (p.type === 'tool-call' ? [p] : []));
    add(
      'assistant',
      {
        role: 'model',
        parts: [
          { text: text(m) },
          ...calls.map((c) => ({ functionCall: { id: c.id, name: c.name, args: c.arguments } })),
        ],
      },
      {
        model: 'qwen3-coder-plus',
        usageMetadata: { promptTokenCount: 1000, candidatesTokenCount: 10, cachedContentTokenCount: 500 },
      },
    );
    for (const c of calls)
      add('tool_result', {
        role: 'user',
        parts: [{ functionResponse: { id: c.id, name: c.name, response: { output: results.get(c.id) ?? '' } } }],
      });
  }
  return out;
}

const jsonlOf = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;

/** Messages as Factory's Droid records them: a session_start, then message records of Anthropic blocks, and a compaction. */
function droidRecords(messages: Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [
    { type: 'session_start', id: 'fuzz', title: 'fuzz', owner: 'unknown', version: 2, cwd: '/w', hostId: 'h' },
  ];
  const add = (role: string, content: unknown[], extra: Record<string, unknown> = {}) =>
    out.push({
      type: 'message',
      id: `d${out.length}`,
      ...(out.length > 1 ? { parentId: `d${out.length - 1}` } : {}),
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, out.length)).toISOString(),
      message: { role, content, ...extra },
    });
  add('user', [], { visibility: 'user_only', hookEventName: 'SessionStart' });
  add('user', [{ type: 'text', text: '<system-reminder>env</system-reminder>' }], { visibility: 'llm_only' });
  messages.forEach((m, i) => {
    const blocks = m.parts.flatMap((p): Record<string, unknown>[] => {
      if (p.type === 'text') return [{ type: 'text', text: p.text }];
      if (p.type === 'tool-call') return [{ type: 'tool_use', id: p.id, name: p.name, input: p.arguments }];
      if (p.type === 'tool-result')
        return [
          {
            type: 'tool_result',
            tool_use_id: p.callId,
            is_error: p.isError,
            content: p.content.map((c) => (c.type === 'text' ? c.text : '')).join(''),
          },
        ];
      return [];
    });
    if (blocks.length === 0) return;
    add(
      m.role === 'assistant' ? 'assistant' : 'user',
      blocks,
      m.role === 'assistant' ? { modelId: 'claude-sonnet-4-5' } : {},
    );
    if (i === Math.floor(messages.length / 2))
      out.push({
        type: 'compaction_state',
        id: 'c',
        summaryText: 'so far',
        summaryKind: 'llm_summary',
        anchorMessage: { id: `d${out.length - 3}`, index: 0 },
        removedCount: 3,
      });
  });
  out.push({ type: 'todo_state', id: 't', todos: [] });
  return out;
}

/** Messages as Cursor's agent transcript writes them: bare role + message lines, calls without ids, no results. */
function cursorLines(messages: Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', message: { content: [{ type: 'text', text: text(m) }] } });
    if (m.role !== 'assistant') continue;
    const blocks = m.parts.flatMap((p): Record<string, unknown>[] =>
      p.type === 'text'
        ? [{ type: 'text', text: p.text }]
        : p.type === 'tool-call'
          ? [{ type: 'tool_use', name: p.name, input: p.arguments }]
          : [],
    );
    if (blocks.length) out.push({ role: 'assistant', message: { content: blocks } });
    if (!m.parts.some((p) => p.type === 'tool-call')) out.push({ type: 'turn_ended', status: 'success' });
  }
  return out;
}

/** Messages as Kiro CLI writes them: Prompt, AssistantMessage and ToolResults rows of {kind, data} blocks. */
function kiroRows(messages: Message[]): Record<string, unknown>[] {
  return messages.flatMap((m, i): Record<string, unknown>[] => {
    const row = (kind: string, content: unknown[], extra = {}) => ({
      version: 'v1',
      kind,
      data: { message_id: `k${i}`, content, ...extra },
    });
    if (m.role === 'user')
      return [row('Prompt', [{ kind: 'text', data: text(m) }], { meta: { timestamp: 1_790_000_000 + i } })];
    if (m.role === 'assistant')
      return [
        row(
          'AssistantMessage',
          m.parts.flatMap((p): Record<string, unknown>[] =>
            p.type === 'text'
              ? [{ kind: 'text', data: p.text }]
              : p.type === 'tool-call'
                ? [{ kind: 'toolUse', data: { toolUseId: p.id, name: p.name, input: p.arguments } }]
                : [],
          ),
        ),
      ];
    if (m.role !== 'tool') return [];
    const results = m.parts.flatMap((p) =>
      p.type === 'tool-result'
        ? [
            {
              kind: 'toolResult',
              data: {
                toolUseId: p.callId,
                content: p.content.map((c) => ({ kind: 'text', data: c.type === 'text' ? c.text : '' })),
                status: p.isError ? 'error' : 'success',
              },
            },
          ]
        : [],
    );
    return [row('ToolResults', results, { results: {} })];
  });
}

/** Messages as kimi-cli writes context.jsonl: its own records through json.dumps, kosong messages compact. */
function kimiContext(messages: Message[]): string {
  const lines = ['{"role": "_system_prompt", "content": "You are Kimi."}', '{"role": "_checkpoint", "id": 0}'];
  let tokens = 1000;
  for (const m of messages) {
    if (m.role === 'user') lines.push(JSON.stringify({ role: 'user', content: text(m) }));
    else if (m.role === 'assistant') {
      const calls = m.parts.flatMap((p) =>
        p.type === 'tool-call'
          ? [{ type: 'function', id: p.id, function: { name: p.name, arguments: JSON.stringify(p.arguments) } }]
          : [],
      );
      lines.push(`{"role": "_usage", "token_count": ${tokens}}`);
      lines.push(
        JSON.stringify({
          role: 'assistant',
          content: [{ type: 'text', text: text(m) }],
          ...(calls.length ? { tool_calls: calls } : {}),
        }),
      );
      tokens += 100;
      lines.push(`{"role": "_usage", "token_count": ${tokens}}`);
    } else if (m.role === 'tool')
      for (const p of m.parts)
        if (p.type === 'tool-result')
          lines.push(
            JSON.stringify({
              role: 'tool',
              content: p.content.map((c) => ({ type: 'text', text: c.type === 'text' ? c.text : '' })),
              tool_call_id: p.callId,
            }),
          );
  }
  return `${lines.join('\n')}\n`;
}

/** Messages as Grok Build writes chat_history.jsonl: system, <user_info>, prompts in <user_query>, flat calls. */
function grokRows(messages: Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [
    { type: 'system', content: 'You are Grok.' },
    { type: 'user', content: [{ type: 'text', text: '<user_info>\nWorkspace Path: /w\n</user_info>' }] },
  ];
  let prompts = 0;
  for (const m of messages) {
    if (m.role === 'user')
      out.push({
        type: 'user',
        content: [{ type: 'text', text: `<user_query>\n${text(m)}\n</user_query>` }],
        prompt_index: prompts++,
      });
    else if (m.role === 'assistant') {
      const calls = m.parts.flatMap((p) =>
        p.type === 'tool-call' ? [{ id: p.id, name: p.name, arguments: JSON.stringify(p.arguments) }] : [],
      );
      out.push({
        type: 'assistant',
        content: text(m),
        ...(calls.length ? { tool_calls: calls } : {}),
        model_id: 'grok',
      });
    } else if (m.role === 'tool')
      for (const p of m.parts)
        if (p.type === 'tool-result')
          out.push({
            type: 'tool_result',
            tool_call_id: p.callId,
            content: p.content.map((c) => (c.type === 'text' ? c.text : '')).join(''),
          });
  }
  return out;
}

/** Messages as `opencode export` writes them: a user message's text parts, an assistant step with its tool parts. */
function opencodeExport(messages: Message[]): Record<string, unknown> {
  const results = resultsByCall(messages);
  const time = { created: 1_770_000_000_000 };
  const out = messages.flatMap((m, i): Record<string, unknown>[] => {
    const info = { id: `msg_${String(i).padStart(4, '0')}`, sessionID: 'ses_fuzz', time };
    if (m.role === 'user') return [{ info: { ...info, role: 'user' }, parts: [{ type: 'text', text: text(m) }] }];
    if (m.role !== 'assistant') return [];
    const tokens = { input: 100 + i, output: 10, reasoning: 0, cache: { read: 1000, write: 0 } };
    const tools = m.parts.flatMap((p) =>
      p.type === 'tool-call'
        ? [
            {
              type: 'tool',
              callID: p.id,
              tool: p.name,
              state: {
                status: 'completed',
                input: p.arguments,
                output: results.get(p.id) ?? '',
                time: { start: 1, end: 2 },
              },
            },
          ]
        : [],
    );
    const parts = [{ type: 'step-start' }, { type: 'text', text: text(m) }, ...tools, { type: 'step-finish', tokens }];
    return [
      { info: { ...info, role: 'assistant', modelID: 'claude-sonnet-4-5', providerID: 'anthropic', tokens }, parts },
    ];
  });
  return { info: { id: 'ses_fuzz', title: 'fuzz', directory: '/w', time }, messages: out };
}

/** Messages as Gemini CLI records them: user content parts, one `gemini` record a response with its calls' results. */
function geminiRecords(messages: Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const results = resultsByCall(messages);
  messages.forEach((m, i) => {
    const base = { id: `m${i}`, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() };
    if (m.role === 'user') out.push({ ...base, type: 'user', content: [{ text: text(m) }] });
    if (m.role !== 'assistant') return;
    const toolCalls = m.parts.flatMap((p) =>
      p.type === 'tool-call'
        ? [
            {
              id: p.id,
              name: p.name,
              args: p.arguments,
              status: 'success',
              result: [{ functionResponse: { id: p.id, name: p.name, response: { output: results.get(p.id) ?? '' } } }],
            },
          ]
        : [],
    );
    out.push({
      ...base,
      type: 'gemini',
      content: text(m),
      model: 'gemini-2.5-pro',
      toolCalls,
      tokens: { input: 1000 + i, output: 10, cached: 500, thoughts: 0, tool: 0, total: 1010 + i },
    });
  });
  return out;
}

interface Outcome {
  name: string;
  result: 'read' | 'refused' | 'crash' | 'lost-bytes' | 'hang';
  detail?: string;
  utf8Replaced?: boolean;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads, inspects, compacts and replays one input in this process; checks the write-back. */
async function runCase(name: string, bytes: Buffer): Promise<Outcome> {
  const started = Date.now();
  try {
    const session = parseSession(bytes, { source: name });
    let utf8Replaced = false;
    if ((session.format === 'pi' || session.format === 'claude-code') && bytes.length > 0) {
      // What abridge writes back must be the input. Bytes that are not UTF-8 cannot be a string: they come back as
      // U+FFFD, and the reader reported it (checked below).
      const written = writeSession(session);
      let expected: string;
      try {
        expected = strictUtf8.decode(bytes);
      } catch {
        utf8Replaced = true;
        expected = bytes.toString('utf8');
        if (!session.problems.some((p) => p.kind === 'invalid-utf8'))
          return { name, result: 'lost-bytes', detail: 'invalid UTF-8 replaced without a problem record' };
      }
      if (written !== expected) {
        const at = [...written].findIndex((c, i) => c !== expected[i]);
        return {
          name,
          result: 'lost-bytes',
          detail: `write-back differs at character ${at}: ${JSON.stringify(expected.slice(Math.max(0, at - 40), at + 40))} became ${JSON.stringify(written.slice(Math.max(0, at - 40), at + 40))}`,
        };
      }
    }
    inspectSession(session, name, bytes.length);
    contextBreakdown(session);
    replaySession(session);
    await compact(session, {
      target: 2_000,
      force: true,
      summarizer: new ExtractiveSummarizer(),
      store: new MemoryResultStore(),
    });
    // The compacted session written out, as `compact --out` (transcripts) or `--emit` (request bodies) would.
    if (getFormat(session.format).write) writeSession(session);
    if (Date.now() - started > CASE_TIMEOUT_MS) return { name, result: 'hang', detail: `${Date.now() - started} ms` };
    return { name, result: 'read', utf8Replaced };
  } catch (err) {
    if (err instanceof AbridgeError) return { name, result: 'refused', detail: err.code };
    return {
      name,
      result: 'crash',
      detail:
        err instanceof Error
          ? `${err.name}: ${err.message}\n${err.stack?.split('\n').slice(1, 4).join('\n')}`
          : String(err),
    };
  }
}

/** The case list: source × kind × seed, spread evenly, deterministic. */
function cases(all: { name: string; bytes: Buffer }[], count: number): { name: string; bytes: Buffer }[] {
  const rand = prng(SEED);
  const out: { name: string; bytes: Buffer }[] = [];
  for (let i = 0; out.length < count && i < count * 4; i++) {
    const src = all[i % all.length]!;
    const kind: MutationKind = MUTATION_KINDS[Math.floor(i / all.length) % MUTATION_KINDS.length]!;
    const seed = Math.floor(rand() * 2 ** 31);
    const bytes = mutate(src.bytes, kind, seed);
    if (bytes) out.push({ name: `${src.name} ${kind} seed=${seed}`, bytes });
  }
  return out;
}

const root = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-fuzz-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Every input reads unmutated, and the JSONL transcripts write back byte for byte. */
async function unmutatedRead(inputs: { name: string; bytes: Buffer }[]): Promise<void> {
  expect(inputs.length).toBeGreaterThan(0);
  for (const s of inputs) expect(await runCase(s.name, s.bytes), s.name).toMatchObject({ result: 'read' });
  // The derived agents' shapes are detected as those agents, not taken by a neighbour's reader.
  for (const s of inputs) {
    const agent = /^(droid|cursor|kiro|kimi-cli|grok-build|qwen-code|gemini)\//.exec(s.name)?.[1];
    if (agent) expect(parseSession(s.bytes).format, s.name).toBe(agent === 'gemini' ? 'gemini-cli' : agent);
  }
}

/** `count` mutated inputs through the library: 0 crashes, 0 hangs, 0 lost bytes. */
async function libraryFuzz(label: string, inputs: { name: string; bytes: Buffer }[], count: number): Promise<void> {
  const outcomes: Outcome[] = [];
  for (const c of cases(inputs, count)) outcomes.push(await runCase(c.name, c.bytes));
  const bad = outcomes.filter((o) => o.result === 'crash' || o.result === 'hang' || o.result === 'lost-bytes');
  const tally = outcomes.reduce<Record<string, number>>((t, o) => {
    const key = o.result === 'refused' ? `refused ${o.detail}` : o.result;
    t[key] = (t[key] ?? 0) + 1;
    return t;
  }, {});
  console.log(
    `fuzz (${label}): ${outcomes.length} cases (seed ${SEED}): ${JSON.stringify(tally)}; ${outcomes.filter((o) => o.utf8Replaced).length} with invalid UTF-8 reported and replaced`,
  );
  expect(outcomes.length).toBeGreaterThanOrEqual(count * 0.9);
  expect(bad.map((o) => `${o.name}: ${o.result}: ${o.detail}`)).toEqual([]);
}

/** A sample of `count` mutated files through the built CLI (inspect, compact, replay). */
function cliFuzz(inputs: { name: string; bytes: Buffer }[], count: number): void {
  const DIST = builtDist();
  try {
    const bin = join(DIST.dir, 'cli', 'main.js');
    const failures: string[] = [];
    const list = cases(inputs, Math.max(count * 7, 1));
    for (let k = 0; k < count && k < list.length; k++) {
      const c = list[(k * 7) % list.length]!;
      const file = join(root, `case-${k}-${basename(c.name.split(' ')[0]!)}`);
      writeFileSync(file, c.bytes);
      for (const args of [
        ['inspect', file],
        ['compact', file, '--budget', '2000'],
        ['replay', file],
      ]) {
        const r = spawnSync(process.execPath, [bin, ...args], {
          encoding: 'utf8',
          timeout: CASE_TIMEOUT_MS,
          env: { ...process.env, NO_COLOR: '1' },
        });
        // 3: compact could not reach the budget (documented), naming what must stay verbatim, one item a line.
        const ok =
          (r.status === 0 ||
            (r.status === 2 && /^abridge: [^\n]+\n$/.test(r.stderr)) ||
            (r.status === 3 && args[0] === 'compact' && /^abridge compact: budget not reached/.test(r.stderr))) &&
          r.signal === null;
        if (!ok)
          failures.push(`${c.name} · ${args[0]}: exit ${r.status} signal ${r.signal}: ${r.stderr.slice(0, 300)}`);
      }
    }
    expect(failures).toEqual([]);
  } finally {
    DIST.cleanup();
  }
}

/** The fixture transcripts' heads and the documents made from them: the fuzz's inputs in a clone without the corpus. */
async function fixtureSources(): Promise<{ name: string; bytes: Buffer }[]> {
  const fixtures = await fixtureTranscripts();
  const out = fixtures.map((f) => ({ name: `fixture/${f.folder}/${f.name}`, bytes: head(f.file) }));
  const claude = fixtures.find((f) => f.folder === 'claude-code')!;
  out.push(...derivedSources(head(EXAMPLE_PI, 120), messagesIn(head(claude.file))));
  return out;
}

// With the corpus, the fixtures get a quarter of the cases (the corpus has the rest); without it, all of them.
const FIXTURE_CASES = corpusAvailable() ? Math.ceil(CASES / 4) : CASES;
const FIXTURE_CLI_CASES = corpusAvailable() ? Math.ceil(CLI_CASES / 3) : CLI_CASES;

describe('mutation fuzz of the fixture transcripts', async () => {
  const inputs = await fixtureSources();

  it('the unmutated sources read, and the JSONL transcripts write back byte for byte', () => unmutatedRead(inputs));

  it(
    `${FIXTURE_CASES} mutated inputs through the library: 0 crashes, 0 hangs, 0 lost bytes`,
    {
      timeout: Math.max(120_000, FIXTURE_CASES * 2_000),
    },
    () => libraryFuzz('fixtures', inputs, FIXTURE_CASES),
  );

  it(
    `a sample of ${FIXTURE_CLI_CASES} mutated files through the built CLI (inspect, compact, replay): exit 0, 2 (one line on stderr) or 3 (compact over budget) within the time limit`,
    {
      timeout: Math.max(120_000, FIXTURE_CLI_CASES * 3 * CASE_TIMEOUT_MS),
    },
    () => cliFuzz(inputs, FIXTURE_CLI_CASES),
  );
});

describe.skipIf(!corpusAvailable())('mutation fuzz of the corpus', () => {
  const inputs = corpusAvailable() ? sources() : [];

  it('the unmutated sources read, and the JSONL transcripts write back byte for byte', () => unmutatedRead(inputs));

  it('cases the fuzz found, kept as regressions: a timestamp no Date can hold (1e308) made inspect throw a RangeError', async () => {
    const found: [string, MutationKind, number][] = [
      ['claude-code/marot__spotter__short.jsonl', 'type-change', 888363252],
      ['codex/s977043__plangate__codex-log-sample.jsonl', 'type-change', 250912341],
    ];
    for (const [name, kind, seed] of found) {
      const src = inputs.find((s) => s.name === name)!;
      const outcome = await runCase(`${name} ${kind} seed=${seed}`, mutate(src.bytes, kind, seed)!);
      expect(outcome.result, `${outcome.name}: ${outcome.detail}`).toBe('read');
    }
  });

  it(
    `${CASES} mutated inputs through the library: 0 crashes, 0 hangs, 0 lost bytes`,
    {
      timeout: Math.max(120_000, CASES * 2_000),
    },
    () => libraryFuzz('corpus', inputs, CASES),
  );

  it(
    `a sample of ${CLI_CASES} mutated files through the built CLI (inspect, compact, replay): exit 0, 2 (one line on stderr) or 3 (compact over budget) within the time limit`,
    {
      timeout: Math.max(120_000, CLI_CASES * 3 * CASE_TIMEOUT_MS),
    },
    () => cliFuzz(inputs, CLI_CASES),
  );
});
