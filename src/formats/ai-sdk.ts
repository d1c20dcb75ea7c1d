/**
 * Vercel AI SDK messages: a `ModelMessage[]` array, or the options of `generateText`/`streamText`
 * (`{model, system?, messages | prompt, tools?, …}`). AI SDK v5/v6 shapes (`input`, `output: {type, value}`,
 * `mediaType`) and v4 ones (`args`, `result`, `mimeType`, `experimental_content`) are read alike.
 *
 * Reading: one entry per message (`raw` the original), the `system` option a first `system` entry, a string `prompt`
 * one user entry; options other than `messages`/`system`/`prompt` go to `extra.request`. Provider-executed tool results
 * in an assistant message stay in that message.
 *
 * Writing: a session read from this format and not compacted since is written back from its raw messages; any other
 * session — or a compacted one — has its compacted view encoded by `encodeAiSdkMessages` into a v5 `ModelMessage[]`.
 */
import { base64ByteSize, parseArguments, textPart, compactionText } from '../model/parts.js';
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
import {
  compactedSinceRead,
  invalidInput,
  mediaPlaceholder,
  parseDataUrl,
  prepareConversation,
  arrayConfidence,
  requestConfidence,
  segmentMessage,
  sessionConversation,
  type ConvTurn,
} from './request-body.js';
import { asString, isRecord, type DetectInput, type TranscriptFormat } from './format.js';

// ---------------------------------------------------------------------------------------------------------------------
// Wire types (what the writer produces: AI SDK v5 ModelMessage)

export type AiSdkUserPart =
  | { type: 'text'; text: string }
  | { type: 'image'; image: string; mediaType?: string }
  | { type: 'file'; data: string; mediaType: string; filename?: string };
export type AiSdkAssistantPart =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string; providerOptions?: { anthropic: { signature?: string; redactedData?: string } } }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };
export type AiSdkToolOutput =
  | { type: 'text' | 'error-text'; value: string }
  | { type: 'content'; value: ({ type: 'text'; text: string } | { type: 'media'; data: string; mediaType: string })[] };
export interface AiSdkToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: AiSdkToolOutput;
}
export type AiSdkMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | AiSdkUserPart[] }
  | { role: 'assistant'; content: AiSdkAssistantPart[] }
  | { role: 'tool'; content: AiSdkToolResultPart[] };

// ---------------------------------------------------------------------------------------------------------------------
// Reading

/** Entries made from the `system` and `prompt` options of a generateText options object (not from `messages`). */
const OPTION_SYSTEM = 'option:system';
const OPTION_PROMPT = 'option:prompt';

function readAiSdk(doc: unknown, source: string): Session {
  const b = new SessionBuilder('ai-sdk');
  let messages: unknown[] = [];
  let prefix = '';
  let request: Record<string, unknown> = {};
  let documentKind: 'array' | 'object';
  if (Array.isArray(doc)) documentKind = 'array';
  else if (isRecord(doc)) {
    documentKind = 'object';
    const { messages: ms, system, prompt, ...rest } = doc;
    request = rest;
    if (typeof system === 'string')
      b.add({
        kind: 'message',
        sourceType: OPTION_SYSTEM,
        raw: system,
        message: { role: 'system', parts: [textPart(system)] },
      });
    else if (system !== undefined && system !== null) {
      // v6 also takes system messages (one or a list) here.
      const list = Array.isArray(system) ? system : [system];
      list.forEach((s, i) => {
        const at = Array.isArray(system) ? `system[${i}]` : 'system';
        if (!isRecord(s) || s.role !== 'system' || typeof s.content !== 'string')
          throw invalidInput(source, at, 'a string or a system message {role: "system", content}', s);
        b.add({
          kind: 'message',
          sourceType: OPTION_SYSTEM,
          raw: s,
          message: { role: 'system', parts: [textPart(s.content)] },
        });
      });
    }
    if (Array.isArray(ms)) {
      messages = ms;
      prefix = 'messages';
    } else if (ms !== undefined) throw invalidInput(source, 'messages', 'an array of ModelMessage', ms);
    else if (typeof prompt === 'string')
      b.add({
        kind: 'message',
        sourceType: OPTION_PROMPT,
        raw: prompt,
        message: { role: 'user', parts: [textPart(prompt)] },
      });
    else if (Array.isArray(prompt)) {
      messages = prompt;
      prefix = 'prompt';
    } else throw invalidInput(source, 'messages', 'an array of ModelMessage (or a prompt)', ms);
  } else
    throw invalidInput(
      source,
      '(document)',
      'an array of AI SDK ModelMessage, or generateText options {system?, messages}',
      doc,
    );
  if (Array.isArray(doc)) messages = doc;
  const toolNames = new Map<string, string>();
  messages.forEach((m, i) => b.add(decodeMessage(m, `${prefix}[${i}]`, source, toolNames)));
  b.extra = { request, documentKind, messagesKey: prefix || undefined, messageCount: messages.length };
  return b.build();
}

function decodeMessage(m: unknown, path: string, source: string, toolNames: Map<string, string>): EntryDraft {
  if (!isRecord(m)) throw invalidInput(source, path, 'a message object {role, content}', m);
  const role = m.role;
  const base = { kind: 'message' as const, sourceType: String(role), raw: m };
  const content = m.content;
  if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
    throw invalidInput(source, `${path}.role`, '"system", "user", "assistant" or "tool"', role);
  if (role === 'tool' && !Array.isArray(content))
    throw invalidInput(source, `${path}.content`, 'an array of tool-result parts', content);
  if (typeof content === 'string') return { ...base, message: { role, parts: [textPart(content)] } };
  if (!Array.isArray(content)) throw invalidInput(source, `${path}.content`, 'a string or an array of parts', content);
  const parts: Part[] = [];
  content.forEach((c, k) => {
    const at = `${path}.content[${k}]`;
    if (!isRecord(c) || typeof c.type !== 'string')
      throw invalidInput(source, at, 'a part object with a string "type"', c);
    const p = decodePart(c, at, source, toolNames);
    if (p) parts.push(p);
  });
  return { ...base, message: { role, parts } };
}

function decodePart(
  c: Record<string, unknown>,
  path: string,
  source: string,
  toolNames: Map<string, string>,
): Part | undefined {
  switch (c.type) {
    case 'text':
      if (typeof c.text !== 'string') throw invalidInput(source, `${path}.text`, 'a string', c.text);
      return textPart(c.text);
    case 'image':
      return media('image', c.image, asString(c.mediaType) ?? asString(c.mimeType));
    case 'file':
    case 'reasoning-file': {
      // AI SDK 7: a file of the model's reasoning (`reasoning-file`) counts as the file it is.
      const mediaType = asString(c.mediaType) ?? asString(c.mimeType);
      const p = media(mediaType?.startsWith('image/') ? 'image' : 'file', c.data, mediaType);
      const name = asString(c.filename);
      if (name && p.type === 'file') p.name = name;
      return p;
    }
    case 'reasoning': {
      const p: ThinkingPart = { type: 'thinking', text: asString(c.text) ?? '' };
      const anthropic = providerOptions(c, 'anthropic');
      const signature = asString(c.signature) ?? asString(anthropic?.signature);
      if (signature) p.signature = signature;
      const redacted = asString(anthropic?.redactedData);
      if (redacted) {
        p.signature = redacted;
        p.redacted = true;
      }
      return p;
    }
    case 'redacted-reasoning':
      return { type: 'thinking', text: '', signature: asString(c.data) ?? '', redacted: true };
    case 'tool-call': {
      if (typeof c.toolCallId !== 'string') throw invalidInput(source, `${path}.toolCallId`, 'a string', c.toolCallId);
      if (typeof c.toolName !== 'string') throw invalidInput(source, `${path}.toolName`, 'a string', c.toolName);
      toolNames.set(c.toolCallId, c.toolName);
      return {
        type: 'tool-call',
        id: c.toolCallId,
        name: c.toolName,
        arguments: 'input' in c ? parseArguments(c.input) : parseArguments(c.args),
      };
    }
    case 'tool-result': {
      if (typeof c.toolCallId !== 'string') throw invalidInput(source, `${path}.toolCallId`, 'a string', c.toolCallId);
      const { content, isError } = toolOutput(c, path, source);
      const p: ToolResultPart = { type: 'tool-result', callId: c.toolCallId, content, isError };
      const name = asString(c.toolName) ?? toolNames.get(c.toolCallId);
      if (name) p.toolName = name;
      return p;
    }
    case 'tool-approval-request':
    case 'tool-approval-response':
      // Approval bookkeeping: nothing the model reads (the message keeps it in `raw`).
      return undefined;
    case 'custom':
      // AI SDK 7's provider-specific part (`kind`, provider options): no text of its own (kept in `raw`).
      return undefined;
    default:
      return textPart(JSON.stringify(c));
  }
}

function providerOptions(c: Record<string, unknown>, provider: string): Record<string, unknown> | undefined {
  for (const key of ['providerOptions', 'providerMetadata', 'experimental_providerMetadata']) {
    const o = c[key];
    if (isRecord(o) && isRecord(o[provider])) return o[provider] as Record<string, unknown>;
  }
  return undefined;
}

/**
 * An image or file given as base64, a data URL or a URL (binary buffers do not survive JSON: kept as size only), or as
 * AI SDK 7's tagged file data (`{type: 'data', data}`, `{type: 'url', url}`; a provider reference or inline text has
 * neither data nor URL to keep).
 */
function media(kind: 'image' | 'file', value: unknown, mediaType: string | undefined): ImagePart | FilePart {
  const p: ImagePart | FilePart = kind === 'image' ? { type: 'image' } : { type: 'file' };
  if (mediaType) p.mediaType = mediaType;
  if (isRecord(value) && typeof value.type === 'string') {
    if (value.type === 'data') value = value.data;
    else if (value.type === 'url') value = value.url;
    else return p;
  }
  if (typeof value === 'string') {
    const parsed = parseDataUrl(value);
    if (parsed) {
      if (parsed.mediaType && !mediaType) p.mediaType = parsed.mediaType;
      p.data = parsed.data;
      p.byteSize = base64ByteSize(parsed.data);
    } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) p.url = value;
    else {
      p.data = value;
      p.byteSize = base64ByteSize(value);
    }
  } else if (isRecord(value)) p.byteSize = Object.keys(value).length; // a Uint8Array serialized as {"0": …}
  return p;
}

function toolOutput(
  c: Record<string, unknown>,
  path: string,
  source: string,
): { content: ResultContentPart[]; isError: boolean } {
  const o = c.output;
  if (isRecord(o) && typeof o.type === 'string') {
    const isError = o.type.startsWith('error') || o.type === 'execution-denied';
    switch (o.type) {
      case 'text':
      case 'error-text':
        if (o.value === undefined)
          throw invalidInput(source, `${path}.output.value`, `the ${o.type} output (a string)`, o.value);
        return { content: [textPart(typeof o.value === 'string' ? o.value : JSON.stringify(o.value))], isError };
      case 'json':
      case 'error-json':
        if (o.value === undefined)
          throw invalidInput(source, `${path}.output.value`, `the ${o.type} output (a JSON value)`, o.value);
        return { content: [textPart(JSON.stringify(o.value))], isError };
      case 'execution-denied':
        return {
          content: [textPart(`Tool execution denied${typeof o.reason === 'string' ? `: ${o.reason}` : ''}`)],
          isError,
        };
      case 'content':
        if (!Array.isArray(o.value))
          throw invalidInput(source, `${path}.output.value`, 'an array of content parts', o.value);
        return { content: o.value.map(contentItem), isError };
      default:
        return { content: [textPart(JSON.stringify(o))], isError };
    }
  }
  if (Array.isArray(c.experimental_content))
    return { content: c.experimental_content.map(contentItem), isError: c.isError === true };
  const v = 'output' in c ? o : c.result;
  if (v === undefined || v === null) return { content: [], isError: c.isError === true };
  return { content: [textPart(typeof v === 'string' ? v : JSON.stringify(v))], isError: c.isError === true };
}

function contentItem(item: unknown): ResultContentPart {
  if (!isRecord(item)) return textPart(typeof item === 'string' ? item : JSON.stringify(item));
  const mediaType = asString(item.mediaType) ?? asString(item.mimeType);
  switch (item.type) {
    case 'text':
      return textPart(asString(item.text) ?? '');
    case 'media':
    case 'image':
    case 'image-data':
    case 'file-data': {
      const kind =
        item.type === 'file-data' || (item.type === 'media' && mediaType && !mediaType.startsWith('image/'))
          ? 'file'
          : 'image';
      const p = media(kind, item.data, mediaType);
      const name = asString(item.filename);
      if (name && p.type === 'file') p.name = name;
      return p;
    }
    case 'image-url':
      return media('image', item.url, mediaType);
    case 'file-url':
      return media('file', item.url, mediaType);
    case 'file': {
      // AI SDK 7: one `file` item with tagged data (inline text is text).
      if (isRecord(item.data) && item.data.type === 'text') return textPart(asString(item.data.text) ?? '');
      const p = media(mediaType?.startsWith('image/') ? 'image' : 'file', item.data, mediaType);
      const name = asString(item.filename);
      if (name && p.type === 'file') p.name = name;
      return p;
    }
    default:
      return textPart(JSON.stringify(item));
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Writing

function encodeUserPart(p: Part): AiSdkUserPart | undefined {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'compaction':
      return { type: 'text', text: compactionText(p.marker) };
    case 'image':
      if (p.data)
        return p.mediaType
          ? { type: 'image', image: p.data, mediaType: p.mediaType }
          : { type: 'image', image: p.data };
      if (p.url) return { type: 'image', image: p.url };
      return { type: 'text', text: mediaPlaceholder(p) };
    case 'file':
      if (p.data && p.mediaType)
        return p.name
          ? { type: 'file', data: p.data, mediaType: p.mediaType, filename: p.name }
          : { type: 'file', data: p.data, mediaType: p.mediaType };
      return { type: 'text', text: mediaPlaceholder(p) };
    case 'thinking':
      return p.redacted ? undefined : { type: 'text', text: p.text };
    case 'tool-call':
    case 'tool-result':
      return undefined;
  }
}

function encodeAssistantPart(p: Part): AiSdkAssistantPart | undefined {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'compaction':
      return { type: 'text', text: compactionText(p.marker) };
    case 'thinking': {
      const part: AiSdkAssistantPart = { type: 'reasoning', text: p.text };
      if (p.signature && !p.signature.trimStart().startsWith('{'))
        part.providerOptions = { anthropic: p.redacted ? { redactedData: p.signature } : { signature: p.signature } };
      return part;
    }
    case 'tool-call':
      return { type: 'tool-call', toolCallId: p.id, toolName: p.name, input: p.arguments };
    case 'image':
    case 'file':
      return { type: 'text', text: mediaPlaceholder(p) };
    case 'tool-result':
      return undefined;
  }
}

function encodeResult(p: ToolResultPart, name: string): AiSdkToolResultPart {
  const media = p.content.some((c) => c.type !== 'text' && c.data && c.mediaType);
  let output: AiSdkToolOutput;
  if (media) {
    output = {
      type: 'content',
      value: p.content.map((c) =>
        c.type === 'text'
          ? { type: 'text' as const, text: c.text }
          : c.data && c.mediaType
            ? { type: 'media' as const, data: c.data, mediaType: c.mediaType }
            : { type: 'text' as const, text: mediaPlaceholder(c) },
      ),
    };
  } else {
    output = {
      type: p.isError ? 'error-text' : 'text',
      value: p.content.map((c) => (c.type === 'text' ? c.text : mediaPlaceholder(c))).join('\n'),
    };
  }
  return { type: 'tool-result', toolCallId: p.callId, toolName: p.toolName ?? name, output };
}

function encodeTurn(t: ConvTurn, names: Map<string, string>): AiSdkMessage | undefined {
  if (t.role === 'user') {
    const content = t.parts.map(encodeUserPart).filter((c): c is AiSdkUserPart => c !== undefined);
    if (content.length === 0) return undefined;
    return { role: 'user', content: content.length === 1 && content[0]!.type === 'text' ? content[0]!.text : content };
  }
  if (t.role === 'assistant') {
    for (const p of t.parts) if (p.type === 'tool-call') names.set(p.id, p.name);
    const content = t.parts.map(encodeAssistantPart).filter((c): c is AiSdkAssistantPart => c !== undefined);
    return content.length ? { role: 'assistant', content } : undefined;
  }
  const results = t.parts
    .filter((p): p is ToolResultPart => p.type === 'tool-result')
    .map((p) => encodeResult(p, names.get(p.callId) ?? 'unknown_tool'));
  return results.length ? { role: 'tool', content: results } : undefined;
}

/**
 * The AI SDK encoder: canonical messages (a view: what the model sees) into v5 `ModelMessage[]` (see
 * `prepareConversation` for the pairing rules).
 */
export function encodeAiSdkMessages(messages: readonly Message[]): AiSdkMessage[] {
  const conv = prepareConversation(messages);
  const out: AiSdkMessage[] = [];
  for (const s of conv.system) out.push({ role: 'system', content: s });
  const names = new Map<string, string>();
  for (const t of conv.turns) {
    const m = encodeTurn(t, names);
    if (m) out.push(m);
  }
  return out;
}

/** A session's compacted view (what its model sees) as AI SDK v5 `ModelMessage[]`. */
export function toAiSdkMessages(session: Session): AiSdkMessage[] {
  return encodeAiSdkMessages(sessionConversation(session).messages);
}

function writeAiSdk(session: Session): string {
  const request = isRecord(session.extra?.request) ? session.extra.request : {};
  if (session.format !== 'ai-sdk') return `${JSON.stringify(toAiSdkMessages(session), null, 2)}\n`;
  if (compactedSinceRead(session)) {
    // Compacted since it was read: the compacted view, in the document's shape (system messages stay messages).
    const messages = toAiSdkMessages(session);
    if (session.extra?.documentKind !== 'object') return `${JSON.stringify(messages, null, 2)}\n`;
    return `${JSON.stringify({ ...request, [session.extra?.messagesKey === 'prompt' ? 'prompt' : 'messages']: messages }, null, 2)}\n`;
  }
  // Read from this format: the raw messages (and options) as they were; entries added since are encoded.
  const system: unknown[] = [];
  let prompt: string | undefined;
  const messages: unknown[] = [];
  const names = new Map<string, string>();
  for (const e of session.entries) {
    if (!e.message) continue;
    if (e.sourceType === OPTION_SYSTEM && e.raw !== undefined) system.push(e.raw);
    else if (e.sourceType === OPTION_PROMPT && typeof e.raw === 'string') prompt = e.raw;
    else if (e.raw !== undefined) messages.push(e.raw);
    else if (e.message.role === 'system')
      messages.push({
        role: 'system',
        content: e.message.parts
          .map((p) => (p.type === 'text' ? p.text : p.type === 'compaction' ? compactionText(p.marker) : ''))
          .join('\n\n'),
      });
    else {
      for (const t of segmentMessage(e.message)) {
        const m = encodeTurn(t, names);
        if (m) messages.push(m);
      }
    }
  }
  if (session.extra?.documentKind !== 'object') return `${JSON.stringify(messages, null, 2)}\n`;
  const body: Record<string, unknown> = { ...request };
  if (system.length === 1) body.system = system[0];
  else if (system.length > 1) body.system = system;
  if (prompt !== undefined && messages.length === 0) body.prompt = prompt;
  else
    body[session.extra?.messagesKey === 'prompt' ? 'prompt' : 'messages'] =
      prompt !== undefined ? [{ role: 'user', content: prompt }, ...messages] : messages;
  return `${JSON.stringify(body, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------------------------------
// Validity

/**
 * Problems the AI SDK (or the provider behind it) would reject in a ModelMessage list: unknown roles or part types
 * for the role, empty content, tool results that answer no earlier call, calls never answered.
 */
export function aiSdkMessagesProblems(messages: unknown): string[] {
  if (!Array.isArray(messages)) return ['messages: not an array'];
  const out: string[] = [];
  const pending = new Map<string, string>();
  const allowed: Record<string, string[]> = {
    user: ['text', 'image', 'file'],
    assistant: ['text', 'reasoning', 'tool-call', 'tool-result', 'file'],
    tool: ['tool-result'],
  };
  messages.forEach((m, i) => {
    const at = `[${i}]`;
    if (!isRecord(m)) return void out.push(`${at}: not an object`);
    const role = String(m.role);
    if (role === 'system') {
      if (typeof m.content !== 'string') out.push(`${at}.content: system content must be a string`);
      return;
    }
    if (!allowed[role]) return void out.push(`${at}.role: ${role}`);
    if (typeof m.content === 'string') {
      if (role === 'tool') out.push(`${at}.content: tool content must be an array`);
      return;
    }
    if (!Array.isArray(m.content) || m.content.length === 0)
      return void out.push(`${at}.content: empty or not an array`);
    m.content.forEach((c: unknown, k: number) => {
      const ct = `${at}.content[${k}]`;
      if (!isRecord(c) || typeof c.type !== 'string') return void out.push(`${ct}: not a typed part`);
      if (!allowed[role]!.includes(c.type)) out.push(`${ct}: ${c.type} is not allowed in a ${role} message`);
      if (c.type === 'tool-call') {
        if (typeof c.toolCallId !== 'string' || typeof c.toolName !== 'string')
          out.push(`${ct}: tool-call without toolCallId/toolName`);
        else pending.set(c.toolCallId, ct);
      }
      if (c.type === 'tool-result') {
        if (typeof c.toolCallId !== 'string' || !pending.has(c.toolCallId))
          out.push(`${ct}: tool-result for ${String(c.toolCallId)}, which no earlier tool-call made`);
        else pending.delete(c.toolCallId);
        if (!isRecord(c.output) || typeof c.output.type !== 'string') out.push(`${ct}.output: not a typed output`);
      }
    });
  });
  for (const [id, at] of pending) out.push(`${at}: tool-call ${id} has no tool-result`);
  return out;
}

export const aiSdkFormat: TranscriptFormat = {
  id: 'ai-sdk',
  label: 'Vercel AI SDK ModelMessage[]',
  container: 'json',
  detect({ document }: DetectInput) {
    if (Array.isArray(document)) {
      if (document.length === 0 || !document.every((m) => isRecord(m) && typeof m.role === 'string' && 'content' in m))
        return 0;
      // Anthropic's or Chat's blocks and fields (tool_use, tool_calls…): that format's messages, not ModelMessage[] —
      // read as ModelMessage[], their calls and results would become text.
      if (arrayConfidence('anthropic', document) > 0 || arrayConfidence('chat', document) > 0) return 0;
      const c = requestConfidence('aiSdk', document);
      return c > 0 ? Math.max(c, 0.7) : 0.4;
    }
    if (!isRecord(document) || (!Array.isArray(document.messages) && !('prompt' in document))) return 0;
    return (
      requestConfidence('aiSdk', document) ||
      (typeof document.prompt === 'string' || Array.isArray(document.prompt) ? 0.6 : 0)
    );
  },
  readDocument: readAiSdk,
  write: writeAiSdk,
};
