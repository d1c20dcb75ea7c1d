/**
 * The context note: one line the model reads at the end of its system prompt once the context is nearly full, telling
 * it how full and that it can free space itself. Nothing below the threshold, so a roomy context costs no tokens and
 * does not change the prompt (every change of a prompt's text breaks the provider's cache from that point on).
 */
import { CONTEXT_NOTE_THRESHOLD } from '../defaults.js';
import type { PromptSection } from './section.js';

export { CONTEXT_NOTE_THRESHOLD };

/** Name of the note's section in a PromptBuilder. */
export const CONTEXT_NOTE_SECTION = 'context-status';

/** The tool the note points to (abridge's `forceCompact`, exposed to the model). */
export const COMPACT_TOOL_NAME = 'compact_context';

/** How full the context is: a share of the effective window (0–1), or tokens used of the effective window. */
export type ContextFill = number | { used: number; effective: number } | { fill: number };

export interface ContextNoteOptions {
  /** Share of the effective window from which the note shows (default 0.8). */
  threshold?: number;
  /** The compaction tool the model can call (default `compact_context`). */
  toolName?: string;
}

/** The fill as a share of the effective window. */
export function fillOf(fill: ContextFill): number {
  if (typeof fill === 'number') return fill;
  if ('fill' in fill) return fill.fill;
  return fill.effective > 0 ? fill.used / fill.effective : 1;
}

/**
 * The percentage shown, rounded down (the note never says more than is used), with float noise removed so that 0.29
 * reads 29%, not 28%.
 */
export function percentUsed(fill: ContextFill): number {
  return Math.floor(fillOf(fill) * 100 + 1e-9);
}

/**
 * `[Context: 83% used. You can call compact_context to free space before continuing with large operations.]` from 80%
 * of the effective window on (decided on the percentage shown, so the note and the level agree: 79.9% is 79% and shows
 * nothing, 80.0% shows "80% used"); undefined below.
 */
export function contextNote(fill: ContextFill, options: ContextNoteOptions = {}): string | undefined {
  const threshold = options.threshold ?? CONTEXT_NOTE_THRESHOLD;
  const pct = percentUsed(fill);
  if (pct < Math.round(threshold * 100)) return undefined;
  return `[Context: ${pct}% used. You can call ${options.toolName ?? COMPACT_TOOL_NAME} to free space before continuing with large operations.]`;
}

/** The note as a non-cacheable prompt section (the dynamic part), or undefined below the threshold. */
export function contextNoteSection(fill: ContextFill, options: ContextNoteOptions = {}): PromptSection | undefined {
  const content = contextNote(fill, options);
  return content === undefined ? undefined : { name: CONTEXT_NOTE_SECTION, content, cacheable: false };
}
