import type { ViewItem, SummaryItem } from '../model/view.js';
import { isSummaryItem } from '../model/view.js';
import type { TokenCounter } from '../tokens/counter.js';
import { cutLastStep, type CutLastStepContext } from './last-step.js';
import { markerOf } from './marker.js';
import { summaryMessage, summaryText } from './strategies/summarize.js';
import { ExtractiveSummarizer, parseSummary } from './summarizers/extractive.js';

/**
 * The last step gives way: when it and abridge's summary do not both fit the room the rest leaves, the last step keeps
 * half of that room at the least (or what the summary leaves, if more), the summary is squeezed into the rest, and the
 * last step is cut further only if the summary could not give enough (another agent's summary is carried whole).
 */
export async function giveWay(
  view: ViewItem[],
  o: Omit<CutLastStepContext, 'report'> & { notes: string[] },
): Promise<ViewItem[]> {
  const ctx: CutLastStepContext = { ...o, report: (note) => o.notes.push(note) };
  const total = o.size(view);
  const summary = view.find((it) => isSummaryItem(it) && markerOf(it.message)?.source === 'abridge');
  const s = summary ? o.counter.message(summary.message) : 0;
  const l = view.reduce(
    (n, it) => n + (it.entry !== undefined && o.entries.has(it.entry) ? o.counter.message(it.message) : 0),
    0,
  );
  const room = o.target - (total - s - l);
  const keep = Math.min(l, Math.max(room / 2, room - s));
  const first = await cutLastStep(view, { ...ctx, target: total - (l - keep) });
  if (o.size(first) <= o.target) return first;
  // Further only if that reaches the target: the summary down to a note, the last step's long parts to their
  // references alone.
  const notes = o.notes.slice();
  let out = await squeezeSummary(first, o.target, o.size, o.counter, notes, true);
  if (o.size(out) > o.target) out = await cutLastStep(out, { ...ctx, keepAtLeast: 0, report: (n) => notes.push(n) });
  if (o.size(out) > o.target) return first;
  o.notes.splice(0, o.notes.length, ...notes);
  return out;
}

/**
 * The last squeeze (exported for its tests): abridge's own extractive summary in the view, rewritten to fit the room the
 * rest leaves (strictly, down to a note of what was archived with the people's words that fit). Any other summary is
 * left as it is.
 */
export async function squeezeSummary(
  view: ViewItem[],
  target: number,
  size: (v: readonly ViewItem[]) => number,
  counter: TokenCounter,
  notes: string[],
  evenIfOver = false,
): Promise<ViewItem[]> {
  const at = view.findIndex((it) => isSummaryItem(it) && markerOf(it.message)?.source === 'abridge');
  if (at === -1) return view;
  const item = view[at] as SummaryItem;
  const text = summaryText(item.message);
  if (!parseSummary(text)) return view;
  const room = Math.floor(target - (size(view) - counter.message(item.message)));
  // Without room, a note (what the caller asks for when more is cut after it), or nothing.
  if (room < 1 && !evenIfOver) return view;
  // The room is for the summary's message; its text gets that less the message's own cost (and less again, by what
  // the text came out over, should a rendering count more than its estimate).
  let ask = room - counter.message(summaryMessage(''));
  let squeezed = '';
  for (let attempt = 0; attempt < 3 && ask >= 1; attempt++) {
    squeezed = await new ExtractiveSummarizer().summarize({
      messages: [],
      previousSummary: text,
      maxTokens: ask,
      counter,
      strict: true,
    });
    const over = counter.message(summaryMessage(squeezed)) - room;
    if (over <= 0) break;
    ask -= over;
  }
  // Not even the shortest summary fits: a one-line note of how many messages were archived.
  if (!squeezed.trim() || counter.message(summaryMessage(squeezed)) > room)
    squeezed = shortNote(parseSummary(text)?.archivedMessages ?? 0);
  const out = view.map((it, i) =>
    i === at ? ({ message: summaryMessage(squeezed), covers: item.covers } as SummaryItem) : it,
  );
  if (size(out) >= size(view)) return view;
  notes.push(`the summary was cut to ${counter.text(squeezed).toLocaleString('en-US')} tokens to fit the budget`);
  return out;
}

/** The shortest record of an archived span: how many messages, and that nothing was deleted. */
export function shortNote(messages: number): string {
  return `[${messages} earlier messages archived; the full history is kept.]`;
}
