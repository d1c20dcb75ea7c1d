import { ToolAttribution, mcpServerOf } from '../budget/attribution.js';
import { ContextBudget } from '../budget/budget.js';
import { ModelCatalog } from '../budget/catalog.js';
import { componentOf } from '../budget/components.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import type { BudgetSettings } from '../budget/types.js';
import { conversationEntries } from '../model/branch.js';
import { argumentsText, isDateMs, partTextLength, promptTokens } from '../model/parts.js';
import type { CompactionMarker, Entry, Message, Part, Session } from '../model/types.js';
import type { AbridgeMarker } from '../model/view.js';
import type { TokenCounter } from '../tokens/counter.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import { createRedactor, redactMessage, type Redactor } from '../redact/redact.js';
import { type PromptTracker, startsResponse } from '../tokens/predict.js';
import { trackerFor } from '../tokens/replay.js';

/**
 * What the viewer page shows of a session, computed once: per request, the prompt the provider reported beside
 * abridge's prediction and the context split into categories (system, summaries, user, assistant, each tool's
 * results); every compaction with what it archived and edited; and one compact record per message of the conversation
 * (its full text kept apart, in `texts`, for the page to load on demand).
 */
export interface ViewData {
  meta: ViewMeta;
  categories: ViewCategory[];
  /** Columnar, one element per request (a provider response start), in order. */
  points: ViewPoints;
  compactions: ViewCompaction[];
  records: MessageRecord[];
}

export interface ViewMeta {
  title: string;
  source: string;
  format: string;
  sessionId?: string;
  cwd?: string;
  models: string[];
  counting: 'estimate' | 'exact';
  entries: number;
  /** Messages on the conversation's branch (records of the page). */
  messages: number;
  /** Requests whose usage the provider reported. */
  reportedRequests: number;
  problems: number;
  sidechainMessages: number;
  /** Characters of message text left out of `texts` (each text is cut at `maxTextChars`). */
  truncatedChars: number;
}

export interface ViewCategory {
  key: string;
  label: string;
  /** For a tool's results: the tool, and its MCP server when it has one. */
  tool?: string;
  mcpServer?: string;
}

export interface ViewPoints {
  /** Entry index of the assistant message that started the request. */
  entry: number[];
  line: (number | null)[];
  /** Index into meta.models. */
  model: number[];
  /** Prompt tokens the provider reported (input + cache read + cache write), null when it reported none. */
  reported: (number | null)[];
  /** abridge's prediction from the entries before the request (replaySession's numbers). */
  predicted: number[];
  anchored: boolean[];
  window: number[];
  reserve: number[];
  warn: number[];
  compact: number[];
  block: number[];
  /** [category][point]: provider tokens of each category; they add up to the reported prompt (else the prediction). */
  tokens: number[][];
  /** [category][point]: for tool categories, the results and calls in the context; 0 for others. */
  results: number[][];
  calls: number[][];
  /** Messages in the context. */
  messages: number[];
}

export interface ViewEdit {
  entry: number;
  how: string;
  /** Counted tokens of the message before and after the edit. */
  before: number;
  after: number;
  /** The stored result's reference, when the edit cleared or offloaded it. */
  ref?: string;
  preview: string;
}

export interface ViewCompaction {
  number: number;
  entry: number;
  line?: number;
  source: string;
  trigger?: string;
  strategies?: string[];
  tokensBefore?: number;
  tokensAfter?: number;
  /** Request ordinal the compaction precedes (where the chart marks it). */
  beforePoint: number;
  summary: string;
  archived?: { fromEntry: number; toEntry: number };
  /** Messages newly archived by this compaction, and their counted tokens. */
  archivedMessages: number;
  archivedTokens: number;
  edits: ViewEdit[];
  hidden?: { fromEntry: number; toEntry: number }[];
}

/** One message of the conversation, short keys: the page holds thousands. */
export interface MessageRecord {
  /** Entry index. */
  e: number;
  /** Source line, when the format has lines. */
  l?: number;
  /** Role, or 'compaction' for a compaction's summary record. */
  r: string;
  /** Counted tokens. */
  t: number;
  /** Characters of text. */
  c: number;
  /** Tools called (assistant) or whose results these are (tool). */
  tools?: string[];
  /** First characters of the text, whitespace collapsed. */
  p: string;
  /** Number of the compaction that archived it. */
  a?: number;
  /** Edits compactions made to it, by compaction number. */
  ed?: { n: number; how: string; before: number; after: number; ref?: string }[];
  /** Compaction number this record is the marker of. */
  k?: number;
  err?: boolean;
  syn?: boolean;
  ts?: number;
}

export interface ViewDataOptions {
  settings?: BudgetSettings;
  exact?: ExactTokenizer;
  /** Where the session came from (file path, or db + id), for the title. */
  source?: string;
  /** Longest text kept per message in `texts` (default 64,000 characters); the rest is cut with a note. */
  maxTextChars?: number;
  /** Tool categories kept apart in the chart and breakdown; the others are grouped (default 24). */
  maxToolCategories?: number;
  /**
   * Secret redaction of every text the page shows (messages, previews, summaries, edits, the title): the page leaves
   * the process. Default: the built-in detector; `noRedaction` turns it off. Counts are of the session as it is.
   */
  redact?: Redactor;
}

const BASE_CATEGORIES: ViewCategory[] = [
  { key: 'prefix', label: 'System prompt + tools (not in transcript)' },
  { key: 'system', label: 'System, memory, skills messages' },
  { key: 'summary', label: 'Compaction summaries' },
  { key: 'user', label: 'User' },
  { key: 'assistant', label: 'Assistant (text, thinking, tool calls)' },
];
const OTHER_TOOLS = '(other tools)';
const PREVIEW_CHARS = 120;

/** Where the builder puts the full text of each record, in the order of `records`: an array, or a gzip stream. */
export interface ViewTextSink {
  add(text: string): void;
}

/** What the page says of the session as a whole: known only at the end of a session read as a stream. */
export interface ViewSessionFacts {
  info: Session['info'];
  format: Session['format'];
  /** Entries of the whole session (every branch). */
  entries: number;
  problems: number;
  /** Messages on subagent sidechains in the whole session. */
  sidechainMessages: number;
}

/** The viewer's data and the full text of each record (same order as `records`). */
export function buildViewData(session: Session, options: ViewDataOptions = {}): { data: ViewData; texts: string[] } {
  const branch = conversationEntries(session);
  const texts: string[] = [];
  const builder = new ViewBuilder(session, branch, options, { add: (t) => texts.push(t) });
  for (const e of branch) builder.push(e);
  return { data: builder.finish(sessionFacts(session)), texts };
}

/** The facts `ViewBuilder.finish` takes, of a session in memory. */
export function sessionFacts(session: Session): ViewSessionFacts {
  return {
    info: session.info,
    format: session.format,
    entries: session.entries.length,
    problems: session.problems.length,
    sidechainMessages: session.entries.filter((e) => e.sidechain && e.message).length,
  };
}

interface RawPoint {
  entry: number;
  line: number | null;
  model: string;
  reported: number | null;
  predicted: number;
  anchored: boolean;
  ratio: number;
  /** The window the agent had reported by then (Codex), if any. */
  window: number | undefined;
  totals: number[];
  results: number[];
  calls: number[];
  messages: number;
}

/** A compaction as it was met; its sizes around it (from the reports after it) are known at the end. */
interface PendingCompaction {
  e: Entry;
  marker: CompactionMarker;
  beforePoint: number;
  archived: { fromEntry: number; toEntry: number } | undefined;
  archivedMessages: number;
  archivedTokens: number;
  edits: ViewEdit[];
}

/**
 * The viewer's data built one entry of the conversation's branch at a time, in order (`push`), then `finish`: each
 * entry is read once — counted once (the tracker's counter remembers each part's count), redacted once, its text
 * handed to the sink — and only what the page shows of it is kept (its record: counts, a preview, tools). So a session
 * read as a stream (view-stream.ts) is never held whole; `buildViewData` is the same builder over a session in memory.
 */
export class ViewBuilder {
  private readonly settings: BudgetSettings;
  private readonly maxText: number;
  private readonly redact: Redactor;
  private readonly tracker: PromptTracker;
  private readonly counter: TokenCounter;
  private readonly acc: ContextAccumulator;
  private readonly limits: Limits;
  private readonly raw: RawPoint[] = [];
  private lastModel: string | undefined;
  private reportedWindow: number | undefined;
  private previousAssistant: Message | undefined;
  /** The request being followed (as `followEntries` follows it): its prediction, and whether it reported usage. */
  private pending: { counted: number; predicted: number; reported: boolean } | undefined;
  private readonly records: MessageRecord[] = [];
  private readonly byEntry = new Map<number, MessageRecord>();
  private truncatedChars = 0;
  private readonly compactions: PendingCompaction[] = [];
  private readonly callNames: ToolAttribution;
  private branchSidechain = false;
  private branchSidechainMessages = 0;

  /**
   * `session` is what the tracker is set up from (its format, extra, and entries: whether the transcript records a
   * system prompt); `branch` holds at least the branch's first entry naming a model, when it has one.
   */
  constructor(
    session: Session,
    branch: readonly Entry[],
    private readonly options: ViewDataOptions,
    private readonly sink: ViewTextSink,
    /** Called with each entry once the builder is done with it (the stream reader lets go of its texts). */
    private readonly done?: (entry: Entry) => void,
  ) {
    this.settings = options.settings ?? DEFAULT_BUDGET_SETTINGS;
    this.maxText = options.maxTextChars ?? 64_000;
    this.redact = options.redact ?? createRedactor();
    this.tracker = trackerFor(session, branch, {
      ...(options.exact ? { exact: options.exact } : {}),
      ...(this.settings.prefixTokens !== undefined ? { prefixTokens: this.settings.prefixTokens } : {}),
    });
    this.counter = this.tracker.counter;
    this.acc = new ContextAccumulator(this.counter, new ToolAttribution(this.counter));
    this.callNames = new ToolAttribution(this.counter);
    this.limits = new Limits(session.extra, this.settings);
  }

  /** The next entry of the branch. */
  push(e: Entry): void {
    const m = e.message;
    const tracker = this.tracker;
    if (e.kind === 'model-change' && e.model?.id) this.lastModel = e.model.id;
    this.reportedWindow = e.usage?.contextWindow ?? m?.usage?.contextWindow ?? this.reportedWindow;
    const beforePoint = this.raw.length;
    if (m?.role === 'assistant') {
      if (m.model) this.lastModel = m.model;
      if (startsResponse(m, this.previousAssistant)) {
        // The same state the request's prediction is made from: everything before this entry.
        const p = tracker.predict(m.model ?? this.lastModel);
        this.raw.push({
          entry: e.index,
          line: e.line ?? null,
          model: m.model ?? this.lastModel ?? 'unknown',
          reported: null,
          predicted: p.predicted,
          anchored: p.anchored,
          ratio: p.ratio,
          window: this.reportedWindow,
          ...this.acc.snapshot(),
        });
        // As followEntries (tokens/replay.ts) follows a request: predicted before it, then observed once reported.
        const f = tracker.predict(m.model);
        this.pending = { counted: tracker.contextTokens, predicted: f.predicted, reported: false };
      }
      const pending = this.pending;
      if (m.usage && pending && !pending.reported && promptTokens(m.usage) > 0) {
        tracker.observe(m.usage, m.model ?? 'unknown', e.index, pending.counted);
        const point = this.raw[this.raw.length - 1];
        if (point && point.reported === null) {
          point.reported = promptTokens(m.usage);
          point.predicted = pending.predicted;
        }
        pending.reported = true;
      }
      this.previousAssistant = m;
    } else if (m) this.previousAssistant = undefined;
    tracker.push(e);
    this.acc.push(e);
    if (e.sidechain) {
      this.branchSidechain = true;
      if (m) this.branchSidechainMessages++;
    }
    this.record(e, beforePoint);
    this.done?.(e);
  }

  /** The record of an entry (a message, or a compaction's summary) and its full text; a compaction's view. */
  private record(e: Entry, beforePoint: number): void {
    const m = e.message;
    if (!m && !e.compaction) return;
    const redact = this.redact;
    const rec: MessageRecord = {
      e: e.index,
      r: e.compaction ? 'compaction' : m!.role,
      t: m ? this.counter.message(m) : 0,
      c: m ? m.parts.reduce((n, p) => n + partTextLength(p), 0) : 0,
      p: '',
    };
    if (e.line !== undefined) rec.l = e.line;
    if (e.compaction) rec.k = e.compaction.number;
    const ts = m?.timestamp ?? e.timestamp;
    if (isDateMs(ts)) rec.ts = ts;
    if (m?.synthetic) rec.syn = true;
    let text = '';
    if (m) {
      const callNames = this.callNames;
      callNames.learn(m);
      const tools = new Set<string>();
      for (const p of m.parts) {
        const tool = callNames.toolOf(p);
        if (tool !== undefined) tools.add(tool);
        if (p.type === 'tool-result' && p.isError) rec.err = true;
      }
      if (tools.size > 0) rec.tools = [...tools];
      // Redacted before it is cut into a preview, so that no part of a secret is left at a cut.
      text = messageText(redactMessage(m, redact), callNames);
    } else if (e.compaction) text = redact(e.compaction.summary);
    rec.p = detached(
      text
        .slice(0, PREVIEW_CHARS * 3)
        .replace(/\s+/g, ' ')
        .trim()
        .slice(0, PREVIEW_CHARS),
    );
    const maxText = this.maxText;
    if (text.length > maxText) {
      this.truncatedChars += text.length - maxText;
      text = `${text.slice(0, maxText)}\n\n[… ${(text.length - maxText).toLocaleString('en-US')} more characters not included in this page${e.line !== undefined ? `; see line ${e.line} of the transcript` : ''}]`;
    }
    this.records.push(rec);
    this.sink.add(text);
    this.byEntry.set(e.index, rec);
    if (e.compaction) this.compactions.push(this.compaction(e, e.compaction, beforePoint));
  }

  /** A compaction met: what it archived (of the records so far) and edited. */
  private compaction(e: Entry, marker: CompactionMarker, beforePoint: number): PendingCompaction {
    const m = marker as AbridgeMarker;
    // abridge says what it archived (nothing, when it only cleared results); other agents replace what came before the
    // first entry they keep (model/view.ts reads markers the same way).
    const archived =
      m.source === 'abridge'
        ? m.archived
        : (m.archived ?? {
            fromEntry: 0,
            toEntry: (m.firstKeptEntry !== undefined && m.firstKeptEntry <= e.index ? m.firstKeptEntry : e.index) - 1,
          });
    let archivedMessages = 0;
    let archivedTokens = 0;
    if (archived)
      for (const rec of this.records) {
        if (rec.e < archived.fromEntry || rec.e > archived.toEntry) continue;
        if (rec.a !== undefined || rec.r === 'compaction') continue;
        rec.a = marker.number;
        archivedMessages++;
        archivedTokens += rec.t;
      }
    const edits: ViewEdit[] = [];
    for (const ed of m.edits ?? []) {
      const rec = this.byEntry.get(ed.entry);
      const after = this.counter.message(ed.message);
      const text = redactMessage(ed.message, this.redact)
        .parts.map((p) =>
          p.type === 'tool-result'
            ? p.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
            : p.type === 'text'
              ? p.text
              : '',
        )
        .join(' ');
      const ref = /"ref_id":\s*"([^"]+)"/.exec(text)?.[1] ?? /\bref(?:_id)?[=: ]+([A-Za-z0-9_-]{6,})/.exec(text)?.[1];
      const edit: ViewEdit = { entry: ed.entry, how: ed.how, before: rec?.t ?? 0, after, preview: text.slice(0, 400) };
      if (ref) edit.ref = ref;
      edits.push(edit);
      if (rec)
        (rec.ed ??= []).push({ n: marker.number, how: ed.how, before: edit.before, after, ...(ref ? { ref } : {}) });
    }
    return { e, marker, beforePoint, archived, archivedMessages, archivedTokens, edits };
  }

  /** The page's data, once the branch's last entry is pushed. */
  finish(facts: ViewSessionFacts): ViewData {
    const { raw, options, limits, redact } = this;
    const models: string[] = [];
    const modelIndex = (m: string) => {
      let i = models.indexOf(m);
      if (i === -1) i = models.push(m) - 1;
      return i;
    };
    // Tool categories: the largest (by their peak in any request) apart, the rest grouped.
    const toolCats = this.acc.toolCategories();
    const peak = (i: number) => raw.reduce((mx, p) => Math.max(mx, p.totals[i] ?? 0), 0);
    const ranked = toolCats.map((c) => ({ c, peak: peak(c.index) })).sort((a, b) => b.peak - a.peak);
    const keep = ranked.slice(0, options.maxToolCategories ?? 24);
    const grouped = ranked.slice(keep.length);
    const categories: ViewCategory[] = [...BASE_CATEGORIES];
    const columnOf = new Map<number, number>();
    for (let i = 0; i < BASE_CATEGORIES.length; i++) columnOf.set(i, i);
    for (const { c } of keep) {
      columnOf.set(c.index, categories.length);
      const cat: ViewCategory = { key: `tool:${c.name}`, label: c.name, tool: c.name };
      const server = mcpServerOf(c.name);
      if (server !== undefined) cat.mcpServer = server;
      categories.push(cat);
    }
    if (grouped.length > 0) {
      const col = categories.length;
      categories.push({
        key: `tool:${OTHER_TOOLS}`,
        label: `${OTHER_TOOLS}: ${grouped.map((g) => g.c.name).join(', ')}`,
        tool: OTHER_TOOLS,
      });
      for (const g of grouped) columnOf.set(g.c.index, col);
    }

    const points: ViewPoints = {
      entry: [],
      line: [],
      model: [],
      reported: [],
      predicted: [],
      anchored: [],
      window: [],
      reserve: [],
      warn: [],
      compact: [],
      block: [],
      tokens: categories.map(() => []),
      results: categories.map(() => []),
      calls: categories.map(() => []),
      messages: [],
    };
    for (const p of raw) {
      const budget = limits.budgetFor(p.model, p.window);
      const marks = budget.marks;
      points.entry.push(p.entry);
      points.line.push(p.line);
      points.model.push(modelIndex(p.model));
      points.reported.push(p.reported);
      points.predicted.push(p.predicted);
      points.anchored.push(p.anchored);
      points.window.push(budget.window);
      points.reserve.push(budget.reserve);
      points.warn.push(marks.warn);
      points.compact.push(marks.compact);
      points.block.push(marks.block);
      points.messages.push(p.messages);
      const cols = categories.map(() => 0);
      const results = categories.map(() => 0);
      const calls = categories.map(() => 0);
      p.totals.forEach((t, i) => {
        const col = columnOf.get(i);
        if (col === undefined) return;
        cols[col]! += t * p.ratio;
        results[col]! += p.results[i] ?? 0;
        calls[col]! += p.calls[i] ?? 0;
      });
      // The bar adds up to what the provider billed: what the transcript does not hold is the prefix; when we counted
      // more than was billed (a harness that trims what it sends), every category shrinks in proportion.
      const total = p.reported ?? p.predicted;
      const visible = cols.reduce((a, b) => a + b, 0);
      if (visible <= total) cols[0] = total - visible;
      else for (let i = 0; i < cols.length; i++) cols[i]! *= total / visible;
      const rounded = cols.map((x) => Math.round(x));
      rounded[0]! += total - rounded.reduce((a, b) => a + b, 0);
      if (rounded[0]! < 0) rounded[0] = 0;
      rounded.forEach((x, i) => points.tokens[i]!.push(x));
      results.forEach((x, i) => points.results[i]!.push(x));
      calls.forEach((x, i) => points.calls[i]!.push(x));
    }

    const compactions = this.compactions.map((c) => compactionView(c, raw, redact));
    const records = this.records;
    const info = facts.info;
    const meta: ViewMeta = {
      title: redact(info.title ?? info.id ?? options.source ?? 'session'),
      source: redact(options.source ?? ''),
      format: facts.format,
      models,
      counting: this.counter.exact ? 'exact' : 'estimate',
      entries: facts.entries,
      messages: records.filter((r) => r.r !== 'compaction').length,
      reportedRequests: points.reported.filter((r) => r !== null).length,
      problems: facts.problems,
      sidechainMessages: facts.sidechainMessages - (this.branchSidechain ? this.branchSidechainMessages : 0),
      truncatedChars: this.truncatedChars,
    };
    if (info.id) meta.sessionId = redact(info.id);
    if (info.cwd) meta.cwd = redact(info.cwd);
    return { meta, categories, points, compactions, records };
  }
}

/** Window and marks per model, from the catalog (or the window the agent reported). */
class Limits {
  private readonly catalog: ModelCatalog;
  private readonly cache = new Map<string, ContextBudget>();

  constructor(
    private readonly extra: Session['extra'],
    private readonly settings: BudgetSettings,
  ) {
    this.catalog = new ModelCatalog(settings);
  }

  budgetFor(model: string, window: number | undefined): ContextBudget {
    const key = `${model}\u0000${window ?? ''}`;
    let b = this.cache.get(key);
    if (!b) {
      const requestModel = (this.extra?.request as { model?: unknown } | undefined)?.model;
      const id =
        model === 'unknown'
          ? (this.settings.model ?? (typeof requestModel === 'string' ? requestModel : undefined))
          : model;
      b = new ContextBudget(this.catalog.lookup(id, window ? { reportedWindow: window } : {}), this.settings);
      this.cache.set(key, b);
    }
    return b;
  }
}

interface ItemCost {
  index: number;
  /** Pairs: category index, counted tokens. */
  tokens: number[];
  /** Pairs: category index, count. */
  results: number[];
  calls: number[];
}

/**
 * The context as entries arrive, split into categories, following compactions the way PromptTracker does (so the
 * split describes the same context the prediction counts).
 */
class ContextAccumulator {
  private items: ItemCost[] = [];
  private totals: number[] = [0, 0, 0, 0, 0];
  private resultCounts: number[] = [0, 0, 0, 0, 0];
  private callCounts: number[] = [0, 0, 0, 0, 0];
  private readonly tools = new Map<string, number>();

  constructor(
    private readonly counter: TokenCounter,
    private readonly names: ToolAttribution,
  ) {}

  toolCategories(): { name: string; index: number }[] {
    return [...this.tools].map(([name, index]) => ({ name, index }));
  }

  snapshot(): { totals: number[]; results: number[]; calls: number[]; messages: number } {
    return {
      totals: this.totals.slice(),
      results: this.resultCounts.slice(),
      calls: this.callCounts.slice(),
      messages: this.items.length,
    };
  }

  push(entry: Entry): void {
    if (entry.compaction) {
      const marker = entry.compaction as AbridgeMarker;
      let kept: ItemCost[];
      if (marker.source === 'abridge') {
        const out = (i: number) =>
          [marker.archived, ...(marker.hidden ?? [])].some(
            (r) => r !== undefined && i >= r.fromEntry && i <= r.toEntry,
          );
        const edits = new Map((marker.edits ?? []).map((e) => [e.entry, e.message]));
        kept = this.items
          .filter((c) => !out(c.index))
          .map((c) => (edits.has(c.index) ? this.cost(c.index, edits.get(c.index)!) : c));
      } else {
        const keepFrom = marker.firstKeptEntry;
        kept = keepFrom !== undefined && keepFrom <= entry.index ? this.items.filter((c) => c.index >= keepFrom) : [];
      }
      this.items = kept;
      this.totals.fill(0);
      this.resultCounts.fill(0);
      this.callCounts.fill(0);
      for (const c of kept) this.apply(c, 1);
    }
    if (!entry.message) return;
    this.names.learn(entry.message);
    const c = this.cost(entry.index, entry.message);
    this.items.push(c);
    this.apply(c, 1);
  }

  private apply(c: ItemCost, sign: number): void {
    for (let i = 0; i < c.tokens.length; i += 2) this.totals[c.tokens[i]!]! += sign * c.tokens[i + 1]!;
    for (let i = 0; i < c.results.length; i += 2) this.resultCounts[c.results[i]!]! += sign * c.results[i + 1]!;
    for (let i = 0; i < c.calls.length; i += 2) this.callCounts[c.calls[i]!]! += sign * c.calls[i + 1]!;
  }

  private category(name: string): number {
    let i = this.tools.get(name);
    if (i === undefined) {
      i = this.totals.length;
      this.tools.set(name, i);
      this.totals.push(0);
      this.resultCounts.push(0);
      this.callCounts.push(0);
    }
    return i;
  }

  private cost(index: number, m: Message): ItemCost {
    const component = componentOf(m);
    const own =
      component === 'summary'
        ? 2
        : component === 'system' || component === 'memory' || component === 'skills'
          ? 1
          : m.role === 'assistant'
            ? 4
            : m.role === 'user'
              ? 3
              : -1;
    const tokens: number[] = [];
    const results: number[] = [];
    const calls: number[] = [];
    let framingCat = own;
    for (const p of m.parts) {
      const n = this.counter.part(p);
      let cat: number;
      if (p.type === 'compaction') cat = 2;
      else if (p.type === 'tool-result') {
        cat = this.category(this.names.toolOf(p)!);
        results.push(cat, 1);
      } else {
        if (p.type === 'tool-call') calls.push(this.category(this.names.toolOf(p)!), 1);
        // Text in a tool message that is not a result (rare): the tool of its first result, else the user.
        cat = own >= 0 ? own : 3;
      }
      if (framingCat < 0) framingCat = cat;
      tokens.push(cat, n);
    }
    tokens.push(framingCat < 0 ? 3 : framingCat, this.counter.messageFraming);
    return { index, tokens, results, calls };
  }
}

/** A compaction's view, with the sizes the provider reported around it when the marker does not say them. */
function compactionView(
  c: PendingCompaction,
  points: readonly { reported: number | null }[],
  redact: Redactor,
): ViewCompaction {
  const { e, marker, beforePoint, archived } = c;
  const m = marker as AbridgeMarker;
  const before = marker.tokensBefore ?? lastReported(points, beforePoint - 1, -1);
  const after = marker.tokensAfter ?? lastReported(points, beforePoint, 1);
  const out: ViewCompaction = {
    number: marker.number,
    entry: e.index,
    source: marker.source,
    beforePoint,
    summary: redact(marker.summary),
    archivedMessages: c.archivedMessages,
    archivedTokens: c.archivedTokens,
    edits: c.edits,
  };
  if (archived) out.archived = archived;
  if (e.line !== undefined) out.line = e.line;
  if (marker.trigger) out.trigger = marker.trigger;
  if (marker.strategies) out.strategies = marker.strategies;
  if (before !== undefined) out.tokensBefore = before;
  if (after !== undefined) out.tokensAfter = after;
  if (m.hidden?.length) out.hidden = m.hidden;
  return out;
}

function lastReported(points: readonly { reported: number | null }[], from: number, step: number): number | undefined {
  for (let i = from; i >= 0 && i < points.length; i += step) {
    const r = points[i]!.reported;
    if (r !== null) return r;
  }
  return undefined;
}

/**
 * A copy of a short string cut from a longer one that does not keep the longer one alive (V8 keeps the string a slice
 * was cut from): a record's preview is kept for the whole page, the text it was cut from is not.
 */
function detached(s: string): string {
  return s.length < 16 ? s : (JSON.parse(JSON.stringify(s)) as string);
}

/** A message as readable text: what the page shows when it is expanded and what search looks in. */
export function messageText(m: Message, names: ToolAttribution): string {
  return m.parts.map((p) => partText(p, names)).join('\n\n');
}

function partText(p: Part, names: ToolAttribution): string {
  switch (p.type) {
    case 'text':
      return p.text;
    case 'thinking':
      return p.redacted ? '[thinking, redacted]' : `[thinking]\n${p.text}`;
    case 'tool-call':
      return `[call ${names.toolOf(p)}]\n${argumentsText(p.arguments)}`;
    case 'tool-result': {
      const body = p.content
        .map((c) =>
          c.type === 'text'
            ? c.text
            : `[${c.type}${c.mediaType ? ` ${c.mediaType}` : ''}${c.byteSize ? `, ${c.byteSize.toLocaleString('en-US')} bytes` : ''}]`,
        )
        .join('\n');
      return `[result of ${names.toolOf(p)}${p.isError ? ', error' : ''}]\n${body}`;
    }
    case 'image':
    case 'file':
      return `[${p.type}${p.mediaType ? ` ${p.mediaType}` : ''}${p.byteSize ? `, ${p.byteSize.toLocaleString('en-US')} bytes` : ''}]`;
    case 'compaction':
      return `[compaction #${p.marker.number} by ${p.marker.source}: summary]\n${p.marker.summary}`;
  }
}
