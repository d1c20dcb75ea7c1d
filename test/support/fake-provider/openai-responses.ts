/**
 * OpenAI Responses (`POST /v1/responses`): input items (with `item_reference` and `previous_response_id` resolved from
 * what this server stored, as the real API does when `store` is not false), the real refusals, JSON or SSE events.
 *
 * Compaction (https://developers.openai.com/api/docs/guides/compaction; the SDK's `ResponseCompactionItem`,
 * `CompactedResponse`, `ResponseCreateParams.ContextManagement`): with `context_management: [{type: 'compaction',
 * compact_threshold}]`, a rendered input at or over the threshold is compacted into an opaque `compaction` item that
 * opens the output, and inference is billed from instructions + tools + that item (the compaction pass itself is
 * recorded, not billed: OpenAI does not document how it is billed). The latest compaction item in an input carries
 * what precedes it, which is not billed. `POST /v1/responses/compact` returns every user message, then one compaction
 * item, with the pass's usage.
 */
import type { Segment } from './billing.js';
import { dimensionsOfDataUrl, openaiImageTokens } from './images.js';
import { checkBearer } from './openai-chat.js';
import type { ConversationMessage, ConversationPart } from './types.js';
import {
  chunks,
  idFrom,
  invalid,
  isRecord,
  RefusalError,
  type Emission,
  type ParsedRequest,
  type SseEvent,
  type WireEnv,
  type WireResponse,
} from './wire.js';

const PARAMS = new Set([
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'max_tool_calls',
  'metadata',
  'parallel_tool_calls',
  'previous_response_id',
  'reasoning',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'text',
  'tool_choice',
  'tools',
  'top_p',
  'truncation',
  'user',
  'include',
  'background',
  'prompt',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'service_tier',
  'top_logprobs',
  'conversation',
  'context_management',
]);

const OVERHEAD = { message: 3, reply: 3, toolDefinition: 8, functionCall: 8, functionOutput: 5 };

/** Items and responses this server produced, for `item_reference` and `previous_response_id`. */
export class ResponsesStore {
  readonly items = new Map<string, Record<string, unknown>>();
  readonly responses = new Map<string, Record<string, unknown>[]>();
  /** function_call item id → the reasoning item id emitted before it. */
  readonly reasoningOf = new Map<string, string>();
}

export interface ResponsesParsed extends ParsedRequest {
  body: Record<string, unknown>;
  /** The full input after resolving references and the previous response. */
  items: Record<string, unknown>[];
  store: boolean;
  /** `context_management: [{type: 'compaction', compact_threshold}]`. */
  compactThreshold?: number;
  /** Index of the first input-item segment (instructions and tools come before). */
  itemStart: number;
  /** Set when the server compacted this request: the item that opens the output, and the compaction pass's figures. */
  compaction?: { item: Record<string, unknown>; inputTokens: number; outputTokens: number };
}

/** Parameters of `POST /v1/responses/compact` (the SDK's `ResponseCompactParams`). */
/** `POST /v1/responses/input_tokens` (the SDK's `InputTokenCountParams`): what counts, without output settings. */
const COUNT_PARAMS = new Set([
  'conversation',
  'input',
  'instructions',
  'model',
  'parallel_tool_calls',
  'personality',
  'previous_response_id',
  'reasoning',
  'text',
  'tool_choice',
  'tools',
  'truncation',
]);

const COMPACT_PARAMS = new Set([
  'model',
  'input',
  'instructions',
  'previous_response_id',
  'prompt_cache_key',
  'prompt_cache_options',
  'prompt_cache_retention',
  'service_tier',
]);

/**
 * The compaction item's opaque `encrypted_content`: the fake's scripted summary, encoded so that the fake can bill it
 * when the item comes back (the real content is encrypted and not human-interpretable).
 */
const COMPACTION_PREFIX = 'gAAAAAB-fake-compaction:';
export function encryptSummary(summary: string): string {
  return COMPACTION_PREFIX + Buffer.from(summary, 'utf8').toString('base64');
}
function decryptSummary(content: string): string {
  return content.startsWith(COMPACTION_PREFIX)
    ? Buffer.from(content.slice(COMPACTION_PREFIX.length), 'base64').toString('utf8')
    : content;
}

/** `context_management` of a Responses create request: a list of `{type: 'compaction', compact_threshold}`. */
function compactThresholdOf(cm: unknown): number | undefined {
  if (cm === undefined || cm === null) return undefined;
  if (!Array.isArray(cm))
    throw invalid("Invalid type for 'context_management': expected an array of objects.", {
      param: 'context_management',
      code: 'invalid_type',
    });
  let threshold: number | undefined;
  cm.forEach((entry, i) => {
    const at = `context_management[${i}]`;
    if (!isRecord(entry))
      throw invalid(`Invalid type for '${at}': expected an object.`, { param: at, code: 'invalid_type' });
    for (const k of Object.keys(entry))
      if (k !== 'type' && k !== 'compact_threshold')
        throw invalid(`Unknown parameter: '${at}.${k}'.`, { param: `${at}.${k}`, code: 'unknown_parameter' });
    if (entry.type === undefined)
      throw invalid(`Missing required parameter: '${at}.type'.`, {
        param: `${at}.type`,
        code: 'missing_required_parameter',
      });
    if (entry.type !== 'compaction')
      throw invalid(`Invalid value: '${String(entry.type)}'. Supported values are: 'compaction'.`, {
        param: `${at}.type`,
        code: 'invalid_value',
      });
    const t = entry.compact_threshold;
    if (t === undefined || t === null) return;
    if (!Number.isInteger(t))
      throw invalid(`Invalid type for '${at}.compact_threshold': expected an integer.`, {
        param: `${at}.compact_threshold`,
        code: 'invalid_type',
      });
    if ((t as number) < 1)
      throw invalid(
        `Invalid '${at}.compact_threshold': integer below minimum value. Expected a value >= 1, but got ${String(t)} instead.`,
        { param: `${at}.compact_threshold`, code: 'integer_below_min_value' },
      );
    threshold = t as number;
  });
  return threshold;
}

function resolveInput(body: Record<string, unknown>, store: ResponsesStore): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    const prior = store.responses.get(String(body.previous_response_id));
    if (!prior) {
      throw invalid(`Previous response with id '${String(body.previous_response_id)}' not found.`, {
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      });
    }
    items.push(...prior);
  }
  if (typeof body.input === 'string') {
    items.push({ type: 'message', role: 'user', content: body.input });
  } else if (Array.isArray(body.input)) {
    body.input.forEach((item, i) => {
      if (!isRecord(item))
        throw invalid(`Invalid type for 'input[${i}]': expected an object.`, {
          param: `input[${i}]`,
          code: 'invalid_type',
        });
      if (item.type === 'item_reference') {
        const found = store.items.get(String(item.id));
        if (!found)
          throw new RefusalError({
            status: 404,
            type: 'invalid_request_error',
            message: `Item with id '${String(item.id)}' not found.`,
            param: 'input',
            code: null,
          });
        items.push(found);
      } else items.push(item);
    });
  } else if (body.input !== undefined) {
    throw invalid("Invalid type for 'input': expected one of a string or array of input items.", {
      param: 'input',
      code: 'invalid_type',
    });
  }
  return items;
}

function partsOf(content: unknown, env: WireEnv): { text: string; tokens: number; parts: ConversationPart[] } {
  if (typeof content === 'string')
    return {
      text: content,
      tokens: env.counter.text(content),
      parts: content ? [{ kind: 'text', text: content }] : [],
    };
  let text = '';
  let tokens = 0;
  const parts: ConversationPart[] = [];
  for (const p of Array.isArray(content) ? content : []) {
    if (!isRecord(p)) continue;
    if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'refusal') {
      const t = typeof p.text === 'string' ? p.text : typeof p.refusal === 'string' ? p.refusal : '';
      text += t;
      tokens += env.counter.text(t);
      parts.push({ kind: 'text', text: t });
    } else if (p.type === 'input_image') {
      const url = typeof p.image_url === 'string' ? p.image_url : '';
      tokens += openaiImageTokens(dimensionsOfDataUrl(url), typeof p.detail === 'string' ? p.detail : undefined);
      parts.push({ kind: 'image' });
    } else tokens += env.counter.json(p);
  }
  return { text, tokens, parts };
}

export function parseResponses(
  body: Record<string, unknown>,
  headers: Record<string, string>,
  env: WireEnv,
  store: ResponsesStore,
  endpoint: boolean | 'count' = false,
): ResponsesParsed {
  checkBearer(headers);
  const compactEndpoint = endpoint === true;
  const params = endpoint === 'count' ? COUNT_PARAMS : compactEndpoint ? COMPACT_PARAMS : PARAMS;
  for (const k of Object.keys(body)) {
    if (!params.has(k)) throw invalid(`Unknown parameter: '${k}'.`, { param: k, code: 'unknown_parameter' });
  }
  const compactThreshold = endpoint ? undefined : compactThresholdOf(body.context_management);
  if (typeof body.model !== 'string')
    throw invalid("Missing required parameter: 'model'.", { param: 'model', code: 'missing_required_parameter' });
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null) {
    if (!Number.isInteger(max))
      throw invalid("Invalid type for 'max_output_tokens': expected an integer.", {
        param: 'max_output_tokens',
        code: 'invalid_type',
      });
    if ((max as number) < 16) {
      throw invalid(
        `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${String(max)} instead.`,
        {
          param: 'max_output_tokens',
          code: 'integer_below_min_value',
        },
      );
    }
  }
  if (Array.isArray(body.input) && body.input.length === 0 && !body.previous_response_id) {
    throw invalid(
      "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      { param: 'input', code: 'empty_array' },
    );
  }
  const items = resolveInput(body, store);
  const c = env.counter;
  const segments: Segment[] = [];
  let system = typeof body.instructions === 'string' ? body.instructions : '';
  if (system) segments.push({ key: 'instructions|' + system, tokens: c.text(system) + OVERHEAD.message });

  const tools: { name: string; inputSchema: unknown }[] = [];
  const toolList = body.tools ?? [];
  if (!Array.isArray(toolList))
    throw invalid("Invalid type for 'tools': expected an array.", { param: 'tools', code: 'invalid_type' });
  toolList.forEach((t, i) => {
    if (!isRecord(t))
      throw invalid(`Invalid type for 'tools[${i}]': expected an object.`, {
        param: `tools[${i}]`,
        code: 'invalid_type',
      });
    if (t.type === 'function') {
      if (typeof t.name !== 'string')
        throw invalid(`Missing required parameter: 'tools[${i}].name'.`, {
          param: `tools[${i}].name`,
          code: 'missing_required_parameter',
        });
      tools.push({ name: t.name, inputSchema: t.parameters });
    }
    segments.push({ key: 'tool|' + JSON.stringify(t), tokens: c.json(t) + OVERHEAD.toolDefinition });
  });

  const conversation: ConversationMessage[] = [];
  const push = (role: 'user' | 'assistant', part: ConversationPart) => {
    const last = conversation.at(-1);
    const toolSide = part.kind === 'tool_result';
    if (
      last &&
      last.role === role &&
      (role === 'assistant' || (toolSide && last.parts.every((p) => p.kind === 'tool_result')))
    )
      last.parts.push(part);
    else conversation.push({ role, parts: [part] });
  };
  const itemStart = segments.length;
  let lastCompaction: { segment: number; message: number } | undefined;
  const calls = new Set<string>();
  const outputs = new Set<string>();
  const seenReasoning = new Set<string>();
  items.forEach((item, i) => {
    const type = item.type ?? 'message';
    let tokens = 0;
    if (type === 'message') {
      const role = item.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
        throw invalid(
          `Invalid value: '${String(role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`,
          {
            param: `input[${i}].role`,
            code: 'invalid_value',
          },
        );
      }
      const { text, tokens: t, parts } = partsOf(item.content, env);
      tokens = t + OVERHEAD.message;
      if (role === 'system' || role === 'developer') system += (system ? '\n' : '') + text;
      else if (parts.length === 0) conversation.push({ role, parts: [] });
      else for (const p of parts) push(role, p);
    } else if (type === 'function_call') {
      if (typeof item.call_id !== 'string')
        throw invalid(`Missing required parameter: 'input[${i}].call_id'.`, {
          param: `input[${i}].call_id`,
          code: 'missing_required_parameter',
        });
      if (typeof item.arguments !== 'string')
        throw invalid(`Invalid type for 'input[${i}].arguments': expected a string.`, {
          param: `input[${i}].arguments`,
          code: 'invalid_type',
        });
      const reasoningId = typeof item.id === 'string' ? store.reasoningOf.get(item.id) : undefined;
      if (reasoningId && !seenReasoning.has(reasoningId)) {
        throw invalid(
          `Item '${String(item.id)}' of type 'function_call' was provided without its required 'reasoning' item: '${reasoningId}'.`,
          { param: 'input', code: null },
        );
      }
      calls.add(item.call_id);
      let input: unknown = item.arguments;
      try {
        input = JSON.parse(item.arguments);
      } catch {
        // kept as text
      }
      tokens = c.text(String(item.name)) + c.text(item.arguments) + OVERHEAD.functionCall;
      push('assistant', { kind: 'tool_call', id: item.call_id, name: String(item.name), input });
    } else if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string')
        throw invalid(`Missing required parameter: 'input[${i}].call_id'.`, {
          param: `input[${i}].call_id`,
          code: 'missing_required_parameter',
        });
      if (!calls.has(item.call_id)) {
        throw invalid(`No tool call found for function call output with call_id ${item.call_id}.`, {
          param: 'input',
          code: null,
        });
      }
      outputs.add(item.call_id);
      const { text, tokens: t } = partsOf(item.output, env);
      tokens = t + OVERHEAD.functionOutput;
      push('user', { kind: 'tool_result', id: item.call_id, text, isError: false });
    } else if (type === 'reasoning') {
      if (typeof item.id === 'string') seenReasoning.add(item.id);
      const summary = Array.isArray(item.summary)
        ? item.summary.map((s) => (isRecord(s) ? String(s.text ?? '') : '')).join('\n')
        : '';
      tokens = c.text(summary);
      push('assistant', { kind: 'thinking', text: summary });
    } else if (type === 'compaction') {
      if (typeof item.encrypted_content !== 'string')
        throw invalid(`Missing required parameter: 'input[${i}].encrypted_content'.`, {
          param: `input[${i}].encrypted_content`,
          code: 'missing_required_parameter',
        });
      // The latest compaction item carries the context before it: what precedes it is not billed (see below).
      tokens = c.text(decryptSummary(item.encrypted_content)) + OVERHEAD.message;
      lastCompaction = { segment: segments.length, message: conversation.length };
    } else {
      tokens = c.json(item);
    }
    segments.push({ key: JSON.stringify(item), tokens });
  });
  for (const id of calls) {
    if (!outputs.has(id))
      throw invalid(`No tool output found for function call ${id}.`, { param: 'input', code: null });
  }
  if (lastCompaction) {
    segments.splice(itemStart, lastCompaction.segment - itemStart);
    conversation.splice(0, lastCompaction.message);
  }
  segments.push({ key: 'reply-priming', tokens: OVERHEAD.reply });
  const reasoning = isRecord(body.reasoning) && body.reasoning.effort !== 'none';
  return {
    body,
    model: body.model,
    stream: body.stream === true,
    ...(typeof max === 'number' ? { maxOutputTokens: max } : {}),
    segments,
    system,
    tools,
    messages: conversation,
    thinkingEnabled: reasoning,
    items,
    store: body.store !== false,
    ...(compactThreshold !== undefined ? { compactThreshold } : {}),
    itemStart,
  };
}

function summarize(p: ResponsesParsed): string {
  const users = p.messages.filter((m) => m.role === 'user');
  const texts = users.flatMap((m) => m.parts.flatMap((x) => (x.kind === 'text' ? [x.text] : [])));
  const calls = p.messages.flatMap((m) => m.parts.filter((x) => x.kind === 'tool_call')).length;
  const clip = (t: string | undefined) => (t ?? '').replace(/\s+/g, ' ').slice(0, 200);
  return `Compacted state: ${p.items.length} items, ${calls} tool calls. Task: ${clip(texts[0])}. Latest request: ${clip(texts.at(-1))}.`;
}

/**
 * Server-side compaction (`context_management` with `compact_threshold`): when the rendered input reaches the
 * threshold, the server compacts it into an opaque compaction item that opens the output, and inference continues from
 * instructions + tools + that item. Returns the prompt tokens to bill for inference.
 */
export function compactResponses(p: ResponsesParsed, promptTokens: number, env: WireEnv, seed: string): number {
  if (p.compactThreshold === undefined || promptTokens < p.compactThreshold) return promptTokens;
  const summary = summarize(p);
  const item = { id: idFrom(seed, 'cmp_', 0, 48), type: 'compaction', encrypted_content: encryptSummary(summary) };
  const tokens = env.counter.text(summary) + OVERHEAD.message;
  p.compaction = { item, inputTokens: promptTokens, outputTokens: env.counter.text(summary) };
  p.segments = [
    ...p.segments.slice(0, p.itemStart),
    { key: JSON.stringify(item), tokens },
    { key: 'reply-priming', tokens: OVERHEAD.reply },
  ];
  return p.segments.reduce((s, x) => s + x.tokens, 0);
}

/**
 * `POST /v1/responses/compact`: the compacted window — every user message of the input, then one compaction item —
 * and the compaction pass's usage (the whole input read, the compaction item written).
 */
export function respondCompact(
  p: ResponsesParsed,
  promptTokens: number,
  env: WireEnv,
  seed: string,
  created: number,
): unknown {
  const summary = summarize(p);
  const output: Record<string, unknown>[] = [];
  let k = 0;
  for (const item of p.items) {
    if ((item.type ?? 'message') !== 'message' || item.role !== 'user') continue;
    const content =
      typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : (item.content as unknown[]);
    output.push({ id: idFrom(seed, 'msg_', k++, 48), type: 'message', status: 'completed', role: 'user', content });
  }
  output.push({ id: idFrom(seed, 'cmp_', 0, 48), type: 'compaction', encrypted_content: encryptSummary(summary) });
  const outputTokens = env.counter.text(summary);
  return {
    id: idFrom(seed, 'resp_', 0, 48),
    object: 'response.compaction',
    created_at: created,
    output,
    usage: {
      input_tokens: promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: promptTokens + outputTokens,
    },
  };
}

/** Output cap, then the window: input + requested output (the model's cap when the request does not say). */
export function limitResponses(p: ParsedRequest, promptTokens: number, env: WireEnv): void {
  const { window, maxOutputTokens: cap } = env.options;
  const max = p.maxOutputTokens;
  if (cap !== undefined && max !== undefined && max > cap) {
    throw invalid(
      `max_output_tokens is too large: ${max}. This model supports at most ${cap} output tokens, whereas you provided ${max}.`,
      {
        param: 'max_output_tokens',
        code: 'invalid_value',
      },
    );
  }
  if (promptTokens + (max ?? cap ?? 0) > window) {
    throw invalid('Your input exceeds the context window of this model. Please adjust your input and try again.', {
      param: 'input',
      code: 'context_length_exceeded',
    });
  }
}

function usageOf(e: Emission): Record<string, unknown> {
  return {
    input_tokens: e.usage.promptTokens,
    input_tokens_details: { cached_tokens: e.usage.cacheReadTokens },
    output_tokens: e.usage.outputTokens,
    output_tokens_details: { reasoning_tokens: e.usage.reasoningTokens },
    total_tokens: e.usage.promptTokens + e.usage.outputTokens,
  };
}

export function respondResponses(p: ParsedRequest, e: Emission, store: ResponsesStore): WireResponse {
  const parsed = p as ResponsesParsed;
  const body = parsed.body;
  const output: Record<string, unknown>[] = [];
  if (parsed.compaction) output.push(parsed.compaction.item);
  let reasoningId: string | undefined;
  if (p.thinkingEnabled) {
    reasoningId = e.id('rs_', 0, 48);
    const include = Array.isArray(body.include) ? body.include : [];
    output.push({
      type: 'reasoning',
      id: reasoningId,
      summary: [],
      ...(include.includes('reasoning.encrypted_content') ? { encrypted_content: 'gAAAAAB' + e.id('', 1, 120) } : {}),
    });
  }
  if (e.answer.text) {
    output.push({
      type: 'message',
      id: e.id('msg_', 0, 48),
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: e.answer.text, annotations: [], logprobs: [] }],
    });
  }
  for (const call of e.calls) {
    output.push({
      type: 'function_call',
      id: call.itemId,
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.input),
      status: 'completed',
    });
  }
  const truncated = e.answer.stopReason === 'max_tokens';
  const response = (status: string, out: Record<string, unknown>[], usage: unknown) => ({
    id: e.messageId,
    object: 'response',
    created_at: e.created,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model: p.model,
    output: out,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: isRecord(body.reasoning) ? (body.reasoning.effort ?? null) : null, summary: null },
    service_tier: 'default',
    store: parsed.store,
    temperature: body.temperature ?? 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: body.metadata ?? {},
  });

  if (parsed.store) {
    for (const item of output) store.items.set(item.id as string, item);
    store.responses.set(e.messageId, [...parsed.items, ...output]);
    if (reasoningId) for (const call of e.calls) store.reasoningOf.set(call.itemId, reasoningId);
  }

  const finalStatus = truncated ? 'incomplete' : 'completed';
  if (!p.stream) return { json: response(finalStatus, output, usageOf(e)) };
  const events: SseEvent[] = [];
  let seq = 0;
  const send = (data: Record<string, unknown>) =>
    events.push({ event: data.type as string, data: { ...data, sequence_number: seq++ } });
  send({ type: 'response.created', response: response('in_progress', [], null) });
  send({ type: 'response.in_progress', response: response('in_progress', [], null) });
  output.forEach((item, output_index) => {
    const id = item.id as string;
    if (item.type === 'message') {
      const text = e.answer.text ?? '';
      send({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } });
      send({
        type: 'response.content_part.added',
        item_id: id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
      for (const t of chunks(text, 24))
        send({
          type: 'response.output_text.delta',
          item_id: id,
          output_index,
          content_index: 0,
          delta: t,
          logprobs: [],
        });
      send({ type: 'response.output_text.done', item_id: id, output_index, content_index: 0, text, logprobs: [] });
      send({
        type: 'response.content_part.done',
        item_id: id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text, annotations: [], logprobs: [] },
      });
    } else if (item.type === 'function_call') {
      const args = item.arguments as string;
      send({
        type: 'response.output_item.added',
        output_index,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      for (const t of chunks(args, 16))
        send({ type: 'response.function_call_arguments.delta', item_id: id, output_index, delta: t });
      send({ type: 'response.function_call_arguments.done', item_id: id, output_index, arguments: args });
    } else {
      send({ type: 'response.output_item.added', output_index, item });
    }
    send({ type: 'response.output_item.done', output_index, item });
  });
  send({ type: `response.${finalStatus}`, response: response(finalStatus, output, usageOf(e)) });
  return { events };
}
