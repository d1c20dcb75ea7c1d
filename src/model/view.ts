import { conversationEntries } from './branch.js';
import type { CompactionMarker, Entry, Message, Session } from './types.js';

/** One message of what the model sees, tied to the entry it came from. */
export interface ViewItem {
  /** The entry the message belongs to; undefined for a summary standing in for archived entries. */
  entry?: number;
  message: Message;
  /** How a compaction changed the entry's message for the model (the entry itself is never changed). */
  edit?: EntryEditKind;
  /** For a summary: the entries it stands for. */
  covers?: { fromEntry: number; toEntry: number };
}

export type EntryEditKind = 'cleared' | 'offloaded' | 'compressed';

/** A message as the model sees it after a compaction, in place of an entry's own. */
export interface EntryEdit {
  entry: number;
  message: Message;
  how: EntryEditKind;
}

/**
 * abridge's own compaction markers carry the edits they made besides the summary and archived range, and the ranges an
 * earlier compaction had already hidden (another agent's, whose summary may still be in view).
 */
export interface AbridgeMarker extends CompactionMarker {
  edits?: EntryEdit[];
  hidden?: { fromEntry: number; toEntry: number }[];
  /**
   * A checkpoint: the exact messages the model saw right after this compaction (summary included); the entries after
   * the marker follow them. ContextManager writes its compactions to its SessionStore this way, because a session it
   * resumed from a snapshot numbers its entries differently from the store's log: the checkpoint needs no positions.
   */
  view?: Message[];
  /**
   * The entry after which the view is the one the compaction produced, of `tokensAfter` tokens (a writer that
   * re-appends the compacted view records it: its last re-appended record).
   */
  viewEndsAt?: number;
}

/**
 * What the model sees: the active branch up to its last compaction marker, minus the entries that marker archived
 * (replaced by its summary, at their place), with the marker's edits applied; then everything after the marker.
 * Works for every agent's markers: pi and Claude Code archive a prefix (the summary comes first), abridge may archive
 * any span after the first user message. Subagent sidechains are not part of it.
 */
export function activeView(session: Session): ViewItem[] {
  return viewOf(conversationEntries(session));
}

/** The view of a branch given as its entries in order (e.g. a branch cut at some entry). */
export function viewOf(branch: readonly Entry[]): ViewItem[] {
  let last = -1;
  branch.forEach((e, i) => {
    if (e.compaction) last = i;
  });
  if (last === -1) return branch.filter((e) => e.message).map((e) => ({ entry: e.index, message: e.message! }));
  const markerEntry = branch[last]!;
  const marker = markerEntry.compaction as AbridgeMarker;
  if (marker.source === 'abridge' && marker.view) {
    const out: ViewItem[] = marker.view.map((message) => ({ message }));
    for (let i = last + 1; i < branch.length; i++) {
      const e = branch[i]!;
      if (e.message) out.push({ entry: e.index, message: e.message });
    }
    return out;
  }
  const edits = new Map((marker.edits ?? []).map((x) => [x.entry, x]));
  const archived = archivedRange(marker, markerEntry);
  const hidden = marker.source === 'abridge' ? (marker.hidden ?? []) : [];
  const out: ViewItem[] = [];
  let summaryPlaced = false;
  const placeSummary = () => {
    if (!summaryPlaced && markerEntry.message) out.push({ message: markerEntry.message, covers: archived });
    summaryPlaced = true;
  };
  const isHidden = (index: number) => hidden.some((h) => index >= h.fromEntry && index <= h.toEntry);
  // Another agent's summary under abridge's marker stands for what that agent archived, where that agent showed it:
  // before the first entry it kept.
  const earlier =
    marker.source === 'abridge'
      ? branch
          .slice(0, last)
          .filter(
            (e) =>
              e.compaction &&
              e.compaction.source !== 'abridge' &&
              e.message &&
              !isHidden(e.index) &&
              !(e.index >= archived.fromEntry && e.index <= archived.toEntry),
          )
      : [];
  const placed = new Set<Entry>();
  for (let i = 0; i < last; i++) {
    const e = branch[i]!;
    // Only the last marker's summary is in view: an earlier one is covered by a later abridge summary or carried into
    // it, and pi shows no earlier compaction's summary — but for another agent's summary still in view (above).
    for (const k of earlier) {
      const from = k.compaction!.firstKeptEntry;
      if (
        !placed.has(k) &&
        (k === e || (from !== undefined && e.index >= from && e.index < k.index && !isHidden(e.index)))
      ) {
        placed.add(k);
        out.push({ entry: k.index, message: k.message! });
      }
    }
    if (e.compaction) continue;
    if (isHidden(e.index)) continue;
    if (e.index >= archived.fromEntry && e.index <= archived.toEntry) {
      placeSummary();
      continue;
    }
    if (!e.message) continue;
    const edit = edits.get(e.index);
    out.push(edit ? { entry: e.index, message: edit.message, edit: edit.how } : { entry: e.index, message: e.message });
  }
  placeSummary();
  for (let i = last + 1; i < branch.length; i++) {
    const e = branch[i]!;
    if (e.message) out.push({ entry: e.index, message: e.message });
  }
  return out;
}

/**
 * What a marker archived. abridge markers say (any span after the first user message, always covering what earlier
 * markers archived). Other agents' markers replace everything before their first kept entry — or everything before the
 * marker when they keep nothing (Codex `compacted`, Claude Code boundaries, whose summary follows the boundary).
 */
function archivedRange(marker: CompactionMarker, markerEntry: Entry): { fromEntry: number; toEntry: number } {
  if (marker.source === 'abridge' && marker.archived) return marker.archived;
  const end =
    marker.firstKeptEntry !== undefined && marker.firstKeptEntry <= markerEntry.index
      ? marker.firstKeptEntry
      : markerEntry.index;
  return { fromEntry: 0, toEntry: end - 1 };
}

/** The messages of a view, for callers that only need them (what is sent to the provider). */
export function activeMessages(session: Session): Message[] {
  return activeView(session).map((v) => v.message);
}

/** A view item that stands for archived entries. */
export type SummaryItem = ViewItem & { covers: { fromEntry: number; toEntry: number } };

export function isSummaryItem(item: ViewItem): item is SummaryItem {
  return item.covers !== undefined;
}
