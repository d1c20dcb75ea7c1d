import { EventEmitter } from 'node:events';
import { ContextBudget } from '../budget/budget.js';
import { ModelCatalog, type ModelInfo } from '../budget/catalog.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { BudgetMonitor, type BudgetEvents } from '../budget/monitor.js';
import { contextBreakdown, type ContextBreakdown } from '../budget/breakdown.js';
import type { BudgetSettings, Level } from '../budget/types.js';
import { compact, planCompaction, type CompactionResult, type CompactOptions } from '../compaction/compact.js';
import { mustStay as planMustStay } from '../compaction/plan.js';
import { pinKey, pinsRecord, recordedPins } from '../compaction/pins.js';
import { compress } from '../compaction/strategies/head-tail.js';
import { resultText } from '../compaction/strategies/strategy.js';
import { LlmSummarizer, type LlmClient } from '../compaction/summarizers/llm.js';
import type { Summarizer, SummaryRequest } from '../compaction/summarizers/summarizer.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { AbridgeError } from '../errors.js';
import { stableId } from '../model/ids.js';
import { promptTokens } from '../model/parts.js';
import type { Entry, Message, Part, Session, SessionSettings, ToolResultPart, Usage } from '../model/types.js';
import { activeMessages, activeView, viewOf, type AbridgeMarker } from '../model/view.js';
import { PromptBuilder, type BuiltPrompt, type PromptSection } from '../prompt/builder.js';
import { DeferralManager, type DeferrableTool } from '../prompt/deferral.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import type { KeyedResultStore, ResultStore } from '../compaction/result-store.js';
import { createRedactor, type Redactor } from '../redact/redact.js';
import { redactingStore } from '../compaction/redaction.js';
import { loadSession, type SessionStore } from '../store/session-store.js';
import { TokenCounter } from '../tokens/counter.js';
import { PromptTracker } from '../tokens/predict.js';
import { followEntries, trackerFor } from '../tokens/replay.js';
import { windowsOf } from '../budget/windows.js';
import type { SendResult } from '../tokens/sent.js';
import { conversationEntries } from '../model/branch.js';
import { statedWindows, windowRecord } from '../model/window-record.js';
import type { AgentTool } from '../tools/tool.js';
import type { AbridgeConfig } from './config.js';
import { DEFAULT_RESERVE_CAP, MANAGER_DEFAULTS } from './defaults.js';
import { chooseSummarizer } from './summarizer.js';
import { ContextOverflowError, type OverflowDetails } from './overflow.js';
import {
  fromResponse,
  nativeRefusal,
  REQUEST_PROVIDERS,
  type ProviderRequestBody,
  type RequestBody,
  type RequestProvider,
  type ResponseResult,
  type ToolSpec,
} from '../formats/wire.js';
import { lastModelOf, restoreSession, type RestoredSession } from './restore.js';
import { isUndoCheckpoint, type UndoCheckpoint, type UndoWalk, walkUndos } from '../model/undo.js';
import { anthropicTool, renderPrompt, requestOptions } from './request.js';
import { IncrementalEncoder } from '../formats/incremental.js';
import type { AppliedEdit } from '../formats/wire.js';
import type { CompactionPart } from '../model/types.js';
import {
  anthropicCompactionEdit,
  ClearingPlanner,
  COMPACTION_BETA,
  CONTEXT_MANAGEMENT_BETA,
  holdsAnthropicCompaction,
  NATIVE_CONSOLIDATE_WINDOWS,
  nativeModeOf,
  responsesCompaction,
  type NativeMode,
  type NativeOption,
  type NativePlan,
} from './native.js';

/** A tool the agent offers the model, and where it comes from (MCP and skill tools may be deferred). */
export type ManagedTool = ToolSpec & { kind?: DeferrableTool['kind']; server?: string };

export interface ContextManagerOptions<P extends RequestProvider = RequestProvider> {
  /** The model requests go to (its window and tokenizer family come from the catalog or the configuration). */
  model: string;
  /** The wire format of `prepare().request` (default: `anthropic` for Claude models, else `openai-chat`). */
  provider?: P;
  config?: AbridgeConfig;
  /** The model's context window in tokens, when it is not the catalog's (a local model, a 1M-context variant). */
  contextWindow?: number;
  /** Model limits (default: a catalog from `config`). */
  catalog?: ModelCatalog;
  /** Where the session's entries and compaction snapshots go (default: in memory). */
  store?: SessionStore;
  /** The session's id in the store (default: a new one). */
  sessionId?: string;
  /**
   * Where cleared and offloaded tool results go (default: in memory). A store shared by several sessions (every store
   * abridge ships) is used through `forSession(session id)`: this session's agent can read only its own refs.
   */
  results?: ResultStore;
  /** The system prompt: text, ordered sections (static first), or a PromptBuilder the caller keeps changing. */
  system?: string | readonly PromptSection[] | PromptBuilder;
  /** The agent's own tools (JSON Schema inputs). MCP and skill tools are deferred when they take too much room. */
  tools?: readonly ManagedTool[];
  /**
   * abridge's tools offered to the model beside the agent's: `read_result` (read back what was cleared or offloaded),
   * `compact_context`, `tool_search` (when tools are deferred), and `memory` (when `memory` is set). Default: all that
   * apply; `false` for none.
   */
  agentTools?: boolean;
  /** Root folder of the memory tool (Anthropic's memory command set, confined to it). */
  memory?: { root: string };
  /**
   * Writes the summary that stands in for archived turns: `'extractive'` (made of what the records say, no model call),
   * `'llm'` (a model writes it, through `summaryClient`; its answer is checked against the extractive hand-off, retried
   * once with what was wrong, and replaced by the extractive summary when it still fails — `summaryNotes` of the
   * compaction say so), or a Summarizer of your own. Default: `'llm'` when `summaryClient` is given; else the agent's
   * own model when an integration gives it (`summarizeWithAgentModel`: the AI SDK middleware does); else extractive.
   * `'llm'` without `summaryClient` is an INVALID_INPUT error.
   */
  summarizer?: Summarizer | 'extractive' | 'llm';
  /**
   * The model that writes summaries (`anthropicClient()` of `abridge-context/anthropic`, `openaiClient()` of
   * `abridge-context/openai`, or your own LlmClient): implies `summarizer: 'llm'`.
   */
  summaryClient?: LlmClient;
  /** Compact automatically when the context reaches the compact level (default true). */
  autoCompact?: boolean;
  /**
   * Options passed to every compaction (strategies as values, keepLastSteps, strategy options). Its `instructions`
   * hold for every summary; those of one `compactNow` (or `compact_context` call) are added to them.
   */
  compaction?: Omit<CompactOptions, 'target' | 'store' | 'summarizer' | 'prefixTokens' | 'summary'>;
  /**
   * Default max output tokens of a request, reserved in the window. Default: the model's maximum output, at most
   * 32,000 and at most half the window (a 40K-window deployment of a 128K-output model reserves 20,000).
   */
  maxOutputTokens?: number;
  /**
   * Tool results larger than this many tokens are offloaded as they arrive (to `results`, the model sees their head and
   * tail and how to read the rest). Default: room-aware — a result is shortened only when it would take more than half
   * of the free room (what the prompt may still hold before window − reserve, at least what a compaction to the target
   * leaves), or more than half of the window left after the reserve; it keeps that much.
   */
  offloadResultsOver?: number;
  now?: () => Date;
  /**
   * Whether requests ask the provider to manage the context (`manager/native.ts`): Anthropic's tool-result clearing and
   * compaction (beta `context_management`), the Responses API's compaction. `'prefer'`: the provider's edits first,
   * abridge's own compaction when they cannot make the request fit (or the provider offers none: Chat Completions);
   * `'only'`: abridge never compacts on a provider that offers its own, and a request that cannot fit is a
   * ContextOverflowError; `'never'` (default). One mode, or one per provider (`{ anthropic: 'prefer' }`). abridge plans
   * the edits (when, how much, keeping the provider's cache), predicts what they leave, reads back what the provider
   * did, and records a provider's compaction as a marker: the whole history stays in the store.
   */
  native?: NativeOption;
  /**
   * Counts a request with the provider's endpoint (`anthropicTokenCounter(client)`, `responsesTokenCounter(client)`)
   * when abridge's figure for it is mostly its own count rather than the provider's bills — the first request of a
   * session, the first after a compaction, or one whose new content is at least half of it — and anchors on that
   * count. One more request to the provider (a count, not billed) on those turns; `pressure.estimated` keeps what
   * abridge predicted without it. Default: none (abridge's count anchored on the bills).
   */
  countTokens?: TokenCountEndpoint;
  /**
   * A stored session to continue (what `ContextManager.resume` reads with `restoreSession` and passes here): the manager
   * starts from its latest snapshot, counted as it was when it compacted, and follows the bills recorded since.
   */
  restore?: RestoredSession;
}

/**
 * The provider's own count of a prepared request: `anthropicTokenCounter(client)` of `abridge-context/anthropic`,
 * `responsesTokenCounter(client)` of `abridge-context/openai`, or your own. `originalInputTokens`: the count before the
 * provider's own edits, when the request asks for some.
 */
export type TokenCountEndpoint = (request: {
  body: RequestBody;
  betas?: readonly string[];
}) => Promise<{ inputTokens: number; originalInputTokens?: number }>;

/** Options of `ContextManager.resume`: those of a new manager; the model, provider, window and reserve default to what
 * the session ran with (its stored settings). */
export type ResumeOptions<P extends RequestProvider = RequestProvider> = Omit<
  ContextManagerOptions<P>,
  'store' | 'sessionId' | 'restore' | 'model'
> & { model?: string };

export interface PrepareOptions {
  /** This request's max output tokens: reserved in the window (the provider checks prompt + max output ≤ window). */
  maxOutputTokens?: number;
  /** Fields passed through into the request body (temperature, thinking, stream, metadata…). */
  extra?: Record<string, unknown>;
}

/** Where the context stands for one request. All token figures are provider tokens. */
export interface Pressure {
  /** Predicted prompt tokens of the request, as the provider bills it (after the edits it is asked to make). */
  predicted: number;
  /**
   * With the provider's own context management (`native`): the prompt as sent, before the provider's edits; `predicted`
   * is what they leave.
   */
  sent?: number;
  /** When the provider's endpoint counted the request (`countTokens`): what abridge predicted without it. */
  estimated?: number;
  /** Whether the prediction builds on the provider's own last report. */
  anchored: boolean;
  window: number;
  maxOutputTokens: number;
  /** window − maxOutputTokens: the most the prompt may hold. */
  ceiling: number;
  /** Share of the effective window (window − reserve) used, and its level. */
  fill: number;
  level: Level;
  marks: Record<'warn' | 'compact' | 'block' | 'target', number>;
}

export interface PreparedTurn<P extends RequestProvider = RequestProvider> {
  provider: P;
  /** The request body in the provider's own shape: pass it to the SDK as it is. */
  request: ProviderRequestBody[P];
  /** The messages the request holds: the compacted view. */
  messages: Message[];
  pressure: Pressure;
  /** Set when this call compacted first. */
  compaction?: CompactionResult;
  /**
   * Anthropic betas the request needs (`native` edits, a provider's compaction block sent back): send it with
   * `client.beta.messages.create(anthropicBetaParams(turn.request, turn.betas))`, or the header
   * `anthropic-beta: <betas joined by ",">`. Absent when none.
   */
  betas?: string[];
  /** What the request asks of the provider itself (`native`): its edits, and whether it asks it to compact now. */
  native?: { edits: Record<string, unknown>[]; cleared: number; freed: number; compacting: boolean };
  /** The full `/context` breakdown (computed on demand: it walks the whole session). */
  breakdown(): ContextBreakdown;
}

export interface ManagerEvents extends BudgetEvents {
  /** The provider refused a request as too long; `recovered` says whether compacting to the ceiling let a retry through. */
  overflow: [{ message: string; predicted: number; ceiling: number; recovered: boolean }];
  /**
   * A response's usage was not believed (see `recordResponse`): a prompt that is no count of the request sent (not
   * finite, above every window known for the model, more than 3× off what was sent), or the first one billed above the
   * window assumed. Also recorded in `session.problems` (kind `implausible-usage`).
   */
  'usage-ignored': [{ reported: number; reason: string }];
  /** The provider refused its own context management (`recoverFromNativeRefusal`): abridge compacts by itself now. */
  'native-refused': [{ message: string }];
  /**
   * The provider's token-count endpoint (`countTokens`) failed: the request goes with abridge's own figure; `again`:
   * whether it will be asked again (not after a 4xx other than a rate limit: the endpoint is not there).
   */
  'count-failed': [{ message: string; again: boolean }];
}

const DEFERRAL_SECTION = 'deferred-tools';

/** The request `prepare` returned: its reserve, and the count and prediction its bill or refusal is judged against. */
interface PreparedState {
  readonly maxOutput: number;
  readonly counted: number;
  readonly predicted: number;
  /** Provider tokens the provider's own edits were predicted to remove (what a refusal's count lacks). */
  readonly freed: number;
}

interface ToolCallLike {
  id: string;
  name: string;
  arguments: unknown;
}

/**
 * The composition root of one session's turn. Append what happens (`append` for user turns and tool results,
 * `record` for the provider's response); before each request call `prepare()`, which measures the context (anchored on
 * the provider's last bill, O(new messages) a turn), emits what the fill calls for, compacts when it reaches the compact
 * level — and before the request could exceed window − max output — and returns the request in the provider's shape.
 * Every entry goes to the SessionStore as it happens; a compaction is recorded there in one transaction (marker +
 * snapshot), and `ContextManager.resume` rebuilds a session from its latest snapshot. Nothing is deleted.
 */
/**
 * A compaction the manager would make now (`planCompaction`), to inspect before `applyCompaction` records it: what the
 * model would no longer see, what it would see shortened and what verbatim, the summary draft, the tokens. The
 * compaction was run on a copy of the session; nothing was recorded.
 */
export interface PlannedCompaction {
  /** The target the compaction aims at, and the instructions its summary was given. */
  readonly target: number;
  readonly instructions?: string;
  /** Provider tokens of the context now and after, as the compaction counts them, and whether that fits the target. */
  readonly beforeTokens: number;
  readonly afterTokens: number;
  readonly reachedTarget: boolean;
  /** Messages the model would no longer see: archived behind the summary (the store keeps every one). */
  readonly archived: readonly Message[];
  /** Messages it would see shortened: each as it is and as it would be, and how (cleared, offloaded, compressed…). */
  readonly edited: readonly { readonly before: Message; readonly after: Message; readonly how: string }[];
  /** Messages it would see verbatim; and of them, the pinned ones. */
  readonly kept: readonly Message[];
  readonly pinned: readonly Message[];
  /** The summary draft (empty when nothing would be archived): `applyCompaction(plan, { summary })` replaces it. */
  readonly summary: string;
  /** The messages the next request would hold (the summary's message among them). */
  readonly view: readonly Message[];
  /** The whole result of the compaction run on the copy (what must stay, strategies, notes). */
  readonly result: CompactionResult;
}

/** What a plan was made from, to apply exactly that compaction (kept by the manager, not on the plan). */
interface PlanBasis {
  entries: number;
  tip: string | undefined;
  pins: string;
  model: string;
  compactions: number;
  summaries: Map<string, string>;
  marker: string;
}

export class ContextManager<P extends RequestProvider = RequestProvider> extends EventEmitter<ManagerEvents> {
  /**
   * The working session: the last compaction's view (as entries) followed by what came after it — every entry since
   * the manager started until it first compacts, or after `resume` the snapshot's messages and what followed. The
   * whole history is in the store (`loadSession(store, sessionId)`).
   */
  readonly session: Session;
  readonly store: SessionStore;
  readonly results: ResultStore;
  private readonly redact: Redactor;
  readonly sessionId: string;
  readonly provider: P;
  readonly prompt: PromptBuilder;
  private readonly config: AbridgeConfig;
  private readonly catalog: ModelCatalog;
  private readonly monitor: BudgetMonitor;
  private tracker: PromptTracker;
  private counter: TokenCounter;
  /** How the harness that recorded a resumed session sends a tool result (`harnessSends`): what requests carry. */
  private send: SendResult | undefined;
  private deferral: DeferralManager | undefined;
  private agentTools: readonly ManagedTool[];
  private model: string;
  private info: ModelInfo;
  /** The messages the model sees now, kept incrementally (recomputed only after a compaction). */
  private view: Message[];
  private created: Promise<void> | undefined;
  /**
   * The request `prepare` returned last, until its response is recorded: what the provider's bill (or refusal) of it
   * is compared with. One value per request, replaced whole by the next `prepare`.
   */
  private turn: PreparedState | undefined;
  /**
   * `read_result` is offered once something of this session was offloaded or cleared — before that it has nothing to
   * read — and stays offered (a tool list that changes breaks the provider's prompt cache). `compact_context` is always
   * usable: an agent may compact at the end of a phase, whatever the fill.
   */
  private stored = false;
  /** The id of the store's last entry when the working session holds none (it restarted from an empty view). */
  private tip: string | null = null;
  private agentToolList: Promise<AgentTool[]> | undefined;
  private overheadKey = '';
  private overheadCounted = 0;
  private readonly encoder = new IncrementalEncoder();
  private observedPrompt = 0;
  /** Prompts billed above the window assumed for the model (the window is raised by the second). */
  private billedAboveWindow: number[] = [];
  /**
   * The window a provider's refusal stated for a model ("prompt is too long: N tokens > M maximum"): the window is what
   * the provider enforces, whatever the catalog assumed. Recorded in the session (`abridge.window`), read back on resume.
   */
  private enforcedWindow = new Map<string, number>();
  /** What the options chose to write summaries; undefined leaves it to an integration's model, else the default. */
  private readonly chosenSummarizer: Summarizer | undefined;
  private agentSummarizer: LlmSummarizer | undefined;
  /** Whether requests ask the provider to manage the context (`options.native` for this provider). */
  private nativeMode: NativeMode;
  private readonly clearing: ClearingPlanner;
  /**
   * How much the billed prompt grew from one request to the next, lately (the last few, between compactions): a
   * provider compacts only a request it accepts, so it is asked one step ahead — before the next step could pass the
   * ceiling.
   */
  private growth: number[] = [];
  private lastBilled: number | undefined;
  /** The token-count endpoint answered that it is not there: it is not asked again. */
  private countingRefused = false;
  /** Compactions of this session so far (the working session restarts at each: its own entries cannot say). */
  private compactions = 0;
  /** The count of the context when the provider last measured it (a bill or an endpoint count), in counted tokens. */
  private measuredAt: number | undefined;
  /** Pinned messages, by content (compaction/pins.ts): recorded in the store, applied at every compaction. */
  private pins = new Set<string>();
  private readonly plans = new WeakMap<PlannedCompaction, PlanBasis>();

  constructor(private readonly options: ContextManagerOptions<P>) {
    super();
    const chosen = chooseSummarizer(options, 'ContextManager');
    if (chosen === 'llm')
      throw new AbridgeError(
        'INVALID_INPUT',
        "ContextManager: summarizer 'llm' needs summaryClient, the model that writes the summaries (anthropicClient() of abridge-context/anthropic, openaiClient() of abridge-context/openai, or an LlmClient of your own); with abridgeMiddleware, leave summarizer unset: the wrapped model writes them",
      );
    this.chosenSummarizer = chosen;
    const config = withBudgetDefaults(options.config);
    this.config =
      options.contextWindow !== undefined
        ? { ...config, budget: { ...config.budget, contextWindow: options.contextWindow } }
        : config;
    this.catalog = options.catalog ?? new ModelCatalog(this.config.budget);
    this.model = options.model;
    const restore = options.restore;
    // A window a provider's refusal stated, as the session recorded it (again after each checkpoint).
    if (restore)
      for (const [model, window] of statedWindows(restore.session.entries)) this.enforcedWindow.set(model, window);
    this.info = this.lookupInfo(this.model);
    this.provider = options.provider ?? ((this.info.family === 'claude' ? 'anthropic' : 'openai-chat') as P);
    this.nativeMode = nativeModeOf(options.native, this.provider);
    this.sessionId = options.sessionId ?? stableId(`abridge:${this.now().toISOString()}:${Math.random()}`, 16);
    this.session = restore?.session ?? { format: 'pi', info: { id: this.sessionId }, entries: [], problems: [] };
    this.store = options.store ?? new MemorySessionStore();
    // A shared store is seen through this session's view: refs of other sessions cannot be read by this agent.
    const results = options.results ?? new MemoryResultStore();
    // Whatever goes into the store (a large result offloaded as it arrives, what compaction clears) is redacted on the
    // way in: one wrapper, which compact() recognizes and does not wrap again.
    this.redact = options.compaction?.redact ?? createRedactor(this.config.redaction);
    this.results = redactingStore(isKeyed(results) ? results.forSession(this.sessionId) : results, this.redact);
    this.prompt =
      options.system instanceof PromptBuilder
        ? options.system
        : new PromptBuilder(
            typeof options.system === 'string'
              ? [{ name: 'system', content: options.system, cacheable: true }]
              : (options.system ?? []),
          );
    if (restore) {
      // Counted the way `inspect` counts the session (one tracker for both: the harness' sending rule, its billing),
      // with what the manager sends besides the messages counted as overhead instead of a harness prefix; the bills are
      // followed once that overhead is counted (`ready`).
      this.tracker = trackerFor(this.session, conversationEntries(this.session), {
        prefixTokens: 0,
        windowOf: windowsOf(this.catalog),
      });
      this.counter = this.tracker.counter;
      this.send = this.counter.send;
      for (const e of restore.counted) this.tracker.push(e);
    } else {
      this.counter = new TokenCounter({ family: this.info.family });
      // The manager counts everything it sends (its system prompt and tools as overhead): a bill far from that count is
      // no bill of the request (PromptTracker.observe).
      this.tracker = new PromptTracker({
        counter: this.counter,
        prefixTokens: 0,
        windowOf: windowsOf(this.catalog),
        countsEverything: true,
      });
    }
    this.monitor = new BudgetMonitor(this.budget());
    for (const event of ['context-warning', 'auto-compacting', 'compaction-complete', 'context-blocked'] as const) {
      this.monitor.on(event, (...args: unknown[]) =>
        (this.emit as (e: string, ...a: unknown[]) => boolean)(event, ...args),
      );
    }
    this.agentTools = [];
    this.setTools(options.tools ?? []);
    this.view = restore ? activeMessages(this.session) : [];
    this.clearing = new ClearingPlanner(this.counter);
    this.compactions = restore?.compactions ?? 0;
    if (restore) this.pins = recordedPins(restore.session.entries) ?? this.pins;
  }

  /**
   * Continues a stored session: from its latest compaction snapshot (not the whole history) — the snapshot's messages,
   * then the entries appended after it — or, for a session with none (one imported from a transcript), the session
   * itself, counted as the harness that recorded it sends it (a Codex rollout's long outputs cut to its model's policy,
   * and sent so). The provider's bills recorded after the snapshot anchor the count, as they did before: a resumed
   * manager gives the session the size `inspect` gives it.
   */
  static async resume<P extends RequestProvider = RequestProvider>(
    store: SessionStore,
    sessionId: string,
    options: ResumeOptions<P>,
  ): Promise<ContextManager<P>> {
    const restore = await restoreSession(store, sessionId);
    const ran = restore.settings;
    // What the session ran with stands in for what the caller leaves out (the window and reserve go together: a window
    // given alone gets its own default reserve).
    const model = options.model ?? ran?.model ?? lastModelOf(restore);
    if (!model)
      throw new AbridgeError(
        'INVALID_INPUT',
        `ContextManager.resume: session "${sessionId}" does not say which model it ran with: give options.model`,
      );
    const sized = options.contextWindow !== undefined || options.maxOutputTokens !== undefined;
    const cm = new ContextManager<P>({
      ...(ran?.provider && (REQUEST_PROVIDERS as readonly string[]).includes(ran.provider)
        ? { provider: ran.provider as P }
        : {}),
      ...(!sized && ran?.contextWindow ? { contextWindow: ran.contextWindow } : {}),
      ...(!sized && ran?.reserveTokens ? { maxOutputTokens: ran.reserveTokens } : {}),
      ...options,
      model,
      store,
      sessionId,
      restore,
    } as ContextManagerOptions<P>);
    await cm.ready();
    return cm;
  }

  /**
   * The size of the next request as the manager counts it now (provider tokens, anchored on the last bill when it has
   * one), without walking the session: what `prepare` measures before it compacts.
   */
  size(): { tokens: number; anchored: boolean } {
    const p = this.tracker.predict(this.model);
    return { tokens: p.predicted, anchored: p.anchored };
  }

  /**
   * Replaces the agent's tools (what the next request offers the model, and counts): for loops whose tools change,
   * and for integrations that learn them from each call (the AI SDK middleware). MCP and skill tools may be deferred.
   */
  setTools(tools: readonly ManagedTool[]): void {
    this.agentTools = tools;
    const deferrable = tools.map(
      (t): DeferrableTool => ({
        name: t.name,
        description: t.description ?? '',
        inputSchema: t.inputSchema,
        kind: t.kind ?? 'builtin',
        ...(t.server ? { server: t.server } : {}),
      }),
    );
    this.deferral =
      deferrable.length > 0
        ? new DeferralManager({ tools: deferrable, counter: this.counter, effectiveWindow: this.budget().effective })
        : undefined;
    this.agentToolList = undefined;
  }

  /** Replaces the system prompt's text (a single cacheable section); use `prompt` for sections. */
  setSystem(text: string): void {
    const has = this.prompt.sections.some((x) => x.name === 'system');
    if (has) this.prompt.set('system', text);
    else this.prompt.add({ name: 'system', content: text, cacheable: true });
  }

  /**
   * The max output a request reserves when its caller names none (`maxOutputTokens` of the options, else min(the
   * model's maximum output, 32,000, half the window)): what a host that sets the request's max output itself should ask.
   */
  get reserveTokens(): number {
    return this.reserve();
  }

  /** The model requests go to now. */
  get currentModel(): string {
    return this.model;
  }

  /** Switches the model (its window may differ): recorded in the session; levels are re-evaluated on the next `prepare`. */
  async setModel(model: string): Promise<void> {
    this.switchModel(model);
    await this.appendEntries([{ kind: 'model-change', model: { id: model } }]);
  }

  /**
   * Adds messages to the conversation: a user turn, tool results (`role: 'tool'`). A tool result larger than
   * `offloadResultsOver` tokens is offloaded as it arrives: the model sees its head and tail and how to read the rest.
   */
  async append(...messages: Message[]): Promise<void> {
    const out: Message[] = [];
    for (const m of messages) out.push(await this.offloadLarge(m));
    await this.appendEntries(out.map((message) => ({ kind: 'message' as const, message })));
  }

  /**
   * Adds the model's response, with the usage the provider reported for the request that produced it (`usage`, else
   * the message's own): later counts anchor on it, and the session's tokens-per-counted-token ratio is learned from it —
   * once it is believed (see `doubt`); a bill not believed is recorded as a problem and kept off the message.
   */
  async recordResponse(message: Message, usage?: Usage, appliedEdits?: readonly AppliedEdit[]): Promise<void> {
    const m: Message = { ...message, role: 'assistant', model: message.model ?? this.model };
    usage ??= message.usage;
    delete m.usage;
    const turn = this.turn;
    this.turn = undefined;
    let countedAtStart = turn?.counted ?? this.tracker.contextTokens;
    const first = m.parts[0];
    if (first?.type === 'compaction' && first.marker.native) {
      // The provider compacted the request before answering: its compaction becomes a marker (the whole history stays
      // in the store), the working session restarts from it, and the answer's bill is of that compacted prompt.
      await this.recordProviderCompaction(first, turn?.predicted, usage);
      m.parts = m.parts.slice(1);
      countedAtStart = this.tracker.contextTokens;
      if (usage?.cleared !== undefined) {
        // What the provider cleared was cleared from the prompt it compacted, not from the one it answered.
        const { cleared: _before, ...rest } = usage;
        usage = rest;
      }
    } else this.clearing.observe(appliedEdits);
    // A bill not believed is not kept on the message either: every later count of this session (a compaction's, a
    // snapshot's) reads the message's usage, and would anchor on it.
    const doubt = usage ? this.doubt(usage, m.model!, countedAtStart) : undefined;
    if (usage && !doubt) m.usage = usage;
    if (this.deferral) {
      for (const p of m.parts) if (p.type === 'tool-call') this.deferral.markUsed(p.name);
      this.deferral.nextTurn();
    }
    await this.appendEntries([{ kind: 'message', message: m }], (entry) => {
      if (usage && doubt) {
        this.session.problems.push({
          line: entry.index + 1,
          kind: 'implausible-usage',
          message: `entry ${entry.index}: ${doubt}; not used`,
        });
        this.emit('usage-ignored', { reported: promptTokens(usage), reason: doubt });
      } else if (usage && promptTokens(usage) > 0) {
        if (this.tracker.observe(usage, m.model!, entry.index, countedAtStart).used) this.measuredAt = countedAtStart;
      }
    });
  }

  /**
   * Usage is evidence, not truth: why a bill cannot be one of the request that was sent (PromptTracker.judge), or why it
   * is not believed yet (the first prompt billed above the window assumed: the window is raised only when two requests
   * the provider accepted were billed above it); undefined when it is believed. A bill not believed calibrates nothing
   * and moves no window.
   */
  private doubt(usage: Usage, model: string, countedAtStart: number): string | undefined {
    const billed = promptTokens(usage);
    const verdict = this.tracker.judge(usage, model, countedAtStart);
    if (!verdict.used) return verdict.problem;
    if (billed > this.info.contextWindow && model === this.model) {
      this.billedAboveWindow.push(billed);
      if (this.billedAboveWindow.length < 2)
        return `a prompt of ${billed} tokens was billed above the ${this.info.contextWindow}-token window assumed for ${model} (believed when a second request is)`;
      // Twice: evidence of a larger window (a 1M-context variant).
      this.observedPrompt = Math.max(this.observedPrompt, ...this.billedAboveWindow);
      this.info = this.lookupInfo(this.model, { observedPrompt: this.observedPrompt });
    }
    return undefined;
  }

  /**
   * Records the provider's response to the last prepared request, as the provider's SDK returned it (an Anthropic
   * `Message`, an OpenAI `ChatCompletion` or Responses `Response`, in this manager's wire format): the assistant message
   * is appended and its usage calibrates the next counts. Returns the message, for the caller to run its tool calls.
   */
  async record(response: unknown): Promise<ResponseResult> {
    const result = fromResponse(this.provider, response);
    await this.recordResponse(result.message, result.usage, result.appliedEdits);
    return result;
  }

  /**
   * A compaction the provider made (its block or item opened the response): recorded as a compaction marker whose view
   * is that block alone — the provider drops whatever precedes it — and the working session restarts from it, as after
   * abridge's own compactions. The store keeps the whole history, the marker and a snapshot a resume starts from.
   */
  private async recordProviderCompaction(
    part: CompactionPart,
    before: number | undefined,
    usage?: Usage,
  ): Promise<void> {
    const native = part.marker.native!;
    const number = ++this.compactions;
    const block: CompactionPart = { type: 'compaction', marker: { ...part.marker, number } };
    const view: Message[] = [{ role: 'assistant', parts: [block], model: this.model, provider: native.provider }];
    const entries = this.session.entries;
    const parentId = entries.length > 0 ? (entries[entries.length - 1]!.id ?? null) : this.tip;
    const marker: AbridgeMarker = {
      number,
      summary: part.marker.summary,
      source: 'abridge',
      trigger: 'provider',
      strategies: [`${native.provider}-compaction`],
      ...(before !== undefined ? { tokensBefore: Math.round(before) } : {}),
      native,
      view,
    };
    const entry: Entry = {
      kind: 'compaction',
      compaction: marker,
      index: entries.length,
      id: stableId(`${this.sessionId}:${entries.length}:${Math.random()}`, 8),
      parentId,
      timestamp: this.now().getTime(),
    };
    entries.push(entry);
    this.tracker.push(entry);
    this.view = view.slice();
    const after = usage && promptTokens(usage) > 0 ? promptTokens(usage) : this.tracker.predict(this.model).predicted;
    marker.tokensAfter = after;
    const { index: _index, ...draft } = entry;
    const { view: _snapshotHoldsIt, ...snapshotMarker } = marker;
    await this.store.recordCompaction(this.sessionId, [draft], {
      messages: view.slice(),
      marker: snapshotMarker,
      tokens: after,
    });
    this.restartFrom(this.view, entry.id!);
    this.clearing.reset();
    this.lastBilled = undefined;
    if (this.enforcedWindow.size > 0)
      await this.appendEntries([...this.enforcedWindow].map(([model, window]) => windowRecord(model, window)));
    // So do the pins.
    if (this.pins.size > 0) await this.appendEntries([pinsRecord(this.pins)]);
    this.monitor.compactionComplete({ before: before ?? after, after, strategies: marker.strategies ?? [] });
  }

  /**
   * Measures, emits what the fill calls for, compacts at the compact level (to the target) and whenever the request
   * would not fit window − max output, and returns the request in the provider's shape. Throws ContextOverflowError,
   * naming what does not fit, when nothing can make it fit: a request the provider would refuse is never returned.
   */
  async prepare(options: PrepareOptions = {}): Promise<PreparedTurn<P>> {
    await this.ready();
    await this.saveSettings();
    const maxOutput = options.maxOutputTokens ?? this.reserve();
    if (this.nativeMode !== 'never' && options.extra && 'context_management' in options.extra)
      throw new AbridgeError(
        'INVALID_INPUT',
        `prepare: extra.context_management: the manager writes it itself with native '${this.nativeMode}' (leave it out, or set native: 'never')`,
      );
    // The system prompt and tools as they will be sent: rendered, counted, then placed in the request — again after a
    // compaction that made one of abridge's own tools usable (what it offloaded can be read back).
    let tools: ToolSpec[] = [];
    let built: BuiltPrompt | undefined;
    const render = async () => {
      tools = await this.requestTools();
      built = renderPrompt(this.provider, {
        model: this.model,
        prompt: this.prompt,
        tools,
        counter: this.counter,
        ratio: this.tracker.ratioOf(this.model),
      });
      this.countOverhead(tools, built);
    };
    await render();
    const offered = () => this.stored;
    const ceiling = this.info.contextWindow - maxOutput;
    const budget = this.budget(maxOutput);
    let prediction = this.tracker.predict(this.model);
    const hardLimit = () => ceiling - this.margin(prediction.anchored, maxOutput);
    // The largest step lately: a provider's compaction is asked one step ahead (see `growth`).
    const ahead = Math.max(0, ...this.growth);
    // What the provider's own edits are asked to remove, and what the provider bills then.
    let native = this.planNative(prediction.predicted, budget.marks);
    const billed = () => Math.round(prediction.predicted - native.freed);
    const auto = this.options.autoCompact !== false;
    const wantsRoom = (tokens: number) => budget.level(tokens) === 'compact' || budget.level(tokens) === 'block';
    this.monitor.setBudget(budget);
    const level = this.monitor.update(billed(), { compacting: auto && wantsRoom(billed()) });
    // A max output that leaves the prompt no room (16,384 asked of a 16,000 window): no compaction can help.
    if (hardLimit() <= 0)
      throw new ContextOverflowError(
        this.overflowDetails(maxOutput, billed(), this.margin(prediction.anchored, maxOutput)),
      );
    let compaction: CompactionResult | undefined;
    const compactHere = async (target: number) => {
      const was = offered();
      const result = await this.compactTo(target);
      if (offered() !== was) await render();
      prediction = this.tracker.predict(this.model);
      native = this.planNative(prediction.predicted, budget.marks);
      return result;
    };
    // The provider compacts, when it can and may — when its clearing cannot keep the bill under the compact level, or
    // one step before the next step could pass what it accepts even with every tool use it may clear cleared (a
    // provider compacts only a request it accepts): else abridge does at the compact level (unless it may not: `only`).
    const asked =
      auto && this.nativeMode !== 'never' && (wantsRoom(billed()) || (native.floor ?? billed()) + ahead > hardLimit())
        ? this.askProviderToCompact(native, billed(), budget.marks)
        : undefined;
    if (asked) native = asked;
    else if (auto && (level === 'compact' || level === 'block') && this.nativeMode !== 'only')
      compaction = await compactHere(Math.min(budget.marks.target, hardLimit()));
    else if (
      auto &&
      this.nativeMode === 'prefer' &&
      native.freed > NATIVE_CONSOLIDATE_WINDOWS * this.info.contextWindow
    ) {
      // What the server clears grew past a few windows: the request as sent would grow without end (toward the
      // provider's request-size limit: Anthropic's is 32 MB) while the model reads none of it. abridge clears it
      // itself, once — results go to the result store, where `read_result` reads them back, which the server's
      // placeholder cannot offer — and the boundary starts again from nothing. One cache break, as a move of the
      // boundary. It aims at what the server leaves (not lower: this is no call for a summary).
      compaction = await compactHere(Math.min(Math.max(budget.marks.target, billed()), hardLimit()));
    }
    if (billed() > hardLimit()) {
      // Over the hard ceiling (a huge result, a small window, a large max output): compact to the ceiling itself — a
      // compaction that cannot reach a lower target keeps a hand-off of the archived work, and this one lets it shrink
      // further where that is what fits the request. (A provider compacts only a prompt it accepts: not this one.)
      if (this.nativeMode === 'only')
        throw new ContextOverflowError({
          ...this.overflowDetails(maxOutput, billed(), this.margin(prediction.anchored, maxOutput)),
          nativeOnly: true,
        });
      const result = await compactHere(compaction ? hardLimit() : Math.min(budget.marks.target, hardLimit()));
      compaction = result.entry ? result : (compaction ?? result);
      if (billed() > hardLimit())
        throw new ContextOverflowError(
          this.overflowDetails(maxOutput, billed(), this.margin(prediction.anchored, maxOutput)),
        );
    }
    const build = () => {
      const extra: Record<string, unknown> = { ...options.extra };
      if (native.edits.length > 0)
        extra.context_management = this.provider === 'anthropic' ? { edits: native.edits } : native.edits;
      // The view itself while it only grows (the encoder re-encodes from its last group on); a resumed harness's
      // sending rule makes a new array each turn.
      return this.encoder.build(
        this.provider,
        this.send ? this.sent(this.view) : this.view,
        requestOptions(built!, {
          model: this.model,
          maxOutputTokens: maxOutput,
          tools,
          promptTokens: billed(),
          ...(Object.keys(extra).length > 0 ? { extra } : {}),
        }),
      );
    };
    let request = build();
    // The provider's own count, where abridge's figure is mostly its own count: it anchors this request and the next.
    let estimated: number | undefined;
    const count =
      this.options.countTokens &&
      !this.countingRefused &&
      (this.mostlyCounted(prediction.anchored, billed()) || (native.unmeasured ?? 0) >= billed() / 4)
        ? await this.countByProvider(request, native)
        : undefined;
    if (count) {
      estimated = billed();
      const exact = this.anchorOnCount(count, native.freed);
      if (exact !== undefined) {
        prediction = { ...this.tracker.predict(this.model), predicted: exact + native.freed };
        if (billed() > hardLimit()) {
          if (this.nativeMode === 'only')
            throw new ContextOverflowError({
              ...this.overflowDetails(maxOutput, billed(), this.margin(prediction.anchored, maxOutput)),
              nativeOnly: true,
            });
          const result = await compactHere(Math.min(budget.marks.target, hardLimit()));
          if (result.entry) compaction = result;
          if (billed() > hardLimit())
            throw new ContextOverflowError(
              this.overflowDetails(maxOutput, billed(), this.margin(prediction.anchored, maxOutput)),
            );
          request = build();
        }
      }
    }
    this.turn = {
      maxOutput,
      counted: this.tracker.contextTokens,
      predicted: billed(),
      freed: native.freed,
    };
    this.noteGrowth(billed(), compaction?.entry !== undefined);
    const pressure: Pressure = {
      predicted: billed(),
      anchored: prediction.anchored,
      window: this.info.contextWindow,
      maxOutputTokens: maxOutput,
      ceiling,
      fill: budget.fill(billed()),
      level: budget.level(billed()),
      marks: budget.marks,
    };
    if (native.edits.length > 0) pressure.sent = prediction.predicted;
    if (estimated !== undefined) pressure.estimated = estimated;
    const out: PreparedTurn<P> = {
      provider: this.provider,
      request,
      messages: this.sent(this.view),
      pressure,
      breakdown: () => this.breakdown(),
    };
    if (compaction?.entry) out.compaction = compaction;
    const betas = this.provider === 'anthropic' ? this.betasOf(native) : [];
    if (betas.length > 0) out.betas = betas;
    if (native.edits.length > 0)
      out.native = { edits: native.edits, cleared: native.cleared, freed: native.freed, compacting: native.compacting };
    return out;
  }

  /**
   * What this request asks of the provider's own context management (none with `native: 'never'`): Anthropic's
   * tool-result clearing (the boundary of `ClearingPlanner`), or the Responses API's compaction as a safety net at the
   * compact mark.
   */
  private planNative(sent: number, marks: Pressure['marks']): NativePlan {
    const none: NativePlan = { edits: [], betas: [], freed: 0, cleared: 0, compacting: false };
    if (this.nativeMode === 'never') return none;
    if (this.provider === 'openai-responses')
      return { ...none, edits: [responsesCompaction(sent, marks.compact, false)] };
    const plan = this.clearing.plan(this.view, {
      sent,
      compactAt: marks.compact,
      target: marks.target,
      ratio: this.tracker.ratioOf(this.model),
    });
    if (!plan.edit) return { ...none, floor: plan.floor };
    return {
      edits: [plan.edit],
      betas: [CONTEXT_MANAGEMENT_BETA],
      freed: plan.freed,
      cleared: plan.cleared,
      compacting: false,
      floor: plan.floor,
      ...(plan.unmeasured !== undefined ? { unmeasured: plan.unmeasured } : {}),
    };
  }

  /**
   * The plan with the provider asked to compact this request, when it can: Anthropic above its least trigger, the
   * Responses API always. Undefined when it cannot (abridge compacts then, unless `only`).
   */
  private askProviderToCompact(plan: NativePlan, billed: number, marks: Pressure['marks']): NativePlan | undefined {
    if (this.provider === 'openai-responses')
      return { ...plan, edits: [responsesCompaction(billed, marks.compact, true)], compacting: true };
    if (this.provider !== 'anthropic') return undefined;
    // (Not abridge's standing instructions: the edit's `instructions` replace the provider's summarization prompt.)
    const edit = anthropicCompactionEdit(billed);
    if (!edit) return undefined;
    return { ...plan, edits: [...plan.edits, edit], betas: [...plan.betas, COMPACTION_BETA], compacting: true };
  }

  /**
   * The provider's count of a request, or undefined when the endpoint failed: the request goes with abridge's own figure
   * (`count-failed`), and an endpoint that is not there (a 4xx other than a rate limit) is not asked again.
   */
  private async countByProvider(
    body: RequestBody,
    native: NativePlan,
  ): Promise<{ inputTokens: number; originalInputTokens?: number } | undefined> {
    const betas = this.provider === 'anthropic' ? this.betasOf(native) : [];
    try {
      return await this.options.countTokens!({ body, ...(betas.length > 0 ? { betas } : {}) });
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      const absent = typeof status === 'number' && status >= 400 && status < 500 && status !== 429;
      if (absent) this.countingRefused = true;
      this.emit('count-failed', { message: err instanceof Error ? err.message : String(err), again: !absent });
      return undefined;
    }
  }

  /**
   * Whether the prediction is mostly abridge's own count: no bill anchors it, or what was added since the provider last
   * measured the context is at least half of it.
   */
  private mostlyCounted(anchored: boolean, billed: number): boolean {
    if (!anchored || this.measuredAt === undefined) return true;
    const fresh = (this.tracker.contextTokens - this.measuredAt) * this.tracker.ratioOf(this.model);
    return fresh >= billed / 2;
  }

  /**
   * Anchors the tracker on the provider's count of the request about to be sent (as a bill of it: the same judgement
   * applies); the count of what the provider will bill, or undefined when it is not believed.
   */
  private anchorOnCount(
    count: { inputTokens: number; originalInputTokens?: number },
    freed: number,
  ): number | undefined {
    const billed = count.inputTokens;
    if (!Number.isFinite(billed) || billed <= 0) return undefined;
    const sent = count.originalInputTokens ?? billed + freed;
    const usage: Usage = { input: billed, output: 0, cacheRead: 0, cacheWrite: 0 };
    if (sent > billed) usage.cleared = Math.round(sent - billed);
    const at = this.tracker.contextTokens;
    const verdict = this.tracker.observe(usage, this.model, this.session.entries.length - 1, at);
    if (!verdict.used) return undefined;
    this.measuredAt = at;
    return billed;
  }

  /** Keeps the last few growths of the billed prompt between requests (none across a compaction). */
  private noteGrowth(billed: number, compacted: boolean): void {
    if (!compacted && this.lastBilled !== undefined && billed > this.lastBilled) {
      this.growth.push(billed - this.lastBilled);
      if (this.growth.length > 8) this.growth.shift();
    }
    this.lastBilled = billed;
  }

  /** The Anthropic betas a request needs: its edits', and compaction's while a compaction block is sent back. */
  private betasOf(plan: NativePlan): string[] {
    const betas = new Set(plan.betas);
    if (holdsAnthropicCompaction(this.view)) betas.add(COMPACTION_BETA);
    return [...betas];
  }

  /**
   * After the provider refused the last prepared request as too long (`contextOverflow(err)` recognizes the refusal):
   * compacts so that a retry fits, aiming under the ceiling by as much as the provider's count exceeded abridge's (when
   * the refusal says how many tokens it counted), else by a quarter. Emits `overflow`; false when nothing could be done.
   */
  async recoverFromOverflow(
    overflow: { message?: string; promptTokens?: number; limit?: number } | string = {},
  ): Promise<boolean> {
    const info = typeof overflow === 'string' ? { message: overflow } : overflow;
    await this.learnFromRefusal(info);
    await this.saveSettings();
    // The refused request's own reserve (the retry's may differ; a window learned from the refusal halves it at most).
    const maxOutput = Math.min(this.turn?.maxOutput ?? this.reserve(), Math.floor(this.info.contextWindow / 2));
    const ceiling = this.info.contextWindow - maxOutput;
    const before = this.tracker.predict(this.model);
    // How much more the provider counted than predicted for the refused request (the last prepared one; what was
    // appended since is not in the provider's count), at least the share that made it refuse.
    const refused = this.turn?.predicted ?? before.predicted;
    const factor = Math.max(
      1.05,
      info.promptTokens && refused > 0 ? info.promptTokens / refused : ceiling / Math.max(1, refused),
      MANAGER_DEFAULTS.overflowFactor,
    );
    const room = ceiling * (1 - MANAGER_DEFAULTS.anchoredMargin);
    // A refusal of prompt + max output over a window abridge did not know: once the window is learned, the reserve is
    // halved at most and the prompt as the provider counted it may already fit — the retry needs no compaction.
    const counted = info.promptTokens !== undefined ? Math.max(info.promptTokens, before.predicted) : undefined;
    if (counted !== undefined && info.limit !== undefined && counted <= room) {
      this.emit('overflow', {
        message: info.message ?? 'the provider refused the request as too long',
        predicted: before.predicted,
        ceiling,
        recovered: true,
      });
      return true;
    }
    const target = Math.floor(Math.min(this.budget(maxOutput).marks.target, room / factor));
    const result = await this.compactTo(target);
    const recovered = result.entry !== undefined;
    this.emit('overflow', {
      message: info.message ?? 'the provider refused the request as too long',
      predicted: before.predicted,
      ceiling,
      recovered,
    });
    return recovered;
  }

  /**
   * After the provider refused the last request for asking for its own context management (a deployment, proxy or
   * compatible server that does not offer it — `nativeRefusal(err)` recognizes the refusal): from now on this session
   * asks nothing of the provider and abridge compacts by itself (`native: 'never'`); emits `native-refused`. True when the caller should prepare the request again; false for any other error, or when
   * nothing was asked of the provider.
   */
  recoverFromNativeRefusal(error: unknown): boolean {
    if (this.nativeMode === 'never') return false;
    const message = nativeRefusal(error);
    if (message === undefined) return false;
    this.nativeMode = 'never';
    this.clearing.reset();
    this.emit('native-refused', { message });
    return true;
  }

  /**
   * What a refusal says is evidence: the window it states becomes this session's window for the model (recorded in
   * the store, so a resumed session keeps it), and a count of the refused prompt far above the prediction anchors the
   * next one — the provider counted what abridge could not (a tokenizer it does not have, content it does not see).
   */
  private async learnFromRefusal(info: { promptTokens?: number; limit?: number }): Promise<void> {
    const { promptTokens } = info;
    // A refusal that states no figures (the Responses API: "Your input exceeds the context window of this model") still
    // bounds the window: the request refused held the prompt predicted and asked for its max output — the window is
    // under that. Taken as the window until two bills above it say otherwise (as a catalog window is).
    const limit =
      info.limit ??
      (promptTokens === undefined && this.turn && this.tracker.predict(this.model).anchored
        ? Math.floor(this.turn.predicted + this.turn.maxOutput) - 1
        : undefined);
    if (limit !== undefined && Number.isFinite(limit) && limit >= 1_000 && limit < this.info.contextWindow) {
      this.enforcedWindow.set(this.model, limit);
      this.info = this.lookupInfo(this.model);
      this.monitor.setBudget(this.budget());
      await this.appendEntries([windowRecord(this.model, limit)]);
    }
    const refused = this.turn?.predicted;
    const counted = this.turn?.counted;
    if (promptTokens !== undefined && refused !== undefined && counted !== undefined && promptTokens > refused * 1.05)
      this.tracker.observe(
        // The provider counted the prompt its own edits left: what was sent also held what they removed.
        {
          input: promptTokens,
          output: 0,
          cacheRead: 0,
          cacheWrite: 0,
          ...(this.turn?.freed ? { cleared: Math.round(this.turn.freed) } : {}),
        },
        this.model,
        this.session.entries.length - 1,
        counted,
      );
  }

  /** How full the window is now, and where the tokens go (walks the whole working session). */
  breakdown(): ContextBreakdown {
    const settings = {
      ...this.config.budget,
      model: this.model,
      prefixTokens: Math.round(this.overheadCounted * this.tracker.ratioOf(this.model)),
    };
    settings.reserveTokens = this.reserve();
    return contextBreakdown(this.session, { settings, catalog: this.catalog });
  }

  /**
   * Compacts now, to `target` tokens — by default the compaction target, or half the current size when under it.
   * `instructions`: what the person (or the agent, through `compact_context`) asked this summary to keep or focus on;
   * it goes to the summarizer after the standing `compaction.instructions`. A number is the target (the older form).
   */
  async compactNow(options: number | { target?: number; instructions?: string } = {}): Promise<CompactionResult> {
    const { target, instructions } = compactNowOptions(options);
    const p = this.tracker.predict(this.model);
    const marks = this.budget().marks;
    return this.compactTo(target ?? Math.min(marks.target, Math.floor(p.predicted / 2)), instructions);
  }

  /**
   * The compaction `compactNow` would make, without making it: run on a copy of the session (results it would store
   * kept aside in memory), with the same target (`target`, default as compactNow's) and `instructions`. Inspect it,
   * then `applyCompaction(plan)` records exactly it — or nothing happens.
   */
  async planCompaction(options: { target?: number; instructions?: string } = {}): Promise<PlannedCompaction> {
    const { target: asked, instructions } = compactNowOptions(options);
    await this.ready();
    const p = this.tracker.predict(this.model);
    const target = asked ?? Math.min(this.budget().marks.target, Math.floor(p.predicted / 2));
    const copy: Session = { ...this.session, entries: this.session.entries.slice() };
    const before = activeView(copy);
    const summaries = new Map<string, string>();
    const base: Summarizer = this.chosenSummarizer ?? this.agentSummarizer ?? new ExtractiveSummarizer();
    const recording: Summarizer = {
      name: base.name,
      ...(base.local ? { local: true } : {}),
      summarize: async (request) => {
        const text = await base.summarize(request);
        summaries.set(summaryRequestKey(request), text);
        return text;
      },
    };
    const result = await compact(copy, {
      ...this.compactOptions(target, instructions),
      // Results go to a store of this run alone, under the refs the manager's own store gives them (it is the same kind
      // of view of a content-addressed store: the plan's references are the ones applying it makes).
      store: redactingStore(
        isKeyed(this.options.results ?? new MemoryResultStore())
          ? new MemoryResultStore().forSession(this.sessionId)
          : new MemoryResultStore(),
        this.redact,
      ),
      summarizer: recording,
    });
    const after = activeView(copy);
    const shown = new Map(after.filter((v) => v.entry !== undefined).map((v) => [v.entry!, v]));
    const edits = new Map((result.marker?.edits ?? []).map((e) => [e.entry, e.how]));
    const pinned = this.pinnedTest();
    const kept = after.filter((v) => v.entry !== undefined && !edits.has(v.entry)).map((v) => v.message);
    const plan: PlannedCompaction = {
      target,
      ...(instructions ? { instructions } : {}),
      beforeTokens: result.beforeTokens,
      afterTokens: result.afterTokens,
      reachedTarget: result.reachedTarget,
      archived: before.filter((v) => v.entry !== undefined && !shown.has(v.entry)).map((v) => v.message),
      edited: after
        .filter((v) => v.entry !== undefined && edits.has(v.entry))
        .map((v) => ({
          before: this.session.entries[v.entry!]!.message!,
          after: v.message,
          how: edits.get(v.entry!)!,
        })),
      kept,
      pinned: kept.filter((m) => pinned(m)),
      summary: result.marker?.summary ?? '',
      view: after.map((v) => v.message),
      result,
    };
    this.plans.set(plan, { ...this.basis(), summaries, marker: markerShape(result.marker) });
    return plan;
  }

  /**
   * Records a plan of `planCompaction` — exactly that compaction: its archived range, its edits and its summary (the
   * same summarizer answers, replayed), or `summary` in place of its summary (a person's edit: checked — the tool pairs
   * stay whole, and the view must fit the plan's target, else INVALID_INPUT naming the summary's size and the room). It
   * is recorded like any compaction (marker and snapshot in the store, one transaction). A plan of a session that has
   * changed since (an entry appended, a compaction made, pins changed) is refused (CONFLICT): plan again.
   */
  async applyCompaction(plan: PlannedCompaction, options: { summary?: string } = {}): Promise<CompactionResult> {
    const basis = this.plans.get(plan);
    if (!basis)
      throw new AbridgeError(
        'INVALID_INPUT',
        'applyCompaction: not a plan of this manager (make one with planCompaction())',
      );
    if (options.summary !== undefined && (typeof options.summary !== 'string' || options.summary.trim() === ''))
      throw new AbridgeError('INVALID_INPUT', "applyCompaction: summary: expected the summary's text (not empty)");
    const now = this.basis();
    const changed = [
      now.entries !== basis.entries || now.tip !== basis.tip ? 'entries were appended or compacted' : '',
      now.compactions !== basis.compactions ? 'a compaction was made' : '',
      now.pins !== basis.pins ? 'pins changed' : '',
      now.model !== basis.model ? `the model changed (${basis.model} → ${now.model})` : '',
    ].filter(Boolean);
    if (changed.length > 0)
      throw new AbridgeError(
        'CONFLICT',
        `applyCompaction: the plan is stale — the session changed since it was made (${changed.join('; ')}): make a new one with planCompaction()`,
      );
    const base: Summarizer = this.chosenSummarizer ?? this.agentSummarizer ?? new ExtractiveSummarizer();
    const replaying: Summarizer = {
      name: base.name,
      ...(base.local ? { local: true } : {}),
      summarize: async (request) => basis.summaries.get(summaryRequestKey(request)) ?? base.summarize(request),
    };
    return this.compactTo(plan.target, plan.instructions, {
      summarizer: replaying,
      ...(options.summary !== undefined ? { summary: options.summary } : {}),
      check: (result) => {
        if (markerShape(result.marker) !== basis.marker)
          throw new AbridgeError(
            'CONFLICT',
            'applyCompaction: the compaction no longer comes out as planned (the summarizer answered otherwise): make a new plan',
          );
        const s = result.editedSummary;
        if (s && !result.reachedTarget)
          throw new AbridgeError(
            'INVALID_INPUT',
            `applyCompaction: the summary given is ${s.tokens} tokens, and the rest of the view leaves it ${Math.max(0, s.room)} of the target of ${plan.target}: shorten it by ${s.tokens - Math.max(0, s.room)} tokens`,
          );
      },
    });
  }

  /**
   * Pins messages: they reach the model verbatim at every later compaction (never cleared, shortened or archived),
   * counted among what must stay — a target they make unreachable is missed, and they are named. `what`: an entry id
   * of the working session, a message appended (by its content), or a test of each message the model sees now (every
   * match is pinned). A message appended with `pinned: true` is pinned too. Kept in the store: a resumed manager keeps
   * them. Returns how many messages were pinned.
   */
  async pin(what: string | Message | ((message: Message) => boolean)): Promise<number> {
    return this.changePins(what, true);
  }

  /** Unpins what `pin` pinned (the same forms); a message's own `pinned: true` stays. Returns how many were unpinned. */
  async unpin(what: string | Message | ((message: Message) => boolean)): Promise<number> {
    return this.changePins(what, false);
  }

  /**
   * Undoes a compaction still in view — the last one, `marker` (numbered as `compaction.number` and `abridge inspect`
   * number them), or with `all` the first: the working session restarts from the view as it was before it, followed by
   * every message appended since. The compactions in view after it are undone with it, as `abridge uncompact <file>
   * --marker N` undoes them (the view before N is one none of them had touched); each one's messages appended after
   * it stay. Nothing is deleted: the store keeps the compactions, and records the undo as a checkpoint of its own (a
   * marker with `trigger: "undo"`, `undoes` naming the number whose earlier view it restores, `undone` every number it
   * took back, and its snapshot), so that a manager resumed from the store continues from the restored view too.
   * Called again, it undoes the compaction in view before. Refused (INVALID_INPUT) when no compaction is in view, or
   * `marker` is not one of those in view (already undone, or never made: the error names those in view).
   * Returns the numbers undone, last first, and the manager's counts of the view before and after (tokens, messages).
   */
  async undoCompaction(options: { marker?: number; all?: boolean } = {}): Promise<{
    undone: number[];
    beforeTokens: number;
    afterTokens: number;
    beforeMessages: number;
    afterMessages: number;
  }> {
    const { marker: wanted, all } = options ?? {};
    if (wanted !== undefined && (!Number.isInteger(wanted) || wanted < 1))
      throw new AbridgeError(
        'INVALID_INPUT',
        `undoCompaction: marker: expected a compaction number (1, 2, …), got ${String(wanted)}`,
      );
    if (wanted !== undefined && all)
      throw new AbridgeError(
        'INVALID_INPUT',
        'undoCompaction: marker and all: choose one (all undoes every compaction)',
      );
    await this.ready();
    const log = await loadSession(this.store, this.sessionId);
    const branch = conversationEntries(log);
    const walk = walkUndos(branch);
    const { inView } = walk;
    if (inView.length === 0)
      throw new AbridgeError(
        'INVALID_INPUT',
        `undoCompaction: no compaction in view in "${this.sessionId}"; nothing to undo`,
      );
    const target = all
      ? inView[0]!
      : wanted === undefined
        ? inView[inView.length - 1]!
        : inView.find((e) => e.compaction!.number === wanted);
    if (!target) throw notInView(this.sessionId, wanted!, branch, walk);
    const undone = inView.slice(inView.indexOf(target)).reverse();
    // abridge's compaction written into a pi file is a branch of its own: what it left is not on this path, and the
    // records after it start with its view re-appended, not with messages added since.
    const rebased = undone.find((e) => {
      const raw = e.raw as {
        details?: { abridge?: { rebased?: unknown } };
        data?: { abridge?: { rebased?: unknown } };
      };
      return raw?.details?.abridge?.rebased === true || raw?.data?.abridge?.rebased === true;
    });
    if (rebased)
      throw new AbridgeError(
        'INVALID_INPUT',
        `undoCompaction: compaction #${rebased.compaction!.number} of "${this.sessionId}" was written into a pi file as a new branch; undo it in the transcript (abridge uncompact <file>) and import that`,
      );
    const k = branch.indexOf(target);
    // The view before it (its own earlier compactions and undos applied), then every message appended after it: the
    // later compactions' markers and checkpoints are left out, the messages between them are not.
    const view = [
      ...viewOf(branch.slice(0, k)).map((v) => v.message),
      ...branch
        .slice(k + 1)
        .filter((e) => e.message && !e.compaction)
        .map((e) => e.message!),
    ].map((m) => (m.usage ? withoutUsage(m) : m));
    const before = this.tracker.predict(this.model);
    const beforeMessages = activeMessages(this.session).length;
    const checkpoint: UndoCheckpoint = {
      number: ++this.compactions,
      summary: '',
      source: 'abridge',
      trigger: 'undo',
      strategies: [],
      undoes: target.compaction!.number,
      undone: undone.map((e) => e.compaction!.number),
      tokensBefore: before.predicted,
      view,
    };
    const entries = this.session.entries;
    const id = stableId(`${this.sessionId}:undo:${entries.length}:${Math.random()}`, 8);
    const marker: Entry = {
      index: entries.length,
      kind: 'compaction',
      id,
      parentId: entries.length > 0 ? (entries[entries.length - 1]!.id ?? null) : this.tip,
      timestamp: this.now().getTime(),
      compaction: checkpoint,
    };
    entries.push(marker);
    this.view = view.slice();
    this.tracker.push(marker);
    const after = this.tracker.predict(this.model);
    checkpoint.tokensAfter = after.predicted;
    const { index: _index, ...draft } = marker;
    const { view: _snapshotHoldsIt, ...snapshotMarker } = checkpoint;
    await this.store.recordCompaction(this.sessionId, [{ ...draft, compaction: checkpoint }], {
      messages: view.slice(),
      marker: snapshotMarker,
      tokens: after.predicted,
    });
    this.restartFrom(this.view, id);
    // As after a compaction: what a resumed session keeps besides the messages goes after the checkpoint again.
    if (this.enforcedWindow.size > 0)
      await this.appendEntries([...this.enforcedWindow].map(([model, window]) => windowRecord(model, window)));
    if (this.pins.size > 0) await this.appendEntries([pinsRecord(this.pins)]);
    return {
      undone: checkpoint.undone!,
      beforeTokens: before.predicted,
      afterTokens: after.predicted,
      beforeMessages,
      afterMessages: activeMessages(this.session).length,
    };
  }

  private async changePins(what: string | Message | ((message: Message) => boolean), on: boolean): Promise<number> {
    await this.ready();
    const name = on ? 'pin' : 'unpin';
    let messages: Message[];
    if (typeof what === 'string') {
      const entry = this.session.entries.find((e) => e.id === what);
      if (!entry?.message)
        throw new AbridgeError(
          'INVALID_INPUT',
          `${name}: no message with entry id "${what}" in the context the model sees now${entry ? ` (that entry is ${entry.kind})` : ''}`,
        );
      messages = [entry.message];
    } else if (typeof what === 'function') messages = activeMessages(this.session).filter((m) => what(m));
    else if (what && typeof what === 'object' && Array.isArray((what as Message).parts)) messages = [what];
    else
      throw new AbridgeError(
        'INVALID_INPUT',
        `${name}: expected an entry id, a message or a test of each message, got ${what === null ? 'null' : typeof what}`,
      );
    let changed = 0;
    for (const m of messages) {
      const key = pinKey(m);
      if (on === this.pins.has(key)) continue;
      if (on) this.pins.add(key);
      else this.pins.delete(key);
      changed++;
    }
    if (changed > 0) await this.appendEntries([pinsRecord(this.pins)]);
    return changed;
  }

  /** Whether a message is pinned: its own field, the manager's pins, the compaction option's test. */
  private pinnedTest(): (m: Message, entry?: number) => boolean {
    const given = this.options.compaction?.pinned;
    const set = given === undefined || typeof given === 'function' ? undefined : new Set<number>(given);
    return (m, entry) =>
      m.pinned === true ||
      (this.pins.size > 0 && this.pins.has(pinKey(m))) ||
      (entry !== undefined && (set?.has(entry) === true || (typeof given === 'function' && given(m, entry))));
  }

  /** The options every compaction of this manager runs with (compactTo, planCompaction). */
  private compactOptions(target: number, asked?: string): CompactOptions {
    const { instructions: standing, ...compaction } = this.options.compaction ?? {};
    const instructions = [standing?.trim(), asked?.trim()].filter(Boolean).join('\n');
    const summarizer = this.chosenSummarizer ?? this.agentSummarizer;
    const pinned = this.pinnedTest();
    return {
      ...compaction,
      target,
      force: true,
      store: this.results,
      ...(summarizer ? { summarizer } : {}),
      ...(instructions ? { instructions } : {}),
      pinned: (m, entry) => pinned(m, entry),
      prefixTokens: Math.round(this.overheadCounted * this.tracker.ratioOf(this.model)),
      redact: this.redact,
      ...(this.options.now ? { now: this.options.now } : {}),
    };
  }

  private basis(): Omit<PlanBasis, 'summaries' | 'marker'> {
    const entries = this.session.entries;
    return {
      entries: entries.length,
      tip: entries[entries.length - 1]?.id ?? this.tip ?? undefined,
      pins: [...this.pins].sort().join(','),
      model: this.model,
      compactions: this.compactions,
    };
  }

  /**
   * Lets the agent's own model write the summaries, for integrations that can call it (the AI SDK middleware does, with
   * the model it wraps): `complete` sends one completion to that model; its window and output limit are the manager's
   * model's, as `setModel` changes them. Taken only when the options chose no summarizer (neither `summarizer` nor
   * `summaryClient`): returns whether it was. The extractive summary stands in for an answer that fails its checks.
   */
  summarizeWithAgentModel(complete: LlmClient['complete']): boolean {
    if (this.chosenSummarizer) return false;
    const manager = this;
    const client: LlmClient = {
      get model() {
        return manager.model;
      },
      get contextWindow() {
        return manager.info.contextWindow;
      },
      get maxOutputTokens() {
        return manager.info.maxOutputTokens;
      },
      complete,
    };
    this.agentSummarizer = new LlmSummarizer(client);
    return true;
  }

  /**
   * abridge's tools for the agent (read_result, compact_context, tool_search when tools are deferred, memory when a
   * root is set). Loaded on first use: their input schemas need zod, which the core does not load.
   */
  async tools(): Promise<AgentTool[]> {
    if (this.options.agentTools === false) return [];
    this.agentToolList ??= (async () => {
      const [{ readResultTool }, { compactContextTool }] = await Promise.all([
        import('../tools/read-result.js'),
        import('../tools/compact-context.js'),
      ]);
      const list: AgentTool[] = [
        readResultTool(this.results) as AgentTool,
        compactContextTool({
          compact: ({ instructions }) => this.compactNow(instructions ? { instructions } : {}),
        }) as AgentTool,
      ];
      if (this.deferral && this.deferral.deferredTools().length > 0) {
        const { toolSearchTool } = await import('../tools/tool-search.js');
        list.push(toolSearchTool(this.deferral) as AgentTool);
      }
      if (this.options.memory) {
        const { memoryTool } = await import('../tools/memory.js');
        list.push(memoryTool({ root: this.options.memory.root }) as AgentTool);
      }
      return list;
    })();
    return this.agentToolList;
  }

  /** Runs one of abridge's own tools for a tool call the model made; undefined when the call is for another tool. */
  async runTool(call: ToolCallLike): Promise<ToolResultPart | undefined> {
    const tool = (await this.tools()).find((t) => t.name === call.name);
    if (!tool) return undefined;
    const text = await tool.run(call.arguments);
    return {
      type: 'tool-result',
      callId: call.id,
      toolName: call.name,
      content: [{ type: 'text', text }],
      isError: text.startsWith('Error:'),
    };
  }

  /** Whether a tool name is one of abridge's own (answered by `runTool`). */
  async isOwnTool(name: string): Promise<boolean> {
    return (await this.tools()).some((t) => t.name === name);
  }

  // ------------------------------------------------------------------------------------------------------------------

  /** The messages as the request carries them: as the harness of a resumed session sends them, else as they are. */
  private sent(view: readonly Message[]): Message[] {
    const send = this.send;
    if (!send) return view.slice();
    return view.map((m) =>
      m.role === 'tool' && m.parts.some((p) => p.type === 'tool-result' && send(p) !== p)
        ? { ...m, parts: m.parts.map((p) => (p.type === 'tool-result' ? send(p) : p)) }
        : m,
    );
  }

  private now(): Date {
    return (this.options.now ?? (() => new Date()))();
  }

  private switchModel(model: string): void {
    this.model = model;
    this.info = this.lookupInfo(model);
    this.monitor.setBudget(this.budget());
  }

  /**
   * The max output a request reserves when its caller names none: the option (or the configuration's `reserveTokens`),
   * else the model's maximum output capped
   * at DEFAULT_RESERVE_CAP and at half the window (a 128K-output model on a 40K deployment must still have room to ask).
   */
  private reserve(): number {
    return (
      this.options.maxOutputTokens ??
      this.config.budget.reserveTokens ??
      Math.min(this.info.maxOutputTokens, DEFAULT_RESERVE_CAP, Math.floor(this.info.contextWindow / 2))
    );
  }

  private budget(maxOutput?: number): ContextBudget {
    return new ContextBudget(this.info, { ...this.config.budget, reserveTokens: maxOutput ?? this.reserve() });
  }

  /** Room kept for the prediction's own error: small once anchored on a bill, larger on a pure estimate. */
  private margin(anchored: boolean, maxOutput: number): number {
    const share = anchored ? MANAGER_DEFAULTS.anchoredMargin : MANAGER_DEFAULTS.estimatedMargin;
    return Math.ceil(share * (this.info.contextWindow - maxOutput));
  }

  /**
   * The session's start, once: a new session is created in the store (with what it runs with); a restored one counts
   * what the next request carries besides the messages, then follows the bills recorded after its snapshot — as they
   * were made, a bill including that overhead.
   */
  private async ready(): Promise<void> {
    this.created ??= this.options.restore ? this.continueRestored(this.options.restore) : this.createInStore();
    await this.created;
  }

  private async continueRestored(restore: RestoredSession): Promise<void> {
    this.stored = (await this.results.list()).length > 0;
    const tools = await this.requestTools();
    this.countOverhead(
      tools,
      renderPrompt(this.provider, {
        model: this.model,
        prompt: this.prompt,
        tools,
        counter: this.counter,
        ratio: this.tracker.ratioOf(this.model),
      }),
    );
    // The snapshot's view was as large as the manager counted it when it compacted, with the ratio it had learned then:
    // the first prediction starts there, not from a recount with a seed ratio.
    if (restore.snapshotTokens !== undefined) this.tracker.anchorCompaction(restore.snapshotTokens, this.model);
    followEntries(restore.follow, this.tracker);
    // (The history's bills were of the prompt its harness sent; from here on the manager sends, and counts, it all.)
    this.tracker.countEverything();
  }

  private async createInStore(): Promise<void> {
    {
      const existing = await this.store.getSession(this.sessionId);
      if (existing)
        throw new AbridgeError(
          'SESSION_EXISTS',
          `session "${this.sessionId}" already exists in the store: continue it with ContextManager.resume(store, "${this.sessionId}", options)`,
        );
      this.session.info.settings = this.settings();
      await this.store.createSession({ id: this.sessionId, format: 'pi', info: this.session.info });
    }
  }

  /** What this session runs with now, as the store keeps it (`SessionInfo.settings`). */
  private settings(): SessionSettings {
    return {
      writer: 'context-manager',
      model: this.model,
      provider: this.provider,
      contextWindow: this.info.contextWindow,
      reserveTokens: this.reserve(),
    };
  }

  /** Records in the store what the session runs with, when it changed (a model switch, a window learned or raised). */
  private async saveSettings(): Promise<void> {
    const now = this.settings();
    const was = this.session.info.settings;
    if (
      was &&
      was.model === now.model &&
      was.provider === now.provider &&
      was.contextWindow === now.contextWindow &&
      was.reserveTokens === now.reserveTokens
    )
      return;
    this.session.info = { ...this.session.info, settings: now };
    await this.store.updateInfo(this.sessionId, this.session.info);
  }

  /** Appends entries to the working session, the tracker and the view, then to the store. */
  /** The catalog's entry for `model`, its window capped by what a provider's refusal stated for it. */
  private lookupInfo(model: string, options: { observedPrompt?: number } = {}): ModelInfo {
    const info = this.catalog.lookup(model, options);
    const enforced = this.enforcedWindow.get(model);
    if (enforced === undefined || enforced >= info.contextWindow) return info;
    return {
      ...info,
      contextWindow: enforced,
      maxOutputTokens: Math.min(info.maxOutputTokens, Math.floor(enforced / 2)),
      note: `the provider refused a prompt over ${enforced.toLocaleString('en-US')} tokens: its window for this deployment (the catalog says ${info.contextWindow.toLocaleString('en-US')})`,
    };
  }

  private async appendEntries(
    drafts: Omit<Entry, 'index' | 'id' | 'parentId' | 'timestamp'>[],
    onEntry?: (entry: Entry) => void,
  ): Promise<void> {
    await this.ready();
    const added: Entry[] = [];
    for (const draft of drafts) {
      const entries = this.session.entries;
      const parent = entries.length > 0 ? (entries[entries.length - 1]!.id ?? null) : this.tip;
      const index = entries.length;
      const entry = {
        ...draft,
        index,
        id: stableId(`${this.sessionId}:${index}:${Math.random()}`, 8),
        parentId: parent,
        timestamp: this.now().getTime(),
      } as Entry;
      entries.push(entry);
      onEntry?.(entry);
      this.tracker.push(entry);
      if (entry.message) this.view.push(entry.message);
      added.push(entry);
    }
    await this.store.append(
      this.sessionId,
      added.map(({ index: _index, ...rest }) => rest),
    );
  }

  /**
   * The most tokens a result arriving now may take before it is shortened, and how much of it is kept then (the option,
   * else room-aware: a share of the free room, never over the hard share of the effective window). Results of one
   * message share the room: each one kept whole takes its part.
   */
  private arrivalLimit(): { limit: number; keep: number } {
    if (this.options.offloadResultsOver !== undefined) {
      const limit = this.options.offloadResultsOver;
      return { limit, keep: Math.max(200, Math.floor(limit / 2)) };
    }
    const budget = this.budget();
    const ratio = this.tracker.ratioOf(this.model);
    // In counted tokens (what counter.part measures): provider tokens over the session's ratio.
    const predicted = this.tracker.predict(this.model).predicted;
    const free = Math.max(budget.effective - predicted, budget.effective - budget.marks.target) / ratio;
    const hard = (MANAGER_DEFAULTS.arrivalHardShare * budget.effective) / ratio;
    const limit = Math.floor(Math.min(hard, MANAGER_DEFAULTS.arrivalRoomShare * free));
    return { limit, keep: Math.max(200, limit) };
  }

  private async offloadLarge(m: Message): Promise<Message> {
    if (m.role !== 'tool' && m.role !== 'user') return m;
    let { limit, keep } = this.arrivalLimit();
    const fixed = this.options.offloadResultsOver !== undefined;
    let changed = false;
    const parts: Part[] = [];
    for (const p of m.parts) {
      const size = p.type === 'tool-result' ? this.counter.part(p) : 0;
      if (p.type !== 'tool-result' || size <= limit) {
        parts.push(p);
        // What this result takes is no longer free for the next one of the same message.
        if (!fixed && size > 0) {
          limit = Math.max(0, limit - Math.floor(size / 2));
          keep = Math.max(200, limit);
        }
        continue;
      }
      const text = resultText(p);
      const stored = await this.results.put(text, {
        ...(p.toolName ? { tool: p.toolName } : {}),
        callId: p.callId,
        sessionId: this.sessionId,
      });
      this.stored = true;
      parts.push({
        ...p,
        content: [{ type: 'text', text: compress(text, keep, stored.refId, { counter: this.counter }) }],
      });
      changed = true;
    }
    return changed ? { ...m, parts } : m;
  }

  /** The tool definitions of this request: the agent's (deferral applied, promotions of this turn included) and abridge's own. */
  private async requestTools(): Promise<ToolSpec[]> {
    const out: ToolSpec[] = [];
    const byName = new Map(this.agentTools.map((t) => [t.name, t]));
    if (this.deferral) {
      for (const t of this.deferral.activeTools()) out.push(toolSpec(byName.get(t.name) ?? t));
      this.syncDeferralNote();
    } else out.push(...this.agentTools.map(toolSpec));
    for (const t of await this.tools()) {
      if (t.name === 'read_result' && !this.stored) continue;
      out.push({ name: t.name, description: t.description, inputSchema: t.inputSchema });
    }
    return out;
  }

  /** The system note that tools were deferred: a dynamic section, present only while some are. */
  private syncDeferralNote(): void {
    const note = this.deferral?.note() ?? '';
    const has = this.prompt.sections.some((s) => s.name === DEFERRAL_SECTION);
    if (note && has) this.prompt.set(DEFERRAL_SECTION, note);
    else if (note) this.prompt.add({ name: DEFERRAL_SECTION, content: note, cacheable: false });
    else if (has) this.prompt.remove(DEFERRAL_SECTION);
  }

  /** Counts what the request carries besides the messages (system prompt, tools), recounting only when it changed. */
  private countOverhead(tools: readonly ToolSpec[], built: BuiltPrompt): void {
    const toolsText = JSON.stringify(tools.map(anthropicTool));
    const key = `${built.system.length}:${toolsText.length}:${built.system}${toolsText}`;
    if (key !== this.overheadKey) {
      this.overheadKey = key;
      this.overheadCounted = this.counter.text(built.system) + (tools.length ? this.counter.text(toolsText) : 0);
    }
    this.tracker.setOverhead(this.overheadCounted);
  }

  private async compactTo(
    target: number,
    asked?: string,
    // (applyCompaction: the plan's summarizer answers, a person's summary, and a check before anything is recorded.)
    extra: Pick<CompactOptions, 'summarizer' | 'summary'> & { check?: (result: CompactionResult) => void } = {},
  ): Promise<CompactionResult> {
    const before = this.tracker.predict(this.model);
    const { check, ...more } = extra;
    const result = await compact(this.session, { ...this.compactOptions(target, asked), ...more });
    if (check && result.entry)
      try {
        check(result);
      } catch (err) {
        // Not recorded: the marker leaves the working session as it came.
        if (this.session.entries[this.session.entries.length - 1] === result.entry) this.session.entries.pop();
        throw err;
      }
    if (!result.entry) return result;
    // What a compaction cleared or offloaded can be read back from now on.
    if (!this.stored) this.stored = (await this.results.list()).length > 0;
    const marker = result.entry;
    // compact() names the marker after the working session's length, which the session restarted from each view can
    // reach again: two markers of one id in the store's log make a cycle of its branch, which the undo and the
    // readers of the log walk.
    if (marker.id !== undefined)
      marker.id = stableId(`${this.sessionId}:compaction:${this.compactions + 1}:${Math.random()}`, 8);
    (marker.compaction as AbridgeMarker).number = ++this.compactions;
    this.view = activeMessages(this.session);
    // The tracker counts exactly the messages the next request holds: the view itself, as a checkpoint.
    this.tracker.push({
      ...marker,
      compaction: { ...(marker.compaction as AbridgeMarker), view: this.view } as AbridgeMarker,
    });
    const after = this.tracker.predict(this.model);
    // What the manager reports comes from its own tracker over the final view, not from the chain's estimate.
    result.beforeTokens = before.predicted;
    result.afterTokens = after.predicted;
    result.reachedTarget = after.predicted <= target;
    // The store gets a checkpoint (the view itself), which holds whatever numbering a resumed session has.
    const checkpoint: AbridgeMarker = { ...(marker.compaction as AbridgeMarker), view: this.view.slice() };
    const { index: _index, ...draft } = marker;
    // The snapshot holds the view as its messages: its copy of the marker goes without it (the view was stored three
    // times per compaction — the marker entry's, the snapshot's messages and the snapshot's marker).
    const { view: _snapshotHoldsIt, ...snapshotMarker } = checkpoint;
    await this.store.recordCompaction(this.sessionId, [{ ...draft, compaction: checkpoint }], {
      messages: this.view.slice(),
      marker: snapshotMarker,
      tokens: after.predicted,
    });
    this.restartFrom(this.view, marker.id!);
    // A resumed session starts from this checkpoint: the windows providers stated go after it again, so that it keeps
    // them (the store's checkpoint holds messages only).
    if (this.enforcedWindow.size > 0)
      await this.appendEntries([...this.enforcedWindow].map(([model, window]) => windowRecord(model, window)));
    // So do the pins.
    if (this.pins.size > 0) await this.appendEntries([pinsRecord(this.pins)]);
    this.monitor.compactionComplete({
      before: before.predicted,
      after: after.predicted,
      strategies: result.strategiesRun.map((s) => s.name),
    });
    return result;
  }

  /**
   * The working session restarts from a compaction's view — as a resumed one does from the store's snapshot: the
   * view's messages as entries, then what comes after. The whole history is in the store; what the manager walks
   * (the next compaction, the breakdown, the tracker's reading of a marker) is bounded by what the model sees. The
   * view's last entry takes the marker's id: what is appended next follows the marker in the store's log and the view
   * in the working session, one parent for both.
   */
  private restartFrom(view: Message[], markerId: string): void {
    const entries: Entry[] = [];
    for (let i = 0; i < view.length; i++) {
      // A bill on a message of the view is of a context the compaction replaced: counting the working session must not
      // anchor on it (the tracker already holds the view's size). The view keeps the same messages otherwise.
      if (view[i]!.usage) view[i] = withoutUsage(view[i]!);
      const message = view[i]!;
      const index = entries.length;
      entries.push({
        kind: 'message',
        message,
        index,
        id: i === view.length - 1 ? markerId : `${markerId}:${index}`,
        parentId: index > 0 ? entries[index - 1]!.id! : null,
      });
    }
    this.session.entries.length = 0;
    this.session.entries.push(...entries);
    this.tip = markerId;
    this.tracker.rebase(entries);
    this.measuredAt = undefined;
  }

  private overflowDetails(maxOutput: number, predicted: number, margin: number): OverflowDetails {
    const ratio = this.tracker.ratioOf(this.model);
    const built = renderPrompt(this.provider, { model: this.model, prompt: this.prompt, tools: [] });
    const system = Math.round(this.counter.text(built.system) * ratio);
    const tools = Math.max(0, Math.round(this.overheadCounted * ratio) - system);
    // What must stay is what compaction's own plan says no round of it could archive (one home for the rule): the
    // messages of its least protected round, with the options this manager compacts with.
    const ceiling = this.info.contextWindow - maxOutput;
    const { instructions: _standing, ...compaction } = this.options.compaction ?? {};
    const pinned = this.pinnedTest();
    const plan = planCompaction(this.session, {
      ...compaction,
      pinned: (m, entry) => pinned(m, entry),
      target: Math.max(0, ceiling - margin),
      prefixTokens: Math.round(this.overheadCounted * ratio),
    });
    const mustStay = planMustStay(plan).filter((p) => !p.what.startsWith('system prompt and tools'));
    return {
      model: this.model,
      window: this.info.contextWindow,
      maxOutputTokens: maxOutput,
      ceiling,
      predicted,
      system,
      tools,
      protected: mustStay.reduce((n, p) => n + p.tokens, 0),
      mustStay,
      margin,
    };
  }
}

/** compactNow's argument checked: a target alone (the older form), or a target and instructions. */
function compactNowOptions(options: unknown): { target?: number; instructions?: string } {
  const raw = typeof options === 'number' ? { target: options } : options;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new AbridgeError(
      'INVALID_INPUT',
      `compactNow: expected a target in tokens or { target?, instructions? }, got ${JSON.stringify(options) ?? String(options)}`,
    );
  const { target, instructions, ...rest } = raw as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0)
    throw new AbridgeError(
      'INVALID_INPUT',
      `compactNow: unknown option${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')} (expected target, instructions)`,
    );
  if (target !== undefined && (typeof target !== 'number' || !Number.isFinite(target) || target <= 0))
    throw new AbridgeError(
      'INVALID_INPUT',
      `compactNow: target: expected a positive number of tokens, got ${JSON.stringify(target) ?? String(target)}`,
    );
  if (instructions !== undefined && typeof instructions !== 'string')
    throw new AbridgeError(
      'INVALID_INPUT',
      `compactNow: instructions: expected a string (what the summary must keep), got ${JSON.stringify(instructions) ?? String(instructions)}`,
    );
  return {
    ...(target !== undefined ? { target: Math.max(1, Math.floor(target)) } : {}),
    ...(instructions?.trim() ? { instructions: instructions.trim() } : {}),
  };
}

/** A tool definition as the wire encoders take it (without abridge's deferral facts). */
function toolSpec(t: ManagedTool | DeferrableTool): ToolSpec {
  const out: ToolSpec = { name: t.name, inputSchema: t.inputSchema };
  if (t.description !== undefined) out.description = t.description;
  return out;
}

/** The refusal of an undo of compaction `wanted` that is not in view: what it is instead, and which are in view. */
function notInView(
  sessionId: string,
  wanted: number,
  branch: readonly Entry[],
  { inView, undid }: UndoWalk,
): AbridgeError {
  const numbers = inView.map((e) => `#${e.compaction!.number}`).join(', ');
  const found = branch.find((e) => e.compaction?.number === wanted);
  let why = `"${sessionId}" has no compaction #${wanted}`;
  if (found && isUndoCheckpoint(found.compaction))
    why = `#${wanted} of "${sessionId}" is an undo (of #${found.compaction.undoes}), not a compaction`;
  else if (found) {
    const by = [...undid].find(([, back]) => back.includes(found))?.[0];
    why = `compaction #${wanted} of "${sessionId}" is not in view (${by ? `undone by #${by.compaction!.number}` : 'not on its branch'})`;
  }
  return new AbridgeError('INVALID_INPUT', `undoCompaction: ${why}; in view: ${numbers}`);
}

function withoutUsage(message: Message): Message {
  const { usage: _usage, ...rest } = message;
  return rest;
}

function isKeyed(store: ResultStore): store is KeyedResultStore {
  return (
    typeof (store as Partial<KeyedResultStore>).forSession === 'function' &&
    typeof (store as Partial<KeyedResultStore>).putWithRef === 'function'
  );
}

/**
 * The configuration with every budget setting it leaves out taken from the defaults: a configuration written by hand
 * (`{ budget: { contextWindow: 200000 } }`, from JavaScript or a cast) gets the default thresholds, not a TypeError.
 */
function withBudgetDefaults(config: AbridgeConfig | undefined): AbridgeConfig {
  if (config === undefined) return { budget: DEFAULT_BUDGET_SETTINGS };
  if (config === null || typeof config !== 'object')
    throw new AbridgeError(
      'INVALID_INPUT',
      `ContextManager: config: expected an object ({ budget: { … } }), got ${String(config)}`,
    );
  const given = (config.budget ?? {}) as Partial<BudgetSettings>;
  if (typeof given !== 'object')
    throw new AbridgeError('INVALID_INPUT', `ContextManager: config.budget: expected an object, got ${String(given)}`);
  const d = DEFAULT_BUDGET_SETTINGS;
  return {
    ...config,
    budget: {
      ...d,
      ...given,
      models: given.models ?? d.models,
      thresholds: { ...d.thresholds, ...given.thresholds },
      allocations: given.allocations ?? d.allocations,
    },
  };
}

/** What identifies a summarizer request (its messages, entries, budget and carried text): the key its answer is kept by. */
function summaryRequestKey(r: SummaryRequest): string {
  return stableId(
    JSON.stringify([
      r.messages,
      r.entries,
      r.maxTokens,
      r.previousSummary,
      r.otherSummaries,
      r.task,
      r.instructions,
      r.laterRequestKept,
      r.strict,
    ]),
    24,
  );
}

/** The shape of a compaction record (what it archives, hides and edits, and how), to tell one plan from another. */
function markerShape(m: AbridgeMarker | undefined): string {
  if (!m) return '';
  return JSON.stringify([
    m.archived,
    m.hidden,
    m.firstKeptEntry,
    (m.edits ?? []).map((e) => [e.entry, e.how]),
    m.strategies,
  ]);
}
