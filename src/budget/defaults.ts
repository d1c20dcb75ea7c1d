import type { AllocationKey, Amount, BudgetSettings, Thresholds } from './types.js';

/** Warn at 80%, compact at 90%, block at 98% of the effective window; compaction aims for 60%. */
export const DEFAULT_THRESHOLDS: Thresholds = { warn: 0.8, compact: 0.9, block: 0.98, target: 0.6 };

/** The seeds' allocation plan, as shares of the window. Not applied unless asked for (`"allocations": "seed"` in abridge.config.json). */
export const SEED_ALLOCATIONS: Record<Exclude<AllocationKey, 'memory' | 'tools'>, Amount> = {
  system: { share: 0.05 },
  skills: { share: 0.03 },
  knowledgeBase: { share: 0.03 },
  crossIssue: { share: 0.02 },
  summary: { share: 0.1 },
  recent: { share: 0.3 },
  prompt: { share: 0.02 },
  response: { share: 0.45 },
};

export const DEFAULT_CONTEXT_WINDOW = 128_000;
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_000;
/** The response reserve never exceeds this by default, whatever the model's maximum output. */
export const DEFAULT_RESERVE_CAP = 32_000;

export const DEFAULT_BUDGET_SETTINGS: BudgetSettings = {
  defaultContextWindow: DEFAULT_CONTEXT_WINDOW,
  defaultMaxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
  models: {},
  thresholds: DEFAULT_THRESHOLDS,
  allocations: {},
};
