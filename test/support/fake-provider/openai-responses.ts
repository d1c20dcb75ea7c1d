/**
 * OpenAI Responses (`POST /v1/responses`): input items (with `item_reference` and `previous_response_id` resolved from
 * what this server stored, as the real API does when `store` is not false), the real refusals, JSON or SSE events.
 */
import type { Segment } from './billing.js';
import { dimensionsOfDataUrl, openaiImageTokens } from './images.js';
import { checkBearer } from './openai-chat.js';
import type { ConversationMessage, ConversationPart } from './types.js';
import {
  chunks,
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

interface ResponsesParsed extends ParsedRequest {
  body: Record<string, unknown>;
  /** The full input after resolving references and the previous response. */
  items: Record<string, unknown>[];
  store: boolean;
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
): ResponsesParsed {
  checkBearer(headers);
  for (const k of Object.keys(body)) {
    if (!PARAMS.has(k)) throw invalid(`Unknown parameter: '${k}'.`, { param: k, code: 'unknown_parameter' });
  }
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
    } else {
      tokens = c.json(item);
    }
    segments.push({ key: JSON.stringify(item), tokens });
  });
  for (const id of calls) {
    if (!outputs.has(id))
      throw invalid(`No tool output found for function call ${id}.`, { param: 'input', code: null });
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
