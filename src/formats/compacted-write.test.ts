/**
 * A writer given a compacted session writes its compacted view: the messages the model sees (summary in place, edits
 * applied), never the archived history. Checked on the fixture transcripts and on real transcripts for the four request formats, converted from their
 * own format and written back to the format they were read from.
 */
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compact, forceCompact } from '../compaction/compact.js';
import type { Message, Session } from '../model/types.js';
import { activeMessages, type EntryEdit } from '../model/view.js';
import { corpusAvailable, corpusFile } from '../../test/support/corpus.js';
import { EXAMPLE_PI, fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { encodeAiSdkMessages } from './ai-sdk.js';
import { anthropicRequestProblems, encodeAnthropicRequest } from './anthropic.js';
import { encodeOpenaiChatRequest, openaiChatRequestProblems } from './openai-chat.js';
import { encodeOpenaiResponsesRequest, openaiResponsesRequestProblems } from './openai-responses.js';
import { parseSession, readSession } from './read.js';
import { writeSession } from './write.js';

const run = corpusAvailable() ? describe : describe.skip;

const FILES = [
  ['pi', 'anuragsinghbhandari__gitclaw__2026-02-12T13-04-21-117Z_b6e6bf81-1bc7-46a2-b959-05f29abc1d69.jsonl'],
  ['claude-code', 'PackmindHub__context-evaluator__26-13abb02349-0-full.jsonl'],
] as const;

type RequestFormat = 'anthropic' | 'openai-chat' | 'openai-responses' | 'ai-sdk';
const FORMATS: RequestFormat[] = ['anthropic', 'openai-chat', 'openai-responses', 'ai-sdk'];

/** The messages part of a written body, and what the one encoder of its format makes of the view. */
function messagesOf(format: RequestFormat, body: unknown): unknown {
  const b = body as Record<string, unknown>;
  if (format === 'anthropic' || format === 'openai-chat') return b.messages;
  if (format === 'openai-responses') return b.input;
  return Array.isArray(body) ? body : b.messages;
}

function encodeView(format: RequestFormat, view: readonly Message[]): unknown {
  if (format === 'anthropic') return encodeAnthropicRequest(view).messages;
  if (format === 'openai-chat') return encodeOpenaiChatRequest(view).messages;
  if (format === 'openai-responses') return encodeOpenaiResponsesRequest(view).input;
  return encodeAiSdkMessages(view);
}

function problems(format: RequestFormat, body: unknown): string[] {
  if (format === 'anthropic') return anthropicRequestProblems(body);
  if (format === 'openai-chat') return openaiChatRequestProblems(body);
  if (format === 'openai-responses') return openaiResponsesRequestProblems(body);
  return [];
}

function toolCalls(messages: readonly Message[]): number {
  return messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool-call').length;
}

/** Texts of the view, each as it appears inside a JSON string. */
function viewTexts(messages: readonly Message[]): string[] {
  const out: string[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    for (const p of m.parts)
      if (p.type === 'text' && p.text.trim() !== '') out.push(JSON.stringify(p.text.trim()).slice(1, -1));
  }
  return out;
}

/** Compacts a fresh read of `file` to a tenth of its size; returns the session and its written bodies before. */
async function compactedTenth(file: string): Promise<{
  session: Session;
  before: Record<RequestFormat, string>;
  beforeTokens: number;
  afterTokens: number;
  summary: string;
  edits: EntryEdit[];
}> {
  const session = await readSession(file);
  const before = Object.fromEntries(FORMATS.map((f) => [f, writeSession(session, f)])) as Record<RequestFormat, string>;
  const probe = await compact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [] });
  const r = await compact(session, { target: Math.round(probe.beforeTokens / 10) });
  expect(r.entry, 'the compaction appended a marker').toBeDefined();
  return {
    session,
    before,
    beforeTokens: r.beforeTokens,
    afterTokens: r.afterTokens,
    summary: r.marker?.summary ?? '',
    edits: r.marker?.edits ?? [],
  };
}

/** Compacted to a tenth and written in the four request formats: each body is exactly the compacted view. */
async function writesCompactedView(file: string): Promise<void> {
  const { session, before, beforeTokens, afterTokens, summary, edits } = await compactedTenth(file);
  // (Oldest-first compaction may archive everything old at a tenth instead of editing: edits are checked when made.)
  // Edited results: the edit is written, the original output is not.
  const resultText = (m: Message) =>
    m.parts
      .flatMap((p) => (p.type === 'tool-result' ? p.content : []))
      .map((c) => (c.type === 'text' ? c.text : ''))
      .join('\n');
  const editChecks = edits
    .map((e) => ({
      edited: resultText(e.message).trim(),
      original: resultText(session.entries[e.entry]!.message!).trim(),
    }))
    // An edit that keeps the output's head (a truncation) is checked by its edited text only.
    .filter(
      (x) => x.original.length > 200 && !x.original.includes(x.edited) && !x.edited.includes(x.original.slice(0, 200)),
    );

  const view = activeMessages(session);
  const share = afterTokens / beforeTokens;
  for (const format of FORMATS) {
    const text = writeSession(session, format);
    const body = JSON.parse(text) as unknown;
    expect(problems(format, body), format).toEqual([]);
    // Exactly the view, as the one encoder of the format makes it.
    expect(messagesOf(format, body), format).toEqual(encodeView(format, view));
    // Every text the model sees is there; the summary too; tool calls as many as in the view.
    for (const t of viewTexts(view)) expect(text.includes(t), `${format}: ${t.slice(0, 60)}`).toBe(true);
    for (const x of editChecks) {
      expect(text.includes(JSON.stringify(x.edited).slice(1, -1)), `${format}: the edit`).toBe(true);
      expect(
        text.includes(JSON.stringify(x.original.slice(0, 200)).slice(1, -1)),
        `${format}: the original result`,
      ).toBe(false);
    }
    if (summary.trim() !== '')
      expect(text.includes(JSON.stringify(summary.trim()).slice(1, 200)), `${format}: summary`).toBe(true);
    const calls = (text.match(/"(tool_use|tool-call|function_call)"|"type": "function"/g) ?? []).length;
    expect(calls, `${format}: tool calls`).toBe(toolCalls(view));
    // The body shrank with the context (not the original history in silence): at most twice the token share.
    expect(
      text.length / before[format].length,
      `${format}: ${text.length} bytes after, ${before[format].length} before`,
    ).toBeLessThan(Math.max(2 * share, 0.25));
  }
}

/** Written as a request body, read back, compacted and written to its own format: the compacted view, request fields kept. */
async function requestBodyRoundTrip(file: string): Promise<void> {
  const source = await readSession(file);
  for (const format of ['anthropic', 'openai-chat', 'openai-responses'] as const) {
    const written = writeSession(source, format);
    const session = parseSession(written);
    expect(session.format).toBe(format);
    // Not compacted: byte-identical.
    expect(writeSession(session, format)).toBe(written);
    const probe = await forceCompact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [] });
    const r = await compact(session, { target: Math.round(probe.beforeTokens / 10) });
    expect(r.entry).toBeDefined();
    const text = writeSession(session, format);
    const body = JSON.parse(text) as Record<string, unknown>;
    expect(messagesOf(format, body), format).toEqual(encodeView(format, activeMessages(session)));
    expect(body.model, format).toBe((JSON.parse(written) as Record<string, unknown>).model);
    if (format === 'anthropic')
      expect(body.max_tokens).toBe((JSON.parse(written) as Record<string, unknown>).max_tokens);
    expect(text.length, format).toBeLessThan(written.length / 2);
    expect(problems(format, body), format).toEqual([]);
  }
}

describe('writers of a compacted session write its compacted view (fixture transcripts)', () => {
  const claude = fixtureTranscripts().then((all) => all.find((f) => f.folder === 'claude-code')!.file);
  it('pi/refactor-session.jsonl compacted to a tenth, written in the four request formats', () =>
    writesCompactedView(EXAMPLE_PI));
  it('claude-code/refactor-session.jsonl compacted to a tenth, written in the four request formats', async () =>
    writesCompactedView(await claude));
  it('a request body read back, compacted, and written to its own format writes the compacted view (request fields kept)', async () =>
    requestBodyRoundTrip(await claude));
});

run('writers of a compacted session write its compacted view', () => {
  for (const [folder, name] of FILES) {
    it(`${folder}/${basename(name)} compacted to a tenth, written in the four request formats`, () =>
      writesCompactedView(corpusFile(folder, name)));
  }

  it('a request body read back, compacted, and written to its own format writes the compacted view (request fields kept)', () =>
    requestBodyRoundTrip(corpusFile(FILES[1][0], FILES[1][1])));
});
