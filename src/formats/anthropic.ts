/**
 * Anthropic Messages API request bodies: `{model, max_tokens, system?, messages: [{role, content}], tools?, …}`.
 *
 * Reading: the top-level `system` becomes a first entry with a `system` message; each message becomes an entry, except
 * a user message holding `tool_result` blocks, which becomes two entries (the results as a `tool` message right after
 * the assistant's calls, then the rest of the message as a `user` message, marked `fromSameRecord`). Every entry keeps
 * the original message object in `raw`; request fields other than `messages`/`system` go to `extra.request`.
 *
 * Writing: a session read from this format and not compacted since is written back from its raw messages and
 * `extra.request`. Any other session — or a compacted one — has its compacted view (`activeView`) encoded by
 * `encodeAnthropicRequest` (see `prepareConversation`, shared with the OpenAI writers) into a body the API accepts.
 */
import { argumentsText, base64ByteSize, imageFrom, textPart, compactionText } from '../model/parts.js';
import { SessionBuilder } from '../model/session.js';
import type {
  EntryDraft,
  FilePart,
  ImagePart,
  Message,
  Part,
  ResultContentPart,
  Session,
  ThinkingPart,
  ToolResultPart,
} from '../model/types.js';
import { asString, isRecord, type DetectInput, type TranscriptFormat } from './format.js';
import {
  invalidInput,
  mediaPlaceholder,
  inlineText,
  CONVERSATION_START_TEXT,
  segmentMessage,
  prepareConversation,
  arrayConfidence,
  requestConfidence,
  sessionConversation,
  systemText,
  writeRequestBody,
} from './request-body.js';

// ---------------------------------------------------------------------------------------------------------------------
// Wire types (what the writer produces: a subset of the API's request body)

export type AnthropicImageMediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';
export interface AnthropicTextBlock {
  type: 'text';
  text: string;
}
export interface AnthropicImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: AnthropicImageMediaType; data: string } | { type: 'url'; url: string };
}
export interface AnthropicDocumentBlock {
  type: 'document';
  source:
    | { type: 'base64'; media_type: 'application/pdf'; data: string }
    | { type: 'text'; media_type: 'text/plain'; data: string }
    | { type: 'url'; url: string };
  title?: string;
}
export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}
export interface AnthropicRedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | (AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock)[];
  is_error?: boolean;
}
export type AnthropicUserBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicToolResultBlock;
/** A compaction the API made (beta `compact-2026-01-12`), sent back as it came: the API drops what precedes it. */
export interface AnthropicCompactionBlock {
  type: 'compaction';
  content: string | null;
  encrypted_content?: string | null;
}
export type AnthropicAssistantBlock =
  | AnthropicTextBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicToolUseBlock;
export type AnthropicMessageParam =
  | { role: 'user'; content: AnthropicUserBlock[] }
  | { role: 'assistant'; content: AnthropicAssistantBlock[] };

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  system?: string;
  messages: AnthropicMessageParam[];
}

export const DEFAULT_MAX_TOKENS = 4096;
const IMAGE_TYPES = new Set<string>(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

// ---------------------------------------------------------------------------------------------------------------------
// Reading

function readAnthropic(doc: unknown, source: string, bare = false): Session {
  // A bare array of messages (an agent's saved conversation) is the messages of a request that says nothing else;
  // errors name its items as `[i]`.
  if (Array.isArray(doc)) return readAnthropic({ messages: doc }, source, true);
  if (!isRecord(doc))
    throw invalidInput(
      source,
      '(document)',
      'an Anthropic Messages API request object {model, max_tokens, messages}',
      doc,
    );
  const { messages, system, ...request } = doc;
  if (!Array.isArray(messages)) throw invalidInput(source, 'messages', 'an array of messages', messages);
  const b = new SessionBuilder('anthropic');
  if (system === null) request.system = null;
  else if (system !== undefined)
    b.add({
      kind: 'message',
      sourceType: 'system',
      raw: system,
      message: { role: 'system', parts: systemParts(system, source) },
    });
  const toolNames = new Map<string, string>();
  messages.forEach((m, i) => {
    for (const d of decodeMessage(m, `${bare ? '' : 'messages'}[${i}]`, source, toolNames)) b.add(d);
  });
  b.extra = { request, messageCount: messages.length };
  // Cline and Roo Code save the conversation without its system prompt and append their `<environment_details>` to the
  // person's turns: the prefix their prompt adds is counted (tokens/defaults.ts).
  if (bare && b.entries.some((e) => e.message?.role === 'user' && e.message.parts.some(isEnvironmentDetails)))
    b.extra.harness = 'cline';
  return b.build();
}

function systemParts(system: unknown, source: string): Part[] {
  if (typeof system === 'string') return [textPart(system)];
  if (!Array.isArray(system)) throw invalidInput(source, 'system', 'a string or an array of text blocks', system);
  return system.map((b, i) => {
    if (!isRecord(b) || b.type !== 'text' || typeof b.text !== 'string')
      throw invalidInput(source, `system[${i}]`, 'a text block {type: "text", text}', b);
    return textPart(b.text);
  });
}

function decodeMessage(m: unknown, path: string, source: string, toolNames: Map<string, string>): EntryDraft[] {
  if (!isRecord(m)) throw invalidInput(source, path, 'a message object {role, content}', m);
  const role = m.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system')
    throw invalidInput(source, `${path}.role`, '"user" or "assistant"', role);
  let parts: Part[];
  if (typeof m.content === 'string') parts = [textPart(m.content)];
  else if (Array.isArray(m.content))
    parts = m.content.map((b, j) => decodeBlock(b, `${path}.content[${j}]`, source, toolNames));
  else throw invalidInput(source, `${path}.content`, 'a string or an array of content blocks', m.content);

  const base = { kind: 'message' as const, sourceType: role === 'system' ? 'system-message' : role, raw: m };
  if (role === 'system') return [{ ...base, message: { role: 'system', parts } }];
  if (role === 'assistant') return [{ ...base, message: { role: 'assistant', parts } }];
  // A user message answering tool calls: the results become a tool message right after the assistant's calls, the rest
  // of the message a user message after them (the API itself requires the results to come first).
  const results = parts.filter((p) => p.type === 'tool-result');
  const others = parts.filter((p) => p.type !== 'tool-result');
  if (results.length === 0) return [{ ...base, message: { role: 'user', parts } }];
  const drafts: EntryDraft[] = [{ ...base, sourceType: 'user/tool_result', message: { role: 'tool', parts: results } }];
  if (others.length) drafts.push({ ...base, fromSameRecord: true, message: { role: 'user', parts: others } });
  return drafts;
}

function requireString(b: Record<string, unknown>, key: string, path: string, source: string): string {
  const v = b[key];
  if (typeof v !== 'string') throw invalidInput(source, `${path}.${key}`, 'a string', v);
  return v;
}

function decodeBlock(b: unknown, path: string, source: string, toolNames: Map<string, string>): Part {
  if (!isRecord(b) || typeof b.type !== 'string')
    throw invalidInput(source, path, 'a content block object with a string "type"', b);
  switch (b.type) {
    case 'text':
      return textPart(requireString(b, 'text', path, source));
    case 'image':
      if (!isRecord(b.source)) throw invalidInput(source, `${path}.source`, 'an image source object', b.source);
      return imageFrom(b) as ImagePart;
    case 'document':
      if (!isRecord(b.source)) throw invalidInput(source, `${path}.source`, 'a document source object', b.source);
      return documentPart(b);
    case 'thinking': {
      const p: ThinkingPart = { type: 'thinking', text: requireString(b, 'thinking', path, source) };
      if (typeof b.signature === 'string' && b.signature !== '') p.signature = b.signature;
      return p;
    }
    case 'redacted_thinking':
      return { type: 'thinking', text: '', signature: requireString(b, 'data', path, source), redacted: true };
    case 'tool_use':
    case 'server_tool_use': {
      const id = requireString(b, 'id', path, source);
      const name = requireString(b, 'name', path, source);
      toolNames.set(id, name);
      return { type: 'tool-call', id, name, arguments: b.input ?? {} };
    }
    case 'tool_result': {
      const callId = requireString(b, 'tool_use_id', path, source);
      const p: ToolResultPart = {
        type: 'tool-result',
        callId,
        content: resultBlocks(b.content, `${path}.content`, source),
        isError: b.is_error === true,
      };
      if (b.is_error === false) p.isErrorExplicit = true;
      const name = toolNames.get(callId);
      if (name) p.toolName = name;
      return p;
    }
    case 'search_result':
      return textPart(searchResultText(b));
    case 'compaction':
      // The API's own compaction (a readable summary; everything before it is dropped when it is sent back).
      return {
        type: 'compaction',
        marker: {
          number: 0,
          summary: typeof b.content === 'string' ? b.content : '',
          source: 'anthropic',
          native: { provider: 'anthropic', item: { ...b } },
        },
      };
    default:
      // Results of server-side tools (web search, web fetch, code execution…) sit in the assistant's own message.
      if (b.type.endsWith('_tool_result') && typeof b.tool_use_id === 'string') {
        const p: ToolResultPart = {
          type: 'tool-result',
          callId: b.tool_use_id,
          content: serverResultContent(b.content),
          isError: isRecord(b.content) && typeof b.content.error_code === 'string',
        };
        const name = toolNames.get(b.tool_use_id);
        if (name) p.toolName = name;
        return p;
      }
      return textPart(JSON.stringify(b));
  }
}

/** Content blocks of an Anthropic message (a response's `content`) as parts; `source` names the input in errors. */
export function decodeAnthropicContent(blocks: readonly unknown[], path: string, source: string): Part[] {
  const toolNames = new Map<string, string>();
  return blocks.map((b, j) => decodeBlock(b, `${path}[${j}]`, source, toolNames));
}

function documentPart(b: Record<string, unknown>): FilePart {
  const src = b.source as Record<string, unknown>;
  const p: FilePart = { type: 'file' };
  const title = asString(b.title);
  if (title) p.name = title;
  if (src.type === 'base64' && typeof src.data === 'string') {
    p.mediaType = asString(src.media_type) ?? 'application/pdf';
    p.data = src.data;
    p.byteSize = base64ByteSize(src.data);
  } else if (src.type === 'text' && typeof src.data === 'string') {
    p.mediaType = asString(src.media_type) ?? 'text/plain';
    p.data = Buffer.from(src.data, 'utf8').toString('base64');
    p.byteSize = Buffer.byteLength(src.data, 'utf8');
  } else if (src.type === 'content') {
    const text = resultBlocks(src.content, '', '')
      .map((c) => (c.type === 'text' ? c.text : ''))
      .join('\n');
    p.mediaType = 'text/plain';
    p.data = Buffer.from(text, 'utf8').toString('base64');
    p.byteSize = Buffer.byteLength(text, 'utf8');
  } else if (src.type === 'url' && typeof src.url === 'string') {
    p.mediaType = 'application/pdf';
    p.url = src.url;
  }
  return p;
}

function searchResultText(b: Record<string, unknown>): string {
  const body = Array.isArray(b.content)
    ? b.content.map((c) => (isRecord(c) && typeof c.text === 'string' ? c.text : '')).join('\n')
    : '';
  return [asString(b.title), asString(b.source), body].filter(Boolean).join('\n');
}

function resultBlocks(content: unknown, path: string, source: string): ResultContentPart[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return [textPart(content)];
  if (!Array.isArray(content)) throw invalidInput(source, path, 'a string or an array of content blocks', content);
  return content.map((c, k): ResultContentPart => {
    if (!isRecord(c) || typeof c.type !== 'string')
      throw invalidInput(source, `${path}[${k}]`, 'a content block object with a string "type"', c);
    if (c.type === 'text' && typeof c.text === 'string') return textPart(c.text);
    if (c.type === 'image' && isRecord(c.source)) return imageFrom(c);
    if (c.type === 'document' && isRecord(c.source)) return documentPart(c);
    if (c.type === 'search_result') return textPart(searchResultText(c));
    return textPart(JSON.stringify(c));
  });
}

function serverResultContent(c: unknown): ResultContentPart[] {
  if (c === undefined || c === null) return [];
  if (typeof c === 'string') return [textPart(c)];
  if (Array.isArray(c)) {
    const lines = c.map((x) =>
      isRecord(x) && typeof x.url === 'string'
        ? [asString(x.title), x.url].filter(Boolean).join(' — ')
        : JSON.stringify(x),
    );
    return [textPart(lines.join('\n'))];
  }
  if (isRecord(c) && typeof c.error_code === 'string') return [textPart(`error: ${c.error_code}`)];
  return [textPart(JSON.stringify(c))];
}

// ---------------------------------------------------------------------------------------------------------------------
// Writing

/** Thinking the Anthropic API will take back: signed, and signed by Anthropic (not an OpenAI reasoning item). */
function anthropicThinking(part: ThinkingPart, message: Message): boolean {
  if (!part.signature) return false; // the API rejects thinking blocks without a signature
  if (part.signature.trimStart().startsWith('{')) return false; // pi keeps OpenAI reasoning items (JSON) here
  const provider = message.provider?.toLowerCase();
  if (provider && !/anthropic|bedrock|vertex|claude/.test(provider)) return false;
  return true;
}

/** A call's arguments as the `input` the API takes: an object. */
export function toolInput(args: unknown): Record<string, unknown> {
  if (isRecord(args)) return args;
  if (args === undefined || args === null || (typeof args === 'string' && args.trim() === '')) return {};
  // The API takes only an object: keep anything else (unparsed argument text, arrays) under one key.
  return { arguments: typeof args === 'string' ? args : argumentsText(args) };
}

function encodeMedia(p: ImagePart | FilePart): AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock {
  if (p.type === 'image') {
    if (p.data && p.mediaType && IMAGE_TYPES.has(p.mediaType))
      return {
        type: 'image',
        source: { type: 'base64', media_type: p.mediaType as AnthropicImageMediaType, data: p.data },
      };
    if (p.url && /^https?:/.test(p.url)) return { type: 'image', source: { type: 'url', url: p.url } };
    return { type: 'text', text: mediaPlaceholder(p) };
  }
  const title = p.name ? { title: p.name } : {};
  if (p.data && p.mediaType === 'application/pdf')
    return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: p.data }, ...title };
  const text = inlineText(p);
  if (text !== undefined && text.trim() !== '')
    return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: text }, ...title };
  if (!p.data && p.url && /^https?:/.test(p.url) && (p.mediaType === undefined || p.mediaType === 'application/pdf'))
    return { type: 'document', source: { type: 'url', url: p.url }, ...title };
  return { type: 'text', text: mediaPlaceholder(p) };
}

function encodeUserPart(p: Part): AnthropicUserBlock | undefined {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'compaction':
      return { type: 'text', text: compactionText(p.marker) };
    case 'image':
    case 'file':
      return encodeMedia(p);
    case 'tool-call':
      // A call in a user turn cannot happen after prepareConversation; keep its text if it ever does.
      return { type: 'text', text: `[tool call ${p.name} ${argumentsText(p.arguments)}]` };
    case 'thinking':
      return p.redacted ? undefined : { type: 'text', text: p.text };
    case 'tool-result':
      return encodeResult(p);
  }
}

function encodeAssistantPart(p: Part): AnthropicAssistantBlock | undefined {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'compaction':
      // A beta block, outside the non-beta SDK's types: only a beta request carries one (`anthropicBetaParams`;
      // `anthropicParams` refuses a body that holds one).
      if (p.marker.native?.provider === 'anthropic')
        return nativeCompactionBlock(p.marker.native.item) as unknown as AnthropicAssistantBlock;
      return { type: 'text', text: compactionText(p.marker) };
    case 'thinking':
      if (!p.signature) return undefined;
      return p.redacted
        ? { type: 'redacted_thinking', data: p.signature }
        : { type: 'thinking', thinking: p.text, signature: p.signature };
    case 'tool-call':
      return { type: 'tool_use', id: p.id, name: p.name, input: toolInput(p.arguments) };
    case 'image':
    case 'file':
      // Assistant turns take no media: the model reads a placeholder.
      return { type: 'text', text: mediaPlaceholder(p) };
    case 'tool-result':
      return undefined;
  }
}

/** The API's compaction block as it returned it (type, content and encrypted content: the API checks them). */
function nativeCompactionBlock(item: Record<string, unknown>): AnthropicCompactionBlock {
  const block: AnthropicCompactionBlock = {
    type: 'compaction',
    content: typeof item.content === 'string' ? item.content : null,
  };
  if ('encrypted_content' in item)
    block.encrypted_content = typeof item.encrypted_content === 'string' ? item.encrypted_content : null;
  return block;
}

function encodeResult(p: ToolResultPart): AnthropicToolResultBlock {
  const block: AnthropicToolResultBlock = { type: 'tool_result', tool_use_id: p.callId };
  const content = p.content.filter((c) => c.type !== 'text' || c.text.trim() !== '');
  if (content.length === 1 && content[0]!.type === 'text') block.content = content[0]!.text;
  else if (content.length > 0)
    block.content = content.map((c) => (c.type === 'text' ? { type: 'text' as const, text: c.text } : encodeMedia(c)));
  if (p.isError) block.is_error = true;
  else if (p.isErrorExplicit) block.is_error = false;
  return block;
}

export interface AnthropicEncodeOptions {
  /** The model to name when no assistant message names one. */
  model?: string;
  /** `max_tokens` (default DEFAULT_MAX_TOKENS). */
  maxTokens?: number;
}

/** Whether the Anthropic API takes this part of this message back (thinking: signed by Anthropic, in assistant turns). */
export function anthropicKeeps(p: Part, m: Message): boolean {
  return p.type === 'thinking' ? m.role === 'assistant' && anthropicThinking(p, m) : true;
}

/**
 * The Anthropic encoder: canonical messages (a view: what the model sees) into a Messages API request body (see
 * `prepareConversation` for the pairing rules). Every Anthropic body abridge produces comes from here: the writer, the
 * prompt builder, the prefix-stability analysis (per message, `encodeAnthropicMessage`) and `toRequest`.
 */
export function encodeAnthropicRequest(
  input: readonly Message[],
  options: AnthropicEncodeOptions = {},
): AnthropicRequest {
  const conv = prepareConversation(input, {
    keep: anthropicKeeps,
    ...(options.model !== undefined ? { model: options.model } : {}),
  });
  const messages: AnthropicMessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: (AnthropicUserBlock | AnthropicAssistantBlock)[]) => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    // Consecutive messages of one role merge: the API wants them alternating (a tool turn and the user text after it
    // become one user message, results first).
    if (last && last.role === role) (last.content as (AnthropicUserBlock | AnthropicAssistantBlock)[]).push(...blocks);
    else messages.push({ role, content: blocks } as AnthropicMessageParam);
  };
  for (const t of conv.turns) {
    if (t.role === 'assistant')
      push(
        'assistant',
        t.parts.map(encodeAssistantPart).filter((b): b is AnthropicAssistantBlock => b !== undefined),
      );
    else if (t.role === 'tool')
      push('user', t.parts.filter((p): p is ToolResultPart => p.type === 'tool-result').map(encodeResult));
    else
      push(
        'user',
        t.parts.map(encodeUserPart).filter((b): b is AnthropicUserBlock => b !== undefined),
      );
  }
  const body: AnthropicRequest = {
    model: conv.model,
    max_tokens: options.maxTokens ?? DEFAULT_MAX_TOKENS,
    messages: completeAnthropicMessages(messages),
  };
  const system = conv.system.join('\n\n');
  if (system) body.system = system;
  return body;
}

/**
 * What a whole request's messages need besides their encoding: the API wants a user message first, and rejects a final
 * (prefill) assistant message ending in whitespace. A new array; a message that changes is copied (the incremental
 * encoder reuses the others from turn to turn).
 */
export function completeAnthropicMessages(messages: readonly AnthropicMessageParam[]): AnthropicMessageParam[] {
  const out = messages.slice();
  if (out[0]?.role !== 'user')
    out.unshift({ role: 'user', content: [{ type: 'text', text: CONVERSATION_START_TEXT }] });
  const last = out[out.length - 1]!;
  if (last.role === 'assistant' && Array.isArray(last.content)) {
    const content = last.content.slice();
    const tail = content[content.length - 1];
    if (tail?.type === 'text') {
      const text = tail.text.trimEnd();
      if (text === '') content.pop();
      else content[content.length - 1] = { ...tail, text };
    }
    if (content.length === 0) out.pop();
    else out[out.length - 1] = { ...last, content } as AnthropicMessageParam;
  }
  return out;
}

/**
 * One message alone in Anthropic's wire shape (no pairing with its neighbours): the message params it becomes (a user
 * message holding tool results and text becomes one params object, results first). Parts the API would not take back
 * are left out as in `encodeAnthropicRequest`. A system message has no params of its own: empty.
 */
export function encodeAnthropicMessage(m: Message): AnthropicMessageParam[] {
  const out: AnthropicMessageParam[] = [];
  if (m.role === 'system') return out;
  for (const t of segmentMessage(m, anthropicKeeps)) {
    let next: AnthropicMessageParam;
    if (t.role === 'assistant')
      next = {
        role: 'assistant',
        content: t.parts.map(encodeAssistantPart).filter((b): b is AnthropicAssistantBlock => b !== undefined),
      };
    else if (t.role === 'tool')
      next = {
        role: 'user',
        content: t.parts.filter((p): p is ToolResultPart => p.type === 'tool-result').map(encodeResult),
      };
    else
      next = {
        role: 'user',
        content: t.parts.map(encodeUserPart).filter((b): b is AnthropicUserBlock => b !== undefined),
      };
    const prev = out[out.length - 1];
    if (prev && prev.role === next.role)
      (prev.content as (AnthropicUserBlock | AnthropicAssistantBlock)[]).push(...next.content);
    else out.push(next);
  }
  return out;
}

/** A session's compacted view (what its model sees) as an Anthropic Messages API request body. */
export function anthropicBodyOfSession(session: Session): AnthropicRequest {
  const { messages, model } = sessionConversation(session);
  return encodeAnthropicRequest(messages, model !== undefined ? { model } : {});
}

/** The body as it was read, from `extra.request` and the raw messages; undefined when that is not possible or valid. */
function sameFormatBody(session: Session): Record<string, unknown> | undefined {
  const request = isRecord(session.extra?.request) ? session.extra.request : {};
  let system: unknown;
  const messages: unknown[] = [];
  let edited = false;
  let lastRaw: unknown;
  for (const e of session.entries) {
    const m = e.message;
    if (!m) continue;
    if (e.fromSameRecord && e.raw !== undefined && e.raw === lastRaw) continue;
    if (m.role === 'system' && e.sourceType === 'system') {
      system = e.raw !== undefined ? e.raw : systemText(m);
      continue;
    }
    if (e.raw !== undefined && isRecord(e.raw)) {
      if (e.raw !== lastRaw) messages.push(e.raw);
      lastRaw = e.raw;
      continue;
    }
    // An entry added since reading (a message appended in memory): encoded on its own, checked below with the rest.
    edited = true;
    messages.push(...encodeAnthropicMessage(m));
  }
  if (typeof session.extra?.messageCount === 'number' && messages.length !== session.extra.messageCount) edited = true;
  if (edited) mergeSameRole(messages);
  const body: Record<string, unknown> = { ...request };
  if (system !== undefined) body.system = system;
  body.messages = messages;
  if (edited && anthropicRequestProblems(body).length > 0) return undefined;
  return body;
}

function mergeSameRole(messages: unknown[]): void {
  for (let i = messages.length - 1; i > 0; i--) {
    const a = messages[i - 1];
    const b = messages[i];
    if (!isRecord(a) || !isRecord(b) || a.role !== b.role) continue;
    const blocks = (c: unknown) => (typeof c === 'string' ? [{ type: 'text', text: c }] : Array.isArray(c) ? c : []);
    messages[i - 1] = { ...a, content: [...blocks(a.content), ...blocks(b.content)] };
    messages.splice(i, 1);
  }
}

function writeAnthropic(session: Session): string {
  return writeRequestBody(session, 'anthropic', sameFormatBody, anthropicBodyOfSession, ['model', 'max_tokens']);
}

// ---------------------------------------------------------------------------------------------------------------------
// Validity

/**
 * What the Anthropic Messages API would reject in a request body, as readable problems (empty when valid): required
 * fields, roles alternating from a user message, every tool_use answered by a tool_result at the start of the next
 * (user) message and every tool_result answering one, no empty content, unsigned thinking or blank text.
 */
export function anthropicRequestProblems(body: unknown): string[] {
  const out: string[] = [];
  if (!isRecord(body)) return ['body: not an object'];
  if (typeof body.model !== 'string' || body.model === '') out.push('model: missing');
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1)
    out.push('max_tokens: missing or not a positive integer');
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system)) out.push('system: not a string or array');
    else
      body.system.forEach((b, i) => {
        if (!isRecord(b) || b.type !== 'text' || typeof b.text !== 'string' || b.text.trim() === '')
          out.push(`system[${i}]: not a non-empty text block`);
      });
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) return [...out, 'messages: missing or empty'];
  const ids = new Set<string>();
  let pending: string[] = [];
  const all: unknown[] = body.messages;
  all.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(m)) return void out.push(`${at}: not an object`);
    if (m.role !== 'user' && m.role !== 'assistant') out.push(`${at}.role: ${String(m.role)}`);
    const expected = i % 2 === 0 ? 'user' : 'assistant';
    if (m.role !== expected)
      out.push(
        `${at}: role ${String(m.role)} where ${expected} was expected (roles must alternate, starting with user)`,
      );
    const blocks =
      typeof m.content === 'string'
        ? [{ type: 'text', text: m.content }]
        : Array.isArray(m.content)
          ? m.content
          : undefined;
    if (!blocks) return void out.push(`${at}.content: not a string or array`);
    if (blocks.length === 0) out.push(`${at}.content: empty`);
    // Tool results answering the previous message's calls must lead this one.
    const answered: string[] = [];
    let leading = true;
    blocks.forEach((b: unknown, j: number) => {
      const bt = `${at}.content[${j}]`;
      if (!isRecord(b) || typeof b.type !== 'string') return void out.push(`${bt}: not a typed block`);
      if (b.type !== 'tool_result') leading = false;
      switch (b.type) {
        case 'text':
          if (typeof b.text !== 'string' || b.text.trim() === '') out.push(`${bt}: blank text`);
          break;
        case 'image':
          if (!isRecord(b.source)) out.push(`${bt}: image without source`);
          else if (
            b.source.type === 'base64' &&
            (!IMAGE_TYPES.has(String(b.source.media_type)) || typeof b.source.data !== 'string' || b.source.data === '')
          )
            out.push(`${bt}: bad base64 image`);
          break;
        case 'thinking':
          if (m.role !== 'assistant') out.push(`${bt}: thinking outside an assistant message`);
          if (typeof b.signature !== 'string' || b.signature === '') out.push(`${bt}: thinking without signature`);
          break;
        case 'redacted_thinking':
          if (typeof b.data !== 'string' || b.data === '') out.push(`${bt}: redacted thinking without data`);
          break;
        case 'tool_use':
          if (m.role !== 'assistant') out.push(`${bt}: tool_use outside an assistant message`);
          if (typeof b.id !== 'string' || !/^[A-Za-z0-9_-]+$/.test(b.id))
            out.push(`${bt}.id: ${String(b.id)} is not a valid id`);
          else if (ids.has(b.id)) out.push(`${bt}.id: ${b.id} is used twice`);
          else ids.add(b.id);
          if (typeof b.name !== 'string' || b.name === '') out.push(`${bt}.name: missing`);
          if (!isRecord(b.input)) out.push(`${bt}.input: not an object`);
          break;
        case 'tool_result':
          if (m.role !== 'user') out.push(`${bt}: tool_result outside a user message`);
          if (!leading) out.push(`${bt}: tool_result after other content (results must come first)`);
          if (typeof b.tool_use_id !== 'string' || !pending.includes(b.tool_use_id))
            out.push(`${bt}: tool_result for ${String(b.tool_use_id)}, which the previous message did not call`);
          else answered.push(b.tool_use_id);
          if (Array.isArray(b.content)) {
            if (b.content.length === 0) out.push(`${bt}.content: empty`);
            b.content.forEach((c: unknown, k: number) => {
              if (!isRecord(c) || typeof c.type !== 'string') out.push(`${bt}.content[${k}]: not a typed block`);
              else if (c.type === 'text' && (typeof c.text !== 'string' || c.text.trim() === ''))
                out.push(`${bt}.content[${k}]: blank text`);
            });
          } else if (b.content !== undefined && typeof b.content !== 'string')
            out.push(`${bt}.content: not a string or array`);
          break;
      }
    });
    for (const id of pending)
      if (!answered.includes(id)) out.push(`${at}: no tool_result for tool_use ${id} of the previous message`);
    pending =
      m.role === 'assistant'
        ? blocks
            .filter((b: unknown) => isRecord(b) && b.type === 'tool_use' && typeof b.id === 'string')
            .map((b: Record<string, unknown>) => b.id as string)
        : [];
    if (i === all.length - 1 && m.role === 'assistant') {
      const tail = blocks[blocks.length - 1];
      if (isRecord(tail) && tail.type === 'text' && typeof tail.text === 'string' && tail.text !== tail.text.trimEnd())
        out.push(`${at}: final assistant content ends with whitespace`);
    }
  });
  for (const id of pending) out.push(`messages: tool_use ${id} of the last message has no tool_result`);
  return out;
}

export const anthropicFormat: TranscriptFormat = {
  id: 'anthropic',
  label: 'Anthropic Messages API request',
  container: 'json',
  detect({ document }: DetectInput) {
    if (Array.isArray(document)) return arrayConfidence('anthropic', document);
    if (!isRecord(document) || !Array.isArray(document.messages)) return 0;
    return requestConfidence('anthropic', document);
  },
  readDocument: readAnthropic,
  write: writeAnthropic,
};

function isEnvironmentDetails(p: Part): boolean {
  return p.type === 'text' && p.text.trimStart().startsWith('<environment_details>');
}
