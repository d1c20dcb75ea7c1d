/**
 * `compact --preview`, `--pin`, `--pin-match`, `--summary-file`: what a compaction would do, read off the compaction
 * itself (run on the session in memory), and the options that pin messages or give the summary's text.
 */
import { readFile } from 'node:fs/promises';
import pc from 'picocolors';
import type { CompactionResult } from '../compaction/options.js';
import { pinnableText } from '../compaction/pins.js';
import { AbridgeError } from '../errors.js';
import { argumentsText } from '../model/parts.js';
import type { Message, Session } from '../model/types.js';
import { isSummaryItem, type ViewItem } from '../model/view.js';
import { fmtInt } from './render.js';

/** One entry as a preview names it: its number, role and a one-line gist. */
export interface PreviewEntry {
  entry: number;
  role: Message['role'];
  gist: string;
}

export interface CompactionPreview {
  beforeTokens: number;
  afterTokens: number;
  target: number;
  reachedTarget: boolean;
  /** Runs of entries the model would no longer see (archived behind the summary; every entry stays in the file). */
  archived: { fromEntry: number; toEntry: number; entries: PreviewEntry[] }[];
  /** Entries kept but shortened: how (cleared, offloaded, compressed — head and tail —, stubbed, …). */
  edits: (PreviewEntry & { how: string })[];
  /** Entries kept verbatim, as runs; and what of them is pinned or protected (must stay), with its size. */
  verbatim: { fromEntry: number; toEntry: number }[];
  pinned: { entry: number; tokens: number }[];
  protectedParts: CompactionResult['protectedParts'];
  /** The summary the model would see first (empty when nothing is archived). */
  summary: string;
  editedSummary?: CompactionResult['editedSummary'];
  strategiesRun: CompactionResult['strategiesRun'];
  notes: string[];
}

/** A line of a message: what a person reading a list of entries needs to tell them apart. */
export function gist(m: Message, max = 90): string {
  const oneLine = (s: string) => {
    const line = s.split('\n').find((l) => l.trim() !== '') ?? '';
    const t = line.trim().replace(/\s+/g, ' ');
    return t.length > max ? `${t.slice(0, max - 1)}…` : t;
  };
  const text = m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
  if (oneLine(text)) return oneLine(text);
  for (const p of m.parts) {
    if (p.type === 'tool-call') return oneLine(`→ ${p.name} ${argumentsText(p.arguments)}`);
    if (p.type === 'tool-result') {
      const out = p.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');
      return oneLine(`${p.toolName ?? 'result'}${p.isError ? ' (error)' : ''}: ${out}`);
    }
    if (p.type === 'compaction') return oneLine(`(summary) ${p.marker.summary}`);
    if (p.type === 'image' || p.type === 'file') return `[${p.type}]`;
  }
  return m.parts.some((p) => p.type === 'thinking') ? '(thinking)' : '(empty)';
}

function runs(entries: readonly number[]): { fromEntry: number; toEntry: number }[] {
  const out: { fromEntry: number; toEntry: number }[] = [];
  for (const e of [...entries].sort((a, b) => a - b)) {
    const last = out[out.length - 1];
    if (last && e === last.toEntry + 1) last.toEntry = e;
    else out.push({ fromEntry: e, toEntry: e });
  }
  return out;
}

/** The preview of a compaction `compact` made of `session` in memory: `before` is the view it started from. */
export function previewOf(
  session: Session,
  before: readonly ViewItem[],
  after: readonly ViewItem[],
  result: CompactionResult,
  target: number,
): CompactionPreview {
  const shown = new Map(after.filter((v) => v.entry !== undefined).map((v) => [v.entry!, v]));
  const entryOf = (v: ViewItem): PreviewEntry => ({ entry: v.entry!, role: v.message.role, gist: gist(v.message) });
  const gone = before.filter((v) => v.entry !== undefined && !isSummaryItem(v) && !shown.has(v.entry));
  const archived = runs(gone.map((v) => v.entry!)).map((r) => ({
    ...r,
    entries: gone.filter((v) => v.entry! >= r.fromEntry && v.entry! <= r.toEntry).map(entryOf),
  }));
  const editedAt = new Map((result.marker?.edits ?? []).map((e) => [e.entry, e.how]));
  const edits = after
    .filter((v) => v.entry !== undefined && editedAt.has(v.entry))
    .map((v) => ({
      ...entryOf({ ...v, message: session.entries[v.entry!]?.message ?? v.message }),
      how: editedAt.get(v.entry!)!,
    }));
  const verbatim = runs(after.filter((v) => v.entry !== undefined && !editedAt.has(v.entry)).map((v) => v.entry!));
  const pinned = pinnedOf(result.protectedParts);
  return {
    beforeTokens: result.beforeTokens,
    afterTokens: result.afterTokens,
    target,
    reachedTarget: result.reachedTarget,
    archived,
    edits,
    verbatim,
    pinned,
    protectedParts: result.protectedParts,
    summary: result.marker?.summary ?? '',
    ...(result.editedSummary ? { editedSummary: result.editedSummary } : {}),
    strategiesRun: result.strategiesRun,
    notes: result.summaryNotes,
  };
}

/** The preview as text: what goes, what is shortened, what stays, the summary, the tokens. */
export function renderPreview(file: string, p: CompactionPreview): string {
  const lines: string[] = [
    `${pc.bold(file)} ${pc.dim('(preview: nothing written)')}`,
    `${fmtInt(p.beforeTokens)} → ${pc.bold(fmtInt(p.afterTokens))} tokens, budget ${fmtInt(p.target)}${p.reachedTarget ? pc.green(' ✓') : pc.yellow(' — not reached')}`,
  ];
  if (p.strategiesRun.length) lines.push(pc.dim(`passes: ${p.strategiesRun.map((s) => s.name).join(', ')}`));
  const range = (r: { fromEntry: number; toEntry: number }) =>
    r.fromEntry === r.toEntry ? `${r.fromEntry}` : `${r.fromEntry}–${r.toEntry}`;
  lines.push(
    '',
    pc.bold(`archived (${p.archived.reduce((n, r) => n + r.entries.length, 0)} entries, kept in the file)`),
  );
  if (p.archived.length === 0) lines.push(pc.dim('  nothing'));
  for (const r of p.archived) {
    lines.push(`  entries ${range(r)}`);
    for (const e of r.entries) lines.push(`    ${String(e.entry).padStart(5)} ${e.role.padEnd(9)} ${e.gist}`);
  }
  lines.push('', pc.bold(`shortened (${p.edits.length})`));
  if (p.edits.length === 0) lines.push(pc.dim('  nothing'));
  for (const e of p.edits)
    lines.push(`  ${String(e.entry).padStart(5)} ${e.how.padEnd(11)} ${e.role.padEnd(9)} ${e.gist}`);
  lines.push('', pc.bold('verbatim'));
  lines.push(`  entries ${p.verbatim.map(range).join(', ') || '(none)'}`);
  for (const line of pinnedLines(p.pinned)) lines.push(`  ${line}`);
  for (const x of p.protectedParts.filter((x) => !x.what.startsWith('pinned message')))
    lines.push(pc.dim(`  must stay: ${x.what} (${fmtInt(x.tokens)} tokens)`));
  lines.push('', pc.bold('summary'));
  if (p.editedSummary)
    lines.push(
      pc.dim(
        `  (the given summary: ${fmtInt(p.editedSummary.tokens)} tokens; room for it: ${fmtInt(p.editedSummary.room)})`,
      ),
    );
  lines.push(p.summary ? p.summary.replace(/^/gm, '  ') : pc.dim('  (none: nothing archived)'));
  for (const n of p.notes) lines.push(pc.dim(`note: ${n}`));
  return `${lines.join('\n')}\n`;
}

/**
 * `--pin <entry,…>`: entry numbers (as `inspect` and `view` number them) or entry ids, each of an entry holding a
 * message; anything else is refused naming the option.
 */
export function parsePins(value: string, session: Session): number[] {
  const items = value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (items.length === 0)
    throw new AbridgeError('INVALID_INPUT', `--pin: expected entry numbers or ids, got "${value}"`);
  const byId = new Map(session.entries.filter((e) => e.id !== undefined).map((e) => [e.id!, e.index]));
  return items.map((x) => {
    const n = /^\d+$/.test(x) ? Number(x) : byId.get(x);
    if (n === undefined || n >= session.entries.length)
      throw new AbridgeError(
        'INVALID_INPUT',
        `--pin: "${x}" is ${/^\d+$/.test(x) ? `not an entry (the transcript has entries 0–${session.entries.length - 1})` : 'neither an entry number nor the id of an entry'}`,
      );
    if (!session.entries[n]!.message)
      throw new AbridgeError(
        'INVALID_INPUT',
        `--pin: entry ${x} holds no message (${session.entries[n]!.kind}): nothing to pin`,
      );
    return n;
  });
}

/** `--pin-match <regex>`: the test of a message's text (its text, tool-call inputs and tool-result text). */
export function pinMatch(source: string): (m: Message) => boolean {
  let re: RegExp;
  try {
    re = new RegExp(source);
  } catch (err) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `--pin-match: not a regular expression: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return (m) => re.test(pinnableText(m));
}

/** `--summary-file F` (`-`: standard input): the summary's text, not empty. */
export async function readSummaryFile(file: string): Promise<string> {
  let text: string;
  try {
    if (file === '-') {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      text = Buffer.concat(chunks).toString('utf8');
    } else text = await readFile(file, 'utf8');
  } catch (err) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `--summary-file: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (text.trim() === '') throw new AbridgeError('INVALID_INPUT', `--summary-file: ${file} is empty`);
  return text.replace(/\s+$/, '');
}

/** The pinned messages among what must stay, by entry. */
export function pinnedOf(parts: readonly { what: string; tokens: number }[]): { entry: number; tokens: number }[] {
  return parts
    .map((p) => ({ m: /^pinned message \(entry (\d+)\)$/.exec(p.what), tokens: p.tokens }))
    .filter((x) => x.m !== null)
    .map((x) => ({ entry: Number(x.m![1]), tokens: x.tokens }));
}

/** Pins listed one a line up to this many; more are one line with their entries, total and the largest. */
const PINS_LISTED = 8;

/**
 * What pinning holds, for a person: each pinned message with its size, or — when a broad `--pin-match` pinned many — one
 * line naming their entries, their total and the largest three (`--json` keeps every one).
 */
export function pinnedLines(pinned: readonly { entry: number; tokens: number }[]): string[] {
  if (pinned.length <= PINS_LISTED) return pinned.map((x) => `pinned: entry ${x.entry} (${fmtInt(x.tokens)} tokens)`);
  const total = pinned.reduce((n, x) => n + x.tokens, 0);
  const largest = [...pinned]
    .sort((a, b) => b.tokens - a.tokens)
    .slice(0, 3)
    .map((x) => `entry ${x.entry} (${fmtInt(x.tokens)})`);
  const spans = runs(pinned.map((x) => x.entry)).map((r) =>
    r.fromEntry === r.toEntry ? String(r.fromEntry) : `${r.fromEntry}–${r.toEntry}`,
  );
  const entries = spans.length > 6 ? `${spans.slice(0, 6).join(', ')}, …` : spans.join(', ');
  return [
    `pinned: ${fmtInt(pinned.length)} messages, ${fmtInt(total)} tokens (entries ${entries}); the largest: ${largest.join(', ')}`,
  ];
}
