import { posix } from 'node:path';
import { trimEndOf } from '../model/text.js';
import type { Message, ToolCallPart, ToolResultPart } from '../model/types.js';
import { isSummaryItem, type SummaryItem, type ViewItem } from '../model/view.js';
import type { TokenCounter } from '../tokens/counter.js';
import {
  callInfo,
  commandOf,
  fileReads,
  outcomeOf,
  printedErrors,
  resultText,
  textChanges,
  type FileRead,
  type TextChange,
} from './records.js';
import { summaryMessage, summaryText } from './strategies/summarize.js';
import { FILES_HEADING, TITLE } from './summarizers/render.js';
import { isHumanUser } from './turns.js';

/**
 * What of a view is still in play: for each file, the tool result that holds its latest read, the reads a later read
 * of the same lines superseded, and the results a later change of the file made stale. Only what the records say: a
 * read is a read tool's file, an editor's `view`, SWE-agent's `open` or a shell command that prints a file as it is
 * (records.ts `fileReads`); a change is a file change (records.ts `callInfo`) of a call that did not fail.
 *
 * Clearing takes the results no longer in play first and a file's latest read last (clear-tool-results.ts); after
 * archiving, the files the archived work leaves in play come back in the room the view leaves (compact.ts).
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
    if (r.cwd && !p.startsWith('/') && !p.startsWith('~')) p = `${trimEndOf(r.cwd, '/')}/${p}`;
    p = trimEndOf(posix.normalize(p), '/');
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

// ---------------------------------------------------------------------------------------------------------------------
// Files given back after archiving

export { FILES_HEADING };

/** How many files come back after archiving, and how large each may be (Claude Code's rule: 5 files of ≤ 5K tokens). */
export interface FilesBack {
  files: number;
  perFile: number;
}

export const DEFAULT_FILES_BACK: FilesBack = { files: 5, perFile: 5000 };

/** A line-number prefix as read tools write it: `   12→`, `    12\t`, `12:` (SWE-agent), `12. ` (Copilot CLI). */
const NUMBERED = [/^\s*\d+→/, /^\s*\d+\t/, /^\d+:/, /^\d+\. /];

/** A read's lines without the line-number prefix its tool wrote (when most of its lines have one). */
function plainText(text: string): string {
  const lines = text.split('\n');
  const filled = lines.filter((l) => l.trim());
  const prefix = NUMBERED.find((re) => filled.filter((l) => re.test(l)).length >= 0.6 * filled.length);
  return prefix ? lines.map((l) => l.replace(prefix, '')).join('\n') : text;
}

/** A command's output without the header its harness writes before it (Codex's Chunk ID, Wall time, exit, `Output:`). */
function withoutHeader(text: string): string {
  const lines = text.split('\n');
  const at = lines.indexOf('Output:');
  if (at === -1 || at > 6) return text;
  const header = /^(?:Chunk ID|Wall time|Process exited with code|Exit code|Original token count|Total output lines)\b/;
  return lines.slice(0, at).every((l) => header.test(l)) ? lines.slice(at + 1).join('\n') : text;
}

/** A change applied to a file's text, and where it falls; undefined when the text does not hold what it replaces. */
function applyChange(text: string, c: TextChange): { text: string; at: number } | undefined {
  if (c.how === 'write') return { text: c.text, at: 0 };
  if (c.how === 'replace') {
    const at = text.indexOf(c.old);
    if (at === -1) return undefined;
    const next = c.all ? text.split(c.old).join(c.new) : text.slice(0, at) + c.new + text.slice(at + c.old.length);
    return { text: next, at };
  }
  const lines = text.split('\n');
  const line = c.how === 'lines' ? c.from - 1 : c.after;
  if (line < 0 || line > lines.length) return undefined;
  if (c.how === 'lines') lines.splice(line, Math.max(0, c.to - c.from + 1), ...c.text.split('\n'));
  else lines.splice(line, 0, ...c.text.split('\n'));
  return { text: lines.join('\n'), at: lines.slice(0, line).join('\n').length };
}

/** A file's text as the records leave it at some point, where its latest change falls, and how it was made. */
interface FileText {
  path: string;
  text: string;
  focus: number;
  how: string;
}

const entryWords = (entries: readonly number[]) =>
  `${entries.length === 1 ? 'entry' : 'entries'} ${entries.join(', ')}`;

/**
 * A file's text up to view position `until`: from its latest whole write, else its latest read (when that read printed
 * the file alone), with the changes after it applied as far as they apply — the first that does not is said, and
 * nothing after it is applied.
 */
function fileText(file: FileInPlay, until: number): FileText | undefined {
  const changes = file.changes.filter((c) => c.at <= until);
  const writes = changes.flatMap((c, k) => {
    const w = textChanges(c.call, c.result).find((t) => t.how === 'write');
    return w ? [{ k, text: w.text }] : [];
  });
  const write = writes[writes.length - 1];
  let text: string;
  let from: number;
  let how: string;
  let numbered = false;
  if (write) {
    text = write.text;
    from = write.k + 1;
    const e = changes[write.k]!.entry;
    how = `written whole${e !== undefined ? ` in entry ${e}` : ''}`;
  } else if (file.read && file.read.at <= until && !file.read.range.mixed) {
    const r = file.read;
    text = withoutHeader(resultText(r.result));
    from = 0;
    numbered = true;
    const lines = r.range.from !== undefined ? ` (lines ${r.range.from}–${r.range.to ?? 'end'})` : '';
    how = `read${r.entry !== undefined ? ` in entry ${r.entry}` : ''}${lines}`;
  } else return undefined;
  let focus = 0;
  const applied: number[] = [];
  for (const c of changes.slice(from)) {
    const parts = textChanges(c.call, c.result);
    // Line numbers a read tool wrote are not in the file: its old text is matched without them.
    let next: string | undefined = parts.length > 0 ? (numbered ? plainText(text) : text) : undefined;
    let at = focus;
    for (const t of parts) {
      const done = next === undefined ? undefined : applyChange(next, t);
      next = done?.text;
      if (done) at = done.at;
    }
    if (next === undefined) {
      how += `; changed after that${c.entry !== undefined ? ` in entry ${c.entry}` : ''}, not applied here`;
      break;
    }
    text = next;
    focus = at;
    numbered = false;
    if (c.entry !== undefined) applied.push(c.entry);
  }
  if (applied.length > 0) how += `, then changed in ${entryWords(applied)} (applied here)`;
  return { path: file.path, text: trimEndOf(text, '\n'), focus, how };
}

/** The lines of `text` around character `focus` within `tokens` (what follows favoured), the lines shown said. */
function excerpt(text: string, focus: number, tokens: number, counter: TokenCounter): string {
  if (counter.text(text) <= tokens) return text;
  const lines = text.split('\n');
  const at = Math.max(0, Math.min(lines.length - 1, text.slice(0, focus).split('\n').length - 1));
  let lo = at;
  let hi = at + 1;
  let used = counter.text(lines[at]!) + 1;
  // Two lines after the focus for each line before it (a change is read on from where it starts).
  for (let turn = 0; lo > 0 || hi < lines.length; turn++) {
    const down = hi < lines.length && (turn % 3 !== 2 || lo === 0);
    const cost = counter.text(down ? lines[hi]! : lines[lo - 1]!) + 1;
    if (used + cost > tokens - 16) break;
    used += cost;
    if (down) hi++;
    else lo--;
  }
  if (used > tokens) return '';
  return [`[an excerpt: lines ${lo + 1}–${hi} of the ${lines.length} of this text]`, ...lines.slice(lo, hi)].join('\n');
}

/** A fence longer than any run of backticks in the text. */
function fenceFor(text: string): string {
  return '`'.repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
}

/**
 * The files an archived span leaves in play, as their text stood at its end, within `budget` tokens: the most recently
 * read or changed first (over the whole view), only those whose latest read or whole write is in the span and that no
 * later read or whole write in view shows again. A file too large for its share comes as the lines around its latest
 * change (or its opening). Empty when none.
 */
export function filesSection(
  play: InPlay,
  span: ReadonlySet<string>,
  budget: number,
  counter: TokenCounter,
  o: FilesBack = DEFAULT_FILES_BACK,
): string {
  const inSpan = play.files.flatMap((f) =>
    [f.read, ...f.changes].filter((x) => x !== undefined && span.has(x.call.id)),
  );
  if (inSpan.length === 0) return '';
  const until = Math.max(...inSpan.map((x) => x!.at));
  const parts: string[] = [];
  let left = budget - counter.text(FILES_HEADING) - 2;
  for (const f of play.files) {
    if (parts.length >= o.files || left < 60) break;
    // Read again after the span, or written whole: that later call in view has its text.
    if (f.read && f.read.at > until) continue;
    if (f.changes.some((c) => c.at > until && textChanges(c.call, c.result).some((t) => t.how === 'write'))) continue;
    const t = fileText(f, until);
    if (!t?.text.trim()) continue;
    const header = `- ${t.path} — ${t.how}:`;
    const room = Math.min(o.perFile, left) - counter.text(header) - 8;
    if (room < 40) continue;
    const body = excerpt(t.text, t.focus, room, counter);
    if (!body.trim()) continue;
    const fence = fenceFor(body);
    const block = `${header}\n${fence}\n${body}\n${fence}`;
    left -= counter.text(block) + 1;
    parts.push(block);
  }
  return parts.length > 0 ? `${FILES_HEADING}\n${parts.join('\n')}` : '';
}

/**
 * After the chain archived work: the room the view leaves under `target` goes to the files the archived span leaves in
 * play (filesSection), appended to abridge's summary. Only the room left: measured on bench:continuation, files that
 * take from the summary's own budget cost more facts than they bring. The view unchanged when nothing fits.
 */
export function filesBack(
  view: ViewItem[],
  o: {
    /** The view before this compaction, and what an entry itself holds. */
    before: readonly ViewItem[];
    raw: (entry: number) => Message | undefined;
    target: number;
    size: (v: readonly ViewItem[]) => number;
    counter: TokenCounter;
    files?: FilesBack;
  },
): ViewItem[] {
  const at = view.findIndex(
    (it) => isSummaryItem(it) && it.message.parts.some((p) => p.type === 'compaction' && p.marker.source === 'abridge'),
  );
  const room = o.target - o.size(view);
  if (at === -1 || room < 80) return view;
  const item = view[at] as SummaryItem;
  // Only abridge's extractive hand-off takes the section (its parse knows where it starts); a model's accepted answer is
  // the summary as the model wrote it, and a note squeezed to a line has no room for more.
  if (!summaryText(item.message).startsWith(TITLE)) return view;
  const shown = new Set(view.map((v) => v.entry));
  const span = new Set<string>();
  for (const it of o.before) {
    const e = it.entry;
    if (e === undefined || shown.has(e) || e < item.covers.fromEntry || e > item.covers.toEntry) continue;
    for (const p of it.message.parts) if (p.type === 'tool-result') span.add(p.callId);
  }
  if (span.size === 0) return view;
  const play = inPlay(o.before, (it) => (it.entry !== undefined ? o.raw(it.entry) : undefined));
  const text = trimEndOf(summaryText(item.message), '\n');
  let budget = Math.floor(room);
  // The section is sized by its text; the message may count a little more: aim lower by what it came out over.
  for (let attempt = 0; attempt < 3 && budget >= 60; attempt++) {
    const section = filesSection(play, span, budget, o.counter, o.files);
    if (!section) return view;
    const message = summaryMessage(`${text}\n\n${section}`);
    const grow = o.counter.message(message) - o.counter.message(item.message);
    if (grow <= room) {
      const out = view.slice();
      out[at] = { message, covers: item.covers } as SummaryItem;
      return out;
    }
    budget -= grow - room + 10;
  }
  return view;
}
