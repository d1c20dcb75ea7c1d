import { isoTime } from '../model/parts.js';
import { problemCounts, SessionStats, type SessionStatsResult } from '../model/stats.js';
import type { Entry, FormatId, Problem, Session, SessionInfo } from '../model/types.js';
import { streamSession, type ReadOptions } from './read.js';
import { getFormat } from './registry.js';

/** What `abridge inspect --json` prints. docs/cli.md documents each field. */
export interface InspectReport extends SessionStatsResult {
  file: string;
  format: FormatId;
  formatLabel: string;
  session: { id?: string; cwd?: string; version?: number; title?: string; startedAt?: string; endedAt?: string };
  bytes: number;
  problems: Problem[];
  problemCounts: Record<string, number>;
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
  return buildReport(path, bytes, session.format, session.info, stats, session.problems);
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
