/**
 * Writing pi sessions. A session read from pi is written back as it was, byte for byte. A session abridge compacted is
 * written so that pi resumes exactly abridge's view: pi resumes the path from the file's last entry to the root, and
 * only the latest `compaction` entry on that path changes it (its summary first, then the entries from its
 * `firstKeptEntryId` on). abridge's view keeps the first request before its summary and edits messages in place, which
 * no compaction entry can say, so the writer keeps every original record and appends a new branch: it leaves the path
 * where the view first differs from the original entries, and re-appends the rest of the view as rewritten records
 * (edits applied, the summary in its place). The abandoned branch stays in the file — pi's /tree shows it.
 */
import { EPOCH_ISO, isoTime } from '../model/parts.js';
import { conversationEntries, isTreeShaped } from '../model/branch.js';
import type { CompactionMarker, Entry, Message, Part, Session } from '../model/types.js';
import { isSummaryItem, viewOf, type AbridgeMarker, type ViewItem } from '../model/view.js';
import { isRecord } from './format.js';
import { stableId } from '../model/ids.js';
import { jsonlChunks, type JsonlLine } from './jsonl.js';
import { encodeEntry, encodeParts, isoOf, withoutType, ZERO_USAGE } from './pi-encode.js';

/** customType of the record that stands for abridge's summary where pi shows it in place (a user message to the model). */
export const PI_SUMMARY_TYPE = 'abridge.summary';
/** customType of a rewritten message pi has no record type for (an edited bash execution, another agent's summary). */
export const PI_MESSAGE_TYPE = 'abridge.message';
/** customType of abridge's marker when its compaction has no summary (pi ignores `custom` entries). */
export const PI_MARKER_TYPE = 'abridge.compaction';

type Line = JsonlLine;

/**
 * A session as a pi file. `redact` applies to what abridge adds (its compaction records, the re-appended view, a
 * conversion from another format); records read from a pi file are written back as they were.
 */
export function writePi(session: Session, options: { redact?: (text: string) => string } = {}): string {
  return [...writePiChunks(session, options, Number.POSITIVE_INFINITY)].join('');
}

/**
 * The same file in pieces of about `chunkChars` characters, each ending at the end of a line: what a large session is
 * written through (its records are serialized one piece at a time, never the whole file at once).
 */
export function writePiChunks(
  session: Session,
  options: { redact?: (text: string) => string } = {},
  chunkChars?: number,
): Iterable<string> {
  const redact = options.redact ?? ((t: string) => t);
  const branch = conversationEntries(session);
  const marker = resumeMarker(session, branch);
  if (marker) return writeCompacted(session, branch, marker, redact, chunkChars);
  if (readFromPi(session)) return writeAsRead(session, redact, chunkChars);
  return [redact(jsonlChunksText(writeConverted(session)))];
}

/**
 * A session read from a pi file (its header record kept), written back as it was read; a session of pi's format that
 * a program built (a ContextManager's, from its store) has no records of its own and is written as a new file.
 */
function readFromPi(session: Session): boolean {
  return (
    session.format === 'pi' &&
    session.entries.some((e) => e.kind === 'header' && (e.raw !== undefined || e.rawText !== undefined))
  );
}

/**
 * An older pi session (records without ids) as the v3 file pi migrates it to when it loads it (ids chaining the records
 * in order), every record kept: what an undo appends its records to.
 */
export function migratedPiText(session: Session): string {
  const out = new Originals(session);
  out.migrateLinear(session.entries);
  return jsonlChunksText(out.lines, session);
}

function jsonlChunksText(lines: Iterable<Line>, layout: { finalNewline?: boolean; trailingBlankLines?: number } = {}) {
  return [...jsonlChunks(lines, layout, Number.POSITIVE_INFINITY)].join('');
}

/**
 * The abridge compaction the written session must resume from: the last marker of the branch, when abridge made it and
 * it is not already in the file (a pi session keeps the records it was read from; another format is converted whole).
 */
function resumeMarker(session: Session, branch: readonly Entry[]): Entry | undefined {
  let last: Entry | undefined;
  for (const e of branch) if (e.compaction) last = e;
  if (!last || last.compaction!.source !== 'abridge') return undefined;
  if (session.format === 'pi' && (last.raw !== undefined || last.rawText !== undefined)) return undefined;
  return last;
}

/** Records read from pi as they were; entries added since are encoded and, in a tree, linked to the record before. */
function writeAsRead(session: Session, redact: (text: string) => string, chunkChars?: number): Iterable<string> {
  const tree = session.entries.some((e) => e.id !== undefined);
  const lines: Line[] = [];
  const written = writtenMarkers(session);
  let lastId: string | null = null;
  for (const e of session.entries) {
    if (e.fromSameRecord) continue;
    if (e.raw !== undefined || e.rawText !== undefined) {
      lines.push({
        text: e.rawText ?? (() => JSON.stringify(e.raw)),
        sameLineAsPrevious: e.sameLineAsPrevious,
        blankLinesBefore: e.blankLinesBefore,
      });
      if (e.id !== undefined) lastId = e.id;
      continue;
    }
    let first = true;
    for (const r of encodeEntry(e, isoOf(e), written)) {
      if (tree) {
        // An entry added in memory may already have its id (a compaction marker linked into the tree): keep it.
        const id = (first && e.id) || stableId(`${e.index}:${lines.length}:${JSON.stringify(r).length}`, 8);
        lines.push({ text: redact(JSON.stringify({ type: r.type, id, parentId: lastId, ...withoutType(r) })) });
        lastId = id;
        first = false;
      } else lines.push({ text: redact(JSON.stringify(r)) });
    }
  }
  return jsonlChunks(lines, session, chunkChars);
}

/** From another format: a v3 session whose entries form one linear branch. */
function writeConverted(session: Session): Line[] {
  const out = new Originals(session);
  out.convert(session.entries);
  return out.lines;
}

function writtenMarkers(session: Session): Set<CompactionMarker> {
  const written = new Set<CompactionMarker>();
  for (const e of session.entries) if (e.raw !== undefined && e.compaction) written.add(e.compaction);
  return written;
}

/**
 * The records of a session before its new branch, with the id each entry's (last) record has, so that the new branch
 * can leave the path at any of them.
 */
class Originals {
  readonly lines: Line[] = [];
  readonly idOf = new Map<number, string>();
  readonly ids = new Set<string>();
  readonly written: Set<CompactionMarker>;

  constructor(private readonly session: Session) {
    // Markers already in a pi file are written as they were; another format's are all still to be written.
    this.written = session.format === 'pi' ? writtenMarkers(session) : new Set();
    for (const e of session.entries) if (e.id !== undefined) this.ids.add(e.id);
  }

  newId(seed: string): string {
    for (let n = 0; ; n++) {
      const id = stableId(`${seed}:${n}`, 8);
      if (!this.ids.has(id)) {
        this.ids.add(id);
        return id;
      }
    }
  }

  /** Records read from a pi v2+ file, as they were — but each on its own line, as pi's loader needs. */
  keepTree(entries: readonly Entry[]): void {
    let lastId: string | null = null;
    for (const e of entries) {
      if (e.fromSameRecord) continue;
      if (e.raw !== undefined || e.rawText !== undefined) {
        this.lines.push({ text: e.rawText ?? (() => JSON.stringify(e.raw)), blankLinesBefore: e.blankLinesBefore });
        if (e.id !== undefined) {
          lastId = e.id;
          this.idOf.set(e.index, e.id);
        }
        continue;
      }
      lastId = this.appendEncoded(e, lastId);
    }
  }

  /**
   * Records read from an older pi file (no ids): migrated as pi itself migrates them when it loads the file (ids
   * chaining the records in order, a compaction's first kept entry by id, `hookMessage` renamed `custom`), so that the
   * new branch can leave the path.
   */
  migrateLinear(entries: readonly Entry[]): void {
    const sid = this.session.info.id ?? '';
    for (const e of entries)
      if (e.kind !== 'header' && isRecord(e.raw)) this.idOf.set(e.index, this.newId(`pi-v1:${sid}:${e.index}`));
    let lastId: string | null = null;
    for (const e of entries) {
      if (e.fromSameRecord) continue;
      if (!isRecord(e.raw)) {
        if (e.rawText !== undefined) this.lines.push({ text: e.rawText, blankLinesBefore: e.blankLinesBefore });
        else lastId = this.appendEncoded(e, lastId);
        continue;
      }
      if (e.kind === 'header') {
        this.lines.push({ text: JSON.stringify({ ...e.raw, version: 3 }), blankLinesBefore: e.blankLinesBefore });
        continue;
      }
      const { firstKeptEntryIndex: _i, ...raw } = e.raw;
      const r: Record<string, unknown> = {
        type: raw.type,
        id: this.idOf.get(e.index),
        parentId: lastId,
        ...withoutType(raw),
      };
      if (e.compaction?.firstKeptEntry !== undefined) {
        const kept = this.idOf.get(e.compaction.firstKeptEntry);
        if (kept) r.firstKeptEntryId = kept;
      }
      if (isRecord(r.message) && r.message.role === 'hookMessage') r.message = { ...r.message, role: 'custom' };
      this.lines.push({ text: JSON.stringify(r), blankLinesBefore: e.blankLinesBefore });
      lastId = r.id as string;
    }
  }

  /** Entries of another format: a v3 header, then every entry encoded, chained in order. */
  convert(entries: readonly Entry[]): void {
    const s = this.session;
    const start = entries.find((e) => e.timestamp !== undefined)?.timestamp ?? 0;
    this.lines.push({
      text: JSON.stringify({
        type: 'session',
        version: 3,
        id: s.info.id ?? stableId(`${s.format}:${s.entries.length}`, 36),
        timestamp: isoTime(s.info.startedAt) ?? isoTime(start) ?? EPOCH_ISO,
        cwd: s.info.cwd ?? '',
      }),
    });
    let lastId: string | null = null;
    for (const e of entries) if (e.kind !== 'header') lastId = this.appendEncoded(e, lastId);
  }

  private appendEncoded(e: Entry, parentId: string | null): string | null {
    let lastId = parentId;
    let first = true;
    for (const r of encodeEntry(e, isoOf(e), this.written)) {
      // An entry added to a pi session in memory may already have its id (a marker linked into the tree): keep it.
      const own =
        first && this.session.format === 'pi' && e.id !== undefined && !this.idOf.has(e.index) ? e.id : undefined;
      const id = own ?? this.newId(`entry:${e.index}:${this.lines.length}`);
      this.ids.add(id);
      this.lines.push({ text: JSON.stringify({ type: r.type, id, parentId: lastId, ...withoutType(r) }) });
      lastId = id;
      first = false;
    }
    if (lastId !== parentId && lastId !== null) this.idOf.set(e.index, lastId);
    return lastId;
  }
}

/** pi record types that pi shows the model as they are, each as one message (what an unchanged entry may stay as). */
const SHOWN_AS_IS = new Set(['message', 'custom_message', 'branch_summary']);
/** Records that set what pi resumes with besides messages (model, thinking level, extension state). */
const SETTINGS = new Set(['model_change', 'thinking_level_change', 'custom']);

function writeCompacted(
  session: Session,
  branch: readonly Entry[],
  markerEntry: Entry,
  redact: (text: string) => string,
  chunkChars?: number,
): Iterable<string> {
  const marker = markerEntry.compaction as AbridgeMarker;
  const originals = new Originals(session);
  const before = session.entries.filter((e) => e.index < markerEntry.index);
  const fromPi = readFromPi(session);
  if (!fromPi) originals.convert(before);
  else if (isTreeShaped(session) || session.entries.some((e) => e.id !== undefined)) originals.keepTree(before);
  else originals.migrateLinear(before);
  const view = viewOf(branch);
  const onBranch = branch.filter((e) => e.index < markerEntry.index);

  /** The records pi would read for an original entry, when it shows that entry's message as it is. */
  const shownAsIs = (e: Entry): boolean => {
    if (fromPi && isRecord(e.raw)) return typeof e.raw.type === 'string' && SHOWN_AS_IS.has(e.raw.type);
    if (fromPi && e.rawText !== undefined) return false;
    const records = e.compaction ? [] : encodeEntry(e, isoOf(e), new Set());
    return records.length === 1 && records[0]!.type === 'message';
  };

  // The path stays the original one for as long as the view shows the original entries unchanged.
  let vi = 0;
  let d = 0;
  for (; d < onBranch.length; d++) {
    const e = onBranch[d]!;
    if (!e.message) {
      if (e.compaction) break; // a marker of its own (abridge's, without summary): the view no longer follows it
      continue;
    }
    const it = view[vi];
    if (it && it.entry === e.index && !it.edit && !isSummaryItem(it) && it.message === e.message && shownAsIs(e)) {
      vi++;
      continue;
    }
    break;
  }
  let parentId: string | null = null;
  let messagesOnPath = vi > 0;
  for (let i = d - 1; i >= 0 && parentId === null; i--) parentId = originals.idOf.get(onBranch[i]!.index) ?? null;

  const added: Record<string, unknown>[] = [];
  const seed = `abridge:${session.info.id ?? ''}:${markerEntry.index}`;
  // A compaction record names the first entry pi keeps after its summary: the next record appended.
  let keptBy: Record<string, unknown> | undefined;
  const append = (r: Record<string, unknown>): Record<string, unknown> => {
    const id = originals.newId(`${seed}:${added.length}`);
    if (keptBy) keptBy.firstKeptEntryId = id;
    keptBy = undefined;
    const rec = { type: r.type, id, parentId, ...withoutType(r) };
    added.push(rec);
    parentId = id;
    return rec;
  };
  // A checkpoint's view is written as the records below: kept in the marker too, pi's reader would show it twice.
  const { number: _n, view: _restated, ...saved } = marker;
  const details: { abridge: Record<string, unknown> } = { abridge: { ...saved, rebased: true } };
  // The leaf the new branch leaves (the file's last record before it): where an undo of this compaction resumes from.
  let leftLeaf: string | undefined;
  for (let j = before.length - 1; j >= 0 && leftLeaf === undefined; j--)
    leftLeaf = originals.idOf.get(before[j]!.index);
  if (leftLeaf !== undefined) details.abridge.leftLeafId = leftLeaf;
  const iso = isoOf(markerEntry);
  // A ContextManager's checkpoint names no entries: its summary is the message that carries its own marker.
  const isSummary = (it: ViewItem): boolean =>
    isSummaryItem(it) ||
    (it.entry === undefined && it.message.parts.some((p) => p.type === 'compaction' && p.marker.source === 'abridge'));
  const summaryItem = view.find(isSummary);
  if (!summaryItem) append({ type: 'custom', timestamp: iso, customType: PI_MARKER_TYPE, data: details });

  // Settings records left behind on the original path are repeated on the new one, at their place among the messages.
  let next = d;
  const settingsUpTo = (index: number): void => {
    for (; next < onBranch.length && onBranch[next]!.index < index; next++) {
      const e = onBranch[next]!;
      if (e.message || !isRecord(e.raw) || !fromPi) continue;
      if (
        SETTINGS.has(String(e.raw.type)) &&
        !(e.raw.type === 'custom' && String(e.raw.customType).startsWith('abridge.'))
      )
        append(copyOf(e.raw));
    }
  };

  for (const it of view.slice(vi)) {
    if (it.entry !== undefined && it.entry > markerEntry.index) break;
    if (isSummary(it)) {
      if (isSummaryItem(it)) settingsUpTo(it.covers.fromEntry);
      if (!messagesOnPath) {
        // Nothing before it: pi's own compaction record says it (its summary is the first thing pi shows).
        const rec = append({
          type: 'compaction',
          timestamp: iso,
          summary: marker.summary,
          firstKeptEntryId: '',
          tokensBefore: marker.tokensBefore ?? 0,
          details,
        });
        rec.firstKeptEntryId = rec.id;
        keptBy = rec;
      } else {
        append({
          type: 'custom_message',
          timestamp: iso,
          customType: PI_SUMMARY_TYPE,
          content: [{ type: 'text', text: marker.summary }],
          display: true,
          details,
        });
      }
      messagesOnPath = true;
      continue;
    }
    if (it.entry === undefined) {
      // A checkpoint's message (the manager's working session restated): a new record of it.
      const { usage: _u, ...unbilled } = it.message;
      const e = { index: markerEntry.index, kind: 'message', message: unbilled as Message } as Entry;
      for (const r of encodeEntry(e, isoTime(it.message.timestamp) ?? iso, new Set())) append(r);
      messagesOnPath = true;
      continue;
    }
    const e = session.entries[it.entry]!;
    settingsUpTo(e.index);
    if (next < onBranch.length && onBranch[next]!.index === e.index) next++;
    for (const r of copiesOf(e, it, fromPi, iso)) append(r);
    messagesOnPath = true;
  }
  settingsUpTo(markerEntry.index);
  // Where the compacted view ends (of tokensAfter tokens): abridge's token count anchors there on reading back.
  if (added.length > 0) details.abridge.viewEndsAtId = added[added.length - 1]!.id;
  // pi resumes with the model of the last model_change or assistant message on the path: when the archived work held
  // the one that named it, the new path says it again.
  if (fromPi) {
    const was = resumedModel(onBranch.map((e) => e.raw));
    const now = resumedModel([...onBranch.slice(0, d).map((e) => e.raw), ...added]);
    if (was && (now?.provider !== was.provider || now.modelId !== was.modelId))
      append({ type: 'model_change', timestamp: iso, ...was });
  }
  // Entries added after the compaction follow it on the new path.
  for (const e of branch) {
    if (e.index <= markerEntry.index) continue;
    for (const r of encodeEntry(e, isoOf(e), originals.written)) append(r);
  }
  const out: Line[] = [...originals.lines, ...added.map((r) => ({ text: () => redact(JSON.stringify(r)) }))];
  return jsonlChunks(out, fromPi ? session : {}, chunkChars);
}

/** The model pi resumes a path of records with (as its buildSessionContext reads it). */
function resumedModel(records: readonly unknown[]): { provider: string; modelId: string } | undefined {
  let model: { provider: string; modelId: string } | undefined;
  for (const r of records) {
    if (!isRecord(r)) continue;
    if (r.type === 'model_change' && typeof r.provider === 'string' && typeof r.modelId === 'string')
      model = { provider: r.provider, modelId: r.modelId };
    else if (r.type === 'message' && isRecord(r.message) && r.message.role === 'assistant') {
      const { provider, model: modelId } = r.message;
      if (typeof provider === 'string' && typeof modelId === 'string') model = { provider, modelId };
    }
  }
  return model;
}

/**
 * The pi records that make pi show one item of abridge's view of a pi session (an entry's message, edited or not):
 * what the writer re-appends, and what abridge's pi extension hands pi for an LLM call.
 */
export function piRecordsFor(session: Session, item: ViewItem): Record<string, unknown>[] {
  const e = session.entries[item.entry!]!;
  return copiesOf(e, item, session.format === 'pi', isoOf(e));
}

function copyOf(raw: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, parentId: _p, ...rest } = raw;
  return rest;
}

/**
 * The records that make pi show a view item's message: the original record with the edit applied (an assistant copy
 * bills nothing: the original keeps its usage), or — for what pi has no record type for — a custom message, which pi
 * sends as a user message.
 */
function copiesOf(e: Entry, it: ViewItem, fromPi: boolean, iso: string): Record<string, unknown>[] {
  const m = it.message;
  const raw = fromPi && isRecord(e.raw) ? e.raw : undefined;
  if (raw?.type === 'message' && isRecord(raw.message)) {
    const msg: Record<string, unknown> = { ...raw.message };
    const role = msg.role;
    if (role === 'assistant') msg.usage = { ...ZERO_USAGE };
    if (it.edit) {
      if (role === 'toolResult') {
        const result = m.parts.find((p) => p.type === 'tool-result');
        if (!result || result.type !== 'tool-result') return [customMessage(m, e, iso)];
        msg.content = encodeParts(result.content);
        msg.isError = result.isError;
      } else if (role === 'user' || role === 'assistant' || role === 'custom' || role === 'hookMessage')
        msg.content = encodeParts(m.parts);
      else return [customMessage(m, e, iso)];
    }
    return [{ ...copyOf(raw), message: msg }];
  }
  if (raw && !it.edit && (raw.type === 'custom_message' || raw.type === 'branch_summary')) return [copyOf(raw)];
  if (raw?.type === 'custom_message') return [{ ...copyOf(raw), content: encodeParts(m.parts) }];
  if (raw || e.compaction || m.role === 'system') return [customMessage(m, e, iso)];
  const { usage: _u, ...unbilled } = m;
  return encodeEntry({ ...e, message: unbilled as Message, compaction: undefined } as Entry, isoOf(e), new Set());
}

function customMessage(m: Message, e: Entry, iso: string): Record<string, unknown> {
  const parts: Part[] = m.parts.flatMap((p) => (p.type === 'tool-result' ? p.content : [p]));
  return {
    type: 'custom_message',
    timestamp: isoTime(e.timestamp) ?? iso,
    customType: PI_MESSAGE_TYPE,
    content: encodeParts(parts),
    display: true,
    details: { entry: e.id ?? e.index },
  };
}
