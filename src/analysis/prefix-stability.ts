/**
 * Prefix stability: how much of each request's prompt a provider's prompt cache could serve, replaying a transcript
 * request by request — as it was recorded, and as it would have been with abridge compacting it.
 *
 * A provider caches prompt prefixes: the part of a request that is byte-identical to the start of an earlier request
 * (same model) is read from cache at the cache-read price; the rest is written to cache (Anthropic: at the cache-write
 * price, 1.25× input; OpenAI and Gemini: at the input price). An agent that only appends keeps almost its whole prompt
 * cached; a compaction rewrites the context from the earliest message it changed, and everything from there on is new.
 *
 * For each request (the requests of `replaySession`: every provider response that reported usage):
 * - the prompt is what the model saw then (`viewOf` the entries before it: the transcript's own compaction markers
 *   apply), each message serialized in the provider's wire shape (Anthropic blocks, OpenAI chat messages, Gemini
 *   parts), after the harness prefix (the system prompt and tools the transcript does not record), which counts as
 *   stable — at least as large as the model's first request showed it (reported prompt − its counted messages);
 * - `stable` is the longest common prefix with the previous request of the same model (caches are per model; a request
 *   that reported no usage still counts as sent), in tokens: every leading message serialized identically, plus the
 *   identical leading characters of the first differing message (pro rata of its tokens); `fresh` is the rest;
 * - the prompt size is the provider's report; with abridge's compaction, that report less what compaction removed (the
 *   same usage-anchored arithmetic as the tracker's prediction). Token figures of messages are counted tokens scaled by
 *   the session's learned ratio (provider tokens per counted token).
 *
 * Scenarios:
 * - `none`: no compaction by abridge — the transcript as recorded (an agent's own compactions stay: they are what the
 *   provider received);
 * - `compacted`: abridge's default compaction in place of the agent's own, as an agent using abridge runs it
 *   (ContextManager.prepare): before each request, when the predicted prompt is at or above the compact level of the
 *   model's budget, `compact()` runs on the session so far, aiming at the budget's target. The agent's own compaction
 *   records are left out of this world (two compactors on one context is not a setup anyone runs). Predictions after
 *   the contexts part anchor on the compacted context.
 *
 * Costs use the catalog's prices per million tokens: cached = stable × cache read + fresh × cache write (input price
 * when the provider has no cache-write premium); uncached = prompt × input. The provider's own report is beside them:
 * its cache-read share (Σ cacheRead / Σ (input + cacheRead + cacheWrite)) and what its usage cost.
 *
 * Not modelled: cache lifetime (a request after a pause of more than 5 minutes finds nothing cached), Anthropic's
 * breakpoint granularity (a prefix is only reused up to a marked block), and the minimum cacheable length.
 */
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { ContextBudget } from '../budget/budget.js';
import { ModelCatalog, type ModelPricing } from '../budget/catalog.js';
import { requestPrices, usageCost } from '../budget/cost.js';
import type { BudgetSettings } from '../budget/types.js';
import { compact, type CompactOptions } from '../compaction/compact.js';
import { encodeAnthropicMessage } from '../formats/anthropic.js';
import { encodeOpenaiChatMessage } from '../formats/openai-chat.js';
import { systemText } from '../formats/request-body.js';
import { conversationEntries } from '../model/branch.js';
import { argumentsText, promptTokens } from '../model/parts.js';
import type { CompactionMarker, Entry, FormatId, Message, Part, Session, Usage } from '../model/types.js';
import { viewOf, type AbridgeMarker, type ViewItem } from '../model/view.js';
import type { TokenCounter } from '../tokens/counter.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import type { ProviderFamily } from '../tokens/family.js';
import { startsResponse } from '../tokens/predict.js';
import { trackerFor } from '../tokens/replay.js';

export interface PrefixStabilityOptions {
  settings?: BudgetSettings;
  catalog?: ModelCatalog;
  exact?: ExactTokenizer;
  /** Tokens of the harness' unrecorded system prompt and tools (default: per agent, as everywhere in abridge). */
  prefixTokens?: number;
  /** Seed ratios of provider tokens per counted token (default FAMILY_RATIO). */
  familyRatio?: Partial<Record<ProviderFamily, number>>;
  /** Run the compaction scenario (default true); false leaves `compacted` equal to `none`. */
  compaction?: boolean;
  /** Options for `compact()` besides its target (default: abridge's defaults). */
  compactOptions?: Omit<CompactOptions, 'target' | 'exact' | 'prefixTokens' | 'force'>;
}

export interface ScenarioRow {
  /** Prompt tokens of the request. */
  prompt: number;
  /** Tokens byte-identical to the previous request's prompt prefix (harness prefix included). */
  stable: number;
  /** The rest: what the cache does not hold. */
  fresh: number;
  /** Where the prefix broke, when the previous request's prompt is not a prefix of this one: view position and entry. */
  breakAt?: BreakPoint;
  /** Prompt cost in dollars, when the catalog prices the model. */
  cost?: { cached: number; uncached: number };
}

export interface PrefixRow {
  /** 0-based ordinal among the requests with usage. */
  request: number;
  /** Entry index of the message that carried the usage. */
  entry: number;
  line?: number;
  model: string;
  reported: { input: number; cacheRead: number; cacheWrite: number; prompt: number; cost?: number };
  none: ScenarioRow;
  compacted: ScenarioRow;
  /** Number of the abridge compaction that ran just before this request, if one did. */
  compaction?: number;
}

export interface CompactionCacheCost {
  number: number;
  /** Request ordinal and entry before which it ran. */
  request: number;
  entry: number;
  model: string;
  /** Predicted prompt tokens before and after. */
  before: number;
  after: number;
  strategies: string[];
  /** The earliest message the compaction changed (view position in the request after it, and its entry). */
  breakAt?: BreakPoint;
  /** Tokens of the prefix still cached in the request after it, and tokens written anew. */
  keptTokens: number;
  rewrittenTokens: number;
  /** Tokens rewritten beyond what that request would have written without abridge's compaction. */
  extraWriteTokens: number;
  /** Cost of writing `rewrittenTokens` to cache, and of the extra part alone (dollars; when priced). */
  writeCost?: number;
  extraCost?: number;
}

export interface ScenarioTotals {
  requests: number;
  prompt: number;
  stable: number;
  fresh: number;
  /** stable / prompt. */
  stableShare: number;
  /** Sums over the priced requests. */
  cost?: { cached: number; uncached: number };
}

export interface PrefixStabilityReport {
  format: FormatId;
  counting: 'exact' | 'estimate';
  /** Compactions the agent itself recorded (they shape `none`; `compacted` replaces them with abridge's). */
  agentCompactions: number;
  rows: PrefixRow[];
  compactions: CompactionCacheCost[];
  totals: {
    none: ScenarioTotals;
    compacted: ScenarioTotals;
    reported: {
      input: number;
      cacheRead: number;
      cacheWrite: number;
      prompt: number;
      cacheReadShare: number;
      cost?: number;
    };
    compactions: {
      count: number;
      rewrittenTokens: number;
      extraWriteTokens: number;
      writeCost?: number;
      extraCost?: number;
    };
    /** Requests whose model the catalog has no price for (left out of the cost sums). */
    unpriced: number;
  };
}

interface Item {
  key: string;
  tokens: number;
}

/** Where a prompt stopped matching the previous one: its view position, the entry there, or a compaction summary. */
export interface BreakPoint {
  position: number;
  entry?: number;
  summary?: boolean;
}

interface Prefix {
  /** Counted tokens of the common prefix. */
  counted: number;
  breakAt?: BreakPoint;
}

interface Pending {
  model: string;
  ratio: number;
  predicted: number;
  countedTracker: number;
  countedA: number;
  countedB: number;
  lcpA: Prefix;
  lcpB: Prefix;
  /** The compacted session has not diverged from the transcript yet. */
  same: boolean;
  compaction?: CompactionCacheCost;
  reported: boolean;
  /** The usage entries of this response get in the compacted session: the compacted prompt. */
  usageB?: Usage;
}

/** The per-request prefix stability of a session, with and without abridge's compaction; see the module comment. */
export async function prefixStability(
  session: Session,
  options: PrefixStabilityOptions = {},
): Promise<PrefixStabilityReport> {
  const settings = options.settings ?? DEFAULT_BUDGET_SETTINGS;
  const catalog = options.catalog ?? new ModelCatalog(settings);
  const branch = conversationEntries(session);
  const replay = {
    ...(options.exact ? { exact: options.exact } : {}),
    ...(options.prefixTokens !== undefined
      ? { prefixTokens: options.prefixTokens }
      : settings.prefixTokens !== undefined
        ? { prefixTokens: settings.prefixTokens }
        : {}),
    ...(options.familyRatio ? { familyRatio: options.familyRatio } : {}),
  };
  const tracker = trackerFor(session, branch, replay);
  const wire = new WireItems(tracker.counter);
  const compacting = options.compaction !== false;

  // The compacted world: the same entries, re-indexed into a linear session that compact() appends markers to.
  const work: Session = { format: session.format, info: { ...session.info }, entries: [], problems: [] };
  if (session.extra) work.extra = session.extra;
  const copied: number[] = []; // original index of each work entry that came from the transcript (ascending)
  const workIndexOf: number[] = [];
  let diverged = false;

  const seen: Entry[] = [];
  const prevA = new Map<string, Item[]>();
  const prevB = new Map<string, Item[]>();
  const harness = new Map<string, number>();
  const rows: PrefixRow[] = [];
  const compactions: CompactionCacheCost[] = [];
  const priceOf = pricing(catalog);
  const budgets = new Map<string, ContextBudget>();
  let provider: string | undefined;
  let reportedWindow: number | undefined;
  let lastModel: string | undefined;
  let previousAssistant: Message | undefined;
  let pending: Pending | undefined;
  let unattached: CompactionCacheCost[] = [];

  const budgetFor = (model: string): ContextBudget => {
    const key = `${model}\u0000${reportedWindow ?? ''}`;
    let b = budgets.get(key);
    if (!b) {
      const lookup: { provider?: string; reportedWindow?: number } = {};
      if (provider) lookup.provider = provider;
      if (reportedWindow) lookup.reportedWindow = reportedWindow;
      b = new ContextBudget(catalog.lookup(model, lookup), settings);
      budgets.set(key, b);
    }
    return b;
  };

  const startRequest = async (m: Message, entry: Entry): Promise<Pending> => {
    const model = m.model ?? lastModel ?? 'unknown';
    const prediction = tracker.predict(m.model);
    const ratio = prediction.ratio;
    const viewA = viewOf(seen);
    const itemsA = wire.items(viewA);
    const countedA = total(itemsA);
    let viewB = diverged ? viewOf(work.entries) : viewA;
    let itemsB = diverged ? wire.items(viewB) : itemsA;
    let countedB = total(itemsB);
    const predictedB = (counted: number) => Math.round(prediction.predicted - ratio * (countedA - counted));
    let done: CompactionCacheCost | undefined;
    if (compacting) {
      // What ContextManager.prepare() does before a request: at or above the compact level, compact to the target.
      const budget = budgetFor(model);
      const before = predictedB(countedB);
      const level = budget.level(before);
      if (level === 'compact' || level === 'block') {
        const result = await compact(work, {
          ...options.compactOptions,
          target: budget.marks.target,
          force: true,
          ...(options.exact ? { exact: options.exact } : {}),
          ...(replay.prefixTokens !== undefined ? { prefixTokens: replay.prefixTokens } : {}),
        });
        if (result.entry) {
          diverged = true;
          viewB = viewOf(work.entries);
          itemsB = wire.items(viewB);
          countedB = total(itemsB);
          const strategies = result.strategiesRun.map((x) => x.name);
          done = {
            number: compactions.length + 1,
            request: rows.length,
            entry: entry.index,
            model,
            before,
            after: predictedB(countedB),
            strategies,
            keptTokens: 0,
            rewrittenTokens: 0,
            extraWriteTokens: 0,
          };
          compactions.push(done);
          unattached.push(done);
        }
      }
    }
    const lcpA = commonPrefix(prevA.get(model), itemsA, viewA);
    const lcpB = diverged ? commonPrefix(prevB.get(model), itemsB, viewB) : lcpA;
    prevA.set(model, itemsA);
    prevB.set(model, itemsB);
    const p: Pending = {
      model,
      ratio,
      predicted: prediction.predicted,
      countedTracker: tracker.contextTokens,
      countedA,
      countedB,
      lcpA,
      lcpB,
      same: !diverged,
      reported: false,
    };
    if (done) p.compaction = done;
    return p;
  };

  const pushWork = (e: Entry): void => {
    if (compacting && isAgentCompaction(e)) {
      // abridge compacts in place of the agent: the agent's own markers and summaries are not part of this world.
      diverged = true;
      return;
    }
    const copy: Entry = { index: work.entries.length, kind: e.kind };
    if (e.sourceType !== undefined) copy.sourceType = e.sourceType;
    if (e.timestamp !== undefined) copy.timestamp = e.timestamp;
    if (e.line !== undefined) copy.line = e.line;
    if (e.model) copy.model = e.model;
    if (e.usage) copy.usage = e.usage;
    if (e.message) {
      // Once the contexts differ, the transcript's usage describes a prompt the compacted session never sent: the
      // compacted session gets the prompt it would have sent (what its own predictions then anchor on).
      copy.message = diverged && e.message.usage ? withUsage(e.message, pending?.usageB) : e.message;
    }
    if (e.compaction) copy.compaction = remapMarker(e.compaction, copied, workIndexOf, work.entries.length);
    workIndexOf[e.index] = copy.index;
    copied.push(e.index);
    work.entries.push(copy);
  };

  for (const e of branch) {
    const m = e.message;
    const w = m?.usage?.contextWindow ?? e.usage?.contextWindow;
    if (w) reportedWindow = w;
    if (m?.role === 'assistant') {
      if (m.provider) provider = m.provider;
      if (startsResponse(m, previousAssistant)) pending = await startRequest(m, e);
      if (m.usage && pending && !pending.reported && promptTokens(m.usage) > 0) {
        // The harness prefix (system prompt and tools the transcript does not hold) as the model's first request shows it.
        if (!harness.has(pending.model))
          harness.set(pending.model, Math.max(0, Math.round(promptTokens(m.usage) - pending.ratio * pending.countedA)));
        const row = rowOf(e, m.usage, pending, harness.get(pending.model)!, rows.length, priceOf(pending.model));
        if (pending.compaction) row.compaction = pending.compaction.number;
        for (const c of unattached) attach(c, row, priceOf(pending.model));
        unattached = [];
        rows.push(row);
        if (diverged)
          pending.usageB = { input: row.compacted.prompt, output: m.usage.output, cacheRead: 0, cacheWrite: 0 };
        tracker.observe(m.usage, pending.model, e.index, pending.countedTracker);
        pending.reported = true;
      }
      if (m.model) lastModel = m.model;
      previousAssistant = m;
    } else if (m) previousAssistant = undefined;
    tracker.push(e);
    seen.push(e);
    pushWork(e);
  }

  const agentCompactions = branch.filter((e) => e.compaction && e.compaction.source !== 'abridge').length;
  return {
    format: session.format,
    counting: tracker.counter.exact ? 'exact' : 'estimate',
    agentCompactions,
    rows,
    compactions,
    totals: totalsOf(rows, compactions),
  };
}

/**
 * A request's row: both scenarios, from the state at its start and the usage the provider reported. Fresh tokens are
 * the view's tokens past the common prefix, scaled by the session's ratio (provider tokens per counted token); the
 * harness prefix, as the model's first request showed it, is always stable. The compacted prompt is the reported one
 * less what compaction removed, scaled alike — the tracker's own anchored arithmetic, which also carries what the
 * transcript does not show (a harness that re-sends its instructions after its own compaction, hidden reminders).
 */
function rowOf(
  e: Entry,
  usage: Usage,
  p: Pending,
  harness: number,
  ordinal: number,
  price: ModelPricing | undefined,
): PrefixRow {
  const prompt = promptTokens(usage);
  const scenario = (size: number, counted: number, lcp: Prefix): ScenarioRow => {
    const fresh = Math.max(0, Math.min(size - Math.min(harness, size), Math.round(p.ratio * (counted - lcp.counted))));
    const row: ScenarioRow = { prompt: size, stable: size - fresh, fresh };
    if (lcp.breakAt) row.breakAt = lcp.breakAt;
    if (price)
      row.cost = {
        cached: usageCost({ input: 0, cacheRead: row.stable, cacheWrite: fresh, output: 0 }, price),
        uncached: usageCost({ input: size, cacheRead: 0, cacheWrite: 0, output: 0 }, price),
      };
    return row;
  };
  const none = scenario(prompt, p.countedA, p.lcpA);
  const compacted = p.same
    ? { ...none }
    : scenario(Math.max(0, Math.round(prompt - p.ratio * (p.countedA - p.countedB))), p.countedB, p.lcpB);
  const reported: PrefixRow['reported'] = {
    input: usage.input,
    cacheRead: usage.cacheRead,
    cacheWrite: usage.cacheWrite,
    prompt,
  };
  if (price) reported.cost = usageCost({ ...usage, output: 0 }, price); // the prompt's cost: output is left out
  const row: PrefixRow = { request: ordinal, entry: e.index, model: p.model, reported, none, compacted };
  if (e.line !== undefined) row.line = e.line;
  return row;
}

/** What a compaction cost in cache: the request after it re-writes everything from the earliest changed message. */
function attach(c: CompactionCacheCost, row: PrefixRow, price: ModelPricing | undefined): void {
  if (row.compacted.breakAt) c.breakAt = row.compacted.breakAt;
  c.keptTokens = row.compacted.stable;
  c.rewrittenTokens = row.compacted.fresh;
  c.extraWriteTokens = Math.max(0, row.compacted.fresh - row.none.fresh);
  if (price) {
    const cacheWrite = requestPrices(price, row.compacted.prompt).cacheWrite; // the rate of the request that re-writes
    c.writeCost = (c.rewrittenTokens * cacheWrite) / 1e6;
    c.extraCost = (c.extraWriteTokens * cacheWrite) / 1e6;
  }
}

function totalsOf(
  rows: readonly PrefixRow[],
  compactions: readonly CompactionCacheCost[],
): PrefixStabilityReport['totals'] {
  const scenario = (pick: (r: PrefixRow) => ScenarioRow): ScenarioTotals => {
    const t: ScenarioTotals = { requests: rows.length, prompt: 0, stable: 0, fresh: 0, stableShare: 0 };
    let cost: { cached: number; uncached: number } | undefined;
    for (const r of rows) {
      const s = pick(r);
      t.prompt += s.prompt;
      t.stable += s.stable;
      t.fresh += s.fresh;
      if (s.cost) {
        cost ??= { cached: 0, uncached: 0 };
        cost.cached += s.cost.cached;
        cost.uncached += s.cost.uncached;
      }
    }
    t.stableShare = t.prompt > 0 ? t.stable / t.prompt : 0;
    if (cost) t.cost = cost;
    return t;
  };
  const reported: PrefixStabilityReport['totals']['reported'] = {
    input: 0,
    cacheRead: 0,
    cacheWrite: 0,
    prompt: 0,
    cacheReadShare: 0,
  };
  for (const r of rows) {
    reported.input += r.reported.input;
    reported.cacheRead += r.reported.cacheRead;
    reported.cacheWrite += r.reported.cacheWrite;
    reported.prompt += r.reported.prompt;
    if (r.reported.cost !== undefined) reported.cost = (reported.cost ?? 0) + r.reported.cost;
  }
  reported.cacheReadShare = reported.prompt > 0 ? reported.cacheRead / reported.prompt : 0;
  const c: PrefixStabilityReport['totals']['compactions'] = {
    count: compactions.length,
    rewrittenTokens: 0,
    extraWriteTokens: 0,
  };
  for (const x of compactions) {
    c.rewrittenTokens += x.rewrittenTokens;
    c.extraWriteTokens += x.extraWriteTokens;
    if (x.writeCost !== undefined) c.writeCost = (c.writeCost ?? 0) + x.writeCost;
    if (x.extraCost !== undefined) c.extraCost = (c.extraCost ?? 0) + x.extraCost;
  }
  return {
    none: scenario((r) => r.none),
    compacted: scenario((r) => r.compacted),
    reported,
    compactions: c,
    unpriced: rows.filter((r) => r.none.cost === undefined).length,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Prices

/**
 * A model's prices, memoized; a provider without a cache price charges the input price for that part (`usageCost`
 * with no cache TTL), and a prompt above a long-context threshold is billed whole at the tier's rates.
 */
function pricing(catalog: ModelCatalog): (model: string) => ModelPricing | undefined {
  const memo = new Map<string, ModelPricing | undefined>();
  return (model) => {
    if (!memo.has(model)) memo.set(model, catalog.lookup(model).pricing);
    return memo.get(model);
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The longest common prefix of two requests

function total(items: readonly Item[]): number {
  let n = 0;
  for (const it of items) n += it.tokens;
  return n;
}

/**
 * Counted tokens `cur` shares with `prev` from the start: whole messages while they serialize identically, then the
 * common leading characters of the first differing message, pro rata of its tokens. `breakAt` is set when `prev` is
 * not a prefix of `cur` (something before the end changed).
 */
export function commonPrefix(
  prev: readonly Item[] | undefined,
  cur: readonly Item[],
  view?: readonly ViewItem[],
): Prefix {
  if (!prev) return { counted: 0 };
  let i = 0;
  let counted = 0;
  while (i < prev.length && i < cur.length && prev[i]!.key === cur[i]!.key) counted += cur[i++]!.tokens;
  if (i === prev.length) return { counted };
  if (i < cur.length) {
    const a = prev[i]!.key;
    const b = cur[i]!.key;
    let c = 0;
    const n = Math.min(a.length, b.length);
    while (c < n && a.charCodeAt(c) === b.charCodeAt(c)) c++;
    counted += Math.floor((cur[i]!.tokens * c) / b.length);
  }
  const breakAt: BreakPoint = { position: i };
  const item = view?.[i];
  if (item?.entry !== undefined) breakAt.entry = item.entry;
  if (item?.covers) breakAt.summary = true;
  return { counted, breakAt };
}

// ---------------------------------------------------------------------------------------------------------------------
// Messages as the provider receives them

/** Each view message serialized in its provider's wire shape, with its counted tokens; memoized per message object. */
class WireItems {
  private readonly memo = new WeakMap<Message, Item>();

  constructor(private readonly counter: TokenCounter) {}

  items(view: readonly ViewItem[]): Item[] {
    return view.map((v) => this.item(v.message));
  }

  private item(m: Message): Item {
    let it = this.memo.get(m);
    if (!it) {
      it = {
        key: JSON.stringify(wireMessage(m, this.counter.family), mediaByReference),
        tokens: this.counter.message(m),
      };
      this.memo.set(m, it);
    }
    return it;
  }
}

/**
 * A canonical message in the shape its provider receives it: Anthropic message params (the Anthropic encoder's, one
 * message alone; a system message as its system text), OpenAI chat messages (tool results one message each), Gemini
 * contents with parts.
 */
export function wireMessage(m: Message, family: ProviderFamily): unknown {
  if (family === 'claude') return m.role === 'system' ? { system: systemText(m) } : encodeAnthropicMessage(m);
  if (family === 'gemini') {
    const parts = m.parts.map(geminiPart).filter((p) => p !== undefined);
    return { role: m.role === 'assistant' ? 'model' : m.role === 'system' ? 'system' : 'user', parts };
  }
  // OpenAI chat shape (also for unknown providers: most speak it), from the one Chat Completions encoder.
  return encodeOpenaiChatMessage(m);
}

/**
 * JSON replacer for prefix keys: inline media (base64 `data`, data URLs) by length and ends, not content, so that a key
 * stays small; two different images of one length and ends would compare equal, which the analysis accepts.
 */
function mediaByReference(key: string, value: unknown): unknown {
  if (typeof value !== 'string' || value.length <= 256) return value;
  if (key === 'data' || key === 'url' || (key === 'image_url' && value.startsWith('data:')))
    return `[${value.length} chars ${value.slice(0, 24)}…${value.slice(-24)}]`;
  return value;
}

function media(p: Part): Record<string, unknown> {
  return p.type === 'image' || p.type === 'file'
    ? { media_type: p.mediaType, bytes: p.byteSize ?? p.data?.length, url: p.url }
    : {};
}

function resultText(content: readonly Part[]): string {
  return content.map(partText).join('\n');
}

function partText(p: Part): string {
  switch (p.type) {
    case 'text':
      return p.text;
    case 'thinking':
      return p.redacted ? '' : p.text;
    case 'compaction':
      return p.marker.summary;
    case 'tool-call':
      return `${p.name} ${argumentsText(p.arguments)}`;
    case 'tool-result':
      return resultText(p.content);
    case 'image':
    case 'file':
      return `[${p.type} ${JSON.stringify(media(p))}]`;
  }
}

function geminiPart(p: Part): unknown {
  switch (p.type) {
    case 'text':
      return { text: p.text };
    case 'compaction':
      return { text: p.marker.summary };
    case 'thinking':
      return p.redacted
        ? undefined
        : { thought: true, text: p.text, ...(p.signature ? { thoughtSignature: p.signature } : {}) };
    case 'tool-call':
      return { functionCall: { name: p.name, args: p.arguments } };
    case 'tool-result':
      return { functionResponse: { name: p.toolName ?? p.callId, response: { content: resultText(p.content) } } };
    case 'image':
    case 'file':
      return { inlineData: media(p) };
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The compacted session

/** An agent's own compaction: its marker, or the message carrying its summary (Claude Code writes it separately). */
function isAgentCompaction(e: Entry): boolean {
  if (e.compaction) return e.compaction.source !== 'abridge';
  return e.message?.parts.some((p) => p.type === 'compaction' && p.marker.source !== 'abridge') ?? false;
}

function withUsage(m: Message, usage: Usage | undefined): Message {
  const copy = { ...m };
  if (usage) copy.usage = usage;
  else delete copy.usage;
  return copy;
}

/** A transcript marker with its entry references moved to the compacted session's indexes. */
function remapMarker(
  marker: CompactionMarker,
  copied: readonly number[],
  workIndexOf: readonly number[],
  next: number,
): CompactionMarker {
  // The first copied entry at or after an original index, and the last at or before it.
  const atOrAfter = (orig: number): number => {
    let lo = 0;
    let hi = copied.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (copied[mid]! < orig) lo = mid + 1;
      else hi = mid;
    }
    return lo < copied.length ? workIndexOf[copied[lo]!]! : next;
  };
  const atOrBefore = (orig: number): number => atOrAfter(orig + 1) - 1;
  const out: AbridgeMarker = { ...marker };
  if (marker.firstKeptEntry !== undefined) out.firstKeptEntry = atOrAfter(marker.firstKeptEntry);
  if (marker.archived)
    out.archived = { fromEntry: atOrAfter(marker.archived.fromEntry), toEntry: atOrBefore(marker.archived.toEntry) };
  const abridge = marker as AbridgeMarker;
  if (abridge.hidden)
    out.hidden = abridge.hidden.map((h) => ({ fromEntry: atOrAfter(h.fromEntry), toEntry: atOrBefore(h.toEntry) }));
  if (abridge.edits)
    out.edits = abridge.edits.map((x) => ({ ...x, entry: workIndexOf[x.entry] ?? atOrAfter(x.entry) }));
  return out;
}
