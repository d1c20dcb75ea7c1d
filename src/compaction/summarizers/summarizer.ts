import type { Message } from '../../model/types.js';
import type { TokenCounter } from '../../tokens/counter.js';

export interface SummaryRequest {
  /** The messages being archived, in order. An earlier summary among them comes first. */
  messages: Message[];
  /** The text of an earlier compaction summary inside the span: the new summary must keep what it kept. */
  previousSummary?: string;
  /**
   * Summaries another agent wrote (pi's, Claude Code's, Codex's) that are archived with the span: the only record of
   * what they replaced, quoted as far as the budget allows.
   */
  otherSummaries?: string[];
  /** The session's first user message: the original task. */
  task?: string;
  /** The summary must fit in this many tokens (as `counter` counts). */
  maxTokens: number;
  counter: TokenCounter;
  /** The entry index of each message of `messages` (undefined where unknown), so notes can name what they mean. */
  entries?: (number | undefined)[];
  /**
   * The summary must fit `maxTokens` even if that leaves only a note of what was archived (a last squeeze). Without
   * it a summarizer may keep a little more than asked rather than drop the evidence.
   */
  strict?: boolean;
  /**
   * What the person asked this summary to keep or focus on (`compact --instructions`, `/compact <instructions>`): an
   * LLM summarizer is told; the extractive one puts what matches first.
   */
  instructions?: string;
  /**
   * A person's request newer than every one in `messages` stays in the conversation: the newest archived request is
   * then not what the next step answers (undefined: not known).
   */
  laterRequestKept?: boolean;
  /** Receives what the caller should know of how the summary was made (a fallback, messages left out of a request). */
  report?: (note: string) => void;
}

/** Turns archived messages into the text that stands in for them. */
export interface Summarizer {
  readonly name: string;
  /**
   * Runs in this process at no cost (no model call): compaction may then ask it again for a shorter span when the first
   * summary came out smaller than planned, so that the room it leaves goes to recent work kept verbatim.
   */
  readonly local?: boolean;
  summarize(request: SummaryRequest): Promise<string>;
}
