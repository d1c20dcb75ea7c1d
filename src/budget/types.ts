import type { ProviderFamily } from '../tokens/family.js';

/** Parts of what the model sees, measured and (optionally) capped separately. */
export type ComponentId =
  | 'system' // base instructions / system prompt
  | 'memory' // AGENTS.md / CLAUDE.md style project memory
  | 'skills'
  | 'tools' // tool definitions (see ToolsBreakdown for built-in / MCP / deferred)
  | 'knowledgeBase' // retrieved articles
  | 'crossIssue' // context carried over from other tasks or issues
  | 'summary' // compaction summaries standing in for archived history
  | 'recent' // conversation turns kept verbatim
  | 'prompt'; // the current user prompt

export const COMPONENT_IDS: readonly ComponentId[] = [
  'system',
  'memory',
  'skills',
  'tools',
  'knowledgeBase',
  'crossIssue',
  'summary',
  'recent',
  'prompt',
];

/** What an allocation can cap: every component, plus the response reserved out of the window. */
export type AllocationKey = ComponentId | 'response';

/** An amount of the window: absolute tokens, or a share of the whole window (0–1). */
export type Amount = { tokens: number } | { share: number };

/** Fill levels as shares (0–1) of the effective window (window − reserved response). */
export interface Thresholds {
  warn: number;
  compact: number;
  block: number;
  /** Where compaction aims, below `compact`, so it does not re-trigger every turn. */
  target: number;
}

export type Level = 'ok' | 'warn' | 'compact' | 'block';

/** A model's limits, as the user's configuration states them (any field may be left to the catalog). */
export interface ModelOverride {
  contextWindow?: number;
  maxOutputTokens?: number;
  family?: ProviderFamily;
  /** Other ids this model is known by (`claude-sonnet-4-5-20250929`, `anthropic/claude-sonnet-4-5`…). */
  aliases?: string[];
  thresholds?: Partial<Thresholds>;
}

/** Budget settings after defaults are applied. */
export interface BudgetSettings {
  /** Model to assume when the session does not name one. */
  model?: string;
  /** Overrides the model's window for every model. */
  contextWindow?: number;
  /** Tokens kept free for the response; default min(model max output, 32,000). */
  reserveTokens?: number;
  /** Window assumed for a model nobody knows (reported as such, never silently). */
  defaultContextWindow: number;
  defaultMaxOutputTokens: number;
  models: Record<string, ModelOverride>;
  thresholds: Thresholds;
  allocations: Partial<Record<AllocationKey, Amount>>;
  /** Tokens of the system prompt and tools an agent sends but its transcript does not record. */
  prefixTokens?: number;
  /** A models.dev-shaped file (api.json, or one provider's object) read over the bundled model catalog. */
  catalog?: string;
}
