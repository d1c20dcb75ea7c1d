import { posix } from 'node:path';
import type { Message, ToolCallPart, ToolResultPart } from '../model/types.js';
import type { ViewItem } from '../model/view.js';
import { callInfo, commandOf, fileReads, outcomeOf, printedErrors, resultText, type FileRead } from './records.js';
import { isHumanUser } from './turns.js';

/**
 * What of a view is still in play: for each file, the tool result that holds its latest read, the reads a later read
 * of the same lines superseded, and the results a later change of the file made stale. Only what the records say: a
 * read is a read tool's file, an editor's `view`, SWE-agent's `open` or a shell command that prints a file as it is
 * (records.ts `fileReads`); a change is a file change (records.ts `callInfo`) of a call that did not fail.
 *
 * Clearing takes the results no longer in play first and a file's latest read last (clear-tool-results.ts).
 */

/**
 * - `latest`: the newest read of a file it shows (whatever changed the file since: the agent edits from it);
 * - `superseded`: every file it shows was read again later, those lines included;
 * - `stale`: every file it shows was read again or changed later, and one of them changed;
 * - `older`: an earlier read of part of a file that no later read shows again;
 * - `other`: a result that shows no file's text (a command's output, a search's hits, an edit's acknowledgement).
 */
export type Standing = 'latest' | 'superseded' | 'stale' | 'older' | 'other';

/** The later call a placeholder points to: the read that has the file's current text, or the change that made it old. */
export interface LaterCall {
  path: string;
  how: 'read' | 'change';
  /** A change that deleted or moved the file (else it edited or wrote it). */
  gone?: 'deleted' | 'moved';
  /** The entry holding it: a read's result (its text), a change's call (what it changed). */
  entry?: number;
  callId: string;
}

export interface ResultStanding {
  standing: Standing;
  /** The files it shows (a read) or changes (an edit), as its call named them. */
  files: string[];
  /** Superseded: the newest later read of those lines; stale: the first change after it. */
  later?: LaterCall;
  /** Superseded: the first change of the file after that later read (then no read has its current text). */
  changedSince?: LaterCall;
  /** A latest read: the first change of its file after it. */
  changedAfter?: LaterCall;
  /** Its place in the view (the tool message) and entry. */
  at: number;
  entry?: number;
}

/** A file: its latest read, and the changes after it. */
export interface FileInPlay {
  /** The path as its latest read or change named it. */
  path: string;
  /** View position of its latest read or change. */
  lastAt: number;
  read?: { call: ToolCallPart; result: ToolResultPart; at: number; entry?: number; range: FileRead };
  /** Changes after that read (all of them when it has none), oldest first; `entry` is the call's. */
  changes: { call: ToolCallPart; result: ToolResultPart; at: number; entry?: number }[];
}

export interface InPlay {
  /** By tool call id. */
  results: Map<string, ResultStanding>;
  /** Files read or changed, the most recently touched first. */
  files: FileInPlay[];
}

interface Event {
  kind: 'read' | 'change';
  gone?: 'deleted' | 'moved';
  key: string;
  path: string;
  call: ToolCallPart;
  result: ToolResultPart;
  at: number;
  /** The result's entry for a read, the call's for a change. */
  entry?: number;
  range?: FileRead;
}

/**
 * The standing of every tool result of a view, and its files by recency. `original` gives an item's message as it was
 * before any compaction edited it (a cleared result's own text says whether its command failed); the view's otherwise.
 */
export function inPlay(view: readonly ViewItem[], original?: (item: ViewItem) => Message | undefined): InPlay {
  const calls = new Map<string, { call: ToolCallPart; entry?: number }>();
  for (const it of view)
    if (it.message.role === 'assistant')
      for (const p of it.message.parts)
        if (p.type === 'tool-call')
          calls.set(p.id, { call: p, ...(it.entry !== undefined ? { entry: it.entry } : {}) });
  const events: Event[] = [];
  const shown = new Map<string, { at: number; entry?: number; keys: string[]; edit: boolean }>();
  const keys = new PathKeys();
  view.forEach((it, at) => {
    if (it.message.role !== 'tool') return;
    const message = original?.(it) ?? it.message;
    for (const p of message.parts) {
      if (p.type !== 'tool-result') continue;
      const found = calls.get(p.callId);
      if (!found) continue;
      const { call } = found;
      const command = commandOf(call);
      const info = callInfo(call, p);
      const failed = outcomeOf(p, command !== undefined).failed;
      const reads = failed ? [] : fileReads(call, p);
      const entry = it.entry;
      for (const range of reads)
        events.push({ kind: 'read', key: keys.add(range), path: range.path, call, result: p, at, entry, range });
      // A command that printed an error did not do what it says (a `touch` a sandbox refused, unflagged).
      const refused = command !== undefined && info.kind === 'command' && printedErrors(resultText(p)).length > 0;
      const changes = failed || refused ? [] : info.changes;
      const changed = changes.flatMap((c) => c.path.split(' → '));
      for (const c of changes)
        for (const [k, path] of c.path.split(' → ').entries()) {
          // A move takes the file away from its first path (the second is where it now is).
          const gone = c.how === 'delete' ? 'deleted' : c.how === 'move' && k === 0 ? 'moved' : undefined;
          const e: Event = { kind: 'change', key: keys.add({ path }), path, call, result: p, at, entry: found.entry };
          events.push(gone ? { ...e, gone } : e);
        }
      shown.set(p.callId, {
        at,
        ...(entry !== undefined ? { entry } : {}),
        keys: reads.length > 0 ? reads.map((r) => keys.key(r)) : changed.map((path) => keys.key({ path })),
        edit: reads.length === 0 && changed.length > 0,
      });
    }
  });
  // Relative paths said beside the absolute one they end (`src/a.ts`, `/repo/src/a.ts`) are one file.
  for (const e of events) e.key = keys.resolve(e.key);
  const byKey = new Map<string, Event[]>();
  for (const e of events) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e]);

  const laterCall = (e: Event, how: 'read' | 'change'): LaterCall => ({
    path: e.path,
    how,
    callId: e.call.id,
    ...(e.entry !== undefined ? { entry: e.entry } : {}),
    ...(e.gone ? { gone: e.gone } : {}),
  });
  const results = new Map<string, ResultStanding>();
  for (const [callId, s] of shown) {
    const per = s.keys.map((raw): Omit<ResultStanding, 'files' | 'at' | 'entry'> => {
      const all = byKey.get(keys.resolve(raw)) ?? [];
      const mine = all.filter((e) => e.call.id === callId);
      const own = mine.find((e) => e.kind === 'read') ?? mine[0];
      if (!own) return { standing: 'other' };
      const after = all.slice(all.indexOf(own) + 1).filter((e) => e.call.id !== callId);
      const reads = after.filter((e) => e.kind === 'read');
      const change = after.find((e) => e.kind === 'change');
      // An edit's answer (a snippet, an editor's window) shows lines the record does not number: only a whole read
      // shows them again.
      const shownHere: FileRead = s.edit ? { path: own.path, partial: true } : own.range!;
      const covering = reads.findLast((e) => covers(e.range!, shownHere));
      if (covering) {
        const since = all.slice(all.indexOf(covering) + 1).find((e) => e.kind === 'change');
        return {
          standing: 'superseded',
          later: laterCall(covering, 'read'),
          ...(since ? { changedSince: laterCall(since, 'change') } : {}),
        };
      }
      if (s.edit) return change ? { standing: 'stale', later: laterCall(change, 'change') } : { standing: 'other' };
      if (reads.length === 0)
        return { standing: 'latest', ...(change ? { changedAfter: laterCall(change, 'change') } : {}) };
      return change ? { standing: 'stale', later: laterCall(change, 'change') } : { standing: 'older' };
    });
    const files = s.keys.map((k) => byKey.get(keys.resolve(k))?.find((e) => e.call.id === callId)?.path ?? k);
    const base = { files, at: s.at, ...(s.entry !== undefined ? { entry: s.entry } : {}) };
    const latest = per.find((x) => x.standing === 'latest');
    const dead = (x: { standing: Standing }) => x.standing === 'superseded' || x.standing === 'stale';
    let standing: Omit<ResultStanding, 'files' | 'at' | 'entry'>;
    if (per.length === 0) standing = { standing: 'other' };
    else if (latest) standing = latest;
    else if (per.every((x) => x.standing === 'superseded')) standing = per[0]!;
    else if (per.every(dead)) standing = per.find((x) => x.standing === 'stale')!;
    else standing = { standing: per.some((x) => x.standing === 'older') ? 'older' : 'other' };
    results.set(callId, { ...standing, ...base });
  }

  const files: FileInPlay[] = [];
  for (const all of byKey.values()) {
    const last = all[all.length - 1]!;
    const readAt = all.findLastIndex((e) => e.kind === 'read');
    const read = readAt === -1 ? undefined : all[readAt]!;
    const entryOf = (e: Event) => (e.entry !== undefined ? { entry: e.entry } : {});
    files.push({
      path: last.path,
      lastAt: last.at,
      ...(read
        ? { read: { call: read.call, result: read.result, at: read.at, range: read.range!, ...entryOf(read) } }
        : {}),
      changes: all
        .slice(readAt + 1)
        .filter((e) => e.kind === 'change')
        .map((e) => ({ call: e.call, result: e.result, at: e.at, ...entryOf(e) })),
    });
  }
  files.sort((a, b) => b.lastAt - a.lastAt);
  return { results, files };
}

/** Whether a read shows at least the lines of another of the same file (a window of unknown lines: only a whole read). */
function covers(later: FileRead, earlier: FileRead): boolean {
  const whole = (r: FileRead) => !r.partial && r.from === undefined && r.to === undefined;
  if (whole(later)) return true;
  if (later.partial || earlier.partial || whole(earlier)) return false;
  return (later.from ?? 1) <= (earlier.from ?? 1) && (later.to ?? Infinity) >= (earlier.to ?? Infinity);
}

/**
 * File identities of a view: a path with `./` and `..` resolved, made absolute by the directory a command was in; a
 * relative path that ends exactly one absolute path of the view is that file.
 */
class PathKeys {
  private readonly absolute = new Set<string>();
  private readonly aliases = new Map<string, string>();

  key(r: { path: string; cwd?: string }): string {
    let p = r.path.trim();
    if (r.cwd && !p.startsWith('/') && !p.startsWith('~')) p = `${r.cwd.replace(/\/+$/, '')}/${p}`;
    p = posix.normalize(p).replace(/\/+$/, '');
    return p.startsWith('./') ? p.slice(2) : p;
  }

  add(r: { path: string; cwd?: string }): string {
    const k = this.key(r);
    if (k.startsWith('/')) this.absolute.add(k);
    return k;
  }

  resolve(k: string): string {
    if (k.startsWith('/') || k.startsWith('~')) return k;
    let found = this.aliases.get(k);
    if (found === undefined) {
      const ends = [...this.absolute].filter((a) => a.endsWith(`/${k}`));
      found = ends.length === 1 ? ends[0]! : k;
      this.aliases.set(k, found);
    }
    return found;
  }
}

/**
 * What a placeholder says of a result no longer in play: which later read has the file's current text, or which change
 * made it old. Empty for a result still in play.
 */
export function laterNote(s: ResultStanding | undefined): string {
  const l = s?.later;
  if (!l || (s.standing !== 'superseded' && s.standing !== 'stale')) return '';
  const where = (c: LaterCall) => (c.entry !== undefined ? ` (entry ${c.entry})` : '');
  if (l.how === 'change') return `Stale: ${l.path} was ${l.gone ?? 'changed'} after this${where(l)}.`;
  const since = s.changedSince;
  return since
    ? `Superseded: ${l.path} was read again later${where(l)}, and ${since.gone ?? 'changed'} after that${where(since)}.`
    : `Superseded: ${l.path} was read again later${where(l)}; that read has its current text.`;
}

/**
 * The order in which the items of a view give way, first to last: results no longer in play (superseded, stale), then
 * turn by turn from the oldest (a turn starts at a person's message), other results before a file's latest read within
 * a turn (the next edit of a file is made from it), the oldest first. Giving back stays newest first (restoreNewest):
 * the reverse of this order kept no more facts on bench:continuation at its default cuts, and changed which
 * compactions a ContextManager's run needs.
 */
export function givingWayOrder(
  view: readonly ViewItem[],
  original?: (item: ViewItem) => Message | undefined,
  play: InPlay = inPlay(view, original),
): number[] {
  let turn = 0;
  const key = view.map((it) => {
    if (isHumanUser(it.message)) turn++;
    const standings = it.message.parts.flatMap((p) =>
      p.type === 'tool-result' ? [play.results.get(p.callId)?.standing ?? 'other'] : [],
    );
    const dead = standings.length > 0 && standings.every((x) => x === 'superseded' || x === 'stale');
    return { dead, turn, latest: standings.includes('latest') };
  });
  return view
    .map((_, i) => i)
    .sort((a, b) => {
      const x = key[a]!;
      const y = key[b]!;
      return Number(y.dead) - Number(x.dead) || x.turn - y.turn || Number(x.latest) - Number(y.latest) || a - b;
    });
}
