import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { activeMessages, activeView } from '../model/view.js';
import type { Message } from '../model/types.js';
import { harnessPrefixTokens } from '../tokens/defaults.js';
import { HARNESS_PREFIX_TOKENS, KIMI_CLI_SYSTEM_PROMPT_TOKENS } from '../defaults.js';
import { detectFormat, sampleSource } from './detect.js';
import { inspectSession, inspectTranscript } from './inspect.js';
import { KIMI_COMPACTION_PREFIX, kimiCliFormat } from './kimi-cli.js';
import { parseSession, readSession } from './read.js';

// Lines shaped as kimi-cli writes them: its own records through Python's json.dumps (a space after each colon and
// comma), messages through pydantic's model_dump_json (compact), a one-text-part content as a bare string. Learned from
// the session committed in MoonshotAI/kimi-cli (outputs/scikit-learn__scikit-learn-26323/20251030-164452/
// 00d5060aaec3fda180930ea52304b87b/531d195b-6436-426e-b010-4bf723a992de.jsonl: `_checkpoint`, then `_usage` before
// and after each assistant message, `<system>…</system>` result prefixes, `Name:n` call ids) and from
// src/kimi_cli/soul/context.py, compaction.py and message.py there (`_system_prompt`, `think` parts, compaction).
const lines = (...ls: string[]) => `${ls.join('\n')}\n`;
const j = (r: unknown) => JSON.stringify(r);
const sys = (content: string) => `{"role": "_system_prompt", "content": ${JSON.stringify(content)}}`;
const checkpoint = (id: number) => `{"role": "_checkpoint", "id": ${id}}`;
const usage = (n: number) => `{"role": "_usage", "token_count": ${n}}`;
const call = (id: string, name: string, args: unknown) => ({
  type: 'function',
  id,
  function: { name, arguments: JSON.stringify(args) },
});

const transcript = lines(
  sys('You are Kimi Code CLI, an interactive general AI agent running on a user computer.'),
  checkpoint(0),
  j({ role: 'user', content: 'Run the tests and fix what fails.' }),
  checkpoint(1),
  usage(4504),
  j({
    role: 'assistant',
    content: [{ type: 'text', text: 'Running them first.' }],
    tool_calls: [call('Bash:0', 'Bash', { command: 'npm test' })],
  }),
  usage(4711),
  j({
    role: 'tool',
    content: [
      { type: 'text', text: '<system>ERROR: Command failed with exit code: 1.</system>' },
      { type: 'text', text: '1 failing' },
    ],
    tool_call_id: 'Bash:0',
  }),
  checkpoint(2),
  j({ role: 'user', content: '<system-reminder>\nPlan mode is off.\n</system-reminder>' }),
  usage(4800),
  j({
    role: 'assistant',
    content: [
      { type: 'think', think: 'The assertion is off by one.', encrypted: 'sig-1' },
      { type: 'text', text: 'Fixed the off-by-one.' },
    ],
  }),
  usage(4850),
);

const text = (m: Message | undefined) => (m?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('kimi-cli format', () => {
  it('detects a context file by its own records, and not bare chat messages or the formats beside it', () => {
    expect(detectFormat(sampleSource(transcript, true))).toMatchObject({ kind: 'supported', format: kimiCliFormat });
    const bare = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ];
    expect(kimiCliFormat.detect({ records: bare, head: '' })).toBe(0);
    // Cursor's lines have a role too, under a `message`.
    const cursor = [{ role: 'user', message: { content: [{ type: 'text', text: 'hi' }] } }, { type: 'turn_ended' }];
    expect(kimiCliFormat.detect({ records: cursor, head: '' })).toBe(0);
    // A Grok Build file from before its format version 1 is chat rows with no kimi-cli records.
    const grokLegacy = [
      { role: 'system', content: 'You are Grok.' },
      { role: 'user', content: '<user_query>\nread it\n</user_query>' },
    ];
    expect(kimiCliFormat.detect({ records: grokLegacy, head: '' })).toBe(0);
    expect(parseSession(lines(...grokLegacy.map(j))).format).toBe('grok-build');
  });

  it('reads the history kimi-cli sends: the system prompt, turns, calls paired with results, usage around replies', () => {
    const s = parseSession(transcript);
    expect(s.format).toBe('kimi-cli');
    expect(s.problems).toEqual([]);
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user', 'assistant']);
    expect(text(view[0])).toBe('You are Kimi Code CLI, an interactive general AI agent running on a user computer.');
    expect(view[1]).toEqual({ role: 'user', parts: [{ type: 'text', text: 'Run the tests and fix what fails.' }] });
    expect(view[2]!.parts).toEqual([
      { type: 'text', text: 'Running them first.' },
      { type: 'tool-call', id: 'Bash:0', name: 'Bash', arguments: { command: 'npm test' } },
    ]);
    // The `_usage` before a reply is its prompt, the one after adds its output.
    expect(view[2]!.usage).toEqual({ input: 4504, output: 207, cacheRead: 0, cacheWrite: 0 });
    expect(view[3]!.parts).toEqual([
      {
        type: 'tool-result',
        callId: 'Bash:0',
        content: [
          { type: 'text', text: '<system>ERROR: Command failed with exit code: 1.</system>' },
          { type: 'text', text: '1 failing' },
        ],
        isError: true,
      },
    ]);
    expect(view[4]!.synthetic).toBe(true);
    expect(view[1]!.synthetic).toBeUndefined();
    expect(view[5]!.parts).toEqual([
      { type: 'thinking', text: 'The assertion is off by one.', signature: 'sig-1' },
      { type: 'text', text: 'Fixed the off-by-one.' },
    ]);
    expect(view[5]!.usage).toEqual({ input: 4800, output: 50, cacheRead: 0, cacheWrite: 0 });
    // The checkpoints and counts are kept as entries (with their own spacing), not sent.
    expect(s.entries.filter((e) => !e.message).map((e) => e.sourceType)).toEqual([
      '_checkpoint',
      '_checkpoint',
      '_usage',
      '_usage',
      '_checkpoint',
      '_usage',
      '_usage',
    ]);
    expect(s.entries[1]!.raw).toEqual({ role: '_checkpoint', id: 0 });
  });

  it('inspect, in memory or streamed: the last usage is the last reply’s, with its output; the tools paired', async () => {
    const report = inspectSession(parseSession(transcript), 'context.jsonl', 1);
    expect(report.format).toBe('kimi-cli');
    expect(report.problems).toEqual([]);
    expect(report.lastUsage).toMatchObject({ input: 4800, output: 50, prompt: 4800, line: 13 });
    expect(report.tools).toMatchObject({ calls: 1, results: 1, errors: 1 });
    // A stream sees the reply before the `_usage` that gives its output.
    const dir = mkdtempSync(join(tmpdir(), 'abridge-kimi-'));
    try {
      const path = join(dir, 'context.jsonl');
      writeFileSync(path, transcript);
      const streamed = await inspectTranscript(path);
      expect(streamed.lastUsage).toMatchObject({ input: 4800, output: 50, line: 13 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a compaction starts the file anew: the system prompt kept, the summary, the preserved messages after it', () => {
    const rows = lines(
      sys('You are Kimi.'),
      checkpoint(0),
      j({
        role: 'user',
        content: [
          { type: 'text', text: KIMI_COMPACTION_PREFIX },
          { type: 'text', text: '<current_focus>\nFixing the failing test\n</current_focus>' },
        ],
      }),
      j({ role: 'user', content: 'Does it pass now?' }),
      j({ role: 'assistant', content: 'Yes.' }),
      usage(1234),
      j({ role: 'user', content: 'Commit it.' }),
    );
    const s = parseSession(rows);
    expect(s.problems).toEqual([]);
    const view = activeView(s);
    expect(view.map((v) => v.message.role)).toEqual(['system', 'user', 'user', 'assistant', 'user']);
    const marker = s.entries[2]!.compaction;
    expect(marker).toEqual({
      number: 1,
      summary: '<current_focus>\nFixing the failing test\n</current_focus>',
      source: 'kimi-cli',
      firstKeptEntry: 0,
    });
    expect(view[1]!.message.parts[0]).toEqual({ type: 'text', text: KIMI_COMPACTION_PREFIX });
    expect(view.map((v) => text(v.message)).slice(2)).toEqual(['Does it pass now?', 'Yes.', 'Commit it.']);
    // The estimate written after a compaction is no reply's usage.
    expect(activeMessages(s).some((m) => m.usage)).toBe(false);
  });

  it('reads the older files: no system prompt (the prefix counts it), a compaction as an assistant message, media', () => {
    const rows = lines(
      checkpoint(0),
      j({
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', id: null } },
          { type: 'audio_url', audio_url: { url: 'data:audio/aac;base64,AAAA', id: 'a1' } },
        ],
      }),
      j({
        role: 'assistant',
        content: [
          { type: 'text', text: KIMI_COMPACTION_PREFIX },
          { type: 'text', text: 'S.' },
        ],
      }),
    );
    const s = parseSession(rows);
    expect(s.problems).toEqual([]);
    expect(s.entries[1]!.message!.parts).toEqual([
      { type: 'text', text: 'What is in this picture?' },
      { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=', byteSize: 8 },
      { type: 'file', mediaType: 'audio/aac', data: 'AAAA' },
    ]);
    expect(s.entries[2]!.compaction).toMatchObject({ summary: 'S.', source: 'kimi-cli' });
    expect(harnessPrefixTokens(s)).toBe(HARNESS_PREFIX_TOKENS['kimi-cli'] + KIMI_CLI_SYSTEM_PROMPT_TOKENS);
    expect(harnessPrefixTokens(parseSession(transcript))).toBe(HARNESS_PREFIX_TOKENS['kimi-cli']);
  });

  it('refuses bad records with the line and what was expected, and reads on', () => {
    const rows = lines(
      checkpoint(0),
      j({ role: 'user', content: 'hi' }),
      '{"role": "_usage", "token_count": "many"}',
      j({ role: 'robot', content: 'beep' }),
      j({ role: 'tool', content: 'orphan' }),
      j({ role: 'assistant', content: 42 }),
      j({ hello: 'world' }),
      '{"role":"user","content":[{"type":"text","text":"cut',
      j({ role: 'assistant', content: 'still reading' }),
    );
    const s = parseSession(rows, { format: 'kimi-cli' });
    expect(s.problems.map((p) => [p.line, p.kind])).toEqual([
      [3, 'invalid-entry'],
      [4, 'unknown-entry-type'],
      [5, 'invalid-entry'],
      [6, 'invalid-entry'],
      [7, 'invalid-entry'],
      [8, 'truncated-line'],
    ]);
    expect(s.problems[0]!.message).toMatch(/line 3: Kimi CLI _usage record without an integer "token_count"/);
    expect(s.problems[1]!.message).toMatch(/line 4: unknown Kimi CLI context role "robot"/);
    expect(s.problems[2]!.message).toMatch(/line 5: .*tool_call_id/);
    expect(s.problems[3]!.message).toMatch(/line 6: .*"content" is neither a string nor a list of parts/);
    expect(s.problems[4]!.message).toMatch(/line 7: expected a Kimi CLI context record/);
    expect(activeMessages(s).map(text)).toEqual(['hi', 'still reading']);
  });

  it('reads a context file from disk with readSession', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-kimi-'));
    try {
      const path = join(dir, 'context.jsonl');
      writeFileSync(path, transcript);
      const s = await readSession(path);
      expect(s.format).toBe('kimi-cli');
      expect(activeMessages(s)).toHaveLength(6);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
