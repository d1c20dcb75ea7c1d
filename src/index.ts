export * from './model/index.js';
export * from './redact/index.js';
export * from './formats/index.js';
export { AbridgeError, type AbridgeErrorCode } from './errors.js';
export * from './tokens/index.js';
export * from './budget/index.js';
export type { AbridgeConfig, ConfigOverrides } from './manager/config.js';
export * from './store/index.js';
export * from './compaction/index.js';
export { ContextManager, type ManagedTool, type ContextManagerOptions, type PrepareOptions, type PreparedTurn, type Pressure, type ManagerEvents } from './manager/context-manager.js';
export { ContextOverflowError, type OverflowDetails } from './manager/overflow.js';
export { RequestEncoder, type ProviderRequestBody } from './manager/request.js';
export * from './prompt/index.js';
export {
  toRequest,
  fromResponse,
  contextOverflow,
  promptRequestOptions,
  anthropicUsage,
  chatUsage,
  responsesUsage,
  REQUEST_PROVIDERS,
  MAX_ANTHROPIC_BREAKPOINTS,
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
  type FinishReason,
  type ContextOverflow,
} from './formats/wire.js';
export { replaySession, summarizeReplay, type ErrorSummary } from './analysis/replay.js';
export { prefixStability, commonPrefix, type PrefixStabilityOptions, type PrefixStabilityReport, type PrefixRow, type ScenarioRow, type ScenarioTotals, type CompactionCacheCost, type BreakPoint } from './analysis/prefix-stability.js';
