import type { TokenCounter } from '../tokens/counter.js';
import { normalizeModelId, type ModelInfo } from './catalog.js';
import { DEFAULT_RESERVE_CAP } from './defaults.js';
import type { AllocationKey, Amount, BudgetSettings, ComponentId, Level, Thresholds } from './types.js';

/** An item offered for a component: injected whole when it fits, truncated or left out when it does not. */
export interface BudgetItem {
  id: string;
  text: string;
  /** Higher goes first. Default 0; ties keep the given order. */
  rank?: number;
  /** May be cut to fit (default true); false means all or nothing. */
  truncatable?: boolean;
}

export interface FittedComponent {
  component: ComponentId;
  cap: number;
  tokens: number;
  items: { id: string; text: string; tokens: number; truncated: boolean }[];
  omitted: { id: string; tokens: number }[];
  /** For the model or a person: what was left out, when anything was. */
  note?: string;
}

export interface AllocationRow {
  key: AllocationKey;
  cap: number | undefined;
  used: number;
  /** Allocated but not used: flows to the conversation. */
  unused: number;
}

/**
 * The window of one model: what is reserved for the response, the effective window left for the prompt, the levels
 * at which to warn, compact and block, and the caps of the configured allocations.
 */
export class ContextBudget {
  readonly window: number;
  readonly reserve: number;
  readonly effective: number;
  readonly thresholds: Thresholds;

  constructor(
    readonly model: ModelInfo,
    readonly settings: BudgetSettings,
  ) {
    this.window = model.contextWindow;
    const response = settings.allocations.response;
    // A window the agent reported (Codex's model_context_window) is already what it leaves for input: no second reserve.
    const defaultReserve = model.source === 'transcript' ? 0 : Math.min(model.maxOutputTokens, DEFAULT_RESERVE_CAP);
    this.reserve = Math.min(
      Math.floor(this.window / 2),
      settings.reserveTokens ?? (response ? this.amount(response) : defaultReserve),
    );
    this.effective = this.window - this.reserve;
    this.thresholds = { ...settings.thresholds, ...perModelThresholds(settings, model.id) };
  }

  /** Tokens of an amount of this window. */
  amount(a: Amount): number {
    return 'tokens' in a ? a.tokens : Math.floor(a.share * this.window);
  }

  /** Share of the effective window that `used` tokens fill. */
  fill(used: number): number {
    return used / this.effective;
  }

  level(used: number): Level {
    const f = this.fill(used);
    if (f >= this.thresholds.block) return 'block';
    if (f >= this.thresholds.compact) return 'compact';
    if (f >= this.thresholds.warn) return 'warn';
    return 'ok';
  }

  /** Tokens at which each level starts, and the target compaction aims for. */
  get marks(): Record<keyof Thresholds, number> {
    const t = this.thresholds;
    // The first token count at which level() reports the level (ceil, minus float noise in x × effective).
    const at = (x: number) => Math.ceil(x * this.effective - 1e-6);
    return { warn: at(t.warn), compact: at(t.compact), block: at(t.block), target: at(t.target) };
  }

  /** The cap of a component, when one is configured. */
  cap(component: ComponentId): number | undefined {
    const a = this.settings.allocations[component];
    return a ? this.amount(a) : undefined;
  }

  /**
   * Allocations against measured use. What a capped component does not use flows to the conversation (summary and
   * recent turns), whose room is the effective window less what everything else uses.
   */
  allocations(used: Partial<Record<ComponentId, number>>): { rows: AllocationRow[]; conversationRoom: number } {
    const rows: AllocationRow[] = [];
    let others = 0;
    for (const key of Object.keys(this.settings.allocations) as AllocationKey[]) {
      if (key === 'response') continue;
      const cap = this.cap(key);
      const u = used[key] ?? 0;
      rows.push({ key, cap, used: u, unused: cap === undefined ? 0 : Math.max(0, cap - u) });
    }
    for (const [k, v] of Object.entries(used) as [ComponentId, number][])
      if (k !== 'summary' && k !== 'recent') others += Math.min(v, this.cap(k) ?? v);
    rows.push({ key: 'response', cap: this.reserve, used: 0, unused: 0 });
    return { rows, conversationRoom: Math.max(0, this.effective - others) };
  }

  /**
   * Fits items into a component's cap, highest rank first. An item that does not fit whole is truncated to the room
   * left (if it may be) with a marker saying how much was cut; the rest are left out, and the note lists them. Without
   * a cap, everything is kept.
   */
  fit(component: ComponentId, items: readonly BudgetItem[], counter: TokenCounter): FittedComponent {
    const cap = this.cap(component) ?? Number.POSITIVE_INFINITY;
    const ordered = items.map((it, i) => ({ it, i })).sort((a, b) => (b.it.rank ?? 0) - (a.it.rank ?? 0) || a.i - b.i);
    const out: FittedComponent = { component, cap: Number.isFinite(cap) ? cap : -1, tokens: 0, items: [], omitted: [] };
    for (const { it } of ordered) {
      const tokens = counter.text(it.text);
      const room = cap - out.tokens;
      if (tokens <= room) {
        out.items.push({ id: it.id, text: it.text, tokens, truncated: false });
        out.tokens += tokens;
        continue;
      }
      if (it.truncatable !== false && room > 50) {
        const cut = truncateToTokens(it.text, room - 20, counter);
        if (cut.tokens > 0) {
          const text = `${cut.text}\n[… ${tokens - cut.tokens} tokens of ${it.id} left out to fit the ${component} budget]`;
          const t = counter.text(text);
          if (t <= room) {
            out.items.push({ id: it.id, text, tokens: t, truncated: true });
            out.tokens += t;
            out.omitted.push({ id: it.id, tokens: tokens - cut.tokens });
            continue;
          }
        }
      }
      out.omitted.push({ id: it.id, tokens });
    }
    if (out.omitted.length > 0) {
      const whole = out.omitted.filter((o) => !out.items.some((i) => i.id === o.id));
      const cut = out.omitted.filter((o) => out.items.some((i) => i.id === o.id));
      const parts: string[] = [];
      if (whole.length) parts.push(`left out ${whole.map((o) => `${o.id} (${o.tokens} tokens)`).join(', ')}`);
      if (cut.length) parts.push(`truncated ${cut.map((o) => `${o.id} (−${o.tokens} tokens)`).join(', ')}`);
      out.note = `[${component} budget of ${cap} tokens: ${parts.join('; ')}]`;
    }
    return out;
  }
}

/** The longest prefix of `text` (cut at a line or word boundary when one is near) that fits `maxTokens`. */
export function truncateToTokens(
  text: string,
  maxTokens: number,
  counter: TokenCounter,
): { text: string; tokens: number } {
  if (maxTokens <= 0) return { text: '', tokens: 0 };
  const whole = counter.text(text);
  if (whole <= maxTokens) return { text, tokens: whole };
  let lo = 0;
  let hi = text.length;
  // Binary search on length: counting is monotone enough for prefixes.
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (counter.text(text.slice(0, mid)) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  let end = lo;
  const nl = text.lastIndexOf('\n', end);
  if (nl > end * 0.8) end = nl;
  else {
    const sp = text.lastIndexOf(' ', end);
    if (sp > end * 0.9) end = sp;
  }
  const cut = text.slice(0, end);
  return { text: cut, tokens: counter.text(cut) };
}

/** A model's own thresholds, matched by id or alias the way the catalog matches them (normalized). */
function perModelThresholds(settings: BudgetSettings, modelId: string): Partial<Thresholds> {
  const want = normalizeModelId(modelId);
  for (const [key, o] of Object.entries(settings.models)) {
    if (!o.thresholds) continue;
    if (normalizeModelId(key) === want || (o.aliases ?? []).some((a) => normalizeModelId(a) === want))
      return o.thresholds;
  }
  return {};
}
