// abridge's core entry point: what the README and docs/ document, and the types those functions take and return. Everything
// else is internal (tests import it by path). test/exports.test.ts keeps this list against test/exports.snapshot.json.

// The message model
export type {
  CompactionMarker,
  CompactionPart,
  Entry,
  EntryKind,
  FilePart,
  FormatId,
  ImagePart,
  Message,
  Part,
  PartType,
  Problem,
  ProblemKind,
  ResultContentPart,
  Role,
  Session,
  SessionInfo,
  SessionSettings,
  TextPart,
  ThinkingPart,
  ToolCallPart,
  ToolResultPart,
  Usage,
} from './model/types.js';
export { activeBranch, messagesOf, type BranchOptions } from './model/branch.js';
export {
  activeMessages,
  activeView,
  type AbridgeMarker,
  type EntryEdit,
  type EntryEditKind,
  type SummaryItem,
  type ViewItem,
} from './model/view.js';
export { promptTokens } from './model/parts.js';
export { AbridgeError, type AbridgeErrorCode } from './errors.js';

// Reading and writing transcripts
export { readSession, parseSession, streamSession, type ReadOptions, type StreamResult } from './formats/read.js';
export { writeSession, type WriteOptions } from './formats/write.js';
export {
  type InspectCompaction,
  inspectTranscript,
  type InspectOptions,
  type InspectReport,
} from './formats/inspect.js';
export type { CountAndChars, SessionStatsResult } from './model/stats.js';

// Provider request bodies and responses
export {
  toRequest,
  fromResponse,
  contextOverflow,
  nativeRefusal,
  promptRequestOptions,
  type RequestProvider,
  type RequestOptions,
  type ToolSpec,
  type SystemBlock,
  type RequestBody,
  type AnthropicRequestBody,
  type AnthropicRequestMessage,
  type AnthropicSystemTextBlock,
  type AnthropicToolParam,
  type AnthropicCacheControl,
  type ChatRequestBody,
  type ChatFunctionTool,
  type ResponsesRequestBody,
  type ResponsesFunctionTool,
  type ResponseResult,
  type AppliedEdit,
  type FinishReason,
  type ContextOverflow,
} from './formats/wire.js';

// Tokens
export { estimateTokens } from './tokens/estimate.js';
export { loadExactTokenizer, type EncodingName, type ExactTokenizer } from './tokens/exact.js';
export { TokenCounter, type TokenCounterOptions } from './tokens/counter.js';
export { PromptTracker, type Prediction, type PredictorOptions } from './tokens/predict.js';
export type { ProviderFamily } from './tokens/family.js';

// Budget, and where the tokens go (contextBreakdown is the one answer; the report functions render it)
export type {
  AllocationKey,
  Amount,
  BudgetSettings,
  ComponentId,
  Level,
  ModelOverride,
  Thresholds,
} from './budget/types.js';
export { DEFAULT_BUDGET_SETTINGS, DEFAULT_THRESHOLDS } from './budget/defaults.js';
export { ModelCatalog, type LookupOptions, type ModelCatalogOptions, type ModelInfo } from './budget/catalog.js';
export type {
  CatalogEntry,
  CatalogSource,
  LongContextPrices,
  ModelPricing,
  TokenPrices,
} from './budget/catalog-source.js';
export { requestPrices, usageCost, type CacheTtl, type RequestPrices, type UsageCostOptions } from './budget/cost.js';
export { ContextBudget, type AllocationRow, type BudgetItem, type FittedComponent } from './budget/budget.js';
export { BudgetMonitor, type BudgetEvents, type PressureEvent } from './budget/monitor.js';
export { contextBreakdown, type ContextBreakdown, type BreakdownOptions } from './budget/breakdown.js';
export { pressureLine, markdownFooter, renderBreakdownText, renderBreakdownMarkdown } from './budget/report.js';
export { ToolAttribution, mcpServerOf, type ToolCost, type McpServerCost } from './budget/attribution.js';

// Compaction
export {
  compact,
  forceCompact,
  planCompaction,
  type CompactOptions,
  type CompactionPlan,
  type CompactionResult,
  type PlannedRound,
} from './compaction/compact.js';
export { checkInvariants, type InvariantOptions, type Violation, type ViolationKind } from './compaction/invariants.js';
export {
  STRATEGY_NAMES,
  StrategySkipped,
  type Strategy,
  type StrategyContext,
  type StrategyName,
  type StrategyOptions,
} from './compaction/strategies/strategy.js';
export type { Summarizer, SummaryRequest } from './compaction/summarizers/summarizer.js';
export { ExtractiveSummarizer } from './compaction/summarizers/extractive.js';
export { LlmSummarizer, type LlmClient, type LlmSummarizerOptions } from './compaction/summarizers/llm.js';
export type {
  KeyedResultStore,
  ResultSlice,
  ResultStore,
  StoredResult,
  StoredResultMeta,
} from './compaction/result-store.js';
export { MemoryResultStore, type MemoryResultStoreOptions } from './compaction/memory-result-store.js';

// Secret redaction
export {
  createRedactor,
  findSecrets,
  noRedaction,
  redactMessage,
  redactSecrets,
  type RedactionSettings,
  type Redactor,
  type SecretMatch,
} from './redact/redact.js';
export { SECRET_KINDS } from './redact/rules.js';

// Stores
export { FileResultStore, type FileResultStoreOptions } from './store/file-result-store.js';
export { MemorySessionStore, type MemorySessionStoreOptions } from './store/memory-session-store.js';
export {
  importSession,
  loadSession,
  type NewSession,
  type ResumedSession,
  type SessionSnapshot,
  type SessionStore,
  type StoredSession,
} from './store/session-store.js';

// Prompt
export {
  PromptBuilder,
  type AnthropicSystemBlock,
  type BreakpointSite,
  type BuildOptions,
  type BuiltPrompt,
  type CacheBreakpoint,
  type CacheControl,
  type CachedMessageParam,
  type PromptBlock,
  type PromptBuilderOptions,
  type PromptProvider,
  type ToolDefinitionLike,
} from './prompt/builder.js';
export type { PromptSection } from './prompt/section.js';
export { contextNote, type ContextFill, type ContextNoteOptions } from './prompt/context-note.js';
export {
  DeferralManager,
  type DeferrableTool,
  type DeferralOptions,
  type DeferralReport,
  type KindReport,
  type ToolKind,
} from './prompt/deferral.js';

// The manager
export {
  ContextManager,
  type ManagedTool,
  type ContextManagerOptions,
  type PrepareOptions,
  type PreparedTurn,
  type Pressure,
  type ManagerEvents,
  type ResumeOptions,
  type TokenCountEndpoint,
  type PlannedCompaction,
} from './manager/context-manager.js';
export {
  COMPACTION_BETA,
  CONTEXT_MANAGEMENT_BETA,
  type NativeMode,
  type NativeOption,
} from './manager/native.js';
export { restoreSession, type RestoredSession } from './manager/restore.js';
export type { HostEvent, HostRequestReport } from './manager/host-report.js';
export { ContextOverflowError, type OverflowDetails } from './manager/overflow.js';
export type { ProviderRequestBody } from './manager/request.js';
/** What `ContextManager.tools()` and `runTool` work with (the tools themselves: `abridge-context/tools`). */
export type { AgentTool } from './tools/tool.js';

// Analysis of recorded sessions (replay of predictions, prefix stability and cost, the viewer): `abridge-context/analysis`.
