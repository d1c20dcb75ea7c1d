/**
 * A view's request turn after turn, re-encoding only what changed — the same body `toRequest` gives for the whole view.
 *
 * Encoding the whole view every turn would make each turn cost the size of the session. The view only grows between
 * compactions, and each assistant message with what answers it (its tool results, the user's next words) encodes the
 * same way whatever comes after it; so the view is encoded group by group — a group starts at an assistant message —
 * and a group is encoded again only when it changed. What differs per wire format (how a group is encoded alone, how
 * groups join, what a whole request needs, where the messages go) is one `GroupWire` per provider, built on the
 * encoders' own functions.
 */
import type { Message } from '../model/types.js';
import { completeAnthropicMessages } from './anthropic.js';
import { completeChatMessages } from './openai-chat.js';
import { completeResponsesInput } from './openai-responses.js';
import { CONVERSATION_START_TEXT, systemText } from './request-body.js';
import {
  toRequest,
  withConversationBreakpoint,
  type AnthropicRequestMessage,
  type ProviderRequestBody,
  type RequestOptions,
  type RequestProvider,
  type SystemBlock,
} from './wire.js';

/** What differs between wire formats when a request is built group by group. */
interface GroupWire {
  /** A group's wire messages, without what only a whole request gets (a first user message, a filler). */
  encode(group: readonly Message[], model: string): unknown[];
  /** Appends a group's wire messages to those before it. */
  join(out: unknown[], wire: readonly unknown[]): void;
  /** The tool-call ids a group's wire messages hold (they must be unique across the request). */
  callIds(wire: readonly unknown[]): unknown[];
  /** The whole request's messages in its body, with what a whole request needs (the encoders' own rule). */
  place(body: Record<string, unknown>, messages: readonly unknown[]): void;
}

type Wire = Record<string, unknown>;

const WIRES: Record<RequestProvider, GroupWire> = {
  anthropic: {
    encode(group, model) {
      const wire = toRequest(group, 'anthropic', { model, maxOutputTokens: 1 }).messages as Wire[];
      // The encoder puts a user message first; a group starting with the model's turn follows one already.
      if (group[0]!.role === 'assistant' && isStartFiller(wire[0])) wire.shift();
      return wire;
    },
    join(out, wire) {
      // The API wants roles alternating: a message of the role before it joins it (copied: groups are reused).
      for (const m of wire as Wire[]) {
        const prev = out[out.length - 1] as Wire | undefined;
        if (prev && prev.role === m.role && Array.isArray(prev.content) && Array.isArray(m.content))
          out[out.length - 1] = { ...prev, content: [...prev.content, ...m.content] };
        else out.push(m);
      }
    },
    callIds: (wire) =>
      (wire as Wire[]).flatMap((m) =>
        m.role === 'assistant' && Array.isArray(m.content)
          ? (m.content as Wire[]).filter((b) => b.type === 'tool_use').map((b) => b.id)
          : [],
      ),
    place(body, messages) {
      body.messages = completeAnthropicMessages(messages as AnthropicRequestMessage[]);
    },
  },
  'openai-chat': {
    encode(group, model) {
      const wire = (toRequest(group, 'openai-chat', { model, maxOutputTokens: 1 }).messages as Wire[]).filter(
        (m) => m.role !== 'system',
      );
      const tail = wire[wire.length - 1];
      if (!group.some((m) => m.role === 'user') && tail?.role === 'user' && tail.content === CONVERSATION_START_TEXT)
        wire.pop();
      return wire;
    },
    join: (out, wire) => void out.push(...wire),
    callIds: (wire) =>
      (wire as Wire[]).flatMap((m) => (Array.isArray(m.tool_calls) ? (m.tool_calls as Wire[]).map((c) => c.id) : [])),
    place(body, messages) {
      // The system message the body was given (the system prompt) stays first.
      const system = (body.messages as Wire[]).filter((m) => m.role === 'system');
      body.messages = [...system, ...completeChatMessages(messages as never[])];
    },
  },
  'openai-responses': {
    encode(group, model) {
      const wire = toRequest(group, 'openai-responses', { model, maxOutputTokens: 1 }).input as Wire[];
      const only = wire.length === 1 ? wire[0]! : undefined;
      if (only?.role === 'user' && only.content === CONVERSATION_START_TEXT && !group.some((m) => m.role === 'user'))
        return [];
      return wire;
    },
    join: (out, wire) => void out.push(...wire),
    callIds: (wire) => (wire as Wire[]).filter((m) => m.type === 'function_call').map((m) => m.call_id),
    place(body, messages) {
      body.input = completeResponsesInput(messages as never[]);
    },
  },
};

function isStartFiller(m: Wire | undefined): boolean {
  const content = m?.content as Wire[] | undefined;
  return (
    m?.role === 'user' &&
    Array.isArray(content) &&
    content.length === 1 &&
    content[0]!.type === 'text' &&
    content[0]!.text === CONVERSATION_START_TEXT
  );
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
  /** The view array itself: the caller appends to it between compactions and replaces it at a compaction. */
  view: readonly Message[];
  /** Index in `view` of the last group's first message: everything before it encodes the same from now on. */
  tailStart: number;
  /** The wire messages of the groups before `tailStart`, their tool-call ids, and the view's system texts there. */
  wire: unknown[];
  ids: Set<unknown>;
  systemTexts: string[];
}

/**
 * Builds a view's request turn after turn (`toRequest`'s body for the same view and options), re-encoding only the
 * groups that changed. Pass the same array while it only grows; a new array (a compaction's view) starts afresh,
 * keeping the groups it still holds.
 */
export class IncrementalEncoder {
  private groups = new Map<Message, Group>();
  private frozen: Frozen | undefined;

  build<P extends RequestProvider>(
    provider: P,
    view: readonly Message[],
    options: RequestOptions,
  ): ProviderRequestBody[P] {
    const f = this.frozen;
    // Append-only since the last request (the same array, grown): only the last group onward is looked at again.
    const state: Frozen =
      f && f.view === view && f.provider === provider && f.model === options.model && view.length >= f.tailStart
        ? { ...f }
        : { provider, model: options.model, view, tailStart: 0, wire: [], ids: new Set(), systemTexts: [] };
    if (f && f.provider !== provider) this.groups.clear();
    const before = this.groups;
    // A rebuild keeps only the groups the view still has (a compaction drops or edits the others).
    if (state.tailStart === 0) this.groups = new Map();
    const wire = WIRES[provider];
    const tail = this.scan(state, wire, before);
    this.frozen = state;

    // The view's own system messages (a harness prompt, a summary placed as system) follow the system prompt as one
    // block, as the encoders place them.
    const viewText = [...state.systemTexts, ...tail.systemTexts].filter((t) => t !== '').join('\n\n');
    const system: SystemBlock[] = [
      ...(typeof options.system === 'string' ? [{ text: options.system }] : (options.system ?? [])),
      ...(viewText ? [{ text: viewText }] : []),
    ];
    const whole: RequestOptions = { ...options, system };
    if (tail.duplicateIds) {
      // Tool-call ids repeat across groups: only a whole-view encoding makes them unique.
      this.frozen = undefined;
      return toRequest(
        view.filter((m) => m.role !== 'system'),
        provider,
        whole,
      ) as ProviderRequestBody[P];
    }
    const { cacheConversation, ...rest } = whole;
    const body = toRequest([], provider, rest) as unknown as Record<string, unknown>;
    const messages = state.wire.slice();
    wire.join(messages, tail.wire);
    wire.place(body, messages);
    if (cacheConversation && provider === 'anthropic')
      body.messages = withConversationBreakpoint(body.messages as AnthropicRequestMessage[]).messages;
    return body as unknown as ProviderRequestBody[P];
  }

  /**
   * Encodes the view from `state.tailStart` on, group by group (a group starts at an assistant message), freezing
   * every complete group into `state` and returning the last one's wire apart (it may still grow).
   */
  private scan(
    state: Frozen,
    wire: GroupWire,
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
        group = { members, wire: wire.encode(members, state.model) };
        this.groups.set(members[0]!, group);
      }
      const ids = wire.callIds(group.wire);
      if (g + 1 < starts.length) {
        if (!addIds(state.ids, ids)) duplicateIds = true;
        wire.join(state.wire, group.wire);
        state.systemTexts.push(...systemTexts);
        state.tailStart = to;
      } else {
        lastWire = group.wire;
        lastSystem.push(...systemTexts);
        if (ids.some((id) => state.ids.has(id)) || new Set(ids).size !== ids.length) duplicateIds = true;
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

/** Adds ids to `seen`; false when one was there already. */
function addIds(seen: Set<unknown>, ids: readonly unknown[]): boolean {
  let ok = true;
  for (const id of ids) {
    if (typeof id !== 'string') continue;
    if (seen.has(id)) ok = false;
    seen.add(id);
  }
  return ok;
}
