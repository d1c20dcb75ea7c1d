/**
 * PromptBuilder: the system prompt as ordered sections, static first and dynamic last, so that the provider's prompt
 * cache keeps the longest possible prefix from one request to the next.
 *
 * Providers cache prompt prefixes: a request that starts with the same bytes as an earlier one pays the cache-read
 * price (a tenth of the input price) for them. Anything that changes ends the reusable prefix at that point, so the
 * order is base instructions → project rules (AGENTS.md / CLAUDE.md) → memories → skills → scratchpad → context status,
 * every cacheable section before every non-cacheable one.
 *
 * - Anthropic caches only where the request says so: `cache_control: {type: 'ephemeral'}` on a block caches the prefix
 *   up to and including it (in request order: tools → system → messages). At most 4 such breakpoints per request, and
 *   a prefix shorter than the model's minimum cacheable length is never cached. The builder places one breakpoint at
 *   the end of the last cacheable section, and optionally one after the tools and one at the end of the conversation
 *   prefix (when the caller passes its messages), each only when the prefix it closes is long enough; a breakpoint it
 *   does not place is listed in `skipped` with the reason.
 * - OpenAI and Gemini cache prefixes automatically: no markers, the same static → dynamic order.
 *
 * Ordering rule: a cacheable section added after a non-cacheable one would put changing text inside the cached prefix.
 * By default that is an error, thrown by `add()` where the mistake is made; with `order: 'reorder'` the builder moves
 * cacheable sections ahead of the non-cacheable ones (keeping each group's order) and says so in `warnings`.
 */
import { AbridgeError } from '../errors.js';
import { encodeAnthropicRequest, type AnthropicMessageParam } from '../formats/anthropic.js';
import type { Message } from '../model/types.js';
import { TokenCounter } from '../tokens/counter.js';
import { FAMILY_RATIO } from '../tokens/defaults.js';
import type { ProviderFamily } from '../tokens/family.js';
import { CONTEXT_NOTE_SECTION, contextNoteSection, type ContextFill, type ContextNoteOptions } from './context-note.js';
import type { PromptSection } from './section.js';

export type { PromptSection } from './section.js';

export type PromptProvider = 'anthropic' | 'openai' | 'gemini';

export interface PromptBuilderOptions {
  /**
   * A cacheable section added after a non-cacheable one: `'error'` (default) throws from `add()`; `'reorder'` moves it
   * ahead of the non-cacheable sections at build time, with a warning.
   */
  order?: 'error' | 'reorder';
  /** Between sections in the system prompt text (default a blank line). */
  separator?: string;
}

export type CacheControl = { type: 'ephemeral' };

export interface AnthropicSystemBlock {
  type: 'text';
  text: string;
  cache_control?: CacheControl;
}

/** A tool definition as the caller sends it (Anthropic `{name, description, input_schema}`, or any provider's shape). */
export type ToolDefinitionLike = Record<string, unknown>;

/** Anthropic message params as the builder renders them: any block may carry `cache_control`. */
export type CachedMessageParam = {
  role: 'user' | 'assistant';
  content: (AnthropicMessageParam['content'][number] & { cache_control?: CacheControl })[];
};

export interface BuildOptions {
  provider: PromptProvider;
  /** The model the request goes to: sets the minimum cacheable length (Anthropic). Default: Sonnet's minimum. */
  model?: string;
  /** Tool definitions the request carries (they precede the system prompt in Anthropic's cache order). */
  tools?: readonly ToolDefinitionLike[];
  /** The conversation so far: Anthropic gets a breakpoint at its end and the rendered messages. */
  messages?: readonly Message[];
  /** Place a breakpoint after the tools (Anthropic; default true when tools are given). */
  cacheTools?: boolean;
  /** Place a breakpoint at the end of the conversation prefix (Anthropic; default true when messages are given). */
  cacheConversation?: boolean;
  /** Breakpoints the caller places elsewhere in the same request: they count toward Anthropic's 4. */
  reservedBreakpoints?: number;
  /** Overrides the model's minimum cacheable prefix length, in provider tokens. */
  minCacheableTokens?: number;
  /**
   * Where the non-cacheable sections go. `'system'` (default): at the end of the system prompt. `'after-conversation'`:
   * after the conversation prefix (Anthropic with messages: as the last text blocks of the last user message, after
   * its breakpoint; otherwise returned in `tail` for the caller to append), so that a changing note does not end the
   * cached prefix before the conversation.
   */
  dynamicPlacement?: 'system' | 'after-conversation';
  /** Counts the text (default: the estimator, for the provider's family). */
  counter?: TokenCounter;
  /** Provider tokens per counted token (default: the family's FAMILY_RATIO). */
  ratio?: number;
}

export interface PromptBlock {
  name: string;
  text: string;
  cacheable: boolean;
  /** Provider tokens (estimated unless the counter is exact and the ratio 1). */
  tokens: number;
  cache_control?: CacheControl;
}

export type BreakpointSite = 'tools' | 'system' | 'messages';

export interface CacheBreakpoint {
  at: BreakpointSite;
  /** Index of the marked item: tool definition, system block, or message of `anthropic.messages`. */
  index: number;
  /** The section whose block carries the marker (system breakpoints). */
  section?: string;
  /** Provider tokens of the prefix the breakpoint closes (everything before it in the request, itself included). */
  prefixTokens: number;
}

export interface BuiltPrompt {
  provider: PromptProvider;
  /** `explicit`: the request must mark what to cache (Anthropic); `automatic`: the provider caches prefixes itself. */
  caching: 'explicit' | 'automatic';
  /** The system prompt text: the system blocks' texts joined by the separator. */
  system: string;
  /** The system prompt's blocks, in order: every cacheable section, then the non-cacheable ones placed in the system. */
  blocks: PromptBlock[];
  /** Non-cacheable blocks placed after the conversation (`dynamicPlacement: 'after-conversation'`). */
  tail: PromptBlock[];
  /**
   * Every non-cacheable block meant for after the conversation (`dynamicPlacement: 'after-conversation'`), whether the
   * builder placed it in `anthropic.messages` or left it in `tail`: what a request built elsewhere (`toRequest`) places.
   */
  afterConversation: PromptBlock[];
  /** Anthropic breakpoints placed, in request order (never more than 4 with the reserved ones). */
  breakpoints: CacheBreakpoint[];
  /** Breakpoints considered but not placed, and why. */
  skipped: { at: BreakpointSite; reason: string }[];
  /** Provider tokens of the stable prefix: tools and cacheable sections. */
  stablePrefixTokens: number;
  /** Provider tokens of the non-cacheable sections. */
  dynamicTokens: number;
  /** The minimum cacheable prefix for the model (Anthropic). */
  minCacheableTokens?: number;
  warnings: string[];
  /** Anthropic: the request fields, markers in place. */
  anthropic?: { system: AnthropicSystemBlock[]; tools?: ToolDefinitionLike[]; messages?: CachedMessageParam[] };
}

/** Anthropic's limit of cache breakpoints per request. */
export const MAX_CACHE_BREAKPOINTS = 4;

/**
 * Minimum cacheable prompt length (tokens) of a Claude model: 1,024 for Sonnet and Opus, 2,048 for Haiku — except the
 * newer models with higher minimums (per Anthropic's prompt-caching table as gateways reproduce it: Opus 4.5/4.6 and
 * Haiku 4.5 4,096, Sonnet 4.6 2,048). A breakpoint on a shorter prefix is accepted by the API and silently not cached.
 */
export function minCacheableTokens(model: string | undefined): number {
  const m = (model ?? '').toLowerCase().replace(/[._]/g, '-');
  if (/haiku-4-[5-9]|haiku-[5-9]/.test(m)) return 4096;
  if (/opus-4-[5-9]/.test(m)) return 4096;
  if (/sonnet-4-[6-9]/.test(m)) return 2048;
  if (m.includes('haiku')) return 2048;
  return 1024;
}

const FAMILY: Record<PromptProvider, ProviderFamily> = { anthropic: 'claude', openai: 'gpt', gemini: 'gemini' };
const EPHEMERAL: CacheControl = { type: 'ephemeral' };
const int = (n: number) => Math.round(n).toLocaleString('en-US');

/** Builds a system prompt from ordered sections; see the module comment for the caching rules. */
export class PromptBuilder {
  private readonly list: PromptSection[] = [];
  private note: PromptSection | undefined;
  private readonly order: 'error' | 'reorder';
  private readonly separator: string;

  constructor(sections: readonly PromptSection[] = [], options: PromptBuilderOptions = {}) {
    this.order = options.order ?? 'error';
    this.separator = options.separator ?? '\n\n';
    for (const s of sections) this.add(s);
  }

  /** The sections in the order given (the context note last, when set). */
  get sections(): readonly PromptSection[] {
    return this.note ? [...this.list, this.note] : [...this.list];
  }

  /**
   * Adds a section after the others. Throws (in `'error'` order mode) when a cacheable section would follow a
   * non-cacheable one, and always when the name is taken.
   */
  add(section: PromptSection): this {
    if (section.name === CONTEXT_NOTE_SECTION)
      throw new AbridgeError(
        'INVALID_INPUT',
        `section name "${CONTEXT_NOTE_SECTION}" is the context note's: set it with contextStatus()`,
      );
    if (this.list.some((s) => s.name === section.name))
      throw new AbridgeError(
        'INVALID_INPUT',
        `section "${section.name}" is already in the prompt: use set() to change its content`,
      );
    if (section.cacheable && this.order === 'error') {
      const dynamic = this.list.find((s) => !s.cacheable);
      if (dynamic) {
        throw new AbridgeError(
          'INVALID_INPUT',
          `section "${section.name}" is cacheable but would follow the non-cacheable section "${dynamic.name}": changing text inside the cached prefix breaks the cache on every change. Add static sections first (base instructions, project rules, memories, skills; then scratchpad and context status), or build with order: 'reorder'.`,
        );
      }
    }
    this.list.push({ ...section });
    return this;
  }

  /** Replaces a section's content (a scratchpad that changed), keeping its place. */
  set(name: string, content: string): this {
    const s = this.list.find((x) => x.name === name);
    if (!s)
      throw new AbridgeError(
        'INVALID_INPUT',
        `no section "${name}" in the prompt (sections: ${this.list.map((x) => x.name).join(', ') || 'none'})`,
      );
    s.content = content;
    return this;
  }

  remove(name: string): this {
    const i = this.list.findIndex((x) => x.name === name);
    if (i >= 0) this.list.splice(i, 1);
    return this;
  }

  /**
   * Sets the context note from how full the context is (see `contextNote`): a non-cacheable section always placed
   * last, in the dynamic part; below the threshold (or with `undefined`) there is none.
   */
  contextStatus(fill: ContextFill | undefined, options: ContextNoteOptions = {}): this {
    this.note = fill === undefined ? undefined : contextNoteSection(fill, options);
    return this;
  }

  build(options: BuildOptions): BuiltPrompt {
    const provider = options.provider;
    if (provider !== 'anthropic' && provider !== 'openai' && provider !== 'gemini')
      throw new AbridgeError(
        'INVALID_INPUT',
        `provider: expected "anthropic", "openai" or "gemini", got ${JSON.stringify(provider)}`,
      );
    const family = FAMILY[provider];
    const counter = options.counter ?? new TokenCounter({ family });
    const ratio = options.ratio ?? FAMILY_RATIO[family];
    const tokens = (counted: number) => Math.round(counted * ratio);
    const warnings: string[] = [];

    // Sections in prompt order: cacheable first. In 'error' mode add() guarantees it; in 'reorder' mode, move.
    const all = this.sections.filter((s) => s.content.trim() !== '');
    const stable = all.filter((s) => s.cacheable);
    const dynamic = all.filter((s) => !s.cacheable);
    const firstDynamic = all.findIndex((s) => !s.cacheable);
    const moved = firstDynamic < 0 ? [] : all.slice(firstDynamic).filter((s) => s.cacheable);
    if (moved.length > 0)
      warnings.push(
        `moved cacheable section${moved.length > 1 ? 's' : ''} ${moved.map((s) => `"${s.name}"`).join(', ')} ahead of non-cacheable "${all[firstDynamic]!.name}", so that the cached prefix does not include changing text`,
      );

    const block = (s: PromptSection): PromptBlock => ({
      name: s.name,
      text: s.content,
      cacheable: s.cacheable,
      tokens: tokens(counter.text(s.content)),
    });
    const stableBlocks = stable.map(block);
    const dynamicBlocks = dynamic.map(block);
    const after = options.dynamicPlacement === 'after-conversation';
    const blocks = after ? stableBlocks : [...stableBlocks, ...dynamicBlocks];
    const tail = after ? dynamicBlocks : [];

    const tools = options.tools ?? [];
    // Deferred tools (Anthropic `defer_loading`) are not in the prompt until searched for: they are no part of the prefix.
    const loaded = tools.map((t, i) => ({ t, i })).filter(({ t }) => t.defer_loading !== true);
    const toolTokens = loaded.length > 0 ? tokens(counter.text(JSON.stringify(loaded.map(({ t }) => t)))) : 0;
    const sum = (bs: readonly PromptBlock[]) => bs.reduce((n, b) => n + b.tokens, 0);
    const stableTokens = sum(stableBlocks);
    const dynamicTokens = sum(dynamicBlocks);

    const out: BuiltPrompt = {
      provider,
      caching: provider === 'anthropic' ? 'explicit' : 'automatic',
      system: blocks.map((b) => b.text).join(this.separator),
      blocks,
      tail,
      afterConversation: [...tail],
      breakpoints: [],
      skipped: [],
      stablePrefixTokens: toolTokens + stableTokens,
      dynamicTokens,
      warnings,
    };
    if (provider !== 'anthropic') return out;

    // ---- Anthropic: explicit breakpoints on the stable prefix.
    const min = options.minCacheableTokens ?? minCacheableTokens(options.model);
    out.minCacheableTokens = min;
    const model = options.model ?? 'this model';
    let budget = MAX_CACHE_BREAKPOINTS - (options.reservedBreakpoints ?? 0);
    const tooShort = (what: string, n: number) =>
      `${what} is ${int(n)} tokens, under the ${int(min)}-token minimum cacheable length of ${model}: Anthropic would not cache it`;
    const place = (at: BreakpointSite, index: number, prefixTokens: number, section?: string): boolean => {
      if (budget <= 0) {
        out.skipped.push({
          at,
          reason: `no breakpoint left (at most ${MAX_CACHE_BREAKPOINTS} per request, ${options.reservedBreakpoints ?? 0} reserved by the caller)`,
        });
        return false;
      }
      budget--;
      const bp: CacheBreakpoint = { at, index, prefixTokens };
      if (section !== undefined) bp.section = section;
      out.breakpoints.push(bp);
      return true;
    };

    // Decide in priority order (system, conversation, tools), so that a short budget keeps the most useful ones.
    let systemAt: number | undefined;
    if (stableBlocks.length === 0)
      out.skipped.push({ at: 'system', reason: 'no cacheable section: nothing in the system prompt is stable' });
    else if (toolTokens + stableTokens < min)
      out.skipped.push({
        at: 'system',
        reason: tooShort(
          toolTokens > 0
            ? 'the cacheable prefix (tools and cacheable sections)'
            : 'the cacheable prefix (cacheable sections)',
          toolTokens + stableTokens,
        ),
      });
    else if (
      place('system', stableBlocks.length - 1, toolTokens + stableTokens, stableBlocks[stableBlocks.length - 1]!.name)
    )
      systemAt = stableBlocks.length - 1;

    let rendered: CachedMessageParam[] | undefined;
    let tailInMessages = false;
    if (options.messages && options.messages.length > 0) {
      rendered = renderAnthropicMessages(options.messages, options.model, warnings);
      const messageTokens = tokens(
        options.messages.reduce((n, m) => n + (m.role === 'system' ? 0 : counter.message(m)), 0),
      );
      const prefix = toolTokens + sum(blocks) + messageTokens;
      const last = rendered[rendered.length - 1];
      const target = last ? lastCacheableBlock(last) : -1;
      if (options.cacheConversation === false) out.skipped.push({ at: 'messages', reason: 'cacheConversation: false' });
      else if (target < 0)
        out.skipped.push({
          at: 'messages',
          reason: 'the last message has no block that can carry cache_control (thinking blocks cannot)',
        });
      else if (prefix < min)
        out.skipped.push({
          at: 'messages',
          reason: tooShort('the conversation prefix (tools, system and messages)', prefix),
        });
      else if (place('messages', rendered.length - 1, prefix)) {
        last!.content[target] = { ...last!.content[target]!, cache_control: EPHEMERAL };
        if (!after && dynamicBlocks.length > 0) {
          warnings.push(
            `non-cacheable section${dynamicBlocks.length > 1 ? 's' : ''} ${dynamicBlocks.map((b) => `"${b.name}"`).join(', ')} sit${dynamicBlocks.length > 1 ? '' : 's'} before the conversation: its cache entry is reused only while ${dynamicBlocks.length > 1 ? 'they stay' : 'it stays'} byte-identical, and each change re-writes the whole conversation at the cache-write price (dynamicPlacement: 'after-conversation' avoids it)`,
          );
        }
      }
      if (after && tail.length > 0) {
        const lastMessage = rendered[rendered.length - 1];
        if (lastMessage?.role === 'user') {
          for (const b of tail) lastMessage.content.push({ type: 'text', text: b.text });
          tailInMessages = true;
        } else
          warnings.push(
            'the conversation ends with an assistant message: the non-cacheable sections are returned in `tail`, not added to it',
          );
      }
    } else if (options.cacheConversation === true) out.skipped.push({ at: 'messages', reason: 'no messages given' });

    let toolsOut: ToolDefinitionLike[] | undefined;
    if (tools.length > 0) {
      toolsOut = tools.map((t) => ({ ...t }));
      if (options.cacheTools === false) out.skipped.push({ at: 'tools', reason: 'cacheTools: false' });
      else if (loaded.length === 0)
        out.skipped.push({ at: 'tools', reason: 'every tool is deferred (defer_loading): none is in the prompt' });
      else if (toolTokens < min)
        out.skipped.push({ at: 'tools', reason: tooShort('the tool definitions', toolTokens) });
      else {
        const i = loaded[loaded.length - 1]!.i;
        if (place('tools', i, toolTokens)) toolsOut[i] = { ...toolsOut[i]!, cache_control: EPHEMERAL };
      }
    }

    if (systemAt !== undefined) blocks[systemAt]!.cache_control = EPHEMERAL;
    const order: Record<BreakpointSite, number> = { tools: 0, system: 1, messages: 2 };
    out.breakpoints.sort((a, b) => order[a.at] - order[b.at]);
    out.anthropic = {
      system: blocks.map((b) =>
        b.cache_control ? { type: 'text', text: b.text, cache_control: EPHEMERAL } : { type: 'text', text: b.text },
      ),
    };
    if (toolsOut) out.anthropic.tools = toolsOut;
    if (rendered) out.anthropic.messages = rendered;
    if (tailInMessages) out.tail = [];
    return out;
  }
}

/** Canonical messages as Anthropic message params: the one Anthropic encoder's (paired tool calls, alternating roles). */
function renderAnthropicMessages(
  messages: readonly Message[],
  model: string | undefined,
  warnings: string[],
): CachedMessageParam[] {
  if (messages.some((m) => m.role === 'system'))
    warnings.push('system messages among `messages` are left out: put their text in a section');
  const body = encodeAnthropicRequest(
    messages.filter((m) => m.role !== 'system'),
    model ? { model } : {},
  );
  return body.messages as CachedMessageParam[];
}

/** Index of the last block of a message that may carry cache_control (not thinking), or -1. */
function lastCacheableBlock(m: CachedMessageParam): number {
  for (let i = m.content.length - 1; i >= 0; i--) {
    const t = m.content[i]!.type;
    if (t !== 'thinking' && t !== 'redacted_thinking') return i;
  }
  return -1;
}
