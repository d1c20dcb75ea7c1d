import type { Entry, Message } from '../model/types.js';
import type { AbridgeMarker } from '../model/view.js';
import type { Redactor } from '../redact/redact.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import type { Violation } from './invariants.js';
import type { ResultStore } from './result-store.js';
import type { Strategy, StrategyName, StrategyOptions } from './strategies/strategy.js';
import type { Summarizer } from './summarizers/summarizer.js';

export interface CompactOptions {
  /** Tokens (as the provider counts them) the context must get down to. */
  target: number;
  /**
   * Which strategies, cheapest first (default: all, in STRATEGY_NAMES order): names of the built-in ones, or strategy
   * values — your own implementation of a step (a summarizer span policy, a clearing rule) passed in as an object.
   */
  strategies?: readonly (StrategyName | Strategy)[];
  summarizer?: Summarizer;
  /** Where cleared and offloaded results go (default: a new in-memory store). */
  store?: ResultStore;
  /**
   * The recent tail kept verbatim, in provider tokens (default: 20,000 or a quarter of the target's conversation
   * share, whichever is smaller). Whole units from the end, never fewer than `keepLastSteps` agent steps.
   */
  keepRecentTokens?: number;
  /** Agent steps at the end always in the verbatim tail (default 1). */
  keepLastSteps?: number;
  /**
   * When the target cannot be reached with that tail protected, protect less (halving the tail, down to this many
   * steps) rather than miss it. Default 0 when the system messages, the first request and the latest instruction fit
   * the target beside a note of the archive (the last step may then give way, last of all and only to reach the
   * target: its ended turn's thinking dropped, its longest answer or result cut to first and last lines; and when
   * even that is over, archived like older work), else 1 (giving it up could not reach the target). Set it equal to
   * `keepLastSteps` to never relax the count.
   */
  minKeepLastSteps?: number;
  /**
   * Never refuse what can shrink (default true): when the target cannot be reached with the last step, the thinking
   * of a tool-use loop under way, another agent's summary and the first request kept whole, they give way in that
   * order — archived like older work, into the summary, which quotes them as far as the room allows (the whole stays
   * in the session; another agent's summary is also stored whole behind a `read_result` reference the quote begins
   * with). Last of all the latest instruction is cut in place to its first and last lines, its whole text behind a
   * reference (never archived: it is what the next step answers). The system messages and project memory never give
   * way: a target below them is refused (`reachedTarget` false, what stays named) — and the view then keeps a hand-off
   * of the archived work, not a one-line note. False keeps everything protected whole and refuses instead. Not with
   * `minKeepLastSteps` set, which keeps that many steps whatever happens.
   */
  shrinkProtected?: boolean;
  /** What the person asked the summary to keep or focus on (passed to the summarizer). */
  instructions?: string;
  /**
   * When the chain archived something, give back the newest cleared or shortened messages their whole content while
   * the context still fits (default true): the recent work stays verbatim as far as the target allows.
   */
  restoreRecent?: boolean;
  options?: { [K in keyof StrategyOptions]?: Partial<StrategyOptions[K]> };
  /** Run even when the context is already under the target. */
  force?: boolean;
  /** Tokens of the system prompt and tools the transcript does not hold (default: per agent). */
  prefixTokens?: number;
  exact?: ExactTokenizer;
  now?: () => Date;
  /**
   * Secret redaction (src/redact) of everything compaction sends out or adds: text put in the store, the summarizer's
   * input and output, the marker's summary and edits. Default: the built-in detector; pass `noRedaction` to turn it off.
   */
  redact?: Redactor;
  /**
   * Pins: messages that stay verbatim through every strategy — never cleared, offloaded, cut, stubbed, stripped of
   * their thinking nor archived — counted among what must stay (`protectedParts` names each, `pinned message (entry
   * N)`), and never given way to reach the target: a target that pins make unreachable is missed, and said. Entries
   * (their index in `session.entries`, as `inspect` and `view` number them), or a test of each message in view. A
   * message with `pinned: true` is pinned whatever this says. A pinned message's unit (an assistant message with its
   * tool calls and their results) is archived whole or not at all, so its tool calls keep their results.
   */
  pinned?: readonly number[] | ReadonlySet<number> | ((message: Message, entry: number) => boolean);
  /**
   * The summary's text, as a person edited it: the compaction runs as planned, then this text stands in for the
   * summary it made (whole — never squeezed). The result says whether the view still fits (`reachedTarget`) and, in
   * `editedSummary`, the given summary's size beside the room the rest of the view leaves it. A compaction that
   * archives nothing has no summary to replace: refused (INVALID_INPUT).
   */
  summary?: string;
  /** Called as each strategy starts, with its name: a long compaction can show where it is (the CLI's status line). */
  onStrategy?: (name: StrategyName) => void;
}

/** Something that had to stay verbatim, and its size in provider tokens. */
export interface ProtectedPart {
  what: string;
  tokens: number;
}

export interface CompactionResult {
  /**
   * Tokens of the context before and after, as the provider will count them. Every figure is of the view itself:
   * never below an estimate of its messages (a learned prefix cannot pull it under), never negative.
   */
  beforeTokens: number;
  afterTokens: number;
  beforeMessages: number;
  afterMessages: number;
  strategiesRun: { name: StrategyName; beforeTokens: number; afterTokens: number }[];
  skipped: { name: StrategyName; reason: string }[];
  /** Whether `afterTokens` ≤ target. */
  reachedTarget: boolean;
  /** Agent steps at the end kept verbatim (fewer than asked when that was needed to reach the target). */
  keptLastSteps: number;
  /** Provider tokens of the recent tail kept verbatim (protected). */
  keptRecentTokens: number;
  /**
   * What must reach the model verbatim however small the target — the prefix, system messages, the first request,
   * the latest instruction, the last step — with its size. When their sum (`protectedTokens`) is over the target, no
   * compaction can reach it.
   */
  protectedParts: ProtectedPart[];
  protectedTokens: number;
  /**
   * What had to stay verbatim and gave way to reach the target (`shrinkProtected`): the thinking of the step under way,
   * another agent's summary, the first request — each archived into the summary, which quotes it as far as the room
   * allows — and the latest instruction, cut in place (the notes say which). Empty when everything protected stayed.
   */
  gaveWay: string[];
  /** Invariant violations the compaction introduced (always empty: a strategy that would introduce one is undone). */
  violations: Violation[];
  /**
   * What the summarizer said of how the summary was made: a fallback to the extractive summary and why, messages an
   * LLM request had to leave out to fit its window (by entry).
   */
  summaryNotes: string[];
  /**
   * With `summary` given: the size of that summary in provider tokens, and the room the rest of the compacted view
   * leaves it within the target (a summary over the room misses the target by the difference).
   */
  editedSummary?: { tokens: number; room: number };
  /** The marker entry appended to the session, when anything changed. */
  entry?: Entry;
  marker?: AbridgeMarker;
}
