/**
 * OpenAI Responses API request bodies: `{model, instructions?, input: string | items[], tools?, …}`.
 *
 * Reading: `instructions` becomes a first entry with a `system` message, a string `input` one user message, and each
 * input item one entry (`raw` the item): messages by role (`developer` is `system`), `function_call` /
 * `custom_tool_call` (and the other `*_call` items) assistant tool calls, `*_call_output` tool results, `reasoning`
 * thinking (`encrypted_content` as its signature). Hosted tools whose item holds call and outcome together
 * (`mcp_call`, `web_search_call`, `image_generation_call`…) become an assistant message with both. Request fields other
 * than `input`/`instructions` go to `extra.request`.
 *
 * Writing: a session read from this format and not compacted since is written back from its raw items and
 * `extra.request`; any other session — or a compacted one — has its compacted view encoded by
 * `encodeOpenaiResponsesRequest`.
 */
import { argumentsText, base64ByteSize, parseArguments, textPart, compactionText } from '../model/parts.js';
import { SessionBuilder } from '../model/session.js';
import type {
  EntryDraft,
  FilePart,
  Message,
  Part,
  ResultContentPart,
  Session,
  ThinkingPart,
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
  requestConfidence,
  segmentMessage,
  sessionConversation,
  type ConvTurn,
  writeRequestBody,
} from './request-body.js';
import { asString, isRecord, type DetectInput, type TranscriptFormat } from './format.js';

// ---------------------------------------------------------------------------------------------------------------------
// Wire types (what the writer produces: a subset of the API's request body)

export type ResponsesInputContent =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; detail: 'auto'; image_url: string }
  | { type: 'input_file'; file_data: string; filename: string };
export type ResponsesItem =
  | { type: 'message'; role: 'user'; content: string | ResponsesInputContent[] }
  | { type: 'message'; role: 'assistant'; content: string }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string | ResponsesInputContent[] }
  | ResponsesReasoningItem
  | ResponsesCompactionItem;
/** The API's own compaction (opaque), sent back as it came: the API drops what precedes it. */
export interface ResponsesCompactionItem {
  type: 'compaction';
  encrypted_content: string;
  id?: string;
}
/** A reasoning item given back as the API produced it (its id and encrypted content: the API checks them). */
export interface ResponsesReasoningItem {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  encrypted_content?: string;
}
export interface ResponsesRequest {
  model: string;
  instructions?: string;
  input: ResponsesItem[];
}

/** Longest call id we write (OpenAI's own are far shorter; some back ends reject long ones). */
const MAX_ID_LENGTH = 64;

// ---------------------------------------------------------------------------------------------------------------------
// Reading

function readResponses(doc: unknown, source: string): Session {
  if (!isRecord(doc))
    throw invalidInput(source, '(document)', 'an OpenAI Responses API request object {model, input}', doc);
  const { input, instructions, ...request } = doc;
  const b = new SessionBuilder('openai-responses');
  if (typeof instructions === 'string')
    b.add({
      kind: 'message',
      sourceType: 'instructions',
      raw: instructions,
      message: { role: 'system', parts: [textPart(instructions)] },
    });
  else if (instructions === null) request.instructions = null;
  else if (instructions !== undefined) throw invalidInput(source, 'instructions', 'a string', instructions);

  let inputKind: 'string' | 'array' | 'none' = 'none';
  if (typeof input === 'string') {
    inputKind = 'string';
    b.add({ kind: 'message', sourceType: 'input', raw: input, message: { role: 'user', parts: [textPart(input)] } });
  } else if (Array.isArray(input)) {
    inputKind = 'array';
    const state: DecodeState = { toolNames: new Map(), compactions: 0 };
    input.forEach((item, i) => {
      const draft = decodeItem(item, `input[${i}]`, source, state);
      if (draft.kind === 'unknown')
        b.problems.push({
          line: 0,
          kind: 'unknown-entry-type',
          message: `${source}: input[${i}]: unknown item type "${String(draft.sourceType)}"; kept as is`,
        });
      b.add(draft);
    });
  } else if (input !== undefined && input !== null)
    throw invalidInput(source, 'input', 'a string or an array of input items', input);
  else if (input === null) request.input = null;
  b.extra = { request, inputKind, messageCount: Array.isArray(input) ? input.length : inputKind === 'string' ? 1 : 0 };
  return b.build();
}

interface DecodeState {
  toolNames: Map<string, string>;
  compactions: number;
}

/** Items of hosted tools that carry their call and its outcome in one item. */
const HOSTED = new Set([
  'web_search_call',
  'file_search_call',
  'code_interpreter_call',
  'image_generation_call',
  'mcp_call',
  'tool_search_call',
]);
/** Items that are no message: kept as they are. */
const EVENTS = new Set([
  'item_reference',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'additional_tools',
  'compaction_trigger',
  'program',
  'program_output',
]);

function requireString(item: Record<string, unknown>, key: string, path: string, source: string): string {
  const v = item[key];
  if (typeof v !== 'string') throw invalidInput(source, `${path}.${key}`, 'a string', v);
  return v;
}

function decodeItem(item: unknown, path: string, source: string, state: DecodeState): EntryDraft {
  if (!isRecord(item)) throw invalidInput(source, path, 'an input item object', item);
  const type = typeof item.type === 'string' ? item.type : typeof item.role === 'string' ? 'message' : undefined;
  if (type === undefined)
    throw invalidInput(source, path, 'an input item with a string "type" or a message "role"', item);
  const base = { kind: 'message' as const, sourceType: type, raw: item };
  const toolResult = (callId: string, content: ResultContentPart[], isError = false): ToolResultPart => {
    const p: ToolResultPart = { type: 'tool-result', callId, content, isError };
    const name = state.toolNames.get(callId);
    if (name) p.toolName = name;
    return p;
  };
  switch (type) {
    case 'message': {
      const role = item.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer')
        throw invalidInput(source, `${path}.role`, '"user", "assistant", "system" or "developer"', role);
      const parts = messageContent(item.content, `${path}.content`, source);
      return { ...base, message: { role: role === 'developer' ? 'system' : role, parts } };
    }
    case 'function_call':
    case 'custom_tool_call': {
      const callId = requireString(item, 'call_id', path, source);
      const name = requireString(item, 'name', path, source);
      state.toolNames.set(callId, name);
      const args = type === 'function_call' ? parseArguments(item.arguments) : (item.input ?? '');
      return {
        ...base,
        message: { role: 'assistant', parts: [{ type: 'tool-call', id: callId, name, arguments: args }] },
      };
    }
    case 'function_call_output':
    case 'custom_tool_call_output': {
      const callId = requireString(item, 'call_id', path, source);
      return {
        ...base,
        message: { role: 'tool', parts: [toolResult(callId, outputContent(item.output, `${path}.output`, source))] },
      };
    }
    case 'reasoning': {
      const texts = (list: unknown) =>
        Array.isArray(list)
          ? list.map((s) => (isRecord(s) && typeof s.text === 'string' ? s.text : '')).filter((t) => t !== '')
          : [];
      if (item.summary !== undefined && !Array.isArray(item.summary))
        throw invalidInput(source, `${path}.summary`, 'an array of summary parts', item.summary);
      let text = texts(item.summary).join('\n\n');
      if (text === '') text = texts(item.content).join('\n\n');
      const p: ThinkingPart = { type: 'thinking', text };
      if (typeof item.encrypted_content === 'string' && item.encrypted_content !== '') {
        p.signature = item.encrypted_content;
        if (text === '') p.redacted = true;
      }
      return { ...base, message: { role: 'assistant', parts: [p] } };
    }
    case 'compaction':
      // OpenAI's own compaction: an opaque (encrypted) summary of the history before it.
      state.compactions++;
      return {
        kind: 'compaction',
        sourceType: type,
        raw: item,
        compaction: {
          number: state.compactions,
          summary: '',
          source: 'openai',
          ...(typeof item.encrypted_content === 'string' && item.encrypted_content !== ''
            ? { native: { provider: 'openai' as const, item: { ...item } } }
            : {}),
        },
      };
    default:
      break;
  }
  if (HOSTED.has(type)) {
    const id = asString(item.id) ?? asString(item.call_id) ?? '';
    const name = type === 'mcp_call' ? (asString(item.name) ?? 'mcp') : type.replace(/_call$/, '');
    const { id: _id, type: _type, status: _status, output, results, outputs, result, error, ...args } = item;
    const callArgs = type === 'mcp_call' ? parseArguments(item.arguments) : args;
    const content: ResultContentPart[] = [];
    if (type === 'image_generation_call' && typeof result === 'string' && result !== '')
      content.push({ type: 'image', mediaType: 'image/png', data: result, byteSize: base64ByteSize(result) });
    else
      for (const v of [output, results, outputs, result])
        if (v !== undefined && v !== null) content.push(textPart(typeof v === 'string' ? v : JSON.stringify(v)));
    if (typeof error === 'string' && error !== '') content.push(textPart(error));
    return {
      ...base,
      message: {
        role: 'assistant',
        parts: [
          { type: 'tool-call', id, name, arguments: callArgs },
          {
            type: 'tool-result',
            callId: id,
            toolName: name,
            content,
            isError: typeof error === 'string' && error !== '',
          },
        ],
      },
    };
  }
  if (type.endsWith('_call_output')) {
    // computer_call_output, local_shell_call_output (which names the call by `id`), shell_call_output, apply_patch…
    const callId = asString(item.call_id) ?? asString(item.id) ?? '';
    return {
      ...base,
      message: {
        role: 'tool',
        parts: [toolResult(callId, outputContent(item.output, `${path}.output`, source), item.status === 'failed')],
      },
    };
  }
  if (type.endsWith('_call')) {
    const callId = asString(item.call_id) ?? asString(item.id) ?? '';
    const name = type.replace(/_call$/, '');
    state.toolNames.set(callId, name);
    const { id: _id, call_id: _callId, type: _type, status: _status, ...args } = item;
    return {
      ...base,
      message: { role: 'assistant', parts: [{ type: 'tool-call', id: callId, name, arguments: args }] },
    };
  }
  if (EVENTS.has(type)) return { kind: 'event', sourceType: type, raw: item };
  return { kind: 'unknown', sourceType: type, raw: item };
}

/**
 * The parts of Responses output items (what a response's `output` holds: the same shapes as input items), as one
 * assistant message's parts; items that are no message (events) are left out. `source` names the input in errors.
 */
export function decodeResponsesOutput(items: readonly unknown[], source: string): Part[] {
  const state: DecodeState = { toolNames: new Map(), compactions: 0 };
  const parts: Part[] = [];
  items.forEach((item, i) => {
    const draft = decodeItem(item, `output[${i}]`, source, state);
    if (draft.message) parts.push(...draft.message.parts);
  });
  return parts;
}

function messageContent(content: unknown, path: string, source: string): Part[] {
  if (typeof content === 'string') return [textPart(content)];
  if (!Array.isArray(content)) throw invalidInput(source, path, 'a string or an array of content parts', content);
  return content.map((c, k) => {
    if (!isRecord(c) || typeof c.type !== 'string')
      throw invalidInput(source, `${path}[${k}]`, 'a content part object with a string "type"', c);
    return decodeContentPart(c, `${path}[${k}]`, source);
  });
}

function decodeContentPart(c: Record<string, unknown>, path: string, source: string): ResultContentPart {
  switch (c.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
    case 'summary_text':
    case 'reasoning_text':
      if (typeof c.text !== 'string') throw invalidInput(source, `${path}.text`, 'a string', c.text);
      return textPart(c.text);
    case 'refusal':
      return textPart(asString(c.refusal) ?? '');
    case 'input_image':
    case 'computer_screenshot': {
      const url = asString(c.image_url);
      return url ? imageFromUrl(url) : { type: 'image' };
    }
    case 'input_file': {
      const p: FilePart = { type: 'file' };
      const name = asString(c.filename);
      if (name) p.name = name;
      if (typeof c.file_data === 'string') {
        const parsed = parseDataUrl(c.file_data);
        const data = parsed?.data ?? c.file_data;
        if (parsed?.mediaType) p.mediaType = parsed.mediaType;
        else if (name?.toLowerCase().endsWith('.pdf')) p.mediaType = 'application/pdf';
        p.data = data;
        p.byteSize = base64ByteSize(data);
      } else if (typeof c.file_url === 'string') p.url = c.file_url;
      return p;
    }
    case 'input_audio': {
      const a = isRecord(c.input_audio) ? c.input_audio : {};
      const data = asString(a.data);
      const format = asString(a.format) ?? 'wav';
      const p: FilePart = { type: 'file', mediaType: format === 'mp3' ? 'audio/mpeg' : `audio/${format}` };
      if (data) {
        p.data = data;
        p.byteSize = base64ByteSize(data);
      }
      return p;
    }
    default:
      return textPart(JSON.stringify(c));
  }
}

function outputContent(output: unknown, path: string, source: string): ResultContentPart[] {
  if (output === undefined || output === null) return [];
  if (typeof output === 'string') return [textPart(output)];
  if (Array.isArray(output)) {
    return output.map((c, k) => {
      if (!isRecord(c) || typeof c.type !== 'string') {
        if (isRecord(c)) return textPart(JSON.stringify(c)); // shell_call_output chunks {stdout, stderr, outcome}
        throw invalidInput(source, `${path}[${k}]`, 'an output part object', c);
      }
      return decodeContentPart(c, `${path}[${k}]`, source);
    });
  }
  if (isRecord(output) && typeof output.type === 'string') return [decodeContentPart(output, path, source)];
  return [textPart(JSON.stringify(output))];
}

// ---------------------------------------------------------------------------------------------------------------------
// Writing

function encodeContent(p: Part): ResponsesInputContent | undefined {
  switch (p.type) {
    case 'text':
      return { type: 'input_text', text: p.text };
    case 'compaction':
      return { type: 'input_text', text: compactionText(p.marker) };
    case 'image':
      if (p.data)
        return { type: 'input_image', detail: 'auto', image_url: dataUrl(p.mediaType ?? 'image/png', p.data) };
      if (p.url && /^https?:/.test(p.url)) return { type: 'input_image', detail: 'auto', image_url: p.url };
      return { type: 'input_text', text: mediaPlaceholder(p) };
    case 'file': {
      if (p.data && p.mediaType === 'application/pdf')
        return { type: 'input_file', file_data: dataUrl(p.mediaType, p.data), filename: p.name ?? 'document.pdf' };
      const text = inlineText(p);
      if (text !== undefined) return { type: 'input_text', text: p.name ? `${p.name}:\n${text}` : text };
      return { type: 'input_text', text: mediaPlaceholder(p) };
    }
    case 'thinking':
      return p.redacted ? undefined : { type: 'input_text', text: p.text };
    case 'tool-call':
      return { type: 'input_text', text: `[tool call ${p.name} ${argumentsText(p.arguments)}]` };
    case 'tool-result':
      return undefined;
  }
}

function contentValue(list: ResponsesInputContent[]): string | ResponsesInputContent[] {
  if (list.length === 1 && list[0]!.type === 'input_text') return list[0]!.text;
  return list;
}

function encodeTurn(t: ConvTurn): ResponsesItem[] {
  const out: ResponsesItem[] = [];
  if (t.role === 'user') {
    const content = t.parts.map(encodeContent).filter((c): c is ResponsesInputContent => c !== undefined);
    if (content.length) out.push({ type: 'message', role: 'user', content: contentValue(content) });
    return out;
  }
  if (t.role === 'assistant') {
    // Assistant text goes back as a plain string (the API wants output_text parts there, and a string is always taken).
    let text: string[] = [];
    const flush = () => {
      if (text.length) out.push({ type: 'message', role: 'assistant', content: text.join('\n\n') });
      text = [];
    };
    for (const p of t.parts) {
      if (p.type === 'thinking') {
        const item = reasoningItem(p);
        if (item) {
          flush();
          out.push(item);
        }
      } else if (p.type === 'tool-call') {
        flush();
        out.push({ type: 'function_call', call_id: p.id, name: p.name, arguments: argumentsText(p.arguments) || '{}' });
      } else if (p.type === 'text') text.push(p.text);
      else if (p.type === 'compaction') {
        const item = p.marker.native?.provider === 'openai' ? compactionItem(p.marker.native.item) : undefined;
        if (item) {
          flush();
          out.push(item);
        } else text.push(compactionText(p.marker));
      } else if (p.type === 'image' || p.type === 'file') text.push(mediaPlaceholder(p));
    }
    flush();
    return out;
  }
  for (const p of t.parts) {
    if (p.type !== 'tool-result') continue;
    const content = p.content.map(encodeContent).filter((c): c is ResponsesInputContent => c !== undefined);
    const output =
      content.length === 0
        ? ''
        : content.every((c) => c.type === 'input_text')
          ? content.map((c) => (c as { text: string }).text).join('\n')
          : content;
    out.push({ type: 'function_call_output', call_id: p.callId, output });
  }
  return out;
}

/** The API's compaction item as it returned it (its id and encrypted content); undefined when it has none. */
function compactionItem(item: Record<string, unknown>): ResponsesCompactionItem | undefined {
  if (typeof item.encrypted_content !== 'string' || item.encrypted_content === '') return undefined;
  const out: ResponsesCompactionItem = { type: 'compaction', encrypted_content: item.encrypted_content };
  if (typeof item.id === 'string' && item.id !== '') out.id = item.id;
  return out;
}

/**
 * A thinking part that holds a Responses reasoning item (its JSON in the signature, as `fromResponse` and pi keep it),
 * as that item; undefined for any other thinking (the API takes back only its own reasoning items).
 */
export function reasoningItem(p: ThinkingPart): ResponsesReasoningItem | undefined {
  const sig = p.signature?.trimStart();
  if (!sig || !sig.startsWith('{')) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(sig);
  } catch {
    return undefined;
  }
  if (!isRecord(v) || v.type !== 'reasoning' || typeof v.id !== 'string' || v.id === '') return undefined;
  const summary = Array.isArray(v.summary)
    ? v.summary.filter(
        (x): x is { type: 'summary_text'; text: string } =>
          isRecord(x) && x.type === 'summary_text' && typeof x.text === 'string',
      )
    : [];
  const item: ResponsesReasoningItem = { type: 'reasoning', id: v.id, summary };
  if (typeof v.encrypted_content === 'string' && v.encrypted_content !== '')
    item.encrypted_content = v.encrypted_content;
  return item;
}

export interface OpenaiResponsesEncodeOptions {
  /** The model to name when no assistant message names one. */
  model?: string;
}

/**
 * The Responses encoder: canonical messages (a view: what the model sees) into a request body `{model, instructions?,
 * input}` (see `prepareConversation` for the pairing rules). System messages become `instructions`. Reasoning goes back
 * only as the items the API produced (`reasoningItem`), each before the item that followed it; other thinking is dropped.
 */
export function encodeOpenaiResponsesRequest(
  messages: readonly Message[],
  options: OpenaiResponsesEncodeOptions = {},
): ResponsesRequest {
  const conv = prepareConversation(messages, {
    keep: (p, m) => p.type !== 'thinking' || (m.role === 'assistant' && reasoningItem(p) !== undefined),
    maxIdLength: MAX_ID_LENGTH,
    ...(options.model !== undefined ? { model: options.model } : {}),
  });
  const input: ResponsesItem[] = [];
  for (const t of conv.turns) input.push(...encodeTurn(t));
  const body: ResponsesRequest = { model: conv.model, input: completeResponsesInput(input) };
  const system = conv.system.join('\n\n');
  if (system) body.instructions = system;
  return body;
}

/**
 * What a whole request's input needs besides its encoding: a reasoning item needs the item that followed it (one left
 * last, of a turn that ended in reasoning, goes), and an empty input gets a user message. A new array.
 */
export function completeResponsesInput(input: readonly ResponsesItem[]): ResponsesItem[] {
  const out = input.slice();
  while (out.length > 0 && out[out.length - 1]!.type === 'reasoning') out.pop();
  if (out.length === 0) out.push({ type: 'message', role: 'user', content: CONVERSATION_START_TEXT });
  return out;
}

/** A session's compacted view (what its model sees) as an OpenAI Responses API request body. */
export function responsesBodyOfSession(session: Session): ResponsesRequest {
  const { messages, model } = sessionConversation(session);
  return encodeOpenaiResponsesRequest(messages, model !== undefined ? { model } : {});
}

function sameFormatBody(session: Session): Record<string, unknown> | undefined {
  const request = isRecord(session.extra?.request) ? session.extra.request : {};
  let instructions: unknown;
  let inputString: string | undefined;
  const items: unknown[] = [];
  let edited = false;
  for (const e of session.entries) {
    if (e.sourceType === 'instructions' && typeof e.raw === 'string') {
      instructions = e.raw;
      continue;
    }
    if (e.sourceType === 'input' && typeof e.raw === 'string') {
      inputString = e.raw;
      items.push({ type: 'message', role: 'user', content: e.raw });
      continue;
    }
    if (isRecord(e.raw)) {
      items.push(e.raw);
      continue;
    }
    if (!e.message) continue;
    edited = true;
    if (e.message.role === 'system') {
      const text = e.message.parts
        .map((p) => (p.type === 'text' ? p.text : p.type === 'compaction' ? compactionText(p.marker) : ''))
        .join('\n\n');
      items.push({ type: 'message', role: 'system', content: text });
    } else for (const t of segmentMessage(e.message, (p) => p.type !== 'thinking')) items.push(...encodeTurn(t));
  }
  if (typeof session.extra?.messageCount === 'number' && items.length !== session.extra.messageCount) edited = true;
  const body: Record<string, unknown> = { ...request };
  if (instructions !== undefined) body.instructions = instructions;
  if (!edited && session.extra?.inputKind === 'string' && inputString !== undefined) body.input = inputString;
  else if (items.length || session.extra?.inputKind !== 'none') body.input = items;
  if (edited && openaiResponsesRequestProblems(body).length > 0) return undefined;
  return body;
}

function writeResponses(session: Session): string {
  return writeRequestBody(session, 'openai-responses', sameFormatBody, responsesBodyOfSession);
}

// ---------------------------------------------------------------------------------------------------------------------
// Validity

const USER_PARTS = ['input_text', 'input_image', 'input_file', 'input_audio'];
const ASSISTANT_PARTS = ['output_text', 'refusal'];

/**
 * What the Responses API would reject in a request body, as readable problems (empty when valid): required fields,
 * message content shapes by role, every function/custom tool call answered by an output item with its call_id (and
 * every output answering an earlier call), unique call ids, no empty content arrays, no reasoning item left last.
 */
export function openaiResponsesRequestProblems(body: unknown): string[] {
  const out: string[] = [];
  if (!isRecord(body)) return ['body: not an object'];
  if (typeof body.model !== 'string' || body.model === '') out.push('model: missing');
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string')
    out.push('instructions: not a string');
  if (typeof body.input === 'string') return out;
  if (!Array.isArray(body.input) || body.input.length === 0) return [...out, 'input: missing or empty'];
  const calls = new Map<string, { at: string; kind: string; answered: boolean }>();
  body.input.forEach((item, i) => {
    const at = `input[${i}]`;
    if (!isRecord(item)) return void out.push(`${at}: not an object`);
    const type: string | undefined =
      typeof item.type === 'string'
        ? item.type
        : typeof item.role === 'string' && item.type === undefined
          ? 'message'
          : undefined;
    switch (type) {
      case 'message': {
        const role = String(item.role);
        if (!['user', 'assistant', 'system', 'developer'].includes(role)) out.push(`${at}.role: ${role}`);
        if (typeof item.content === 'string') break;
        if (!Array.isArray(item.content)) return void out.push(`${at}.content: not a string or array`);
        if (item.content.length === 0) out.push(`${at}.content: empty array`);
        const allowed = role === 'assistant' ? ASSISTANT_PARTS : USER_PARTS;
        item.content.forEach((c: unknown, k: number) => {
          const ct = `${at}.content[${k}]`;
          if (!isRecord(c) || typeof c.type !== 'string') return void out.push(`${ct}: not a typed part`);
          if (!allowed.includes(c.type)) out.push(`${ct}: type ${c.type} is not allowed in a ${role} message`);
          if ((c.type === 'input_text' || c.type === 'output_text') && typeof c.text !== 'string')
            out.push(`${ct}.text: not a string`);
          if (c.type === 'input_image' && typeof c.image_url !== 'string' && typeof c.file_id !== 'string')
            out.push(`${ct}: input_image without image_url or file_id`);
          if (
            c.type === 'input_file' &&
            typeof c.file_data !== 'string' &&
            typeof c.file_id !== 'string' &&
            typeof c.file_url !== 'string'
          )
            out.push(`${ct}: input_file without data, id or url`);
        });
        break;
      }
      case 'function_call':
      case 'custom_tool_call': {
        const id = item.call_id;
        if (typeof id !== 'string' || id === '') return void out.push(`${at}.call_id: missing`);
        if (calls.has(id)) out.push(`${at}.call_id: ${id} is used twice`);
        calls.set(id, { at, kind: type, answered: false });
        if (typeof item.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(item.name))
          out.push(`${at}.name: ${String(item.name)} is not a valid name`);
        if (type === 'function_call' && typeof item.arguments !== 'string') out.push(`${at}.arguments: not a string`);
        if (type === 'custom_tool_call' && typeof item.input !== 'string') out.push(`${at}.input: not a string`);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        const id = item.call_id;
        const call = typeof id === 'string' ? calls.get(id) : undefined;
        if (!call || call.kind !== type.replace(/_output$/, ''))
          out.push(`${at}: output for ${String(id)}, which no earlier ${type.replace(/_output$/, '')} made`);
        else if (call.answered) out.push(`${at}: second output for ${String(id)}`);
        else call.answered = true;
        if (Array.isArray(item.output)) {
          if (item.output.length === 0) out.push(`${at}.output: empty array`);
        } else if (typeof item.output !== 'string') out.push(`${at}.output: not a string or array`);
        break;
      }
      case 'reasoning':
        if (i === (body.input as unknown[]).length - 1)
          out.push(`${at}: reasoning item without the item that followed it`);
        if (!Array.isArray(item.summary)) out.push(`${at}.summary: not an array`);
        break;
      case undefined:
        out.push(`${at}: no type or role`);
        break;
    }
  });
  for (const [id, c] of calls) if (!c.answered) out.push(`${c.at}: ${c.kind} ${id} has no output`);
  return out;
}

export const openaiResponsesFormat: TranscriptFormat = {
  id: 'openai-responses',
  label: 'OpenAI Responses API request',
  container: 'json',
  detect({ document }: DetectInput) {
    if (!isRecord(document) || 'messages' in document) return 0;
    if (!('input' in document) && typeof document.instructions !== 'string') return 0;
    return Math.max(
      requestConfidence('responses', document),
      Array.isArray(document.input) || typeof document.input === 'string' ? 0.85 : 0.5,
    );
  },
  readDocument: readResponses,
  write: writeResponses,
};
