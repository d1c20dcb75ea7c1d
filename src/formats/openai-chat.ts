/**
 * OpenAI Chat Completions request bodies: `{model, messages: [{role, content, tool_calls?, tool_call_id?…}], tools?, …}`.
 *
 * Reading: one entry per message, `raw` the original message; `system` and `developer` messages have the `system`
 * role; `tool` (and legacy `function`) messages hold tool results; `reasoning_content` (DeepSeek, vLLM…) is thinking.
 * Request fields other than `messages` go to `extra.request`.
 *
 * Writing: a session read from this format and not compacted since is written back from its raw messages and
 * `extra.request`; any other session — or a compacted one — has its compacted view encoded by `encodeOpenaiChatRequest`.
 */
import { argumentsText, base64ByteSize, parseArguments, textPart, compactionText } from '../model/parts.js';
import { SessionBuilder } from '../model/session.js';
import type {
  EntryDraft,
  FilePart,
  ImagePart,
  Message,
  Part,
  ResultContentPart,
  Session,
  ToolResultPart,
} from '../model/types.js';
import {
  CONVERSATION_START_TEXT,
  dataUrl,
  imageFromUrl,
  inlineText,
  invalidInput,
  mediaPlaceholder,
  parseDataUrl,
  prepareConversation,
  arrayConfidence,
  requestConfidence,
  segmentMessage,
  sessionConversation,
  type ConvTurn,
  writeRequestBody,
} from './request-body.js';
import { asString, isRecord, type DetectInput, type TranscriptFormat } from './format.js';

// ---------------------------------------------------------------------------------------------------------------------
// Wire types (what the writer produces: a subset of the API's request body)

export interface ChatTextPart {
  type: 'text';
  text: string;
}
export interface ChatImagePart {
  type: 'image_url';
  image_url: { url: string };
}
export interface ChatAudioPart {
  type: 'input_audio';
  input_audio: { data: string; format: 'wav' | 'mp3' };
}
export interface ChatFilePart {
  type: 'file';
  file: { file_data: string; filename: string };
}
export type ChatUserPart = ChatTextPart | ChatImagePart | ChatAudioPart | ChatFilePart;
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ChatUserPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
}

/** OpenAI rejects tool-call ids longer than this. */
export const CHAT_MAX_ID_LENGTH = 40;

// ---------------------------------------------------------------------------------------------------------------------
// Reading

function readChat(doc: unknown, source: string, bare = false): Session {
  // A bare array of messages (an agent's saved conversation) is the messages of a request that says nothing else;
  // errors name its items as `[i]`.
  if (Array.isArray(doc)) return readChat({ messages: doc }, source, true);
  if (!isRecord(doc))
    throw invalidInput(source, '(document)', 'an OpenAI Chat Completions request object {model, messages}', doc);
  const { messages, ...request } = doc;
  if (!Array.isArray(messages)) throw invalidInput(source, 'messages', 'an array of messages', messages);
  const b = new SessionBuilder('openai-chat');
  const state: DecodeState = { toolNames: new Map(), functionCalls: [] };
  messages.forEach((m, i) => b.add(decodeMessage(m, i, source, state, `${bare ? '' : 'messages'}[${i}]`)));
  b.extra = { request, messageCount: messages.length };
  return b.build();
}

interface DecodeState {
  toolNames: Map<string, string>;
  /** Legacy `function_call`s not answered yet, for `function` messages (which name the function, not a call id). */
  functionCalls: { id: string; name: string }[];
}

function decodeMessage(m: unknown, i: number, source: string, state: DecodeState, path = `messages[${i}]`): EntryDraft {
  if (!isRecord(m)) throw invalidInput(source, path, 'a message object {role, content}', m);
  const role = m.role;
  const base = { kind: 'message' as const, sourceType: String(role), raw: m };
  switch (role) {
    case 'system':
    case 'developer':
      return { ...base, message: { role: 'system', parts: textContent(m.content, `${path}.content`, source) } };
    case 'user':
      return { ...base, message: { role: 'user', parts: userContent(m.content, `${path}.content`, source) } };
    case 'assistant': {
      const parts: Part[] = [];
      for (const key of ['reasoning_content', 'reasoning'] as const) {
        const r = m[key];
        if (typeof r === 'string' && r !== '') parts.push({ type: 'thinking', text: r });
      }
      if (m.content !== null && m.content !== undefined)
        parts.push(...textContent(m.content, `${path}.content`, source));
      if (typeof m.refusal === 'string' && m.refusal !== '') parts.push(textPart(m.refusal));
      if (m.tool_calls !== undefined && m.tool_calls !== null) {
        if (!Array.isArray(m.tool_calls))
          throw invalidInput(source, `${path}.tool_calls`, 'an array of tool calls', m.tool_calls);
        m.tool_calls.forEach((c, k) => {
          const at = `${path}.tool_calls[${k}]`;
          if (!isRecord(c)) throw invalidInput(source, at, 'a tool call object {id, type, function}', c);
          if (typeof c.id !== 'string') throw invalidInput(source, `${at}.id`, 'a string', c.id);
          if (c.type === 'custom' && isRecord(c.custom)) {
            const name = asString(c.custom.name);
            if (name === undefined) throw invalidInput(source, `${at}.custom.name`, 'a string', c.custom.name);
            parts.push({ type: 'tool-call', id: c.id, name, arguments: c.custom.input ?? '' });
            state.toolNames.set(c.id, name);
            return;
          }
          if (!isRecord(c.function))
            throw invalidInput(source, `${at}.function`, 'an object {name, arguments}', c.function);
          if (typeof c.function.name !== 'string')
            throw invalidInput(source, `${at}.function.name`, 'a string', c.function.name);
          parts.push({
            type: 'tool-call',
            id: c.id,
            name: c.function.name,
            arguments: parseArguments(c.function.arguments),
          });
          state.toolNames.set(c.id, c.function.name);
        });
      }
      if (isRecord(m.function_call)) {
        const name = asString(m.function_call.name);
        if (name === undefined)
          throw invalidInput(source, `${path}.function_call.name`, 'a string', m.function_call.name);
        const id = `function_call_${i}`;
        parts.push({ type: 'tool-call', id, name, arguments: parseArguments(m.function_call.arguments) });
        state.functionCalls.push({ id, name });
      }
      return { ...base, message: { role: 'assistant', parts } };
    }
    case 'tool': {
      if (typeof m.tool_call_id !== 'string')
        throw invalidInput(source, `${path}.tool_call_id`, 'a string', m.tool_call_id);
      const result: ToolResultPart = {
        type: 'tool-result',
        callId: m.tool_call_id,
        content: textContent(m.content, `${path}.content`, source) as ResultContentPart[],
        isError: false,
      };
      const name = state.toolNames.get(m.tool_call_id);
      if (name) result.toolName = name;
      return { ...base, message: { role: 'tool', parts: [result] } };
    }
    case 'function': {
      if (typeof m.name !== 'string') throw invalidInput(source, `${path}.name`, 'a string', m.name);
      const k = state.functionCalls.findIndex((c) => c.name === m.name);
      const callId = k >= 0 ? state.functionCalls.splice(k, 1)[0]!.id : `function_${i}`;
      const content = typeof m.content === 'string' ? [textPart(m.content)] : [];
      return {
        ...base,
        message: { role: 'tool', parts: [{ type: 'tool-result', callId, toolName: m.name, content, isError: false }] },
      };
    }
    default:
      throw invalidInput(
        source,
        `${path}.role`,
        '"system", "developer", "user", "assistant", "tool" or "function"',
        role,
      );
  }
}

/** One Chat Completions message (a completion's `choices[i].message`) as a canonical message; `path` names it in errors. */
export function decodeChatMessage(m: unknown, path: string, source: string): Message {
  const draft = decodeMessage(m, 0, source, { toolNames: new Map(), functionCalls: [] }, path);
  if (!draft.message) throw invalidInput(source, path, 'a chat message {role, content}', m);
  return draft.message;
}

/** Content that may only hold text (system, assistant, tool): a string or text/refusal parts. */
function textContent(content: unknown, path: string, source: string): Part[] {
  if (typeof content === 'string') return [textPart(content)];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw invalidInput(source, path, 'a string or an array of content parts', content);
  return content.map((c, k) => {
    if (!isRecord(c) || typeof c.type !== 'string')
      throw invalidInput(source, `${path}[${k}]`, 'a content part object with a string "type"', c);
    if (c.type === 'text') {
      if (typeof c.text !== 'string') throw invalidInput(source, `${path}[${k}].text`, 'a string', c.text);
      return textPart(c.text);
    }
    if (c.type === 'refusal' && typeof c.refusal === 'string') return textPart(c.refusal);
    return decodeUserPart(c, `${path}[${k}]`, source);
  });
}

function userContent(content: unknown, path: string, source: string): Part[] {
  if (typeof content === 'string') return [textPart(content)];
  if (!Array.isArray(content)) throw invalidInput(source, path, 'a string or an array of content parts', content);
  return content.map((c, k) => {
    if (!isRecord(c) || typeof c.type !== 'string')
      throw invalidInput(source, `${path}[${k}]`, 'a content part object with a string "type"', c);
    return decodeUserPart(c, `${path}[${k}]`, source);
  });
}

function decodeUserPart(c: Record<string, unknown>, path: string, source: string): Part {
  switch (c.type) {
    case 'text':
      if (typeof c.text !== 'string') throw invalidInput(source, `${path}.text`, 'a string', c.text);
      return textPart(c.text);
    case 'refusal':
      return textPart(asString(c.refusal) ?? '');
    case 'image_url': {
      const url =
        typeof c.image_url === 'string' ? c.image_url : isRecord(c.image_url) ? asString(c.image_url.url) : undefined;
      if (url === undefined)
        throw invalidInput(
          source,
          `${path}.image_url.url`,
          'a string',
          isRecord(c.image_url) ? c.image_url.url : c.image_url,
        );
      return imageFromUrl(url);
    }
    case 'input_audio': {
      const a = isRecord(c.input_audio) ? c.input_audio : undefined;
      if (!a || typeof a.data !== 'string')
        throw invalidInput(source, `${path}.input_audio.data`, 'a base64 string', a?.data);
      const format = asString(a.format) ?? 'wav';
      return {
        type: 'file',
        mediaType: format === 'mp3' ? 'audio/mpeg' : `audio/${format}`,
        data: a.data,
        byteSize: base64ByteSize(a.data),
      };
    }
    case 'file': {
      const f = isRecord(c.file) ? c.file : undefined;
      if (!f) throw invalidInput(source, `${path}.file`, 'an object {file_data | file_id, filename?}', c.file);
      const p: FilePart = { type: 'file' };
      const name = asString(f.filename);
      if (name) p.name = name;
      if (typeof f.file_data === 'string') {
        const parsed = parseDataUrl(f.file_data);
        const data = parsed?.data ?? f.file_data;
        if (parsed?.mediaType) p.mediaType = parsed.mediaType;
        else if (name?.toLowerCase().endsWith('.pdf')) p.mediaType = 'application/pdf';
        p.data = data;
        p.byteSize = base64ByteSize(data);
      }
      return p;
    }
    default:
      return textPart(JSON.stringify(c));
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Writing

function audioFormat(mediaType: string | undefined): 'wav' | 'mp3' | undefined {
  if (mediaType === 'audio/wav' || mediaType === 'audio/x-wav' || mediaType === 'audio/wave') return 'wav';
  if (mediaType === 'audio/mpeg' || mediaType === 'audio/mp3') return 'mp3';
  return undefined;
}

function encodeMedia(p: ImagePart | FilePart): ChatUserPart {
  if (p.type === 'image') {
    if (p.data) return { type: 'image_url', image_url: { url: dataUrl(p.mediaType ?? 'image/png', p.data) } };
    if (p.url && /^https?:/.test(p.url)) return { type: 'image_url', image_url: { url: p.url } };
    return { type: 'text', text: mediaPlaceholder(p) };
  }
  const audio = audioFormat(p.mediaType);
  if (p.data && audio) return { type: 'input_audio', input_audio: { data: p.data, format: audio } };
  if (p.data && p.mediaType === 'application/pdf')
    return { type: 'file', file: { file_data: dataUrl(p.mediaType, p.data), filename: p.name ?? 'document.pdf' } };
  const text = inlineText(p);
  if (text !== undefined) return { type: 'text', text: p.name ? `${p.name}:\n${text}` : text };
  return { type: 'text', text: mediaPlaceholder(p) };
}

/** Text of parts that can only be text in this position (assistant, tool, system). */
function plainText(parts: readonly Part[]): string {
  return parts
    .map((p) => {
      switch (p.type) {
        case 'text':
          return p.text;
        case 'compaction':
          return compactionText(p.marker);
        case 'image':
        case 'file':
          return inlineText(p as FilePart) ?? mediaPlaceholder(p);
        case 'thinking':
          return p.redacted ? '' : p.text;
        case 'tool-call':
          return `[tool call ${p.name} ${argumentsText(p.arguments)}]`;
        case 'tool-result':
          return '';
      }
    })
    .filter((t) => t !== '')
    .join('\n\n');
}

function encodeUser(parts: readonly Part[]): ChatMessage {
  const out: ChatUserPart[] = [];
  for (const p of parts) {
    if (p.type === 'image' || p.type === 'file') out.push(encodeMedia(p));
    else {
      const text = plainText([p]);
      if (text !== '') out.push({ type: 'text', text });
    }
  }
  if (out.length === 1 && out[0]!.type === 'text') return { role: 'user', content: out[0]!.text };
  return { role: 'user', content: out };
}

/** The messages of one turn. Tool results carry text only: their images follow in a user message. */
function encodeTurn(t: ConvTurn): ChatMessage[] {
  if (t.role === 'user') return [encodeUser(t.parts)];
  if (t.role === 'assistant') {
    const calls: ChatToolCall[] = [];
    for (const p of t.parts)
      if (p.type === 'tool-call')
        calls.push({
          id: p.id,
          type: 'function',
          function: { name: p.name, arguments: argumentsText(p.arguments) || '{}' },
        });
    const text = plainText(t.parts.filter((p) => p.type !== 'tool-call' && p.type !== 'thinking'));
    const msg: ChatMessage = { role: 'assistant', content: text === '' ? null : text };
    if (calls.length) msg.tool_calls = calls;
    return text === '' && calls.length === 0 ? [] : [msg];
  }
  const out: ChatMessage[] = [];
  const media: ChatUserPart[] = [];
  for (const p of t.parts) {
    if (p.type !== 'tool-result') continue;
    const forwarded = (c: ResultContentPart) =>
      c.type === 'image' && (c.data !== undefined || /^https?:/.test(c.url ?? ''));
    const text = p.content
      .map((c) =>
        c.type === 'text'
          ? c.text
          : forwarded(c)
            ? `[image${c.mediaType ? ` (${c.mediaType})` : ''} in the next user message]`
            : mediaPlaceholder(c),
      )
      .join('\n');
    out.push({ role: 'tool', tool_call_id: p.callId, content: p.isError && text === '' ? 'error' : text });
    for (const c of p.content) if (c.type === 'image' && forwarded(c)) media.push(encodeMedia(c));
  }
  if (media.length)
    out.push({ role: 'user', content: [{ type: 'text', text: 'Images returned by the tool calls above:' }, ...media] });
  return out;
}

/**
 * One message alone in the Chat Completions shape (no pairing with its neighbours), as the request encoder writes it:
 * a system message becomes a system message of its text; thinking is dropped (the API has no field to give it back).
 */
export function encodeOpenaiChatMessage(m: Message): ChatMessage[] {
  if (m.role === 'system') return [{ role: 'system', content: plainText(m.parts) }];
  return segmentMessage(m, (p) => p.type !== 'thinking').flatMap(encodeTurn);
}

export interface OpenaiChatEncodeOptions {
  /** The model to name when no assistant message names one. */
  model?: string;
}

/**
 * The Chat Completions encoder: canonical messages (a view: what the model sees) into a request body `{model,
 * messages}` (see `prepareConversation` for the pairing rules). System messages become one system message first.
 */
export function encodeOpenaiChatRequest(input: readonly Message[], options: OpenaiChatEncodeOptions = {}): ChatRequest {
  // Chat Completions has no field for reasoning given back: thinking is dropped.
  const conv = prepareConversation(input, {
    keep: (p) => p.type !== 'thinking',
    maxIdLength: CHAT_MAX_ID_LENGTH,
    ...(options.model !== undefined ? { model: options.model } : {}),
  });
  const messages: ChatMessage[] = [];
  const system = conv.system.join('\n\n');
  if (system) messages.push({ role: 'system', content: system });
  for (const t of conv.turns) messages.push(...encodeTurn(t));
  return { model: conv.model, messages: completeChatMessages(messages) };
}

/** What a whole request's messages need besides their encoding: a user message (the API refuses a request without). */
export function completeChatMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.some((m) => m.role === 'user')
    ? messages.slice()
    : [...messages, { role: 'user', content: CONVERSATION_START_TEXT }];
}

/** A session's compacted view (what its model sees) as an OpenAI Chat Completions request body. */
export function chatBodyOfSession(session: Session): ChatRequest {
  const { messages, model } = sessionConversation(session);
  return encodeOpenaiChatRequest(messages, model !== undefined ? { model } : {});
}

function sameFormatBody(session: Session): Record<string, unknown> | undefined {
  const request = isRecord(session.extra?.request) ? session.extra.request : {};
  const messages: unknown[] = [];
  let edited = false;
  for (const e of session.entries) {
    if (!e.message) continue;
    if (isRecord(e.raw)) {
      messages.push(e.raw);
      continue;
    }
    edited = true;
    messages.push(...encodeOpenaiChatMessage(e.message));
  }
  if (typeof session.extra?.messageCount === 'number' && messages.length !== session.extra.messageCount) edited = true;
  const body = { ...request, messages };
  if (edited && openaiChatRequestProblems(body).length > 0) return undefined;
  return body;
}

function writeChat(session: Session): string {
  return writeRequestBody(session, 'openai-chat', sameFormatBody, chatBodyOfSession);
}

// ---------------------------------------------------------------------------------------------------------------------
// Validity

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

/**
 * What the Chat Completions API would reject in a request body, as readable problems (empty when valid): required
 * fields, content shapes, every assistant `tool_calls` entry answered by a `tool` message right after it (before any
 * other message) and every `tool` message answering a call, unique ids, no empty content arrays.
 */
export function openaiChatRequestProblems(body: unknown): string[] {
  const out: string[] = [];
  if (!isRecord(body)) return ['body: not an object'];
  if (typeof body.model !== 'string' || body.model === '') out.push('model: missing');
  if (!Array.isArray(body.messages) || body.messages.length === 0) return [...out, 'messages: missing or empty'];
  const ids = new Set<string>();
  let pending: string[] = [];
  let inToolRun = false;
  body.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(m)) return void out.push(`${at}: not an object`);
    const role = String(m.role);
    if (!ROLES.has(role)) out.push(`${at}.role: ${role}`);
    if (role !== 'tool' && pending.length) {
      out.push(
        `${at}: tool calls ${pending.join(', ')} are not answered by tool messages right after the assistant message`,
      );
      pending = [];
    }
    if (role !== 'tool') inToolRun = false;
    const content = m.content;
    if (Array.isArray(content)) {
      if (content.length === 0) out.push(`${at}.content: empty array`);
      content.forEach((c, k) => {
        const ct = `${at}.content[${k}]`;
        if (!isRecord(c) || typeof c.type !== 'string') return void out.push(`${ct}: not a typed part`);
        const allowed =
          role === 'user'
            ? ['text', 'image_url', 'input_audio', 'file']
            : role === 'assistant'
              ? ['text', 'refusal']
              : ['text'];
        if (!allowed.includes(c.type)) out.push(`${ct}: type ${c.type} is not allowed in a ${role} message`);
        if (c.type === 'text' && typeof c.text !== 'string') out.push(`${ct}.text: not a string`);
        if (
          c.type === 'image_url' &&
          (!isRecord(c.image_url) || typeof c.image_url.url !== 'string' || c.image_url.url === '')
        )
          out.push(`${ct}.image_url.url: missing`);
        if (
          c.type === 'input_audio' &&
          (!isRecord(c.input_audio) ||
            typeof c.input_audio.data !== 'string' ||
            !['wav', 'mp3'].includes(String(c.input_audio.format)))
        )
          out.push(`${ct}.input_audio: bad`);
        if (
          c.type === 'file' &&
          (!isRecord(c.file) || (typeof c.file.file_data !== 'string' && typeof c.file.file_id !== 'string'))
        )
          out.push(`${ct}.file: no file_data or file_id`);
      });
    } else if (typeof content !== 'string' && !(role === 'assistant' && (content === null || content === undefined))) {
      out.push(`${at}.content: not a string or array`);
    }
    if (role === 'assistant') {
      const calls = m.tool_calls;
      if (calls !== undefined) {
        if (!Array.isArray(calls) || calls.length === 0) out.push(`${at}.tool_calls: empty or not an array`);
        else {
          calls.forEach((c, k) => {
            const ct = `${at}.tool_calls[${k}]`;
            if (!isRecord(c) || typeof c.id !== 'string' || c.id === '') return void out.push(`${ct}: no id`);
            if (c.id.length > CHAT_MAX_ID_LENGTH) out.push(`${ct}.id: longer than ${CHAT_MAX_ID_LENGTH}`);
            if (ids.has(c.id)) out.push(`${ct}.id: ${c.id} is used twice`);
            ids.add(c.id);
            if (c.type !== 'function' || !isRecord(c.function)) return void out.push(`${ct}: not a function call`);
            if (typeof c.function.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(c.function.name))
              out.push(`${ct}.function.name: ${String(c.function.name)} is not a valid name`);
            if (typeof c.function.arguments !== 'string') out.push(`${ct}.function.arguments: not a string`);
            pending.push(c.id);
          });
          inToolRun = true;
        }
      } else if (content === null || content === undefined)
        out.push(`${at}: assistant message with neither content nor tool_calls`);
    }
    if (role === 'tool') {
      const id = m.tool_call_id;
      if (!inToolRun) out.push(`${at}: tool message not right after an assistant message with tool_calls`);
      else if (typeof id !== 'string' || !pending.includes(id))
        out.push(
          `${at}: tool message for ${String(id)}, which the assistant message did not call (or was answered already)`,
        );
      else pending = pending.filter((p) => p !== id);
    }
  });
  if (pending.length)
    out.push(`messages: tool calls ${pending.join(', ')} of the last assistant message are not answered`);
  return out;
}

export const openaiChatFormat: TranscriptFormat = {
  id: 'openai-chat',
  label: 'OpenAI Chat Completions request',
  container: 'json',
  detect({ document }: DetectInput) {
    if (Array.isArray(document)) return arrayConfidence('chat', document);
    if (!isRecord(document) || !Array.isArray(document.messages)) return 0;
    return requestConfidence('chat', document);
  },
  readDocument: readChat,
  write: writeChat,
};
