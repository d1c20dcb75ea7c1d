import type { Message } from '../../model/types.js';
import type { TokenCounter } from '../../tokens/counter.js';
import { emptyEvidence, extractEvidence, mergeEvidence, type Evidence } from './extract.js';
import type { SummaryRequest, Summarizer } from './summarizer.js';

const TITLE = '## Summary of earlier conversation (abridge, extractive)';

const SECTIONS = {
  instructions: 'User messages (verbatim)',
  events: 'Harness messages (slash commands, their output, interruptions)',
  state: 'Current state',
  fixes: 'Errors and how they were handled',
  changes: 'Files modified',
  filesRead: 'Files read',
  filesMentioned: 'Files mentioned',
  commands: 'Commands run (exit status; failing first, then most recent)',
  errors: 'Other error lines',
  decisions: 'Decisions',
  numbers: 'Numbers',
  todos: 'Pending tasks',
  next: 'Next step',
} as const;

type Key = keyof typeof SECTIONS;

/**
 * A hand-off summary that needs no LLM: the primary request, every user message verbatim, where the work stands,
 * errors and how they were handled, files modified (with what changed) and read, commands with their exit status
 * (failing first, then the most recent), decisions, numbers, pending tasks and the next step. It lists evidence
 * instead of paraphrasing it, and when it summarizes an earlier summary — its own or another agent's — it carries it
 * forward whole.
 */
export class ExtractiveSummarizer implements Summarizer {
  readonly name = 'extractive';
  readonly local = true;

  async summarize(req: SummaryRequest): Promise<string> {
    return this.summarizeSync(req);
  }

  summarizeSync(req: SummaryRequest): string {
    const messages = req.messages.filter((m) => !m.parts.some((p) => p.type === 'compaction'));
    let evidence = extractEvidence(messages);
    let foreign: string | undefined;
    let inherited = emptyEvidence();
    let earlier = 0;
    if (req.previousSummary) {
      const parsed = parseSummary(req.previousSummary);
      if (parsed) {
        earlier = parsed.archivedMessages;
        inherited = parsed.evidence;
        evidence = mergeEvidence(parsed.evidence, evidence);
        foreign = parsed.foreign;
      } else foreign = req.previousSummary;
    }
    // The task is kept verbatim in the conversation itself and quoted in its own section.
    if (req.task) evidence.instructions = evidence.instructions.filter((i) => i !== req.task);
    return fit(
      prepared({
        evidence,
        inherited: keysOf(inherited),
        foreign,
        task: req.task,
        archivedMessages: messages.length + earlier,
      }),
      req.maxTokens,
      req.counter,
      req.strict === true,
    );
  }
}

interface Content {
  evidence: Evidence;
  /** Items an earlier summary kept: never trimmed again (what the first compaction kept, the second keeps). */
  inherited: Set<string>;
  foreign: string | undefined;
  task: string | undefined;
  archivedMessages: number;
  /** The commands failing first, then the most recent; the error lines no fix already quotes (see prepared). */
  commandsByPriority: Evidence['commands'];
  errorsOutsideFixes: string[];
}

/**
 * What every rendering lists the same way, worked out once: fit renders many times while it shrinks, and in a long
 * session (thousands of error lines and fixes) a search of the fixes' text per error line per rendering took seconds.
 * A fix quotes its error lines as lines of its own (trimmed, clipped like the error list's), so a set of its lines'
 * openings finds them.
 */
function prepared(c: Omit<Content, 'commandsByPriority' | 'errorsOutsideFixes'>): Content {
  const quoted = new Set(c.evidence.fixes.flatMap((f) => f.split('\n').map((l) => l.trim().slice(0, 100))));
  return {
    ...c,
    commandsByPriority: failingFirst(c.evidence.commands),
    errorsOutsideFixes: c.evidence.errors.filter((x) => !quoted.has(x.trim().slice(0, 100))),
  };
}

const FAILED = /^(failed|no result|exit [1-9-]|printed an error)/;

function render(c: Content, limits: Limits): string {
  const out: string[] = [
    TITLE,
    `${c.archivedMessages} earlier messages were archived here; the full history is kept, nothing was deleted.`,
  ];
  if (c.task && limits.taskChars > 0)
    out.push(
      '',
      '### Primary request',
      `(also kept verbatim at the start of the conversation) ${clip(oneLine(c.task), limits.taskChars)}`,
    );
  // Quoted, so that its own headings cannot be mistaken for ours when this summary is summarized again.
  if (c.foreign)
    out.push(
      '',
      '### Earlier summary',
      ...clip(c.foreign, limits.foreignChars)
        .split('\n')
        .map((l) => `> ${l}`),
    );
  const e = c.evidence;
  const section = (key: Key, items: string[]) => {
    if (items.length === 0) return;
    out.push('', `### ${SECTIONS[key]}`);
    for (const item of items) out.push(`- ${item.replace(/\n/g, '\n  ')}`);
  };
  const old = (k: Key, item: string) => c.inherited.size > 0 && c.inherited.has(`${k}:${item}`);
  // Trimming applies to new items only; inherited ones stay as they were written. `first` keeps the first n.
  const keep = <T>(k: Key, xs: T[], n: number, id: (x: T) => string, first = false): T[] => {
    const fresh = xs.filter((x) => !old(k, id(x)));
    const kept = new Set(first ? fresh.slice(0, Math.max(0, n)) : last(fresh, n));
    return xs.filter((x) => old(k, id(x)) || kept.has(x));
  };
  const same = (x: string) => x;
  section(
    'instructions',
    e.instructions.map((i) => (old('instructions', i) ? i : clip(i, limits.instructionChars))),
  );
  section('events', keep('events', e.events, limits.events, same));
  section(
    'state',
    keep('state', e.state, limits.state, same).map((x) => clip(x, limits.stateChars)),
  );
  section('fixes', keep('fixes', e.fixes, limits.fixes, same));
  const changed = new Set(e.changes.map((x) => x.split(' — ')[0]!));
  section('changes', [...e.changes, ...e.filesModified.filter((p) => !changed.has(p))]);
  section('filesRead', keep('filesRead', e.filesRead, limits.filesRead, same));
  section('filesMentioned', keep('filesMentioned', e.filesMentioned, limits.filesMentioned, same));
  section(
    'commands',
    keep('commands', c.commandsByPriority, limits.commands, (x) => x.command, true).map(
      (x) =>
        `${code(old('commands', x.command) ? x.command : clipCommand(x.command, limits.commandChars))} → ${x.status}`,
    ),
  );
  section('errors', keep('errors', c.errorsOutsideFixes, limits.errors, same));
  section('decisions', keep('decisions', e.decisions, limits.decisions, same));
  section('numbers', keep('numbers', e.numbers, limits.numbers, same));
  // A sentence that says what comes next can read as a pending task too: it is said once, as the next step.
  const next = keep('next', e.next, limits.next, same, true);
  section(
    'todos',
    keep('todos', e.todos, limits.todos, same).filter((x) => !next.includes(x)),
  );
  section('next', next);
  return out.join('\n');
}

interface Limits {
  taskChars: number;
  instructionChars: number;
  events: number;
  state: number;
  stateChars: number;
  fixes: number;
  decisions: number;
  filesRead: number;
  filesMentioned: number;
  commands: number;
  commandChars: number;
  errors: number;
  numbers: number;
  todos: number;
  next: number;
  foreignChars: number;
}

const GENEROUS: Limits = {
  taskChars: 2000,
  instructionChars: 4000,
  events: 40,
  state: 2,
  stateChars: 800,
  fixes: 60,
  decisions: 40,
  filesRead: 400,
  filesMentioned: 200,
  commands: 400,
  commandChars: 300,
  errors: 200,
  numbers: 60,
  todos: 20,
  next: 3,
  foreignChars: Number.MAX_SAFE_INTEGER,
};

/** Renders within the token budget, giving up the least valuable detail first and people's words last. */
function fit(c: Content, maxTokens: number, counter: TokenCounter, strict: boolean): string {
  const l = { ...GENEROUS };
  const lastLists = inTurn([
    () => shrink(l, 'errors', 0),
    () => shrink(l, 'filesRead', 0),
    () => shrink(l, 'filesMentioned', 0),
    () => shrink(l, 'commands', 3),
    () => shrink(l, 'fixes', 1),
  ]);
  // People's words (the first 300 characters of each) and the paths and commands go last.
  const steps: (() => boolean)[] = [
    () => shrink(l, 'numbers', 10),
    () => shrink(l, 'events', 10),
    () => shrink(l, 'decisions', 8),
    () => shrink(l, 'todos', 5),
    () => shrink(l, 'stateChars', 300),
    () => shrink(l, 'taskChars', 500),
    () => shrink(l, 'numbers', 0) || shrink(l, 'decisions', 0) || shrink(l, 'todos', 0) || shrink(l, 'events', 0),
    () => shrink(l, 'errors', 40),
    () => shrink(l, 'instructionChars', 1000),
    () => shrink(l, 'commandChars', 120),
    () => shrink(l, 'fixes', 20),
    () => shrink(l, 'errors', 8),
    () => shrink(l, 'next', 1) || shrink(l, 'taskChars', 200) || shrink(l, 'state', 1),
    () => shrink(l, 'instructionChars', 300),
    () => shrink(l, 'filesMentioned', 40),
    // Every command's opening before the whole text of fewer commands: which commands ran, and how they ended.
    () =>
      shrink(l, 'filesRead', 40) ||
      shrink(l, 'commandChars', 60) ||
      shrink(l, 'commands', 40) ||
      shrink(l, 'fixes', 5) ||
      shrink(l, 'filesMentioned', 10),
    // The lists give way together, each halved in turn: one emptied before the next is touched leaves a summary of
    // commands with no file or error in it, when a few of each are what the next model continues from.
    () => shrink(l, 'commandChars', 60) || lastLists() || shrink(l, 'foreignChars', 2000),
  ];
  let text = render(c, l);
  // Counting every rendering is what costs: count by characters at this text's own rate while shrinking, then check.
  const rate = text.length / Math.max(1, counter.text(text));
  const tokens = (t: string, exact: boolean) => (exact ? counter.text(t) : Math.ceil(t.length / rate));
  // The last steps give up whole lists; from there the compact form below may keep more of the evidence.
  const listsGiveWay = steps.length - 2;
  let gaveLists = false;
  for (const exact of [false, true]) {
    for (const [at, step] of steps.entries()) {
      if (tokens(text, exact) <= maxTokens) break;
      while (tokens(text, exact) > maxTokens && step()) {
        text = render(c, l);
        if (at >= listsGiveWay) gaveLists = true;
      }
    }
    if (counter.text(text) <= maxTokens) {
      // Not for a summary that carries an earlier one: the compact form has no place for what it inherits.
      if (!gaveLists || c.foreign || c.inherited.size > 0) return text;
      const short = compactForm(c, maxTokens, counter);
      return evidenceKept(c, short) > evidenceKept(c, text) ? short : text;
    }
  }
  if (!strict) return text;
  const short = compactForm(c, maxTokens, counter);
  return counter.text(short) < counter.text(text) ? short : text;
}

/**
 * How many of the evidence's items a rendering keeps: people's words (their opening), files, commands (their opening)
 * and error lines. Two renderings of one budget are compared by it.
 */
function evidenceKept(c: Content, text: string): number {
  const flat = oneLine(text);
  const has = (s: string, n: number) => flat.includes(oneLine(s).slice(0, n));
  const e = c.evidence;
  let n = 0;
  for (const i of e.instructions) if (has(i, 100)) n++;
  for (const f of filesOf(e)) if (flat.includes(f)) n++;
  for (const x of e.commands) if (has(x.command, 40)) n++;
  for (const x of e.errors) if (has(x, 60)) n++;
  return n;
}

/**
 * Every file the evidence names, once: changed and modified first, then read, then only named in words (for an agent
 * that names files only in its words — Aider, a chat — they are all there is).
 */
function filesOf(e: Content['evidence']): string[] {
  return [
    ...new Set([...e.changes.map((x) => x.split(' — ')[0]!), ...e.filesModified, ...e.filesRead, ...e.filesMentioned]),
  ];
}

/**
 * The summary at its most compact, for a budget with no room for lists: what was archived and where the task stands,
 * people's words and then files, commands and error lines in turn, as far as they fit.
 */
function compactForm(c: Content, maxTokens: number, counter: TokenCounter): string {
  const header = [
    TITLE,
    `${c.archivedMessages} earlier messages were archived here; the full history is kept, nothing was deleted.`,
  ];
  // People's words first (their opening 200 characters), then what the person did through the harness (slash commands
  // and what they printed, the latest first), then a file, a command and an error line in turn (modified files before
  // read ones; failing commands, then the most recent; the newest error lines), then where the work stood — each item
  // as far as it fits, so that a long list gives up its tail, not its whole line. Files and commands are written in
  // the order of the work (parseSummary reads them back into evidence).
  const files = filesOf(c.evidence);
  const commands = c.evidence.commands.map((x) => `${code(clip(x.command, 60))} → ${x.status}`);
  const errors = c.evidence.errors.slice(-20).reverse();
  const state = c.evidence.state[0];
  type Item = { kind: 'said' | 'event' | 'file' | 'command' | 'error' | 'state'; at: number; text: string };
  const candidates: Item[] = [
    ...c.evidence.instructions.map((x, at) => ({ kind: 'said' as const, at, text: `- ${clip(oneLine(x), 200)}` })),
    ...c.evidence.events
      .slice(-10)
      .map((x, at) => ({ kind: 'event' as const, at, text: `Harness: ${clip(x, 120)}` }))
      .reverse(),
  ];
  const byPriority = failingFirst(commands.map((text, at) => ({ at, text, status: c.evidence.commands[at]!.status })));
  for (let i = 0; i < Math.max(files.length, byPriority.length, errors.length); i++) {
    if (i < files.length) candidates.push({ kind: 'file', at: i, text: files[i]! });
    const cmd = byPriority[i];
    if (cmd) candidates.push({ kind: 'command', at: cmd.at, text: cmd.text });
    if (i < errors.length)
      candidates.push({ kind: 'error', at: i, text: `Error line: ${clip(oneLine(errors[i]!), 100)}` });
  }
  if (state) candidates.push({ kind: 'state', at: 0, text: state });
  const render = (kept: readonly Item[]) => {
    const of = (kind: Item['kind']) => kept.filter((x) => x.kind === kind).sort((a, b) => a.at - b.at);
    const list = (label: string, kind: Item['kind'], sep: string) => {
      const xs = of(kind);
      return xs.length > 0 ? [`${label}${xs.map((x) => x.text).join(sep)}`] : [];
    };
    return [
      ...header,
      ...of('said').map((x) => x.text),
      ...kept
        .filter((x) => x.kind === 'event')
        .map((x) => x.text)
        .reverse(),
      ...list('Files: ', 'file', ', '),
      ...list('Commands: ', 'command', '; '),
      ...of('state').map((x) => x.text),
      ...kept.filter((x) => x.kind === 'error').map((x) => x.text),
    ].join('\n');
  };
  // Each item as far as the sum of their costs goes (a list's label is paid with its first item) …
  let used = counter.text(header.join('\n'));
  const kept: Item[] = [];
  const labelled = new Set<Item['kind']>();
  for (const item of candidates) {
    const label = labelled.has(item.kind)
      ? ''
      : item.kind === 'file'
        ? 'Files: '
        : item.kind === 'command'
          ? 'Commands: '
          : '';
    const cost = counter.text(label + item.text) + 1;
    if (used + cost > maxTokens) continue;
    used += cost;
    labelled.add(item.kind);
    kept.push(item);
  }
  // … then, the sum being an estimate of the whole, the last taken items give way one by one while it is over.
  let text = render(kept);
  while (kept.length > 0 && counter.text(text) > maxTokens) {
    kept.pop();
    text = render(kept);
  }
  return text;
}

/** Commands as a summary lists them: the failing ones first, then the rest, most recent first within each. */
function failingFirst<T extends { status: string }>(commands: readonly T[]): T[] {
  return [
    ...commands.filter((x) => FAILED.test(x.status)).reverse(),
    ...commands.filter((x) => !FAILED.test(x.status)).reverse(),
  ];
}

/** Halves a limit toward `floor`; false once it is there. */
/** One move of several per call, taking them in turn (a move that can no longer act is passed over). */
function inTurn(moves: (() => boolean)[]): () => boolean {
  let next = 0;
  return () => {
    for (let k = 0; k < moves.length; k++) {
      const at = (next + k) % moves.length;
      if (moves[at]!()) {
        next = (at + 1) % moves.length;
        return true;
      }
    }
    return false;
  };
}

function shrink(l: Limits, key: keyof Limits, floor: number): boolean {
  if (l[key] <= floor) return false;
  l[key] = Math.max(floor, Math.floor(l[key] / 2));
  return true;
}

function keysOf(e: Evidence): Set<string> {
  const out = new Set<string>();
  for (const k of Object.keys(SECTIONS) as Key[]) {
    if (k === 'commands') for (const c of e.commands) out.add(`commands:${c.command}`);
    else for (const x of e[k]) out.add(`${k}:${x}`);
  }
  return out;
}

function last<T>(xs: T[], n: number): T[] {
  return n <= 0 ? [] : xs.length > n ? xs.slice(xs.length - n) : xs;
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}… [${s.length - n} more chars]` : s;
}

/** A command cut short: its opening says which it was, and `…` that it went on (how far matters less than for words). */
function clipCommand(s: string, n: number): string {
  return s.length > n + 1 ? `${s.slice(0, n)}…` : s;
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

function code(s: string): string {
  return s.includes('`') ? `\`\` ${s} \`\`` : `\`${s}\``;
}

/**
 * A line of the shortest form (no sections: what `fit` writes when no list fits) back into evidence, so that a summary
 * folded forward keeps what it carried: people's words, files, commands, error lines and where the work stood.
 */
function minimalLine(line: string, ev: Evidence): void {
  if (!line.trim() || line.startsWith(TITLE) || /^\d+ earlier messages were archived here/.test(line)) return;
  if (line.startsWith('- ')) ev.instructions.push(line.slice(2));
  else if (line.startsWith('Files: ')) ev.filesRead.push(...line.slice(7).split(', '));
  else if (line.startsWith('Commands: '))
    for (const m of line.slice(10).matchAll(/(`+) ?(.*?) ?\1 → (.*?)(?=; `|$)/g))
      ev.commands.push({ command: m[2]!, status: m[3]! });
  else if (line.startsWith('Error line: ')) ev.errors.push(line.slice(12));
  else if (line.startsWith('Harness: ')) ev.events.push(line.slice(9));
  else ev.state.push(line);
}

/** Reads a summary this summarizer wrote back into its evidence; undefined for any other text. */
export function parseSummary(
  text: string,
): { evidence: Evidence; foreign?: string; archivedMessages: number } | undefined {
  if (!text.startsWith(TITLE)) return undefined;
  const archivedMessages = Number(/^(\d+) earlier messages were archived here/m.exec(text)?.[1] ?? 0);
  const ev = emptyEvidence();
  const foreign: string[] = [];
  let inForeign = false;
  const byTitle = new Map<string, Key>(Object.entries(SECTIONS).map(([k, v]) => [v, k as Key]));
  let key: Key | undefined;
  let inSections = false;
  let items: string[] = [];
  const flush = () => {
    if (!key) return;
    if (key === 'commands') {
      for (const it of items) {
        const m = it.match(/^``? ?(.*?) ?``? → (.*)$/s);
        if (m) ev.commands.push({ command: m[1]!, status: m[2]! });
      }
    } else ev[key].push(...items);
    if (key === 'changes') for (const it of items) ev.filesModified.push(it.split(' — ')[0]!);
    items = [];
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('### ')) {
      inSections = true;
      flush();
      key = byTitle.get(line.slice(4).trim());
      inForeign = line.slice(4).trim() === 'Earlier summary';
      continue;
    }
    if (inForeign) {
      if (line.startsWith('> ')) foreign.push(line.slice(2));
      else if (line === '>') foreign.push('');
      continue;
    }
    if (!key) {
      if (!inSections) minimalLine(line, ev);
      continue;
    }
    if (line.startsWith('- ')) items.push(line.slice(2));
    else if (line.startsWith('  ') && items.length > 0) items[items.length - 1] += `\n${line.slice(2)}`;
  }
  flush();
  const earlier = foreign.join('\n').trim();
  return earlier ? { evidence: ev, foreign: earlier, archivedMessages } : { evidence: ev, archivedMessages };
}

/** A summary that only notes what was dropped, for the last-resort truncation step. */
export function truncationNote(messages: readonly Message[]): string {
  return `[${messages.length} earlier messages were archived without a summary to fit the context; the full history is kept.]`;
}
