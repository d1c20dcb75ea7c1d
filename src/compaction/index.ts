export { compact, forceCompact, STRATEGIES, type CompactOptions, type CompactionResult } from './compact.js';
export { checkInvariants, introducedViolations, isEmptyMessage, type Violation, type ViolationKind, type InvariantOptions } from './invariants.js';
export { unitsOf, scoreUnit, isHumanUser, type Unit } from './turns.js';
export { STRATEGY_NAMES, DEFAULT_STRATEGY_OPTIONS, StrategySkipped, type Strategy, type StrategyName, type StrategyOptions, type StrategyContext } from './strategies/strategy.js';
export { ExtractiveSummarizer, parseSummary } from './summarizers/extractive.js';
export { extractEvidence, mergeEvidence, pathsIn, type Evidence } from './summarizers/extract.js';
export type { Summarizer, SummaryRequest } from './summarizers/summarizer.js';
export { LlmSummarizer, type LlmClient, type LlmSummarizerOptions } from './summarizers/llm.js';
