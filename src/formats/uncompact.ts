/**
 * Undoing a compaction written into a transcript: records appended after the file's last line that make the agent
 * resume the view as it was before the compaction (and the messages added since), nothing removed — the compaction's
 * records stay in the file, and a record abridge writes names them as undone.
 *
 * pi: a session is a tree and pi resumes the path from the file's last record. The undo appends a `custom` record
 * (`abridge.undo`, which pi leaves out of the context) whose parent is the record the compaction's path left — for
 * pi's own compaction the record before it, for abridge's (written as a new branch) the leaf that branch left — then
 * copies (new ids) of the records added after the compaction. The compaction is then on a branch pi's /tree shows but
 * does not resume; abridge's reader follows the same path, so its view is the earlier one too.
 */
import { AbridgeError } from '../errors.js';
import { activeBranch, conversationEntries } from '../model/branch.js';
import { stableId } from '../model/ids.js';
import type { CompactionMarker, Entry, Message, Session } from '../model/types.js';
import { viewOf, type ViewItem } from '../model/view.js';
import { CLAUDE_CODE_UNDO_FIELD, claudeCodeUndoRecords } from './claude-code.js';
import { isRecord } from './format.js';
import { migratedPiText } from './pi-write.js';
import { parseSession } from './read.js';

/** customType of the record an undo appends (pi ignores `custom` records when it builds the context). */
export const PI_UNDO_TYPE = 'abridge.undo';

export interface UncompactOptions {
  /** The compaction to undo, numbered as `abridge inspect` numbers them (1-based); default the last one in view. */
  marker?: number;
  /** Undo every compaction in view: the view as before the first. */
  all?: boolean;
  /** Counts a message's tokens: Claude Code's boundary says how large the view was (its `preTokens`; else 0). */
  countTokens?: (m: Message) => number;
  /** Timestamp of the records written (default now). */
  now?: Date;
}

export interface UncompactPlan {
  /** The records to append to the file, in order. */
  records: Record<string, unknown>[];
  /** The compactions undone, last first. */
  undone: CompactionMarker[];
}

/** One step of undoing: the compaction, the record the path then resumes from, and the records added after it. */
interface UndoStep {
  entry: Entry;
  leaf: string | null | undefined;
  after: Entry[];
}

/**
 * The compactions in view, last first, each with what undoing it gives: the last compaction on the resumed path, then
 * the last on the path its undo resumes from, and so on (abridge's later compaction may branch off before an earlier
 * one, which is then in the view it compacted though not on the path).
 */
function undoChain(session: Session): UndoStep[] {
  const steps: UndoStep[] = [];
  let leaf: string | null | undefined = activeBranch(session).at(-1)?.id;
  while (leaf) {
    const path = activeBranch(session, { leafId: leaf });
    let k = -1;
    path.forEach((e, i) => {
      if (e.compaction) k = i;
    });
    if (k === -1) break;
    const entry = path[k]!;
    const saved = abridgeOf(entry.raw);
    if (saved?.rebased === true) {
      // abridge's branch: its records up to where the compacted view ends are the view itself, not new messages.
      const endId = saved.viewEndsAtId;
      const end = typeof endId === 'string' ? path.findIndex((e) => e.id === endId) : -1;
      if (end === -1)
        throw new AbridgeError(
          'INVALID_INPUT',
          `uncompact: compaction #${entry.compaction!.number} does not say where its compacted view ends; nothing was written`,
        );
      leaf = leftLeaf(session, path, k);
      steps.push({ entry, leaf, after: path.slice(end + 1) });
    } else {
      leaf = entry.parentId ?? null;
      steps.push({ entry, leaf, after: path.slice(k + 1) });
    }
  }
  return steps;
}

/** The compactions in view (what an undo can take back), in order. */
export function compactionsInView(session: Session): Entry[] {
  if (!session.entries.some((e) => e.compaction)) return [];
  if (session.format === 'claude-code') return claudeCodeInView(conversationEntries(session));
  return undoChain(session)
    .map((s) => s.entry)
    .reverse();
}

/** The compaction an undo with these options goes back to, refused clearly when there is none or the number is off. */
function chosenMarker(session: Session, inView: Entry[], options: UncompactOptions, what: string): Entry {
  if (inView.length === 0) throw new AbridgeError('INVALID_INPUT', `${what}: no compaction in view; nothing to undo`);
  if (options.all) return inView[0]!;
  if (options.marker === undefined) return inView[inView.length - 1]!;
  const found = inView.find((e) => e.compaction!.number === options.marker);
  if (!found) {
    const all = session.entries.filter((e) => e.compaction).length;
    const numbers = inView.map((e) => `#${e.compaction!.number}`).join(', ');
    throw new AbridgeError(
      'INVALID_INPUT',
      options.marker >= 1 && options.marker <= all
        ? `${what}: compaction #${options.marker} is not in view (already undone, or on a branch left behind); in view: ${numbers}`
        : `${what}: no compaction #${options.marker} (the file has ${all}; in view: ${numbers})`,
    );
  }
  return found;
}

/** The `details.abridge` (or `data.abridge`) object of a record abridge wrote into a pi file. */
function abridgeOf(raw: unknown): Record<string, unknown> | undefined {
  if (!isRecord(raw)) return undefined;
  const holder = isRecord(raw.details) ? raw.details : isRecord(raw.data) ? raw.data : undefined;
  return holder && isRecord(holder.abridge) ? holder.abridge : undefined;
}

const SETTINGS = new Set(['model_change', 'thinking_level_change', 'custom']);

/**
 * For abridge's compaction written as a new branch: the record that branch left (the file's last record before the
 * branch's first). Named in the marker by writers since the undo exists; for older files, found where the branch
 * starts — the marker, or the settings records the writer repeated just before it.
 */
function leftLeaf(session: Session, path: readonly Entry[], k: number): string | null | undefined {
  const saved = abridgeOf(path[k]!.raw)?.leftLeafId;
  if (typeof saved === 'string') return saved;
  let j = k;
  while (
    j > 0 &&
    path[j - 1]!.index === path[j]!.index - 1 &&
    !path[j - 1]!.message &&
    isRecord(path[j - 1]!.raw) &&
    SETTINGS.has(String((path[j - 1]!.raw as Record<string, unknown>).type))
  )
    j--;
  for (let i = path[j]!.index - 1; i >= 0; i--) {
    const e = session.entries[i]!;
    if (e.id !== undefined && e.parentId !== undefined) return e.id;
  }
  return undefined;
}

/** The records that undo compactions of a pi session (read from a pi v2+ file, whose records link by id). */
export function uncompactPi(session: Session, options: UncompactOptions = {}): UncompactPlan {
  if (session.format !== 'pi' || !session.entries.some((e) => e.id !== undefined && e.parentId !== undefined))
    throw new AbridgeError(
      'NOT_WRITABLE_FORMAT',
      `uncompact: a ${session.format} file without record ids; abridge undoes compactions of pi v2+ sessions and Claude Code transcripts only`,
    );
  const chain = session.entries.some((e) => e.compaction) ? undoChain(session) : [];
  const target = chosenMarker(session, chain.map((c) => c.entry).reverse(), options, 'uncompact');
  const ids = new Set(session.entries.flatMap((e) => (e.id === undefined ? [] : [e.id])));
  const undone: CompactionMarker[] = [];
  let leaf: string | null | undefined;
  let tail: Entry[] = [];
  for (const step of chain) {
    tail = [...step.after, ...tail];
    undone.push(step.entry.compaction!);
    leaf = step.leaf;
    if (step.entry === target) break;
  }
  const iso = (options.now ?? new Date()).toISOString();
  const seed = `abridge-undo:${session.info.id ?? ''}:${session.entries.length}`;
  const newId = (n: number): string => {
    for (let i = 0; ; i++) {
      const id = stableId(`${seed}:${n}:${i}`, 8);
      if (!ids.has(id)) {
        ids.add(id);
        return id;
      }
    }
  };
  const records: Record<string, unknown>[] = [];
  let parentId: string | null = leaf ?? null;
  const push = (r: Record<string, unknown>) => {
    const { id: _i, parentId: _p, type, ...rest } = r;
    const id = newId(records.length);
    records.push({ type, id, parentId, ...rest });
    parentId = id;
  };
  push({
    type: 'custom',
    timestamp: iso,
    customType: PI_UNDO_TYPE,
    data: {
      undone: undone.map((m) => {
        const e = session.entries.find((x) => x.compaction === m);
        return { number: m.number, id: e?.id, source: m.source };
      }),
    },
  });
  for (const e of tail) {
    if (!isRecord(e.raw) || e.compaction) continue;
    if (e.raw.type === 'custom' && e.raw.customType === PI_UNDO_TYPE) continue;
    push(e.raw);
  }
  return { records, undone };
}

/** A file's text with records appended, one a line. */
export function appendRecords(text: string, records: readonly Record<string, unknown>[]): string {
  if (records.length === 0) return text;
  const sep = text.length === 0 || text.endsWith('\n') ? '' : '\n';
  return `${text}${sep}${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
}

export interface UncompactedText {
  /** The file's text with the undo appended (an older pi file first migrated to v3, as pi migrates it). */
  text: string;
  format: Session['format'];
  /** The compactions undone, last first. */
  undone: CompactionMarker[];
  /** True when the records were rewritten before the undo (an older pi file given ids, as pi does on loading it). */
  migrated: boolean;
}

/** Undoes compactions of a transcript given as its text: pi (v1 files migrated first) and Claude Code. */
export function uncompactText(text: string, options: UncompactOptions & { source?: string } = {}): UncompactedText {
  const session = parseSession(text, options.source ? { source: options.source } : {});
  if (session.format === 'pi') {
    const linear = !session.entries.some((e) => e.id !== undefined && e.parentId !== undefined);
    const base = linear ? migratedPiText(session) : text;
    const plan = uncompactPi(linear ? parseSession(base) : session, options);
    return { text: appendRecords(base, plan.records), format: 'pi', undone: plan.undone, migrated: linear };
  }
  if (session.format === 'claude-code') {
    const plan = uncompactClaudeCode(session, options);
    return { text: appendRecords(text, plan.records), format: 'claude-code', undone: plan.undone, migrated: false };
  }
  throw new AbridgeError(
    'NOT_WRITABLE_FORMAT',
    `uncompact: ${options.source ?? 'the input'} is ${session.format}; abridge undoes compactions in pi and claude-code transcripts only`,
  );
}

/** A Claude Code boundary an undo wrote: the uuids of the boundaries it undid. */
function undoneBy(e: Entry): string[] | undefined {
  const u = isRecord(e.raw) ? e.raw[CLAUDE_CODE_UNDO_FIELD] : undefined;
  if (!isRecord(u) || !Array.isArray(u.undone)) return undefined;
  return u.undone.flatMap((x) => (isRecord(x) && typeof x.id === 'string' ? [x.id] : []));
}

/** Claude Code's compactions in view: boundaries on the branch that are neither an undo's nor undone by one. */
function claudeCodeInView(branch: readonly Entry[]): Entry[] {
  const undone = new Set<string>();
  for (const e of branch) for (const id of (e.compaction && undoneBy(e)) || []) undone.add(id);
  return branch.filter((e) => e.compaction && !undoneBy(e) && !(e.id !== undefined && undone.has(e.id)));
}

/**
 * The records that undo compactions of a Claude Code transcript: a boundary marked as an undo, then the view before the
 * compaction and the messages Claude Code recorded after it (not the records a compaction or an undo re-appended: those
 * abridge wrote, `version: "abridge"`, and Claude Code's summaries), as a new chain the CLI resumes.
 */
export function uncompactClaudeCode(session: Session, options: UncompactOptions = {}): UncompactPlan {
  const branch = conversationEntries(session);
  const inView = claudeCodeInView(branch);
  const target = chosenMarker(session, inView, options, 'uncompact');
  const k = branch.indexOf(target);
  const undone = inView.slice(inView.indexOf(target)).reverse();
  const restored: ViewItem[] = viewOf(branch.slice(0, k));
  let raw: unknown;
  for (const e of branch.slice(k + 1)) {
    if (!e.fromSameRecord) raw = e.raw;
    if (!e.message || e.compaction || !isRecord(raw)) continue;
    if (raw.version === 'abridge' || raw.isCompactSummary === true) continue;
    restored.push({ entry: e.index, message: e.message });
  }
  const count = options.countTokens;
  const preTokens = count ? viewOf(branch).reduce((n, v) => n + count(v.message), 0) : 0;
  const records = claudeCodeUndoRecords(
    session,
    restored,
    undone.map((e) => ({ number: e.compaction!.number, id: e.id })),
    preTokens,
    (options.now ?? new Date()).toISOString(),
  );
  return { records, undone: undone.map((e) => e.compaction!) };
}
