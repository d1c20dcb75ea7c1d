/**
 * What the request-body formats (anthropic, openai-chat, openai-responses, ai-sdk) share: `prepareConversation`
 * (canonical messages into turns whose tool calls and results pair up, as every API requires), `requestSignals`
 * (detection), and `invalidInput` (errors naming a JSON path).
 */
import { AbridgeError } from '../errors.js';
import { base64ByteSize, textPart, compactionText } from '../model/parts.js';
import { conversationEntries } from '../model/branch.js';
import { activeMessages } from '../model/view.js';
import type {
  FilePart,
  ImagePart,
  Message,
  Part,
  ResultContentPart,
  Session,
  ToolCallPart,
  ToolResultPart,
} from '../model/types.js';
import { isRecord } from './format.js';
/** An `INVALID_INPUT` error naming the source, the JSON path and what was expected there. */
export function invalidInput(source: string, path: string, expected: string, got: unknown): AbridgeError {
  return new AbridgeError('INVALID_INPUT', `${source}: ${path}: expected ${expected}, got ${describeValue(got)}`);
}

export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'object') {
    const keys = Object.keys(v).slice(0, 6);
    return keys.length ? `an object with keys ${keys.join(', ')}` : 'an empty object';
  }
  return `the ${typeof v} ${String(v)}`;
}

/** `data:<type>;base64,<data>` into its parts; undefined for anything else. */
export function parseDataUrl(url: string): { mediaType?: string; data: string } | undefined {
  const m = /^data:([^;,]*)((?:;[^;,]*)*),/.exec(url);
  if (!m) return undefined;
  const body = url.slice(m[0].length);
  const base64 = /;base64/i.test(m[2] ?? '');
  const data = base64 ? body : Buffer.from(decodeURIComponent(body), 'utf8').toString('base64');
  return m[1] ? { mediaType: m[1], data } : { data };
}

export function dataUrl(mediaType: string | undefined, data: string): string {
  return `data:${mediaType ?? 'application/octet-stream'};base64,${data}`;
}

/** An image part from a URL that may be a data URL (whose data is then kept inline). */
export function imageFromUrl(url: string, mediaType?: string): ImagePart {
  const parsed = parseDataUrl(url);
  const part: ImagePart = { type: 'image' };
  if (parsed) {
    const mt = parsed.mediaType ?? mediaType;
    if (mt) part.mediaType = mt;
    part.data = parsed.data;
    part.byteSize = base64ByteSize(parsed.data);
  } else {
    if (mediaType) part.mediaType = mediaType;
    part.url = url;
  }
  return part;
}

/** Text in place of media a target API cannot take, so that the model still sees that something was there. */
export function mediaPlaceholder(p: ImagePart | FilePart): string {
  const what = p.type === 'image' ? 'image' : `file${p.name ? ` ${p.name}` : ''}`;
  const facts = [
    p.mediaType,
    p.byteSize !== undefined ? `${p.byteSize} bytes` : undefined,
    p.url && !p.url.startsWith('data:') ? p.url : undefined,
  ].filter(Boolean);
  return `[${what}${facts.length ? ` (${facts.join(', ')})` : ''} not included]`;
}

/** A text file kept inline: its text, for targets that take text but not that file type. */
export function inlineText(p: FilePart): string | undefined {
  if (!p.data || !p.mediaType || !/^text\/|^application\/(json|xml|x-yaml|yaml)/.test(p.mediaType)) return undefined;
  return Buffer.from(p.data, 'base64').toString('utf8');
}

export function resultText(content: ResultContentPart[]): string {
  return content.map((c) => (c.type === 'text' ? c.text : mediaPlaceholder(c))).join('\n');
}

/** One step of a conversation once prepared for an API: tool turns hold only the results of the turn before. */
export interface ConvTurn {
  role: 'user' | 'assistant' | 'tool';
  parts: Part[];
  /** The provider response an assistant turn's parts came from, when the source names it. */
  responseId?: string;
}

export interface Conversation {
  /** System prompt texts, in order (all system messages, wherever they were). */
  system: string[];
  turns: ConvTurn[];
  /** The last assistant message's model, else `extra.request.model`, else `unknown-model`. */
  model: string;
}

export interface ConversationOptions {
  /** The model to name when no assistant message names one (default `unknown-model`). */
  model?: string;
  /** Whether the target API can take this part of this message (e.g. Anthropic: only signed thinking). */
  keep?(part: Part, message: Message): boolean;
  /** Longest tool-call id the target accepts; longer ones are replaced by a stable shorter one. */
  maxIdLength?: number;
}

export const NO_RESULT_TEXT = '[no result recorded]';
export const CONVERSATION_START_TEXT = '(conversation start)';
export const UNKNOWN_MODEL = 'unknown-model';

/** Parts every target drops: text that is empty or only whitespace (Anthropic rejects it), empty summaries. */
function meaningful(part: Part): boolean {
  if (part.type === 'text') return part.text.trim() !== '';
  // A provider's own compaction goes back whatever its text (OpenAI's is opaque: no readable summary).
  if (part.type === 'compaction') return part.marker.native !== undefined || part.marker.summary.trim() !== '';
  return true;
}

/**
 * Splits one message into turns: tool results of a user or tool message come first (they answer the turn before),
 * then its other parts; an assistant message holding results of server-side tools is split around them.
 */
export function segmentMessage(
  message: Message,
  keep: (part: Part, message: Message) => boolean = () => true,
): ConvTurn[] {
  const parts = message.parts.filter((p) => meaningful(p) && keep(p, message));
  if (message.role === 'assistant') {
    const turns: ConvTurn[] = [];
    for (const p of parts) {
      const role = p.type === 'tool-result' ? 'tool' : 'assistant';
      const last = turns[turns.length - 1];
      if (last && last.role === role) last.parts.push(p);
      else
        turns.push(
          role === 'assistant' && message.responseId !== undefined
            ? { role, parts: [p], responseId: message.responseId }
            : { role, parts: [p] },
        );
    }
    return turns;
  }
  const results = parts.filter((p) => p.type === 'tool-result');
  const others = parts.filter((p) => p.type !== 'tool-result');
  const turns: ConvTurn[] = [];
  if (results.length) turns.push({ role: 'tool', parts: results });
  if (others.length) turns.push({ role: 'user', parts: others });
  return turns;
}

export function systemText(message: Message): string {
  return message.parts
    .map((p) => (p.type === 'text' ? p.text : p.type === 'compaction' ? compactionText(p.marker) : ''))
    .filter((t) => t.trim() !== '')
    .join('\n\n');
}

/** The model a converted request names: the last assistant message's model, else `fallback`, else `unknown-model`. */
export function modelOf(messages: readonly Message[], fallback?: string): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'assistant' && m.model && !m.model.startsWith('<')) return m.model;
  }
  return fallback !== undefined && fallback !== '' ? fallback : UNKNOWN_MODEL;
}

/** The model of the request a session was read from (`extra.request.model`), if any. */
export function requestModel(session: Session): string | undefined {
  const request = session.extra?.request;
  return isRecord(request) && typeof request.model === 'string' && request.model !== '' ? request.model : undefined;
}

/**
 * The model to name when the view names none (compaction archived every assistant message): the request's, else the
 * last one an assistant message of the conversation named, archived or not.
 */
export function sessionModel(session: Session): string | undefined {
  const request = requestModel(session);
  if (request !== undefined) return request;
  const messages = conversationEntries(session).flatMap((e) => (e.message ? [e.message] : []));
  const model = modelOf(messages);
  return model === UNKNOWN_MODEL ? undefined : model;
}

/**
 * What a session's writer converts: the messages the model sees (`activeView`: the compacted view, summary in place,
 * edits applied; no subagent sidechains) and the model to name.
 */
export function sessionConversation(session: Session): { messages: Message[]; model?: string } {
  const model = sessionModel(session);
  return model !== undefined ? { messages: activeMessages(session), model } : { messages: activeMessages(session) };
}

/**
 * True when abridge (or a caller) compacted the session after it was read: a compaction marker that did not come from
 * the source. Its same-format writer then writes the compacted view, not the records as they were read.
 */
export function compactedSinceRead(session: Session): boolean {
  return session.entries.some((e) => e.compaction !== undefined && e.raw === undefined);
}

/**
 * Canonical messages (a view: what the model sees) as turns an API accepts:
 * - consecutive assistant messages merge (Claude Code writes one record per content block of a response);
 * - right after an assistant turn with tool calls comes one tool turn answering each call (the results in the order
 *   written), then the user content that was between that turn and the next assistant turn;
 * - blocks of one response (`responseId`) that a result was written between make one assistant turn (Claude Code);
 * - a call without a recorded result gets an error result `[no result recorded]`. We keep the call rather than drop it:
 *   the model did make it, later turns may refer to it, and its arguments are part of the context being converted;
 *   this is also how agents close calls that were interrupted (Claude Code writes an is_error result);
 * - a result without a matching call before it (its call was compacted away, or it is duplicated) becomes user text;
 * - tool-call ids are made unique and safe (`[A-Za-z0-9_-]`, at most `maxIdLength`), results following them.
 */
export function prepareConversation(messages: readonly Message[], options: ConversationOptions = {}): Conversation {
  const keep = options.keep ?? (() => true);
  const maxId = options.maxIdLength ?? 64;

  const system: string[] = [];
  const raw: ConvTurn[] = [];
  // The latest assistant turn while only results follow it. Claude Code writes a response as one record per block and
  // may write a call's result before the response's next block; it sends the response as one message, its results
  // after it (in the order written). So do we: a later block of that response joins it.
  let open: ConvTurn | undefined;
  for (const m of messages) {
    if (m.role === 'system') {
      const text = systemText(m);
      if (text) system.push(text);
      continue;
    }
    for (const t of segmentMessage(m, keep)) {
      const last = raw[raw.length - 1];
      let into: ConvTurn;
      if (last && last.role === t.role) {
        into = last;
        into.parts.push(...t.parts);
        // An assistant turn is of the response its last block came from.
        if (t.role === 'assistant') into.responseId = t.responseId;
      } else if (t.role === 'assistant' && t.responseId !== undefined && open?.responseId === t.responseId) {
        into = open;
        into.parts.push(...t.parts);
      } else {
        into = { ...t, parts: [...t.parts] };
        raw.push(into);
      }
      if (t.role === 'assistant') open = into;
      else if (t.role !== 'tool') open = undefined;
    }
  }

  const used = new Set<string>();
  const safeId = (id: string): string => {
    let base = id.split('|')[0] ?? '';
    base = base.replace(/[^A-Za-z0-9_-]/g, '_');
    if (base === '' || base.length > maxId)
      base = `call_${hashId(id || String(used.size)).slice(0, Math.min(24, maxId - 5))}`;
    let out = base;
    for (let n = 2; used.has(out); n++) out = `${base.slice(0, maxId - String(n).length - 1)}_${n}`;
    used.add(out);
    return out;
  };

  const turns: ConvTurn[] = [];
  let i = 0;
  while (i < raw.length) {
    const head = raw[i]!;
    const isAssistant = head.role === 'assistant';
    let j = isAssistant ? i + 1 : i;
    const window: ConvTurn[] = [];
    while (j < raw.length && raw[j]!.role !== 'assistant') window.push(raw[j++]!);

    const calls: ToolCallPart[] = [];
    const waiting = new Map<string, number[]>();
    let assistantParts: Part[] = [];
    if (isAssistant) {
      assistantParts = head.parts.map((p) => {
        if (p.type !== 'tool-call') return p;
        const call: ToolCallPart = { ...p, id: safeId(p.id), name: safeName(p.name) };
        const slot = calls.length;
        calls.push(call);
        const q = waiting.get(p.id);
        if (q) q.push(slot);
        else waiting.set(p.id, [slot]);
        return call;
      });
    }
    const answers: (ToolResultPart | undefined)[] = calls.map(() => undefined);
    // Results go in the order they were written (what the agent sends), each still answering its own call.
    const written: number[] = [];
    const userParts: Part[] = [];
    for (const t of window) {
      for (const p of t.parts) {
        if (p.type !== 'tool-result') {
          userParts.push(p);
          continue;
        }
        const slot = waiting.get(p.callId)?.shift();
        if (slot !== undefined) {
          answers[slot] = { ...p, callId: calls[slot]!.id };
          written.push(slot);
        } else
          userParts.push(
            textPart(
              `[result of tool call ${p.callId}${p.toolName ? ` (${p.toolName})` : ''}${p.isError ? ', an error' : ''}]\n${resultText(p.content)}`,
            ),
          );
      }
    }
    if (isAssistant) turns.push({ role: 'assistant', parts: assistantParts });
    if (calls.length) {
      const unanswered = calls.flatMap((c, k): ToolResultPart[] =>
        answers[k]
          ? []
          : [
              {
                type: 'tool-result',
                callId: c.id,
                toolName: c.name,
                content: [textPart(NO_RESULT_TEXT)],
                isError: true,
              },
            ],
      );
      turns.push({ role: 'tool', parts: [...written.map((k) => answers[k]!), ...unanswered] });
    }
    if (userParts.length) turns.push({ role: 'user', parts: userParts });
    i = j;
  }
  return { system, turns, model: modelOf(messages, options.model) };
}

/** Tool names the APIs accept: `[A-Za-z0-9_-]{1,64}`. */
export function safeName(name: string): string {
  const s = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  return s === '' ? 'unnamed_tool' : s;
}

function hashId(seed: string): string {
  // FNV-1a, twice with different offsets: short, stable, dependency-free.
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let k = 0; k < seed.length; k++) {
    const c = seed.charCodeAt(k);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return (a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0')).repeat(2);
}

/** Evidence in a JSON document for each request-body format, for detection. Strong evidence counts 2, weak 1. */
export interface RequestSignals {
  anthropic: number;
  chat: number;
  responses: number;
  aiSdk: number;
}

const ANTHROPIC_BLOCKS = new Set([
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
  'document',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'search_result',
  'container_upload',
]);
const CHAT_PARTS = new Set(['image_url', 'input_audio', 'refusal']);
const AI_SDK_PARTS = new Set([
  'tool-call',
  'tool-result',
  'reasoning',
  'redacted-reasoning',
  'tool-approval-request',
  'tool-approval-response',
]);
const RESPONSES_PARTS = new Set(['input_text', 'output_text', 'input_image', 'input_file']);

export function requestSignals(doc: unknown): RequestSignals {
  const s: RequestSignals = { anthropic: 0, chat: 0, responses: 0, aiSdk: 0 };
  let messages: unknown[] | undefined;
  if (Array.isArray(doc)) {
    messages = doc;
    s.aiSdk += 1;
  } else if (isRecord(doc)) {
    if (Array.isArray(doc.messages)) messages = doc.messages;
    if ('input' in doc && (typeof doc.input === 'string' || Array.isArray(doc.input))) s.responses += 4;
    if (typeof doc.instructions === 'string' || 'previous_response_id' in doc || 'max_output_tokens' in doc)
      s.responses += 2;
    if (typeof doc.max_tokens === 'number') s.anthropic += 1;
    if (Array.isArray(doc.system)) s.anthropic += 2;
    if (
      'anthropic_version' in doc ||
      'stop_sequences' in doc ||
      (isRecord(doc.thinking) && typeof doc.thinking.type === 'string')
    )
      s.anthropic += 2;
    if (
      'max_completion_tokens' in doc ||
      'response_format' in doc ||
      'n' in doc ||
      'logprobs' in doc ||
      'stream_options' in doc ||
      'reasoning_effort' in doc ||
      'frequency_penalty' in doc
    )
      s.chat += 2;
    if (
      'maxOutputTokens' in doc ||
      'maxTokens' in doc ||
      'providerOptions' in doc ||
      'prompt' in doc ||
      'maxSteps' in doc ||
      'stopWhen' in doc
    )
      s.aiSdk += 2;
    if (Array.isArray(doc.tools)) {
      for (const t of doc.tools) {
        if (!isRecord(t)) continue;
        if ('input_schema' in t) s.anthropic += 2;
        if (t.type === 'function' && isRecord(t.function)) s.chat += 2;
        if (t.type === 'function' && typeof t.name === 'string' && 'parameters' in t) s.responses += 2;
        break;
      }
    } else if (isRecord(doc.tools)) s.aiSdk += 2;
  }
  if (!messages) return s;
  for (const m of messages.slice(0, 200)) {
    if (!isRecord(m)) continue;
    if (m.role === 'developer' || m.role === 'function') s.chat += 2;
    if (m.role === 'system') {
      s.chat += 1;
      s.aiSdk += 1;
    }
    if (
      'tool_calls' in m ||
      'tool_call_id' in m ||
      'function_call' in m ||
      'reasoning_content' in m ||
      m.content === null
    )
      s.chat += 2;
    if (m.role === 'tool' && typeof m.content === 'string') s.chat += 2;
    if ('providerOptions' in m || 'experimental_providerMetadata' in m) s.aiSdk += 2;
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content.slice(0, 50)) {
      if (!isRecord(b) || typeof b.type !== 'string') continue;
      if (ANTHROPIC_BLOCKS.has(b.type) || (b.type === 'image' && isRecord(b.source)) || 'cache_control' in b)
        s.anthropic += 2;
      else if (CHAT_PARTS.has(b.type) || (b.type === 'file' && isRecord(b.file))) s.chat += 2;
      else if (
        AI_SDK_PARTS.has(b.type) ||
        (b.type === 'image' && 'image' in b) ||
        (b.type === 'file' && ('mediaType' in b || 'mimeType' in b))
      )
        s.aiSdk += 2;
      else if (RESPONSES_PARTS.has(b.type)) s.responses += 2;
    }
  }
  return s;
}

/**
 * Confidence that a document is of `kind`: high when its evidence beats every other format's; for plain messages that
 * name no format, OpenAI Chat is the likeliest reading (then Anthropic when `max_tokens` is set).
 */
export function requestConfidence(kind: keyof RequestSignals, doc: unknown): number {
  const s = requestSignals(doc);
  const own = s[kind];
  const others = (Object.keys(s) as (keyof RequestSignals)[]).filter((k) => k !== kind).map((k) => s[k]);
  const best = Math.max(...others);
  if (own >= 2 && own > best) return 0.9;
  if (own > best) return 0.6;
  // No signal, or as many for another format (a system message with text content is Chat's and the AI SDK's alike):
  // the plainest reading of `messages` wins.
  if (own === best && isRecord(doc) && Array.isArray(doc.messages)) {
    if (kind === 'chat') return 0.5;
    if (kind === 'anthropic') return 0.4;
    if (kind === 'aiSdk') return 0.35;
  }
  return 0;
}

/**
 * Confidence that a bare array of messages (a conversation some agents keep as a file: Cline's and Roo Code's
 * `api_conversation_history.json` holds Anthropic messages) is `kind`'s: only on evidence, its part or field shapes — a
 * plain array that names no format stays the AI SDK's ModelMessage[].
 */
export function arrayConfidence(kind: 'anthropic' | 'chat', doc: unknown[]): number {
  const c = requestConfidence(kind, { messages: doc });
  return c >= 0.6 ? c : 0;
}

/**
 * Writes a request body. A session read from this format and not compacted since is written from its own records when
 * they still make a valid body (byte-identical when nothing changed). Otherwise (compacted, edited into an invalid body,
 * or from another format) its compacted view is converted — the messages the model sees, never the archived history —
 * keeping the request's other fields and `keep` ones (model, max_tokens) from the original request when it had them.
 */
export function writeRequestBody(
  session: Session,
  format: string,
  sameFormatBody: (s: Session) => Record<string, unknown> | undefined,
  convert: (s: Session) => object,
  keep: readonly string[] = ['model'],
): string {
  const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  if (session.format !== format) return json(convert(session));
  if (!compactedSinceRead(session)) {
    const same = sameFormatBody(session);
    if (same) return json(same);
  }
  const request = isRecord(session.extra?.request) ? session.extra.request : {};
  const converted = convert(session) as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const k of keep) kept[k] = request[k] ?? converted[k];
  return json({ ...request, ...converted, ...kept });
}
