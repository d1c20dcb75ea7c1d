import * as D from '../defaults.js';
import type { AllocationKey, Amount, BudgetSettings, Thresholds } from './types.js';

// The numbers live in src/defaults.ts; here they get the budget's types.
export const DEFAULT_THRESHOLDS: Thresholds = D.DEFAULT_THRESHOLDS;
export const SEED_ALLOCATIONS: Record<Exclude<AllocationKey, 'memory' | 'tools'>, Amount> = D.SEED_ALLOCATIONS;
export const DEFAULT_CONTEXT_WINDOW = D.DEFAULT_CONTEXT_WINDOW;
export const DEFAULT_MAX_OUTPUT_TOKENS = D.DEFAULT_MAX_OUTPUT_TOKENS;
export const DEFAULT_RESERVE_CAP = D.DEFAULT_RESERVE_CAP;

export const DEFAULT_BUDGET_SETTINGS: BudgetSettings = {
  defaultContextWindow: DEFAULT_CONTEXT_WINDOW,
  defaultMaxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
  models: {},
  thresholds: DEFAULT_THRESHOLDS,
  allocations: {},
};
