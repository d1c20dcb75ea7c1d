import * as D from '../../defaults.js';
import type { Message, ToolResultPart } from '../../model/types.js';
import type { ResultStore, StoredResultMeta } from '../result-store.js';
import type { TokenCounter } from '../../tokens/counter.js';
import type { Summarizer } from '../summarizers/summarizer.js';
import type { ViewItem } from '../../model/view.js';
import { componentOf } from '../../budget/components.js';
import { isRequest } from '../turns.js';
import { failureLines, printedErrors, recordedExit } from '../records.js';

export type StrategyName =
  | 'clear-tool-results'
  | 'offload'
  | 'head-tail'
  | 'stub-inputs'
  | 'drop-thinking'
  | 'summarize'
  | 'truncate';

export const STRATEGY_NAMES: readonly StrategyName[] = [
  'clear-tool-results',
  'offload',
  'head-tail',
  'stub-inputs',
  'drop-thinking',
  'summarize',
  'truncate',
];

/** Options of the chain's strategies; every field has a default (see DEFAULT_STRATEGY_OPTIONS). */
export interface StrategyOptions {
  /** Anthropic context-editing semantics for clearing old tool results. */
  clearing: {
    /** Most recent tool uses whose results stay (default 3). */
    keep: number;
    /** Clear at least this many tokens or nothing (a cleared prefix costs a cache write; make it worth it). */
    clearAtLeast: number;
    /** Tools whose results are never cleared. */
    excludeTools: string[];
    /** Also clear the inputs of the cleared calls. */
    clearToolInputs: boolean;
    /**
     * Stop as soon as the context fits the target. Default false: clear every eligible result in one batch — the
     * first cleared result breaks the provider's prompt cache anyway, so one batch buys the most room per cache
     * rewrite (measured by `npm run bench:cache`: 13 compactions instead of 17, 35% fewer tokens rewritten).
     */
    untilTarget: boolean;
  };
  /** Results larger than this many bytes go to the ResultStore, replaced by a reference (default 4096). */
  offload: { thresholdBytes: number; previewChars: number };
  /** Results over `thresholdTokens` keep their first and last lines, about `keepTokens` in all. */
  headTail: { thresholdTokens: number; keepTokens: number };
  /** Tool-call inputs larger than `thresholdBytes` (a file written whole) become path + size + a reference. */
  stubInputs: { thresholdBytes: number };
  /**
   * The summary is sized to what it replaces: `ratio` of the archived tokens, at least `minSummaryTokens`, at most
   * `maxSummaryTokens`; with the people's words it carries, at most `maxRoomShare` of the room — the target less what
   * stays whatever happens (system messages, project memory, the first request, the latest instruction, another agent's
   * summary) — so that the recent work keeps the rest; and it gives way to the newest `recentShare` of the
   * conversation, down to `minRoomShare` of the room (see summaryRoom).
   */
  summarize: {
    maxSummaryTokens: number;
    minSummaryTokens: number;
    ratio: number;
    maxRoomShare: number;
    minRoomShare: number;
    recentShare: number;
  };
}

export const DEFAULT_STRATEGY_OPTIONS: StrategyOptions = D.DEFAULT_STRATEGY_OPTIONS;

export interface StrategyContext {
  counter: TokenCounter;
  /** The size (counted tokens) the view should get down to. */
  target: number;
  size(view: readonly ViewItem[]): number;
  /** Entries whose messages must reach the model verbatim. */
  protectedEntries: ReadonlySet<number>;
  store: ResultStore;
  summarizer: Summarizer;
  /** The primary request: the first message a person wrote (harness text is not one). */
  task?: string;
  /**
   * The messages of the view before compaction, by entry: summarizers read these rather than an edited copy, so that
   * a cleared result's evidence still reaches the summary.
   */
  originals?: ReadonlyMap<number, Message>;
  /** Collects what summarizers say of how a summary was made (see CompactionResult.summaryNotes). */
  report?: (note: string) => void;
  options: StrategyOptions;
  sessionId?: string;
  /**
   * The counted tokens the target leaves beside what stays whatever happens (system messages, project memory, the first
   * request, the latest instruction, another agent's summary): what the summary and the recent work share. The target
   * when unset.
   */
  room?: number;
  /** The counted tokens the summary may take, the people's words it carries included (default: room × maxRoomShare). */
  summaryRoom?: number;
  /** Another agent's summary may be archived (quoted in abridge's): only when nothing else reaches the target. */
  archiveAgentSummaries?: boolean;
  /** What the person asked the summary to keep or focus on. */
  instructions?: string;
}

/** One way of making the view smaller. Returns a new view; never changes messages in place. */
export interface Strategy {
  readonly name: StrategyName;
  apply(view: readonly ViewItem[], ctx: StrategyContext): Promise<ViewItem[]>;
}

/** Thrown by a strategy that chooses not to act (nothing to do, or not worth it); the chain reports the reason. */
export class StrategySkipped extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export function resultText(p: ToolResultPart): string {
  return p.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/**
 * The text of a user message that carries output rather than a request — a command the person ran through the agent
 * (pi's `!cmd`, Claude Code's bash mode), an extension's or harness's text — which may be cut short like a tool
 * result; undefined for a person's request, a summary, or anything but text.
 */
export function outputText(m: Message): string | undefined {
  if (m.role !== 'user' || isRequest(m) || m.parts.length === 0 || m.parts.some((p) => p.type !== 'text'))
    return undefined;
  // Standing instructions a harness injects as a user message (CLAUDE.md, AGENTS.md, skills) are not output to cut.
  if (componentOf(m) !== 'recent') return undefined;
  return m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

/** What a text stored from the view is filed under: its entry, the session, and the tool call it came from. */
export function storedAs(
  ctx: Pick<StrategyContext, 'sessionId'>,
  entry: number | undefined,
  call?: { tool: string | undefined; callId: string },
): StoredResultMeta {
  return {
    ...(call ? { tool: call.tool, callId: call.callId } : {}),
    entry,
    ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
  };
}

/** Whether an item may be changed: it holds no protected entry and was not already reduced. */
export function changeable(item: ViewItem, ctx: StrategyContext): boolean {
  return item.entry !== undefined && !ctx.protectedEntries.has(item.entry);
}

/** A copy of a tool message with some result parts replaced. */
export function withResults(m: Message, replace: (p: ToolResultPart) => ToolResultPart): Message {
  return { ...m, parts: m.parts.map((p) => (p.type === 'tool-result' ? replace(p) : p)) };
}

/** A line that reads as an error: what placeholders and summaries keep of a result as evidence. */
export const ERROR_LINE =
  /\b(errors?|exception|traceback|failed|failure|fatal|panic|denied|refused|not found|no such file|segmentation fault|cannot|can't|unable to|undefined is not|FAIL|ERR!?)\b/i;
/**
 * What a placeholder must keep of a failed result, as its sentence: how it ended (the exit code its harness recorded,
 * else `failed`) and its first error lines (verbatim, at most `maxLines`) — `It ended with exit 1; first error lines:
 * …`. A result whose record says it did not fail but that printed error-shaped lines (a test run reporting failures)
 * keeps those lines without being said to have failed. Empty for a result with neither. Only the record's flag and
 * its harness's header decide that a call failed — never words inside its output.
 */
export function errorEvidence(p: ToolResultPart, maxLines = 3): string {
  const text = resultText(p);
  const exit = recordedExit(p);
  const failed = p.isError || (exit !== undefined && exit !== 0);
  if (!failed) {
    const lines = printedErrors(text, maxLines);
    return lines.length
      ? `It printed lines that read as errors (its record says it did not fail):\n${lines.join('\n')}`
      : '';
  }
  const lines = failureLines(text, maxLines);
  const status = exit !== undefined ? `exit ${exit}` : 'failed';
  return `It ended with ${status}${lines.length ? `; first error lines:\n${lines.join('\n')}` : ''}`;
}
