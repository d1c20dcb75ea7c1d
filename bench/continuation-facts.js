/**
 * What the next turn uses, measured independently of abridge's own extractor (src/compaction/summarizers/ is not
 * imported: its regexes would grade themselves). Used by bench/continuation.js.
 *
 * A cut point is a prefix of a session that ends just before a real assistant step. Its *continuation* is what the
 * agent did next, as recorded: the assistant messages from the cut up to the next person's message — the text they
 * wrote and the arguments of the tools they called (not the results those calls got back, which are new). From it come
 * the *facts* the next turn used:
 *   - path:       a path argument of a tool call, or a path-shaped token (a directory and an extension, or a name with
 *                 a common extension) in the text or arguments;
 *   - command:    the first line of a shell command it ran;
 *   - identifier: a code-shaped name of 6+ characters (snake_case, camelCase, PascalCase with a hump, ALL_CAPS with an
 *                 underscore, or letters with digits) in the text or arguments;
 *   - number:     a number of 3+ digits;
 *   - version:    x.y.z (or vX.Y);
 *   - hex:        a hex id of 7–40 characters with a digit and a letter.
 * A fact counts only when it is visible in the uncompacted view of the prefix (the model could have known it); it is
 * *long-range* when it is not in the newest 10% (by characters) of that view.
 *
 * State probes of the prefix: the last file written and a line of what was written; the last failing call (its record
 * says so: an error flag or an exit code the harness recorded) and its first error line; the latest person's message
 * verbatim.
 */

import { messageText as messageTextOf } from './retention.js';

export const KINDS = ['path', 'command', 'identifier', 'number', 'version', 'hex'];
export const CONTENT_KINDS = new Set(['identifier', 'number', 'version', 'hex']);

const SHELL_TOOL =
  /^(bash|shell|sh|zsh|exec|exec_command|run|run_command|run_terminal_cmd|terminal|execute|execute_bash|command|local_shell|container\.exec|shell_command|powershell)$/i;
const COMMAND_ARG = ['command', 'cmd', 'script', 'commands'];
const PATH_ARG = /path|file|dir|notebook/i;
const EXT =
  'ts|tsx|js|jsx|mjs|cjs|py|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|md|mdx|json|jsonl|yaml|yml|toml|ini|cfg|conf|sql|sh|bash|zsh|txt|csv|html|css|scss|vue|svelte|lock|xml|env|ex|exs|heex|eex|lua|dart|scala|gradle|tf|proto|log|db|png|jpg|svg|pdf|patch|diff|traj';
// A directory part and an extension, or a bare name with a common extension; not inside a URL or a longer token.
const PATH_TOKEN = new RegExp(
  `(?<![\\w@:/.~-])((?:~|\\.{1,2})?\\/?(?:[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*\\/)+[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*\\.[A-Za-z][A-Za-z0-9]{0,7}|[A-Za-z0-9_][A-Za-z0-9_.-]*\\.(?:${EXT}))(?![\\w/])`,
  'g',
);
const IDENT = /(?<![\w$])[A-Za-z_$][\w$]{5,}(?![\w$])/g;
const NUMBER = /(?<![\w.,])\d{3,}(?![\w.]\w)/g;
const VERSION = /(?<![\w.])v?\d+\.\d+\.\d+(?:[-+.][\w.]+)?(?![\w])|(?<![\w.])v\d+\.\d+(?![\w.])/g;
const HEX = /(?<![\w-])[0-9a-f]{7,40}(?![\w-])/g;
const ERROR_REPORT =
  /^(?:[\w.]*(?:Error|Exception)\b|error\b|fatal\b|panic\b|FAIL\b|Traceback\b)|\b(?:command not found|No such file or directory|Permission denied)\b/i;
const WRITE_TOOL = /write|edit|create|patch|replace|insert|notebook/i;
const CONTENT_ARG = ['new_string', 'newText', 'new_str', 'content', 'file_text', 'text', 'contents', 'code'];

/**
 * `CONTINUATION_PLAIN_WORDS=1` counts every word of 6+ characters as an identifier, prose included (a looser reading
 * of the measure, to check that the figures do not hang on what "identifier" means).
 */
const PLAIN_WORDS = process.env.CONTINUATION_PLAIN_WORDS === '1';

/** A code-shaped name: not a plain word of prose. */
function codeShaped(s) {
  if (/^[0-9a-f]+$/.test(s) && /\d/.test(s)) return false; // a hex id
  return /_/.test(s) || /[a-z][A-Z]/.test(s) || /[A-Z]{2,}[a-z]/.test(s) || (/\d/.test(s) && /[A-Za-z]{2}/.test(s));
}

export const normalize = (s) => s.replace(/\s+/g, ' ').trim();

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g;

function resultText(p) {
  return (p.content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

function textOf(m) {
  return m.parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

function stringArgs(args, keyTest) {
  const out = [];
  if (!args || typeof args !== 'object') return out;
  for (const [k, v] of Object.entries(args)) {
    if (!keyTest(k)) continue;
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string') out.push(x);
  }
  return out;
}

/** Every string in an argument value, at any depth (edits: [{old_string, new_string}], todos…). */
function allStrings(v, out = []) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) allStrings(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) allStrings(x, out);
  return out;
}

export function commandOf(call) {
  if (typeof call.arguments === 'string') return SHELL_TOOL.test(call.name) ? call.arguments : undefined;
  const a = call.arguments;
  if (!a || typeof a !== 'object') return undefined;
  for (const k of COMMAND_ARG) {
    const v = a[k];
    if (typeof v === 'string' && v.trim()) {
      // An editor tool's operation (`view`, `str_replace`) beside a path is not a shell command.
      if (!SHELL_TOOL.test(call.name) && /^[a-z_]+$/.test(v) && stringArgs(a, (x) => PATH_ARG.test(x)).length > 0)
        return undefined;
      return v;
    }
    if (Array.isArray(v) && v.length && v.every((x) => typeof x === 'string')) {
      // Codex's ["bash", "-lc", "cmd"]
      const last = v[v.length - 1];
      return v.length >= 3 && /^(ba|z)?sh$/.test(v[0]) ? last : v.join(' ');
    }
  }
  return undefined;
}

const firstLine = (s) =>
  normalize(
    s
      .trim()
      .split('\n')
      .find((l) => l.trim()) ?? '',
  );

/** Text of a message as the model reads it, for lookups (an earlier turn's reasoning is not sent again). */
export const messageText = (m) => messageTextOf(m, { thinking: false });

/** A view's text, normalized for lookups (JSON escapes of tool arguments undone, whitespace collapsed). */
export function haystackOf(texts) {
  const raw = texts.join('\n');
  return normalize(
    raw
      .replace(/\\n/g, '\n')
      .replace(/\\t/g, '\t')
      .replace(/\\"/g, '"')
      .replace(/\\\\/g, '\\')
      .replace(/ ⏎ /g, ' ')
      .replace(ANSI, ''),
  );
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Whether a fact is in a haystack: paths and commands as substrings, the rest as whole tokens. */
export function present(fact, hay) {
  if (fact.kind === 'path' || fact.kind === 'command') return hay.includes(fact.value);
  if (!hay.includes(fact.value)) return false;
  return new RegExp(`(?<![\\w$])${escapeRegExp(fact.value)}(?![\\w$])`).test(hay);
}

function scanText(text, add) {
  const t = text.replace(ANSI, '');
  const paths = [];
  for (const m of t.matchAll(PATH_TOKEN)) {
    const p = m[1].replace(/[.,:;]+$/, '');
    if (p.length >= 4 && !/^\d+(\.\d+)+$/.test(p)) {
      add('path', p);
      paths.push(p);
    }
  }
  // Identifiers and numbers outside the paths (a path's stem is counted as the path).
  let rest = t;
  for (const p of paths) rest = rest.split(p).join(' ');
  for (const m of rest.matchAll(VERSION)) add('version', m[0]);
  rest = rest.replace(VERSION, ' ');
  for (const m of rest.matchAll(HEX)) if (/\d/.test(m[0]) && /[a-f]/.test(m[0])) add('hex', m[0]);
  for (const m of rest.matchAll(IDENT)) if (PLAIN_WORDS || codeShaped(m[0])) add('identifier', m[0]);
  for (const m of rest.matchAll(NUMBER)) add('number', m[0]);
}

/** The facts the continuation's messages used (deduplicated by kind and value). */
export function continuationFacts(messages) {
  const seen = new Map();
  const add = (kind, value) => {
    const v = kind === 'command' ? value.slice(0, 80) : value;
    if (!v || v.length < 3) return;
    const key = `${kind}\u0000${v}`;
    if (!seen.has(key)) seen.set(key, { kind, value: v });
  };
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const p of m.parts) {
      if (p.type === 'text') scanText(p.text, add);
      else if (p.type === 'tool-call') {
        for (const v of stringArgs(p.arguments, (k) => PATH_ARG.test(k)))
          if (v.length >= 3 && v.length <= 300 && !v.includes('\n') && /[/.]/.test(v)) add('path', v.trim());
        const cmd = commandOf(p);
        if (cmd && firstLine(cmd)) add('command', firstLine(cmd));
        for (const s of typeof p.arguments === 'string' ? [p.arguments] : allStrings(p.arguments)) scanText(s, add);
      }
    }
  }
  return [...seen.values()];
}

/** Whether a person wrote this user message (not the harness: slash commands, notifications, continuations). */
const HARNESS =
  /^\s*(?:\/[\w:-]+(\s|$)|<(?:command-|local-command|task-notification|system-reminder|user-prompt-submit-hook|environment_context|user_instructions|turn_aborted|bash-)|\[Request interrupted|Caveat: The messages below|This session is being continued|# AGENTS\.md|<INSTRUCTIONS>|Please continue working on the task)/;
export function isPerson(m) {
  if (m.role !== 'user' || m.synthetic || m.parts.some((p) => p.type === 'compaction')) return false;
  const t = textOf(m);
  return t.trim() !== '' && !HARNESS.test(t);
}

/** Failed by the record: the result's error flag, or an exit code the harness wrote in its header. */
export function recordedFailure(p) {
  if (p.isError) return true;
  const head = resultText(p).slice(0, 400);
  const m =
    /^(?:Chunk ID: \S+\n)?(?:Wall time: [^\n]*\n)?Process exited with code (-?\d+)/.exec(head) ??
    /^Exit code:? (-?\d+)\s*$/m.exec(head.split('\n')[0] ?? '') ??
    /^\{"output":[\s\S]*"metadata":\{"exit_code":(-?\d+)/.exec(head);
  return m !== null && m[1] !== '0';
}

function errorLine(text) {
  const lines = text
    .replace(ANSI, '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  // Past a harness header (Codex: Chunk ID, Wall time, exit line, Output:).
  const out = lines.indexOf('Output:');
  // A harness's own header and trailer lines say how it ended, not what went wrong.
  const body = (out !== -1 && out < 6 ? lines.slice(out + 1) : lines).filter(
    (l) => !/^(?:Exit code -?\d+|\(?(?:Process|Command) exited with code -?\d+\)?|Chunk ID:.*|Wall time:.*)$/.test(l),
  );
  // An error report's own line (`Error: …`, `fatal: …`, a traceback, a shell's `…: command not found`), else the first
  // line (a failed call's first words say what went wrong; a line further down with the word "error" in it may be any
  // line of its output).
  return body.find((l) => ERROR_REPORT.test(l)) ?? body.find((l) => l.length >= 6) ?? body[0];
}

function lastLineOf(content) {
  const lines = content
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length >= 8 && /[A-Za-z0-9]/.test(l));
  return lines[lines.length - 1];
}

/** What a write or edit call put in a file: its path and the last substantial line it wrote. */
function written(call) {
  const a = call.arguments;
  const cmd = commandOf(call);
  if (cmd !== undefined) {
    // SWE-agent's `edit N:M` … `end_of_edit`, or a heredoc into a file.
    const edit = /^edit \d+(?::\d+)?\n([\s\S]*?)\nend_of_edit/.exec(cmd);
    if (edit) return { path: undefined, line: lastLineOf(edit[1]) };
    const heredoc = /cat\s*>+\s*(\S+)\s*<<\s*'?(\w+)'?\n([\s\S]*?)\n\2/.exec(cmd);
    if (heredoc) return { path: heredoc[1], line: lastLineOf(heredoc[3]) };
    const patch = /\*\*\* (?:Update|Add) File: (\S+)\n([\s\S]*)/.exec(cmd);
    if (patch) {
      const plus = patch[2]
        .split('\n')
        .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
        .map((l) => l.slice(1));
      return { path: patch[1], line: lastLineOf(plus.join('\n')) };
    }
    return undefined;
  }
  if (typeof a === 'string') {
    const patch = /\*\*\* (?:Update|Add) File: (\S+)\n([\s\S]*)/.exec(a);
    if (!patch) return undefined;
    const plus = patch[2]
      .split('\n')
      .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
      .map((l) => l.slice(1));
    return { path: patch[1], line: lastLineOf(plus.join('\n')) };
  }
  if (!a || typeof a !== 'object') return undefined;
  const op = typeof a.command === 'string' ? a.command : undefined;
  if (!WRITE_TOOL.test(op && /^[a-z_]+$/.test(op) ? op : call.name)) return undefined;
  const path = stringArgs(a, (k) => PATH_ARG.test(k))[0];
  let content = CONTENT_ARG.map((k) => a[k]).find((v) => typeof v === 'string');
  if (content === undefined && Array.isArray(a.edits)) {
    const last = a.edits[a.edits.length - 1];
    content = last?.new_string ?? last?.newText ?? last?.new_str;
  }
  if (typeof content !== 'string') return undefined;
  const line = lastLineOf(content);
  return line ? { path, line } : undefined;
}

/**
 * The state probes of a prefix view: the last write (path and line), the last failing call (what it was and its first
 * error line), the latest person's message. Each undefined when the prefix has none.
 */
export function stateProbes(view) {
  const results = new Map();
  for (const v of view) for (const p of v.message.parts) if (p.type === 'tool-result') results.set(p.callId, p);
  let lastWrite;
  let lastFailure;
  let latest;
  for (const v of view) {
    const m = v.message;
    if (isPerson(m)) latest = textOf(m);
    if (m.role !== 'assistant') continue;
    for (const p of m.parts) {
      if (p.type !== 'tool-call') continue;
      const r = results.get(p.id);
      const w = r && !recordedFailure(r) ? written(p) : undefined;
      if (w?.line) lastWrite = w;
      if (r && recordedFailure(r)) {
        const cmd = commandOf(p);
        const what = cmd
          ? firstLine(cmd).slice(0, 60)
          : (stringArgs(p.arguments, (k) => PATH_ARG.test(k))[0] ?? undefined);
        const line = errorLine(resultText(r));
        if (line) lastFailure = { what, line: normalize(line).slice(0, 80) };
      }
    }
  }
  return {
    lastWrite: lastWrite ? { path: lastWrite.path, line: normalize(lastWrite.line).slice(0, 100) } : undefined,
    lastFailure,
    latest: latest !== undefined ? normalize(latest) : undefined,
  };
}

/** Which probes a view's haystack passes. */
export function probesKept(probes, hay) {
  return {
    lastWrite: probes.lastWrite
      ? (!probes.lastWrite.path || hay.includes(probes.lastWrite.path)) && hay.includes(probes.lastWrite.line)
      : undefined,
    lastFailure: probes.lastFailure
      ? (!probes.lastFailure.what || hay.includes(normalize(probes.lastFailure.what))) &&
        hay.includes(probes.lastFailure.line)
      : undefined,
    latest: probes.latest !== undefined ? hay.includes(probes.latest) : undefined,
  };
}

/**
 * The inventory policy's list: every path, command (first line), person's message opening and failure line of a view,
 * in order, each once — what a list of names keeps. The measure must not reward it.
 */
export function inventoryLines(view) {
  const seen = new Set();
  const out = [];
  const add = (s) => {
    const t = normalize(s);
    if (t && !seen.has(t)) {
      seen.add(t);
      out.push(t);
    }
  };
  const results = new Map();
  for (const v of view) for (const p of v.message.parts) if (p.type === 'tool-result') results.set(p.callId, p);
  for (const v of view) {
    const m = v.message;
    if (isPerson(m)) add(`User: ${textOf(m).slice(0, 200)}`);
    const text = m.role === 'assistant' || isPerson(m) ? textOf(m) : '';
    for (const x of text.matchAll(PATH_TOKEN)) add(`File: ${x[1]}`);
    for (const p of m.parts) {
      if (p.type !== 'tool-call') continue;
      for (const x of stringArgs(p.arguments, (k) => PATH_ARG.test(k)))
        if (!x.includes('\n') && x.length <= 300) add(`File: ${x}`);
      const cmd = commandOf(p);
      if (cmd) add(`Command: ${firstLine(cmd)}`);
      const r = results.get(p.id);
      if (r && recordedFailure(r)) {
        const line = errorLine(resultText(r));
        if (line) add(`Failed: ${line.slice(0, 200)}`);
      }
    }
  }
  return out;
}
