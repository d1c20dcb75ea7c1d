import { AbridgeError } from '../errors.js';
import { DEFAULT_DEFERRAL_THRESHOLD } from '../defaults.js';
import type { ContextBudget } from '../budget/budget.js';
import type { TokenCounter } from '../tokens/counter.js';

/** Where a tool comes from: the harness itself, an MCP server, or a skill. */
export type ToolKind = 'builtin' | 'mcp' | 'skill';

/** A tool definition as offered to the model. */
export interface DeferrableTool {
  name: string;
  description: string;
  /** JSON Schema (an object schema) of the tool's input. */
  inputSchema: Record<string, unknown>;
  kind: ToolKind;
  /** The MCP server the tool comes from, for MCP tools. */
  server?: string;
}

interface DeferralOptionsBase {
  tools?: readonly DeferrableTool[];
  counter: TokenCounter;
  /** Share of the effective window tool definitions may take before tools are deferred. Default 0.10. */
  threshold?: number;
  /** Clock for `markUsed` (milliseconds). Default `Date.now`. */
  now?: () => number;
}

/** Give either the budget (its effective window is used) or the effective window in tokens. */
export type DeferralOptions = DeferralOptionsBase &
  ({ budget: ContextBudget; effectiveWindow?: never } | { effectiveWindow: number; budget?: never });

export { DEFAULT_DEFERRAL_THRESHOLD };

/** Deferral order: MCP tools go first, then skill tools; built-ins stay. */
const DEFER_ORDER: readonly ToolKind[] = ['mcp', 'skill'];
const KINDS: readonly ToolKind[] = ['builtin', 'mcp', 'skill'];

export interface KindReport {
  /** Tools of this kind registered. */
  tools: number;
  deferred: number;
  /** Tokens of all their definitions. */
  tokens: number;
  /** Tokens of the deferred ones. */
  deferredTokens: number;
}

export interface DeferralReport {
  threshold: number;
  effectiveWindow: number;
  /** Most tokens tool definitions may take: threshold × effective window, rounded down. */
  limit: number;
  /** Tokens of every tool definition (what would be sent without deferral). */
  tokensBefore: number;
  /** Tokens of the definitions sent every turn (those not deferred). */
  tokensAfter: number;
  /** tokensBefore − tokensAfter. */
  savedTokens: number;
  /** Tokens of the definitions promoted for this turn only (sent on top of tokensAfter). */
  promotedTokens: number;
  tools: number;
  deferred: number;
  promoted: number;
  /** True when even with every MCP and skill tool deferred, the definitions exceed the limit (built-ins are never deferred). */
  overLimit: boolean;
  byKind: Record<ToolKind, KindReport>;
}

interface Entry {
  tool: DeferrableTool;
  tokens: number;
  /** Registration order: the tie-breaker of least-recently-used. */
  order: number;
  /** When `markUsed` last saw it; -Infinity when never used (oldest). */
  lastUsed: number;
}

/**
 * Keeps the tool definitions sent with every request under a share of the context window. When the definitions'
 * tokens exceed `threshold` × the effective window, tools are deferred — left out of the request, findable with
 * `tool_search` — until they fit: MCP tools first, then skill tools, least recently used first within each (never
 * used counts as oldest; ties by registration order). Built-in tools are never deferred.
 *
 * The deferred set is recomputed when tools are added or removed, when the window changes, or on `recompute()`; not
 * on every `markUsed`, so the tool list (and a provider's prompt cache) stays stable between those events. A
 * definition is priced as its Anthropic-style JSON (`{name, description, input_schema}`) counted as text.
 */
export class DeferralManager {
  private readonly counter: TokenCounter;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private nextOrder = 0;
  private deferred = new Set<string>();
  private readonly promotedNames = new Set<string>();
  private effectiveWindowTokens: number;
  private thresholdShare: number;
  private revisionCount = 0;

  constructor(options: DeferralOptions) {
    this.counter = options.counter;
    this.now = options.now ?? Date.now;
    this.thresholdShare = checkThreshold(options.threshold ?? DEFAULT_DEFERRAL_THRESHOLD);
    this.effectiveWindowTokens = checkWindow(options.budget ? options.budget.effective : options.effectiveWindow);
    this.register(options.tools ?? []);
    this.recompute();
  }

  /** Changes whenever the tools or the deferred set change (a search index over deferred tools can key on it). */
  get revision(): number {
    return this.revisionCount;
  }

  get threshold(): number {
    return this.thresholdShare;
  }

  get effectiveWindow(): number {
    return this.effectiveWindowTokens;
  }

  /** Most tokens the tool definitions may take. */
  get limit(): number {
    // Rounded down, minus float noise in share × window (0.1 × 30000 is 3000.0000000000005).
    return Math.max(0, Math.floor(this.thresholdShare * this.effectiveWindowTokens + 1e-6));
  }

  /** Adds tools (an MCP server connected). A tool whose name is registered already is replaced, keeping its place and use. */
  addTools(tools: readonly DeferrableTool[]): void {
    this.register(tools);
    this.recompute();
  }

  /** Removes tools by name (unknown names are ignored). Returns how many were removed. */
  removeTools(names: Iterable<string>): number {
    let removed = 0;
    for (const name of names) {
      if (this.entries.delete(name)) removed++;
      this.promotedNames.delete(name);
    }
    if (removed > 0) this.recompute();
    return removed;
  }

  /** Removes every tool of an MCP server (it disconnected). Returns how many were removed. */
  removeServer(server: string): number {
    return this.removeTools(
      [...this.entries.values()]
        .filter((e) => e.tool.kind === 'mcp' && e.tool.server === server)
        .map((e) => e.tool.name),
    );
  }

  /** Takes the effective window from a budget (the model changed, or its settings). */
  setBudget(budget: ContextBudget): void {
    this.setEffectiveWindow(budget.effective);
  }

  setEffectiveWindow(tokens: number): void {
    this.effectiveWindowTokens = checkWindow(tokens);
    this.recompute();
  }

  setThreshold(threshold: number): void {
    this.thresholdShare = checkThreshold(threshold);
    this.recompute();
  }

  /** Records that a tool was used now (the least recently used are deferred first at the next recompute). */
  markUsed(name: string): boolean {
    const e = this.entries.get(name);
    if (!e) return false;
    e.lastUsed = this.now();
    return true;
  }

  /** Recomputes the deferred set from the current tools, window, threshold and use. */
  recompute(): void {
    const limit = this.limit;
    let total = 0;
    for (const e of this.entries.values()) total += e.tokens;
    const next = new Set<string>();
    if (total > limit) {
      for (const kind of DEFER_ORDER) {
        const candidates = [...this.entries.values()]
          .filter((e) => e.tool.kind === kind)
          .sort((a, b) => a.lastUsed - b.lastUsed || a.order - b.order);
        for (const c of candidates) {
          if (total <= limit) break;
          next.add(c.tool.name);
          total -= c.tokens;
        }
      }
    }
    this.deferred = next;
    // A promotion only means something for a deferred tool.
    for (const name of this.promotedNames) if (!next.has(name)) this.promotedNames.delete(name);
    this.revisionCount++;
  }

  /** Every registered tool, in registration order. */
  tools(): DeferrableTool[] {
    return this.ordered().map((e) => e.tool);
  }

  tool(name: string): DeferrableTool | undefined {
    return this.entries.get(name)?.tool;
  }

  /** Tokens of a tool's definition, or undefined for an unknown name. */
  tokensOf(name: string): number | undefined {
    return this.entries.get(name)?.tokens;
  }

  /** The definitions to send this turn: those not deferred, plus those promoted for this turn. Registration order. */
  activeTools(): DeferrableTool[] {
    return this.ordered()
      .filter((e) => !this.deferred.has(e.tool.name) || this.promotedNames.has(e.tool.name))
      .map((e) => e.tool);
  }

  /** The deferred definitions (including any promoted for this turn), in registration order. */
  deferredTools(): DeferrableTool[] {
    return this.ordered()
      .filter((e) => this.deferred.has(e.tool.name))
      .map((e) => e.tool);
  }

  isDeferred(name: string): boolean {
    return this.deferred.has(name);
  }

  /** The names promoted for this turn. */
  promoted(): string[] {
    return this.ordered()
      .filter((e) => this.promotedNames.has(e.tool.name))
      .map((e) => e.tool.name);
  }

  /** The system note telling the model tools were deferred; empty when none are. */
  note(): string {
    const n = this.deferred.size;
    if (n === 0) return '';
    return `[${n} ${n === 1 ? 'tool' : 'tools'} deferred to save context. Use tool_search to find them.]`;
  }

  /**
   * Sends deferred tools with this turn's request only; `nextTurn()` takes them back out. Names that are unknown or
   * not deferred are ignored. Returns the names promoted by this call.
   */
  promote(names: Iterable<string>): string[] {
    const out: string[] = [];
    for (const name of names) {
      if (!this.deferred.has(name) || this.promotedNames.has(name)) continue;
      this.promotedNames.add(name);
      out.push(name);
    }
    return out;
  }

  /** Ends the turn: promotions are cleared. */
  nextTurn(): void {
    this.promotedNames.clear();
  }

  report(): DeferralReport {
    const byKind = Object.fromEntries(
      KINDS.map((k) => [k, { tools: 0, deferred: 0, tokens: 0, deferredTokens: 0 }]),
    ) as Record<ToolKind, KindReport>;
    let before = 0;
    let deferredTokens = 0;
    let promotedTokens = 0;
    for (const e of this.entries.values()) {
      const row = byKind[e.tool.kind];
      row.tools++;
      row.tokens += e.tokens;
      before += e.tokens;
      if (this.deferred.has(e.tool.name)) {
        row.deferred++;
        row.deferredTokens += e.tokens;
        deferredTokens += e.tokens;
      }
      if (this.promotedNames.has(e.tool.name)) promotedTokens += e.tokens;
    }
    const after = before - deferredTokens;
    return {
      threshold: this.thresholdShare,
      effectiveWindow: this.effectiveWindowTokens,
      limit: this.limit,
      tokensBefore: before,
      tokensAfter: after,
      savedTokens: deferredTokens,
      promotedTokens,
      tools: this.entries.size,
      deferred: this.deferred.size,
      promoted: this.promotedNames.size,
      // Deferral stops under the limit unless it ran out of MCP and skill tools.
      overLimit: after > this.limit,
      byKind,
    };
  }

  private ordered(): Entry[] {
    return [...this.entries.values()].sort((a, b) => a.order - b.order);
  }

  private register(tools: readonly DeferrableTool[]): void {
    const seen = new Set<string>();
    for (const tool of tools) {
      checkTool(tool);
      if (seen.has(tool.name))
        throw new AbridgeError('INVALID_INPUT', `duplicate tool name in one registration: ${tool.name}`);
      seen.add(tool.name);
    }
    for (const tool of tools) {
      const old = this.entries.get(tool.name);
      const tokens = definitionTokens(tool, this.counter);
      if (old) {
        old.tool = tool;
        old.tokens = tokens;
      } else this.entries.set(tool.name, { tool, tokens, order: this.nextOrder++, lastUsed: Number.NEGATIVE_INFINITY });
    }
  }
}

/** The definition as a provider receives it (Anthropic shape): what the model reads, and what tool_search returns. */
export function definitionJson(tool: DeferrableTool): {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
} {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
}

/** Tokens of a tool definition: its JSON counted as text. */
export function definitionTokens(tool: DeferrableTool, counter: TokenCounter): number {
  return counter.text(JSON.stringify(definitionJson(tool)));
}

function checkTool(tool: DeferrableTool): void {
  if (typeof tool.name !== 'string' || tool.name === '') throw new AbridgeError('INVALID_INPUT', 'a tool needs a name');
  if (!KINDS.includes(tool.kind))
    throw new AbridgeError('INVALID_INPUT', `tool ${tool.name}: unknown kind ${String(tool.kind)}`);
  if (typeof tool.inputSchema !== 'object' || tool.inputSchema === null || Array.isArray(tool.inputSchema))
    throw new AbridgeError('INVALID_INPUT', `tool ${tool.name}: inputSchema must be a JSON Schema object`);
}

function checkThreshold(t: number): number {
  if (!Number.isFinite(t) || t < 0)
    throw new AbridgeError('INVALID_INPUT', `deferral threshold must be a non-negative share of the window, got ${t}`);
  return t;
}

function checkWindow(w: number | undefined): number {
  if (w === undefined || !Number.isFinite(w) || w < 0)
    throw new AbridgeError(
      'INVALID_INPUT',
      `effective window must be a non-negative number of tokens, got ${String(w)}`,
    );
  return w;
}
