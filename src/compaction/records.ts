import { diffLines } from 'diff';
import { PATH_KEYS } from '../model/parts.js';
import { firstHeredoc } from './heredoc.js';
import { isSpace, leadingRunEnd, trailingRunStart, trimEndOf } from '../model/text.js';
import type { ToolCallPart, ToolResultPart } from '../model/types.js';
import { TextMemo } from '../model/text-memo.js';

/**
 * What the records of a session say of each tool call — and nothing they do not. A call failed only when its record
 * says so (the result's error flag, which every reader sets from its harness's own field or header); an exit code is
 * quoted only from the header or trailer a harness writes around a command's output (Claude Code's `Exit code N`,
 * Codex's `Process exited with code N`, pi's `Command exited with code N`), never from text inside the output.
 */

/** Terminal control: ANSI escapes (CSI, OSC, two-byte) and the C0 controls a summary must not quote. */
const CONTROL =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-Z\\-_]|[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u009b]/g;

/** Text as a summary may quote it: control codes gone, a carriage-return progress line reduced to what it ended as. */
export function clean(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((l) => (l.includes('\r') ? l.slice(l.lastIndexOf('\r') + 1) : l))
    .join('\n')
    .replace(CONTROL, '');
}

export function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

export function resultText(r: ToolResultPart): string {
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

const SHELL_TOOL = /bash|shell|exec|terminal|powershell|^run$|run_command|run_terminal|^sh$|command$/i;
const COMMAND_KEYS = ['command', 'cmd', 'script', 'commands'];
const OLD_KEYS = ['old_string', 'oldString', 'old_str', 'oldText', 'search'];
const NEW_KEYS = ['new_string', 'newString', 'new_str', 'newText', 'replace'];
const BODY_KEYS = ['content', 'file_text', 'contents', 'text', 'code'];
const WRITE_NAME = /write|edit|create|patch|replace|insert|notebook|multiedit|apply/i;
const READ_NAME = /read|view|open|cat\b|get_file|show_file/i;
const SEARCH_NAME = /grep|glob|search|find|list|ls\b/i;

function args(call: ToolCallPart): Record<string, unknown> {
  return call.arguments && typeof call.arguments === 'object' ? (call.arguments as Record<string, unknown>) : {};
}

function strings(a: Record<string, unknown>, keys: readonly string[]): string[] {
  const out: string[] = [];
  for (const k of keys) {
    const v = a[k];
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string') out.push(x);
  }
  return out;
}

function firstString(a: Record<string, unknown>, keys: readonly string[]): string | undefined {
  for (const k of keys) if (typeof a[k] === 'string') return a[k] as string;
  return undefined;
}

/**
 * The operation an editor tool names in `command` beside a path (`str_replace_editor`, Anthropic's text editor: `view`,
 * `create`, `str_replace`, `insert`, `undo_edit`): a verb, not a shell command.
 */
function editorOperation(call: ToolCallPart): string | undefined {
  if (SHELL_TOOL.test(call.name)) return undefined;
  const a = args(call);
  const op = typeof a.command === 'string' ? a.command : undefined;
  if (!op || !/^[a-z][a-z_]*$/i.test(op)) return undefined;
  return strings(a, PATH_KEYS).length > 0 ? op : undefined;
}

/** The shell command a call runs, whole (Codex's `["bash", "-lc", "…"]` as its script); undefined for other tools. */
export function commandOf(call: ToolCallPart): string | undefined {
  if (typeof call.arguments === 'string') {
    if (!SHELL_TOOL.test(call.name) || /^\s*\*\*\* Begin Patch/.test(call.arguments)) return undefined;
    return call.arguments.trim() || undefined;
  }
  if (editorOperation(call) !== undefined) return undefined;
  const a = args(call);
  for (const k of COMMAND_KEYS) {
    const v = a[k];
    if (typeof v === 'string' && v.trim()) return v.trim();
    if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')) {
      const xs = v as string[];
      if (xs.length >= 3 && /^(?:ba|z|da)?sh$/.test(xs[0]!.replace(/^.*\//, '')) && /^-\w*c$/.test(xs[1]!))
        return xs.slice(2).join(' ').trim();
      return xs.join(' ').trim();
    }
  }
  return undefined;
}

/** A command on one line: its lines joined by ` ⏎ ` (blank lines dropped), as a summary quotes it. */
export function commandLine(command: string): string {
  return command
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ⏎ ');
}

/**
 * Exit codes read, per result (a part is not edited in place): the summarizer, the strategies and the in-play analysis
 * each ask of the same results, and a loop's compactions ask again of those still in view.
 */
const exits = new WeakMap<ToolResultPart, { exit: number | undefined }>();

/** The exit code the harness wrote in its header or trailer, when it wrote one. */
export function recordedExit(r: ToolResultPart): number | undefined {
  let x = exits.get(r);
  if (!x) exits.set(r, (x = { exit: readExit(r) }));
  return x.exit;
}

function readExit(r: ToolResultPart): number | undefined {
  const text = resultText(r);
  const head = text.slice(0, 600).split('\n').slice(0, 6);
  // Codex's exec: `Chunk ID: …`, `Wall time: …`, `Process exited with code N`, `Output:`.
  for (const l of head) {
    const m = /^Process exited with code (-?\d+)\s*$/.exec(l);
    if (m) return Number(m[1]);
    if (!/^(?:Chunk ID|Wall time|Original token count|Total output lines)\b/.test(l)) break;
  }
  // Claude Code's Bash on failure: `Exit code N` alone on the first line.
  const first = /^Exit code (-?\d+)\s*$/.exec(head[0] ?? '');
  if (first) return Number(first[1]);
  // pi's bash: `Command exited with code N` alone on the last line.
  const tail = text.slice(-200).trimEnd().split('\n').pop() ?? '';
  const last = /^\(?Command exited with code (-?\d+)\)?\s*$/.exec(tail);
  if (last) return Number(last[1]);
  return undefined;
}

/** How a call ended, as its record says: `failed` only when flagged. */
export interface Outcome {
  failed: boolean;
  /** No result recorded at all (a call cut off, or still under way). */
  missing: boolean;
  exit?: number;
}

export function outcomeOf(r: ToolResultPart | undefined, isCommand: boolean): Outcome {
  if (!r) return { failed: false, missing: true };
  const exit = isCommand ? recordedExit(r) : undefined;
  // A recorded non-zero exit is a failure even where a reader left the flag unset; the flag alone is one too.
  const failed = r.isError || (exit !== undefined && exit !== 0);
  return exit !== undefined ? { failed, missing: false, exit } : { failed, missing: false };
}

/** The status words a summary writes for an outcome: empty when the record says nothing. */
export function statusWords(o: Outcome): string {
  if (o.missing) return 'no result recorded';
  if (o.exit !== undefined) return `exit ${o.exit}`;
  return o.failed ? 'failed' : '';
}

/** Commands whose output is a file's text or search hits: their lines are never error lines. */
const READS_OUTPUT =
  /^(?:sudo\s+)?(?:grep|rg|ag|ack|find|fd|cat|bat|head|tail|less|more|nl|sed\s+-n|awk|ls|tree|wc|jq|yq|diff|git\s+(?:log|show|diff|grep|blame|status)|gh\s+\w+\s+(?:view|list|diff)|curl|wget|echo|printf|sqlite3|psql|bd\s+(?:show|list|ready))\b/;

export function printsContent(command: string): boolean {
  return command
    .split(/&&|\|\||;|\|/)
    .map((s) => s.trim().replace(/^cd\s+\S+\s*$/, ''))
    .filter(Boolean)
    .every((s) => READS_OUTPUT.test(s));
}

/**
 * A line shaped like an error report — a compiler's, an interpreter's, a test runner's or a shell's — as opposed to a
 * line that merely contains the word: a file's line (`12→ … error …`), a JSON record, a log of a program. Strict on
 * purpose: a summary that calls a source line an error misleads.
 */
export function errorShaped(line: string): boolean {
  const l = line.trim();
  if (l.length < 4 || l.length > 2000) return false;
  if (/^[[{"]/.test(l) || /^\s*\d+\s*(?:→|\||:\s|\t)/.test(line)) return false;
  return (
    /^(?:[\w$.]*(?:Error|Exception|Failure))(?:\s*\[[^\]]*\])?:\s/.test(l) ||
    /^(?:error|fatal|panic|FAIL|FAILED|ERROR|ERR!|E)(?:\[[\w-]+\])?(?::|\s{1,3}\S)/.test(l) ||
    /^Traceback \(most recent call last\)/.test(l) ||
    // `(?:[:(]\d+\)?)+` reads `:12:5` one way only (`(?:[:(]\d+(?::\d+)?\)?)+`, the same language, reads it in
    // exponentially many); `\s*(?:-\s*)?` splits a run of spaces one way only (`\s*-?\s*` in quadratically many).
    /^[\w./@-]+(?:[:(]\d+\)?)+:?\s*(?:-\s*)?(?:error|fatal)\b/i.test(l) ||
    /^(?:npm ERR!|\[ERROR\]|✗|✘|×)\s*\S/.test(l) ||
    /^(?:[^:\n]{1,80}: ){1,4}(?:command not found|No such file or directory|Permission denied|Operation not permitted|Read-only file system|not found|Is a directory|Not a directory|File exists|Directory not empty)\s*$/.test(
      l,
    ) ||
    /^(?:Assertion|assert)\w*Error\b/.test(l)
  );
}

/**
 * The lines that say what went wrong in a failed result: its error-shaped lines (the first three), else the first
 * line it printed past its harness's header (Codex's Chunk ID / Wall time / exit line / `Output:`; Claude Code's
 * `Exit code N`).
 */
export function failureLines(text: string, max = 3, command?: string): string[] {
  const lines = clean(text.slice(0, 50_000)).split('\n');
  const out: string[] = [];
  // A command that prints files or search hits: its output's lines are the files' lines; only what its programs said
  // of themselves (`sed: can't read x: No such file or directory`) is an error line.
  const own = command !== undefined && printsContent(command) ? programsOf(command) : undefined;
  for (const l of lines) {
    if (own ? !own.some((p) => l.startsWith(`${p}: `)) : !errorShaped(l)) continue;
    out.push(clip(l.trim(), 220));
    if (out.length >= max) return out;
  }
  if (out.length > 0) return out;
  // No line reads as an error report: the first line it printed (what a tool says first), and its last (where a
  // command's own failure message usually is).
  const first = firstOutput(lines);
  const last = lastLine(lines);
  return [first, last !== first ? last : undefined].filter((x): x is string => !!x).map((x) => clip(x, 220));
}

/**
 * A command whose exit status 1 means "nothing found" or "different" rather than an error (grep, diff, test …), and
 * that printed nothing: its status is said as recorded, but it is no failure to fix.
 */
export function emptyNoMatch(command: string, exit: number | undefined, text: string): boolean {
  if (
    exit !== 1 ||
    text
      .replace(
        /^(?:Exit code 1|Process exited with code 1|Command exited with code 1|Chunk ID:.*|Wall time:.*|Output:|\s)*$/gm,
        '',
      )
      .trim()
  )
    return false;
  const last = command
    .split(/\|\||&&|;|\|/)
    .pop()!
    .trim();
  return /^(?:grep|egrep|fgrep|rg|ag|ack|diff|cmp|test|\[|git\s+diff\s+--quiet|git\s+grep|pgrep)\b/.test(last);
}

/** The programs a command line runs (the first word of each segment, `cd` aside). */
function programsOf(command: string): string[] {
  return command
    .split(/&&|\|\||;|\||\n/)
    .map((seg) => seg.trim().split(/\s+/)[0] ?? '')
    .filter((w) => w && w !== 'cd' && !w.includes('='))
    .map((w) => w.replace(/^.*\//, ''));
}

/** The first printed line past a harness header; the last line of what a command printed. */
function firstOutput(lines: string[]): string | undefined {
  const at = lines.findIndex((l) => /^\s*Output:\s*$/.test(l));
  const body = at !== -1 && at < 8 ? lines.slice(at + 1) : lines;
  return body
    .map((l) => l.trim())
    .find(
      (l) =>
        l &&
        !/^(?:Exit code -?\d+|Process exited with code -?\d+|Command exited with code -?\d+|Chunk ID:.*|Wall time:.*)$/.test(
          l,
        ),
    );
}

export function lastOutput(text: string): string | undefined {
  const last = lastLine(clean(text.slice(-4000)).split('\n'));
  return last !== undefined ? clip(last, 160) : undefined;
}

/** The last line that says something, past a harness's trailer. */
function lastLine(lines: readonly string[]): string | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i]!.trim();
    if (
      (l.match(/[A-Za-z0-9]/g) ?? []).length >= 3 &&
      !/^(?:\(?Command exited with code -?\d+\)?|Process exited with code -?\d+|Output:|<\/?[\w-]+>)$/.test(l)
    )
      return l;
  }
  return undefined;
}

/** printedErrors of texts already read (with the default `max`), by content. */
const printed = new TextMemo<string[]>();

/**
 * Error-shaped lines a command printed without failing (a test run that reports failures and exits 0). The same texts
 * are read again (by the summarizer, the clearing placeholders and the in-play analysis, compaction after compaction):
 * with the default `max`, each is read once (the array returned is shared: not to be changed).
 */
export function printedErrors(text: string, max = 2): string[] {
  if (max !== 2) return readPrintedErrors(text, max);
  return printed.get(text, (t) => readPrintedErrors(t, max));
}

function readPrintedErrors(text: string, max: number): string[] {
  const out: string[] = [];
  for (const l of clean(text.slice(0, 50_000)).split('\n')) {
    if (!errorShaped(l)) continue;
    out.push(clip(l.trim(), 200));
    if (out.length >= max) break;
  }
  return out;
}

export function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

// ---------------------------------------------------------------------------------------------------------------------
// Files

const EXTENSIONS =
  'ts|tsx|mts|cts|js|jsx|mjs|cjs|py|pyi|rs|go|java|kt|kts|rb|php|c|h|cc|cpp|hpp|cs|fs|swift|m|mm|md|mdx|rst|json|jsonl|json5|yaml|yml|toml|ini|cfg|conf|properties|sql|sh|bash|zsh|fish|ps1|txt|csv|tsv|html|htm|css|scss|sass|less|vue|svelte|astro|lock|xml|env|ex|exs|heex|eex|erl|hrl|lua|dart|scala|sbt|gradle|tf|tfvars|proto|graphql|gql|log|out|db|sqlite|png|jpg|jpeg|gif|svg|webp|pdf|zip|tgz|gz|patch|diff|ipynb|r|jl|zig|nim|ml|mli|hs|clj|cljs|elm|vim|nix|dockerfile|makefile|mk|cmake|bazel|bzl|traj|pony|sol|wasm|bin';
/**
 * A path-shaped token in prose or a command: a directory part, or a bare name with a known extension. Kept as the
 * reference form (tests compare pathsIn with it); pathsIn scans with the pieces below, in linear time.
 */
export const PATH_TOKEN = new RegExp(
  `(?<![\\w@:/.~$%-])((?:~|\\.{1,2})?\\/?(?:[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*\\/)+[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*|[A-Za-z0-9_][A-Za-z0-9_.-]*\\.(?:${EXTENSIONS})|\\.[A-Za-z][\\w-]*)(?![\\w/])`,
  'gi',
);
/** PATH_TOKEN's alternatives at one start (sticky), the directory form in group 1. */
const PATH_AT = new RegExp(
  `(?:((?:~|\\.{1,2})?\\/?(?:[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*\\/)+[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*)|[A-Za-z0-9_][A-Za-z0-9_.-]*\\.(?:${EXTENSIONS})|\\.[A-Za-z][\\w-]*)(?![\\w/])`,
  'iy',
);
/** The same without the directory form. */
const NAME_AT = new RegExp(`(?:[A-Za-z0-9_][A-Za-z0-9_.-]*\\.(?:${EXTENSIONS})|\\.[A-Za-z][\\w-]*)(?![\\w/])`, 'iy');
/** A run of the characters a path token and its context are made of: no match crosses its ends. */
const PATH_RUN = /[A-Za-z0-9_@.+~/$%:-]+/g;
/** The characters of a directory form's segment, and those it may begin with. */
const SEGMENT_CHAR = /[A-Za-z0-9_@.+-]/;
const SEGMENT_FIRST = /[A-Za-z0-9_@+-]/;

/** The first index the directory form's first segment may begin at from `i`, past its optional `~`/`.`/`..` and `/`. */
function segmentStart(run: string, i: number): number | undefined {
  const prefixes = run[i] === '~' ? [1, 0] : run[i] === '.' ? (run[i + 1] === '.' ? [1, 2, 0] : [1, 0]) : [0];
  for (const k of prefixes.sort((a, b) => a - b)) {
    for (const j of run[i + k] === '/' ? [i + k + 1] : [i + k]) if (SEGMENT_FIRST.test(run[j] ?? '')) return j;
  }
  return undefined;
}

const KNOWN_EXT = new RegExp(`\\.(?:${EXTENSIONS})$`, 'i');
const KNOWN_NAME =
  /^(?:Makefile|Dockerfile|Gemfile|Rakefile|Procfile|LICENSE|README|CHANGELOG|Cargo\.lock|go\.mod|go\.sum)$/;

/** Dotfiles people name bare (`.env`); a bare `.ts` or `.test.ts` is an extension, not a file. */
const DOTFILE =
  /^\.(?:env(?:\.[\w-]+)?|gitignore|gitattributes|gitmodules|npmrc|nvmrc|yarnrc|bashrc|zshrc|profile|dockerignore|editorconfig|prettierrc|eslintrc|babelrc|envrc|tool-versions)$/;

/** A file name with an extension: a stem, a dot, then letters (`a.ts`, `Cargo.lock`). */
const hasExtension = (name: string) => /^[\w@+-][\w@.+-]*\.[A-Za-z][\w]{0,9}$/.test(name);

/**
 * Whether a string names a file or directory: an absolute or relative path (`/x/y`, `./x`, `~/x`), a directory part
 * and a name with an extension (`src/a.ts`), a directory (`src/lib/`), or a bare name with a known extension or a
 * known dotfile. `open/closed/blocked`, `--title/--body`, `pass/fail`, `schema/Zod` and `.test.ts` are words.
 */
export function isFilePath(p: string): boolean {
  if (p.length < 3 || p.length > 400 || /\s/.test(p) || p.startsWith('-') || p.includes('//')) return false;
  if (/^[a-z][\w+.-]*:/i.test(p)) return false; // a URL or a scheme (file:, http:)
  if (/^\d+(?:[./]\d+)+$/.test(p)) return false; // a version, a date, a ratio
  if (/^(?:~|\.{1,2})?\//.test(p)) return /\w/.test(p);
  const name = p.slice(p.lastIndexOf('/') + 1);
  if (p.includes('/')) {
    if (p.endsWith('/')) return p.split('/').filter(Boolean).length >= 2 && /^[\w@.+/-]+$/.test(p);
    return hasExtension(name) || KNOWN_NAME.test(name) || DOTFILE.test(name);
  }
  if (DOTFILE.test(name)) return true;
  // A property of a well-known object (`console.log`, `process.env`) is code, not a file.
  if (
    /^(?:console|window|document|process|module|exports|Math|JSON|Object|Array|Promise|String|Number|this|self)\./.test(
      name,
    )
  )
    return false;
  // `d.ts` is how people write the declaration extension, not a file.
  if (/^d\.[cm]?ts$/.test(name)) return false;
  return (KNOWN_EXT.test(name) && hasExtension(name)) || KNOWN_NAME.test(name);
}

/** Paths named in a text (prose, a command), each a file or directory by isFilePath. */
export function pathsIn(text: string): string[] {
  const out: string[] = [];
  for (const m of pathTokens(text)) {
    const p = trimEndOf(m, '.,:;');
    if (isFilePath(p)) out.push(p);
  }
  return out;
}

/**
 * What `text.matchAll(PATH_TOKEN)` finds, in time linear in the text. The regex alone is quadratic: `+` may start a
 * token but does not stop one, so after every `+` of a long run the directory form scans the run again for a `/`. Here
 * a token is sought only where PATH_TOKEN may start one (the start of a run of token characters, or after a `+`), and
 * once the directory form failed at a start it is not tried again within the chain of segments it went through: from
 * any later start there, the form meets a suffix of the same chain, and fails the same way.
 */
function pathTokens(text: string): string[] {
  const out: string[] = [];
  for (const r of text.matchAll(PATH_RUN)) {
    const run = r[0];
    let from = 0;
    let noDirUntil = -1; // the directory form failed at a start before this index, and would from any start up to it
    for (let i = 0; i < run.length; i++) {
      if (i < from || (i > 0 && run[i - 1] !== '+')) continue;
      const re = i <= noDirUntil ? NAME_AT : PATH_AT;
      re.lastIndex = i;
      const m = re.exec(run);
      if (re === PATH_AT && !m?.[1]) {
        // Where the directory form's first segment could begin from this start (after `~`, `.` or `..`, and `/`); it
        // failed from there, so it fails from every later start up to the end of that segment.
        const j = segmentStart(run, i);
        if (j !== undefined) {
          // The chain of segments the failed form went through: from any start inside it, the form meets a suffix of
          // the same chain, whose possible ends were all possible ends from here.
          let q = j;
          for (;;) {
            while (q < run.length && SEGMENT_CHAR.test(run[q]!)) q++;
            if (run[q] !== '/' || !SEGMENT_FIRST.test(run[q + 1] ?? '')) break;
            q++;
          }
          // A start at the chain's end is a new chain unless that end is a `/` (which no segment can follow).
          noDirUntil = Math.max(noDirUntil, run[q] === '/' ? q : q - 1);
        }
      }
      if (m) {
        out.push(m[0]);
        from = i + m[0].length;
        i = from - 1;
      }
    }
  }
  return out;
}

/** What a call did to a file: the lines it took out and put in (capped), or how it changed it. */
export interface FileChange {
  path: string;
  how: 'edit' | 'write' | 'create' | 'delete' | 'move' | 'append';
  removed: string[];
  added: string[];
  /** Lines of a file written whole. */
  lines?: number;
}

/** Every line of a change is kept up to this many; the rendering caps it again. */
const CHANGE_LINES = 60;

/** Beyond this many differing lines a line diff costs more than its excerpt is worth: the two sides are listed as is. */
const DIFF_EDITS = 200;

function lineDiff(path: string, before: string, after: string, how: FileChange['how'] = 'edit'): FileChange {
  // The lines both sides open and close with are no change; what differs between them is diffed, when it is small.
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const oldMiddle = a.slice(head, a.length - tail);
  const newMiddle = b.slice(head, b.length - tail);
  const removed: string[] = [];
  const added: string[] = [];
  const take = (into: string[], lines: readonly string[]) =>
    into.push(...lines.filter((l) => l.trim()).slice(0, Math.max(0, CHANGE_LINES - into.length)));
  const parts =
    oldMiddle.length + newMiddle.length <= 4 * DIFF_EDITS
      ? diffLines(`${oldMiddle.join('\n')}\n`, `${newMiddle.join('\n')}\n`, { maxEditLength: DIFF_EDITS })
      : undefined;
  if (parts)
    for (const part of parts) {
      if (part.added) take(added, part.value.split('\n'));
      else if (part.removed) take(removed, part.value.split('\n'));
    }
  else {
    take(removed, oldMiddle);
    take(added, newMiddle);
  }
  return { path, how, removed, added };
}

function written(path: string, body: string, how: FileChange['how'] = 'write'): FileChange {
  const lines = body.split('\n');
  return {
    path,
    how,
    removed: [],
    added: lines.filter((l) => l.trim()).slice(0, CHANGE_LINES),
    lines: lines.length - (body.endsWith('\n') ? 1 : 0),
  };
}

/** The files an apply_patch text or a unified diff changes, with their lines. */
export function patchChanges(text: string): FileChange[] {
  const out: FileChange[] = [];
  let current: FileChange | undefined;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const header = /^\*\*\* (Update|Add|Delete) File: (.+?)\s*$/.exec(l);
    const diff = /^\+\+\+ (?:b\/)?(\S+)/.exec(l);
    if (header) {
      current = {
        path: header[2]!,
        how: header[1] === 'Add' ? 'create' : header[1] === 'Delete' ? 'delete' : 'edit',
        removed: [],
        added: [],
      };
      out.push(current);
    } else if (diff && i > 0 && lines[i - 1]!.startsWith('--- ') && diff[1] !== '/dev/null') {
      current = { path: diff[1]!, how: 'edit', removed: [], added: [] };
      out.push(current);
    } else if (/^\*\*\* Move to: /.test(l) && current) {
      current.how = 'move';
      current.path = `${current.path} → ${l.slice(13).trim()}`;
    } else if (current && /^[+-]/.test(l) && !/^(?:\+\+\+|---) /.test(l)) {
      const body = l.slice(1);
      if (!body.trim()) continue;
      const list = l.startsWith('+') ? current.added : current.removed;
      if (list.length < CHANGE_LINES) list.push(body);
    } else if (/^\*\*\* End Patch/.test(l)) current = undefined;
  }
  return out;
}

/** Aider's SEARCH/REPLACE blocks in a reply: the path on the line before the fence (or just inside it). */
export function searchReplaceChanges(text: string): FileChange[] {
  if (!text.includes('<<<<<<< SEARCH')) return [];
  const out: FileChange[] = [];
  const lines = text.split('\n');
  const fence = /^\s*(`{3,}|~{3,})/;
  // The line less the markdown around a path (`**src/a.ts:**`, `` `a.ts` ``, `# a.ts`), scanned from each end.
  const fileLine = (line: string) => {
    const l = line.trim();
    const from = leadingRunEnd(l, (c) => c === '`' || c === '*' || c === '#' || isSpace(c));
    return l.slice(
      from,
      trailingRunStart(l, (c) => c === '`' || c === '*' || c === ':' || isSpace(c), from),
    );
  };
  for (let i = 0; i < lines.length; i++) {
    if (!/^<{5,9} SEARCH\s*$/.test(lines[i]!)) continue;
    let path = i >= 1 && !fence.test(lines[i - 1]!) ? fileLine(lines[i - 1]!) : '';
    if (!path && i >= 2 && fence.test(lines[i - 1]!)) path = fileLine(lines[i - 2]!);
    const sep = lines.findIndex((l, k) => k > i && /^={5,9}\s*$/.test(l));
    const end = lines.findIndex((l, k) => k > sep && /^>{5,9} REPLACE\s*$/.test(l));
    if (!path || !isFilePath(path) || sep === -1 || end === -1) continue;
    out.push(lineDiff(path, lines.slice(i + 1, sep).join('\n'), lines.slice(sep + 1, end).join('\n')));
    i = end;
  }
  return out;
}

/** Paths a shell command writes: redirection targets and the operands of commands that create, move or delete. */
function commandWrites(cmd: string): FileChange[] {
  const out: FileChange[] = [];
  // A heredoc into a file: its body is what was written.
  const heredoc = firstHeredoc(cmd);
  if (heredoc) {
    const target = heredoc.target ?? heredoc.afterTarget;
    if (target && isFilePath(target))
      out.push(
        written(
          target,
          heredoc.body,
          heredoc.redirect === '>>' || heredoc.after?.startsWith('>>') ? 'append' : 'write',
        ),
      );
  }
  for (const m of cmd.matchAll(/(?:^|[^0-9&<>])(>>?)\s*([^\s&|;<>()]+)/g)) {
    const target = m[2]!;
    if (target.startsWith('/dev/') || !isFilePath(target) || out.some((c) => c.path === target)) continue;
    out.push({ path: target, how: m[1] === '>>' ? 'append' : 'write', removed: [], added: [] });
  }
  for (const seg of cmd.split(/&&|\|\||;|\||\n/)) {
    const words = seg.trim().split(/\s+/);
    const verb = words[0] ?? '';
    const operands = words.slice(1).filter((w) => !w.startsWith('-') && isFilePath(w));
    const how: FileChange['how'] | undefined =
      verb === 'rm' || (verb === 'git' && words[1] === 'rm')
        ? 'delete'
        : verb === 'mv' || (verb === 'git' && words[1] === 'mv')
          ? 'move'
          : verb === 'touch' || verb === 'mkdir' || verb === 'create'
            ? 'create'
            : verb === 'cp' || verb === 'install' || verb === 'ln' || verb === 'tee' || verb === 'truncate'
              ? 'write'
              : verb === 'sed' && words.some((w) => /^-i/.test(w))
                ? 'edit'
                : undefined;
    if (!how) continue;
    const targets = how === 'move' || how === 'write' ? operands.slice(-1) : operands;
    if (how === 'move' && operands.length >= 2) {
      out.push({ path: `${operands[0]} → ${operands[operands.length - 1]}`, how, removed: [], added: [] });
      continue;
    }
    for (const t of targets) if (!out.some((c) => c.path === t)) out.push({ path: t, how, removed: [], added: [] });
  }
  return out;
}

/** What a call shows of a file: its path (as the call named it), and which lines when the call says. */
export interface FileRead {
  path: string;
  /** The directory a shell command was in when it named a relative path (`cd DIR && cat x`). */
  cwd?: string;
  /** First and last line shown (1-based; `to` absent: to the end). Both absent and not `partial`: the whole file. */
  from?: number;
  to?: number;
  /** Some part of the file whose lines the record does not say (a `tail`, an editor's window). */
  partial?: boolean;
  /** The output shows more than this file (other files, other statements' output): it is not the file's text alone. */
  mixed?: boolean;
}

type ShellToken = { word: string } | { op: string };

/**
 * A shell command as words and operators (`&&`, `||`, `;`, `|`, newlines, redirections), quotes and escapes resolved;
 * undefined for what this reading cannot follow (a heredoc, a command substitution, an unclosed quote).
 */
function shellTokens(command: string): ShellToken[] | undefined {
  if (/<<|\$\(|`/.test(command)) return undefined;
  const out: ShellToken[] = [];
  let word: string | undefined;
  const end = () => {
    if (word !== undefined) out.push({ word });
    word = undefined;
  };
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (c === "'" || c === '"') {
      const close = command.indexOf(c, i + 1);
      if (close === -1) return undefined;
      word = (word ?? '') + command.slice(i + 1, close).replace(c === '"' ? /\\(["\\$])/g : /(?!)/g, '$1');
      i = close;
    } else if (c === '\\' && i + 1 < command.length) {
      if (command[i + 1] !== '\n') word = (word ?? '') + command[i + 1];
      i++;
    } else if (c === ' ' || c === '\t') end();
    else if (c === '\n' || c === ';' || c === ')' || (c === '(' && word === undefined)) {
      end();
      out.push({ op: ';' });
    } else if (c === '&' || c === '|') {
      end();
      const double = command[i + 1] === c;
      out.push({ op: double ? `${c}${c}` : c === '|' ? '|' : '&' });
      if (double) i++;
    } else if (c === '>' || c === '<') {
      // A redirection takes the descriptor written before it (`2>`) and its target (`&1`, a file) as one operator.
      const fd = word !== undefined && /^\d$/.test(word) ? word : '';
      if (fd) word = undefined;
      end();
      let op = fd + c;
      if (command[i + 1] === '>' || command[i + 1] === '&') op += command[++i];
      if (op.endsWith('&')) {
        const m = /^\d+|^-/.exec(command.slice(i + 1));
        if (m) i += m[0].length;
        out.push({ op: `${op}${m?.[0] ?? ''}` });
        continue;
      }
      out.push({ op });
    } else if (c === '#' && word === undefined) {
      const nl = command.indexOf('\n', i);
      if (nl === -1) break;
      i = nl - 1;
    } else word = (word ?? '') + c;
  }
  end();
  return out;
}

/** Lines `sed -n` prints for a script of line addresses (`12p`, `1,80p`, `5,$p`); undefined for any other script. */
function sedRange(script: string): { from: number; to?: number } | undefined {
  const m = /^\s*(\d+)(?:\s*,\s*(\d+|\$))?\s*p\s*;?\s*$/.exec(script);
  if (!m) return undefined;
  const from = Number(m[1]);
  const to = m[2] === undefined ? from : m[2] === '$' ? undefined : Number(m[2]);
  return to === undefined ? { from } : { from, to };
}

/** Lines a filter stage keeps of what it is given (`sed -n A,Bp`, `head -n N`, `tail`), or undefined: not a filter. */
function filterStage(words: readonly string[]): { from?: number; to?: number; partial?: boolean } | undefined {
  const [program = '', ...rest] = words;
  // What a filter reads is its input: a file operand of its own makes it a read, not a filter.
  const { operands, scripts, quiet } = optionsOf(program, rest);
  if (program === 'cat' && operands.length === 0) return {};
  if (program === 'sed' && quiet && operands.length + scripts.length === 1) return sedRange(scripts[0] ?? operands[0]!);
  if (program === 'head' && operands.length === 0) {
    const n = headCount(rest);
    return n === undefined ? { partial: true } : { from: 1, to: n };
  }
  if (program === 'tail' && operands.length === 0) return { partial: true };
  return undefined;
}

/** A program's arguments: its operands, the scripts given with `-e`, and whether `-n` (sed's quiet mode) is set. */
function optionsOf(
  program: string,
  args: readonly string[],
): { operands: string[]; scripts: string[]; quiet: boolean } {
  const takesValue = VALUE_OPTIONS[program] ?? new Set<string>();
  const operands: string[] = [];
  const scripts: string[] = [];
  let quiet = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith('-') && a.length > 1) {
      if (program === 'sed' && /^-[a-zA-Z]*n[a-zA-Z]*$/.test(a)) quiet = true;
      if (takesValue.has(a)) {
        if (program === 'sed') scripts.push(args[i + 1] ?? '');
        i++;
      }
      continue;
    }
    operands.push(a);
  }
  return { operands, scripts, quiet };
}

/** The line count of `head -n N`, `head -N`, `head` (10); undefined for a count of bytes. */
function headCount(args: readonly string[]): number | undefined {
  if (args.some((a) => /^-c|^--bytes/.test(a))) return undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (/^-\d+$/.test(a)) return Number(a.slice(1));
    if (a === '-n' && /^\d+$/.test(args[i + 1] ?? '')) return Number(args[i + 1]);
    if (/^-n\d+$/.test(a)) return Number(a.slice(2));
  }
  return 10;
}

/** Options of the programs that print files which take a value (`head -n 20`, `sed -e SCRIPT`). */
const VALUE_OPTIONS: Record<string, ReadonlySet<string>> = {
  head: new Set(['-n', '-c']),
  tail: new Set(['-n', '-c']),
  sed: new Set(['-e']),
  nl: new Set(['-b', '-w', '-s', '-v', '-i']),
};

/**
 * The files a shell command prints (`cat`, `nl`, `head`, `tail`, `sed -n`, `less`, `bat`), with the lines it prints
 * when the command says (`sed -n '40,120p' f`, `head -n 50 f`, `nl -ba f | sed -n '1,200p'`), past `cd DIR &&` and
 * beside other statements (`printf '---'`). `text` says the output is the file's own lines: a pipe into another program
 * (`grep`, `wc`, `xxd`) prints something else, and output redirected to a file prints nothing.
 */
export function shellReads(command: string): (FileRead & { text: boolean })[] {
  const tokens = shellTokens(command);
  if (!tokens) return [];
  const out: (FileRead & { text: boolean })[] = [];
  let cwd: string | undefined;
  // Statements, each a pipeline of stages of words (redirections apart).
  let stages: { words: string[]; redirected: boolean }[] = [{ words: [], redirected: false }];
  // A statement after `||` runs only when the one before failed: what was printed is not known.
  let fallback = false;
  const statement = (next?: string) => {
    const [first, ...filters] = stages;
    const alternative = fallback;
    fallback = next === '||';
    stages = [{ words: [], redirected: false }];
    if (!first || first.words.length === 0) return;
    let words = first.words;
    while (words.length > 0 && (/^[A-Za-z_]\w*=/.test(words[0]!) || words[0] === 'sudo')) words = words.slice(1);
    const program = (words[0] ?? '').replace(/^.*\//, '');
    if (program === 'cd') {
      const dir = words[1];
      cwd = dir === undefined || dir.startsWith('-') ? undefined : dir.startsWith('/') || !cwd ? dir : `${cwd}/${dir}`;
      return;
    }
    const reads = readsOf(program, words.slice(1));
    if (reads.length === 0) return;
    // What the rest of the pipeline keeps of the lines printed; a stage that is not a filter prints something else.
    let text = !alternative && !first.redirected && filters.every((s) => !s.redirected);
    let range: { from?: number; to?: number; partial?: boolean } | undefined =
      reads.length === 1 ? { ...reads[0] } : undefined;
    for (const s of filters) {
      const f = filterStage(s.words);
      if (!f) {
        text = false;
        break;
      }
      if (range && !range.partial && (f.from !== undefined || f.partial)) {
        const base = range.from ?? 1;
        const from = base + (f.from ?? 1) - 1;
        const to = f.to === undefined ? range.to : Math.min(range.to ?? Infinity, base + f.to - 1);
        range = f.partial ? { partial: true } : to === undefined ? { from } : { from, to };
      } else if (!range && (f.from !== undefined || f.partial)) {
        // Several files through one filter: which lines of which file is not said.
        for (const r of reads) r.partial = true;
      }
    }
    if (reads.length === 1 && range) reads[0] = { ...reads[0]!, ...range };
    for (const r of reads) {
      if (r.partial) {
        delete r.from;
        delete r.to;
      }
      out.push({ ...r, ...(cwd !== undefined && !r.path.startsWith('/') ? { cwd } : {}), text });
    }
  };
  // Statements that print something (and so share the output with a file's text).
  let printing = 0;
  const silent = /^(?:cd|test|\[|true|:|export|set|mkdir|touch)$/;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    const stage = stages[stages.length - 1]!;
    if (stage.words.length === 0 && 'word' in t && stages.length === 1 && !silent.test(t.word)) printing++;
    if ('word' in t) stage.words.push(t.word);
    else if (t.op === '|') stages.push({ words: [], redirected: false });
    else if (/^\d?>>?$/.test(t.op) || t.op === '&>') {
      // Output sent to a file (or /dev/null) is shown to no one; an error stream's redirection changes nothing.
      const target = tokens[k + 1];
      if (target && 'word' in target) {
        k++;
        if (!/^[2-9]/.test(t.op)) stage.redirected = true;
      }
    } else if (t.op === '<') {
      const target = tokens[k + 1];
      if (target && 'word' in target) {
        k++;
        stage.words.push(target.word);
      }
    } else if (/^\d?>&/.test(t.op) || t.op === '&') continue;
    else statement(t.op);
  }
  statement();
  if (printing > 1 || out.length > 1) for (const r of out) r.mixed = true;
  return out;
}

/** The files one program prints and which of their lines, from its arguments. */
function readsOf(program: string, args: readonly string[]): FileRead[] {
  if (!/^(?:cat|nl|head|tail|sed|less|more|bat|batcat)$/.test(program)) return [];
  // `sed -i` changes the file (commandWrites), it prints nothing.
  if (program === 'sed' && args.some((a) => /^-[a-zA-Z]*i/.test(a) || a.startsWith('--in-place'))) return [];
  const { operands, scripts, quiet } = optionsOf(program, args);
  if (program === 'sed') {
    if (!quiet) return [];
    const script = scripts[0] ?? operands.shift();
    const range = script !== undefined ? sedRange(script) : undefined;
    if (!range) return [];
    return operands.map((path) => ({ path, ...range }));
  }
  // A glob names no one file; stdin and devices are no file's text.
  const files = operands.filter((p) => p !== '-' && !p.startsWith('/dev/') && !/[*?[]/.test(p));
  if (program === 'head') {
    const n = headCount(args);
    return files.map((path) => (n === undefined ? { path, partial: true } : { path, from: 1, to: n }));
  }
  if (program === 'tail') return files.map((path) => ({ path, partial: true }));
  return files.map((path) => ({ path }));
}

/** The numbers of a tool's line arguments: `offset`/`limit`, `view_range: [a, b]`, `start_line`/`end_line`. */
function toolRange(a: Record<string, unknown>): { from?: number; to?: number } {
  const num = (v: unknown) =>
    typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined;
  const range = Array.isArray(a.view_range) ? a.view_range.map(num) : [];
  const from = range[0] ?? num(a.offset) ?? num(a.start_line) ?? num(a.startLine) ?? num(a.line_start);
  const limit = num(a.limit);
  const last =
    range[1] !== undefined && range[1] >= 0 ? range[1] : (num(a.end_line) ?? num(a.endLine) ?? num(a.line_end));
  const to = last ?? (limit !== undefined ? (from ?? 1) + limit - 1 : undefined);
  if (from === undefined && to === undefined) return {};
  return to === undefined ? { from: Math.max(1, from!) } : { from: Math.max(1, from ?? 1), to };
}

/**
 * What a call shows of files: a read tool's file (with the lines its arguments name), an editor's `view`, SWE-agent's
 * `open` (a window), a shell command that prints files as they are (see shellReads). Empty for a call whose result
 * says it failed, and for everything else (a search prints hits, not a file).
 */
export function fileReads(call: ToolCallPart, r?: ToolResultPart): FileRead[] {
  if (r?.isError) return [];
  const command = commandOf(call);
  const info = callInfo(call, r);
  if (command !== undefined) {
    if (info.kind === 'read') return info.reads.map((path) => ({ path, partial: true }));
    if (r && recordedExit(r) !== undefined && recordedExit(r) !== 0) return [];
    return shellReads(command)
      .filter((x) => x.text)
      .map(({ text: _text, ...x }) => x);
  }
  if (info.kind !== 'read') return [];
  const range = info.reads.length === 1 ? toolRange(args(call)) : {};
  return info.reads.map((path) => ({ path, ...range }));
}

/** What a call is, for a summary: its kind, command, the files it reads and the changes it makes. */
export interface CallInfo {
  kind: 'command' | 'read' | 'write' | 'search' | 'other';
  command?: string;
  /** Files it reads (path arguments of a read, or the files a reading command names). */
  reads: string[];
  changes: FileChange[];
  /** Files it names otherwise (a search's directory, a command's operands). */
  names: string[];
  /** Paths given as the tool's file arguments (`path`, `file_path` …): files whatever they look like. */
  argPaths: string[];
}

/** SWE-agent's commands (its ACI): `open`, `create`, `edit N:M … end_of_edit`, `goto`, `scroll_*`, `search_*`. */
function aciCommand(cmd: string, r: ToolResultPart | undefined): Omit<CallInfo, 'argPaths'> | undefined {
  const open = /^open\s+"?([^"\s]+)"?(?:\s+\d+)?\s*$/.exec(cmd);
  if (open) return { kind: 'read', command: cmd, reads: [open[1]!], changes: [], names: [] };
  const create = /^create\s+"?([^"\s]+)"?\s*$/.exec(cmd);
  if (create)
    return { kind: 'write', command: cmd, reads: [], changes: [written(create[1]!, '', 'create')], names: [] };
  const edit = /^(?:edit\s+\d+(?::\d+)?|insert\s+\d+)\s*\n([\s\S]*?)\n(?:end_of_edit|end_of_insert)\s*$/.exec(cmd);
  if (edit) {
    const text = r ? resultText(r) : '';
    // The file it changed is the one open at the time, which the answer names; a refused edit changed nothing.
    if (!r || /^\s*Your proposed edit has introduced new syntax error/.test(text))
      return { kind: 'other', command: cmd, reads: [], changes: [], names: [] };
    const path = /^\[File: (\S+) \(\d+ lines total\)\]/m.exec(text)?.[1];
    return path
      ? { kind: 'write', command: cmd, reads: [], changes: [{ ...written(path, edit[1]!), how: 'edit' }], names: [] }
      : { kind: 'other', command: cmd, reads: [], changes: [], names: [] };
  }
  return undefined;
}

/** Reads, writes and commands of one call, from its arguments (and, for SWE-agent's edits, its answer). */
export function callInfo(call: ToolCallPart, r?: ToolResultPart): CallInfo {
  // A compaction summarizes overlapping spans several times: what a call did is worked out once per call and result.
  const cached = infoCache.get(call);
  if (cached && cached.result === r) return cached.info;
  const info = callInfoOf(call, r) as CallInfo;
  info.argPaths = strings(args(call), PATH_KEYS).filter((p) => p.trim() && !p.includes('\n') && p.length <= 400);
  infoCache.set(call, { result: r, info });
  return info;
}

const infoCache = new WeakMap<ToolCallPart, { result: ToolResultPart | undefined; info: CallInfo }>();

function callInfoOf(call: ToolCallPart, r?: ToolResultPart): Omit<CallInfo, 'argPaths'> {
  const a = args(call);
  const op = editorOperation(call);
  const paths = strings(a, PATH_KEYS).filter((p) => p.trim() && !p.includes('\n'));
  // A patch as the whole input (Codex's apply_patch), or inside a command.
  const raw = typeof call.arguments === 'string' ? call.arguments : firstString(a, ['patch', 'input', 'diff']);
  if (raw && /\*\*\* (?:Update|Add|Delete) File: |^\+\+\+ /m.test(raw))
    return { kind: 'write', reads: [], changes: patchChanges(raw), names: [] };
  const command = commandOf(call);
  if (command !== undefined) {
    const aci = aciCommand(command, r);
    if (aci) return aci;
    if (/\*\*\* Begin Patch/.test(command))
      return { kind: 'write', command, reads: [], changes: patchChanges(command), names: [] };
    const changes = commandWrites(command);
    const changed = new Set(changes.map((c) => c.path));
    // The files its programs print (their operands, past `cd DIR &&` and beside other statements), and the other
    // paths it names.
    const reads = [...new Set(shellReads(command).map((x) => x.path))].filter((p) => !changed.has(p));
    const read = new Set(reads);
    const named = pathsIn(command).filter((p) => !changed.has(p) && !read.has(p));
    return { kind: 'command', command, reads, changes, names: named };
  }
  const verb = op ?? call.name;
  const path = paths[0];
  const oldText = firstString(a, OLD_KEYS);
  const newText = firstString(a, NEW_KEYS);
  const body = firstString(a, BODY_KEYS);
  if (path && (op ? /^(?:create|str_replace|insert|undo_edit|write|edit)$/.test(op) : WRITE_NAME.test(call.name))) {
    const edits = Array.isArray(a.edits) ? (a.edits as unknown[]).filter((e) => e && typeof e === 'object') : [];
    if (edits.length > 0) {
      const c: FileChange = { path, how: 'edit', removed: [], added: [] };
      for (const e of edits as Record<string, unknown>[]) {
        const d = lineDiff(path, firstString(e, OLD_KEYS) ?? '', firstString(e, NEW_KEYS) ?? '');
        c.removed.push(...d.removed);
        c.added.push(...d.added);
      }
      return { kind: 'write', reads: [], changes: [c], names: [] };
    }
    if (oldText !== undefined || (op === 'insert' && newText !== undefined))
      return { kind: 'write', reads: [], changes: [lineDiff(path, oldText ?? '', newText ?? '')], names: [] };
    if (body !== undefined || newText !== undefined)
      return {
        kind: 'write',
        reads: [],
        changes: [
          written(path, body ?? newText ?? '', op === 'create' || /create/i.test(call.name) ? 'create' : 'write'),
        ],
        names: [],
      };
    return { kind: 'write', reads: [], changes: [{ path, how: 'edit', removed: [], added: [] }], names: [] };
  }
  // SWE-agent's function-calling edit acts on the file open at the time, which its answer names.
  if (!path && (oldText !== undefined || newText !== undefined) && WRITE_NAME.test(call.name) && r && !r.isError) {
    const opened = /^\[File: (\S+) \(\d+ lines total\)\]/m.exec(resultText(r))?.[1];
    if (opened)
      return { kind: 'write', reads: [], changes: [lineDiff(opened, oldText ?? '', newText ?? '')], names: [] };
  }
  if (path && (op === 'view' || READ_NAME.test(verb))) return { kind: 'read', reads: paths, changes: [], names: [] };
  if (SEARCH_NAME.test(call.name)) return { kind: 'search', reads: [], changes: [], names: paths };
  if (paths.length > 0) return { kind: 'other', reads: [], changes: [], names: paths };
  return { kind: 'other', reads: [], changes: [], names: [] };
}

// ---------------------------------------------------------------------------------------------------------------------
// What a file holds: its definitions, for a file read or written

/** A line-number prefix a read tool puts before each line (`   12→`, `12:`, `12\t`, `  12 | `). */
const LINE_NO = /^\s*\d+(?:→|\t|: | \| ?|:(?=\S))/;

const MODIFIER = /^(?:public|private|protected|internal|static|final|abstract|override|open|sealed|data|suspend)/;
const isWordChar = (c: string) => /\w/.test(c);
/** A character of a type as the declaration below writes it: `[\w<>[\],.? ]`. */
const isTypeChar = (c: string) => isWordChar(c) || '<>[],.? '.includes(c);

/**
 * A declaration after modifiers (Java, Kotlin, C#, Swift): what
 * `/^\s*(?:(?:public|…|suspend)\s+)+(?:[\w<>[\],.? ]+\s+)?\w+\s*[({]/` matches, in one scan of the line (the regular
 * expression splits a run of modifiers and spaces between its groups in exponentially many ways). The modifiers chain
 * one way; after any of them (past at least one space of its run) the rest must read as an optional type and spaces, a
 * name, optional spaces and the first `(` or `{` of the line.
 */
function modifiedDefinition(line: string): boolean {
  // Where the rest may start: after each modifier of the chain, within the spaces that follow it (at least one).
  const starts: [number, number][] = [];
  let at = leadingRunEnd(line, isSpace);
  for (;;) {
    const m = MODIFIER.exec(line.slice(at, at + 9));
    if (!m) break;
    const spaces = at + m[0].length;
    const next = spaces + leadingRunEnd(line.slice(spaces), isSpace);
    if (next === spaces) break;
    starts.push([spaces + 1, next]);
    at = next;
  }
  if (starts.length === 0) return false;
  const open = line.slice(at).search(/[({]/);
  if (open === -1) return false;
  // The name: the word before the `(` or `{` and the spaces before it.
  const nameEnd = trailingRunStart(line.slice(0, at + open), isSpace);
  const name = trailingRunStart(line.slice(0, nameEnd), isWordChar);
  if (name === nameEnd) return false;
  // Before the name: spaces, and before them type characters (the type may end in spaces of its own).
  const typeEnd = trailingRunStart(line.slice(0, name), isSpace);
  let lastOther = -1;
  for (let i = typeEnd - 1; i >= 0 && lastOther === -1; i--) if (!isTypeChar(line[i]!)) lastOther = i;
  return starts.some(([from, to]) => {
    if (from <= name && name <= to) return true; // the name right after the modifiers
    if (typeEnd === name) return false; // a type needs spaces before the name
    const last = Math.min(to, name - 1);
    // A type of type characters, then the spaces before the name.
    if (Math.min(last, typeEnd - 1) >= Math.max(from, lastOther + 1)) return true;
    // Only spaces between: a type of one space, then more.
    for (let y = Math.max(from, typeEnd); y <= Math.min(last, name - 2); y++) if (line[y] === ' ') return true;
    return false;
  });
}

const DEFINITION: { test(line: string): boolean }[] = [
  // JS/TS
  /^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|interface|type|enum|namespace)\s+[\w$]+/,
  /^\s*(?:export\s+)(?:const|let|var)\s+[\w$]+/,
  // Python, Ruby, Elixir, Rust, Go, Kotlin, Swift, Scala, C#, Java
  /^\s*(?:async\s+)?(?:def|class)\s+\w+/,
  /^\s*(?:defmodule|defp?|defmacrop?|defstruct|defprotocol|defimpl)\s+[\w.?!]+/,
  /^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:unsafe\s+)?(?:fn|struct|enum|trait|impl|mod)\s+\w+/,
  /^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:const|static)\s+[A-Z_][A-Z0-9_]*\s*:/,
  /^\s*func\s+(?:\([^)]*\)\s*)?\w+/,
  { test: modifiedDefinition },
  /^\s*(?:fun|val|var|object|trait|case class)\s+\w+/,
  // SQL
  /^\s*CREATE\s+(?:TABLE|INDEX|VIEW|FUNCTION|TYPE)\s+/i,
];
/** A document's outline is its headings. */
const HEADING = /^#{1,3}\s+\S/;
const DOCUMENT = /\.(?:md|mdx|markdown|rst|txt)$/i;

/**
 * The definition lines of a file's text (functions, classes, modules, types; a document's headings), in order,
 * trimmed. `path` tells a document from code (a `#` line is a heading in one and a comment in the other).
 */
export function definitions(text: string, path = '', max = 40): string[] {
  return definitionsOf(text, path, max);
}

function definitionsOf(text: string, path: string, max: number): string[] {
  const out: string[] = [];
  const patterns = DOCUMENT.test(path) ? [HEADING] : DEFINITION;
  for (const raw of clean(text.slice(0, 200_000)).split('\n')) {
    const line = raw.replace(LINE_NO, '');
    if (line.length > 300 || !patterns.some((re) => re.test(line))) continue;
    const t = line.trim();
    out.push(clip(t.endsWith('{') ? t.slice(0, -1).trimEnd() : t, 140));
    if (out.length >= max) break;
  }
  return out;
}

/** A read result's text without its line-number prefixes. */
export function plainLines(text: string): string[] {
  return clean(text)
    .split('\n')
    .map((l) => l.replace(LINE_NO, ''));
}

/**
 * A change a call made to a file, whole enough to apply to its text: strings replaced (an edit tool's old and new
 * text, a patch hunk's lines), lines replaced (SWE-agent's `edit N:M`), text inserted after a line, or the file
 * written whole. Unlike `FileChange`, nothing is capped.
 */
export type TextChange =
  | { path: string; how: 'replace'; old: string; new: string; all?: boolean }
  | { path: string; how: 'lines'; from: number; to: number; text: string }
  | { path: string; how: 'insert'; after: number; text: string }
  | { path: string; how: 'write'; text: string };

/** The changes of one call as text to apply, in order; empty where the record does not say them whole. */
export function textChanges(call: ToolCallPart, r?: ToolResultPart): TextChange[] {
  const info = callInfo(call, r);
  if (info.changes.length === 0) return [];
  const a = args(call);
  const raw = typeof call.arguments === 'string' ? call.arguments : firstString(a, ['patch', 'input', 'diff']);
  const command = commandOf(call);
  const patch = raw && /\*\*\* (?:Update|Add|Delete) File: |^\+\+\+ /m.test(raw) ? raw : command;
  if (patch && /\*\*\* (?:Update|Add) File: |^\+\+\+ /m.test(patch)) return patchHunks(patch);
  if (command !== undefined) {
    const edit = /^edit\s+(\d+)(?::(\d+))?\s*\n([\s\S]*?)\n?end_of_edit\s*$/.exec(command);
    const path = info.changes[0]!.path;
    if (edit) return [{ path, how: 'lines', from: Number(edit[1]), to: Number(edit[2] ?? edit[1]), text: edit[3]! }];
    return [];
  }
  const path = info.changes[0]!.path;
  const edits = Array.isArray(a.edits) ? (a.edits as unknown[]).filter((e) => e && typeof e === 'object') : [];
  const pairs = (edits.length > 0 ? (edits as Record<string, unknown>[]) : [a]).map((e) => ({
    old: firstString(e, OLD_KEYS),
    new: firstString(e, NEW_KEYS),
    all: e.replace_all === true || e.replaceAll === true || e['replace-all'] === true,
  }));
  if (pairs.every((p) => p.old !== undefined && p.old !== '' && p.new !== undefined))
    return pairs.map((p) => ({ path, how: 'replace', old: p.old!, new: p.new!, ...(p.all ? { all: true } : {}) }));
  const line = a.insert_line ?? a.line;
  const newText = firstString(a, NEW_KEYS);
  if (typeof line === 'number' && newText !== undefined) return [{ path, how: 'insert', after: line, text: newText }];
  const body = firstString(a, BODY_KEYS);
  if (info.changes[0]!.how === 'write' || info.changes[0]!.how === 'create')
    if (body !== undefined) return [{ path, how: 'write', text: body }];
  return [];
}

/** The hunks of an apply_patch text or a unified diff as replacements (context and removed lines → context and added). */
function patchHunks(text: string): TextChange[] {
  const out: TextChange[] = [];
  let path: string | undefined;
  let adding = false;
  let oldLines: string[] = [];
  let newLines: string[] = [];
  const flush = () => {
    if (path && (oldLines.length > 0 || newLines.length > 0)) {
      if (adding) out.push({ path, how: 'write', text: newLines.join('\n') });
      else if (oldLines.some((l) => l.trim()))
        out.push({ path, how: 'replace', old: oldLines.join('\n'), new: newLines.join('\n') });
    }
    oldLines = [];
    newLines = [];
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const header = /^\*\*\* (Update|Add|Delete) File: (.+?)\s*$/.exec(l);
    const diff = /^\+\+\+ (?:b\/)?(\S+)/.exec(l);
    if (header || (diff && i > 0 && lines[i - 1]!.startsWith('--- '))) {
      flush();
      path = header ? header[2]! : diff![1]!;
      adding = header?.[1] === 'Add';
      if (header?.[1] === 'Delete') path = undefined;
    } else if (/^(?:@@|\*\*\* End)/.test(l) || /^--- /.test(l)) flush();
    else if (path && /^[ +-]/.test(l)) {
      if (l[0] !== '+') oldLines.push(l.slice(1));
      if (l[0] !== '-') newLines.push(l.slice(1));
    }
  }
  flush();
  return out;
}
