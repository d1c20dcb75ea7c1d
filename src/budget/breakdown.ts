import { statedWindows } from '../model/window-record.js';
import { AbridgeError } from '../errors.js';
import { conversationEntries } from '../model/branch.js';
import type { Session } from '../model/types.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import { followEntries, modelAt, trackerFor, type ReplayRequest } from '../tokens/replay.js';
import { windowsOf } from './windows.js';
import { ContextBudget, type AllocationRow } from './budget.js';
import { ModelCatalog, normalizeModelId, type LookupOptions, type ModelInfo } from './catalog.js';
import { measureContext } from './components.js';
import { scaleCosts, type McpServerCost, type ToolCost } from './attribution.js';
import { DEFAULT_BUDGET_SETTINGS } from './defaults.js';
import type { BudgetSettings, ComponentId, Level, Thresholds } from './types.js';

export interface BreakdownOptions {
  settings?: BudgetSettings;
  catalog?: ModelCatalog;
  /** The context as of this entry index (inclusive); default: the end of the session. */
  at?: number;
  exact?: ExactTokenizer;
}

/** What the model sees at one point of a session, against its window. All token figures are provider tokens. */
export interface ContextBreakdown {
  model: ModelInfo;
  window: number;
  reserve: number;
  effective: number;
  thresholds: Thresholds;
  /** Token marks of each level within the effective window. */
  marks: Record<keyof Thresholds, number>;
  /** Predicted prompt tokens of the next request. */
  used: number;
  /** Whether `used` builds on the provider's own last report. */
  anchored: boolean;
  /** used / effective window. */
  fill: number;
  level: Level;
  /**
   * Tokens per component. `unrecorded` is what the agent sends but its transcript does not hold (its system prompt and
   * tool definitions): measured as the difference to the provider's report when anchored, estimated otherwise.
   */
  components: Record<ComponentId | 'unrecorded', number>;
  tools: { builtIn: number; mcp: number; deferred: number };
  /**
   * What each tool's calls and results in the context cost, in provider tokens, largest first. Always set by
   * contextBreakdown; optional so that breakdowns built elsewhere (tests, older stored reports) still type-check.
   */
  byTool?: Record<string, ToolCost>;
  /** The same per MCP server, with the server's tools (always set by contextBreakdown). */
  byMcpServer?: Record<string, McpServerCost>;
  /** Room left before compaction triggers, and the buffer between the compact mark and the effective window's end. */
  untilCompaction: number;
  compactionBuffer: number;
  free: number;
  allocations?: { rows: AllocationRow[]; conversationRoom: number };
  counts: { messages: number; toolResults: number; compactions: number; entries: number };
  asOf: { entry: number; line?: number; ofEntries: number };
  counting: string;
  /** Bills not believed (PromptTracker.observe): a report that cannot be a count of its request, and why. */
  ignoredUsage?: { entry: number; reported: number; reason: string }[];
}

export function contextBreakdown(session: Session, options: BreakdownOptions = {}): ContextBreakdown {
  const settings = options.settings ?? DEFAULT_BUDGET_SETTINGS;
  const catalog = options.catalog ?? new ModelCatalog(settings);
  const branch = conversationEntries(session);
  const last = session.entries.length - 1;
  if (options.at !== undefined && (!Number.isInteger(options.at) || options.at < 0 || options.at > last)) {
    throw new AbridgeError('INVALID_INPUT', `--at ${options.at}: expected an entry index from 0 to ${last}`);
  }
  const at = options.at ?? last;
  const cut = branch.filter((e) => e.index <= at);
  // The model as every count of a session at a point names it (tokens/replay.ts modelAt).
  const modelId = modelAt(session, cut, settings.model);
  let provider: string | undefined;
  let reportedWindow: number | undefined;
  for (const e of cut) {
    const m = e.message;
    if (m?.role === 'assistant' && m.model) provider = m.provider;
    const w = m?.usage?.contextWindow ?? e.usage?.contextWindow;
    if (w) reportedWindow = w;
  }
  // Only what the session holds up to this point decides how it is counted, and a bill is used only when it can be one
  // (PromptTracker.observe): the others are reported, not believed.
  const tracker = trackerFor(session, cut, {
    ...(options.exact ? { exact: options.exact } : {}),
    ...(settings.prefixTokens !== undefined ? { prefixTokens: settings.prefixTokens } : {}),
    windowOf: windowsOf(catalog),
  });
  const accepted: ReplayRequest[] = [];
  const ignoredUsage: NonNullable<ContextBreakdown['ignoredUsage']> = [];
  followEntries(cut, tracker, (r) => {
    if (r.ignored) ignoredUsage.push({ entry: r.index, reported: r.reported, reason: r.ignored });
    else accepted.push(r);
  });
  const prediction = tracker.predict(modelId);
  const lookup: LookupOptions = {};
  if (provider) lookup.provider = provider;
  if (reportedWindow) lookup.reportedWindow = reportedWindow;
  // A window smaller than what the provider billed is wrong (a 1M-context variant, a new model) — when two bills of the
  // model, each believable, say so: one alone may be a report that lies.
  const assumed = catalog.lookup(modelId, lookup).contextWindow;
  const norm = normalizeModelId(modelId ?? '');
  const above = accepted
    .filter((r) => normalizeModelId(r.model) === norm && r.reported > assumed)
    .map((r) => r.reported);
  if (above.length >= 2) lookup.observedPrompt = Math.max(...above);
  const looked = catalog.lookup(modelId, lookup);
  // A window the provider stated in a refusal, as the session recorded it: what it enforces for this deployment.
  const stated = modelId !== undefined ? statedWindows(cut).get(modelId) : undefined;
  const model: ModelInfo =
    stated !== undefined && stated < looked.contextWindow
      ? {
          ...looked,
          contextWindow: stated,
          source: 'transcript',
          note: `the provider refused a prompt over ${stated.toLocaleString('en-US')} tokens (the catalog says ${looked.contextWindow.toLocaleString('en-US')})`,
        }
      : looked;
  const budget = new ContextBudget(model, settings);
  const measure = measureContext(session, cut, tracker.counter);

  const components = { ...measure.byComponent, unrecorded: 0 } as Record<ComponentId | 'unrecorded', number>;
  const used = prediction.predicted;
  // The prefix — learned once from the session's first bill, so the same wherever the session is cut — is what the
  // request carries besides its messages: the tool definitions a request body recorded, and the rest, which the
  // transcript does not hold (`unrecorded`). What the provider bills beyond it is the messages': each component gets
  // its share, so that they sum to `used` (a ratio a little off over a long context, or the reasoning a Codex turn
  // carries, shows where the messages are).
  const prefix = Math.min(used, prediction.prefix);
  const definitionsCounted = measure.tools.builtIn + measure.tools.mcp;
  const definitions = Math.min(prefix, Math.round(definitionsCounted * prediction.ratio));
  components.unrecorded = prefix - definitions;
  const messages = { ...measure.byComponent, tools: measure.byComponent.tools - definitionsCounted };
  const ids = Object.keys(messages) as ComponentId[];
  const visible = ids.reduce((n, k) => n + messages[k], 0);
  const share = visible > 0 ? (used - prefix) / visible : 0;
  // (Each rounded on its own: the sum may be a token or two off `used`, the prefix stays what it is.)
  for (const k of ids) components[k] = Math.round(messages[k] * share);
  components.tools += definitions;
  if (visible === 0) components.unrecorded += used - prefix;
  const marks = budget.marks;
  const atEntry = session.entries[at];
  const breakdown: ContextBreakdown = {
    model,
    window: budget.window,
    reserve: budget.reserve,
    effective: budget.effective,
    thresholds: budget.thresholds,
    marks,
    used,
    anchored: prediction.anchored,
    fill: budget.fill(used),
    level: budget.level(used),
    components,
    tools: {
      builtIn: Math.round(measure.tools.builtIn * prediction.ratio),
      mcp: Math.round(measure.tools.mcp * prediction.ratio),
      deferred: Math.round(measure.tools.deferred * prediction.ratio),
    },
    byTool: scaleCosts(measure.byTool, prediction.ratio),
    byMcpServer: scaleCosts(measure.byMcpServer, prediction.ratio),
    untilCompaction: marks.compact - used,
    compactionBuffer: budget.effective - marks.compact,
    free: Math.max(0, budget.effective - used),
    counts: {
      messages: measure.messages,
      toolResults: measure.toolResults,
      compactions: measure.compactions,
      entries: cut.length,
    },
    asOf: { entry: at, ofEntries: session.entries.length },
    counting: tracker.counter.exact ? 'exact' : 'estimate',
  };
  if (atEntry?.line !== undefined) breakdown.asOf.line = atEntry.line;
  if (ignoredUsage.length > 0) breakdown.ignoredUsage = ignoredUsage;
  if (Object.keys(settings.allocations).length > 0) breakdown.allocations = budget.allocations(components);
  return breakdown;
}
