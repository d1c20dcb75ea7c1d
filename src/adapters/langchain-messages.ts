/**
 * LangChain messages (`@langchain/core/messages`) in and out of abridge, for the LangChain middleware
 * (`langchain.ts`). In: a host's history (HumanMessage, AIMessage, ToolMessage, SystemMessage) read into abridge's
 * messages, and the usage an AIMessage reports. Out: a request body abridge built (`ContextManager.prepare().request`,
 * Anthropic or Chat Completions) as the LangChain messages that make the model send that body — so that what the model
 * receives is what abridge counted, its pairing and cache breakpoints included.
 *
 * `@langchain/core` is imported as types only here; the classes come in through `LangChainMessageClasses`, loaded by
 * the middleware.
 */
import { createHash } from 'node:crypto';
import type { AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import type { AnthropicRequestBody, ChatRequestBody } from '../formats/wire.js';
import { parseArguments } from '../model/parts.js';
import type { ImagePart, Message, Part, ResultContentPart, Usage } from '../model/types.js';

/** The message classes of the installed `@langchain/core` (the middleware loads them). */
export interface LangChainMessageClasses {
  HumanMessage: typeof HumanMessage;
  AIMessage: typeof AIMessage;
  ToolMessage: typeof ToolMessage;
  SystemMessage: typeof SystemMessage;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A message's type (`human`, `ai`, `tool`, `system`, …), from `type` (v1) or `_getType()` (older messages). */
export function messageType(m: unknown): string {
  if (!isObj(m)) return 'unknown';
  if (typeof m.type === 'string') return m.type;
  const get = (m as { _getType?: () => string })._getType;
  return typeof get === 'function' ? get.call(m) : 'unknown';
}

// ---------------------------------------------------------------------------------------------------------------------
// In

function dataUrl(url: string): { mediaType: string; data: string } | undefined {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return m ? { mediaType: m[1]!, data: m[2]! } : undefined;
}

function image(from: { url?: unknown; data?: unknown; mediaType?: unknown }): ImagePart {
  const part: ImagePart = { type: 'image' };
  if (typeof from.mediaType === 'string') part.mediaType = from.mediaType;
  if (typeof from.data === 'string') part.data = from.data;
  else if (from.data instanceof Uint8Array) part.data = Buffer.from(from.data).toString('base64');
  if (typeof from.url === 'string') {
    const inline = dataUrl(from.url);
    if (inline) {
      part.mediaType = inline.mediaType;
      part.data = inline.data;
    } else part.url = from.url;
  }
  return part;
}

/** One content block of a human or tool message: Anthropic's, OpenAI's or LangChain's standard shape. */
function contentBlock(b: unknown): ResultContentPart | undefined {
  if (typeof b === 'string') return b === '' ? undefined : { type: 'text', text: b };
  if (!isObj(b)) return undefined;
  if ((b.type === 'text' || b.type === 'text_delta') && typeof b.text === 'string')
    return b.text === '' ? undefined : { type: 'text', text: b.text };
  if (b.type === 'image_url') {
    const url = typeof b.image_url === 'string' ? b.image_url : isObj(b.image_url) ? b.image_url.url : undefined;
    return image({ url });
  }
  if (b.type === 'image') {
    // Anthropic: {source: {type: base64|url, …}}; LangChain standard: {data | url, mimeType}.
    const s = isObj(b.source) ? b.source : undefined;
    if (s) return image({ url: s.url, data: s.data, mediaType: s.media_type });
    return image({ url: b.url, data: b.data, mediaType: b.mimeType ?? b.mime_type });
  }
  // Anything else is still in the prompt the model reads: counted as its JSON rather than left out.
  return { type: 'text', text: JSON.stringify(b) };
}

function contentParts(content: unknown): ResultContentPart[] {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks.map(contentBlock).filter((p): p is ResultContentPart => p !== undefined);
}

interface LcToolCall {
  id?: string;
  name: string;
  args: unknown;
}

function assistantParts(m: Obj): Part[] {
  const parts: Part[] = [];
  const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []) as LcToolCall[];
  const seen = new Set<string>();
  const content = typeof m.content === 'string' ? [m.content] : Array.isArray(m.content) ? m.content : [];
  for (const b of content) {
    if (typeof b === 'string') {
      if (b !== '') parts.push({ type: 'text', text: b });
      continue;
    }
    if (!isObj(b)) continue;
    if ((b.type === 'text' || b.type === 'text_delta') && typeof b.text === 'string') {
      if (b.text !== '') parts.push({ type: 'text', text: b.text });
    } else if (b.type === 'thinking' && typeof b.thinking === 'string') {
      parts.push(
        typeof b.signature === 'string' && b.signature !== ''
          ? { type: 'thinking', text: b.thinking, signature: b.signature }
          : { type: 'thinking', text: b.thinking },
      );
    } else if (b.type === 'redacted_thinking' && typeof b.data === 'string') {
      parts.push({ type: 'thinking', text: '', signature: b.data, redacted: true });
    } else if (b.type === 'reasoning' && typeof b.reasoning === 'string') {
      parts.push({ type: 'thinking', text: b.reasoning });
    } else if ((b.type === 'tool_use' || b.type === 'tool_call') && typeof b.id === 'string') {
      // A streamed message's tool_use input is its JSON text; the parsed call is in tool_calls.
      const parsed = calls.find((c) => c.id === b.id);
      const args = parsed ? parsed.args : b.type === 'tool_use' ? parseArguments(b.input) : b.args;
      parts.push({ type: 'tool-call', id: b.id, name: String(parsed?.name ?? b.name), arguments: args ?? {} });
      seen.add(b.id);
    }
  }
  calls.forEach((c, i) => {
    const id = c.id ?? `call_${i}`;
    if (!seen.has(id)) parts.push({ type: 'tool-call', id, name: c.name, arguments: c.args ?? {} });
  });
  return parts;
}

/** A LangChain message as abridge's (a ToolMessage is a `tool` message with one result). */
export function fromLangChain(m: BaseMessage): Message {
  const o = m as unknown as Obj;
  switch (messageType(m)) {
    case 'ai':
      return { role: 'assistant', parts: assistantParts(o) };
    case 'tool':
      return {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: String(o.tool_call_id ?? ''),
            ...(typeof o.name === 'string' && o.name !== '' ? { toolName: o.name } : {}),
            content: contentParts(o.content),
            isError: o.status === 'error',
          },
        ],
      };
    case 'system':
    case 'developer':
      return { role: 'system', parts: contentParts(o.content) };
    default: {
      // A human message may carry Anthropic tool_result blocks (a history written in Anthropic's shape).
      const blocks = Array.isArray(o.content) ? o.content : [o.content];
      const parts: Part[] = [];
      for (const b of blocks) {
        if (isObj(b) && b.type === 'tool_result')
          parts.push({
            type: 'tool-result',
            callId: String(b.tool_use_id ?? ''),
            content: contentParts(b.content),
            isError: b.is_error === true,
          });
        else {
          const p = contentBlock(b);
          if (p) parts.push(p);
        }
      }
      return { role: 'user', parts };
    }
  }
}

/**
 * The prompt usage an AIMessage reports, as abridge's Usage: LangChain's `usage_metadata` (`input_tokens` is the whole
 * prompt, cache reads and writes included), else Anthropic's own `response_metadata.usage`.
 */
export function usageOf(m: unknown): Usage | undefined {
  if (!isObj(m)) return undefined;
  const u = m.usage_metadata;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  if (isObj(u) && typeof u.input_tokens === 'number') {
    const details = isObj(u.input_token_details) ? u.input_token_details : {};
    const cacheRead = num(details.cache_read);
    const cacheWrite = num(details.cache_creation);
    const reasoning = isObj(u.output_token_details) ? num(u.output_token_details.reasoning) : 0;
    return {
      input: Math.max(0, u.input_tokens - cacheRead - cacheWrite),
      output: num(u.output_tokens),
      cacheRead,
      cacheWrite,
      ...(reasoning > 0 ? { reasoning } : {}),
    };
  }
  const raw = isObj(m.response_metadata) ? m.response_metadata.usage : undefined;
  if (isObj(raw) && typeof raw.input_tokens === 'number')
    return {
      input: raw.input_tokens,
      output: num(raw.output_tokens),
      cacheRead: num(raw.cache_read_input_tokens),
      cacheWrite: num(raw.cache_creation_input_tokens),
    };
  return undefined;
}

/**
 * A message's identity in a history: its type and what the model reads of it (content, calls, the call a result
 * answers); ids, names and metadata left out, since LangChain adds them on the way into the agent's state.
 */
export function fingerprint(m: BaseMessage): string {
  const o = m as unknown as Obj;
  const calls = Array.isArray(o.tool_calls)
    ? (o.tool_calls as LcToolCall[]).map((c) => [c.id, c.name, c.args])
    : undefined;
  const json = JSON.stringify([messageType(m), o.content, calls, o.tool_call_id], (_key, value: unknown) =>
    value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value,
  );
  return createHash('sha1')
    .update(json ?? '')
    .digest('base64');
}

// ---------------------------------------------------------------------------------------------------------------------
// Out

/** The system prompt and conversation a request body amounts to, as LangChain messages. */
export interface LangChainRequest {
  system: SystemMessage;
  messages: BaseMessage[];
}

/**
 * An Anthropic body as LangChain messages that ChatAnthropic sends back as that body: text, image and thinking blocks
 * as they are (cache_control included), tool_use blocks as the AIMessage's tool_calls, each tool_result block as a
 * ToolMessage (its cache breakpoint moved onto its last content block, the one place a ToolMessage can carry it).
 * Blocks are copied: the body's own objects are the manager's, reused for the next request.
 */
export function fromAnthropicBody(body: AnthropicRequestBody, lc: LangChainMessageClasses): LangChainRequest {
  const system = new lc.SystemMessage({ content: (body.system ?? []).map((b) => ({ ...b })) });
  const messages: BaseMessage[] = [];
  const names = new Map<string, string>();
  for (const m of body.messages) {
    const blocks = (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content) as Obj[];
    if (m.role === 'assistant') {
      const content: Obj[] = [];
      const toolCalls: { id: string; name: string; args: Record<string, unknown>; type: 'tool_call' }[] = [];
      for (const b of blocks) {
        if (b.type === 'tool_use') {
          names.set(String(b.id), String(b.name));
          toolCalls.push({
            id: String(b.id),
            name: String(b.name),
            args: (isObj(b.input) ? b.input : {}) as Record<string, unknown>,
            type: 'tool_call',
          });
        } else content.push({ ...b });
      }
      messages.push(new lc.AIMessage({ content: content as never, tool_calls: toolCalls }));
      continue;
    }
    let pending: Obj[] = [];
    const flush = () => {
      if (pending.length) messages.push(new lc.HumanMessage({ content: pending as never }));
      pending = [];
    };
    for (const b of blocks) {
      if (b.type !== 'tool_result') {
        pending.push({ ...b });
        continue;
      }
      flush();
      const id = String(b.tool_use_id);
      let content: unknown = b.content ?? '';
      if (Array.isArray(content)) content = content.map((c: Obj) => ({ ...c }));
      if (b.cache_control) {
        const list = (typeof content === 'string' ? [{ type: 'text', text: content }] : content) as Obj[];
        const last = list[list.length - 1];
        if (last) list[list.length - 1] = { ...last, cache_control: b.cache_control };
        content = list;
      }
      const name = names.get(id);
      messages.push(
        new lc.ToolMessage({
          tool_call_id: id,
          content: content as never,
          status: b.is_error === true ? 'error' : 'success',
          ...(name ? { name } : {}),
        }),
      );
    }
    flush();
  }
  return { system, messages };
}

/** A Chat Completions body as LangChain messages: the leading system messages are the system prompt. */
export function fromChatBody(body: ChatRequestBody, lc: LangChainMessageClasses): LangChainRequest {
  const all = body.messages as Obj[];
  let k = 0;
  const systemTexts: string[] = [];
  while (k < all.length && (all[k]!.role === 'system' || all[k]!.role === 'developer')) {
    const c = all[k++]!.content;
    systemTexts.push(
      typeof c === 'string'
        ? c
        : contentParts(c)
            .map((p) => (p.type === 'text' ? p.text : ''))
            .join('\n'),
    );
  }
  const messages: BaseMessage[] = [];
  const names = new Map<string, string>();
  for (const m of all.slice(k)) {
    const content = Array.isArray(m.content) ? (m.content as Obj[]).map((c) => ({ ...c })) : (m.content ?? '');
    if (m.role === 'assistant') {
      const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : []) as { id: string; function: Obj }[];
      const toolCalls = calls.map((c) => {
        names.set(c.id, String(c.function.name));
        const args = parseArguments(c.function.arguments);
        return {
          id: c.id,
          name: String(c.function.name),
          args: (isObj(args) ? args : {}) as Record<string, unknown>,
          type: 'tool_call' as const,
        };
      });
      messages.push(new lc.AIMessage({ content: content as never, tool_calls: toolCalls }));
    } else if (m.role === 'tool') {
      const id = String(m.tool_call_id);
      const name = names.get(id);
      messages.push(new lc.ToolMessage({ tool_call_id: id, content: content as never, ...(name ? { name } : {}) }));
    } else if (m.role === 'system' || m.role === 'developer')
      messages.push(new lc.SystemMessage({ content: content as never }));
    else messages.push(new lc.HumanMessage({ content: content as never }));
  }
  return { system: new lc.SystemMessage({ content: systemTexts.join('\n\n') }), messages };
}
