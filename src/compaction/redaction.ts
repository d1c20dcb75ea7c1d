import type { Message } from '../model/types.js';
import type { Redactor } from '../redact/redact.js';
import { redactMessage } from '../redact/redact.js';
import type { ResultStore, StoredResultMeta } from './result-store.js';
import type { Summarizer, SummaryRequest } from './summarizers/summarizer.js';
import { TextMemo } from '../model/text-memo.js';

/**
 * Where compaction applies secret redaction (src/redact): every text compaction sends out of the process's memory goes
 * through one of these two wrappers — what strategies put in the ResultStore (clearing, offloading), and what the
 * summarizer is given (so an LLM summarizer's request never carries a recognized secret) and what it returns. The
 * records compaction adds to the session (the marker's summary and edits) are redacted in compact.ts.
 */

/** The redactor each store made by redactingStore applies (a store already wrapped is not wrapped again). */
const wrapped = new WeakMap<ResultStore, Redactor>();

/** A ResultStore whose `put` stores the redacted text (refs are addressed by what is stored). */
export function redactingStore(store: ResultStore, redact: Redactor): ResultStore {
  if (wrapped.get(store) === redact) return store;
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'put') return (text: string, meta?: StoredResultMeta) => target.put(redact(text), meta);
      const v = Reflect.get(target, key, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  wrapped.set(proxy, redact);
  return proxy;
}

/** The memoizing wrapper of each redactor (one per redactor, so that what is keyed by the redactor stays shared). */
const memoized = new WeakMap<Redactor, Redactor>();
/** Texts shorter than this are redacted each time (a scan costs about what a lookup would). */
const MEMO_MIN = 256;

/**
 * `redact` remembering what it returned for long texts, by content: a loop's compactions redact the same texts again —
 * the previous summary once per summary asked of it, the summary again in its marker, an earlier compaction's edits
 * in every marker after it. A redactor is a function of its text (createRedactor's are), so the answer is the same.
 */
export function memoRedactor(redact: Redactor): Redactor {
  if (memoized.has(redact)) return memoized.get(redact)!;
  const memo = new TextMemo<string>();
  const wrapper: Redactor = (text) => (text.length < MEMO_MIN ? redact(text) : memo.get(text, redact));
  memoized.set(redact, wrapper);
  // The wrapper of a wrapper is itself.
  memoized.set(wrapper, wrapper);
  return wrapper;
}

/** Messages already redacted, per redactor: a message object does not change once it is in a session. */
const redactedMessages = new WeakMap<Redactor, WeakMap<Message, Message>>();

/**
 * A summarizer that sees only redacted messages, task and previous summary, and whose summary is redacted too. Other
 * members are passed through unchanged (a new entry point that takes text must be added here to be redacted).
 */
export function redactingSummarizer(summarizer: Summarizer, redact: Redactor): Summarizer {
  // A compaction may ask for summaries of overlapping spans (a span re-chosen once the first summary exists), and a
  // loop's compactions see the same messages again (its view): each message is redacted once per redactor.
  const redacted = redactedMessages.get(redact) ?? new WeakMap<Message, Message>();
  redactedMessages.set(redact, redacted);
  const clean1 = (m: Message) => {
    let r = redacted.get(m);
    if (!r) redacted.set(m, (r = redactMessage(m, redact)));
    return r;
  };
  const summarize = async (request: SummaryRequest): Promise<string> => {
    const clean: SummaryRequest = { ...request, messages: request.messages.map(clean1) };
    if (request.previousSummary !== undefined) clean.previousSummary = redact(request.previousSummary);
    if (request.task !== undefined) clean.task = redact(request.task);
    return redact(await summarizer.summarize(clean));
  };
  return new Proxy(summarizer, {
    get(target, key, receiver) {
      if (key === 'summarize') return summarize;
      const v = Reflect.get(target, key, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
