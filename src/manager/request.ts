/**
 * A turn's request in the provider's own shape: the system prompt (PromptBuilder sections and their cache
 * breakpoints), the tool definitions left after deferral, and the messages of the compacted view — through the one
 * SDK-free encoder of each wire format (`toRequest`, src/formats/wire.ts).
 *
 * Encoding the whole view every turn would make each turn cost the size of the session. The view only grows between
 * compactions, and each assistant message with what answers it (its tool results, the user's next words) encodes the
 * same way whatever comes after it; so the view is encoded group by group — a group starts at an assistant message —
 * and a group is encoded again only when it changed.
 */
import { CONVERSATION_START_TEXT } from '../formats/request-body.js';
import {
  toRequest,
  type AnthropicRequestBody,
  type ChatRequestBody,
  type RequestBody,
  type RequestOptions,
  type RequestProvider,
  type ResponsesRequestBody,
  type ToolSpec,
} from '../formats/wire.js';
import type { Message } from '../model/types.js';
import type { BuiltPrompt, PromptBuilder } from '../prompt/builder.js';
import type { TokenCounter } from '../tokens/counter.js';

export interface ProviderRequestBody {
  anthropic: AnthropicRequestBody;
  'openai-chat': ChatRequestBody;
  'openai-responses': ResponsesRequestBody;
}

export interface RequestParts {
  model: string;
  maxOutputTokens: number;
  prompt: PromptBuilder;
  tools: readonly ToolSpec[];
  messages: readonly Message[];
  /** Fields passed through to the body as they are (temperature, thinking, stream, metadata…). */
  extra?: Record<string, unknown>;
  /** Counts for the cache plan (pass the session's own counter: it remembers what it counted). */
  counter?: TokenCounter;
  /** Provider tokens per counted token. */
  ratio?: number;
  /** Provider tokens of the whole prompt, for the conversation breakpoint's minimum length (Anthropic). */
  promptTokens?: number;
  /** The system prompt and tools already rendered for this request (`renderPrompt`), so they are not rendered twice. */
  built?: BuiltPrompt;
}

/** The system prompt and tools as they will be sent, with the prompt's cache plan (Anthropic breakpoints). */
export function renderPrompt(
  provider: RequestProvider,
  parts: Pick<RequestParts, 'model' | 'prompt' | 'tools' | 'counter' | 'ratio'>,
): BuiltPrompt {
  return parts.prompt.build({
    provider: provider === 'anthropic' ? 'anthropic' : 'openai',
    model: parts.model,
    tools: parts.tools.map(anthropicTool),
    ...(parts.counter ? { counter: parts.counter } : {}),
    ...(parts.ratio ? { ratio: parts.ratio } : {}),
  });
}

export function anthropicTool(t: ToolSpec): {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
} {
  return { name: t.name, description: t.description ?? '', input_schema: t.inputSchema };
}

interface Group {
  /** The group's messages (a compaction replaces edited ones with new objects: any change shows as another object). */
  members: Message[];
  wire: unknown[];
}

/** What the last request was built from, for the append-only fast path. */
interface Frozen {
  provider: RequestProvider;
  model: string;
  /** The view array itself: the manager appends to it between compactions and replaces it at a compaction. */
  view: readonly Message[];
  /** Index in `view` of the last group's first message: everything before it encodes the same from now on. */
  tailStart: number;
  /** The wire messages of the groups before `tailStart`, their tool-call ids, and the view's system texts there. */
  wire: unknown[];
  ids: Set<string>;
  systemTexts: string[];
}

/** Builds requests turn after turn, re-encoding only what changed since the last one. */
export class RequestEncoder {
  private groups = new Map<Message, Group>();
  private frozen: Frozen | undefined;

  build<P extends RequestProvider>(provider: P, parts: RequestParts): ProviderRequestBody[P] {
    const view = parts.messages;
    const f = this.frozen;
    // Append-only since the last request (the same array, grown): only the last group onward is looked at again.
    const state: Frozen =
      f && f.view === view && f.provider === provider && f.model === parts.model && view.length >= f.tailStart
        ? { ...f, wire: f.wire, ids: f.ids, systemTexts: f.systemTexts }
        : { provider, model: parts.model, view, tailStart: 0, wire: [], ids: new Set(), systemTexts: [] };
    const rebuild = state.tailStart === 0;
    if (f && f.provider !== provider) this.groups.clear();
    const before = this.groups;
    // A rebuild keeps only the groups the view still has (a compaction drops or edits the others).
    if (rebuild) this.groups = new Map();
    const tail = this.scan(state, provider, parts.model, before);
    this.frozen = state;

    const built = parts.built ?? renderPrompt(provider, parts);
    // The view's own system messages (a harness prompt, a summary placed as system) follow as one block, as the
    // encoders place them.
    const viewText = [...state.systemTexts, ...tail.systemTexts].filter((t) => t !== '').join('\n\n');
    const system = [
      ...built.blocks.map((b) => (b.cache_control ? { text: b.text, cache: true } : { text: b.text })),
      ...(viewText ? [{ text: viewText }] : []),
    ];
    const options: RequestOptions = {
      model: parts.model,
      maxOutputTokens: parts.maxOutputTokens,
      system,
      tools: parts.tools,
      cacheTools: built.breakpoints.some((b) => b.at === 'tools'),
      ...(parts.extra ? { extra: parts.extra } : {}),
    };
    if (tail.duplicateIds) {
      // Tool-call ids repeat across groups: only a whole-view encoding makes them unique.
      this.frozen = undefined;
      return withConversationBreakpoint(
        toRequest(
          view.filter((m) => m.role !== 'system'),
          provider,
          options,
        ) as unknown as Record<string, unknown>,
        provider,
        built,
        parts,
      ) as unknown as ProviderRequestBody[P];
    }
    const body = toRequest([], provider, options) as unknown as Record<string, unknown>;
    const wire = finish(state.wire, tail.wire, provider);
    if (provider === 'anthropic') body.messages = wire;
    else if (provider === 'openai-chat')
      body.messages = [...(body.messages as { role: string }[]).filter((m) => m.role === 'system'), ...wire];
    else body.input = wire;
    return withConversationBreakpoint(body, provider, built, parts) as unknown as ProviderRequestBody[P];
  }

  /**
   * Encodes the view from `state.tailStart` on, group by group (a group starts at an assistant message), freezing
   * every complete group into `state` and returning the last one's wire apart (it may still grow).
   */
  private scan(
    state: Frozen,
    provider: RequestProvider,
    model: string,
    cache: ReadonlyMap<Message, Group>,
  ): { wire: unknown[]; systemTexts: string[]; duplicateIds: boolean } {
    const view = state.view;
    const starts: number[] = [];
    let prevRole: string | undefined;
    // A block of the response before that only results separate from it is part of that group (prepareConversation
    // sends the response as one message, as Claude Code does).
    let response: string | undefined;
    let onlyResults = false;
    for (let i = state.tailStart; i < view.length; i++) {
      const m = view[i]!;
      if (m.role === 'system') continue;
      const sameResponse =
        m.role === 'assistant' && m.responseId !== undefined && m.responseId === response && onlyResults;
      if (starts.length === 0 || (m.role === 'assistant' && prevRole !== 'assistant' && !sameResponse)) starts.push(i);
      if (m.role === 'assistant') {
        response = m.responseId;
        onlyResults = true;
      } else if (m.role !== 'tool' || m.parts.some((p) => p.type !== 'tool-result')) onlyResults = false;
      prevRole = m.role;
    }
    let lastWire: unknown[] = [];
    const lastSystem: string[] = [];
    let duplicateIds = false;
    if (starts.length === 0) {
      for (let i = state.tailStart; i < view.length; i++) lastSystem.push(systemText(view[i]!));
      return { wire: lastWire, systemTexts: lastSystem, duplicateIds };
    }
    // System messages before the first group belong to the frozen part.
    for (let i = state.tailStart; i < starts[0]!; i++) state.systemTexts.push(systemText(view[i]!));
    state.tailStart = starts[0]!;
    for (let g = 0; g < starts.length; g++) {
      const from = starts[g]!;
      const to = g + 1 < starts.length ? starts[g + 1]! : view.length;
      const members: Message[] = [];
      const systemTexts: string[] = [];
      for (let i = from; i < to; i++) {
        const m = view[i]!;
        if (m.role === 'system') systemTexts.push(systemText(m));
        else members.push(m);
      }
      let group = cache.get(members[0]!) ?? this.groups.get(members[0]!);
      if (!group || !sameMembers(group.members, members)) {
        group = { members, wire: encodeGroup(provider, members, model) };
        this.groups.set(members[0]!, group);
      }
      if (g + 1 < starts.length) {
        if (!addIds(state.ids, group.wire, provider)) duplicateIds = true;
        append(state.wire, group.wire, provider);
        state.systemTexts.push(...systemTexts);
        state.tailStart = to;
      } else {
        lastWire = group.wire;
        lastSystem.push(...systemTexts);
        if (!addIds(new Set(state.ids), group.wire, provider)) duplicateIds = true;
      }
    }
    return { wire: lastWire, systemTexts: lastSystem, duplicateIds };
  }
}

function sameMembers(a: readonly Message[], b: readonly Message[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One group as the provider's wire messages, without the fixes a whole request gets (a first user message…). */
function encodeGroup(provider: RequestProvider, group: readonly Message[], model: string): unknown[] {
  const body = toRequest(group, provider, { model, maxOutputTokens: 1 }) as unknown as Record<string, unknown>;
  if (provider === 'anthropic') {
    const wire = body.messages as { role: string; content: { type: string; text?: string }[] }[];
    if (group[0]!.role === 'assistant' && isStartFiller(wire[0])) wire.shift();
    return wire;
  }
  if (provider === 'openai-chat') {
    const wire = (body.messages as { role: string; content?: unknown }[]).filter((m) => m.role !== 'system');
    const tail = wire[wire.length - 1];
    if (!group.some((m) => m.role === 'user') && tail?.role === 'user' && tail.content === CONVERSATION_START_TEXT)
      wire.pop();
    return wire;
  }
  const wire = body.input as { type?: string; role?: string; content?: unknown }[];
  if (
    wire.length === 1 &&
    wire[0]!.role === 'user' &&
    wire[0]!.content === CONVERSATION_START_TEXT &&
    !group.some((m) => m.role === 'user')
  )
    return [];
  return wire;
}

function isStartFiller(m: { role: string; content: { type: string; text?: string }[] } | undefined): boolean {
  return (
    m?.role === 'user' &&
    m.content.length === 1 &&
    m.content[0]!.type === 'text' &&
    m.content[0]!.text === CONVERSATION_START_TEXT
  );
}

/** Appends a group's wire messages; on Anthropic, a message of the same role as the one before joins it (copied). */
function append(out: unknown[], wire: readonly unknown[], provider: RequestProvider): void {
  for (const m of wire) {
    const prev = out[out.length - 1] as { role?: string; content?: unknown[] } | undefined;
    const cur = m as { role?: string; content?: unknown[] };
    if (
      provider === 'anthropic' &&
      prev &&
      prev.role === cur.role &&
      Array.isArray(prev.content) &&
      Array.isArray(cur.content)
    )
      out[out.length - 1] = { ...prev, content: [...prev.content, ...cur.content] };
    else out.push(m);
  }
}

/**
 * The frozen groups' wire plus the last group's, with the fixes the encoders make to a whole request (a first user
 * message, no trailing whitespace in a prefill). The frozen array is not changed: later turns reuse it.
 */
function finish(frozen: readonly unknown[], tail: readonly unknown[], provider: RequestProvider): unknown[] {
  const out = frozen.slice();
  append(out, tail, provider);
  if (provider === 'anthropic') {
    if ((out[0] as { role?: string } | undefined)?.role !== 'user')
      out.unshift({ role: 'user', content: [{ type: 'text', text: CONVERSATION_START_TEXT }] });
    const last = out[out.length - 1] as { role: string; content: { type: string; text?: string }[] };
    if (last.role === 'assistant') {
      const content = [...last.content];
      const end = content[content.length - 1];
      if (end?.type === 'text') {
        const text = end.text!.trimEnd();
        if (text === '') content.pop();
        else content[content.length - 1] = { ...end, text };
      }
      if (content.length === 0) out.pop();
      else out[out.length - 1] = { ...last, content };
    }
  } else if (provider === 'openai-chat') {
    if (!out.some((m) => (m as { role?: string }).role === 'user'))
      out.push({ role: 'user', content: CONVERSATION_START_TEXT });
  } else if (out.length === 0) out.push({ type: 'message', role: 'user', content: CONVERSATION_START_TEXT });
  return out;
}

/** Adds a group's tool-call ids to `seen`; false when one was there already. */
function addIds(seen: Set<string>, wire: readonly unknown[], provider: RequestProvider): boolean {
  let ok = true;
  const add = (id: unknown) => {
    if (typeof id !== 'string') return;
    if (seen.has(id)) ok = false;
    seen.add(id);
  };
  for (const m of wire as Record<string, unknown>[]) {
    if (provider === 'anthropic') {
      if (m.role === 'assistant' && Array.isArray(m.content))
        for (const b of m.content as Record<string, unknown>[]) if (b.type === 'tool_use') add(b.id);
    } else if (provider === 'openai-chat') {
      if (Array.isArray(m.tool_calls)) for (const c of m.tool_calls as Record<string, unknown>[]) add(c.id);
    } else if (m.type === 'function_call') add(m.call_id);
  }
  return ok;
}

/**
 * Anthropic: a cache breakpoint on the last block that can carry one, when the prompt is long enough to be cached and
 * the four breakpoints are not used up. The block is copied: encoded groups are reused by later turns.
 */
function withConversationBreakpoint(
  body: Record<string, unknown>,
  provider: RequestProvider,
  built: BuiltPrompt,
  parts: RequestParts,
): Record<string, unknown> {
  if (provider !== 'anthropic') return body;
  const used = built.breakpoints.length;
  if (used >= 4 || (parts.promptTokens ?? 0) < (built.minCacheableTokens ?? 1024)) return body;
  const messages = body.messages as { role: string; content: Record<string, unknown>[] }[];
  const last = messages[messages.length - 1];
  if (!last) return body;
  for (let i = last.content.length - 1; i >= 0; i--) {
    const b = last.content[i]!;
    if (b.type === 'thinking' || b.type === 'redacted_thinking') continue;
    const content = [...last.content];
    content[i] = { ...b, cache_control: { type: 'ephemeral' } };
    messages[messages.length - 1] = { ...last, content };
    break;
  }
  return body;
}

function systemText(m: Message): string {
  return m.parts
    .map((p) => (p.type === 'text' ? p.text : p.type === 'compaction' ? p.marker.summary : ''))
    .filter((t) => t.trim() !== '')
    .join('\n\n');
}

export type { RequestBody, RequestProvider, ToolSpec };
