/**
 * A loopback provider server that refuses what the real APIs refuse: Anthropic Messages (`/v1/messages`), OpenAI Chat
 * Completions (`/v1/chat/completions`) and OpenAI Responses (`/v1/responses`), JSON and SSE, with the real status codes
 * and error bodies, an independent bill (gpt-tokenizer o200k × a provider ratio, prompt caching simulated), and a
 * deterministic scripted "model". It imports nothing from abridge's `src/`.
 *
 *   const fake = await startFakeProvider({ window: 40_000, maxOutputTokens: 8_000 });
 *   new Anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant-test' });
 *   new OpenAI({ baseURL: fake.v1URL, apiKey: 'sk-test' });
 *   createAnthropic({ baseURL: fake.v1URL, apiKey: 'sk-ant-test' }); createOpenAI({ baseURL: fake.v1URL, apiKey: 'sk-test' });
 *   … fake.requests.filter((r) => r.refused).length === 0 …
 *   await fake.close();
 *
 * Refused, as the real APIs refuse them (status 400 unless said): a prompt over the window, prompt + requested max
 * output over the window, a max output above the model's cap, a tool call without its result or a result without its
 * call, Anthropic's empty or whitespace-only text blocks, empty content, a first message that is not `user`, no
 * messages, more than 4 `cache_control` breakpoints, thinking blocks unsigned or altered (signatures are verified), a
 * tool-use loop that lost its thinking block while thinking is enabled, a missing `max_tokens`, tool blocks without
 * `tools`, unknown fields (Anthropic's "Extra inputs are not permitted", Chat's "Unrecognized request argument",
 * Responses' "Unknown parameter"), images that cannot be decoded; 401 without an API key; 413 for an Anthropic body
 * over 32 MB. Every request is recorded in `requests` (refusals with `refused`, accepted ones with `usage`).
 *
 * Provider-native context management. Anthropic (fake-provider/context-management.ts): `context_management.edits`
 * behind their betas — `clear_tool_uses_20250919` and `clear_thinking_20251015` (`context-management-2025-06-27`) edit the prompt before it is billed and cached, and the response reports
 * `context_management.applied_edits` (JSON, and SSE `message_delta`); `compact_20260112` (`compact-2026-01-12`) opens
 * the response with a scripted `compaction` block (`stop_reason: "compaction"` when paused) and `usage.iterations`, and a
 * compaction block sent back drops everything before it from the bill; `count_tokens` returns the edited count with
 * `context_management.original_input_tokens`. Malformed edits are refused. Recorded as `appliedEdits`,
 * `originalPromptTokens`, `compacted`. OpenAI Responses: `context_management: [{type: 'compaction', compact_threshold}]`
 * — at the threshold the output opens with an opaque `compaction` item and inference is billed from instructions + tools
 * + that item; a compaction item in the input (sent back, or via `previous_response_id`) drops the items before it from
 * the bill; `POST /v1/responses/compact` returns the user messages and one compaction item.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  anthropicErrorBody,
  limitAnthropic,
  respondAnthropic,
  type Parsed as AnthropicParsed,
} from './fake-provider/anthropic.js';
import { parseAnthropicEdited } from './fake-provider/context-management.js';
import { AnthropicCache, OpenAICache, TokenCounter, type CacheOutcome } from './fake-provider/billing.js';
import { limitChat, parseChat, respondChat } from './fake-provider/openai-chat.js';
import {
  compactResponses,
  limitResponses,
  parseResponses,
  respondCompact,
  respondResponses,
  ResponsesStore,
  type ResponsesParsed,
} from './fake-provider/openai-responses.js';
import { answerFor } from './fake-provider/script.js';
import type {
  BilledUsage,
  FakeProvider,
  FakeProviderOptions,
  ModelAnswer,
  RecordedRequest,
  Refusal,
  ScriptContext,
  Wire,
} from './fake-provider/types.js';
import {
  idFrom,
  isRecord,
  RefusalError,
  type Emission,
  type ParsedRequest,
  type WireEnv,
  type WireResponse,
} from './fake-provider/wire.js';

export type * from './fake-provider/types.js';
export { SCRIPT_COMMANDS, SCRIPT_PATHS, DEFAULT_TOOL_TURNS } from './fake-provider/script.js';
export { o200k } from './fake-provider/billing.js';
export { signThinking } from './fake-provider/anthropic.js';
export { CLEARED_TOOL_RESULT, COMPACTION_BETA, CONTEXT_MANAGEMENT_BETA } from './fake-provider/context-management.js';

const ROUTES: Record<string, Wire> = {
  '/v1/messages': 'anthropic',
  '/v1/messages/count_tokens': 'anthropic',
  '/v1/chat/completions': 'openai-chat',
  '/v1/responses': 'openai-responses',
  '/v1/responses/compact': 'openai-responses',
  '/v1/responses/input_tokens': 'openai-responses',
};

/** Anthropic refuses bodies over 32 MB with 413 request_too_large (the OpenAI wires are not checked). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

const DEFAULT_RATIO: Record<Wire, number> = { anthropic: 1.15, 'openai-chat': 1.0, 'openai-responses': 1.0 };

function errorBody(wire: Wire, r: Refusal, requestId: string): unknown {
  if (wire === 'anthropic') return anthropicErrorBody(r, requestId);
  return { error: { message: r.message, type: r.type, param: r.param ?? null, code: r.code ?? null } };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function assistantTurns(p: ParsedRequest): number {
  let n = 0;
  let previous = '';
  for (const m of p.messages) {
    if (m.role === 'assistant' && previous !== 'assistant') n++;
    previous = m.role;
  }
  return n;
}

function outputTokens(
  answer: ModelAnswer,
  thinking: boolean,
  counter: TokenCounter,
): { output: number; reasoning: number } {
  const reasoning = thinking && answer.thinking ? counter.text(answer.thinking) : 0;
  let output = reasoning + (answer.text ? counter.text(answer.text) : 0);
  for (const call of answer.toolCalls ?? []) output += counter.text(call.name) + counter.json(call.input) + 12;
  return { output: Math.max(1, output), reasoning };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeProvider(options: FakeProviderOptions): Promise<FakeProvider> {
  const requests: RecordedRequest[] = [];
  const anthropicCaches = new Map<string, AnthropicCache>();
  const openaiCaches = new Map<string, OpenAICache>();
  const responsesStore = new ResponsesStore();
  const script = options.script ?? {};

  const cacheFor = (wire: Wire, model: string) => {
    const key = `${wire}|${model}`;
    if (wire === 'anthropic') {
      let c = anthropicCaches.get(key);
      if (!c) anthropicCaches.set(key, (c = new AnthropicCache(options.minCacheableTokens ?? 1024)));
      return c;
    }
    let c = openaiCaches.get(key);
    if (!c) openaiCaches.set(key, (c = new OpenAICache()));
    return c;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const wire: Wire = ROUTES[url.pathname] ?? (url.pathname.startsWith('/v1/messages') ? 'anthropic' : 'openai-chat');
    const record: RecordedRequest = {
      index: requests.length,
      wire,
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      headers: headersOf(req),
      body: undefined,
      stream: false,
    };
    requests.push(record);
    const requestId = idFrom(String(record.index) + raw.toString('latin1'), 'req_011', record.index, 21);
    const counter = new TokenCounter(options.tokenRatio ?? DEFAULT_RATIO[wire]);
    const env: WireEnv = { options, counter };

    const refuse = (r: Refusal) => {
      record.refused = r;
      res.writeHead(r.status, {
        'content-type': 'application/json',
        'request-id': requestId,
        'x-request-id': requestId,
        'x-should-retry': 'false',
      });
      res.end(JSON.stringify(errorBody(wire, r, requestId)));
    };

    try {
      if (req.method !== 'POST' || !ROUTES[url.pathname]) {
        throw new RefusalError(
          wire === 'anthropic'
            ? { status: 404, type: 'not_found_error', message: 'Not Found' }
            : {
                status: 404,
                type: 'invalid_request_error',
                message: `Invalid URL (${req.method} ${url.pathname})`,
                param: null,
                code: null,
              },
        );
      }
      if (wire === 'anthropic' && raw.length > MAX_BODY_BYTES) {
        throw new RefusalError({
          status: 413,
          type: 'request_too_large',
          message: 'Request exceeds the maximum allowed number of bytes.',
        });
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new RefusalError({
          status: 400,
          type: 'invalid_request_error',
          message:
            wire === 'anthropic'
              ? 'There was an error parsing the body of your request'
              : "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
        });
      }
      record.body = body;
      if (!isRecord(body))
        throw new RefusalError({
          status: 400,
          type: 'invalid_request_error',
          message: 'Request body must be a JSON object',
        });
      record.stream = body.stream === true;

      const headers = record.headers;
      let parsed: ParsedRequest;
      if (url.pathname === '/v1/messages/count_tokens') {
        record.countOnly = true;
        const edited = parseAnthropicEdited(body, headers, env, true);
        parsed = edited.parsed;
        const total = parsed.segments.reduce((s, x) => s + x.tokens, 0);
        record.promptTokens = total;
        if (edited.originalTokens !== undefined) {
          record.originalPromptTokens = edited.originalTokens;
          record.appliedEdits = edited.parsed.appliedEdits ?? [];
        }
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
        res.end(
          JSON.stringify({
            input_tokens: total,
            ...(edited.originalTokens !== undefined
              ? { context_management: { original_input_tokens: edited.originalTokens } }
              : {}),
          }),
        );
        return;
      }
      if (url.pathname === '/v1/responses/input_tokens') {
        // The input as the API would bill it, counted without sampling (nothing is stored, nothing compacted).
        const p = parseResponses(body, headers, env, responsesStore, 'count');
        const total = p.segments.reduce((s, x) => s + x.tokens, 0);
        record.model = p.model;
        record.promptTokens = total;
        record.countOnly = true;
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId, 'x-request-id': requestId });
        res.end(JSON.stringify({ object: 'response.input_tokens', input_tokens: total }));
        return;
      }
      if (url.pathname === '/v1/responses/compact') {
        const p = parseResponses(body, headers, env, responsesStore, true);
        const total = p.segments.reduce((s, x) => s + x.tokens, 0);
        record.model = p.model;
        record.promptTokens = total;
        const json = respondCompact(p, total, env, raw.toString('utf8'), 1_780_000_000 + record.index) as {
          usage: { output_tokens: number };
        };
        record.compacted = true;
        record.compaction = { inputTokens: total, outputTokens: json.usage.output_tokens };
        record.usage = {
          promptTokens: total,
          uncachedInputTokens: total,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          outputTokens: json.usage.output_tokens,
          reasoningTokens: 0,
        };
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId, 'x-request-id': requestId });
        res.end(JSON.stringify(json));
        return;
      }
      if (wire === 'anthropic') {
        const edited = parseAnthropicEdited(body, headers, env);
        parsed = edited.parsed;
        if (edited.originalTokens !== undefined) {
          record.originalPromptTokens = edited.originalTokens;
          record.appliedEdits = edited.parsed.appliedEdits ?? [];
        }
      } else if (wire === 'openai-chat') parsed = parseChat(body, headers, env);
      else parsed = parseResponses(body, headers, env, responsesStore);

      let promptTokens = parsed.segments.reduce((s, x) => s + x.tokens, 0);
      record.model = parsed.model;
      record.promptTokens = promptTokens;
      if (parsed.maxOutputTokens !== undefined) record.maxOutputTokens = parsed.maxOutputTokens;
      record.assistantTurns = assistantTurns(parsed);
      if (script.marker !== undefined) record.markerInSystem = parsed.system.includes(script.marker);

      if (wire === 'anthropic') limitAnthropic(parsed, promptTokens, env);
      else if (wire === 'openai-chat') limitChat(parsed, promptTokens, env);
      else {
        limitResponses(parsed, promptTokens, env);
        const p = parsed as ResponsesParsed;
        if (p.compactThreshold !== undefined) {
          record.originalPromptTokens = promptTokens;
          promptTokens = compactResponses(p, promptTokens, env, raw.toString('utf8'));
          record.promptTokens = promptTokens;
          if (p.compaction) {
            record.compacted = true;
            record.compaction = { inputTokens: p.compaction.inputTokens, outputTokens: p.compaction.outputTokens };
          }
        }
      }

      const cache: CacheOutcome = cacheFor(wire, parsed.model).evaluate(parsed.segments);
      const ctx: ScriptContext = {
        wire,
        model: parsed.model,
        requestIndex: record.index,
        system: parsed.system,
        tools: parsed.tools,
        messages: parsed.messages,
        assistantTurns: record.assistantTurns,
        thinkingEnabled: parsed.thinkingEnabled,
        body,
      };
      let answer = answerFor(ctx, script);
      let { output, reasoning } = outputTokens(answer, parsed.thinkingEnabled, counter);
      const max = parsed.maxOutputTokens;
      if (max !== undefined && output > max) {
        // The model runs out of output: a cut text and no tool call, as a real truncated answer is unusable for tools.
        const text = answer.text ?? '';
        answer = {
          text: text.slice(0, Math.max(1, Math.floor((text.length * max) / output))) || '…',
          stopReason: 'max_tokens',
        };
        output = max;
        reasoning = 0;
      }
      let usage: BilledUsage = {
        promptTokens,
        uncachedInputTokens: cache.uncached,
        cacheReadTokens: cache.read,
        cacheWriteTokens: cache.write,
        outputTokens: output,
        reasoningTokens: reasoning,
      };
      const compaction = wire === 'anthropic' ? (parsed as AnthropicParsed).compaction : undefined;
      if (compaction) {
        record.compacted = true;
        record.compaction = { inputTokens: compaction.inputTokens, outputTokens: compaction.outputTokens };
        // Paused after compacting: the compaction was the only sampling, and it is what is billed.
        if (compaction.pause)
          usage = {
            promptTokens: compaction.inputTokens,
            uncachedInputTokens: compaction.inputTokens,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            outputTokens: compaction.outputTokens,
            reasoningTokens: 0,
          };
      }
      const seed = raw.toString('utf8');
      const id = (prefix: string, k: number, length: number) => idFrom(seed, prefix, k, length);
      const emission: Emission = {
        answer,
        calls: (answer.toolCalls ?? []).map((c, k) => ({
          id: wire === 'anthropic' ? id('toolu_01', k, 22) : id('call_', k, 24),
          itemId: id('fc_', k, 48),
          name: c.name,
          input: c.input,
        })),
        messageId:
          wire === 'anthropic'
            ? id('msg_01', 0, 22)
            : wire === 'openai-chat'
              ? id('chatcmpl-', 0, 29)
              : id('resp_', 0, 48),
        id,
        usage,
        // Deterministic: a fixed epoch plus the request index.
        created: 1_780_000_000 + record.index,
      };
      let response: WireResponse;
      if (wire === 'anthropic') response = respondAnthropic(parsed, emission);
      else if (wire === 'openai-chat') response = respondChat(parsed, emission);
      else response = respondResponses(parsed, emission, responsesStore);

      cache.commit();
      record.usage = usage;
      record.answer = answer;
      if (options.latencyMs) await sleep(options.latencyMs);
      if ('json' in response) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId, 'x-request-id': requestId });
        res.end(JSON.stringify(response.json));
      } else {
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          'request-id': requestId,
          'x-request-id': requestId,
        });
        for (const e of response.events) {
          res.write((e.event ? `event: ${e.event}\n` : '') + `data: ${JSON.stringify(e.data)}\n\n`);
        }
        if (response.done) res.write('data: [DONE]\n\n');
        res.end();
      }
    } catch (err) {
      if (err instanceof RefusalError) {
        if (options.latencyMs) await sleep(options.latencyMs);
        refuse(err.refusal);
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      record.refused = { status: 500, type: 'api_error', message: `fake provider bug: ${message}` };
      res.writeHead(500, { 'content-type': 'application/json', 'x-should-retry': 'false' });
      res.end(JSON.stringify(errorBody(wire, record.refused, requestId)));
    }
  }

  const server = createServer((req, res) => {
    void handle(req, res);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const baseURL = `http://127.0.0.1:${port}`;
  return {
    baseURL,
    v1URL: `${baseURL}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
