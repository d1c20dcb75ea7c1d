/**
 * `abridge-context/openai`: abridge's messages in and out of OpenAI's Chat Completions and Responses APIs, typed with the
 * official `openai` SDK (imported as types only: nothing of the SDK loads unless `openaiClient` creates a client).
 *
 * ```ts
 * const body = toOpenAIResponsesRequest(activeMessages(session), { model: 'gpt-5', maxOutputTokens: 8192 });
 * const reply = await client.responses.create(body);
 * const { message, usage } = fromOpenAIResponse(reply);
 * ```
 *
 * Also the summarizer's LLM client on the same APIs (`openaiClient`).
 */
import type OpenAI from 'openai';
import { ModelCatalog } from '../budget/catalog.js';
import type { LlmClient, LlmCompletionRequest } from '../compaction/summarizers/llm.js';
import type { Message } from '../model/types.js';
import type { TokenCountEndpoint } from '../manager/context-manager.js';
import { clientConfig, importSdk } from './missing-sdk.js';
import {
  fromResponse,
  toRequest,
  type ChatRequestBody,
  type ResponsesRequestBody,
  type ChatFunctionTool,
  type RequestOptions,
  type ResponseResult,
  type ResponsesFunctionTool,
} from '../formats/wire.js';

// contextOverflow, RequestOptions, ResponseResult, SystemBlock and ToolSpec are the core's (abridge-context): one entry
// point per name.

/** Options of a Chat Completions request: provider tools typed as the SDK's; no Anthropic cache markers. */
export type OpenAIChatRequestOptions = Omit<RequestOptions, 'providerTools' | 'cacheTools' | 'cacheConversation'> & {
  providerTools?: readonly OpenAI.Chat.ChatCompletionTool[];
};
/** Options of a Responses request: provider tools (web search, file search, tool search…) typed as the SDK's. */
export type OpenAIResponsesRequestOptions = Omit<
  RequestOptions,
  'providerTools' | 'cacheTools' | 'cacheConversation' | 'maxTokensParameter'
> & { providerTools?: readonly OpenAI.Responses.Tool[] };

/** Messages (a view) as `client.chat.completions.create` params. See `toRequest`. */
export function toOpenAIChatRequest(
  messages: readonly Message[],
  options: OpenAIChatRequestOptions,
): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming {
  return chatParams(toRequest(messages, 'openai-chat', options));
}

/** How `chatParams` / `responsesParams` shape a body for streaming. */
export interface OpenAIStreamOption {
  /**
   * `true`: the body asks for a stream (`stream: true`), typed for `create(…)` returning a stream and for the SDK's
   * `.stream(…)` helper. Chat Completions bodies also get `stream_options: {include_usage: true}` (unless the request
   * has its own `stream_options`): without it a stream carries no usage, and `ContextManager.record` none to anchor on.
   */
  stream: true;
}

/**
 * A Chat Completions body abridge built (`ContextManager.prepare().request` with provider `openai-chat`), typed for the
 * SDK: `chatParams(request)` for `client.chat.completions.create(…)` answering a `ChatCompletion`;
 * `chatParams(request, {stream: true})` for `client.chat.completions.stream(…)` and `create(…)` answering a stream.
 */
export function chatParams(
  request: ChatRequestBody,
  options: OpenAIStreamOption,
): OpenAI.Chat.ChatCompletionCreateParamsStreaming;
export function chatParams(
  request: ChatRequestBody,
  options?: { stream?: false },
): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
export function chatParams(
  request: ChatRequestBody,
  options?: { stream?: boolean },
): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming | OpenAI.Chat.ChatCompletionCreateParamsStreaming {
  const { tools, ...rest } = request;
  // Everything but the tools is checked against the SDK's types here; abridge's tool shape against the SDK's.
  const body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = rest;
  if (tools)
    body.tools = tools.map((t) =>
      'function' in t
        ? (t as ChatFunctionTool satisfies OpenAI.Chat.ChatCompletionFunctionTool)
        : (t as unknown as OpenAI.Chat.ChatCompletionTool),
    );
  if (options?.stream !== true) return body;
  const { stream: _, ...base } = body;
  return { ...base, stream: true, stream_options: base.stream_options ?? { include_usage: true } };
}

/** A `ChatCompletion` (what `client.chat.completions.create` resolves to) as abridge's message, usage and stop reason. */
export function fromOpenAIChatCompletion(completion: OpenAI.Chat.ChatCompletion): ResponseResult {
  return fromResponse('openai-chat', completion);
}

/** Messages (a view) as `client.responses.create` params, reasoning items given back. See `toRequest`. */
export function toOpenAIResponsesRequest(
  messages: readonly Message[],
  options: OpenAIResponsesRequestOptions,
): OpenAI.Responses.ResponseCreateParamsNonStreaming {
  return responsesParams(toRequest(messages, 'openai-responses', options));
}

/**
 * A Responses body abridge built (`ContextManager.prepare().request` with provider `openai-responses`), typed for the
 * SDK: `responsesParams(request)` for `client.responses.create(…)` answering a `Response`;
 * `responsesParams(request, {stream: true})` for `client.responses.stream(…)` and `create(…)` answering a stream
 * (the stream's `response.completed` event carries the usage).
 */
export function responsesParams(
  request: ResponsesRequestBody,
  options: OpenAIStreamOption,
): OpenAI.Responses.ResponseCreateParamsStreaming;
export function responsesParams(
  request: ResponsesRequestBody,
  options?: { stream?: false },
): OpenAI.Responses.ResponseCreateParamsNonStreaming;
export function responsesParams(
  request: ResponsesRequestBody,
  options?: { stream?: boolean },
): OpenAI.Responses.ResponseCreateParamsNonStreaming | OpenAI.Responses.ResponseCreateParamsStreaming {
  const { tools, ...rest } = request;
  const body: OpenAI.Responses.ResponseCreateParamsNonStreaming = rest;
  if (tools)
    body.tools = tools.map((t) =>
      t.type === 'function' && 'parameters' in t
        ? (t as ResponsesFunctionTool satisfies OpenAI.Responses.FunctionTool)
        : (t as unknown as OpenAI.Responses.Tool),
    );
  if (options?.stream !== true) return body;
  const { stream: _, ...base } = body;
  return { ...base, stream: true };
}

/** The fields of a Responses request `/v1/responses/input_tokens` takes (not the output limit, storage or metadata). */
const COUNTED_FIELDS = [
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'previous_response_id',
  'reasoning',
  'text',
  'truncation',
  'conversation',
] as const;

/** The part of an `openai` client `responsesTokenCounter` uses (an `OpenAI` instance is one). */
export interface ResponsesInputTokensApi {
  responses: {
    inputTokens: {
      count(body: OpenAI.Responses.InputTokenCountParams): PromiseLike<{ input_tokens: number }>;
    };
  };
}

/**
 * The provider's own count of a prepared Responses request (`/v1/responses/input_tokens`), for `ContextManager`'s
 * `countTokens`.
 */
export function responsesTokenCounter(client: ResponsesInputTokensApi): TokenCountEndpoint {
  return async ({ body }) => {
    const request = body as ResponsesRequestBody;
    const counted: Record<string, unknown> = {};
    for (const k of COUNTED_FIELDS) if (request[k] !== undefined) counted[k] = request[k];
    const r = await client.responses.inputTokens.count(counted as OpenAI.Responses.InputTokenCountParams);
    return { inputTokens: r.input_tokens };
  };
}

/** A `Response` (what `client.responses.create` resolves to) as abridge's message, usage and stop reason. */
export function fromOpenAIResponse(response: OpenAI.Responses.Response): ResponseResult {
  return fromResponse('openai-responses', response);
}

/** The parts of an `openai` SDK client this module uses (an `OpenAI` instance is one). */
export interface OpenAIApi {
  chat: {
    completions: {
      create(body: OpenAIChatBody): PromiseLike<OpenAIChatReply>;
    };
  };
  responses: {
    create(body: OpenAIResponsesBody): PromiseLike<OpenAIResponsesReply>;
  };
}

export interface OpenAIChatBody {
  model: string;
  messages: [{ role: 'system'; content: string }, { role: 'user'; content: string }];
  max_completion_tokens?: number;
  max_tokens?: number;
}

export interface OpenAIChatReply {
  choices: readonly { message: { content?: unknown; refusal?: unknown } }[];
}

export interface OpenAIResponsesBody {
  model: string;
  instructions: string;
  input: string;
  max_output_tokens: number;
  store?: boolean;
}

export interface OpenAIResponsesReply {
  output_text?: unknown;
  output?: readonly unknown[];
}

export interface OpenAIClientOptions {
  /** The model id, e.g. `gpt-5-mini`. */
  model: string;
  /** `chat` (Chat Completions, the default; what OpenAI-compatible servers speak) or `responses` (the Responses API). */
  api?: 'chat' | 'responses';
  /** Default: the SDK's (`OPENAI_API_KEY`). */
  apiKey?: string;
  /** Default: the SDK's (`OPENAI_BASE_URL`, else https://api.openai.com/v1). */
  baseURL?: string;
  /** The model's window; default: the model catalog's. */
  contextWindow?: number;
  /** The model's output limit; default: the model catalog's. */
  maxOutputTokens?: number;
  /** Retries of failed requests (the SDK's default: 2). */
  maxRetries?: number;
  /** Milliseconds before a request times out (the SDK's default: 10 minutes). */
  timeout?: number;
  /**
   * How Chat Completions requests name the output limit: `max_completion_tokens` (the default, what OpenAI's reasoning
   * models require) or `max_tokens` (for older OpenAI-compatible servers).
   */
  maxTokensParameter?: 'max_completion_tokens' | 'max_tokens';
  /** An existing SDK client to use instead of creating one (the other connection options are then ignored). */
  client?: OpenAIApi;
}

/**
 * An LlmClient on OpenAI, through the official `openai` SDK (an optional peer dependency, loaded when this is called):
 * `chat.completions.create` with a system and a user message, or with `api: 'responses'`, `responses.create` with
 * the system prompt as `instructions` (and `store: false`).
 */
export async function openaiClient(options: OpenAIClientOptions): Promise<LlmClient> {
  const api = options.client ?? (await createSdkClient(options));
  const info = new ModelCatalog().lookup(options.model, { provider: 'openai' });
  const model = options.model;
  const which = options.api ?? 'chat';
  const limitKey = options.maxTokensParameter ?? 'max_completion_tokens';
  return {
    model,
    contextWindow: options.contextWindow ?? info.contextWindow,
    maxOutputTokens: options.maxOutputTokens ?? info.maxOutputTokens,
    async complete(req: LlmCompletionRequest): Promise<string> {
      if (which === 'responses') {
        const reply = await api.responses.create({
          model,
          instructions: req.system,
          input: req.prompt,
          max_output_tokens: req.maxOutputTokens,
          store: false,
        });
        return responseText(reply);
      }
      const body: OpenAIChatBody = {
        model,
        messages: [
          { role: 'system', content: req.system },
          { role: 'user', content: req.prompt },
        ],
      };
      body[limitKey] = req.maxOutputTokens;
      const reply = await api.chat.completions.create(body);
      const content = reply.choices?.[0]?.message?.content;
      if (typeof content === 'string') return content;
      if (Array.isArray(content))
        return content.map((c: { text?: unknown }) => (typeof c?.text === 'string' ? c.text : '')).join('');
      return '';
    },
  };
}

/** The text of a Responses API reply: the SDK's `output_text`, else the output_text parts of its message items. */
function responseText(reply: OpenAIResponsesReply): string {
  if (typeof reply.output_text === 'string' && reply.output_text) return reply.output_text;
  const out: string[] = [];
  for (const item of reply.output ?? []) {
    const it = item as { type?: unknown; content?: unknown };
    if (it.type !== 'message' || !Array.isArray(it.content)) continue;
    for (const c of it.content as { type?: unknown; text?: unknown }[])
      if (c.type === 'output_text' && typeof c.text === 'string') out.push(c.text);
  }
  return out.join('');
}

async function createSdkClient(options: OpenAIClientOptions): Promise<OpenAIApi> {
  const sdk = await importSdk(() => import('openai'), 'openai', 'the OpenAI summarizer');
  return new sdk.OpenAI(clientConfig(options));
}
