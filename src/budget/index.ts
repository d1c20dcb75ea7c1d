export * from './types.js';
export { DEFAULT_THRESHOLDS, SEED_ALLOCATIONS, DEFAULT_BUDGET_SETTINGS, DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_RESERVE_CAP } from './defaults.js';
export {
  ModelCatalog,
  normalizeModelId,
  entriesFromModelsDev,
  parseModelsDevCatalog,
  type ModelInfo,
  type ModelPricing,
  type CatalogEntry,
  type CatalogSource,
  type LookupOptions,
  type ModelCatalogOptions,
} from './catalog.js';
export { ContextBudget, truncateToTokens, type BudgetItem, type FittedComponent, type AllocationRow } from './budget.js';
export { BudgetMonitor, type BudgetEvents, type PressureEvent } from './monitor.js';
export { componentOf, measureContext, type ContextMeasure } from './components.js';
export { contextSnapshot, type ContextSnapshot, type SnapshotOptions } from './snapshot.js';
export { pressureLine, markdownFooter, breakdownRows, renderBreakdownText, renderBreakdownMarkdown, compactNumber, type BreakdownRow } from './report.js';
export { ToolAttribution, mcpServerOf, displayToolName, scaleCosts, type ToolCost, type McpServerCost } from './attribution.js';
