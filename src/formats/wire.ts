/**
 * Provider shapes in and out, without any SDK: canonical messages (a view: what the model sees) into the request body
 * of a provider's API (`toRequest`), a provider's response back into a canonical message and its usage
 * (`fromResponse`), and a provider's "the prompt does not fit" error recognized for what it is (`contextOverflow`).
 *
 * The message encoding is the formats' one encoder per wire format (`encodeAnthropicRequest`,
 * `encodeOpenaiChatRequest`, `encodeOpenaiResponsesRequest`): tool calls and results paired as each API requires,
 * Anthropic thinking given back only when signed, Responses reasoning only as the items the API produced. This module adds
 * what a live request has besides the conversation: model, output limit, system prompt, tools, cache breakpoints.
 *
 * The typed entry points (`abridge-context/anthropic`, `abridge-context/openai`) wrap these with the official SDKs' types.
 */
import { AbridgeError } from '../errors.js';
import {
  decodeAnthropicContent,
  encodeAnthropicRequest,
  type AnthropicAssistantBlock,
  type AnthropicUserBlock,
} from './anthropic.js';
import { decodeChatMessage, encodeOpenaiChatRequest, type ChatMessage } from './openai-chat.js';
import { decodeResponsesOutput, encodeOpenaiResponsesRequest, type ResponsesItem } from './openai-responses.js';
import { safeName } from './request-body.js';
import { textPart } from '../model/parts.js';
import type { Message, Part, Usage } from '../model/types.js';

export type RequestProvider = 'anthropic' | 'openai-chat' | 'openai-responses';
export const REQUEST_PROVIDERS: readonly RequestProvider[] = ['anthropic', 'openai-chat', 'openai-responses'];

/** A tool the model may call, in no provider's shape. */
export interface ToolSpec {
  /** Sent as the APIs accept names (`[A-Za-z0-9_-]{1,64}`, other characters as `_`), as the calls in the messages are. */
  name: string;
  description?: string;
  /** JSON Schema (an object schema) of the tool's input. */
  inputSchema: Record<string, unknown>;
  /**
   * Loaded only through the provider's own tool search (Anthropic and Responses `defer_loading: true`; pass the
   * provider's tool-search tool in `providerTools`). Chat Completions has no deferral: a deferred tool is left out.
   */
  deferred?: boolean;
  /** Strict schema adherence (Anthropic `strict`, OpenAI `strict`). Responses defaults to false here, not the API's true. */
  strict?: boolean;
}

/**
 * One block of the system prompt; `cache` (or a `cache_control`, as `PromptBuilder`'s blocks carry it) places an
 * Anthropic cache breakpoint on it: the prefix up to it is cached.
 */
export interface SystemBlock {
  text: string;
  cache?: boolean;
  cache_control?: { type: 'ephemeral' };
}

export interface RequestOptions {
  model: string;
  /** The request's output limit (Anthropic `max_tokens`, Chat `max_completion_tokens`, Responses `max_output_tokens`). */
  maxOutputTokens: number;
  /**
   * The system prompt: a string or blocks (e.g. `PromptBuilder`'s `blocks`, static first). System messages of the view
   * follow it. Anthropic: `system` blocks; Chat: one system message first; Responses: `instructions`.
   */
  system?: string | readonly SystemBlock[];
  tools?: readonly ToolSpec[];
  /** Provider-native tool definitions appended after `tools` as they are (web search, tool search, code execution…). */
  providerTools?: readonly object[];
  /** Anthropic: a cache breakpoint on the last tool not deferred (the tool definitions are the request's first prefix). */
  cacheTools?: boolean;
  /** Anthropic: a cache breakpoint on the last block of the last message that can carry one (not thinking). */
  cacheConversation?: boolean;
  /**
   * Text that changes every turn, placed after the conversation (and after its cache breakpoint) so that it does not end
   * the cached prefix: appended to the last user message, or as a user message of its own when the conversation ends
   * otherwise (Chat, Responses: always its own). `PromptBuilder`'s `dynamicPlacement: 'after-conversation'` sections.
   */
  tail?: readonly string[];
  /** Chat Completions: how the output limit is named (default `max_completion_tokens`; `max_tokens` for older servers). */
  maxTokensParameter?: 'max_completion_tokens' | 'max_tokens';
  /**
   * Other request fields, passed through (temperature, thinking, reasoning, stream, metadata, tool_choice…). A field
   * `toRequest` sets itself (model, messages, system, tools, the output limit…) is refused here.
   */
  extra?: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------------------------------
// Wire shapes (structurally what the official SDKs' create params take)

export type AnthropicCacheControl = { type: 'ephemeral' };
export type CacheableBlock<B> = B & { cache_control?: AnthropicCacheControl };
export interface AnthropicSystemTextBlock {
  type: 'text';
  text: string;
  cache_control?: AnthropicCacheControl;
}
export type AnthropicRequestMessage =
  | { role: 'user'; content: CacheableBlock<AnthropicUserBlock>[] }
  | { role: 'assistant'; content: CacheableBlock<AnthropicAssistantBlock>[] };
export interface AnthropicToolParam {
  name: string;
  description?: string;
  input_schema: { type: 'object'; [k: string]: unknown };
  defer_loading?: boolean;
  strict?: boolean;
  cache_control?: AnthropicCacheControl;
}
export interface AnthropicRequestBody {
  [field: string]: unknown;
  model: string;
  max_tokens: number;
  system?: AnthropicSystemTextBlock[];
  messages: AnthropicRequestMessage[];
  tools?: (AnthropicToolParam | Record<string, unknown>)[];
}

export interface ChatFunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown>; strict?: boolean };
}
export interface ChatRequestBody {
  [field: string]: unknown;
  model: string;
  messages: ChatMessage[];
  max_completion_tokens?: number;
  max_tokens?: number;
  tools?: (ChatFunctionTool | Record<string, unknown>)[];
}

export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  strict: boolean;
  defer_loading?: boolean;
}
export interface ResponsesRequestBody {
  [field: string]: unknown;
  model: string;
  max_output_tokens: number;
  instructions?: string;
  input: ResponsesItem[];
  tools?: (ResponsesFunctionTool | Record<string, unknown>)[];
}

export type RequestBody = AnthropicRequestBody | ChatRequestBody | ResponsesRequestBody;

/** The request body of each provider's API, by provider. */
export interface ProviderRequestBody {
  anthropic: AnthropicRequestBody;
  'openai-chat': ChatRequestBody;
  'openai-responses': ResponsesRequestBody;
}

/** Anthropic's limit of cache breakpoints per request (PromptBuilder keeps to it too). */
export const MAX_ANTHROPIC_BREAKPOINTS = 4;
const EPHEMERAL: AnthropicCacheControl = { type: 'ephemeral' };

/**
 * Anthropic's conversation breakpoint, one rule for every place that sets it (the request encoders, the incremental
 * encoder, the AI SDK middleware): on the last block of the last message that can carry one — thinking cannot.
 * The index of that block among `blocks`, or -1.
 */
export function conversationBreakpointAt<B>(blocks: readonly B[], isThinking: (b: B) => boolean): number {
  for (let i = blocks.length - 1; i >= 0; i--) if (!isThinking(blocks[i]!)) return i;
  return -1;
}

/**
 * Whether a request takes the conversation breakpoint: fewer than the 4 breakpoints used already (system, tools), and
 * a prompt long enough to be cached at all (the model's minimum; shorter prefixes are not cached and cost the write).
 */
export function conversationBreakpointFits(used: number, promptTokens: number, minCacheableTokens: number): boolean {
  return used < MAX_ANTHROPIC_BREAKPOINTS && promptTokens >= minCacheableTokens;
}

/** The messages with the conversation breakpoint placed; the last message and its block are copies. */
export function withConversationBreakpoint(messages: readonly AnthropicRequestMessage[]): {
  messages: AnthropicRequestMessage[];
  placed: boolean;
} {
  const out = messages.slice();
  const last = out[out.length - 1];
  if (!last || typeof last.content === 'string') return { messages: out, placed: false };
  const content = last.content.slice() as CacheableBlock<AnthropicUserBlock | AnthropicAssistantBlock>[];
  const at = conversationBreakpointAt(content, (b) => b.type === 'thinking' || b.type === 'redacted_thinking');
  if (at < 0) return { messages: out, placed: false };
  content[at] = { ...content[at]!, cache_control: EPHEMERAL };
  out[out.length - 1] = { ...last, content } as AnthropicRequestMessage;
  return { messages: out, placed: true };
}

// ---------------------------------------------------------------------------------------------------------------------
// Requests

/**
 * The request body of `provider`'s API for these messages (a view: pass `activeMessages(session)` or the view the
 * context manager prepared). System messages among them go to the system prompt after `options.system`.
 */
export function toRequest(
  messages: readonly Message[],
  provider: 'anthropic',
  options: RequestOptions,
): AnthropicRequestBody;
export function toRequest(
  messages: readonly Message[],
  provider: 'openai-chat',
  options: RequestOptions,
): ChatRequestBody;
export function toRequest(
  messages: readonly Message[],
  provider: 'openai-responses',
  options: RequestOptions,
): ResponsesRequestBody;
export function toRequest(
  messages: readonly Message[],
  provider: RequestProvider,
  options: RequestOptions,
): RequestBody;
export function toRequest(
  messages: readonly Message[],
  provider: RequestProvider,
  options: RequestOptions,
): RequestBody {
  checkOptions(options);
  switch (provider) {
    case 'anthropic':
      return anthropicRequest(messages, options);
    case 'openai-chat':
      return chatRequest(messages, options);
    case 'openai-responses':
      return responsesRequest(messages, options);
    default:
      throw new AbridgeError(
        'INVALID_INPUT',
        `toRequest: provider ${JSON.stringify(provider)} is not one of ${REQUEST_PROVIDERS.join(', ')}`,
      );
  }
}

const SET_BY_TO_REQUEST: Record<RequestProvider, readonly string[]> = {
  anthropic: ['model', 'max_tokens', 'system', 'messages', 'tools'],
  'openai-chat': ['model', 'max_tokens', 'max_completion_tokens', 'messages', 'tools'],
  'openai-responses': ['model', 'max_output_tokens', 'instructions', 'input', 'tools'],
};

function checkOptions(o: RequestOptions): void {
  if (typeof o?.model !== 'string' || o.model === '')
    throw new AbridgeError(
      'INVALID_INPUT',
      `toRequest: options.model: expected a model id, got ${JSON.stringify(o?.model)}`,
    );
  if (!Number.isInteger(o.maxOutputTokens) || o.maxOutputTokens < 1)
    throw new AbridgeError(
      'INVALID_INPUT',
      `toRequest: options.maxOutputTokens: expected a positive integer, got ${JSON.stringify(o.maxOutputTokens)}`,
    );
  const names = new Map<string, number>();
  for (const [i, t] of (o.tools ?? []).entries()) {
    if (typeof t?.name !== 'string' || t.name === '')
      throw new AbridgeError(
        'INVALID_INPUT',
        `toRequest: options.tools[${i}].name: expected a tool name, got ${JSON.stringify(t?.name)}`,
      );
    if (typeof t.inputSchema !== 'object' || t.inputSchema === null || Array.isArray(t.inputSchema))
      throw new AbridgeError(
        'INVALID_INPUT',
        `toRequest: options.tools[${i}].inputSchema (${t.name}): expected a JSON Schema object`,
      );
    const wire = safeName(t.name);
    const before = names.get(wire);
    if (before !== undefined)
      throw new AbridgeError(
        'INVALID_INPUT',
        `toRequest: options.tools[${i}].name: "${t.name}" is sent as "${wire}", like options.tools[${before}]; the APIs refuse two tools of one name`,
      );
    names.set(wire, i);
  }
}

function extraFields(o: RequestOptions, provider: RequestProvider): Record<string, unknown> {
  const extra = o.extra ?? {};
  const taken = Object.keys(extra).filter((k) => SET_BY_TO_REQUEST[provider].includes(k));
  if (taken.length > 0) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `toRequest: options.extra.${taken[0]}: ${provider} requests get ${taken.join(', ')} from toRequest itself; pass them through model, maxOutputTokens, system, tools or the messages`,
    );
  }
  return extra;
}

function systemBlocks(system: RequestOptions['system']): SystemBlock[] {
  if (system === undefined) return [];
  if (typeof system === 'string') return system.trim() === '' ? [] : [{ text: system }];
  return system.filter((b) => b.text.trim() !== '');
}

/** The caller's system text followed by the view's system messages, as one system message for the encoders. */
function withSystem(messages: readonly Message[], system: RequestOptions['system']): readonly Message[] {
  const blocks = systemBlocks(system);
  if (blocks.length === 0) return messages;
  return [{ role: 'system', parts: [textPart(blocks.map((b) => b.text).join('\n\n'))] }, ...messages];
}

function inputSchema(schema: Record<string, unknown>): { type: 'object'; [k: string]: unknown } {
  return { ...schema, type: 'object' };
}

function anthropicRequest(messages: readonly Message[], o: RequestOptions): AnthropicRequestBody {
  const extra = extraFields(o, 'anthropic');
  const encoded = encodeAnthropicRequest(messages, { model: o.model, maxTokens: o.maxOutputTokens });
  let breakpoints = 0;
  const system: AnthropicSystemTextBlock[] = systemBlocks(o.system).map((b) => {
    if (!b.cache && !b.cache_control) return { type: 'text', text: b.text };
    breakpoints++;
    return { type: 'text', text: b.text, cache_control: EPHEMERAL };
  });
  if (encoded.system) system.push({ type: 'text', text: encoded.system });

  const tools: (AnthropicToolParam | Record<string, unknown>)[] = (o.tools ?? []).map((t) => {
    const tool: AnthropicToolParam = { name: safeName(t.name), input_schema: inputSchema(t.inputSchema) };
    if (t.description !== undefined) tool.description = t.description;
    if (t.deferred) tool.defer_loading = true;
    if (t.strict !== undefined) tool.strict = t.strict;
    return tool;
  });
  for (const t of o.providerTools ?? []) tools.push({ ...(t as Record<string, unknown>) });
  if (o.cacheTools) {
    for (let i = tools.length - 1; i >= 0; i--) {
      if (tools[i]!.defer_loading === true) continue;
      tools[i] = { ...tools[i]!, cache_control: EPHEMERAL };
      breakpoints++;
      break;
    }
  }

  let out = encoded.messages as AnthropicRequestMessage[];
  if (o.cacheConversation) {
    const marked = withConversationBreakpoint(out);
    out = marked.messages;
    if (marked.placed) breakpoints++;
  }
  const tail = (o.tail ?? []).filter((t) => t.trim() !== '').map((text) => ({ type: 'text' as const, text }));
  if (tail.length > 0) {
    const last = out[out.length - 1];
    if (last?.role === 'user') last.content.push(...tail);
    else out.push({ role: 'user', content: tail });
  }
  if (breakpoints > MAX_ANTHROPIC_BREAKPOINTS) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `toRequest: ${breakpoints} Anthropic cache breakpoints asked for (system blocks with cache: true, cacheTools, cacheConversation); the API takes at most ${MAX_ANTHROPIC_BREAKPOINTS}. Mark fewer system blocks (PromptBuilder places one, at the end of the cacheable sections).`,
    );
  }
  const body: AnthropicRequestBody = { ...extra, model: o.model, max_tokens: o.maxOutputTokens, messages: out };
  if (system.length > 0) body.system = system;
  if (tools.length > 0) body.tools = tools;
  return body;
}

function chatRequest(messages: readonly Message[], o: RequestOptions): ChatRequestBody {
  const extra = extraFields(o, 'openai-chat');
  const encoded = encodeOpenaiChatRequest(withSystem(messages, o.system), { model: o.model });
  const body: ChatRequestBody = { ...extra, model: o.model, messages: encoded.messages };
  for (const text of o.tail ?? []) if (text.trim() !== '') body.messages.push({ role: 'user', content: text });
  body[o.maxTokensParameter ?? 'max_completion_tokens'] = o.maxOutputTokens;
  const tools: (ChatFunctionTool | Record<string, unknown>)[] = (o.tools ?? [])
    .filter((t) => !t.deferred)
    .map((t) => {
      const fn: ChatFunctionTool['function'] = { name: safeName(t.name), parameters: inputSchema(t.inputSchema) };
      if (t.description !== undefined) fn.description = t.description;
      if (t.strict !== undefined) fn.strict = t.strict;
      return { type: 'function', function: fn };
    });
  for (const t of o.providerTools ?? []) tools.push({ ...(t as Record<string, unknown>) });
  if (tools.length > 0) body.tools = tools;
  return body;
}

function responsesRequest(messages: readonly Message[], o: RequestOptions): ResponsesRequestBody {
  const extra = extraFields(o, 'openai-responses');
  const encoded = encodeOpenaiResponsesRequest(withSystem(messages, o.system), { model: o.model });
  const body: ResponsesRequestBody = {
    ...extra,
    model: o.model,
    max_output_tokens: o.maxOutputTokens,
    input: encoded.input,
  };
  for (const text of o.tail ?? [])
    if (text.trim() !== '') body.input.push({ type: 'message', role: 'user', content: text });
  if (encoded.instructions !== undefined) body.instructions = encoded.instructions;
  const tools: (ResponsesFunctionTool | Record<string, unknown>)[] = (o.tools ?? []).map((t) => {
    const tool: ResponsesFunctionTool = {
      type: 'function',
      name: safeName(t.name),
      parameters: inputSchema(t.inputSchema),
      strict: t.strict ?? false,
    };
    if (t.description !== undefined) tool.description = t.description;
    if (t.deferred) tool.defer_loading = true;
    return tool;
  });
  for (const t of o.providerTools ?? []) tools.push({ ...(t as Record<string, unknown>) });
  if (tools.length > 0) body.tools = tools;
  return body;
}

/**
 * The request options that carry out a `PromptBuilder` result: its system blocks (with the breakpoint it placed), the
 * sections it meant for after the conversation (`tail`), and the tools / conversation breakpoints it decided on (it counts them against Anthropic's 4 and skips prefixes under the
 * model's minimum cacheable length). Give `toRequest` the same tools and messages the prompt was built with.
 */
export function promptRequestOptions(built: {
  blocks: readonly { text: string; cache_control?: unknown }[];
  breakpoints: readonly { at: string }[];
  afterConversation?: readonly { text: string }[];
}): Pick<RequestOptions, 'system' | 'cacheTools' | 'cacheConversation' | 'tail'> {
  const out: Pick<RequestOptions, 'system' | 'cacheTools' | 'cacheConversation' | 'tail'> = {
    system: built.blocks.map((b) => (b.cache_control ? { text: b.text, cache: true } : { text: b.text })),
    cacheTools: built.breakpoints.some((b) => b.at === 'tools'),
    cacheConversation: built.breakpoints.some((b) => b.at === 'messages'),
  };
  if (built.afterConversation && built.afterConversation.length > 0)
    out.tail = built.afterConversation.map((b) => b.text);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Responses

/** Why the model stopped, in one vocabulary for every provider (the provider's own word is `stopReason`). */
export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'refusal' | 'other';

export interface ResponseResult {
  /** The assistant message (model, provider, responseId, usage and stopReason set). */
  message: Message;
  /** Normalized: `input` is the prompt tokens billed at the full rate, so prompt = input + cacheRead + cacheWrite. */
  usage?: Usage;
  /** The provider's own stop reason: Anthropic `stop_reason`, Chat `finish_reason`, Responses `incomplete_details.reason` or `status`. */
  stopReason?: string;
  finish: FinishReason;
  /**
   * The edits the provider's own context management applied to the request before billing it (Anthropic
   * `context_management.applied_edits`); their removed tokens are in `usage.cleared`.
   */
  appliedEdits?: AppliedEdit[];
  /**
   * The provider compacted the request first (an Anthropic `compaction` block, a Responses `compaction` item opens
   * `message.parts`): the prompt the compaction read, when the provider bills it apart (Anthropic `usage.iterations`).
   */
  compaction?: { inputTokens?: number; outputTokens?: number };
}

/** One edit the provider's context management applied (Anthropic `applied_edits`). */
export interface AppliedEdit {
  /** `clear_tool_uses_20250919`, `clear_thinking_20251015`… */
  type: string;
  clearedInputTokens: number;
  clearedToolUses?: number;
  clearedThinkingTurns?: number;
}

/**
 * A provider's response (the parsed JSON body, or the SDK's object: the same shape) as a canonical assistant message,
 * its usage and why it stopped. Refuses anything that is not a response of that provider with `INVALID_INPUT`.
 */
export function fromResponse(provider: RequestProvider, response: unknown): ResponseResult {
  switch (provider) {
    case 'anthropic':
      return fromAnthropic(response);
    case 'openai-chat':
      return fromChat(response);
    case 'openai-responses':
      return fromResponses(response);
    default:
      throw new AbridgeError(
        'INVALID_INPUT',
        `fromResponse: provider ${JSON.stringify(provider)} is not one of ${REQUEST_PROVIDERS.join(', ')}`,
      );
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0;
}

function notA(what: string, source: string, got: unknown): AbridgeError {
  const keys = isObject(got)
    ? `an object with keys ${Object.keys(got).slice(0, 6).join(', ') || '(none)'}`
    : got === null
      ? 'null'
      : Array.isArray(got)
        ? 'an array'
        : `a ${typeof got}`;
  return new AbridgeError('INVALID_INPUT', `fromResponse(${source}): expected ${what}, got ${keys}`);
}

function assistant(
  parts: Part[],
  r: Record<string, unknown>,
  provider: string,
  usage: Usage | undefined,
  stopReason: string | undefined,
): Message {
  const m: Message = { role: 'assistant', parts, provider };
  if (typeof r.model === 'string') m.model = r.model;
  if (typeof r.id === 'string') m.responseId = r.id;
  if (usage) m.usage = usage;
  if (stopReason !== undefined) m.stopReason = stopReason;
  return m;
}

function result(message: Message, finish: FinishReason): ResponseResult {
  const out: ResponseResult = { message, finish };
  if (message.usage) out.usage = message.usage;
  if (message.stopReason !== undefined) out.stopReason = message.stopReason;
  return out;
}

/** Anthropic `usage` → Usage: `input_tokens` already excludes cache reads and writes. */
export function anthropicUsage(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  return {
    input: count(u.input_tokens),
    output: count(u.output_tokens),
    cacheRead: count(u.cache_read_input_tokens),
    cacheWrite: count(u.cache_creation_input_tokens),
  };
}

/** Chat Completions `usage` → Usage: `prompt_tokens` includes the cached ones, which move to cacheRead. */
export function chatUsage(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  const cached = isObject(u.prompt_tokens_details) ? count(u.prompt_tokens_details.cached_tokens) : 0;
  const usage: Usage = {
    input: Math.max(0, count(u.prompt_tokens) - cached),
    output: count(u.completion_tokens),
    cacheRead: cached,
    cacheWrite: 0,
  };
  const reasoning = isObject(u.completion_tokens_details) ? count(u.completion_tokens_details.reasoning_tokens) : 0;
  if (reasoning > 0) usage.reasoning = reasoning;
  return usage;
}

/** Responses `usage` → Usage: `input_tokens` includes the cached ones, which move to cacheRead. */
export function responsesUsage(u: unknown): Usage | undefined {
  if (!isObject(u)) return undefined;
  const cached = isObject(u.input_tokens_details) ? count(u.input_tokens_details.cached_tokens) : 0;
  const usage: Usage = {
    input: Math.max(0, count(u.input_tokens) - cached),
    output: count(u.output_tokens),
    cacheRead: cached,
    cacheWrite: 0,
  };
  const reasoning = isObject(u.output_tokens_details) ? count(u.output_tokens_details.reasoning_tokens) : 0;
  if (reasoning > 0) usage.reasoning = reasoning;
  return usage;
}

function fromAnthropic(r: unknown): ResponseResult {
  if (!isObject(r) || !Array.isArray(r.content))
    throw notA('an Anthropic Message {id, type: "message", content: [...], usage}', 'anthropic', r);
  const parts = decodeAnthropicContent(r.content, 'content', 'anthropic response');
  const stop = typeof r.stop_reason === 'string' ? r.stop_reason : undefined;
  const usage = anthropicUsage(r.usage);
  const edits = appliedEdits(r.context_management);
  const cleared = edits.reduce((n, e) => n + e.clearedInputTokens, 0);
  if (usage && cleared > 0) usage.cleared = cleared;
  const message = assistant(parts, r, 'anthropic', usage, stop);
  const finish: FinishReason =
    stop === 'end_turn' || stop === 'stop_sequence'
      ? 'stop'
      : stop === 'tool_use'
        ? 'tool-calls'
        : stop === 'max_tokens' || stop === 'model_context_window_exceeded'
          ? 'length'
          : stop === 'refusal'
            ? 'refusal'
            : 'other';
  const out = result(message, finish);
  if (edits.length > 0) out.appliedEdits = edits;
  const compacted = compactionIteration(r.usage);
  if (compacted || parts[0]?.type === 'compaction') out.compaction = compacted ?? {};
  return out;
}

/** Anthropic `context_management.applied_edits` (beta), read leniently: an entry without figures counts nothing. */
function appliedEdits(cm: unknown): AppliedEdit[] {
  if (!isObject(cm) || !Array.isArray(cm.applied_edits)) return [];
  return cm.applied_edits.filter(isObject).map((e) => {
    const edit: AppliedEdit = {
      type: typeof e.type === 'string' ? e.type : 'unknown',
      clearedInputTokens: count(e.cleared_input_tokens),
    };
    if (e.cleared_tool_uses !== undefined) edit.clearedToolUses = count(e.cleared_tool_uses);
    if (e.cleared_thinking_turns !== undefined) edit.clearedThinkingTurns = count(e.cleared_thinking_turns);
    return edit;
  });
}

/** The compaction pass of an Anthropic response (`usage.iterations`, type `compaction`), billed apart from the answer. */
function compactionIteration(u: unknown): { inputTokens: number; outputTokens: number } | undefined {
  if (!isObject(u) || !Array.isArray(u.iterations)) return undefined;
  const it = u.iterations.find((x) => isObject(x) && x.type === 'compaction') as Record<string, unknown> | undefined;
  if (!it) return undefined;
  return {
    inputTokens: count(it.input_tokens) + count(it.cache_read_input_tokens) + count(it.cache_creation_input_tokens),
    outputTokens: count(it.output_tokens),
  };
}

function fromChat(r: unknown): ResponseResult {
  if (!isObject(r) || !Array.isArray(r.choices))
    throw notA('a ChatCompletion {id, choices: [...], usage}', 'openai-chat', r);
  const choice = r.choices[0];
  if (!isObject(choice) || !isObject(choice.message))
    throw notA('a ChatCompletion whose choices[0] has a message', 'openai-chat', choice);
  const decoded = decodeChatMessage(
    { ...choice.message, role: choice.message.role ?? 'assistant' },
    'choices[0].message',
    'openai-chat response',
  );
  const stop = typeof choice.finish_reason === 'string' ? choice.finish_reason : undefined;
  const message = assistant(decoded.parts, r, 'openai', chatUsage(r.usage), stop);
  const finish: FinishReason =
    stop === 'stop'
      ? 'stop'
      : stop === 'tool_calls' || stop === 'function_call'
        ? 'tool-calls'
        : stop === 'length'
          ? 'length'
          : stop === 'content_filter'
            ? 'refusal'
            : 'other';
  return result(message, finish);
}

function fromResponses(r: unknown): ResponseResult {
  if (!isObject(r) || !Array.isArray(r.output))
    throw notA('a Response {id, object: "response", output: [...], usage}', 'openai-responses', r);
  const parts: Part[] = [];
  r.output.forEach((item, i) => {
    // Reasoning keeps the whole item (id, encrypted content) as its signature, so that it can be given back.
    if (isObject(item) && item.type === 'reasoning') {
      const summary = Array.isArray(item.summary)
        ? item.summary.filter(
            (s): s is { type: 'summary_text'; text: string } =>
              isObject(s) && s.type === 'summary_text' && typeof s.text === 'string',
          )
        : [];
      const text = summary.map((s) => s.text).join('\n\n');
      const kept: Record<string, unknown> = { type: 'reasoning', id: item.id, summary };
      if (typeof item.encrypted_content === 'string') kept.encrypted_content = item.encrypted_content;
      parts.push(
        text === ''
          ? { type: 'thinking', text, signature: JSON.stringify(kept), redacted: true }
          : { type: 'thinking', text, signature: JSON.stringify(kept) },
      );
      return;
    }
    // The API's own compaction: opaque, kept whole to be sent back (the API drops what precedes it).
    if (isObject(item) && item.type === 'compaction' && typeof item.encrypted_content === 'string') {
      parts.push({
        type: 'compaction',
        marker: { number: 0, summary: '', source: 'openai', native: { provider: 'openai', item: { ...item } } },
      });
      return;
    }
    parts.push(...decodeResponsesOutput([item], `openai-responses response output[${i}]`));
  });
  const incomplete =
    isObject(r.incomplete_details) && typeof r.incomplete_details.reason === 'string'
      ? r.incomplete_details.reason
      : undefined;
  const stop = incomplete ?? (typeof r.status === 'string' ? r.status : undefined);
  const message = assistant(parts, r, 'openai', responsesUsage(r.usage), stop);
  const compacted = parts[0]?.type === 'compaction';
  const refused = r.output.some(
    (item) =>
      isObject(item) &&
      item.type === 'message' &&
      Array.isArray(item.content) &&
      item.content.some((c) => isObject(c) && c.type === 'refusal'),
  );
  const calls = r.output.some(
    (item) => isObject(item) && typeof item.type === 'string' && /^(function|custom_tool)_call$/.test(item.type),
  );
  const finish: FinishReason =
    incomplete === 'max_output_tokens'
      ? 'length'
      : incomplete === 'content_filter' || refused
        ? 'refusal'
        : r.status === 'completed'
          ? calls
            ? 'tool-calls'
            : 'stop'
          : 'other';
  const out = result(message, finish);
  if (compacted) out.compaction = {};
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Context overflow

export interface ContextOverflow {
  /** Whose wording it is, when the error says: `anthropic`, `openai` (Chat Completions, Responses, compatible servers), `gemini`. */
  provider?: string;
  /** The HTTP status (400, or 413 from some servers). */
  status?: number;
  /** The provider's own message. */
  message: string;
  /** Prompt tokens the provider counted, when its message says. */
  promptTokens?: number;
  /** The output limit the request asked for, when the message says (Anthropic counts it against the window). */
  maxTokens?: number;
  /** The context window the provider enforced, when the message says. */
  limit?: number;
}

interface Candidate {
  status?: number;
  body?: unknown;
  message: string;
}

/**
 * The error of a request whose prompt does not fit the model's window, recognized for what it is — `undefined` for any
 * other error. Takes what the SDKs and the AI SDK throw (duck-typed, no SDK loaded): `Anthropic.BadRequestError` /
 * `OpenAI.BadRequestError` (`status`, `error`, `code`), the AI SDK's `APICallError` (`statusCode`, `responseBody`, `data`)
 * and `RetryError` around it (`lastError`, `errors`), an error's `cause`, a fetch `Response`-like `{status, body}` or a
 * parsed error body. Recognizes Anthropic's "prompt is too long: N tokens > M maximum" and "input length and
 * `max_tokens` exceed context limit: N + K > M", OpenAI's `context_length_exceeded` ("maximum context length is M tokens.
 * However, you requested N tokens…", "Your input exceeds the context window of this model…") and the same words from
 * OpenAI-compatible servers, extracting the numbers when the message has them.
 */
export function contextOverflow(error: unknown): ContextOverflow | undefined {
  // A wrapper's message often repeats the wrapped error's ("Failed after 2 attempts. Last error: …"): of the errors
  // that say overflow, take the one that says the most (status, provider, numbers).
  let best: ContextOverflow | undefined;
  for (const c of candidates(error)) {
    const found = recognize(c);
    if (found && (!best || Object.keys(found).length > Object.keys(best).length)) best = found;
  }
  return best;
}

/**
 * The provider's refusal of its own context management (a server or deployment that does not offer it: the field or the
 * beta unknown, an edit it does not take): its message, else undefined. Not an overflow.
 */
export function nativeRefusal(error: unknown): string | undefined {
  for (const c of candidates(error)) {
    if (c.status !== undefined && c.status !== 400 && c.status !== 404 && c.status !== 422) continue;
    const facts = bodyFacts(c.body);
    const text = `${facts.message ?? ''} ${c.message}`;
    if (
      /context_management|compact_threshold|compact_20260112|clear_tool_uses|clear_thinking|anthropic-beta|\bbetas?\b/i.test(
        text,
      )
    )
      return (facts.message ?? c.message).trim() || 'the provider refused its own context management';
  }
  return undefined;
}

/** The error, what it wraps (cause, RetryError's errors), outermost first, each with its status, body and message. */
function candidates(error: unknown): Candidate[] {
  const out: Candidate[] = [];
  const seen = new Set<unknown>();
  const visit = (e: unknown, depth: number) => {
    if (e === undefined || e === null || depth > 6 || seen.has(e)) return;
    seen.add(e);
    if (typeof e === 'string') {
      out.push({ message: e, body: parseJson(e) });
      return;
    }
    if (!isObject(e) && !(e instanceof Error)) return;
    const o = e as Record<string, unknown>;
    const status =
      typeof o.status === 'number' ? o.status : typeof o.statusCode === 'number' ? o.statusCode : undefined;
    // Anthropic SDK: `error` is the whole body; OpenAI SDK: the body's `error` object; AI SDK: `data` parsed, `responseBody` text.
    const body =
      o.error ??
      o.data ??
      (typeof o.responseBody === 'string' ? parseJson(o.responseBody) : undefined) ??
      (o.type === 'error' || 'code' in o ? o : undefined);
    const message =
      typeof o.message === 'string' ? o.message : typeof o.responseBody === 'string' ? o.responseBody : '';
    const c: Candidate = { message, body };
    if (status !== undefined) c.status = status;
    out.push(c);
    if (Array.isArray(o.errors)) for (let i = o.errors.length - 1; i >= 0; i--) visit(o.errors[i], depth + 1);
    visit(o.lastError, depth + 1);
    visit(o.cause, depth + 1);
  };
  visit(error, 0);
  return out;
}

function parseJson(text: string): unknown {
  const t = text.trim();
  if (!t.startsWith('{')) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/** The innermost message and code of an error body: `{type: 'error', error: {type, message}}`, `{error: {message, code}}`, `{message, code}`. */
function bodyFacts(body: unknown): { message?: string; code?: string; type?: string } {
  let b = body;
  const facts: { message?: string; code?: string; type?: string } = {};
  for (let depth = 0; isObject(b) && depth < 4; depth++) {
    if (typeof b.message === 'string') facts.message = b.message;
    if (typeof b.code === 'string') facts.code = b.code;
    if (typeof b.type === 'string' && b.type !== 'error') facts.type = b.type;
    b = b.error;
  }
  return facts;
}

const int = (s: string | undefined): number | undefined =>
  s === undefined ? undefined : Number(s.replace(/[,_]/g, ''));
const N = '([\\d,_]+)';

function recognize(c: Candidate): ContextOverflow | undefined {
  const facts = bodyFacts(c.body);
  const message = facts.message ?? c.message;
  const text = `${message}\n${c.message}`;
  const out = (provider: string | undefined, fields: Partial<ContextOverflow>): ContextOverflow => {
    const o: ContextOverflow = { message: message || c.message };
    if (provider) o.provider = provider;
    if (c.status !== undefined) o.status = c.status;
    for (const [k, v] of Object.entries(fields))
      if (v !== undefined && !Number.isNaN(v)) (o as unknown as Record<string, unknown>)[k] = v;
    return o;
  };
  let m = new RegExp(`prompt is too long:\\s*${N}\\s*tokens\\s*>\\s*${N}\\s*maximum`, 'i').exec(text);
  if (m) return out('anthropic', { promptTokens: int(m[1]), limit: int(m[2]) });
  m = new RegExp(
    `input length and \`?max_tokens\`? exceed context limit:\\s*${N}\\s*\\+\\s*${N}\\s*>\\s*${N}`,
    'i',
  ).exec(text);
  if (m) return out('anthropic', { promptTokens: int(m[1]), maxTokens: int(m[2]), limit: int(m[3]) });
  const openaiCode = facts.code === 'context_length_exceeded' || /context_length_exceeded/.test(text);
  m = new RegExp(`maximum context length is ${N} tokens`, 'i').exec(text);
  if (m) {
    const limit = int(m[1]);
    const parts = new RegExp(
      `\\(${N} in the messages(?:, ${N} in the functions)?, ${N} in the completion\\)`,
      'i',
    ).exec(text);
    const requested = new RegExp(`(?:you requested(?: about)?|resulted in) ${N} tokens`, 'i').exec(text);
    const promptTokens = parts
      ? (int(parts[1]) ?? 0) + (int(parts[2]) ?? 0)
      : requested
        ? int(requested[1])
        : undefined;
    const maxTokens = parts ? int(parts[3]) : undefined;
    return out(openaiCode ? 'openai' : undefined, { limit, promptTokens, maxTokens });
  }
  m = new RegExp(`exceeds? the configured limit of ${N} tokens`, 'i').exec(text);
  if (m) {
    const resulted = new RegExp(`resulted in ${N} tokens`, 'i').exec(text);
    return out(openaiCode || facts.type === 'invalid_request_error' ? 'openai' : undefined, {
      limit: int(m[1]),
      promptTokens: int(resulted?.[1]),
    });
  }
  if (/exceeds the context window/i.test(text))
    return out(openaiCode || /your input exceeds/i.test(text) ? 'openai' : undefined, {});
  if (openaiCode) return out('openai', {});
  m = new RegExp(`input token count \\(?${N}\\)? exceeds the maximum number of tokens allowed \\(?${N}\\)?`, 'i').exec(
    text,
  );
  if (m) return out('gemini', { promptTokens: int(m[1]), limit: int(m[2]) });
  if (
    /prompt is too long|input is too long for requested model|context window exceeded|context length exceeded|too many tokens in the prompt/i.test(
      text,
    ) &&
    (c.status === undefined || c.status === 400 || c.status === 413)
  )
    return out(undefined, {});
  return undefined;
}
