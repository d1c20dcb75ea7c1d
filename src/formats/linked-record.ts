import { toEpochMs } from '../model/parts.js';
import type { EntryDraft, SessionInfo } from '../model/types.js';

/**
 * What Claude Code's and Qwen Code's JSONL records say the same way (`uuid`/`parentUuid` links, `timestamp`,
 * `isSidechain`, and the session's `sessionId` and `cwd`): onto the entry, and the session's facts into `info` from
 * the first record that has them.
 */
export function takeLinkedRecord(
  r: Record<string, unknown>,
  base: EntryDraft,
  info: SessionInfo,
  uuid: string | undefined,
): void {
  if (uuid !== undefined) {
    base.id = uuid;
    base.parentId = typeof r.parentUuid === 'string' ? r.parentUuid : null;
  }
  const ts = toEpochMs(r.timestamp);
  if (ts !== undefined) base.timestamp = ts;
  if (r.isSidechain === true) base.sidechain = true;
  if (info.id === undefined && typeof r.sessionId === 'string') info.id = r.sessionId;
  if (info.cwd === undefined && typeof r.cwd === 'string') info.cwd = r.cwd;
  if (info.startedAt === undefined && ts !== undefined) info.startedAt = ts;
}
