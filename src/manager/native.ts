/**
 * The provider's own context management, planned by abridge: the provider executes the edits, abridge chooses them,
 * predicts what they leave and keeps the whole history.
 *
 * - **Anthropic tool-result clearing** (`clear_tool_uses_20250919`, beta `context-management-2025-06-27`): the server
 *   replaces the results of the oldest tool uses by a placeholder, keeping the last `keep`. The API is stateless: every
 *   request is edited anew from the full history the client sends. So abridge keeps a *boundary*: the number of
 *   leading tool uses the server clears. Each request asks to keep every tool use after it (`keep` = tool uses − the
 *   boundary), so the cleared prefix, and with it the provider's prompt cache, stays the same from request to request.
 *   The boundary moves only when the prompt as billed reaches the compact mark, and then far enough to bring it to the
 *   target: one cache break buys the most room. Before any clearing, the request carries the same edit as a safety net
 *   (trigger at the compact mark, `clear_at_least` half the way to the target), in case the server counts more than
 *   abridge predicted.
 * - **Anthropic compaction** (`compact_20260112`, beta `compact-2026-01-12`) and **OpenAI Responses compaction**
 *   (`context_management: [{type: 'compaction', compact_threshold}]`): the server summarizes the conversation into a
 *   block or an opaque item that opens its response; sent back, it stands for everything before it. abridge asks for it
 *   when clearing cannot bring the prompt under the compact mark, with a trigger under what it predicts (so that it
 *   fires on this request), and records the result as a compaction marker (the manager does: `recordResponse`).
 *
 * What the server removed comes back in the response (`applied_edits`: tokens and tool uses cleared): the next
 * prediction starts from the server's own figure for the same boundary, plus abridge's count of what the boundary
 * passed since.
 */
import { AbridgeError } from '../errors.js';
import type { AppliedEdit, RequestProvider } from '../formats/wire.js';
import type { Message } from '../model/types.js';
import type { TokenCounter } from '../tokens/counter.js';

/** Whether requests ask the provider to manage the context: `prefer` it (abridge compacts when the provider's edits
 * cannot make the request fit), `only` it (abridge never edits; a request that cannot fit is an error), or `never`. */
export type NativeMode = 'never' | 'prefer' | 'only';
/** One mode for every provider, or one per provider (`{ anthropic: 'prefer' }`); Chat Completions has none. */
export type NativeOption = NativeMode | Partial<Record<RequestProvider, NativeMode>>;

export const CONTEXT_MANAGEMENT_BETA = 'context-management-2025-06-27';
export const COMPACTION_BETA = 'compact-2026-01-12';
/** The least trigger Anthropic's compaction takes (input tokens). */
export const ANTHROPIC_COMPACTION_MIN_TRIGGER = 50_000;
/** Tool uses the server always keeps (Anthropic's own default `keep`). */
export const NATIVE_KEEP_TOOL_USES = 3;
/**
 * With `prefer`, abridge clears on its side what the server clears once that is this many windows: the request as sent
 * stays bounded (a 1M window's: ≈ 4M tokens, under Anthropic's 32 MB) at the price of one cache break each time.
 */
export const NATIVE_CONSOLIDATE_WINDOWS = 3;
/** What abridge assumes the server's placeholder for a cleared result takes, until the server's figures say. */
const PLACEHOLDER_GUESS = '[Tool result cleared]';
/** A trigger this far under the predicted prompt fires on the request whatever the provider's count. */
const FIRE_SHARE = 0.5;

const MODES: readonly NativeMode[] = ['never', 'prefer', 'only'];

/** The mode for `provider` (checked: a clear error naming the key otherwise). Chat Completions offers none: `never`. */
export function nativeModeOf(option: unknown, provider: RequestProvider): NativeMode {
  if (option === undefined) return 'never';
  const check = (v: unknown, key: string): NativeMode => {
    if (!MODES.includes(v as NativeMode))
      throw new AbridgeError(
        'INVALID_INPUT',
        `ContextManager: ${key}: expected one of ${MODES.map((m) => `'${m}'`).join(', ')}, got ${JSON.stringify(v) ?? String(v)}`,
      );
    return v as NativeMode;
  };
  let mode: NativeMode;
  if (typeof option === 'object' && option !== null && !Array.isArray(option)) {
    for (const [k, v] of Object.entries(option)) {
      if (!['anthropic', 'openai-chat', 'openai-responses'].includes(k))
        throw new AbridgeError(
          'INVALID_INPUT',
          `ContextManager: native: unknown provider "${k}" (expected anthropic, openai-responses, openai-chat)`,
        );
      check(v, `native.${k}`);
    }
    mode = (option as Partial<Record<string, NativeMode>>)[provider] ?? 'never';
  } else mode = check(option, 'native');
  return provider === 'openai-chat' ? 'never' : mode;
}

/** What one request asks of the provider, and what abridge predicts it leaves. */
export interface NativePlan {
  /** Anthropic `context_management.edits` / the Responses `context_management` list; empty when none. */
  edits: Record<string, unknown>[];
  /** Anthropic beta headers the request needs (`anthropic-beta`). */
  betas: string[];
  /** Provider tokens the provider's clearing is predicted to remove from this request. */
  freed: number;
  /** The part of `freed` that is abridge's own count, not the server's figure (uses past the boundary it reported). */
  unmeasured?: number;
  /** The least the bill can be by the provider's clearing (every tool use but the last few cleared). */
  floor?: number;
  /** Leading tool uses it clears (the boundary). */
  cleared: number;
  /** The request asks the provider to compact now (the prediction is of the prompt it compacts). */
  compacting: boolean;
}

interface ToolUse {
  callId: string;
  /** Counted tokens the server's clearing of its result removes (the result less the placeholder). */
  freed: number;
}

/**
 * Anthropic's tool-result clearing, planned from the view: which leading tool uses the server clears, and how many
 * provider tokens that removes. The view is read incrementally (a new array — a compaction's — is read afresh).
 */
export class ClearingPlanner {
  private view: readonly Message[] | undefined;
  private seen = 0;
  private uses: ToolUse[] = [];
  private byCall = new Map<string, number>();
  private sums: number[] | undefined;
  /** Leading tool uses the server clears: moved forward only when room is needed (see the module's comment). */
  private boundary = 0;
  /** The server's own figure for clearing `count` leading tool uses (provider tokens), from its last response. */
  private known: { count: number; tokens: number } | undefined;
  /**
   * What the server removed per token abridge counted in those results (their tokenizer's, less its placeholder), from
   * its last figure: kept across views — it is the provider's, not the conversation's.
   */
  private scale = 1;
  private readonly placeholder: number;

  constructor(private readonly counter: TokenCounter) {
    this.placeholder = counter.text(PLACEHOLDER_GUESS);
  }

  /** Leading tool uses cleared now. */
  get cleared(): number {
    return this.boundary;
  }

  /**
   * The edit for a request whose messages are `view` and whose prompt abridge predicts at `sent` provider tokens before
   * any clearing: keeps the boundary while the prompt as billed stays under `compactAt`, else moves it until the billed
   * prompt is at most `target` (never into the last `keep` tool uses).
   */
  plan(
    view: readonly Message[],
    o: { sent: number; compactAt: number; target: number; ratio: number; keep?: number },
  ): { edit?: Record<string, unknown>; cleared: number; freed: number; unmeasured?: number; floor: number } {
    this.sync(view);
    const total = this.uses.length;
    const most = Math.max(0, total - (o.keep ?? NATIVE_KEEP_TOOL_USES));
    const billedAt = (k: number) => o.sent - this.freedBy(k, o.ratio);
    // The least the bill can be by clearing: what a provider's compaction is weighed against.
    const floor = billedAt(most);
    let n = Math.min(this.boundary, most);
    if (billedAt(n) >= o.compactAt) {
      let k = n;
      while (k < most && billedAt(k) > o.target) k++;
      n = k;
    }
    this.boundary = n;
    if (n > 0)
      return {
        edit: {
          type: 'clear_tool_uses_20250919',
          // Far under the server's count of the prompt sent: the edit fires, and `keep` says which uses it clears.
          trigger: { type: 'input_tokens', value: Math.max(1, Math.floor(o.sent * FIRE_SHARE)) },
          keep: { type: 'tool_uses', value: total - n },
        },
        cleared: n,
        freed: this.freedBy(n, o.ratio),
        unmeasured: this.freedBy(n, o.ratio) - (this.known && this.known.count <= n ? this.known.tokens : 0),
        floor,
      };
    if (most === 0) return { cleared: 0, freed: 0, floor };
    // Nothing cleared yet: a safety net for a server that counts more than predicted — at the compact mark it clears
    // down to about the target, and only when that buys at least half the way there.
    const at = Math.max(o.sent, o.compactAt);
    let k = 0;
    while (k < most && at - this.freedBy(k, o.ratio) > o.target) k++;
    if (k === 0) return { cleared: 0, freed: 0, floor };
    return {
      edit: {
        type: 'clear_tool_uses_20250919',
        trigger: { type: 'input_tokens', value: Math.max(1, Math.floor(o.compactAt)) },
        keep: { type: 'tool_uses', value: total - k },
        clear_at_least: { type: 'input_tokens', value: Math.max(1, Math.floor((o.compactAt - o.target) / 2)) },
      },
      cleared: 0,
      freed: 0,
      floor,
    };
  }

  /** What the server said it did: its boundary and its own figure for it anchor the next plan. */
  observe(edits: readonly AppliedEdit[] | undefined): void {
    const e = edits?.find((x) => x.type === 'clear_tool_uses_20250919');
    if (!e || !e.clearedToolUses) return;
    this.boundary = e.clearedToolUses;
    this.known = { count: e.clearedToolUses, tokens: e.clearedInputTokens };
  }

  /** The view changed under the boundary (abridge compacted, or the provider did): nothing is cleared any more. */
  reset(): void {
    this.view = undefined;
    this.boundary = 0;
    this.known = undefined;
  }

  /** Provider tokens removed by clearing the first `k` tool uses: the server's figure, and abridge's count past it. */
  private freedBy(k: number, ratio: number): number {
    if (k <= 0) return 0;
    const sums = this.prefixSums();
    const known = this.known;
    if (known && known.count <= k && known.count <= this.uses.length) {
      // What the server removed per counted token of these results (their tokenizer's, less its placeholder) scales
      // abridge's count of the next ones.
      const counted = ratio * sums[known.count]!;
      if (counted > 0) this.scale = Math.min(2, Math.max(0.5, known.tokens / counted));
      return known.tokens + ratio * this.scale * (sums[k]! - sums[known.count]!);
    }
    return ratio * this.scale * sums[k]!;
  }

  private prefixSums(): number[] {
    if (!this.sums) {
      const sums = [0];
      for (const u of this.uses) sums.push(sums[sums.length - 1]! + u.freed);
      this.sums = sums;
    }
    return this.sums;
  }

  /** Reads what the view holds beyond what was read (all of it, when it is another array). */
  private sync(view: readonly Message[]): void {
    if (view !== this.view || view.length < this.seen) {
      // Another view (a compaction's): its leading tool uses are not those the boundary counted.
      this.view = view;
      this.seen = 0;
      this.uses = [];
      this.byCall.clear();
      this.known = undefined;
      this.boundary = 0;
    }
    if (this.seen === view.length) return;
    for (let i = this.seen; i < view.length; i++) {
      for (const p of view[i]!.parts) {
        if (p.type === 'tool-call' && view[i]!.role === 'assistant') {
          this.byCall.set(p.id, this.uses.length);
          this.uses.push({ callId: p.id, freed: 0 });
        } else if (p.type === 'tool-result') {
          const at = this.byCall.get(p.callId);
          if (at !== undefined) this.uses[at]!.freed = Math.max(0, this.counter.part(p) - this.placeholder);
        }
      }
    }
    this.seen = view.length;
    this.sums = undefined;
  }
}

/**
 * Whether the view opens with a compaction block of Anthropic's: every request that sends it back needs its beta. A
 * provider's compaction is always the view's first message (the working session restarts from it), so only that one
 * is looked at: a turn costs its new messages, not the view.
 */
export function holdsAnthropicCompaction(view: readonly Message[]): boolean {
  const first = view[0];
  return first?.parts.some((p) => p.type === 'compaction' && p.marker.native?.provider === 'anthropic') === true;
}

/**
 * The compaction edit that fires on this request (its trigger under the prompt the provider will count), for a prompt
 * abridge predicts at `billed` provider tokens; undefined when Anthropic's least trigger is above it.
 */
export function anthropicCompactionEdit(billed: number): Record<string, unknown> | undefined {
  if (billed < ANTHROPIC_COMPACTION_MIN_TRIGGER) return undefined;
  const trigger = Math.max(ANTHROPIC_COMPACTION_MIN_TRIGGER, Math.floor(billed * 0.9));
  return { type: 'compact_20260112', trigger: { type: 'input_tokens', value: trigger } };
}

/**
 * The Responses compaction entry: at the compact mark while the prompt is under it (a safety net), under the prompt
 * when abridge wants the provider to compact this request.
 */
export function responsesCompaction(sent: number, compactAt: number, now: boolean): Record<string, unknown> {
  const threshold = now ? Math.floor(sent * 0.9) : Math.floor(compactAt);
  return { type: 'compaction', compact_threshold: Math.max(1, threshold) };
}
