/**
 * Types of the loopback fake provider. Nothing here (or anywhere under test/support/fake-provider) imports abridge's
 * `src/`: the fake's token counts must be independent of abridge's own counting, or a test that compares them proves
 * nothing.
 */

export type Wire = 'anthropic' | 'openai-chat' | 'openai-responses';

/** One part of a message, in a wire-neutral shape the "model" reads. */
export type ConversationPart =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; text: string }
  | { kind: 'image' }
  | { kind: 'tool_call'; id: string; name: string; input: unknown }
  | { kind: 'tool_result'; id: string; text: string; isError: boolean };

export interface ConversationMessage {
  role: 'user' | 'assistant';
  parts: ConversationPart[];
}

/** What the "model" sees of a request, whatever the wire. */
export interface ScriptContext {
  wire: Wire;
  model: string;
  /** Index of this request among all requests the server received (0-based, refused ones included). */
  requestIndex: number;
  /** System prompt text (Anthropic `system`, Chat system/developer messages, Responses `instructions` + system items). */
  system: string;
  /** Tool names the request defines, in order. */
  tools: { name: string; inputSchema: unknown }[];
  messages: ConversationMessage[];
  /** Assistant messages in the request (consecutive assistant messages count once). */
  assistantTurns: number;
  /** Whether the request asks for reasoning (Anthropic `thinking` enabled/adaptive, OpenAI `reasoning`). */
  thinkingEnabled: boolean;
  /** The parsed request body, as sent. */
  body: Record<string, unknown>;
}

export interface ModelToolCall {
  name: string;
  input: Record<string, unknown>;
}

/** One answer of the "model". At least one of text or toolCalls. */
export interface ModelAnswer {
  text?: string;
  toolCalls?: ModelToolCall[];
  /** Reasoning text; emitted only when the request enables thinking (a signed `thinking` block on Anthropic). */
  thinking?: string;
  /** Anthropic stop_reason / OpenAI finish_reason override (default: tool_use/tool_calls when there are calls, else end_turn/stop). */
  stopReason?: 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence';
}

export interface ModelScript {
  /** Assistant turns with tool calls before the final answer (default 8). */
  toolTurns?: number;
  /** A text (the task) whose presence in the system prompt is recorded in `requests[i].markerInSystem`. */
  marker?: string;
  /** Hook: return an answer to override the default for this request, or undefined for the default behaviour. */
  answer?: (ctx: ScriptContext) => ModelAnswer | undefined;
}

export interface Refusal {
  status: number;
  /** The error type on the wire: `invalid_request_error`, `authentication_error`, `not_found_error`. */
  type: string;
  message: string;
  /** OpenAI `code` (e.g. `context_length_exceeded`), null when the real API sends null; absent on Anthropic. */
  code?: string | null;
  /** OpenAI `param`. */
  param?: string | null;
}

/** The provider-side bill of one request, in wire-neutral names. */
export interface BilledUsage {
  /** Every prompt token: uncached + cache read + cache write. */
  promptTokens: number;
  /** Prompt tokens neither read from nor written to the cache (Anthropic `input_tokens`; OpenAI prompt − cached). */
  uncachedInputTokens: number;
  cacheReadTokens: number;
  /** Anthropic `cache_creation_input_tokens`; always 0 on OpenAI (caching is automatic and free to write). */
  cacheWriteTokens: number;
  outputTokens: number;
  reasoningTokens: number;
}

export interface RecordedRequest {
  index: number;
  wire: Wire;
  method: string;
  /** Path with query, as requested. */
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body, as sent (undefined when the body was not JSON). */
  body: unknown;
  stream: boolean;
  model?: string;
  /** Requested max output tokens (Anthropic `max_tokens`, Chat `max_completion_tokens`/`max_tokens`, Responses `max_output_tokens`). */
  maxOutputTokens?: number;
  /** Prompt tokens as the fake counts them (computed whenever the request could be read, refused or not). */
  promptTokens?: number;
  /** Whether `script.marker` appears in the system prompt (undefined when no marker is set or the request was unreadable). */
  markerInSystem?: boolean;
  /** Assistant turns in the conversation sent. */
  assistantTurns?: number;
  refused?: Refusal;
  /**
   * Anthropic `context_management` (requests that carry it): the prompt tokens before any edit (`promptTokens` is
   * then the edited, billed prompt) and the edits applied, as the response's `context_management.applied_edits`.
   */
  originalPromptTokens?: number;
  appliedEdits?: Record<string, unknown>[];
  /** Anthropic `compact_20260112` compacted this request: the compaction iteration's input and output tokens. */
  compacted?: boolean;
  compaction?: { inputTokens: number; outputTokens: number };
  /** A token count (`/v1/messages/count_tokens`, `/v1/responses/input_tokens`): nothing sampled, nothing billed. */
  countOnly?: boolean;
  /** Billed usage of an accepted request. */
  usage?: BilledUsage;
  /** What the model answered (accepted requests). */
  answer?: ModelAnswer;
}

export interface FakeProviderOptions {
  /** Context window in tokens: prompt + requested max output must fit. */
  window: number;
  /** The model's own output cap: a request asking for more is refused. Default: no cap beyond the window. */
  maxOutputTokens?: number;
  script?: ModelScript;
  /** Provider tokens per o200k token. Default 1.15 on the Anthropic wire, 1.0 on the OpenAI wires. */
  tokenRatio?: number;
  /** Delay before each response, in milliseconds. */
  latencyMs?: number;
  /** Smallest prefix Anthropic caches at a breakpoint (default 1024, Sonnet's; Opus 4.5 and Haiku 4.5 use 4096). */
  minCacheableTokens?: number;
  /** Name used in the "maximum allowed number of output tokens for …" message. Default: the request's model. */
  modelName?: string;
}

export interface FakeProvider {
  /** `http://127.0.0.1:PORT` — the Anthropic SDK's baseURL. */
  baseURL: string;
  /** `http://127.0.0.1:PORT/v1` — the OpenAI SDK's baseURL and the AI SDK providers' (`createAnthropic`, `createOpenAI`). */
  v1URL: string;
  /** Every request received, in order (refused ones included). Live array. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}
