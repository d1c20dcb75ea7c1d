import { ModelCatalog } from '../budget/catalog.js';
import type { LlmClient, LlmCompletionRequest } from '../compaction/summarizers/llm.js';
import { AbridgeError } from '../errors.js';

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
  let sdk: typeof import('@anthropic-ai/sdk');
  try {
    sdk = await import('@anthropic-ai/sdk');
  } catch (err) {
    throw missingSdk(err, '@anthropic-ai/sdk', 'the Anthropic summarizer');
  }
  const config: ConstructorParameters<typeof sdk.Anthropic>[0] = {};
  if (options.apiKey !== undefined) config.apiKey = options.apiKey;
  if (options.baseURL !== undefined) config.baseURL = options.baseURL;
  if (options.maxRetries !== undefined) config.maxRetries = options.maxRetries;
  if (options.timeout !== undefined) config.timeout = options.timeout;
  return new sdk.Anthropic(config);
}

/**
 * MISSING_DEPENDENCY when `err` (or an error it wraps, as test runners and bundlers do) says `pkg` is not installed;
 * `err` itself otherwise.
 */
export function missingSdk(err: unknown, pkg: string, purpose: string): unknown {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    const notFound = e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND' || /Cannot find (package|module)|Failed to load url/.test(String(e.message));
    if (notFound && String(e.message).includes(pkg)) return new AbridgeError('MISSING_DEPENDENCY', `install ${pkg} to use ${purpose} (npm install ${pkg})`);
  }
  return err;
}
