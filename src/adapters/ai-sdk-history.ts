/**
 * Keeping a ContextManager in step with the history the AI SDK sends (the history rule of `ai-sdk.ts`'s module comment):
 * what of the app's messages the manager already has, what it last sent, and the answers it recorded, matched by
 * fingerprint. Shared by the middleware, `abridgePrepareStep` and the Mastra processor (`mastra.ts`, which also uses the
 * request shaping at the end). Internal: not exported from the entry point.
 */
import { createHash } from 'node:crypto';
import type { LanguageModelV3Content, LanguageModelV3Message, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { CONVERSATION_START_TEXT } from '../formats/request-body.js';
import { conversationBreakpointAt, conversationBreakpointFits } from '../formats/wire.js';
import type { ContextManager } from '../manager/context-manager.js';
import { renderPrompt } from '../manager/request.js';
import { activeMessages } from '../model/view.js';
import type { Message, Usage } from '../model/types.js';
import { base64, toV3Prompt, V3Originals, type V3AssistantPart, type V3Part } from './ai-sdk-v3.js';
import { responseMessage } from './ai-sdk-stream.js';
import type { HostEvent } from '../manager/host-report.js';

// Public, re-exported by `ai-sdk.ts`; declared here because HistorySync emits it and the prepareStep helper's options
// name it too, and neither may import the entry point that re-exports them (no import cycles).
export type AiSdkEvent =
  | HostEvent
  /**
   * abridge's own tools are counted in every request (the manager offers them) but the call does not define them:
   * spread `abridgeTools(cm)` into the call's tools, or create the manager with `agentTools: false`. Once per name.
   */
  | { type: 'tools-not-offered'; names: string[] };

/** Stands for the answer the middleware recorded, until the app's next prompt shows the form the AI SDK gave it. */
const RECORDED = Symbol('recorded response');
type Slot = string | typeof RECORDED;

/** A message's identity for history comparison: role and content, provider metadata left out, binary data as base64. */
function fingerprint(m: unknown): string {
  const json = JSON.stringify(m, (key, value: unknown) => {
    if (key === 'providerOptions' || key === 'providerMetadata') return undefined;
    if (value instanceof Uint8Array) return base64(value);
    if (value instanceof URL) return value.href;
    return value;
  });
  return createHash('sha1')
    .update(json ?? '')
    .digest('base64');
}

/** Where `incoming` continues `slots` (a recorded answer matches any assistant message); undefined when it does not. */
function continuation(
  slots: readonly Slot[],
  incoming: readonly string[],
  roles: readonly string[],
): { at: number; recorded: number[] } | undefined {
  if (slots.length === 0 || incoming.length < slots.length) return undefined;
  const recorded: number[] = [];
  for (let i = 0; i < slots.length; i++) {
    const s = slots[i]!;
    if (s === RECORDED) {
      if (roles[i] !== 'assistant') return undefined;
      recorded.push(i);
    } else if (s !== incoming[i]) return undefined;
  }
  return { at: slots.length, recorded };
}

function commonPrefix(slots: readonly Slot[], incoming: readonly string[], roles: readonly string[]): number {
  let k = 0;
  while (
    k < slots.length &&
    k < incoming.length &&
    (slots[k] === incoming[k] || (slots[k] === RECORDED && roles[k] === 'assistant'))
  )
    k++;
  return k;
}

/**
 * The state shared by the middleware and the prepareStep helper: what of the app's history the manager already has
 * (`known`), and the conversation last sent (`sent`, the compacted view).
 */
export class HistorySync {
  private known: Slot[] = [];
  private sent: Slot[] = [];
  private started = false;
  /** The recorded answers waiting for the AI SDK's own form of them (in the next prompt). */
  private readonly waiting: Message[] = [];
  readonly originals = new V3Originals();

  constructor(
    private readonly cm: ContextManager,
    private readonly emit: (e: AiSdkEvent) => void,
  ) {}

  /**
   * Brings the manager up to date with a conversation (no leading system messages): appends what is new.
   * `decode` reads one message; `usage`, when given, goes with the last new assistant message (prepareStep: the
   * previous step's answer, recorded late).
   */
  async absorb<M extends { role: string }>(
    conversation: readonly M[],
    decode: (m: M) => Message,
    usage?: Usage,
  ): Promise<void> {
    const fps = conversation.map(fingerprint);
    const roles = conversation.map((m) => m.role);
    let from: number;
    let recorded: number[] = [];
    const onKnown = this.started ? continuation(this.known, fps, roles) : undefined;
    const onSent = this.started && !onKnown ? continuation(this.sent, fps, roles) : undefined;
    if (!this.started) {
      // First call. A manager that already holds a conversation (resumed) is continued by what the app passes, unless
      // the app passed that conversation itself (the view, as `abridgeMessages` gives it).
      const view = this.cm.session.entries.some((e) => e.message)
        ? this.viewPrompt()
            .filter((m) => m.role !== 'system')
            .map(fingerprint)
        : [];
      const onView = continuation(view, fps, roles);
      from = onView ? onView.at : 0;
    } else if (onKnown) ({ at: from, recorded } = onKnown);
    else if (onSent) ({ at: from, recorded } = onSent);
    else {
      from = commonPrefix(this.known, fps, roles);
      this.emit({ type: 'resync', kept: from, dropped: this.known.length - from, added: conversation.length - from });
    }
    this.started = true;
    for (const i of recorded) this.adoptRecorded(conversation[i] as unknown as LanguageModelV3Message);
    this.waiting.length = 0;
    const fresh = conversation.slice(from).map(decode);
    let lastAssistant = -1;
    if (usage)
      for (let i = fresh.length - 1; i >= 0 && lastAssistant < 0; i--)
        if (fresh[i]!.role === 'assistant') lastAssistant = i;
    for (let i = 0; i < fresh.length; i++) {
      if (i === lastAssistant) await this.cm.recordResponse(fresh[i]!, usage);
      else await this.cm.append(fresh[i]!);
    }
    this.known = fps;
  }

  /** The model's answer, recorded with its usage; the app's next prompt shows it in the AI SDK's form. */
  async record(content: readonly LanguageModelV3Content[], usage: Usage | undefined): Promise<void> {
    const { message, pairs } = responseMessage(content);
    if (message.parts.length === 0 && !usage) return;
    await this.cm.recordResponse(
      { ...message, provider: this.cm.provider === 'anthropic' ? 'anthropic' : 'openai' },
      usage,
    );
    // recordResponse keeps the part objects: the view holds these very parts.
    for (const [part, v3] of pairs) this.originals.remember(part, v3);
    // An empty answer (usage only) may not appear in the AI SDK's history: it takes no slot.
    if (message.parts.length === 0) return;
    this.waiting.push(message);
    this.known.push(RECORDED);
    this.sent.push(RECORDED);
  }

  /** The conversation sent in the request (no system messages): what an app adopting the compacted view passes back. */
  setSent(prompt: LanguageModelV3Prompt): void {
    const conv = prompt.filter((m) => m.role !== 'system');
    // The placeholder first user message is abridge's, not the app's.
    this.sent = conv.slice(conv[0] && isStartPlaceholder(conv[0]) ? 1 : 0).map(fingerprint);
  }

  /** The conversation a prepareStep returned (AI SDK 7 carries it forward: the next step's messages start with it). */
  setSentMessages(conversation: readonly unknown[]): void {
    this.sent = conversation.map(fingerprint);
  }

  private viewPrompt(): LanguageModelV3Prompt {
    const prompt = toV3Prompt(activeMessages(this.cm.session), { originals: this.originals });
    return prompt[0]?.role === 'user' && isStartPlaceholder(prompt[0]) ? prompt.slice(1) : prompt;
  }

  /** The AI SDK's own form of a recorded answer: its parts' provider options are what the provider wants back. */
  private adoptRecorded(m: LanguageModelV3Message): void {
    const w = this.waiting.shift();
    if (!w || m.role !== 'assistant') return;
    const pool = [...(m.content as V3AssistantPart[])];
    for (const p of w.parts) {
      const i = pool.findIndex((c) =>
        p.type === 'tool-call'
          ? c.type === 'tool-call' && c.toolCallId === p.id
          : p.type === 'thinking'
            ? c.type === 'reasoning'
            : c.type === p.type,
      );
      if (i < 0) continue;
      const [c] = pool.splice(i, 1);
      if (p.type !== 'image' && p.type !== 'file') this.originals.remember(p, c!);
    }
  }
}

function isStartPlaceholder(m: LanguageModelV3Message): boolean {
  const only = m.role === 'user' && m.content.length === 1 ? m.content[0] : undefined;
  return only?.type === 'text' && only.text === CONVERSATION_START_TEXT;
}

// Here rather than in `ai-sdk.ts` because `abridgePrepareStep` sends it too, beside the view the history sync tracks.
/** The system prompt as the manager builds it (its sections, the deferral note), as it is counted. */
export function systemOf(cm: ContextManager): string[] {
  const built = renderPrompt(cm.provider, { model: cm.currentModel, prompt: cm.prompt, tools: [] });
  const text = [built.system, ...built.tail.map((b) => b.text)].filter((t) => t.trim() !== '').join('\n\n');
  return text ? [text] : [];
}

// ---------------------------------------------------------------------------------------------------------------------
// Request shaping the middleware and the Mastra processor share

export function systemTextOf(prompt: LanguageModelV3Prompt): {
  system: string | undefined;
  rest: LanguageModelV3Message[];
} {
  let k = 0;
  const texts: string[] = [];
  while (k < prompt.length && prompt[k]!.role === 'system') texts.push((prompt[k++] as { content: string }).content);
  return { system: texts.length ? texts.join('\n\n') : undefined, rest: prompt.slice(k) };
}

const EPHEMERAL = { anthropic: { cacheControl: { type: 'ephemeral' } } };

/**
 * Anthropic cache breakpoints (2 of its 4): after the system prompt, and the conversation's by the one rule of
 * formats/wire.ts (the last part of the last message that can carry one — not reasoning — when the prompt is long
 * enough to be cached). Copies: the parts given back as they were read stay untouched.
 */
export function withAnthropicBreakpoints(
  prompt: LanguageModelV3Prompt,
  promptTokens: number,
  minCacheable: number,
): LanguageModelV3Prompt {
  const out = prompt.slice();
  const sys = out.findIndex((m) => m.role === 'system');
  if (sys >= 0) out[sys] = { ...out[sys]!, providerOptions: { ...out[sys]!.providerOptions, ...EPHEMERAL } };
  const last = out.length - 1;
  const m = out[last];
  if (!m || m.role === 'system' || !conversationBreakpointFits(sys >= 0 ? 1 : 0, promptTokens, minCacheable))
    return out;
  const content = m.content.slice() as V3Part[];
  const at = conversationBreakpointAt(content, (p) => p.type === 'reasoning');
  const part = content[at];
  if (!part) return out;
  content[at] = { ...part, providerOptions: { ...part.providerOptions, ...EPHEMERAL } };
  out[last] = { ...m, content } as LanguageModelV3Message;
  return out;
}

export async function ownToolNames(cm: ContextManager): Promise<Set<string>> {
  return new Set((await cm.tools()).map((t) => t.name));
}
