import { EventEmitter } from 'node:events';
import { ContextBudget } from '../budget/budget.js';
import { ModelCatalog } from '../budget/catalog.js';
import { BudgetMonitor, type BudgetEvents } from '../budget/monitor.js';
import { contextSnapshot, type ContextSnapshot } from '../budget/snapshot.js';
import { compact, type CompactionResult, type CompactOptions } from '../compaction/compact.js';
import type { Summarizer } from '../compaction/summarizers/summarizer.js';
import { stableId } from '../formats/ids.js';
import type { Entry, Message, Session, Usage } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { MemoryResultStore } from '../store/memory-result-store.js';
import type { KeyedResultStore, ResultStore } from '../store/result-store.js';
import type { AgentTool } from '../tools/tool.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import type { AbridgeConfig } from './config.js';
import { createRedactor } from '../redact/redact.js';

export interface ContextManagerOptions {
  /** The model requests go to (its window and tokenizer family come from the catalog or the configuration). */
  model: string;
  /** A session to continue (read from a transcript or a store); default: a new, empty one. */
  session?: Session;
  config?: AbridgeConfig;
  /**
   * Where cleared and offloaded tool results go (default: in memory). A store shared by several sessions (every store
   * abridge ships) is used through `forSession(session id)`: this session's agent can read only its own refs.
   */
  store?: ResultStore;
  summarizer?: Summarizer;
  /** Compact automatically when the context reaches the compact level (default true). */
  autoCompact?: boolean;
  /** Options passed to every compaction (strategies, keepLastSteps, strategy options). */
  compaction?: Omit<CompactOptions, 'target' | 'store' | 'summarizer'>;
  now?: () => Date;
}

export interface PreparedRequest {
  /** What to send: the compacted view of the conversation. */
  messages: Message[];
  snapshot: ContextSnapshot;
  /** Set when this call compacted first. */
  compaction?: CompactionResult;
}

/**
 * The per-turn loop of an agent, with abridge: append what happens (`append`, `recordResponse`), and before each
 * request call `prepare()`, which measures the context, says when it crosses a level (events), compacts when it
 * reaches the compact level, and returns the messages to send. Nothing is deleted; `session` holds the whole history.
 */
export class ContextManager extends EventEmitter<BudgetEvents> {
  readonly session: Session;
  readonly store: ResultStore;
  private readonly config: AbridgeConfig;
  private readonly catalog: ModelCatalog;
  private readonly monitor: BudgetMonitor;
  private model: string;

  constructor(private readonly options: ContextManagerOptions) {
    super();
    this.config = options.config ?? { budget: DEFAULT_BUDGET_SETTINGS };
    this.catalog = new ModelCatalog(this.config.budget);
    this.model = options.model;
    this.session = options.session ?? { format: 'pi', info: { id: stableId(`abridge:${(options.now ?? (() => new Date()))().toISOString()}:${Math.random()}`, 16) }, entries: [], problems: [] };
    // A shared store is seen through this session's view: refs of other sessions cannot be read by this agent.
    const store = options.store ?? new MemoryResultStore();
    const id = this.session.info.id;
    this.store = id && isKeyed(store) ? store.forSession(id) : store;
    this.monitor = new BudgetMonitor(this.budget());
    for (const event of ['context-warning', 'auto-compacting', 'compaction-complete', 'context-blocked'] as const) {
      this.monitor.on(event, (...args: unknown[]) => (this.emit as (e: string, ...a: unknown[]) => boolean)(event, ...args));
    }
  }

  private budget(): ContextBudget {
    return new ContextBudget(this.catalog.lookup(this.model), this.config.budget);
  }

  /** Switches the model (its window may differ): levels are re-evaluated on the next `prepare`. */
  setModel(model: string): void {
    this.model = model;
    this.monitor.setBudget(this.budget());
    this.appendEntry({ kind: 'model-change', model: { id: model } });
  }

  /** Adds messages to the conversation (a user turn, tool results…). */
  append(...messages: Message[]): void {
    for (const m of messages) this.appendEntry({ kind: 'message', message: m });
  }

  /** Adds the model's response with the usage the provider reported for its request (what later counts anchor on). */
  recordResponse(message: Message, usage?: Usage): void {
    const m: Message = { ...message, role: 'assistant', model: message.model ?? this.model };
    if (usage) m.usage = usage;
    this.appendEntry({ kind: 'message', message: m });
  }

  /** How full the window is now, and where the tokens go. */
  snapshot(): ContextSnapshot {
    const settings = { ...this.config.budget, model: this.model };
    return contextSnapshot(this.session, { settings, catalog: this.catalog });
  }

  /**
   * Before a request: measure, emit what the fill calls for, compact at the compact level (to the target), and return
   * the messages to send.
   */
  async prepare(): Promise<PreparedRequest> {
    let snapshot = this.snapshot();
    const auto = this.options.autoCompact !== false;
    const level = this.monitor.update(snapshot.used, { compacting: auto && (snapshot.level === 'compact' || snapshot.level === 'block') });
    let compaction: CompactionResult | undefined;
    if ((level === 'compact' || level === 'block') && auto) {
      compaction = await this.compactTo(snapshot.marks.target);
      snapshot = this.snapshot();
    }
    const out: PreparedRequest = { messages: activeMessages(this.session), snapshot };
    if (compaction) out.compaction = compaction;
    return out;
  }

  /**
   * Compacts now, to `target` tokens — by default the compaction target of the model's window, or half the current
   * size when the context is already under it (an agent asking for room wants some).
   */
  async compactNow(target?: number): Promise<CompactionResult> {
    const s = this.snapshot();
    return this.compactTo(target ?? Math.min(s.marks.target, Math.floor(s.used / 2)));
  }

  /**
   * The tools an agent gets to manage its own context: read_result and compact_context. Loaded on first use (their
   * input schemas need zod, which the core does not load).
   */
  async tools(): Promise<AgentTool[]> {
    const [{ readResultTool }, { compactContextTool }] = await Promise.all([import('../tools/read-result.js'), import('../tools/compact-context.js')]);
    return [readResultTool(this.store) as AgentTool, compactContextTool({ compact: () => this.compactNow() }) as AgentTool];
  }

  private async compactTo(target: number): Promise<CompactionResult> {
    const result = await compact(this.session, {
      ...this.options.compaction,
      target,
      force: true,
      store: this.store,
      ...(this.options.summarizer ? { summarizer: this.options.summarizer } : {}),
      redact: this.options.compaction?.redact ?? createRedactor(this.config.redaction),
      ...(this.config.budget.prefixTokens !== undefined ? { prefixTokens: this.config.budget.prefixTokens } : {}),
    });
    if (result.entry) this.monitor.compactionComplete({ before: result.beforeTokens, after: result.afterTokens, strategies: result.strategiesRun.map((s) => s.name) });
    return result;
  }

  private appendEntry(draft: Omit<Entry, 'index' | 'id' | 'parentId' | 'timestamp'>): Entry {
    const entries = this.session.entries;
    const parent = entries.length > 0 ? (entries[entries.length - 1]!.id ?? null) : null;
    const index = entries.length;
    const entry = { ...draft, index, id: stableId(`${this.session.info.id ?? ''}:${index}`, 8), parentId: parent, timestamp: (this.options.now ?? (() => new Date()))().getTime() } as Entry;
    entries.push(entry);
    return entry;
  }
}

function isKeyed(store: ResultStore): store is KeyedResultStore {
  return typeof (store as Partial<KeyedResultStore>).forSession === 'function' && typeof (store as Partial<KeyedResultStore>).putWithRef === 'function';
}
