/**
 * A turn's request in the provider's own shape: the system prompt (PromptBuilder sections, cache breakpoints), the
 * tool definitions left after deferral, and the messages of the compacted view, encoded by the one encoder each wire
 * format has (src/formats).
 */
import { toAnthropicRequest } from '../formats/anthropic.js';
import { toOpenaiChatRequest, type ChatMessage } from '../formats/openai-chat.js';
import { toOpenaiResponsesRequest, type ResponsesItem } from '../formats/openai-responses.js';
import type { Message, Session } from '../model/types.js';
import type { BuiltPrompt, PromptBuilder } from '../prompt/builder.js';
import type { DeferrableTool } from '../prompt/deferral.js';
import type { TokenCounter } from '../tokens/counter.js';

export type RequestProvider = 'anthropic' | 'openai-chat' | 'openai-responses';
export const REQUEST_PROVIDERS: readonly RequestProvider[] = ['anthropic', 'openai-chat', 'openai-responses'];

/** A tool as the caller offers it to the model: its JSON Schema input, and where it comes from (for deferral). */
export type ToolSpec = Omit<DeferrableTool, 'kind' | 'description'> & { description?: string; kind?: DeferrableTool['kind'] };

export interface AnthropicRequestBody {
  model: string;
  max_tokens: number;
  system?: { type: 'text'; text: string; cache_control?: { type: 'ephemeral' } }[];
  messages: unknown[];
  tools?: { name: string; description: string; input_schema: Record<string, unknown>; cache_control?: { type: 'ephemeral' } }[];
  [key: string]: unknown;
}

export interface OpenaiChatRequestBody {
  model: string;
  max_completion_tokens: number;
  messages: ChatMessage[];
  tools?: { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  [key: string]: unknown;
}

export interface OpenaiResponsesRequestBody {
  model: string;
  max_output_tokens: number;
  instructions?: string;
  input: ResponsesItem[];
  tools?: { type: 'function'; name: string; description: string; parameters: Record<string, unknown>; strict: false }[];
  [key: string]: unknown;
}

export interface ProviderRequestBody {
  anthropic: AnthropicRequestBody;
  'openai-chat': OpenaiChatRequestBody;
  'openai-responses': OpenaiResponsesRequestBody;
}

export type AnyRequestBody = ProviderRequestBody[RequestProvider];

export interface RequestParts {
  model: string;
  maxOutputTokens: number;
  prompt: PromptBuilder;
  tools: readonly ToolSpec[];
  messages: readonly Message[];
  /** Fields passed through to the body as they are (temperature, thinking, stream, metadata…). */
  extra?: Record<string, unknown>;
  /** Counts for the cache plan (pass the session's own counter: it remembers what it counted). */
  counter?: TokenCounter;
  /** Provider tokens per counted token. */
  ratio?: number;
}

/** The system prompt and tools as they will be sent, with the prompt's cache plan (Anthropic breakpoints). */
export function renderPrompt(provider: RequestProvider, parts: Pick<RequestParts, 'model' | 'prompt' | 'tools' | 'counter' | 'ratio'> & { messages?: readonly Message[] }): BuiltPrompt {
  const tools = parts.tools.map(anthropicTool);
  return parts.prompt.build({
    provider: provider === 'anthropic' ? 'anthropic' : 'openai',
    model: parts.model,
    tools,
    ...(parts.messages ? { messages: parts.messages } : {}),
    ...(parts.counter ? { counter: parts.counter } : {}),
    ...(parts.ratio ? { ratio: parts.ratio } : {}),
  });
}

export function buildRequest<P extends RequestProvider>(provider: P, parts: RequestParts): ProviderRequestBody[P];
export function buildRequest(provider: RequestProvider, parts: RequestParts): AnyRequestBody {
  const messages = parts.messages.filter((m) => m.role !== 'system');
  // System messages in the view (a harness' own, or a summary placed as system) join the system prompt, after it.
  const viewSystem = parts.messages.filter((m) => m.role === 'system').map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : p.type === 'compaction' ? p.marker.summary : '')).join('\n'));
  if (provider === 'anthropic') {
    const built = renderPrompt(provider, { ...parts, messages });
    const system = [...(built.anthropic?.system ?? []), ...viewSystem.filter((t) => t.trim()).map((text) => ({ type: 'text' as const, text }))];
    const body: AnthropicRequestBody = { model: parts.model, max_tokens: parts.maxOutputTokens, messages: built.anthropic?.messages ?? toAnthropicRequest(sessionOf(messages, parts.model)).messages, ...parts.extra };
    if (system.length) body.system = system;
    if (built.anthropic?.tools?.length) body.tools = built.anthropic.tools as AnthropicRequestBody['tools'];
    return body;
  }
  const built = renderPrompt(provider, parts);
  const system = [built.system, ...viewSystem].filter((t) => t.trim() !== '').join('\n\n');
  if (provider === 'openai-chat') {
    const chat = toOpenaiChatRequest(sessionOf(messages, parts.model));
    const body: OpenaiChatRequestBody = { model: parts.model, max_completion_tokens: parts.maxOutputTokens, messages: [...(system ? [{ role: 'system' as const, content: system }] : []), ...chat.messages], ...parts.extra };
    if (parts.tools.length) body.tools = parts.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description ?? '', parameters: t.inputSchema } }));
    return body;
  }
  const responses = toOpenaiResponsesRequest(sessionOf(messages, parts.model));
  const body: OpenaiResponsesRequestBody = { model: parts.model, max_output_tokens: parts.maxOutputTokens, input: responses.input, ...parts.extra };
  if (system) body.instructions = system;
  if (parts.tools.length) body.tools = parts.tools.map((t) => ({ type: 'function', name: t.name, description: t.description ?? '', parameters: t.inputSchema, strict: false }));
  return body;
}

export function anthropicTool(t: ToolSpec): { name: string; description: string; input_schema: Record<string, unknown> } {
  return { name: t.name, description: t.description ?? '', input_schema: t.inputSchema };
}

/** Messages as a session the encoders take (they read its active branch). */
function sessionOf(messages: readonly Message[], model: string): Session {
  return { format: 'ai-sdk', info: {}, entries: messages.map((message, index) => ({ index, kind: 'message', message })), problems: [], extra: { request: { model } } };
}
