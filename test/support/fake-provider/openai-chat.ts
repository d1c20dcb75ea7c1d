/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`): the real API's refusals (messages quoted from public error
 * reports), the bill (the cookbook's per-message framing over o200k), JSON or SSE chunks.
 */
import type { Segment } from './billing.js';
import { dimensionsOfDataUrl, openaiImageTokens } from './images.js';
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
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stream',
  'stream_options',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'seed',
  'service_tier',
  'store',
  'metadata',
  'reasoning_effort',
  'modalities',
  'audio',
  'prediction',
  'web_search_options',
  'functions',
  'function_call',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'verbosity',
]);

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

/** The cookbook's framing: 3 tokens per message, 3 to prime the reply; tool definitions and calls carry their own. */
const OVERHEAD = { message: 3, reply: 3, toolDefinition: 8, toolCall: 8 };

export function checkBearer(headers: Record<string, string>): void {
  if (!/^Bearer \S+/.test(headers['authorization'] ?? '')) {
    throw new RefusalError({
      status: 401,
      type: 'invalid_request_error',
      message:
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (i.e. sk-...). You can obtain an API key from https://platform.openai.com/account/api-keys.",
      param: null,
      code: null,
    });
  }
}

interface ChatParsed extends ParsedRequest {
  includeUsage: boolean;
  maxField: 'max_tokens' | 'max_completion_tokens';
}

function contentText(
  content: unknown,
  at: string,
  env: WireEnv,
): { text: string; tokens: number; parts: ConversationPart[] } {
  if (typeof content === 'string')
    return {
      text: content,
      tokens: env.counter.text(content),
      parts: content ? [{ kind: 'text', text: content }] : [],
    };
  if (!Array.isArray(content)) return { text: '', tokens: 0, parts: [] };
  let text = '';
  let tokens = 0;
  const parts: ConversationPart[] = [];
  content.forEach((p, k) => {
    if (!isRecord(p))
      throw invalid(`Invalid type for '${at}[${k}]': expected an object, but got ${typeof p} instead.`, {
        param: `${at}[${k}]`,
        code: 'invalid_type',
      });
    if (p.type === 'text' || p.type === 'refusal') {
      const t = typeof p.text === 'string' ? p.text : typeof p.refusal === 'string' ? p.refusal : '';
      text += t;
      tokens += env.counter.text(t);
      parts.push({ kind: 'text', text: t });
    } else if (p.type === 'image_url') {
      const img = isRecord(p.image_url) ? p.image_url : {};
      const url = typeof img.url === 'string' ? img.url : '';
      tokens += openaiImageTokens(dimensionsOfDataUrl(url), typeof img.detail === 'string' ? img.detail : undefined);
      parts.push({ kind: 'image' });
    } else {
      tokens += env.counter.json(p);
    }
  });
  return { text, tokens, parts };
}

export function parseChat(body: Record<string, unknown>, headers: Record<string, string>, env: WireEnv): ChatParsed {
  checkBearer(headers);
  for (const k of Object.keys(body)) {
    if (!PARAMS.has(k)) throw invalid(`Unrecognized request argument supplied: ${k}`, { param: null, code: null });
  }
  if (typeof body.model !== 'string') {
    throw invalid('you must provide a model parameter', { param: null, code: null });
  }
  if (body.messages === undefined) {
    throw invalid("Missing required parameter: 'messages'.", { param: 'messages', code: 'missing_required_parameter' });
  }
  if (!Array.isArray(body.messages)) {
    throw invalid("Invalid type for 'messages': expected an array, but got an object instead.", {
      param: 'messages',
      code: 'invalid_type',
    });
  }
  const messages = body.messages as unknown[];
  if (messages.length === 0) throw invalid("[] is too short - 'messages'", { param: null, code: null });

  const c = env.counter;
  const segments: Segment[] = [];
  const tools: { name: string; inputSchema: unknown }[] = [];
  const toolList = body.tools ?? [];
  if (!Array.isArray(toolList))
    throw invalid("Invalid type for 'tools': expected an array.", { param: 'tools', code: 'invalid_type' });
  toolList.forEach((t, i) => {
    const fn = isRecord(t) && isRecord(t.function) ? t.function : undefined;
    if (!fn || typeof fn.name !== 'string') {
      throw invalid(`Missing required parameter: 'tools[${i}].function.name'.`, {
        param: `tools[${i}].function.name`,
        code: 'missing_required_parameter',
      });
    }
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(fn.name)) {
      throw invalid(
        `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        {
          param: `tools[${i}].function.name`,
          code: 'invalid_value',
        },
      );
    }
    tools.push({ name: fn.name, inputSchema: fn.parameters });
    segments.push({ key: 'tool|' + JSON.stringify(fn), tokens: c.json(fn) + OVERHEAD.toolDefinition });
  });

  let system = '';
  const conversation: ConversationMessage[] = [];
  messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(m))
      throw invalid(`Invalid type for '${at}': expected an object, but got ${typeof m} instead.`, {
        param: at,
        code: 'invalid_type',
      });
    if (typeof m.role !== 'string' || !ROLES.includes(m.role)) {
      throw invalid(
        `Invalid value: '${String(m.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        {
          param: `${at}.role`,
          code: 'invalid_value',
        },
      );
    }
    if (Array.isArray(m.tool_calls) && m.tool_calls.length === 0) {
      throw invalid(
        `Invalid '${at}.tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
        {
          param: `${at}.tool_calls`,
          code: 'empty_array',
        },
      );
    }
    const hasCalls = Array.isArray(m.tool_calls) && m.tool_calls.length > 0;
    if ((m.content === null || m.content === undefined) && !(m.role === 'assistant' && hasCalls)) {
      throw invalid(`Invalid value for 'content': expected a string, got null.`, {
        param: `messages.[${i}].content`,
        code: null,
      });
    }
    const { text, tokens, parts } = contentText(m.content, `${at}.content`, env);
    let total = OVERHEAD.message + tokens + (typeof m.name === 'string' ? 1 + c.text(m.name) : 0);
    if (m.role === 'system' || m.role === 'developer') {
      system += (system ? '\n' : '') + text;
    } else if (m.role === 'user') {
      conversation.push({ role: 'user', parts });
    } else if (m.role === 'assistant') {
      const calls: ConversationPart[] = [];
      if (hasCalls) {
        (m.tool_calls as unknown[]).forEach((tc, k) => {
          const cat = `${at}.tool_calls[${k}]`;
          if (!isRecord(tc) || typeof tc.id !== 'string')
            throw invalid(`Missing required parameter: '${cat}.id'.`, {
              param: `${cat}.id`,
              code: 'missing_required_parameter',
            });
          const fn = isRecord(tc.function) ? tc.function : undefined;
          if (!fn || typeof fn.name !== 'string')
            throw invalid(`Missing required parameter: '${cat}.function'.`, {
              param: `${cat}.function`,
              code: 'missing_required_parameter',
            });
          if (typeof fn.arguments !== 'string') {
            throw invalid(
              `Invalid type for '${cat}.function.arguments': expected a string, but got ${fn.arguments === null ? 'null' : typeof fn.arguments} instead.`,
              {
                param: `${cat}.function.arguments`,
                code: 'invalid_type',
              },
            );
          }
          let input: unknown = {};
          try {
            input = JSON.parse(fn.arguments);
          } catch {
            input = fn.arguments;
          }
          total += c.text(fn.name) + c.text(fn.arguments) + OVERHEAD.toolCall;
          calls.push({ kind: 'tool_call', id: tc.id, name: fn.name, input });
        });
      }
      conversation.push({ role: 'assistant', parts: [...parts, ...calls] });
    } else if (m.role === 'tool') {
      if (typeof m.tool_call_id !== 'string') {
        throw invalid(`Missing required parameter: '${at}.tool_call_id'.`, {
          param: `${at}.tool_call_id`,
          code: 'missing_required_parameter',
        });
      }
      const part: ConversationPart = { kind: 'tool_result', id: m.tool_call_id, text, isError: false };
      const last = conversation.at(-1);
      // Consecutive tool messages answer one assistant turn: one user-side message for the script.
      if (last && last.role === 'user' && last.parts.every((p) => p.kind === 'tool_result')) last.parts.push(part);
      else conversation.push({ role: 'user', parts: [part] });
    }
    segments.push({ key: JSON.stringify(m), tokens: total });
  });
  segments.push({ key: 'reply-priming', tokens: OVERHEAD.reply });
  checkChatPairing(messages as Record<string, unknown>[]);

  const maxField = body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
  const max = body[maxField];
  if (max !== undefined && (!Number.isInteger(max) || (max as number) < 1)) {
    throw invalid(
      `Invalid '${maxField}': integer below minimum value. Expected a value >= 1, but got ${String(max)} instead.`,
      {
        param: maxField,
        code: 'integer_below_min_value',
      },
    );
  }
  const reasoning = typeof body.reasoning_effort === 'string' && body.reasoning_effort !== 'none';
  return {
    model: body.model,
    stream: body.stream === true,
    ...(typeof max === 'number' ? { maxOutputTokens: max } : {}),
    segments,
    system,
    tools,
    messages: conversation,
    thinkingEnabled: reasoning,
    includeUsage: isRecord(body.stream_options) && body.stream_options.include_usage === true,
    maxField,
  };
}

function checkChatPairing(messages: Record<string, unknown>[]): void {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      const ids = (m.tool_calls as Record<string, unknown>[]).map((tc) => tc.id as string);
      const answered = new Set<string>();
      let j = i + 1;
      for (; j < messages.length && messages[j]!.role === 'tool'; j++)
        answered.add(messages[j]!.tool_call_id as string);
      const missing = ids.filter((id) => !answered.has(id));
      if (missing.length > 0) {
        throw invalid(
          `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`,
          { param: `messages.[${Math.min(j, messages.length - 1)}].role`, code: null },
        );
      }
      for (let k = i + 1; k < j; k++) {
        const id = messages[k]!.tool_call_id as string;
        if (!ids.includes(id)) {
          throw invalid(`Invalid parameter: 'tool_call_id' of '${id}' not found in 'tool_calls' of previous message.`, {
            param: `messages.[${k}].tool_call_id`,
            code: null,
          });
        }
      }
      i = j - 1;
    } else if (m.role === 'tool') {
      throw invalid(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        {
          param: `messages.[${i}].role`,
          code: null,
        },
      );
    }
  }
}

export function limitChat(p: ParsedRequest, promptTokens: number, env: WireEnv): void {
  const { window, maxOutputTokens: cap } = env.options;
  const field = (p as ChatParsed).maxField;
  const max = p.maxOutputTokens;
  if (cap !== undefined && max !== undefined && max > cap) {
    throw invalid(
      `${field} is too large: ${max}. This model supports at most ${cap} completion tokens, whereas you provided ${max}.`,
      {
        param: field,
        code: null,
      },
    );
  }
  if (max === undefined) {
    if (promptTokens > window) {
      throw invalid(
        `This model's maximum context length is ${window} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
        { param: 'messages', code: 'context_length_exceeded' },
      );
    }
  } else if (promptTokens + max > window) {
    throw invalid(
      `This model's maximum context length is ${window} tokens. However, you requested ${promptTokens + max} tokens (${promptTokens} in the messages, ${max} in the completion). Please reduce the length of the messages or completion.`,
      { param: 'messages', code: 'context_length_exceeded' },
    );
  }
}

function usageOf(e: Emission): Record<string, unknown> {
  return {
    prompt_tokens: e.usage.promptTokens,
    completion_tokens: e.usage.outputTokens,
    total_tokens: e.usage.promptTokens + e.usage.outputTokens,
    prompt_tokens_details: { cached_tokens: e.usage.cacheReadTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: e.usage.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

export function respondChat(p: ParsedRequest, e: Emission): WireResponse {
  const finish = e.calls.length > 0 ? 'tool_calls' : e.answer.stopReason === 'max_tokens' ? 'length' : 'stop';
  const base = {
    id: e.messageId,
    created: e.created,
    model: p.model,
    service_tier: 'default',
    system_fingerprint: 'fp_fake0001',
  };
  if (!p.stream) {
    return {
      json: {
        ...base,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: e.answer.text ?? null,
              refusal: null,
              annotations: [],
              ...(e.calls.length > 0
                ? {
                    tool_calls: e.calls.map((c) => ({
                      id: c.id,
                      type: 'function',
                      function: { name: c.name, arguments: JSON.stringify(c.input) },
                    })),
                  }
                : {}),
            },
            logprobs: null,
            finish_reason: finish,
          },
        ],
        usage: usageOf(e),
      },
    };
  }
  const includeUsage = (p as ChatParsed).includeUsage;
  const events: SseEvent[] = [];
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    events.push({
      data: {
        ...base,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
        ...(includeUsage ? { usage: null } : {}),
      },
    });
  chunk({ role: 'assistant', content: '', refusal: null });
  for (const t of chunks(e.answer.text ?? '', 24)) chunk({ content: t });
  e.calls.forEach((call, index) => {
    chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
    for (const t of chunks(JSON.stringify(call.input), 16))
      chunk({ tool_calls: [{ index, function: { arguments: t } }] });
  });
  chunk({}, finish);
  if (includeUsage) events.push({ data: { ...base, object: 'chat.completion.chunk', choices: [], usage: usageOf(e) } });
  return { events, done: true };
}
