import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSession } from '../../formats/read.js';
import { activeView } from '../../model/view.js';
import type { Message, Session } from '../../model/types.js';
import { anthropicClient } from '../../adapters/anthropic.js';
import { TokenCounter } from '../../tokens/counter.js';
import { compact } from '../compact.js';
import { summaryMessage } from '../strategies/summarize.js';
import { LLM_SUMMARY_SECTIONS, LlmSummarizer, type LlmClient, type LlmSummarizerOptions } from './llm.js';

// ---------------------------------------------------------------------------------------------------------------
// A loopback server speaking Anthropic's Messages API (POST /v1/messages), used through the official SDK.

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: { model: string; max_tokens: number; system: string; messages: { role: string; content: string }[] };
}

type Reply = { status: number; body: unknown } | { text: string };

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function anthropicServer(reply: (r: Received, n: number) => Reply) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      };
      received.push(r);
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${received.length}` });
        res.end(JSON.stringify(body));
      };
      if (r.method !== 'POST' || r.url !== '/v1/messages')
        return send(404, { type: 'error', error: { type: 'not_found_error', message: `no route ${r.url}` } });
      const out = reply(r, received.length);
      if ('status' in out) return send(out.status, out.body);
      send(200, {
        id: `msg_0${received.length}`,
        type: 'message',
        role: 'assistant',
        model: r.body.model,
        content: out.text ? [{ type: 'text', text: out.text }] : [],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 1234, output_tokens: 56, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const handle = {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(handle);
  return handle;
}

const MODEL = 'claude-haiku-4-5';

async function summarizerFor(url: string, contextWindow?: number, options: LlmSummarizerOptions = {}) {
  const client = await anthropicClient({
    model: MODEL,
    apiKey: 'test-key',
    baseURL: url,
    maxRetries: 0,
    ...(contextWindow ? { contextWindow } : {}),
  });
  return new LlmSummarizer(client, options);
}

/**
 * A well-formed hand-off answer: every section, `body` under the first, and enough words to stand for a span; it names
 * the files and the unresolved error of the spans below, as the checklist asks.
 */
function handoff(body: string): string {
  return LLM_SUMMARY_SECTIONS.map(
    (title, i) =>
      `## ${title}\n${i === 0 ? body : `- ${title.toLowerCase()}: src/lexer/tokenizer.ts (CRLF split) and src/parser/headers.ts were the files in play; \`npx vitest run test/parser.test.ts\` still fails on the parser headers.`}`,
  ).join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Canonical messages.

const user = (text: string): Message => ({ role: 'user', parts: [{ type: 'text', text }] });
const assistant = (text: string, calls: { id: string; name: string; args: unknown }[] = []): Message => ({
  role: 'assistant',
  parts: [
    { type: 'text', text },
    ...calls.map((c) => ({ type: 'tool-call' as const, id: c.id, name: c.name, arguments: c.args })),
  ],
});
const result = (callId: string, toolName: string, text: string, isError = false): Message => ({
  role: 'tool',
  parts: [{ type: 'tool-result', callId, toolName, content: [{ type: 'text', text }], isError }],
});

const OLD_SPAN: Message[] = [
  user('Also make the tokenizer handle CRLF line endings. Do not touch package.json.'),
  assistant('Let me read the tokenizer first.', [{ id: 'c1', name: 'read', args: { path: 'src/lexer/tokenizer.ts' } }]),
  result('c1', 'read', 'export function tokenize(input: string) {\n  return input.split("\\n");\n}'),
  assistant("I'll switch to a regex split on \\r?\\n.", [
    { id: 'c2', name: 'edit', args: { path: 'src/lexer/tokenizer.ts', old: 'split("\\n")', new: 'split(/\\r?\\n/)' } },
  ]),
  result('c2', 'edit', 'Edited src/lexer/tokenizer.ts'),
];

const NEW_SPAN: Message[] = [
  assistant('Now run the tests.', [
    { id: 'c3', name: 'bash', args: { command: 'npx vitest run test/parser.test.ts' } },
  ]),
  result(
    'c3',
    'bash',
    'FAIL test/parser.test.ts > parses headers\nError: expected 3 to be 4\nTests: 1 failed, 41 passed\nexit code: 1',
    true,
  ),
  assistant('The header test fails: the root cause is the trailing newline in test/fixtures/headers.txt.', [
    { id: 'c4', name: 'read', args: { path: 'src/parser/headers.ts' } },
  ]),
  result('c4', 'read', 'export const HEADER_LIMIT = 64;'),
];

const counter = new TokenCounter();
const promptOf = (r: Received) => r.body.messages[0]!.content;

describe('LlmSummarizer (through @anthropic-ai/sdk, against a loopback Messages API)', () => {
  it('sends a structured request with the evidence checklist, and returns the model text', async () => {
    const summary = handoff('Fix the parser.\n- src/lexer/tokenizer.ts modified');
    const server = await anthropicServer(() => ({ text: summary }));
    const summarizer = await summarizerFor(server.url);
    expect(summarizer.name).toBe('llm');
    const out = await summarizer.summarize({
      messages: [...OLD_SPAN, ...NEW_SPAN],
      task: 'Fix the failing parser tests.',
      maxTokens: 800,
      counter,
    });
    expect(out).toBe(summary);

    expect(server.received).toHaveLength(1);
    const r = server.received[0]!;
    // The key travels as this SDK version sends it (x-api-key, or a bearer token in recent versions).
    expect(String(r.headers['x-api-key'] ?? r.headers.authorization)).toMatch(/^(Bearer )?test-key$/);
    expect(r.body.model).toBe(MODEL);
    expect(r.body.messages).toHaveLength(1);
    expect(r.body.messages[0]!.role).toBe('user');
    // The answer may take the summary budget plus the tokenizer slack and some room.
    expect(r.body.max_tokens).toBe(Math.ceil(800 * 1.25) + 256);
    // The system prompt: the hand-off sections, the keep-everything rule, the length and the answer-only rule.
    for (const s of LLM_SUMMARY_SECTIONS) expect(r.body.system).toContain(`## ${s}`);
    expect(r.body.system).toContain('Keep every file path, command, error line and number');
    expect(r.body.system).toContain('never call an error fixed without a later success');
    expect(r.body.system).toContain('at most 800 tokens');
    expect(r.body.system).toContain('Answer only with the summary');

    const prompt = promptOf(r);
    expect(prompt).toContain('<original-task>\nFix the failing parser tests.\n</original-task>');
    expect(prompt).not.toContain('Update this summary');
    // The checklist is the extractive hand-off of the same messages: the files with what happened to them, the failure
    // as its record gives it (no exit code: the result was flagged, the harness wrote none), the person's words.
    const checklist = prompt.slice(prompt.indexOf('<checklist>'), prompt.indexOf('</checklist>'));
    expect(checklist).toContain('### Files modified\n- src/lexer/tokenizer.ts — edited');
    expect(checklist).toContain('- src/parser/headers.ts (read)');
    expect(checklist).toContain('`npx vitest run test/parser.test.ts` (failed)');
    expect(checklist).toContain('Error: expected 3 to be 4');
    expect(checklist).toContain('Do not touch package.json.');
    expect(checklist).not.toContain('exit 1');
    // The messages themselves, in order, tool calls and results included.
    const messages = prompt.slice(prompt.indexOf('<messages>'));
    const order = [
      'Also make the tokenizer handle CRLF',
      '[tool call read #c1] {"path":"src/lexer/tokenizer.ts"}',
      '[tool result edit #c2]',
      '[tool result bash #c3, error]',
      'HEADER_LIMIT = 64',
    ];
    const at = order.map((s) => messages.indexOf(s));
    expect(at.every((i) => i > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(prompt).not.toContain('omitted');
  });

  it('is incremental: sends the previous summary and only the new messages', async () => {
    const first = handoff('Fix the parser.\n- modified src/lexer/tokenizer.ts (CRLF split)');
    const second = `${first}\n- tests: 1 failed, 41 passed`;
    const server = await anthropicServer((_r, n) => ({ text: n === 1 ? first : second }));
    const summarizer = await summarizerFor(server.url);
    const s1 = await summarizer.summarize({
      messages: OLD_SPAN,
      task: 'Fix the failing parser tests.',
      maxTokens: 600,
      counter,
    });
    expect(s1).toBe(first);
    // The chain's second span: the earlier summary first, then what followed it.
    const s2 = await summarizer.summarize({
      messages: [summaryMessage(s1), ...NEW_SPAN],
      previousSummary: s1,
      task: 'Fix the failing parser tests.',
      maxTokens: 600,
      counter,
    });
    expect(s2).toBe(second);

    const prompt = promptOf(server.received[1]!);
    expect(prompt.startsWith('Update this summary with what follows; keep everything in it.')).toBe(true);
    expect(prompt).toContain(`<previous-summary>\n${first}\n</previous-summary>`);
    const fresh = prompt.slice(prompt.indexOf('<new-messages>'));
    expect(fresh).toContain('npx vitest run test/parser.test.ts');
    expect(fresh).toContain('HEADER_LIMIT = 64');
    // None of the old messages: they are in the previous summary already.
    expect(prompt).not.toContain('Let me read the tokenizer first.');
    expect(prompt).not.toContain('Do not touch package.json.');
    expect(prompt).not.toContain('split(/\\\\r?\\\\n/)');
    // The checklist covers the new messages.
    const checklist = prompt.slice(prompt.indexOf('<checklist>'), prompt.indexOf('</checklist>'));
    expect(checklist).toContain('src/parser/headers.ts');
    expect(checklist).toContain('`npx vitest run test/parser.test.ts` → failed');
    expect(checklist).not.toContain('src/lexer/tokenizer.ts');
  });

  it('fits a span far larger than its window: huge results cut to head and tail, the oldest groups left out', async () => {
    const server = await anthropicServer(() => ({ text: '## Original task\nok' }));
    const window = 8000;
    const summarizer = await summarizerFor(server.url, window);
    const span: Message[] = [user('USER-FIRST: keep the public API stable.')];
    const steps = 40;
    for (let k = 0; k < steps; k++) {
      span.push(
        assistant(`STEP-${k}: checking src/file${k}.ts`, [
          { id: `k${k}`, name: 'bash', args: { command: `cat src/file${k}.ts` } },
        ]),
      );
      const body =
        k === steps - 1
          ? `HEAD-OF-HUGE\n${'x = compute(y) + 1;\n'.repeat(12_000)}TAIL-OF-HUGE`
          : Array.from({ length: 60 }, (_, i) => `line ${i} of file ${k}: const v${i} = ${i * k};`).join('\n');
      span.push(result(`k${k}`, 'bash', body));
    }
    const spanTokens = span.reduce((n, m) => n + counter.message(m), 0);
    expect(spanTokens).toBeGreaterThan(window * 10);

    await summarizer.summarize({ messages: span, maxTokens: 400, counter });
    const r = server.received[0]!;
    const prompt = promptOf(r);
    // The whole request fits the window, with the answer's tokens and the safety margin, at the tokenizer slack.
    expect(r.body.max_tokens).toBe(Math.ceil(400 * 1.25) + 256);
    expect(Math.ceil((counter.text(r.body.system) + counter.text(prompt)) * 1.25)).toBeLessThanOrEqual(
      window - r.body.max_tokens - 256,
    );

    // The huge newest result was cut to its head and tail rather than dropping the newest step.
    expect(prompt).toContain(`STEP-${steps - 1}`);
    expect(prompt).toContain('HEAD-OF-HUGE');
    expect(prompt).toContain('TAIL-OF-HUGE');
    expect(prompt).toMatch(/\[… \d+ characters omitted …\]/);
    // The oldest groups went first: what is left is a suffix of the steps, and the note counts what went.
    const present = Array.from({ length: steps }, (_, k) => prompt.includes(`STEP-${k}:`));
    const firstKept = present.indexOf(true);
    expect(firstKept).toBeGreaterThan(0);
    expect(present.slice(firstKept).every(Boolean)).toBe(true);
    expect(prompt).not.toContain('USER-FIRST: keep the public API stable.\n[assistant]');
    const omitted = 1 + 2 * firstKept; // the user message, then an assistant message and its result per step
    expect(prompt).toContain(`[${omitted} earlier messages omitted to fit the summarizer's window]`);
    // The checklist still names what the left-out messages touched (the newest of them, as far as it holds).
    const checklist = prompt.slice(prompt.indexOf('<checklist>'), prompt.indexOf('</checklist>'));
    expect(checklist).toContain(`\`cat src/file${firstKept - 1}.ts\``);
  });

  it('keeps its request within a tiny window even when the checklist alone would not fit', async () => {
    const server = await anthropicServer(() => ({ text: 'summary' }));
    const summarizer = await summarizerFor(server.url, 4000);
    const span: Message[] = [];
    for (let k = 0; k < 400; k++) {
      span.push(
        assistant(`reading ${k}`, [
          { id: `r${k}`, name: 'read', args: { path: `packages/module-${k}/src/deeply/nested/path/file-${k}.ts` } },
        ]),
      );
      span.push(result(`r${k}`, 'read', `contents of file ${k}`));
    }
    await summarizer.summarize({ messages: span, maxTokens: 300, counter });
    const r = server.received[0]!;
    expect(Math.ceil((counter.text(r.body.system) + counter.text(promptOf(r))) * 1.25)).toBeLessThanOrEqual(
      4000 - r.body.max_tokens - 256,
    );
    expect(promptOf(r)).toMatch(/\(Not listed for room: \d+ files read/);
    expect(promptOf(r)).toContain('file-399.ts');
  });

  it('with no fallback, throws a clear error when the server fails, or answers nothing', async () => {
    const failing = await anthropicServer(() => ({
      status: 500,
      body: { type: 'error', error: { type: 'api_error', message: 'Internal server error' } },
    }));
    const s1 = await summarizerFor(failing.url, undefined, { fallback: null });
    await expect(s1.summarize({ messages: NEW_SPAN, maxTokens: 500, counter })).rejects.toThrow(
      /LLM summarizer failed: the call to claude-haiku-4-5 failed: 500 .*Internal server error.*\(2 attempts\)/,
    );
    expect(failing.received).toHaveLength(2); // one retry by default

    const empty = await anthropicServer(() => ({ text: '' }));
    const s2 = await summarizerFor(empty.url, undefined, { fallback: null, retries: 0 });
    await expect(s2.summarize({ messages: NEW_SPAN, maxTokens: 500, counter })).rejects.toThrow(
      'the LLM summarizer failed: claude-haiku-4-5 returned an empty summary (1 attempt)',
    );

    const blank = await anthropicServer(() => ({ text: '  \n\n ' }));
    const s3 = await summarizerFor(blank.url, undefined, { fallback: null, retries: 0 });
    await expect(s3.summarize({ messages: NEW_SPAN, maxTokens: 500, counter })).rejects.toThrow(/empty summary/);
  });

  it('falls back to the extractive summary on a failure, a hung server, a non-summary or an absurdly short answer, and says why', async () => {
    const cases: { client: LlmClient; reason: RegExp }[] = [
      { client: fakeClient(async () => Promise.reject(new Error('socket hang up'))), reason: /failed: socket hang up/ },
      { client: fakeClient(() => new Promise<string>(() => {})), reason: /no answer within 50 ms/ },
      {
        client: fakeClient(async () => '{"error": "not json you expected"}'),
        reason: /left out the summary's sections/,
      },
      {
        client: fakeClient(async () => LLM_SUMMARY_SECTIONS.map((t) => `## ${t}`).join('\n')),
        reason: /returned \d+ tokens for \d+ messages/,
      },
    ];
    for (const c of cases) {
      const notes: string[] = [];
      const out = await new LlmSummarizer(c.client, { timeoutMs: 50, retries: 1 }).summarize({
        messages: [...OLD_SPAN, ...NEW_SPAN],
        task: 'Fix the failing parser tests.',
        maxTokens: 800,
        counter,
        report: (n) => notes.push(n),
      });
      expect(out.startsWith('## Summary of earlier conversation (abridge, extractive)')).toBe(true);
      expect(out).toContain('src/lexer/tokenizer.ts');
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatch(c.reason);
      expect(notes[0]).toMatch(/\(2 attempts\)\); the extractive summary was used instead$/);
    }
  });

  it('cuts an answer longer than maxTokens at a line boundary, with a note', async () => {
    const lines = handoff(
      Array.from({ length: 300 }, (_, i) => `- step ${i}: edited src/module${i}.ts and ran \`npm test\` (exit 0)`).join(
        '\n',
      ),
    ).split('\n');
    const server = await anthropicServer(() => ({ text: lines.join('\n') }));
    const summarizer = await summarizerFor(server.url);
    const out = await summarizer.summarize({ messages: NEW_SPAN, maxTokens: 300, counter });
    expect(counter.text(out)).toBeLessThanOrEqual(300);
    const outLines = out.split('\n');
    expect(outLines[outLines.length - 1]).toBe('[summary truncated to fit 300 tokens]');
    const kept = outLines.slice(0, -1);
    expect(kept.length).toBeGreaterThan(5);
    expect(kept).toEqual(lines.slice(0, kept.length));
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The whole compaction chain with the LLM summarizer.

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;

/** A pi session of a long refactor: talkative steps whose text, not tool output, fills the context. */
function syntheticPiSession(): Session {
  const ts = '2026-03-01T10:00:00.000Z';
  const records: unknown[] = [{ type: 'session', version: 3, id: 'llm-e2e', timestamp: ts, cwd: '/repo' }];
  let parent: string | null = null;
  let n = 0;
  const add = (message: unknown) => {
    const id = `e${++n}`;
    records.push({ type: 'message', id, parentId: parent, timestamp: ts, message });
    parent = id;
  };
  add({
    role: 'user',
    content: 'Refactor the config loader in src/config/load.ts to use zod. Never change the public API.',
    timestamp: n,
  });
  for (let k = 0; k < 30; k++) {
    if (k % 10 === 5)
      add({ role: 'user', content: `Checkpoint ${k}: remember to keep the error messages as they are.`, timestamp: n });
    add({
      role: 'assistant',
      content: [
        {
          type: 'text',
          text: `Step ${k}. ${'I looked at how the loader validates its keys and decided to keep the defaults in one place, then planned the next change carefully. '.repeat(6)}`,
        },
        {
          type: 'toolCall',
          id: `call${k}`,
          name: 'bash',
          arguments: { command: `npx vitest run src/config/case${k}.test.ts` },
        },
      ],
      api: 'anthropic-messages',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      stopReason: 'toolUse',
      timestamp: n,
    });
    add({
      role: 'toolResult',
      toolCallId: `call${k}`,
      toolName: 'bash',
      content: [{ type: 'text', text: `Tests: ${k + 1} passed\nexit code: 0` }],
      isError: false,
      timestamp: n,
    });
  }
  add({ role: 'user', content: 'Now finish the refactor.', timestamp: n });
  const s = parseSession(jsonl(records));
  expect(s.format).toBe('pi');
  expect(s.problems).toEqual([]);
  return s;
}

async function beforeTokensOf(session: Session): Promise<number> {
  return (await compact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [] })).beforeTokens;
}

describe('compact() with the LLM summarizer', () => {
  it('summarizes through the model and shows its summary in the view', async () => {
    const summary = handoff(
      'Refactor src/config/load.ts to zod.\n- `npx vitest run src/config/case0.test.ts` → exit 0',
    );
    const server = await anthropicServer(() => ({ text: summary }));
    const session = syntheticPiSession();
    const before = await beforeTokensOf(session);
    const target = Math.floor(before * 0.4);
    const result = await compact(session, { target, summarizer: await summarizerFor(server.url) });

    expect(result.strategiesRun.map((s) => s.name)).toContain('summarize');
    expect(result.skipped.find((s) => s.name === 'summarize')).toBeUndefined();
    expect(result.reachedTarget).toBe(true);
    expect(server.received.length).toBeGreaterThanOrEqual(1); // a summary larger than planned takes another pass
    expect(promptOf(server.received[0]!)).toContain('<checklist>');
    const view = activeView(session);
    const summaries = view.flatMap((it) =>
      it.message.parts
        .filter((p) => p.type === 'compaction')
        .map((p) => (p.type === 'compaction' ? p.marker.summary : '')),
    );
    expect(summaries).toEqual([summary]);
    expect(result.marker?.summary).toBe(summary);
  });

  it('falls back to the extractive summary when the model fails, and the result says so', async () => {
    const server = await anthropicServer(() => ({
      status: 500,
      body: { type: 'error', error: { type: 'api_error', message: 'Internal server error' } },
    }));
    const session = syntheticPiSession();
    const before = await beforeTokensOf(session);
    const target = Math.floor(before * 0.4);
    const result = await compact(session, { target, summarizer: await summarizerFor(server.url) });

    expect(server.received.length).toBeGreaterThan(0);
    expect(result.strategiesRun.map((s) => s.name)).toContain('summarize');
    expect(
      result.summaryNotes.some((n) => /LLM summarizer failed \(the call to claude-haiku-4-5 failed: 500 /.test(n)),
    ).toBe(true);
    expect(result.marker?.summary.startsWith('## Summary of earlier conversation (abridge, extractive)')).toBe(true);
    expect(result.reachedTarget).toBe(true);
    expect(result.afterTokens).toBeLessThanOrEqual(target);
  });
});

function fakeClient(complete: LlmClient['complete']): LlmClient {
  return { model: 'fake-model', contextWindow: 200_000, complete };
}
