import { AbridgeError } from '../errors.js';
import type { Entry, Session } from './types.js';

export interface BranchOptions {
  /** Id of the entry to walk back from. Default: the last entry with an id that is not on a sidechain. */
  leafId?: string;
  /**
   * Follow links across compaction boundaries (Claude Code `logicalParentUuid`), giving the whole history a person
   * saw. Default true; false stops at the boundary, giving what the model saw after the last compaction.
   */
  throughCompactions?: boolean;
}

/** True when the session links its entries as a tree (pi v2+ id/parentId, Claude Code uuid/parentUuid). */
export function isTreeShaped(session: Session): boolean {
  return session.entries.some((e) => e.id !== undefined && e.parentId !== undefined);
}

export function defaultLeafId(entries: readonly Entry[]): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.id !== undefined && e.parentId !== undefined && !e.sidechain) return e.id;
  }
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.id !== undefined && e.parentId !== undefined) return e.id;
  }
  return undefined;
}

/**
 * The active branch: the entries on the path from the root to the leaf, in order. Linear sessions (no parent links)
 * are their own branch. Entries without a place in the tree (headers, Claude Code snapshots and queue records) are
 * not on any branch; a header is kept at the front.
 */
export function activeBranch(session: Session, options: BranchOptions = {}): Entry[] {
  const { entries } = session;
  if (!isTreeShaped(session)) return entries.slice();
  const leafId = options.leafId ?? defaultLeafId(entries);
  if (leafId === undefined) return entries.slice();
  const byId = new Map<string, Entry>();
  for (const e of entries) if (e.id !== undefined && e.parentId !== undefined) byId.set(e.id, e);
  const through = options.throughCompactions ?? true;
  const path: Entry[] = [];
  const seen = new Set<string>();
  let cur = byId.get(leafId);
  if (!cur) throw new AbridgeError('INVALID_INPUT', `activeBranch: no entry with id "${leafId}" in this session`);
  while (cur && cur.id !== undefined && !seen.has(cur.id)) {
    seen.add(cur.id);
    path.push(cur);
    const parent: string | null | undefined = cur.parentId ?? (through ? cur.logicalParentId : undefined);
    cur = parent ? byId.get(parent) : undefined;
  }
  path.reverse();
  const onPath = new Set(path.map((e) => e.index));
  // Other formats write a whole response as one record, its results on the path after it: a copy of a response on
  // another branch (pi's re-appended records) shares its id and calls, and is not on this branch.
  if (session.format !== 'claude-code') return entries.filter((e) => onPath.has(e.index) || e.kind === 'header');
  // Parallel tool calls: Claude Code writes one record per content block of a response and hangs each tool result off
  // its own call, so sibling blocks and their results sit on side branches. Blocks of a response that is on the path,
  // and results of calls on the path, belong to the branch.
  const responses = new Set<string>();
  for (const e of path) if (e.message?.responseId) responses.add(e.message.responseId);
  const callsOnPath = new Set<string>();
  const sidechainLeaf = leafSidechain(entries, leafId);
  for (const e of entries) {
    const rid = e.message?.responseId;
    if (!onPath.has(e.index) && rid !== undefined && responses.has(rid) && (e.sidechain === true) === sidechainLeaf)
      onPath.add(e.index);
    if (onPath.has(e.index)) for (const p of e.message?.parts ?? []) if (p.type === 'tool-call') callsOnPath.add(p.id);
  }
  for (const e of entries) {
    if (onPath.has(e.index) || e.message?.role !== 'tool' || e.parentId == null) continue;
    const parent = byId.get(e.parentId);
    if (!parent || !onPath.has(parent.index)) continue;
    const results = e.message.parts.filter((p) => p.type === 'tool-result');
    if (results.length > 0 && results.every((p) => callsOnPath.has(p.callId))) onPath.add(e.index);
  }
  // Entries derived from the same record as an entry on the branch belong where that record is.
  for (const e of entries) if (e.fromSameRecord && e.index > 0 && onPath.has(e.index - 1)) onPath.add(e.index);
  const header = entries.find((e) => e.kind === 'header');
  if (header) onPath.add(header.index);
  // Source order is conversation order in every format we read (records are appended).
  return entries.filter((e) => onPath.has(e.index));
}

function leafSidechain(entries: readonly Entry[], leafId: string): boolean {
  return entries.some((e) => e.id === leafId && e.sidechain === true);
}

/** Messages of the given entries, in order. */
export function messagesOf(entries: readonly Entry[]): NonNullable<Entry['message']>[] {
  const out: NonNullable<Entry['message']>[] = [];
  for (const e of entries) if (e.message) out.push(e.message);
  return out;
}

/**
 * The conversation of the active branch: without subagent sidechains — unless the session is itself a subagent's
 * transcript (Claude Code `agent-*.jsonl`, every record a sidechain), which is then its own conversation.
 */
export function conversationEntries(session: Session, options: BranchOptions = {}): Entry[] {
  const unread = unparsableByAgent(session.entries);
  const branch = activeBranch(
    unread.size ? { ...session, entries: session.entries.filter((e) => !unread.has(e)) } : session,
    options,
  );
  const main = branch.filter((e) => !e.sidechain);
  return main.some((e) => e.message) ? main : branch;
}

/**
 * Records that share a physical line with another (a real-world corruption abridge reads and writes back byte for
 * byte): the agents' own loaders parse a line as one JSON value and skip one that does not parse, so none of these
 * records is part of what the agent resumes — nor, then, of the conversation abridge reports.
 */
function unparsableByAgent(entries: readonly Entry[]): Set<Entry> {
  const out = new Set<Entry>();
  entries.forEach((e, i) => {
    if (!e.sameLineAsPrevious) return;
    out.add(e);
    for (let j = i - 1; j >= 0; j--) {
      out.add(entries[j]!);
      if (!entries[j]!.sameLineAsPrevious) break;
    }
  });
  return out;
}
