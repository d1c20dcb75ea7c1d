/**
 * `abridge-context/anthropic`: abridge's messages in and out of Anthropic's Messages API, typed with the official
 * `@anthropic-ai/sdk` (imported as types only: nothing of the SDK loads unless `anthropicClient` creates a client).
 *
 * ```ts
 * const body = toAnthropicRequest(activeMessages(session), { model: 'claude-sonnet-4-5', maxOutputTokens: 8192 });
 * const reply = await client.messages.create(body);
 * const { message, usage } = fromAnthropicMessage(reply);
 * ```
 *
 * Also the summarizer's LLM client on the same API (`anthropicClient`), and the SDK's tool runner on a ContextManager
 * (`abridgeToolRunner`, in `anthropic-tool-runner.ts`).
 */
import type Anthropic from '@anthropic-ai/sdk';
import { ModelCatalog } from '../budget/catalog.js';
import type { LlmClient, LlmCompletionRequest } from '../compaction/summarizers/llm.js';
import { AbridgeError } from '../errors.js';
import type { TokenCountEndpoint } from '../manager/context-manager.js';
import { clientConfig, importSdk } from './missing-sdk.js';
import type { Message } from '../model/types.js';
import {
  fromResponse,
  toRequest,
  type AnthropicRequestBody,
  type AnthropicToolParam,
  type RequestOptions,
  type ResponseResult,
} from '../formats/wire.js';

export {
  abridgeToolRunner,
  type AbridgeToolRunner,
  type AbridgeToolRunnerParams,
  type ToolRunnerOverflow,
} from './anthropic-tool-runner.js';

// contextOverflow, RequestOptions, ResponseResult, SystemBlock and ToolSpec are the core's (abridge-context): one entry
// point per name.

/** Options of an Anthropic request: provider tools typed as the SDK's (`maxTokensParameter` is Chat Completions' only). */
export type AnthropicRequestOptions = Omit<RequestOptions, 'maxTokensParameter' | 'providerTools'> & {
  providerTools?: readonly Anthropic.ToolUnion[];
};

/**
 * Messages (a view) as `client.messages.create` params: system blocks, tools, cache breakpoints (at most 4), signed
 * thinking, tool_use / tool_result pairs, images. See `toRequest`.
 */
export function toAnthropicRequest(
  messages: readonly Message[],
  options: AnthropicRequestOptions,
): Anthropic.MessageCreateParamsNonStreaming {
  return anthropicParams(toRequest(messages, 'anthropic', options));
}

/**
 * A request body abridge built (`toRequest`, or `ContextManager.prepare().request` with provider `anthropic`) typed as
 * `client.messages.create` / `client.messages.stream` params.
 */
export function anthropicParams(request: AnthropicRequestBody): Anthropic.MessageCreateParamsNonStreaming {
  if (needsBeta(request))
    throw new AbridgeError(
      'INVALID_INPUT',
      "anthropicParams: this request asks for the provider's context management (context_management, or a compaction block sent back): send it with client.beta.messages.create(anthropicBetaParams(turn.request, turn.betas))",
    );
  const { tools, ...rest } = request;
  // Everything but the tools is checked against the SDK's types here; abridge's tool shape against the SDK's Tool.
  const body: Anthropic.MessageCreateParamsNonStreaming = rest;
  if (tools)
    body.tools = tools.map((t) =>
      'input_schema' in t ? (t as AnthropicToolParam satisfies Anthropic.Tool) : (t as unknown as Anthropic.ToolUnion),
    );
  return body;
}

/**
 * A request body abridge built with the provider's own context management (`ContextManager` with `native`: edits in
 * `context_management`, a compaction block sent back) typed as `client.beta.messages.create` / `.stream` params, with
 * the betas it needs (`PreparedTurn.betas`) — the SDK sends them as the `anthropic-beta` header.
 */
export function anthropicBetaParams(
  request: AnthropicRequestBody,
  betas: readonly string[] = [],
): Anthropic.Beta.MessageCreateParamsNonStreaming {
  const body = { ...request } as unknown as Anthropic.Beta.MessageCreateParamsNonStreaming;
  if (betas.length > 0) body.betas = [...betas];
  return body;
}

/** The fields of a request `count_tokens` takes (not the output limit, sampling settings or metadata). */
const COUNTED_FIELDS = [
  'model',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'context_management',
  'mcp_servers',
  'output_config',
  'output_format',
] as const;

/** The part of an `@anthropic-ai/sdk` client `anthropicTokenCounter` uses (an `Anthropic` instance is one). */
export interface AnthropicCountTokensApi {
  beta: {
    messages: {
      countTokens(
        body: Anthropic.Beta.MessageCountTokensParams,
      ): PromiseLike<{ input_tokens: number; context_management?: { original_input_tokens: number } | null }>;
    };
  };
}

/**
 * The provider's own count of a prepared request (`/v1/messages/count_tokens`, through the SDK's beta client, which
 * takes the betas the request needs), for `ContextManager`'s `countTokens`: it counts the request as the provider
 * will, its edits applied (`originalInputTokens`: before them).
 */
export function anthropicTokenCounter(client: AnthropicCountTokensApi): TokenCountEndpoint {
  return async ({ body, betas }) => {
    const request = body as AnthropicRequestBody;
    const counted: Record<string, unknown> = {};
    for (const k of COUNTED_FIELDS) if (request[k] !== undefined) counted[k] = request[k];
    if (betas?.length) counted.betas = [...betas];
    const r = await client.beta.messages.countTokens(counted as unknown as Anthropic.Beta.MessageCountTokensParams);
    const original = r.context_management?.original_input_tokens;
    return { inputTokens: r.input_tokens, ...(typeof original === 'number' ? { originalInputTokens: original } : {}) };
  };
}

/** Whether a body holds what only the beta API takes: `context_management`, a compaction block. */
function needsBeta(request: AnthropicRequestBody): boolean {
  if (request.context_management !== undefined) return true;
  return request.messages.some(
    (m) => m.role === 'assistant' && m.content.some((b) => (b as { type: string }).type === 'compaction'),
  );
}

/** An Anthropic `Message` (what `client.messages.create` resolves to) as abridge's message, usage and stop reason. */
export function fromAnthropicMessage(message: Anthropic.Message): ResponseResult {
  return fromResponse('anthropic', message);
}

/** The part of an `@anthropic-ai/sdk` client this module uses (an `Anthropic` instance is one). */
export interface AnthropicMessagesApi {
  messages: {
    create(body: AnthropicMessageBody): PromiseLike<AnthropicMessageReply>;
  };
}

export interface AnthropicMessageBody {
  model: string;
  max_tokens: number;
  system: string;
  messages: { role: 'user'; content: string }[];
}

export interface AnthropicMessageReply {
  content: readonly { type: string; text?: unknown }[];
  stop_reason?: string | null;
}

export interface AnthropicClientOptions {
  /** The model id, e.g. `claude-haiku-4-5`. */
  model: string;
  /** Default: the SDK's (`ANTHROPIC_API_KEY`). */
  apiKey?: string;
  /** Default: the SDK's (`ANTHROPIC_BASE_URL`, else https://api.anthropic.com). */
  baseURL?: string;
  /** The model's window; default: the model catalog's. */
  contextWindow?: number;
  /** The model's output limit; default: the model catalog's. */
  maxOutputTokens?: number;
  /** Retries of failed requests (the SDK's default: 2). */
  maxRetries?: number;
  /** Milliseconds before a request times out (the SDK's default: 10 minutes). */
  timeout?: number;
  /** An existing SDK client to use instead of creating one (the other connection options are then ignored). */
  client?: AnthropicMessagesApi;
}

/**
 * An LlmClient on Anthropic's Messages API, through the official `@anthropic-ai/sdk` (an optional peer dependency,
 * loaded when this is called): `messages.create` with the system prompt and one user message; the answer is the text
 * blocks of the reply, joined.
 */
export async function anthropicClient(options: AnthropicClientOptions): Promise<LlmClient> {
  const api = options.client ?? (await createSdkClient(options));
  const info = new ModelCatalog().lookup(options.model, { provider: 'anthropic' });
  const model = options.model;
  return {
    model,
    contextWindow: options.contextWindow ?? info.contextWindow,
    maxOutputTokens: options.maxOutputTokens ?? info.maxOutputTokens,
    async complete(req: LlmCompletionRequest): Promise<string> {
      const reply = await api.messages.create({
        model,
        max_tokens: req.maxOutputTokens,
        system: req.system,
        messages: [{ role: 'user', content: req.prompt }],
      });
      return (reply.content ?? [])
        .filter((b) => b.type === 'text' && typeof b.text === 'string')
        .map((b) => b.text as string)
        .join('');
    },
  };
}

async function createSdkClient(options: AnthropicClientOptions): Promise<AnthropicMessagesApi> {
  const sdk = await importSdk(() => import('@anthropic-ai/sdk'), '@anthropic-ai/sdk', 'the Anthropic summarizer');
  return new sdk.Anthropic(clientConfig(options));
}
