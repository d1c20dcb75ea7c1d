import { LLM_SUMMARY_SECTIONS } from '../compaction/summarizers/llm.js';
import Anthropic from '@anthropic-ai/sdk';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ModelCatalog } from '../budget/catalog.js';
import { llmSummarizerFromEnv } from '../cli/llm.js';
import type { Message } from '../model/types.js';
import { AbridgeError } from '../errors.js';
import { TokenCounter } from '../tokens/counter.js';
import { anthropicClient } from './anthropic.js';
import { missingSdk } from './missing-sdk.js';
import { openaiClient } from './openai.js';

// ---------------------------------------------------------------------------------------------------------------
// One loopback server speaking the three wire formats: Anthropic `POST /v1/messages`, OpenAI
// `POST /v1/chat/completions` and `POST /v1/responses`.

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

type Reply = { text: string; extra?: 'thinking' | 'reasoning' } | { status: number; body: unknown };

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function anthropicMessage(model: string, reply: { text: string; extra?: string }, n: number) {
  const content: unknown[] = [];
  if (reply.extra === 'thinking')
    content.push({ type: 'thinking', thinking: 'Let me think about the sections.', signature: 'c2lnbmF0dXJl' });
  // Two text blocks: the client joins them.
  const cut = Math.floor(reply.text.length / 2);
  if (reply.text)
    content.push({ type: 'text', text: reply.text.slice(0, cut) }, { type: 'text', text: reply.text.slice(cut) });
  return {
    id: `msg_01Loopback${n}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 812, output_tokens: 64, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

function chatCompletion(model: string, reply: { text: string }, n: number) {
  return {
    id: `chatcmpl-loopback${n}`,
    object: 'chat.completion',
    created: 1_767_225_600,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: reply.text, refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: {
      prompt_tokens: 812,
      completion_tokens: 64,
      total_tokens: 876,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    },
    system_fingerprint: 'fp_loopback',
  };
}

function response(model: string, body: Record<string, unknown>, reply: { text: string; extra?: string }, n: number) {
  const output: unknown[] = [];
  if (reply.extra === 'reasoning') output.push({ type: 'reasoning', id: `rs_${n}`, summary: [] });
  output.push({
    type: 'message',
    id: `msg_${n}`,
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: reply.text, annotations: [], logprobs: [] }],
  });
  return {
    id: `resp_loopback${n}`,
    object: 'response',
    created_at: 1_767_225_600,
    status: 'completed',
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: body.store ?? true,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: {
      input_tokens: 812,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 64,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 876,
    },
    metadata: {},
  };
}

async function loopback(reply: (r: Received, n: number) => Reply) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const r: Received = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: text ? JSON.parse(text) : {},
      };
      received.push(r);
      const n = received.length;
      const send = (status: number, body: unknown) => {
        res.writeHead(status, {
          'content-type': 'application/json',
          'request-id': `req_${n}`,
          'x-request-id': `req_${n}`,
        });
        res.end(JSON.stringify(body));
      };
      const route = `${r.method} ${r.url}`;
      if (!['POST /v1/messages', 'POST /v1/chat/completions', 'POST /v1/responses'].includes(route))
        return send(404, { error: { message: `no route ${route}` } });
      const out = reply(r, n);
      if ('status' in out) return send(out.status, out.body);
      const model = String(r.body.model);
      if (route === 'POST /v1/messages') return send(200, anthropicMessage(model, out, n));
      if (route === 'POST /v1/chat/completions') return send(200, chatCompletion(model, out, n));
      return send(200, response(model, r.body, out, n));
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

const REQUEST = { system: 'You summarize.', prompt: 'Summarize: ran `npm test` in /repo.', maxOutputTokens: 777 };
const SERVER_ERROR = {
  status: 500,
  body: { type: 'error', error: { type: 'api_error', message: 'Internal server error' } },
};

// ---------------------------------------------------------------------------------------------------------------

describe('anthropicClient (@anthropic-ai/sdk)', () => {
  it('sends messages.create with the system prompt and one user message, and joins the text blocks', async () => {
    const server = await loopback(() => ({ text: '## Original task\nSummarized.', extra: 'thinking' }));
    const client = await anthropicClient({
      model: 'claude-haiku-4-5',
      apiKey: 'sk-ant-test',
      baseURL: server.url,
      maxRetries: 0,
    });
    expect(await client.complete(REQUEST)).toBe('## Original task\nSummarized.');
    expect(server.received).toHaveLength(1);
    const r = server.received[0]!;
    expect(r.url).toBe('/v1/messages');
    expect(r.headers['anthropic-version']).toBeTruthy();
    expect(String(r.headers['x-api-key'] ?? r.headers.authorization)).toMatch(/^(Bearer )?sk-ant-test$/);
    expect(r.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 777,
      system: 'You summarize.',
      messages: [{ role: 'user', content: 'Summarize: ran `npm test` in /repo.' }],
    });
  });

  it('takes its window and output limit from the model catalog unless given', async () => {
    const info = new ModelCatalog().lookup('claude-sonnet-4-5');
    const client = await anthropicClient({ model: 'claude-sonnet-4-5', apiKey: 'k', baseURL: 'http://127.0.0.1:9' });
    expect(client.model).toBe('claude-sonnet-4-5');
    expect(client.contextWindow).toBe(info.contextWindow);
    expect(client.contextWindow).toBeGreaterThanOrEqual(200_000);
    expect(client.maxOutputTokens).toBe(info.maxOutputTokens);
    const small = await anthropicClient({
      model: 'claude-sonnet-4-5',
      apiKey: 'k',
      baseURL: 'http://127.0.0.1:9',
      contextWindow: 32_000,
      maxOutputTokens: 2_000,
    });
    expect([small.contextWindow, small.maxOutputTokens]).toEqual([32_000, 2_000]);
  });

  it('uses a client it is given', async () => {
    const server = await loopback(() => ({ text: 'from the given client' }));
    const sdk = new Anthropic({ apiKey: 'given', baseURL: server.url, maxRetries: 0 });
    const client = await anthropicClient({ model: 'claude-haiku-4-5', client: sdk });
    expect(await client.complete(REQUEST)).toBe('from the given client');
    expect(String(server.received[0]!.headers['x-api-key'] ?? server.received[0]!.headers.authorization)).toContain(
      'given',
    );
  });

  it('rejects with the API error when the server fails, and returns nothing for a reply without text', async () => {
    const server = await loopback((_r, n) => (n === 1 ? SERVER_ERROR : { text: '' }));
    const client = await anthropicClient({
      model: 'claude-haiku-4-5',
      apiKey: 'k',
      baseURL: server.url,
      maxRetries: 0,
    });
    const err = await client.complete(REQUEST).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(500);
    expect(server.received).toHaveLength(1); // maxRetries: 0
    expect(await client.complete(REQUEST)).toBe('');
  });
});

describe('openaiClient (openai)', () => {
  it('chat: sends chat.completions.create with a system and a user message and max_completion_tokens', async () => {
    const server = await loopback(() => ({ text: '## Original task\nChat summary.' }));
    const client = await openaiClient({
      model: 'gpt-5-mini',
      apiKey: 'sk-test',
      baseURL: `${server.url}/v1`,
      maxRetries: 0,
    });
    expect(await client.complete(REQUEST)).toBe('## Original task\nChat summary.');
    const r = server.received[0]!;
    expect(r.url).toBe('/v1/chat/completions');
    expect(r.headers.authorization).toBe('Bearer sk-test');
    expect(r.body).toEqual({
      model: 'gpt-5-mini',
      messages: [
        { role: 'system', content: 'You summarize.' },
        { role: 'user', content: 'Summarize: ran `npm test` in /repo.' },
      ],
      max_completion_tokens: 777,
    });
  });

  it('chat: names the limit max_tokens when asked (older compatible servers)', async () => {
    const server = await loopback(() => ({ text: 'ok' }));
    const client = await openaiClient({
      model: 'local-model',
      apiKey: 'sk-test',
      baseURL: `${server.url}/v1`,
      maxRetries: 0,
      maxTokensParameter: 'max_tokens',
      contextWindow: 16_000,
    });
    expect(await client.complete(REQUEST)).toBe('ok');
    expect(server.received[0]!.body.max_tokens).toBe(777);
    expect(server.received[0]!.body).not.toHaveProperty('max_completion_tokens');
    expect(client.contextWindow).toBe(16_000);
  });

  it('responses: sends responses.create with instructions, input, max_output_tokens and store: false; reads the output text', async () => {
    const server = await loopback(() => ({ text: '## Original task\nResponses summary.', extra: 'reasoning' }));
    const client = await openaiClient({
      model: 'gpt-5-mini',
      api: 'responses',
      apiKey: 'sk-test',
      baseURL: `${server.url}/v1`,
      maxRetries: 0,
    });
    expect(await client.complete(REQUEST)).toBe('## Original task\nResponses summary.');
    const r = server.received[0]!;
    expect(r.url).toBe('/v1/responses');
    expect(r.body).toEqual({
      model: 'gpt-5-mini',
      instructions: 'You summarize.',
      input: 'Summarize: ran `npm test` in /repo.',
      max_output_tokens: 777,
      store: false,
    });
  });

  it('takes its window from the model catalog, and uses a client it is given', async () => {
    const server = await loopback(() => ({ text: 'given' }));
    const client = await openaiClient({
      model: 'gpt-4o',
      client: new OpenAI({ apiKey: 'given', baseURL: `${server.url}/v1`, maxRetries: 0 }),
    });
    expect(client.contextWindow).toBe(new ModelCatalog().lookup('gpt-4o').contextWindow);
    expect(await client.complete(REQUEST)).toBe('given');
    expect(server.received[0]!.headers.authorization).toBe('Bearer given');
  });

  it('rejects with the API error when the server fails (both APIs)', async () => {
    const server = await loopback(() => ({
      status: 500,
      body: { error: { message: 'The server had an error', type: 'server_error', param: null, code: null } },
    }));
    for (const api of ['chat', 'responses'] as const) {
      const client = await openaiClient({
        model: 'gpt-5-mini',
        api,
        apiKey: 'k',
        baseURL: `${server.url}/v1`,
        maxRetries: 0,
      });
      const err = await client.complete(REQUEST).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    }
    expect(server.received.map((r) => r.url)).toEqual(['/v1/chat/completions', '/v1/responses']);
  });
});

// ---------------------------------------------------------------------------------------------------------------

const SPAN: Message[] = [
  { role: 'user', parts: [{ type: 'text', text: 'Make the build pass. Keep Node 20 support.' }] },
  {
    role: 'assistant',
    parts: [
      { type: 'text', text: 'Building.' },
      { type: 'tool-call', id: 'b1', name: 'bash', arguments: { command: 'npm run build' } },
    ],
  },
  {
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: 'b1',
        toolName: 'bash',
        // pi's bash writes the exit code after the output.
        content: [{ type: 'text', text: 'src/index.ts(3,1): error TS2307\n\nCommand exited with code 2' }],
        isError: true,
      },
    ],
  },
];

const BASE_ENV = {
  ABRIDGE_LLM_PROVIDER: 'anthropic',
  ABRIDGE_LLM_MODEL: 'claude-haiku-4-5',
  ANTHROPIC_API_KEY: 'sk-ant-env',
};

function envError(env: Record<string, string | undefined>): AbridgeError {
  try {
    llmSummarizerFromEnv(env);
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    return err as AbridgeError;
  }
  throw new Error(`no error for ${JSON.stringify(env)}`);
}

describe('llmSummarizerFromEnv', () => {
  it('names the missing or bad variable and what it may be', () => {
    const cases: [Record<string, string | undefined>, RegExp][] = [
      [
        { ...BASE_ENV, ABRIDGE_LLM_PROVIDER: undefined },
        /^ABRIDGE_LLM_PROVIDER is not set.*\(one of anthropic, openai, openai-responses\)$/,
      ],
      [{ ...BASE_ENV, ABRIDGE_LLM_PROVIDER: '  ' }, /^ABRIDGE_LLM_PROVIDER is not set/],
      [
        { ...BASE_ENV, ABRIDGE_LLM_PROVIDER: 'gemini' },
        /^ABRIDGE_LLM_PROVIDER: expected one of anthropic, openai, openai-responses, got "gemini"$/,
      ],
      [{ ...BASE_ENV, ABRIDGE_LLM_MODEL: undefined }, /^ABRIDGE_LLM_MODEL is not set: .*anthropic model/],
      [{ ...BASE_ENV, ABRIDGE_LLM_MODEL: '' }, /^ABRIDGE_LLM_MODEL is not set/],
      [
        { ...BASE_ENV, ANTHROPIC_API_KEY: undefined },
        /^ANTHROPIC_API_KEY is not set: .*ABRIDGE_LLM_PROVIDER=anthropic/,
      ],
      [
        { ...BASE_ENV, ABRIDGE_LLM_PROVIDER: 'openai', ANTHROPIC_API_KEY: 'x' },
        /^OPENAI_API_KEY is not set: .*ABRIDGE_LLM_PROVIDER=openai /,
      ],
      [
        { ...BASE_ENV, ABRIDGE_LLM_PROVIDER: 'openai-responses' },
        /^OPENAI_API_KEY is not set: .*ABRIDGE_LLM_PROVIDER=openai-responses/,
      ],
      [
        { ...BASE_ENV, ABRIDGE_LLM_BASE_URL: 'localhost:8080' },
        /^ABRIDGE_LLM_BASE_URL: expected an http:\/\/ or https:\/\/ URL, got "localhost:8080"$/,
      ],
      [{ ...BASE_ENV, ABRIDGE_LLM_BASE_URL: 'ftp://example.com' }, /^ABRIDGE_LLM_BASE_URL: expected an http/],
      [
        { ...BASE_ENV, ABRIDGE_LLM_CONTEXT_WINDOW: '128k' },
        /^ABRIDGE_LLM_CONTEXT_WINDOW: expected a whole number of tokens of at least 1000, got "128k"$/,
      ],
      [{ ...BASE_ENV, ABRIDGE_LLM_CONTEXT_WINDOW: '10' }, /^ABRIDGE_LLM_CONTEXT_WINDOW: expected a whole number/],
    ];
    for (const [env, message] of cases) {
      const err = envError(env);
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.message).toMatch(message);
    }
  });

  it('is synchronous and makes no request until the first summary', async () => {
    const server = await loopback(() => ({ text: 'never' }));
    const summarizer = llmSummarizerFromEnv({ ...BASE_ENV, ABRIDGE_LLM_BASE_URL: server.url });
    expect(summarizer).not.toBeInstanceOf(Promise);
    expect(summarizer.name).toBe('llm');
    await new Promise((r) => setTimeout(r, 20));
    expect(server.received).toHaveLength(0);
  });

  it.each([
    ['anthropic', { ANTHROPIC_API_KEY: 'sk-ant-env' }, '', '/v1/messages'],
    ['openai', { OPENAI_API_KEY: 'sk-env' }, '/v1', '/v1/chat/completions'],
    ['openai-responses', { OPENAI_API_KEY: 'sk-env' }, '/v1', '/v1/responses'],
  ] as const)('summarizes through %s as the environment says', async (provider, keys, suffix, path) => {
    // A summary with the sections the LLM summarizer asks for (an answer without them is refused and replaced).
    // An answer the summarizer accepts: every section, the build and its unresolved failure named.
    const answer = `${LLM_SUMMARY_SECTIONS.map((s) => `## ${s}\nSummary from ${provider}: ${s.toLowerCase()} of the span — \`npm run build\` still fails (error TS2307); keep Node 20 support.`).join('\n\n')}`;
    const server = await loopback(() => ({ text: answer }));
    const summarizer = llmSummarizerFromEnv({
      ABRIDGE_LLM_PROVIDER: provider,
      ABRIDGE_LLM_MODEL: 'some-model',
      ABRIDGE_LLM_BASE_URL: `${server.url}${suffix}`,
      ABRIDGE_LLM_CONTEXT_WINDOW: '50000',
      ...keys,
    });
    const out = await summarizer.summarize({ messages: SPAN, maxTokens: 500, counter: new TokenCounter() });
    expect(out).toBe(answer);
    expect(server.received.map((r) => r.url)).toEqual([path]);
    const body = server.received[0]!.body;
    expect(body.model).toBe('some-model');
    const prompt = JSON.stringify(body);
    expect(prompt).toContain('`npm run build` → exit 2');
    expect(prompt).toContain('Keep Node 20 support.');
    expect(String(server.received[0]!.headers.authorization ?? server.received[0]!.headers['x-api-key'])).toContain(
      provider === 'anthropic' ? 'sk-ant-env' : 'sk-env',
    );
  });
});

describe('a missing SDK', () => {
  it('recognizes "not installed" errors, also wrapped ones, and passes others through', () => {
    const notFound = Object.assign(
      new Error("Cannot find package '@anthropic-ai/sdk' imported from /app/dist/providers/anthropic.js"),
      { code: 'ERR_MODULE_NOT_FOUND' },
    );
    const a = missingSdk(notFound, '@anthropic-ai/sdk', 'the Anthropic summarizer');
    expect(a).toBeInstanceOf(AbridgeError);
    expect((a as AbridgeError).code).toBe('MISSING_DEPENDENCY');
    expect((a as AbridgeError).message).toMatch(/^install @anthropic-ai\/sdk to use the Anthropic summarizer/);
    expect(missingSdk(new Error('wrapped', { cause: notFound }), '@anthropic-ai/sdk', 'x')).toBeInstanceOf(
      AbridgeError,
    );
    const other = new Error("Cannot find package 'zod' imported from /x.js");
    expect(missingSdk(other, '@anthropic-ai/sdk', 'x')).toBe(other);
    const syntax = new SyntaxError('Unexpected token');
    expect(missingSdk(syntax, 'openai', 'x')).toBe(syntax);
  });

  it.each([
    ['@anthropic-ai/sdk', 'anthropic', 'install @anthropic-ai/sdk to use the Anthropic summarizer'],
    ['openai', 'openai', 'install openai to use the OpenAI summarizer'],
  ] as const)(
    '%s: the factory rejects with MISSING_DEPENDENCY, and the env summarizer fails its summary with it',
    async (pkg, provider, message) => {
      vi.resetModules();
      vi.doMock(pkg, () => {
        throw Object.assign(
          new Error(`Cannot find package '${pkg}' imported from /app/dist/providers/${provider}.js`),
          { code: 'ERR_MODULE_NOT_FOUND' },
        );
      });
      try {
        const mod = provider === 'anthropic' ? await import('./anthropic.js') : await import('./openai.js');
        const factory = 'anthropicClient' in mod ? mod.anthropicClient : mod.openaiClient;
        const err = await factory({ model: 'm', apiKey: 'k' }).catch((e: unknown) => e);
        expect(err).toMatchObject({ name: 'AbridgeError', code: 'MISSING_DEPENDENCY' });
        expect((err as Error).message.startsWith(message)).toBe(true);

        const { llmSummarizerFromEnv: fromEnv } = await import('../cli/llm.js');
        const summarizer = fromEnv({
          ABRIDGE_LLM_PROVIDER: provider,
          ABRIDGE_LLM_MODEL: 'm',
          ANTHROPIC_API_KEY: 'k',
          OPENAI_API_KEY: 'k',
        });
        await expect(
          summarizer.summarize({ messages: SPAN, maxTokens: 500, counter: new TokenCounter() }),
        ).rejects.toThrow(message);
      } finally {
        vi.doUnmock(pkg);
        vi.resetModules();
      }
    },
  );
});
