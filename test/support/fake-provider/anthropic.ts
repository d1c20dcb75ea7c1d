/**
 * Anthropic Messages (`POST /v1/messages`): what the real API refuses, with its status and messages (quoted from
 * public error reports and Anthropic's documentation), the canonical rendering billed, and the response in JSON or SSE.
 */
import { createHmac } from 'node:crypto';
import type { Segment } from './billing.js';
import { anthropicImageTokens, dimensionsOf } from './images.js';
import type { ConversationMessage, ConversationPart, Refusal } from './types.js';
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

const TOP_LEVEL = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'tools',
  'tool_choice',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'stream',
  'metadata',
  'thinking',
  'service_tier',
  'container',
  'mcp_servers',
  'context_management',
  'output_format',
  'output_config',
  'cache_control',
  'inference_geo',
]);

const BLOCK_KEYS: Record<string, string[]> = {
  text: ['type', 'text', 'cache_control', 'citations'],
  image: ['type', 'source', 'cache_control'],
  document: ['type', 'source', 'cache_control', 'title', 'context', 'citations'],
  search_result: ['type', 'source', 'title', 'content', 'cache_control', 'citations'],
  tool_use: ['type', 'id', 'name', 'input', 'cache_control', 'caller'],
  tool_result: ['type', 'tool_use_id', 'content', 'is_error', 'cache_control'],
  thinking: ['type', 'thinking', 'signature'],
  redacted_thinking: ['type', 'data'],
  server_tool_use: ['type', 'id', 'name', 'input', 'cache_control'],
  web_search_tool_result: ['type', 'tool_use_id', 'content', 'cache_control'],
};

/** Fixed overheads (provider tokens, not scaled): the role markers and framing the model actually reads. */
const OVERHEAD = {
  request: 4,
  message: 4,
  block: 2,
  toolDefinition: 8,
  /** Together ~100 per tool call/result pair, as measured on real Claude bills (NOTES.md). */
  toolUse: 60,
  toolResult: 40,
  /** Anthropic's documented tool-use system prompt for Claude 4 models: 346 (auto/none), 313 (any/tool). */
  toolSystemPromptAuto: 346,
  toolSystemPromptAny: 313,
};

const SIGNING_KEY = 'abridge-fake-provider-thinking';

/** A signature the fake can verify: the real API refuses a thinking block whose text was altered. */
export function signThinking(text: string): string {
  const mac = createHmac('sha256', SIGNING_KEY).update(text).digest('base64');
  return 'Eq' + (mac + mac + mac + mac).replace(/=/g, '');
}

function refuseAuth(headers: Record<string, string>): void {
  if (!headers['x-api-key'] && !headers['authorization']) {
    throw new RefusalError({ status: 401, type: 'authentication_error', message: 'x-api-key header is required' });
  }
  if (!headers['anthropic-version']) throw invalid('anthropic-version: header is required');
}

function checkText(text: unknown, at: string): string {
  if (typeof text !== 'string') throw invalid(`${at}.text: Field required`);
  if (text.length === 0) throw invalid('messages: text content blocks must be non-empty');
  if (text.trim().length === 0) throw invalid('messages: text content blocks must contain non-whitespace text');
  return text;
}

function checkKeys(block: Record<string, unknown>, type: string, at: string): void {
  const allowed = BLOCK_KEYS[type];
  if (!allowed) return;
  for (const k of Object.keys(block)) {
    if (!allowed.includes(k)) throw invalid(`${at}.${type}.${k}: Extra inputs are not permitted`);
  }
}

function imageTokens(source: unknown, at: string): number {
  if (!isRecord(source)) throw invalid(`${at}.image.source: Field required`);
  if (source.type === 'base64') {
    if (typeof source.data !== 'string' || typeof source.media_type !== 'string') {
      throw invalid(`${at}.image.source.base64.data: Field required`);
    }
    const d = dimensionsOf(Buffer.from(source.data, 'base64'));
    if (!d) throw invalid(`${at}.image.source.base64.data: Could not process image`);
    return anthropicImageTokens(d);
  }
  return anthropicImageTokens(undefined);
}

export interface Parsed extends ParsedRequest {
  body: Record<string, unknown>;
  /** `context_management.applied_edits` of the response (set by context-management.ts when the request has edits). */
  appliedEdits?: Record<string, unknown>[];
  /** Index of the first message segment (segments before it are tools and system). */
  messageStart: number;
  /** Set when `compact_20260112` compacted this request (the response opens with the block). */
  compaction?: { summary: string; pause: boolean; inputTokens: number; outputTokens: number };
}

/** How the parser bills thinking blocks: by default those after the last human message (the current tool-use loop). */
export interface ParseOptions {
  /** Indices of the messages whose thinking blocks are billed (clear_thinking_20251015); the others are dropped. */
  keepThinkingIn?: ReadonlySet<number>;
  /** `compaction` blocks are accepted (beta `compact-2026-01-12`); the last one replaces everything before it. */
  compaction?: boolean;
}

const COMPACTION_KEYS = ['type', 'content', 'encrypted_content', 'signature', 'cache_control', 'tool_changes'];

/** Validate and render an Anthropic Messages request. `countOnly` is `/v1/messages/count_tokens` (no max_tokens). */
export function parseAnthropic(
  body: Record<string, unknown>,
  headers: Record<string, string>,
  env: WireEnv,
  countOnly = false,
  parseOptions: ParseOptions = {},
): Parsed {
  refuseAuth(headers);
  const allowed = countOnly ? new Set([...TOP_LEVEL, 'max_tokens']) : TOP_LEVEL;
  for (const k of Object.keys(body)) if (!allowed.has(k)) throw invalid(`${k}: Extra inputs are not permitted`);
  if (typeof body.model !== 'string') throw invalid('model: Field required');
  if (!countOnly) {
    if (body.max_tokens === undefined) throw invalid('max_tokens: Field required');
    if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) {
      throw invalid('max_tokens: Input should be greater than or equal to 1');
    }
  }
  if (body.messages === undefined) throw invalid('messages: Field required');
  if (!Array.isArray(body.messages)) throw invalid('messages: Input should be a valid list');
  const messages = body.messages as unknown[];
  if (messages.length === 0) throw invalid('messages: at least one message is required');

  const c = env.counter;
  const segments: Segment[] = [{ key: 'anthropic-request', tokens: OVERHEAD.request }];
  let breakpoints = 0;
  const mark = (block: Record<string, unknown>): boolean => {
    if (block.cache_control === undefined || block.cache_control === null) return false;
    breakpoints++;
    return true;
  };

  // Tools first: the provider caches tools → system → messages.
  const toolList = body.tools === undefined ? [] : body.tools;
  if (!Array.isArray(toolList)) throw invalid('tools: Input should be a valid list');
  const tools: { name: string; inputSchema: unknown }[] = [];
  const toolChoice = isRecord(body.tool_choice) ? body.tool_choice.type : undefined;
  toolList.forEach((t, i) => {
    if (!isRecord(t)) throw invalid(`tools.${i}: Input should be a valid dictionary`);
    const custom = t.type === undefined || t.type === 'custom';
    if (typeof t.name !== 'string') throw invalid(`tools.${i}.custom.name: Field required`);
    if (custom) {
      if (!/^[a-zA-Z0-9_-]{1,128}$/.test(t.name)) {
        throw invalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      }
      if (!isRecord(t.input_schema)) throw invalid(`tools.${i}.custom.input_schema: Field required`);
      if (t.input_schema.type !== 'object')
        throw invalid(`tools.${i}.custom.input_schema.type: Input should be 'object'`);
    }
    if (tools.some((x) => x.name === t.name)) throw invalid('tools: Tool names must be unique.');
    tools.push({ name: t.name, inputSchema: t.input_schema });
    const { cache_control: _cc, ...definition } = t;
    let tokens = c.json(definition) + OVERHEAD.toolDefinition;
    if (i === 0)
      tokens +=
        toolChoice === 'any' || toolChoice === 'tool' ? OVERHEAD.toolSystemPromptAny : OVERHEAD.toolSystemPromptAuto;
    segments.push({ key: 'tool|' + JSON.stringify(definition), tokens, breakpoint: mark(t) });
  });

  let system = '';
  if (typeof body.system === 'string') {
    system = body.system;
    if (system.length > 0) segments.push({ key: 'system|' + system, tokens: c.text(system) + OVERHEAD.block });
  } else if (Array.isArray(body.system)) {
    body.system.forEach((b, j) => {
      if (!isRecord(b) || b.type !== 'text') throw invalid(`system.${j}.type: Input should be 'text'`);
      checkKeys(b, 'text', `system.${j}`);
      if (typeof b.text !== 'string') throw invalid(`system.${j}.text: Field required`);
      if (b.text.length === 0) throw invalid('system: text content blocks must be non-empty');
      if (b.text.trim().length === 0) throw invalid('system: text content blocks must contain non-whitespace text');
      system += (system ? '\n' : '') + b.text;
      segments.push({ key: 'system|' + b.text, tokens: c.text(b.text) + OVERHEAD.block, breakpoint: mark(b) });
    });
  } else if (body.system !== undefined) {
    throw invalid('system: Input should be a valid string');
  }

  const thinking = isRecord(body.thinking) ? body.thinking : undefined;
  const thinkingEnabled = thinking?.type === 'enabled' || thinking?.type === 'adaptive';
  if (thinking?.type === 'enabled' && !countOnly) {
    const budget = thinking.budget_tokens;
    if (typeof budget !== 'number') throw invalid('thinking.enabled.budget_tokens: Field required');
    if (budget < 1024) throw invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if ((body.max_tokens as number) <= budget) {
      throw invalid(
        '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size',
      );
    }
  }

  // Normalise messages to block lists and check their structure.
  const blocksOf: Record<string, unknown>[][] = [];
  messages.forEach((m, i) => {
    if (!isRecord(m)) throw invalid(`messages.${i}: Input should be a valid dictionary`);
    if (m.role !== 'user' && m.role !== 'assistant')
      throw invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    for (const k of Object.keys(m))
      if (k !== 'role' && k !== 'content') throw invalid(`messages.${i}.${k}: Extra inputs are not permitted`);
    const last = i === messages.length - 1;
    const emptyContent = `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    let blocks: Record<string, unknown>[];
    if (typeof m.content === 'string') {
      if (m.content.length === 0) {
        if (!(last && m.role === 'assistant')) throw invalid(emptyContent);
        blocks = [];
      } else {
        if (m.content.trim().length === 0)
          throw invalid('messages: text content blocks must contain non-whitespace text');
        blocks = [{ type: 'text', text: m.content }];
      }
    } else if (Array.isArray(m.content)) {
      if (m.content.length === 0 && !(last && m.role === 'assistant')) throw invalid(emptyContent);
      blocks = m.content.map((b, j) => {
        if (!isRecord(b)) throw invalid(`messages.${i}.content.${j}: Input should be a valid dictionary`);
        return b;
      });
    } else {
      throw invalid(`messages.${i}.content: Field required`);
    }
    blocksOf.push(blocks);
  });
  if ((messages[0] as Record<string, unknown>).role !== 'user')
    throw invalid('messages: first message must use the "user" role');
  const lastMessage = messages.at(-1) as Record<string, unknown>;
  if (lastMessage.role === 'assistant') {
    const tail = blocksOf.at(-1)!.at(-1);
    if (tail && tail.type === 'text' && typeof tail.text === 'string' && /\s$/.test(tail.text)) {
      throw invalid('final assistant content cannot end with trailing whitespace');
    }
  }

  // Thinking blocks of earlier turns are stripped by the API (not billed); those of the current tool-use loop count.
  let lastHuman = -1;
  blocksOf.forEach((blocks, i) => {
    const role = (messages[i] as Record<string, unknown>).role;
    if (role === 'user' && blocks.some((b) => b.type !== 'tool_result')) lastHuman = i;
  });

  const keepsThinking = (i: number) => parseOptions.keepThinkingIn?.has(i) ?? i > lastHuman;

  let lastCompaction: { segment: number; message: number } | undefined;
  const messageStart = segments.length;
  const conversation: ConversationMessage[] = [];
  const toolUseIds = new Set<string>();
  let hasToolBlocks = false;
  blocksOf.forEach((blocks, i) => {
    const role = (messages[i] as Record<string, unknown>).role as 'user' | 'assistant';
    const parts: ConversationPart[] = [];
    blocks.forEach((b, j) => {
      const at = `messages.${i}.content.${j}`;
      const type = typeof b.type === 'string' ? b.type : '';
      if (type === 'compaction' && parseOptions.compaction) {
        for (const k of Object.keys(b))
          if (!COMPACTION_KEYS.includes(k)) throw invalid(`${at}.compaction.${k}: Extra inputs are not permitted`);
      } else if (!(type in BLOCK_KEYS)) {
        throw invalid(
          `${at}: Input tag '${type}' found using 'type' does not match any of the expected tags: ${Object.keys(
            BLOCK_KEYS,
          )
            .map((t) => `'${t}'`)
            .join(', ')}`,
        );
      }
      checkKeys(b, type, at);
      const first = j === 0 ? OVERHEAD.message : 0;
      const { cache_control: _cc, ...content } = b;
      const key = `${role}|${JSON.stringify(content)}`;
      let tokens = 0;
      switch (type) {
        case 'text': {
          const text = checkText(b.text, at);
          tokens = c.text(text) + OVERHEAD.block;
          parts.push({ kind: 'text', text });
          break;
        }
        case 'image':
          tokens = imageTokens(b.source, at) + OVERHEAD.block;
          parts.push({ kind: 'image' });
          break;
        case 'document': {
          const src = isRecord(b.source) ? b.source : {};
          tokens = (src.type === 'text' && typeof src.data === 'string' ? c.text(src.data) : 1500) + OVERHEAD.block;
          break;
        }
        case 'search_result':
          tokens = c.json(b.content) + OVERHEAD.block;
          break;
        case 'tool_use':
        case 'server_tool_use': {
          hasToolBlocks = true;
          if (typeof b.id !== 'string') throw invalid(`${at}.${type}.id: Field required`);
          if (typeof b.name !== 'string') throw invalid(`${at}.${type}.name: Field required`);
          if (!isRecord(b.input)) throw invalid(`${at}.${type}.input: Input should be a valid dictionary`);
          if (role !== 'assistant') throw invalid(`${at}: \`${type}\` blocks can only be in \`assistant\` messages`);
          if (toolUseIds.has(b.id)) throw invalid(`${at}: \`tool_use\` ids must be unique`);
          toolUseIds.add(b.id);
          tokens = c.text(b.name) + c.json(b.input) + OVERHEAD.toolUse;
          parts.push({ kind: 'tool_call', id: b.id, name: b.name, input: b.input });
          break;
        }
        case 'tool_result':
        case 'web_search_tool_result': {
          hasToolBlocks = true;
          if (typeof b.tool_use_id !== 'string') throw invalid(`${at}.${type}.tool_use_id: Field required`);
          if (role !== 'user') throw invalid(`${at}: \`${type}\` blocks can only be in \`user\` messages`);
          let text = '';
          let images = 0;
          if (typeof b.content === 'string') text = b.content;
          else if (Array.isArray(b.content)) {
            b.content.forEach((inner, k) => {
              if (!isRecord(inner)) throw invalid(`${at}.${type}.content.${k}: Input should be a valid dictionary`);
              if (inner.type === 'text') {
                checkKeys(inner, 'text', `${at}.${type}.content.${k}`);
                text += (text ? '\n' : '') + checkText(inner.text, `${at}.${type}.content.${k}`);
              } else if (inner.type === 'image') images += imageTokens(inner.source, `${at}.${type}.content.${k}`);
              else text += JSON.stringify(inner);
            });
          } else if (b.content !== undefined && type === 'tool_result') {
            throw invalid(`${at}.tool_result.content: Input should be a valid list`);
          }
          tokens = c.text(text) + images + OVERHEAD.toolResult;
          parts.push({ kind: 'tool_result', id: b.tool_use_id, text, isError: b.is_error === true });
          break;
        }
        case 'thinking': {
          if (typeof b.thinking !== 'string') throw invalid(`${at}.thinking.thinking: Field required`);
          if (typeof b.signature !== 'string') throw invalid(`${at}.thinking.signature: Field required`);
          if (role !== 'assistant') throw invalid(`${at}: \`thinking\` blocks can only be in \`assistant\` messages`);
          if (b.signature !== signThinking(b.thinking))
            throw invalid(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
          tokens = keepsThinking(i) ? c.text(b.thinking) + OVERHEAD.block : 0;
          parts.push({ kind: 'thinking', text: b.thinking });
          break;
        }
        case 'compaction': {
          if (role !== 'assistant') throw invalid(`${at}: \`compaction\` blocks can only be in \`assistant\` messages`);
          // Null content is a failed compaction, round-tripped as a no-op; an empty string is refused (SDK docs).
          if (b.content === null || b.content === undefined) break;
          if (typeof b.content !== 'string') throw invalid(`${at}.compaction.content: Input should be a valid string`);
          if (b.content.length === 0)
            throw invalid(`${at}.compaction.content: String should have at least 1 character`);
          tokens = c.text(b.content) + OVERHEAD.block;
          parts.push({ kind: 'text', text: b.content });
          lastCompaction = { segment: segments.length, message: conversation.length };
          break;
        }
        case 'redacted_thinking':
          if (typeof b.data !== 'string') throw invalid(`${at}.redacted_thinking.data: Field required`);
          tokens = keepsThinking(i) ? Math.ceil(b.data.length / 4) : 0;
          break;
      }
      segments.push({ key, tokens: tokens + first, breakpoint: mark(b) });
    });
    conversation.push({ role, parts });
  });

  if (lastCompaction) {
    // The API drops everything before the last compaction block: the prompt restarts from its summary.
    segments.splice(messageStart, lastCompaction.segment - messageStart);
    conversation.splice(0, lastCompaction.message);
    if (lastCompaction.message > 0) {
      const m = conversation[0]!;
      const from = m.parts.findIndex((p) => p.kind === 'text');
      m.parts = m.parts.slice(Math.max(0, from));
    }
  }

  if (isRecord(body.cache_control)) {
    // Automatic caching: one breakpoint on the last cacheable block.
    breakpoints++;
    segments.at(-1)!.breakpoint = true;
  }
  if (breakpoints > 4) throw invalid(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);

  if (hasToolBlocks && tools.length === 0) {
    throw invalid('Requests which include `tool_use` or `tool_result` blocks must define tools.');
  }
  checkPairing(blocksOf, messages as Record<string, unknown>[]);

  if (thinkingEnabled && !countOnly) checkThinkingLoop(blocksOf, messages as Record<string, unknown>[]);

  return {
    body,
    model: body.model,
    stream: body.stream === true,
    ...(typeof body.max_tokens === 'number' ? { maxOutputTokens: body.max_tokens } : {}),
    segments,
    system,
    tools,
    messages: conversation,
    thinkingEnabled,
    messageStart,
  };
}

/** Every tool_use answered by a tool_result in the next message (results first), and no result without its call. */
function checkPairing(blocksOf: Record<string, unknown>[][], messages: Record<string, unknown>[]): void {
  for (let i = 0; i < blocksOf.length; i++) {
    const blocks = blocksOf[i]!;
    if (messages[i]!.role === 'assistant') {
      const ids = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
      if (ids.length === 0) continue;
      const next = i + 1 < blocksOf.length && messages[i + 1]!.role === 'user' ? blocksOf[i + 1]! : [];
      // Results must lead the next message: content before them breaks the pairing.
      const leading: string[] = [];
      for (const b of next) {
        if (b.type !== 'tool_result') break;
        leading.push(b.tool_use_id as string);
      }
      const missing = ids.filter((id) => !leading.includes(id));
      if (missing.length > 0) {
        throw invalid(
          `messages.${Math.min(i + 1, blocksOf.length - 1)}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    } else {
      const previous = i > 0 && messages[i - 1]!.role === 'assistant' ? blocksOf[i - 1]! : [];
      const callIds = new Set(previous.filter((b) => b.type === 'tool_use').map((b) => b.id as string));
      blocks.forEach((b, j) => {
        if (b.type === 'tool_result' && !callIds.has(b.tool_use_id as string)) {
          throw invalid(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
      });
    }
  }
}

/**
 * With thinking enabled, the assistant message that opened the current tool-use loop (the request ends in tool
 * results) must start with a thinking block.
 */
function checkThinkingLoop(blocksOf: Record<string, unknown>[][], messages: Record<string, unknown>[]): void {
  const n = blocksOf.length;
  const lastBlocks = blocksOf[n - 1]!;
  if (messages[n - 1]!.role !== 'user' || !lastBlocks.some((b) => b.type === 'tool_result')) return;
  const i = n - 2;
  if (i < 0 || messages[i]!.role !== 'assistant') return;
  const first = blocksOf[i]![0];
  if (first && first.type !== 'thinking' && first.type !== 'redacted_thinking') {
    throw invalid(
      `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
    );
  }
}

/** Output cap, then the window: prompt alone, then prompt + max_tokens. */
export function limitAnthropic(p: ParsedRequest, promptTokens: number, env: WireEnv): void {
  const { window, maxOutputTokens: cap } = env.options;
  const max = p.maxOutputTokens ?? 0;
  if (cap !== undefined && max > cap) {
    throw invalid(
      `max_tokens: ${max} > ${cap}, which is the maximum allowed number of output tokens for ${env.options.modelName ?? p.model}`,
    );
  }
  if (promptTokens > window) throw invalid(`prompt is too long: ${promptTokens} tokens > ${window} maximum`);
  if (promptTokens + max > window) {
    throw invalid(
      `input length and \`max_tokens\` exceed context limit: ${promptTokens} + ${max} > ${window}, decrease input length or \`max_tokens\` and try again`,
    );
  }
}

export function anthropicErrorBody(r: Refusal, requestId: string): unknown {
  return { type: 'error', error: { type: r.type, message: r.message }, request_id: requestId };
}

function contentBlocks(e: Emission, thinkingEnabled: boolean): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (thinkingEnabled && e.answer.thinking) {
    out.push({ type: 'thinking', thinking: e.answer.thinking, signature: signThinking(e.answer.thinking) });
  }
  if (e.answer.text) out.push({ type: 'text', text: e.answer.text });
  for (const call of e.calls) out.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input });
  return out;
}

function usageOf(e: Emission, p?: ParsedRequest): Record<string, unknown> {
  const usage: Record<string, unknown> = {
    input_tokens: e.usage.uncachedInputTokens,
    cache_creation_input_tokens: e.usage.cacheWriteTokens,
    cache_read_input_tokens: e.usage.cacheReadTokens,
    cache_creation: { ephemeral_5m_input_tokens: e.usage.cacheWriteTokens, ephemeral_1h_input_tokens: 0 },
    output_tokens: e.usage.outputTokens,
    service_tier: 'standard',
  };
  const compaction = p ? (p as Parsed).compaction : undefined;
  if (compaction) {
    // One entry per sampling iteration; the compaction's own tokens are not in the top-level figures (SDK docs), except
    // when the request pauses after compacting, where the compaction is the only iteration (the fake's choice).
    const iteration = (type: string, input: number, read: number, write: number, output: number) => ({
      type,
      input_tokens: input,
      cache_creation_input_tokens: write,
      cache_read_input_tokens: read,
      cache_creation: { ephemeral_5m_input_tokens: write, ephemeral_1h_input_tokens: 0 },
      output_tokens: output,
      ...(type === 'message' ? { model: p!.model } : {}),
    });
    usage.iterations = [
      iteration('compaction', compaction.inputTokens, 0, 0, compaction.outputTokens),
      ...(compaction.pause
        ? []
        : [
            iteration(
              'message',
              e.usage.uncachedInputTokens,
              e.usage.cacheReadTokens,
              e.usage.cacheWriteTokens,
              e.usage.outputTokens,
            ),
          ]),
    ];
  }
  return usage;
}

/** `context_management` of a beta response, when the request asked for edits (absent otherwise). */
function contextManagementOf(p: ParsedRequest): { context_management: unknown } | undefined {
  const edits = (p as Parsed).appliedEdits;
  return edits ? { context_management: { applied_edits: edits } } : undefined;
}

export function respondAnthropic(p: ParsedRequest, e: Emission): WireResponse {
  const compaction = (p as Parsed).compaction;
  let stopReason: string = e.answer.stopReason ?? (e.calls.length > 0 ? 'tool_use' : 'end_turn');
  let content = contentBlocks(e, p.thinkingEnabled);
  if (compaction) {
    // The compaction block opens the response; paused, nothing is sampled after it.
    const block = { type: 'compaction', content: compaction.summary, encrypted_content: null };
    content = compaction.pause ? [block] : [block, ...content];
    if (compaction.pause) stopReason = 'compaction';
  }
  if (!p.stream) {
    return {
      json: {
        id: e.messageId,
        type: 'message',
        role: 'assistant',
        model: p.model,
        content,
        stop_reason: stopReason,
        stop_sequence: null,
        usage: usageOf(e, p),
        ...contextManagementOf(p),
      },
    };
  }
  const events: SseEvent[] = [];
  const send = (data: Record<string, unknown>) => events.push({ event: data.type as string, data });
  send({
    type: 'message_start',
    message: {
      id: e.messageId,
      type: 'message',
      role: 'assistant',
      model: p.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usageOf(e), output_tokens: 1 },
      ...(contextManagementOf(p) ? { context_management: null } : {}),
    },
  });
  send({ type: 'ping' });
  content.forEach((block, index) => {
    if (block.type === 'compaction') {
      send({
        type: 'content_block_start',
        index,
        content_block: { type: 'compaction', content: null, encrypted_content: null },
      });
      // The delta carries the block's final value.
      send({
        type: 'content_block_delta',
        index,
        delta: { type: 'compaction_delta', content: block.content, encrypted_content: block.encrypted_content },
      });
    } else if (block.type === 'thinking') {
      send({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const t of chunks(block.thinking as string, 40))
        send({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: t } });
      send({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } });
    } else if (block.type === 'text') {
      send({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const t of chunks(block.text as string, 24))
        send({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } });
    } else {
      send({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      send({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const t of chunks(JSON.stringify(block.input), 16))
        send({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: t } });
    }
    send({ type: 'content_block_stop', index });
  });
  const u = usageOf(e, p);
  send({
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: {
      input_tokens: u.input_tokens,
      cache_creation_input_tokens: u.cache_creation_input_tokens,
      cache_read_input_tokens: u.cache_read_input_tokens,
      output_tokens: u.output_tokens,
      ...(u.iterations ? { iterations: u.iterations } : {}),
    },
    ...contextManagementOf(p),
  });
  send({ type: 'message_stop' });
  return { events };
}
