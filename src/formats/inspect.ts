import { problemCounts, SessionStats, type SessionStatsResult } from '../model/stats.js';
import type { Entry, FormatId, Problem } from '../model/types.js';
import { streamSession, type ReadOptions } from './read.js';
import { getFormat } from './registry.js';

/** What `abridge inspect --json` prints. The README documents each field. */
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
  const result = await streamSession(path, (e) => {
    stats.add(e);
    onEntry?.(e);
  }, {
    ...options,
    onProgress: (read, total) => {
      bytes = total;
      options.onProgress?.(read, total);
    },
  });
  const s = stats.result();
  const session: InspectReport['session'] = {};
  if (result.info.id !== undefined) session.id = result.info.id;
  if (result.info.cwd !== undefined) session.cwd = result.info.cwd;
  if (result.info.version !== undefined) session.version = result.info.version;
  if (result.info.title !== undefined) session.title = result.info.title;
  const start = result.info.startedAt ?? s.firstTimestamp;
  if (start !== undefined) session.startedAt = new Date(start).toISOString();
  if (s.lastTimestamp !== undefined) session.endedAt = new Date(s.lastTimestamp).toISOString();
  return {
    file: path,
    format: result.format,
    formatLabel: getFormat(result.format).label,
    session,
    bytes,
    ...s,
    problems: result.problems,
    problemCounts: problemCounts(result.problems),
  };
}
