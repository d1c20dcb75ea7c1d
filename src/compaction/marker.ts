/**
 * What a compaction records: a marker entry saying what the view keeps (its summary, the archived range, edits, hidden
 * ranges), written so that `viewOf` (model/view.ts, the one reading of a marker) shows exactly the view the chain made.
 */
import type { CompactionMarker, Entry, Message, Session } from '../model/types.js';
import { stableId } from '../model/ids.js';
import { isSummaryItem, type AbridgeMarker, type EntryEdit, type ViewItem } from '../model/view.js';
import { redactMarker, type Redactor } from '../redact/redact.js';
import type { CompactionResult } from './options.js';
import { summaryText } from './strategies/summarize.js';

/** The compaction marker a summary message carries, if any. */
export function markerOf(m: Message): CompactionMarker | undefined {
  const p = m.parts.find((x) => x.type === 'compaction');
  return p?.type === 'compaction' ? p.marker : undefined;
}

/** Records the compaction: a marker entry after the last entry of the branch, linked into the tree when it is one. */
export function appendMarker(
  session: Session,
  branch: readonly Entry[],
  view: readonly ViewItem[],
  result: CompactionResult,
  now: () => Date,
  redact: Redactor,
): { entry: Entry; marker: AbridgeMarker } {
  // The summary this marker stands for: one made by this chain, or abridge's earlier one carried over unchanged.
  // Another agent's summary still in view stays an ordinary message of its own entry.
  const summary = view.find((v) => isSummaryItem(v) && markerOf(v.message)?.source === 'abridge');
  const visible = new Set(view.map((v) => v.entry).filter((e): e is number => e !== undefined));
  // Another agent's summary still in view is the message of its own marker entry.
  for (const v of view) {
    const m = isSummaryItem(v) ? markerOf(v.message) : undefined;
    const carrier = m && m.source !== 'abridge' ? branch.find((e) => e.compaction === m) : undefined;
    if (carrier) visible.add(carrier.index);
  }
  let covered = summary?.covers;
  // An earlier marker entry whose summary was folded into ours holds that summary's message: the archived range takes
  // it in when nothing visible lies between (otherwise the old summary would show again beside the new one).
  if (covered) {
    const shown = new Set(view.map((v) => v.message));
    for (const e of branch) {
      if (e.index <= covered.toEntry || !e.compaction || !e.message || shown.has(e.message)) continue;
      const to: number = covered.toEntry;
      if (branch.some((x) => x.index > to && x.index < e.index && visible.has(x.index))) break;
      covered = { fromEntry: covered.fromEntry, toEntry: e.index };
    }
    // An entry still in view inside that range — another agent's summary kept whole, which the branch records after
    // the entries it kept — ends the range: what comes after it is hidden instead.
    const from: number = covered.fromEntry;
    const inside = branch.find((x) => x.index > from && x.index <= covered!.toEntry && visible.has(x.index));
    if (inside) covered = { fromEntry: from, toEntry: inside.index - 1 };
  }
  // Entries neither visible nor under this summary were hidden by an earlier compaction: they stay hidden.
  const hidden: { fromEntry: number; toEntry: number }[] = [];
  let previous: number | undefined;
  for (const e of branch) {
    if (!e.message) continue;
    const hide = !visible.has(e.index) && !(covered && e.index >= covered.fromEntry && e.index <= covered.toEntry);
    if (hide) {
      const lastRange = hidden[hidden.length - 1];
      if (lastRange && lastRange.toEntry === previous) lastRange.toEntry = e.index;
      else hidden.push({ fromEntry: e.index, toEntry: e.index });
    }
    previous = e.index;
  }
  const edits: EntryEdit[] = view
    .filter((v) => v.entry !== undefined && v.edit !== undefined)
    .map((v) => ({ entry: v.entry!, message: v.message, how: v.edit! }));
  const number = session.entries.filter((e) => e.compaction).length + 1;
  const draftMarker: AbridgeMarker = {
    number,
    summary: summary ? summaryText(summary.message) : '',
    source: 'abridge',
    tokensBefore: result.beforeTokens,
    tokensAfter: result.afterTokens,
    strategies: result.strategiesRun.map((s) => s.name),
  };
  if (covered) draftMarker.archived = covered;
  if (edits.length > 0) draftMarker.edits = edits;
  if (hidden.length > 0) draftMarker.hidden = hidden;
  const firstKept = view.find((v) => v.entry !== undefined && (!covered || v.entry > covered.toEntry))?.entry;
  if (firstKept !== undefined) draftMarker.firstKeptEntry = firstKept;
  // Everything this record adds (the summary, the rewritten messages of edits: head/tail, previews) is redacted; the
  // entries it refers to stay as they were.
  const marker = redactMarker(draftMarker, redact);

  const last = branch[branch.length - 1];
  const draft: Omit<Entry, 'index'> = {
    kind: 'compaction',
    sourceType: 'abridge',
    compaction: marker,
    timestamp: now().getTime(),
  };
  // A new message for the marker: the summary item's message may be an earlier entry's, which must not change.
  if (summary) draft.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
  if (last?.id !== undefined && last.parentId !== undefined) {
    draft.id = stableId(`abridge-compaction:${session.info.id ?? ''}:${session.entries.length}`, 8);
    draft.parentId = last.id;
    if (last.sidechain) draft.sidechain = true;
  }
  const entry = { ...draft, index: session.entries.length } as Entry;
  session.entries.push(entry);
  return { entry, marker };
}
