import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { LlmSummarizer, type LlmClient } from '../compaction/summarizers/llm.js';
import type { Summarizer } from '../compaction/summarizers/summarizer.js';
import { AbridgeError } from '../errors.js';

/** How an integration is told to write summaries: by name, or a summarizer of its own. */
export type SummarizerChoice = Summarizer | 'extractive' | 'llm';

export interface SummarizerOptions {
  summarizer?: unknown;
  summaryClient?: unknown;
}

/**
 * The summarizer `options` choose, checked: a Summarizer (the extractive one for 'extractive', the LLM one on
 * `summaryClient`, or the caller's own); 'llm' when the LLM summarizer is asked for without a client (the caller knows
 * whether it has a model of its own to give it); undefined when neither option is set. `owner` prefixes the errors
 * (e.g. `ContextManager`), which name the option and what it may be.
 */
export function chooseSummarizer(options: SummarizerOptions, owner: string): Summarizer | 'llm' | undefined {
  const { summarizer, summaryClient } = options;
  if (summarizer !== undefined && summarizer !== 'extractive' && summarizer !== 'llm' && !isSummarizer(summarizer))
    throw new AbridgeError(
      'INVALID_INPUT',
      `${owner}: summarizer: expected 'extractive', 'llm' or a Summarizer (an object with a summarize() method), got ${shown(summarizer)}`,
    );
  if (summaryClient !== undefined) {
    if (!isLlmClient(summaryClient))
      throw new AbridgeError(
        'INVALID_INPUT',
        `${owner}: summaryClient: expected an LlmClient ({ model, contextWindow, complete() }, e.g. anthropicClient() of abridge-context/anthropic or openaiClient() of abridge-context/openai), got ${shown(summaryClient)}`,
      );
    // A client beside another summarizer would be silently unused: say so rather than summarize some other way.
    if (summarizer !== undefined && summarizer !== 'llm')
      throw new AbridgeError(
        'INVALID_INPUT',
        `${owner}: summaryClient is the model of summarizer 'llm', but summarizer is ${summarizer === 'extractive' ? "'extractive'" : `a Summarizer of its own (${shown(summarizer)})`}: drop one of the two`,
      );
    return new LlmSummarizer(summaryClient);
  }
  if (summarizer === 'extractive') return new ExtractiveSummarizer();
  if (summarizer === 'llm') return 'llm';
  return summarizer as Summarizer | undefined;
}

function isSummarizer(x: unknown): x is Summarizer {
  return typeof x === 'object' && x !== null && typeof (x as Partial<Summarizer>).summarize === 'function';
}

function isLlmClient(x: unknown): x is LlmClient {
  if (typeof x !== 'object' || x === null) return false;
  const c = x as Partial<LlmClient>;
  return (
    typeof c.complete === 'function' &&
    typeof c.model === 'string' &&
    typeof c.contextWindow === 'number' &&
    Number.isFinite(c.contextWindow) &&
    c.contextWindow > 0
  );
}

function shown(x: unknown): string {
  if (typeof x === 'string') return JSON.stringify(x);
  if (typeof x === 'object' && x !== null) {
    const name = (x as { name?: unknown }).name;
    const keys = Object.keys(x).slice(0, 5);
    return `${typeof name === 'string' ? `"${name}", ` : ''}an object with ${keys.length ? keys.join(', ') : 'no keys'}`;
  }
  return String(x);
}
