import { argumentsText, PATH_KEYS } from '../../model/parts.js';
import type { Message, ToolCallPart, ToolResultPart } from '../../model/types.js';
import { ERROR_LINE, firstOutputLine } from '../strategies/strategy.js';
import { isHarnessText } from '../turns.js';

/** Evidence pulled out of a span of conversation, to be listed rather than paraphrased. */
export interface Evidence {
  instructions: string[];
  /**
   * What the harness put in the user's turn (slash commands, their output, interruptions), one line each: not a
   * person's words, but what happened in the session.
   */
  events: string[];
  decisions: string[];
  filesRead: string[];
  filesModified: string[];
  /** Paths people and the agent wrote about that no tool call in the span touched. */
  filesMentioned: string[];
  commands: { command: string; status: string }[];
  errors: string[];
  numbers: string[];
  todos: string[];
  /** Errors and what came of them: `error → fixed by …` or `error → not resolved in this span`. */
  fixes: string[];
  /** How each modified file changed (`path — edit ×2, write 4,211 bytes`), in the order first touched. */
  changes: string[];
  /** Where the work stood at the end of the span: the agent's last words and last actions. */
  state: string[];
  /** What the agent said it would do next, last first. */
  next: string[];
}

export function emptyEvidence(): Evidence {
  return {
    instructions: [],
    events: [],
    decisions: [],
    filesRead: [],
    filesModified: [],
    filesMentioned: [],
    commands: [],
    errors: [],
    numbers: [],
    todos: [],
    fixes: [],
    changes: [],
    state: [],
    next: [],
  };
}

const COMMAND_KEYS = ['command', 'cmd', 'script', 'commands'];
const WRITE_TOOL = /edit|write|create|patch|replace|insert|delete|move|rename|apply|update|notebook/i;
const SHELL_TOOL = /bash|shell|exec|run|command|terminal|sh$|powershell/i;
/**
 * Path-like tokens: dirs/file.ext, ./x, ../x, ~/x, /abs/x, or a bare file name with a common extension; also in
 * Markdown bold (`**src/a.ts**`), as models write the files of a list.
 */
const PATH_RE =
  /(?:^|[\s"'`(=<[,:*])((?:~|\.{1,2})?\/?(?:[\w@.+-]+\/)+[\w@.+-]*[\w+-]|[\w.-]+\.(?:ts|tsx|js|jsx|mjs|cjs|py|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|md|mdx|json|jsonl|yaml|yml|toml|ini|cfg|conf|sql|sh|bash|zsh|txt|csv|html|css|scss|vue|svelte|lock|xml|env|ex|exs|lua|dart|scala|gradle|tf|proto|log|out|db|sqlite|png|jpg|pdf|zip|tgz|gz|patch|diff))(?=$|[\s"'`),:;\]>.!?*])/gm;
/**
 * A decision is an outcome: what was chosen, or found to be the cause. A sentence of intent ("Let me check the tabs
 * bar:", "I'll run the tests") narrates the next action and is one only when it gives a reason or an alternative.
 */
const DECISION =
  /\b(decided|decision|instead|rather than|switch(?:ing|ed)? to|plan is|approach|chose|choose|going with|opted|the fix is|root cause|the (?:issue|problem|bug) (?:is|was))\b/i;
const INTENT = /\b(I'll|I will|let's|let me|we'll|we will|going to|will now)\b/i;
const REASON = /\b(because|since|so that|to avoid|in order to|better|prefer|safer|simpler)\b/i;
const isDecision = (s: string) => DECISION.test(s) || (INTENT.test(s) && REASON.test(s));
const TODO = /\bTODO\b|\bFIXME\b|next step|remaining|still need|left to do|not yet|- \[ \]/i;
const NUMBER = /(?<![\w./-])-?\d[\d,]*(?:\.\d+)?(?:%|ms|s|x|k|K|M|MB|KB|GB)?(?![\w/-])/g;

const NEXT = /\b(next,? I(?:'ll| will)|now I(?:'ll| will)|let me|I'll now|then I(?:'ll| will)|next step|going to)\b/i;

function textOf(m: Message): string {
  return m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

function resultText(p: ToolResultPart): string {
  return p.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

function argValue(args: unknown, keys: readonly string[]): string[] {
  if (!args || typeof args !== 'object') return [];
  const out: string[] = [];
  for (const k of keys) {
    const v = (args as Record<string, unknown>)[k];
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string') out.push(x);
  }
  return out;
}

export function pathsIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PATH_RE)) {
    const p = m[1]!;
    if (p.length < 3 || /^\d+(\.\d+)+$/.test(p) || /^https?:/.test(p) || p.includes('//')) continue;
    out.push(p.replace(/[.,:;]+$/, ''));
  }
  return out;
}

function exitStatus(r: ToolResultPart | undefined, call?: ToolCallPart): string {
  if (!r) return 'no result';
  const t = resultText(r);
  const m = t.match(/(?:exit(?:ed)?(?: with)?(?: status| code)?[: ]+|Process exited with code )(-?\d+)/i);
  if (m) return `exit ${m[1]}`;
  if (r.isError) return 'failed';
  return printedError(t, call) ? 'printed an error' : 'ok';
}

/**
 * A result the tool did not flag that opens with an error report: a JSON error answer or an errno from any tool; an
 * `Error: …`, `fatal: …` or traceback from a command (a file's own text may open with such words, so not from a read).
 */
function printedError(text: string, call: ToolCallPart | undefined): boolean {
  const head = text.slice(0, 300);
  if (/^\s*\{\s*"(?:status"\s*:\s*"(?:error|failed)"|error"\s*:)/.test(head)) return true;
  if (/^\s*(?:Error: )?E(?:NOENT|ACCES|ISDIR|NOTDIR|EXIST|PERM)\b/.test(head)) return true;
  if (SWE_AGENT_EDIT_REFUSED.test(head)) return true;
  const readsFile =
    call !== undefined && argValue(call.arguments, PATH_KEYS).length > 0 && shellCommands(call).length === 0;
  return (
    !readsFile &&
    /^\s*(?:(?:error|fatal|panic)\b[^\n]{0,40}?:|Traceback \(most recent call last\):|[A-Z]\w*(?:Error|Exception):)/i.test(
      head,
    )
  );
}

/**
 * The operation of an editor tool that names it in `command` beside a path (`str_replace_editor` of SWE-agent and
 * OpenHands, Anthropic's text editor: `view`, `create`, `str_replace`, `insert`, `undo_edit`): a verb, not a shell
 * command, and what decides whether the call reads or writes — the tool's name says "replace" for a `view` too.
 */
function editorOperation(call: ToolCallPart): string | undefined {
  if (SHELL_TOOL.test(call.name)) return undefined;
  const ops = argValue(call.arguments, ['command']);
  if (ops.length !== 1 || !/^[a-z][a-z_]*$/i.test(ops[0]!)) return undefined;
  return argValue(call.arguments, PATH_KEYS).length > 0 ? ops[0] : undefined;
}

/** The shell commands a call runs: none for an editor tool's operation. */
function shellCommands(call: ToolCallPart): string[] {
  return editorOperation(call) === undefined ? argValue(call.arguments, COMMAND_KEYS) : [];
}

/** Whether a call changes the files it names: by its editor operation when it has one, else by the tool's name. */
function writes(call: ToolCallPart): boolean {
  const op = editorOperation(call);
  return WRITE_TOOL.test(op ?? call.name);
}

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim().replace(/^[-*•]\s*/, ''))
    .filter((s) => s.length > 0);
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** Pulls the evidence out of messages: who asked what, what was decided, touched, run, broken, counted, and left. */
export function extractEvidence(messages: readonly Message[]): Evidence {
  const ev = emptyEvidence();
  const results = new Map<string, ToolResultPart>();
  for (const m of messages) for (const p of m.parts) if (p.type === 'tool-result') results.set(p.callId, p);
  const changes = new Map<string, string[]>();
  const changed = (path: string, how: string) => changes.set(path, [...(changes.get(path) ?? []), how]);
  // Errors seen and not yet followed by a success of the same tool: the next success is how they were fixed.
  let open: { error: string; tool: string; tried: string[] }[] = [];
  let lastSaid: string | undefined;
  let lastActions: string[] = [];
  for (const m of messages) {
    if (m.role === 'assistant') {
      const said = textOf(m).trim();
      if (said) {
        lastSaid = said;
        for (const s of sentences(said)) if (NEXT.test(s)) ev.next.push(clip(s, 300));
      }
      const calls = m.parts.filter((p): p is ToolCallPart => p.type === 'tool-call');
      if (calls.length > 0) lastActions = calls.map((c) => describeCall(c, results.get(c.id)));
      for (const c of calls) {
        const r = results.get(c.id);
        const failed = r ? r.isError || /^(exit [1-9]|printed an error)/.test(exitStatus(r, c)) : false;
        if (r && failed) {
          const lines = errorLines(resultText(r));
          const error = lines.length > 0 ? lines.map((l) => clip(l, 220)).join('\n') : `${c.name} failed`;
          open.push({ error: `${describeCall(c, r)}:\n${error}`, tool: c.name, tried: [] });
        } else if (r && open.length > 0) {
          // A change made after an error is how it was fixed; the same tool succeeding again is the proof.
          if (writes(c)) for (const o of open) if (o.tried.length < 3) o.tried.push(describeCall(c, r));
          const fixed = open.filter((o) => o.tool === c.name && !writes(c));
          for (const o of fixed)
            ev.fixes.push(
              `${o.error}\n→ ${o.tried.length ? `fixed by ${o.tried.join(', ')}; then ` : 'then '}${describeCall(c, r)}`,
            );
          open = open.filter((o) => !fixed.includes(o));
        }
        if (writes(c)) for (const path of argValue(c.arguments, PATH_KEYS)) changed(path, changeOf(c));
        const edited = aciEditedFile(c, r);
        if (edited) {
          ev.filesModified.push(edited);
          changed(edited, 'edit');
          for (const o of open) if (o.tried.length < 3) o.tried.push(describeCall(c, r));
        }
      }
    }
    if ((m.role === 'user' && !m.synthetic) || m.role === 'assistant')
      for (const p of pathsIn(textOf(m))) if (namesFile(p)) ev.filesMentioned.push(p);
    // Agents that edit by writing (Aider's SEARCH/REPLACE blocks, unified diffs): the reply names what it changed.
    if (m.role === 'assistant')
      for (const [path, how] of textEdits(textOf(m))) {
        ev.filesModified.push(path);
        changed(path, how);
      }
    if (m.role === 'user' && !m.synthetic) {
      const t = textOf(m).trim();
      // The harness's text (interruptions, slash commands, notifications) is not a person's words: it is listed apart.
      if (t && isHarnessText(t)) ev.events.push(clip(oneLine(t), 300));
      else if (t) ev.instructions.push(t);
      for (const s of sentences(t)) if (NUMBER.test(s)) ev.numbers.push(clip(s, 200));
      NUMBER.lastIndex = 0;
    }
    if (m.role === 'assistant') {
      for (const s of sentences(textOf(m))) {
        if (isDecision(s)) ev.decisions.push(clip(s, 240));
        if (TODO.test(s)) ev.todos.push(clip(s, 240));
        NUMBER.lastIndex = 0;
        if (
          NUMBER.test(s) &&
          (DECISION.test(s) ||
            INTENT.test(s) ||
            /\b(tests?|passed|failed|errors?|files?|lines?|tokens?|ms|seconds?|version|port|%)\b/i.test(s))
        )
          ev.numbers.push(clip(s, 200));
        NUMBER.lastIndex = 0;
      }
      for (const p of m.parts) {
        if (p.type !== 'tool-call') continue;
        noteCall(ev, p, results.get(p.id));
      }
    }
    for (const p of m.parts) {
      if (p.type !== 'tool-result') continue;
      const t = resultText(p);
      if (p.isError || ERROR_LINE.test(t.slice(0, 20000))) {
        let n = 0;
        for (const line of t.split('\n')) {
          if (!ERROR_LINE.test(line)) continue;
          ev.errors.push(clip(line.trim(), 220));
          if (++n >= 3) break;
        }
      }
    }
  }
  for (const o of open)
    ev.fixes.push(
      `${o.error}\n→ ${o.tried.length ? `tried ${o.tried.join(', ')}; not verified in this span` : 'not resolved in this span'}`,
    );
  for (const [path, list] of changes) ev.changes.push(`${path} — ${summarizeChanges(list)}`);
  if (lastSaid) ev.state.push(`The agent's last words here: ${clip(oneLine(lastSaid), 600)}`);
  if (lastActions.length > 0) ev.state.push(`Its last actions: ${lastActions.join('; ')}`);
  ev.next.reverse();
  return dedupe(ev);
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** The first three error lines of a failed result, or its first line when none reads as an error. */
function errorLines(text: string): string[] {
  const out: string[] = [];
  for (const line of text.slice(0, 50_000).split('\n')) {
    if (!ERROR_LINE.test(line) || line.trim().length < 4) continue;
    out.push(line.trim());
    if (out.length >= 3) return out;
  }
  if (out.length === 0) {
    const first = firstOutputLine(text);
    if (first) out.push(first);
  }
  return out;
}

/** A call in a few words: the tool, its command or path, and how it ended. */
function describeCall(c: ToolCallPart, r: ToolResultPart | undefined): string {
  const cmd = shellCommands(c).join(' ').trim();
  const path = argValue(c.arguments, PATH_KEYS)[0];
  const op = editorOperation(c);
  const what = cmd ? `\`${clip(oneLine(cmd), 160)}\`` : path ? `${c.name} ${op ? `${op} ` : ''}${path}` : c.name;
  return r ? `${what} (${exitStatus(r, c)})` : what;
}

function changeOf(c: ToolCallPart): string {
  const args = c.arguments && typeof c.arguments === 'object' ? (c.arguments as Record<string, unknown>) : {};
  const body = ['content', 'new_string', 'new_str', 'file_text', 'newText', 'text', 'patch', 'diff']
    .map((k) => args[k])
    .find((v) => typeof v === 'string') as string | undefined;
  const old = ['old_string', 'old_str', 'oldText'].map((k) => args[k]).find((v) => typeof v === 'string') as
    | string
    | undefined;
  if (old === undefined && body !== undefined)
    return `${c.name} (${Buffer.byteLength(body).toLocaleString('en-US')} bytes)`;
  return c.name;
}

function summarizeChanges(list: string[]): string {
  const counts = new Map<string, number>();
  for (const x of list) counts.set(x, (counts.get(x) ?? 0) + 1);
  return [...counts].map(([x, n]) => (n > 1 ? `${x} ×${n}` : x)).join(', ');
}

function noteCall(ev: Evidence, call: ToolCallPart, result: ToolResultPart | undefined): void {
  const name = call.name;
  const paths = argValue(call.arguments, PATH_KEYS);
  const argText = argumentsText(call.arguments);
  // apply_patch style inputs name their files inside the patch text.
  for (const m of argText.matchAll(PATCH_FILE)) paths.push(m[2]!);
  const commands = shellCommands(call);
  if (commands.length === 0 && SHELL_TOOL.test(name) && typeof call.arguments === 'string')
    commands.push(call.arguments);
  if (SHELL_TOOL.test(name) || commands.length > 0) {
    const cmd = commands.join(' ').trim();
    if (cmd) {
      ev.commands.push({ command: clip(cmd.replace(/\s*\n\s*/g, ' ⏎ '), 300), status: exitStatus(result, call) });
      const written = writtenByCommand(cmd);
      // A pattern or an option with a slash in it (`grep "bg-slate-800/95"`) is not a file: only what names one.
      for (const p of pathsIn(cmd)) if (namesFile(p)) (written.has(p) ? ev.filesModified : ev.filesRead).push(p);
    }
  }
  for (const p of paths) (writes(call) ? ev.filesModified : ev.filesRead).push(p);
  if (paths.length === 0 && commands.length === 0) for (const p of pathsIn(argText)) ev.filesRead.push(p);
}

/**
 * A path said in prose names a file when it has an extension or is written as a path (`./x`, `/x`, `~/x`, `x/`, two
 * directories deep): `and/or`, `import/export` or `Codex/AOS` are words.
 */
function namesFile(p: string): boolean {
  // A bare name needs a stem (`.d.ts` and `d.ts` are how people write an extension).
  if (!p.includes('/') && /^(?:\.[^.]*\.|[^.]?\.)/.test(p)) return false;
  return /\.[A-Za-z][\w]{0,7}$/.test(p) || /^(?:~|\.{1,2})?\//.test(p) || p.endsWith('/') || /\/.+\/./.test(p);
}

/** An apply_patch header: `*** Update File: src/a.ts` (in a tool's input, or written in a reply). */
const PATCH_FILE = /\*\*\* (Update|Add|Delete) File: ([^\s\\"]+)/g;
const PATCH_LINE = new RegExp(`^${PATCH_FILE.source}`);
const FENCE = /^\s*(`{3,}|~{3,})/;
/** `path` on its line, as Aider writes it before an edit block (it strips these marks too). */
const fileLine = (line: string) => line.trim().replace(/^[`*#\s]+|[`*:\s]+$/g, '');

/**
 * Files a reply changes in text: Aider's SEARCH/REPLACE blocks (the path on the line before the fence, or inside it
 * first), unified diff headers (`+++ b/path`), apply_patch headers — each with how (`edit`, `diff`, `add`, `delete`).
 */
function textEdits(text: string): [string, string][] {
  if (!text.includes('<<<<<<< SEARCH') && !text.includes('+++ ') && !text.includes(' File: ')) return [];
  const out: [string, string][] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^<{5,9} SEARCH\s*$/.test(line)) {
      // Back over the fence to the path line (diff-fenced puts the path just after the fence).
      const j = i - 1;
      let path = j >= 0 && !FENCE.test(lines[j]!) ? fileLine(lines[j]!) : '';
      if (!path && j >= 1 && FENCE.test(lines[j]!)) path = fileLine(lines[j - 1]!);
      if (path && pathsIn(` ${path} `)[0] === path) out.push([path, 'edit']);
      continue;
    }
    const diff = /^\+\+\+ (?:b\/)?(\S+)/.exec(line);
    if (diff && i > 0 && lines[i - 1]!.startsWith('--- ') && diff[1] !== '/dev/null') {
      out.push([diff[1]!, 'diff']);
      continue;
    }
    const patch = PATCH_LINE.exec(line);
    if (patch) out.push([patch[2]!, patch[1] === 'Update' ? 'edit' : patch[1]!.toLowerCase()]);
  }
  return out;
}

/**
 * The file an edit of SWE-agent's own commands changed: `edit 287:295` (or `insert 12`) acts on the file open at the
 * time, which its answer names in a `[File: /path (372 lines total)]` header; an edit it refused names none.
 */
function aciEditedFile(call: ToolCallPart, r: ToolResultPart | undefined): string | undefined {
  if (!r || r.isError) return undefined;
  const cmd = shellCommands(call).join(' ').trim();
  if (!/^(?:edit\s+\d+(?::\d+)?|insert\s+\d+)\s/.test(`${cmd} `)) return undefined;
  const t = resultText(r);
  if (SWE_AGENT_EDIT_REFUSED.test(t)) return undefined;
  return t.match(/^\[File: (\S+) \(\d+ lines total\)\]/m)?.[1];
}

/** SWE-agent's answer to an edit its linter refused (the file is left as it was). */
const SWE_AGENT_EDIT_REFUSED = /^\s*Your proposed edit has introduced new syntax error/;

/** Paths a shell command writes: redirection targets and the operands of commands that create, move or delete. */
function writtenByCommand(cmd: string): Set<string> {
  const out = new Set<string>();
  for (const m of cmd.matchAll(/(?:^|[^0-9&])>>?\s*([^\s&|;<>]+)/g)) if (!m[1]!.startsWith('/dev/')) out.add(m[1]!);
  for (const seg of cmd.split(/&&|\|\||;|\|/)) {
    const words = seg.trim().split(/\s+/);
    const verb = words[0] ?? '';
    const writes =
      // `create` is SWE-agent's command that makes a file (no shell has one).
      ['mv', 'cp', 'rm', 'touch', 'mkdir', 'tee', 'truncate', 'ln', 'install', 'create'].includes(verb) ||
      (verb === 'sed' && words.includes('-i')) ||
      (verb === 'git' && ['mv', 'rm', 'checkout', 'restore'].includes(words[1] ?? ''));
    if (writes) for (const w of words.slice(1)) if (!w.startsWith('-')) for (const p of pathsIn(` ${w} `)) out.add(p);
  }
  return out;
}

function uniq(xs: string[]): string[] {
  return [...new Set(xs)];
}

/** A remote branch a git command names (`origin/main`): path-shaped, but no file. */
const GIT_REMOTE_REF = /^(?:origin|upstream)\/[\w./-]+$/;

function dedupe(ev: Evidence): Evidence {
  const seenCmd = new Map<string, { command: string; status: string }>();
  for (const c of ev.commands) seenCmd.set(c.command, c); // the latest status of a command re-run wins
  // `a/x` and `b/x` are a diff's two sides of a file already listed.
  const listed = new Set([...ev.filesModified, ...ev.filesRead]);
  const mentioned = ev.filesMentioned.filter((p) => !(/^[ab]\//.test(p) && listed.has(p.slice(2))));
  // A bare file name said once a full path ending in it is listed (`settings.json` beside `/x/.entire/settings.json`)
  // adds nothing; nor does a remote branch.
  const named = new Set(
    [...ev.filesModified, ...ev.filesRead, ...mentioned]
      .filter((p) => p.includes('/'))
      .map((p) => p.slice(p.lastIndexOf('/') + 1)),
  );
  const file = (p: string) => !GIT_REMOTE_REF.test(p) && (p.includes('/') || !named.has(p));
  const modified = uniq(ev.filesModified).filter(file);
  const touched = new Set(modified);
  const read = new Set(ev.filesRead);
  return {
    instructions: uniq(ev.instructions),
    events: uniq(ev.events),
    decisions: uniq(ev.decisions),
    filesModified: modified,
    filesRead: uniq(ev.filesRead).filter((p) => !touched.has(p) && file(p)),
    filesMentioned: uniq(mentioned).filter((p) => !touched.has(p) && !read.has(p) && file(p)),
    commands: [...seenCmd.values()],
    errors: uniq(ev.errors),
    numbers: uniq(ev.numbers),
    todos: uniq(ev.todos),
    fixes: uniq(ev.fixes),
    changes: uniq(ev.changes),
    state: uniq(ev.state),
    next: uniq(ev.next),
  };
}

/** Evidence of `b` added to `a`, keeping `a`'s order and everything in it. */
export function mergeEvidence(a: Evidence, b: Evidence): Evidence {
  return dedupe({
    instructions: [...a.instructions, ...b.instructions],
    events: [...a.events, ...b.events],
    decisions: [...a.decisions, ...b.decisions],
    filesRead: [...a.filesRead, ...b.filesRead],
    filesModified: [...a.filesModified, ...b.filesModified],
    filesMentioned: [...a.filesMentioned, ...b.filesMentioned],
    commands: [...a.commands, ...b.commands],
    errors: [...a.errors, ...b.errors],
    numbers: [...a.numbers, ...b.numbers],
    todos: [...a.todos, ...b.todos],
    fixes: [...a.fixes, ...b.fixes],
    changes: [...a.changes, ...b.changes],
    // Where the work stands and what comes next: the newer span's word replaces the older one's.
    state: b.state.length > 0 ? b.state : a.state,
    next: b.next.length > 0 ? b.next : a.next,
  });
}
