import { isUndoCheckpoint, walkUndos } from '../model/undo.js';
import { conversationEntries, isTreeShaped } from '../model/branch.js';
import { isoTime } from '../model/parts.js';
import { problemCounts, SessionStats, type SessionStatsResult } from '../model/stats.js';
import type { Entry, FormatId, Problem, Session, SessionInfo } from '../model/types.js';
import { CLAUDE_CODE_UNDO_FIELD } from './claude-code.js';
import { isRecord } from './format.js';
import { streamSession, type ReadOptions } from './read.js';
import { getFormat } from './registry.js';
import { compactionsInView, PI_UNDO_TYPE } from './uncompact.js';

/** A compaction as `inspect` lists it; what an undo changed is known when the whole session was read (not streamed). */
export type InspectCompaction = SessionStatsResult['compactions'][number] & {
  /**
   * Whether it is in the view the agent resumes — a compaction an undo could take back: false once undone, on a branch
   * left behind, and for an undo's own record (no compaction to undo).
   */
  inView?: boolean;
  /**
   * An undo's record (a ContextManager's checkpoint, a Claude Code boundary abridge wrote): the compactions it took
   * back, last first.
   */
  undone?: number[];
  /** For a compaction undone: the undo's record (its number when the undo is itself numbered among the compactions). */
  undoneBy?: { entry: number; line?: number; number?: number };
};

/** What `abridge inspect --json` prints. docs/cli.md documents each field. */
export interface InspectReport extends SessionStatsResult {
  file: string;
  format: FormatId;
  formatLabel: string;
  session: { id?: string; cwd?: string; version?: number; title?: string; startedAt?: string; endedAt?: string };
  bytes: number;
  problems: Problem[];
  problemCounts: Record<string, number>;
  compactions: InspectCompaction[];
}

export interface InspectOptions extends ReadOptions {
  /** Also sees every entry as it streams past (e.g. a token breakdown). */
  onEntry?: (entry: Entry) => void;
}

/** Reads a transcript once, streaming, and summarizes it. Entries are not kept, so any size fits in memory. */
export async function inspectTranscript(path: string, options: InspectOptions = {}): Promise<InspectReport> {
  const stats = new SessionStats();
  let bytes = 0;
  const { onEntry } = options;
  const result = await streamSession(
    path,
    (e) => {
      stats.add(e);
      onEntry?.(e);
    },
    {
      ...options,
      onProgress: (read, total) => {
        bytes = total;
        options.onProgress?.(read, total);
      },
    },
  );
  return buildReport(path, bytes, result.format, result.info, stats, result.problems);
}

/** The same report for a session already in memory (its entries are all there, so nothing streams). */
export function inspectSession(session: Session, path: string, bytes: number): InspectReport {
  const stats = new SessionStats();
  for (const e of session.entries) stats.add(e);
  const report = buildReport(path, bytes, session.format, session.info, stats, session.problems);
  const states = undoStates(session);
  report.compactions = report.compactions.map((c) => ({ ...c, ...states.get(c.entry) }));
  return report;
}

type UndoState = Pick<InspectCompaction, 'inView' | 'undone' | 'undoneBy'>;

/**
 * Each compaction's state after the undos the session records, by entry index: a ContextManager's undo checkpoints
 * (in a store, or a file written from one), or what `abridge uncompact` appended to a pi file (a custom record, off
 * the compaction's branch) or a Claude Code transcript (a boundary naming the ones it undid).
 */
function undoStates(session: Session): Map<number, UndoState> {
  const out = new Map<number, UndoState>();
  const markers = session.entries.filter((e) => e.compaction);
  if (markers.length === 0) return out;
  const undid = new Map<Entry, Entry[]>();
  let inView: Entry[];
  if (markers.some((e) => isUndoCheckpoint(e.compaction))) {
    const walk = walkUndos(conversationEntries(session));
    inView = walk.inView;
    for (const [u, back] of walk.undid) undid.set(u, back);
  } else {
    inView = conversationEntries(session).filter((e) => e.compaction);
    // pi (records linked by id) and Claude Code: what `abridge uncompact` would take back — abridge's compaction of
    // pi is a branch of its own, which can leave an earlier compaction in view off its path. A linear pi file, or a
    // marker the undo cannot follow (it refuses to undo it), keeps the branch's compactions.
    if (session.format === 'claude-code' || (session.format === 'pi' && isTreeShaped(session)))
      try {
        inView = compactionsInView(session);
      } catch {}
    const byId = new Map(markers.flatMap((e) => (e.id === undefined ? [] : [[e.id, e] as const])));
    const byNumber = new Map(markers.map((e) => [e.compaction!.number, e]));
    for (const e of session.entries) {
      const named = undoRecord(session, e);
      if (!named) continue;
      const back = named.flatMap((x) => {
        const m =
          (x.id !== undefined ? byId.get(x.id) : undefined) ??
          (x.number !== undefined ? byNumber.get(x.number) : undefined);
        return m && m !== e ? [m] : [];
      });
      undid.set(e, back);
    }
  }
  const shown = new Set(inView);
  for (const e of markers) out.set(e.index, { inView: shown.has(e) });
  for (const [u, back] of undid) {
    const by: NonNullable<UndoState['undoneBy']> = { entry: u.index };
    if (u.line !== undefined) by.line = u.line;
    if (u.compaction) {
      by.number = u.compaction.number;
      out.set(u.index, { inView: false, undone: back.map((m) => m.compaction!.number) });
    }
    for (const m of back) out.set(m.index, { ...out.get(m.index), inView: false, undoneBy: by });
  }
  return out;
}

/** The compactions a record `abridge uncompact` wrote names as undone (by id, and number), if it is one. */
function undoRecord(session: Session, e: Entry): { id?: string; number?: number }[] | undefined {
  if (e.fromSameRecord || !isRecord(e.raw)) return undefined;
  let list: unknown;
  if (session.format === 'pi' && e.raw.type === 'custom' && e.raw.customType === PI_UNDO_TYPE)
    list = isRecord(e.raw.data) ? e.raw.data.undone : undefined;
  else if (session.format === 'claude-code' && e.compaction) {
    const u = e.raw[CLAUDE_CODE_UNDO_FIELD];
    list = isRecord(u) ? u.undone : undefined;
  }
  if (!Array.isArray(list)) return undefined;
  return list.flatMap((x) =>
    isRecord(x)
      ? [
          {
            ...(typeof x.id === 'string' ? { id: x.id } : {}),
            ...(typeof x.number === 'number' ? { number: x.number } : {}),
          },
        ]
      : [],
  );
}

/**
 * How many compactions are in view on the branch as of entry `at`, from a report's compactions: those on the branch
 * up to there, less undo records and the ones an undo had taken back by then.
 */
export function compactionsInViewAt(session: Session, compactions: readonly InspectCompaction[], at: number): number {
  const onBranch = new Set(
    conversationEntries(session)
      .filter((e) => e.compaction && e.index <= at)
      .map((e) => e.index),
  );
  return compactions.filter(
    (c) => onBranch.has(c.entry) && c.undone === undefined && !(c.undoneBy && c.undoneBy.entry <= at),
  ).length;
}

function buildReport(
  path: string,
  bytes: number,
  format: FormatId,
  info: SessionInfo,
  stats: SessionStats,
  problems: Problem[],
): InspectReport {
  const s = stats.result();
  const session: InspectReport['session'] = {};
  if (info.id !== undefined) session.id = info.id;
  if (info.cwd !== undefined) session.cwd = info.cwd;
  if (info.version !== undefined) session.version = info.version;
  if (info.title !== undefined) session.title = info.title;
  const start = info.startedAt ?? s.firstTimestamp;
  // Times no date can hold (a session built by a program) are left out rather than thrown on.
  const startedAt = isoTime(start);
  if (startedAt !== undefined) session.startedAt = startedAt;
  const endedAt = isoTime(s.lastTimestamp);
  if (endedAt !== undefined) session.endedAt = endedAt;
  return {
    file: path,
    format,
    formatLabel: getFormat(format).label,
    session,
    bytes,
    ...s,
    problems,
    problemCounts: problemCounts(problems),
  };
}
