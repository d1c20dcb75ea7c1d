/**
 * Which compactions of a session a ContextManager kept are still in view once its undo checkpoints are applied — what
 * `ContextManager.undoCompaction` chooses from, `abridge inspect` reports and the context breakdown counts (for stores,
 * and files written from one).
 */
import type { CompactionMarker, Entry } from './types.js';
import type { AbridgeMarker } from './view.js';

/**
 * The checkpoint `ContextManager.undoCompaction` records: the view as it was before compaction `undoes`, then what was
 * appended after it. `undone` lists every compaction it took back, last first (`undoes` and the later ones then in
 * view); checkpoints recorded before `undone` existed took back `undoes` alone, which the walk below derives the same.
 */
export interface UndoCheckpoint extends AbridgeMarker {
  trigger: 'undo';
  undoes: number;
  undone?: number[];
}

export function isUndoCheckpoint(marker: CompactionMarker | undefined): marker is UndoCheckpoint {
  return (
    marker?.source === 'abridge' &&
    marker.trigger === 'undo' &&
    typeof (marker as { undoes?: unknown }).undoes === 'number'
  );
}

export interface UndoWalk {
  /** The compactions in view at the branch's end, in order (undo checkpoints are not compactions to undo). */
  inView: Entry[];
  /** For each undo checkpoint on the branch, the compactions it took back, last first. */
  undid: Map<Entry, Entry[]>;
}

/**
 * Walks a stored session's branch: a compaction comes into view; an undo checkpoint of compaction N takes N and every
 * compaction after it that is still in view back out — undoing N restores the view before N, which none of them had
 * touched. A checkpoint naming a compaction not in view (a log written otherwise) takes nothing back.
 */
export function walkUndos(branch: readonly Entry[]): UndoWalk {
  const inView: Entry[] = [];
  const undid = new Map<Entry, Entry[]>();
  for (const e of branch) {
    const m = e.compaction;
    if (!m) continue;
    if (!isUndoCheckpoint(m)) {
      inView.push(e);
      continue;
    }
    const k = inView.findIndex((x) => x.compaction!.number === m.undoes);
    undid.set(e, k === -1 ? [] : inView.splice(k).reverse());
  }
  return { inView, undid };
}
