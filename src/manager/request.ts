/**
 * What the manager adds to a turn's request besides its messages: the system prompt rendered by `PromptBuilder` (its
 * sections, their cache breakpoints), the tool definitions, and whether the conversation takes Anthropic's breakpoint
 * — as the plain `RequestOptions` the encoders of `formats/` take (`IncrementalEncoder` builds the body).
 */
import {
  conversationBreakpointFits,
  type ProviderRequestBody,
  type RequestBody,
  type RequestOptions,
  type RequestProvider,
  type ToolSpec,
} from '../formats/wire.js';
import type { BuiltPrompt, PromptBuilder } from '../prompt/builder.js';
import type { TokenCounter } from '../tokens/counter.js';

export interface PromptParts {
  model: string;
  prompt: PromptBuilder;
  tools: readonly ToolSpec[];
  /** Counts for the cache plan (pass the session's own counter: it remembers what it counted). */
  counter?: TokenCounter;
  /** Provider tokens per counted token. */
  ratio?: number;
}

/** The system prompt and tools as they will be sent, with the prompt's cache plan (Anthropic breakpoints). */
export function renderPrompt(provider: RequestProvider, parts: PromptParts): BuiltPrompt {
  return parts.prompt.build({
    provider: provider === 'anthropic' ? 'anthropic' : 'openai',
    model: parts.model,
    tools: parts.tools.map(anthropicTool),
    ...(parts.counter ? { counter: parts.counter } : {}),
    ...(parts.ratio ? { ratio: parts.ratio } : {}),
  });
}

export function anthropicTool(t: ToolSpec): {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
} {
  return { name: t.name, description: t.description ?? '', input_schema: t.inputSchema };
}

/**
 * A request's options from its rendered prompt: the system blocks with their breakpoints, the tools (a breakpoint on
 * them when the plan put one there), and the conversation's breakpoint when there is room for it and the prompt is long
 * enough to be cached (`promptTokens`, provider tokens).
 */
export function requestOptions(
  built: BuiltPrompt,
  parts: {
    model: string;
    maxOutputTokens: number;
    tools: readonly ToolSpec[];
    promptTokens: number;
    extra?: Record<string, unknown>;
  },
): RequestOptions {
  return {
    model: parts.model,
    maxOutputTokens: parts.maxOutputTokens,
    system: built.blocks.map((b) => (b.cache_control ? { text: b.text, cache: true } : { text: b.text })),
    tools: parts.tools,
    cacheTools: built.breakpoints.some((b) => b.at === 'tools'),
    cacheConversation: conversationBreakpointFits(
      built.breakpoints.length,
      parts.promptTokens,
      built.minCacheableTokens ?? 1024,
    ),
    ...(parts.extra ? { extra: parts.extra } : {}),
  };
}

export type { ProviderRequestBody, RequestBody, RequestProvider, ToolSpec };
