import { trimEndOf } from '../../model/text.js';
import type { Message, ToolCallPart, ToolResultPart } from '../../model/types.js';
import {
  callInfo,
  clean,
  clip,
  commandLine,
  definitions,
  emptyNoMatch,
  failureLines,
  type FileChange,
  isFilePath,
  lastOutput,
  oneLine,
  type Outcome,
  outcomeOf,
  pathsIn,
  printedErrors,
  printsContent,
  resultText,
  searchReplaceChanges,
  patchChanges,
  statusWords,
} from '../records.js';
import { isHarnessText } from '../turns.js';

/**
 * The hand-off of a span of conversation: what the next model needs to go on with the work — the requests (verbatim)
 * and what the agent answered, the plan and where it stands, each file with what was done to it, the commands with how
 * they ended, the errors with whether they were resolved, the facts established. Every statement comes from the
 * records (see ../records.ts); what they do not say is not said.
 */
export interface HandOff {
  /** Messages of the span (the summary says how many were archived). */
  messages: number;
  requests: Request[];
  /** What the harness put in the user's turn (slash commands, their output, interruptions): not a person's words. */
  events: string[];
  plan?: Plan;
  files: FileRecord[];
  commands: CommandRecord[];
  errors: ErrorRecord[];
  findings: Finding[];
  facts: Fact[];
  /** Files people and the agent named in their words that no call of the span touched, with where last named. */
  mentioned: { path: string; at: number; person: boolean }[];
  /** The agent's last words in the span and what its last step did. */
  lastWords?: string;
  lastActions: string[];
  /** Position of the last message (recency is measured against it). */
  end: number;
}

export interface Request {
  text: string;
  at: number;
  /** The agent's answer: its last words before the next person's message, when it gave one. */
  answer?: string;
  answerAt?: number;
}

export type PlanStatus = 'done' | 'doing' | 'pending' | 'cancelled';
export interface Plan {
  /** Where it comes from: the agent's plan tool (`TodoWrite`, `update_plan` …), or its own checklist. */
  source: string;
  items: { text: string; status: PlanStatus }[];
  at: number;
}

export interface FileRecord {
  path: string;
  reads: number;
  changes: FileChange[];
  /** The definition lines of its newest text the span saw (a read, or a file written whole). */
  defs: string[];
  /** Lines of the newest read. */
  lines?: number;
  first: number;
  last: number;
}

export interface CommandRecord {
  command: string;
  runs: number;
  outcome: Outcome;
  /** Of the latest run: the first error lines of a failure, else what it printed last. */
  failure: string[];
  printed?: string;
  /** Error-shaped lines a run printed without failing. */
  printedErrors: string[];
  first: number;
  last: number;
}

export interface ErrorRecord {
  /** The call, as `command` or `Tool path`. */
  what: string;
  status: string;
  lines: string[];
  /** How it was resolved, by the record; undefined while unresolved. */
  resolved?: string;
  at: number;
}

export interface Finding {
  text: string;
  at: number;
  /** An answer to a request (the agent's last words of a turn), not a sentence from its work. */
  answer: boolean;
}

export interface Fact {
  value: string;
  /** The line it was said in. */
  context: string;
  at: number;
  /** A person said it (not the agent). */
  person: boolean;
}

function textOf(m: Message): string {
  return m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

function isPersonMessage(m: Message): boolean {
  return m.role === 'user' && !m.synthetic && !m.parts.some((p) => p.type === 'compaction');
}

/** The plan's source when it is a checklist the agent wrote in its words (no plan tool). */
export const CHECKLIST = 'checklist';

const PLAN_TEXT = ['content', 'step', 'description', 'subject', 'title', 'task', 'text'];

function planStatus(s: unknown): PlanStatus {
  const t = typeof s === 'string' ? s.toLowerCase() : '';
  if (/^(?:completed?|done|finished|checked|true)$/.test(t)) return 'done';
  if (/^(?:in[_ -]?progress|active|doing|started|current)$/.test(t)) return 'doing';
  if (/^(?:cancell?ed|skipped|dropped|abandoned)$/.test(t)) return 'cancelled';
  return 'pending';
}

/** A plan tool's whole plan: an array of items with a text and a status (TodoWrite, update_plan, write_todos …). */
function planOf(call: ToolCallPart): Plan['items'] | undefined {
  if (!/todo|plan|task/i.test(call.name) || !call.arguments || typeof call.arguments !== 'object') return undefined;
  for (const v of Object.values(call.arguments as Record<string, unknown>)) {
    if (!Array.isArray(v) || v.length === 0 || !v.every((x) => x && typeof x === 'object')) continue;
    const items = (v as Record<string, unknown>[]).map((x) => ({
      text: PLAN_TEXT.map((k) => x[k]).find((t): t is string => typeof t === 'string') ?? '',
      status: planStatus(x.status ?? (x.completed === true ? 'done' : x.done === true ? 'done' : undefined)),
    }));
    if (items.every((i) => i.text)) return items.map((i) => ({ ...i, text: clip(oneLine(clean(i.text)), 240) }));
  }
  return undefined;
}

/** A checklist the agent wrote in its words (`- [x] done`, `- [ ] to do`): its plan when it keeps no plan tool. */
function checklistOf(text: string): Plan['items'] | undefined {
  const items: Plan['items'] = [];
  // `^\s*` would let each line start retry the blank lines after it; the bullet's own line start finds the same item.
  for (const m of text.matchAll(/^[^\S\n\r\u2028\u2029]*[-*]\s+\[([ xX~-])\]\s+(.+)$/gm))
    items.push({
      text: clip(oneLine(clean(m[2]!)), 240),
      status: m[1] === ' ' ? 'pending' : m[1] === '~' || m[1] === '-' ? 'doing' : 'done',
    });
  return items.length >= 2 ? items : undefined;
}

/** The key a command is re-run under: its first pipeline segment without output redirection. */
function rerunKey(command: string): string {
  const first = command.split(/\n/)[0]!.split(/\s\|\s|\s\|$/)[0]!;
  // Spaces collapsed first, so that no run of them is retried from each of its characters (`\s*2>&1`).
  return oneLine(
    oneLine(first)
      .replace(/ ?2>&1 ?/g, ' ')
      .replace(/ ?> ?\/dev\/null/g, ''),
  );
}

const URL = /\bhttps?:\/\/[^\s)'"`<>\]}|,]+[^\s)'"`<>\]}|,.:;]/g;
// The dotted name is sought only from the first word character of a run of `[\w-]` (from any later start it meets the
// same first dot and fails the same way): `\b[\w-]+` alone retried every boundary of a `-a-a-a…` run (quadratic).
const HOST_PORT =
  /(?:\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\])|\b(?<=(?:^|[^\w-])-*)[\w-]+(?:\.[\w-]+)+):\d{2,5}\b/g;
const PORT = /\bport\s*(?:[:=]\s*)?(\d{2,5})\b/gi;
const ENV = /(?<![\w$-])\$?\{?([A-Z][A-Z0-9]*_[A-Z0-9_]+)\}?(?:=([^\s'"`]+))?/g;
const VERSION = /(?<![\w.@-])v?\d+\.\d+\.\d+(?:-[\w.]+)?(?![\w.])/g;
const ISSUE = /(?<![\w&])#\d{2,6}\b/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const HEX = /(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])/g;

/**
 * Whether a line may hold a match of the fact patterns above: each needs a digit (a port, a version, an issue, a hex
 * id), an underscore (a variable), a colon (a URL) or, for a UUID of letters only, 36 characters with a hyphen. Eight
 * scans of every line cost more than the line on text of many short lines (a list of bare `-` bullets: 8× ordinary).
 */
function mayHoldFact(line: string): boolean {
  return /[\d_:]/.test(line) || (line.length >= 36 && line.includes('-'));
}

/** Hosts, ports, URLs, environment variables, versions and ids in a text, each with the line it was said in. */
function factsIn(text: string, at: number, person: boolean, into: Map<string, Fact>): void {
  for (const rawLine of clean(text).split('\n')) {
    const line = rawLine.trim();
    if (!line || line.length > 2000 || !mayHoldFact(line)) continue;
    const values: string[] = [];
    for (const re of [URL, HOST_PORT, VERSION, ISSUE, UUID, HEX]) for (const m of line.matchAll(re)) values.push(m[0]);
    for (const m of line.matchAll(PORT)) values.push(`port ${m[1]}`);
    for (const m of line.matchAll(ENV)) values.push(m[2] ? `${m[1]}=${m[2]}` : m[1]!);
    for (const v of values) {
      if (v.length > 200) continue;
      const key = trimEndOf(v, '/.');
      // The newest mention wins: its line says what the value is now.
      into.delete(key);
      into.set(key, { value: key, context: clip(line, 240), at, person });
    }
  }
}

/** Sentences that state an outcome: what was found, chosen or caused, and what the numbers came to. */
const OUTCOME =
  /\b(?:found|root cause|the (?:issue|problem|bug|cause|fix) (?:is|was)|because|decided|decision|instead of|rather than|turns out|confirmed|works now|passes|passed|fails? (?:because|with|when)|fixed|resolved|so that|the reason)\b/i;

function sentences(text: string): string[] {
  return (
    clean(text)
      // A heading (`### Diagnosis (Root Cause)`) names a finding; it is not one.
      // (From the heading's own line start: `^\s*` retried the blank lines after each line start.)
      .replace(/^[^\S\n\r\u2028\u2029]*#{1,6}\s.*$/gm, '')
      .split(/(?<=[.!?])\s+(?=[A-Z`"'(\d])|\n+/)
      .map((s) => s.trim().replace(/^[-*•>\d.)\s]+/, ''))
      .filter((s) => s.length >= 12)
  );
}

/** Describes a call in a few words: its command or its tool and path, and the status its record gives. */
function describeCall(call: ToolCallPart, r: ToolResultPart | undefined, command: string | undefined): string {
  const info = callInfo(call, r);
  const path = info.changes[0]?.path ?? info.reads[0] ?? info.names[0];
  const what =
    command !== undefined ? `\`${clip(commandLine(command), 140)}\`` : path ? `${call.name} ${path}` : call.name;
  const status = statusWords(outcomeOf(r, command !== undefined));
  return status ? `${what} (${status})` : what;
}

/**
 * A path said in prose names a file when its name has an extension (or is a known name or dotfile): an absolute path
 * without one (`/api/review`) is as likely a route or a directory.
 */
function namesAFile(p: string): boolean {
  const name = p.slice(p.lastIndexOf('/') + 1);
  return (
    /\.[A-Za-z][\w]{0,9}$/.test(name) || p.endsWith('/') || /^\.[\w-]+$/.test(name) || /^[A-Z][a-z]*file$/.test(name)
  );
}

/** A read's definitions, worked out once per result (a compaction summarizes overlapping spans several times). */
const definitionsSeen = new WeakMap<ToolResultPart, { path: string; defs: string[] }>();
function definitionsOf(r: ToolResultPart, path: string, text: string): string[] {
  const seen = definitionsSeen.get(r);
  if (seen?.path === path) return seen.defs;
  const defs = definitions(text, path);
  definitionsSeen.set(r, { path, defs });
  return defs;
}

/**
 * What a result's text says, worked out once per result: a compaction summarizes overlapping spans several times, and
 * a loop's compactions see the same results again. Each field is filled when first asked (a result part is not edited
 * in place; these are functions of its text, and of the command for the failure lines).
 */
interface ResultReading {
  text: string;
  printedErrors?: string[];
  lastOutput?: string | null;
  failure?: { command: string | undefined; lines: string[] };
}
const readings = new WeakMap<ToolResultPart, ResultReading>();
function readingOf(r: ToolResultPart): ResultReading {
  let x = readings.get(r);
  if (!x) readings.set(r, (x = { text: resultText(r) }));
  return x;
}
function printedErrorsOf(x: ResultReading): string[] {
  return (x.printedErrors ??= printedErrors(x.text));
}
function lastOutputOf(x: ResultReading): string | undefined {
  if (x.lastOutput === undefined) x.lastOutput = lastOutput(x.text) ?? null;
  return x.lastOutput ?? undefined;
}
function failureLinesOf(x: ResultReading, command: string | undefined): string[] {
  if (x.failure?.command !== command || x.failure === undefined)
    x.failure = { command, lines: failureLines(x.text, 3, command) };
  return x.failure.lines;
}

/** Pulls the hand-off out of a span of messages. */
export function extractHandOff(messages: readonly Message[]): HandOff {
  const results = new Map<string, ToolResultPart>();
  for (const m of messages) for (const p of m.parts) if (p.type === 'tool-result') results.set(p.callId, p);
  const h: HandOff = {
    messages: messages.length,
    requests: [],
    events: [],
    files: [],
    commands: [],
    errors: [],
    findings: [],
    facts: [],
    mentioned: [],
    lastActions: [],
    end: Math.max(0, messages.length - 1),
  };
  const files = new Map<string, FileRecord>();
  const file = (path: string, at: number) => {
    let f = files.get(path);
    if (!f) {
      f = { path, reads: 0, changes: [], defs: [], first: at, last: at };
      files.set(path, f);
    }
    f.last = at;
    return f;
  };
  const commands = new Map<string, CommandRecord>();
  const argPaths = new Set<string>();
  const facts = new Map<string, Fact>();
  const findings = new Map<string, Finding>();
  const mentioned = new Map<string, { path: string; at: number; person: boolean }>();
  const mention = (p: string, at: number, person: boolean) => {
    const was = mentioned.get(p);
    mentioned.delete(p);
    mentioned.set(p, { path: p, at, person: person || (was?.person ?? false) });
  };
  // Failing calls not yet resolved, by the key a re-run would have, and the files their errors name.
  let open: (ErrorRecord & { key: string; files: Set<string>; edited: string[] })[] = [];
  // CC's TaskCreate/TaskUpdate keep a plan by ids the results give.
  const tasks = new Map<string, { text: string; status: PlanStatus }>();
  let lastSaid: { text: string; at: number } | undefined;

  messages.forEach((m, at) => {
    if (m.parts.some((p) => p.type === 'compaction')) return;
    const said = clean(textOf(m)).trim();
    if (isPersonMessage(m)) {
      if (!said) return;
      if (isHarnessText(said)) h.events.push(clip(oneLine(said), 300));
      else {
        // The turn before has ended: the agent's last words were its answer.
        const previous = h.requests[h.requests.length - 1];
        if (previous && lastSaid && lastSaid.at > previous.at && previous.answer === undefined) {
          previous.answer = lastSaid.text;
          previous.answerAt = lastSaid.at;
        }
        h.requests.push({ text: said, at });
        factsIn(said, at, true, facts);
        for (const p of pathsIn(said)) if (namesAFile(p)) mention(p, at, true);
      }
      return;
    }
    if (m.role !== 'assistant') return;
    if (said) {
      lastSaid = { text: said, at };
      factsIn(said, at, false, facts);
      for (const p of pathsIn(said)) if (namesAFile(p)) mention(p, at, false);
      for (const s of sentences(said))
        if (OUTCOME.test(s) && !findings.has(s)) findings.set(s, { text: clip(s, 400), at, answer: false });
      const checklist = checklistOf(said);
      if (checklist && (h.plan === undefined || h.plan.source === CHECKLIST))
        h.plan = { source: CHECKLIST, items: checklist, at };
      for (const c of [...searchReplaceChanges(said), ...(said.includes('+++ ') ? patchChanges(said) : [])]) {
        const f = file(c.path, at);
        f.changes.push(c);
      }
    }
    const calls = m.parts.filter((p): p is ToolCallPart => p.type === 'tool-call');
    if (calls.length > 0) h.lastActions = [];
    for (const call of calls) {
      const r = results.get(call.id);
      const info = callInfo(call, r);
      for (const p of info.argPaths) argPaths.add(p);
      // A shell command, or an agent's own command line (SWE-agent's `open`, `create`, `edit N:M`).
      const command = info.command;
      const outcome = outcomeOf(r, command !== undefined);
      const reading = r ? readingOf(r) : undefined;
      const text = reading ? reading.text : '';
      h.lastActions.push(describeCall(call, r, command));
      // The plan: a plan tool's whole plan, or CC's tasks created and updated one by one.
      const plan = planOf(call);
      if (plan) h.plan = { source: call.name, items: plan, at };
      const a = call.arguments && typeof call.arguments === 'object' ? (call.arguments as Record<string, unknown>) : {};
      if (/^TaskCreate$/i.test(call.name) && typeof a.subject === 'string' && r && !outcome.failed) {
        const id = /#(\w+)/.exec(text)?.[1] ?? String(tasks.size + 1);
        tasks.set(id, { text: clip(oneLine(a.subject), 240), status: 'pending' });
        h.plan = { source: 'TaskCreate/TaskUpdate', items: [...tasks.values()], at };
      }
      if (/^TaskUpdate$/i.test(call.name) && a.taskId !== undefined && r && !outcome.failed) {
        const t = tasks.get(String(a.taskId));
        if (t) {
          if (a.status !== undefined) t.status = planStatus(a.status);
          if (typeof a.subject === 'string') t.text = clip(oneLine(a.subject), 240);
          h.plan = { source: 'TaskCreate/TaskUpdate', items: [...tasks.values()], at };
        }
      }
      // Files: what was read (with what it defines) and what changed (with how), only from calls that did not fail.
      if (!outcome.failed && !outcome.missing) {
        for (const p of info.reads) {
          const f = file(p, at);
          f.reads++;
          if (info.kind === 'read' && text) {
            const defs = definitionsOf(r!, p, text);
            if (defs.length > 0) f.defs = defs;
            f.lines = text.split('\n').length;
          }
        }
        // A command that printed an error did not do what it says (a `touch` the sandbox refused, unflagged).
        const refused =
          command !== undefined &&
          reading !== undefined &&
          printedErrorsOf(reading).length > 0 &&
          info.kind === 'command';
        for (const c of refused ? [] : info.changes) {
          const f = file(c.path, at);
          f.changes.push(c);
          if (c.how === 'write' || c.how === 'create') {
            const defs = definitions(c.added.join('\n'), c.path);
            if (defs.length > 0) f.defs = defs;
          }
        }
      }
      if (command !== undefined) {
        const key = oneLine(command);
        const c = commands.get(key) ?? {
          command,
          runs: 0,
          outcome,
          failure: [],
          printedErrors: [],
          first: at,
          last: at,
        };
        commands.delete(key);
        c.runs++;
        c.outcome = outcome;
        c.last = at;
        c.failure = outcome.failed ? (reading ? failureLinesOf(reading, command) : failureLines(text, 3, command)) : [];
        // Output that is a file's text or search hits is never quoted as an error.
        c.printedErrors =
          !outcome.failed && !printsContent(command) ? (reading ? printedErrorsOf(reading) : printedErrors(text)) : [];
        const printed = reading && !outcome.failed ? lastOutputOf(reading) : undefined;
        if (printed) c.printed = printed;
        else delete c.printed;
        commands.set(key, c);
      }
      // Errors, and what resolved them: a later success of the same call (the same command re-run, the same tool on
      // the same file), or a successful edit of a file the error names.
      const key =
        command !== undefined
          ? `$ ${rerunKey(command)}`
          : `${call.name} ${info.changes[0]?.path ?? info.reads[0] ?? info.names[0] ?? ''}`;
      const noMatch = command !== undefined && emptyNoMatch(command, outcome.exit, text);
      if (outcome.failed && !noMatch) {
        const lines = reading ? failureLinesOf(reading, command) : failureLines(text, 3, command);
        const named = new Set<string>([
          ...info.changes.map((c) => c.path),
          ...info.reads,
          ...lines.flatMap((l) => pathsIn(l)),
        ]);
        open = open.filter((o) => o.key !== key);
        open.push({
          what: command !== undefined ? `\`${clip(commandLine(command), 160)}\`` : key.trim(),
          status: statusWords(outcome),
          lines,
          at,
          key,
          files: named,
          edited: [],
        });
      } else if (r && !outcome.missing && open.length > 0) {
        const changed = info.changes.map((c) => c.path);
        for (const o of open) {
          for (const p of changed) if (!o.edited.includes(p) && o.edited.length < 4) o.edited.push(p);
          if (o.key === key) {
            o.resolved = `${o.what.startsWith('`') ? 'the same command' : 'the same call'} succeeded later${o.edited.length ? `, after edits to ${o.edited.join(', ')}` : ''}`;
          } else if (command === undefined && movedPath(o.key, key)) {
            // The same tool on a file of the same name in another folder (a path that moved, a repository renamed):
            // what the failed call was after, found where it is.
            o.resolved = `the same call succeeded later on ${key.slice(key.indexOf(' ') + 1)}`;
          } else {
            const fixedBy = changed.find(
              (p) => o.files.has(p) || [...o.files].some((f) => f.endsWith(`/${p}`) || p.endsWith(`/${f}`)),
            );
            if (fixedBy && o.resolved === undefined) o.resolved = `fixed by an edit of ${fixedBy} (not re-run since)`;
          }
        }
        const done = open.filter((o) => o.resolved !== undefined && o.resolved.startsWith('the same'));
        h.errors.push(...done.map(({ key: _k, files: _f, edited: _e, ...e }) => e));
        open = open.filter((o) => !done.includes(o));
      }
    }
  });
  // The last turn's answer, when it ended with one.
  const latest = h.requests[h.requests.length - 1];
  const lastMessage = messages[messages.length - 1];
  if (
    latest &&
    lastSaid &&
    lastSaid.at > latest.at &&
    latest.answer === undefined &&
    lastMessage?.role === 'assistant' &&
    !lastMessage.parts.some((p) => p.type === 'tool-call')
  ) {
    latest.answer = lastSaid.text;
    latest.answerAt = lastSaid.at;
  }
  h.errors.push(...open.map(({ key: _k, files: _f, edited: _e, ...e }) => e));
  h.errors.sort((a, b) => a.at - b.at);
  // A path a tool took as its file argument names a file whatever it looks like (spaces and all); one found in a
  // command's words must look like one.
  h.files = [...files.values()]
    .filter((f) => argPaths.has(f.path) || isFilePath(f.path.split(' → ')[0]!))
    .sort((a, b) => a.first - b.first);
  h.commands = [...commands.values()].sort((a, b) => a.first - b.first);
  // A bare name said beside the full path that ends in it adds nothing.
  const known = new Set(h.files.map((f) => f.path));
  const tails = new Set(h.files.map((f) => f.path.slice(f.path.lastIndexOf('/') + 1)));
  h.mentioned = [...mentioned.values()].filter(
    ({ path: p }) =>
      !known.has(p) && ![...known].some((k) => k.endsWith(`/${p}`)) && (p.includes('/') || !tails.has(p)),
  );
  h.facts = [...facts.values()];
  for (const r of h.requests)
    if (r.answer) findings.set(`answer:${r.at}`, { text: r.answer, at: r.answerAt ?? r.at, answer: true });
  h.findings = [...findings.values()].sort((a, b) => a.at - b.at);
  if (lastSaid) h.lastWords = lastSaid.text;
  return h;
}

/**
 * Whether two calls' keys (`tool path`) are the same tool on files of the same name in different folders: the later
 * one found what the earlier one failed to reach.
 */
function movedPath(failed: string, later: string): boolean {
  const cut = (k: string) => {
    const at = k.indexOf(' ');
    return at < 0 ? undefined : { tool: k.slice(0, at), path: k.slice(at + 1) };
  };
  const a = cut(failed);
  const b = cut(later);
  if (!a || !b || a.tool !== b.tool || !a.path.includes('/') || !b.path.includes('/') || a.path === b.path)
    return false;
  const name = (p: string) => p.slice(p.lastIndexOf('/') + 1);
  return name(a.path) !== '' && name(a.path) === name(b.path);
}
