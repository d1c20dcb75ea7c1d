/**
 * Retention of what a compaction archived, measured independently of abridge's own extractor
 * (src/compaction/summarizers/extract.ts is deliberately not used: its own regexes would grade itself).
 *
 * The archived part: the messages of the view before compaction that are no longer in the view after it verbatim
 * (same message object, or same text). From those it extracts
 *   - paths:        values of path-like tool arguments (keys containing path/file/dir), `*** Update File: x` patch
 *                   headers, and path-like tokens (a directory and an extension: `src/a.ts`, `/x/y.py`, `./z.md`)
 *                   in user and assistant text;
 *   - commands:     the command of shell-like tool calls (`command`/`cmd`/`script` arguments, arrays joined by
 *                   spaces, or a raw string argument);
 *   - errors:       up to 3 error-looking lines of each tool result that failed or reports an error;
 *   - instructions: the text of human user messages (not synthetic, not a summary);
 *   - numbers:      numbers of two or more digits (with a unit or % when they have one) in user and assistant text;
 * and counts how many appear anywhere in the compacted view's text (summaries + remaining messages, whitespace
 * collapsed). A command counts when its first 60 characters appear; an error line its first 100; an instruction its
 * first 200 (`instructionsWhole` counts only whole instructions); a number as a whole token.
 */

const SHELL_TOOL =
  /^(bash|shell|sh|zsh|exec|exec_command|run|run_command|run_terminal_cmd|terminal|execute|command|local_shell|container\.exec)$/i;
const COMMAND_ARG = ['command', 'cmd', 'script'];
const PATH_ARG = /path|file|dir|notebook/i;
const PATCH_HEADER = /^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm;
// A directory part and an extension; not inside a URL or a longer token.
const PATH_TOKEN =
  /(?<![\w@:/.~-])((?:~|\.{1,2})?\/?(?:[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*\/)+[A-Za-z0-9_@+-][A-Za-z0-9_@.+-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/])/g;
const ERROR_WORD =
  /\b(error|errors|exception|traceback|failed|failure|fatal|panic|denied|refused|not found|no such file|segmentation fault|cannot|unable to)\b/i;
// Two or more digits, optionally with decimals, thousands separators, or a unit; not part of a word, path or version.
const NUMBER_TOKEN = /(?<![\w./:#-])(\d{1,3}(?:,\d{3})+|\d{2,})(?:\.\d+)?(?:%|ms|s|k|K|M|MB|KB|GB|x)?(?![\w./:-]*\w)/g;

export const normalize = (s) => s.replace(/\s+/g, ' ').trim();

function textParts(m) {
  return m.parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

function isHuman(m) {
  return m.role === 'user' && !m.synthetic && !m.parts.some((p) => p.type === 'compaction');
}

function resultText(p) {
  return (p.content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/** Everything the model reads in a message, as text (`thinking: false` leaves out reasoning, which providers drop). */
export function messageText(m, { thinking = true } = {}) {
  const out = [];
  for (const p of m.parts) {
    if (p.type === 'text' || (thinking && p.type === 'thinking')) out.push(p.text);
    else if (p.type === 'tool-call')
      out.push(`${p.name} ${typeof p.arguments === 'string' ? p.arguments : JSON.stringify(p.arguments)}`);
    else if (p.type === 'tool-result') out.push(resultText(p));
    else if (p.type === 'compaction') out.push(p.marker.summary);
  }
  return out.join('\n');
}

/** The text of a whole view, normalized for lookups (a summary's `⏎` stands for a newline of a command). */
export function viewHaystack(view) {
  // Tool arguments are JSON: unescape the common escapes so that a path or command in them reads as typed.
  const raw = view.map((v) => messageText(v.message)).join('\n');
  return normalize(raw.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\').replace(/ ⏎ /g, ' '));
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

function commandOf(call) {
  if (typeof call.arguments === 'string') return SHELL_TOOL.test(call.name) ? call.arguments : undefined;
  const a = call.arguments;
  if (!a || typeof a !== 'object') return undefined;
  for (const k of COMMAND_ARG) {
    const v = a[k];
    if (typeof v === 'string' && v.trim()) return v;
    if (Array.isArray(v) && v.length && v.every((x) => typeof x === 'string')) return v.join(' ');
  }
  return undefined;
}

function pathTokens(text) {
  const out = [];
  for (const m of text.matchAll(PATH_TOKEN)) out.push(m[1].replace(/[.,:;]+$/, ''));
  return out;
}

/** The items of each kind in archived messages (deduplicated). */
export function extractItems(messages) {
  const sets = {
    paths: new Set(),
    commands: new Set(),
    errors: new Set(),
    instructions: new Set(),
    numbers: new Set(),
  };
  for (const m of messages) {
    if (m.parts.some((p) => p.type === 'compaction')) continue; // an earlier summary: not conversation
    if (m.role === 'user' || m.role === 'assistant') {
      const text = textParts(m);
      if (isHuman(m) && text.trim()) sets.instructions.add(normalize(text));
      if (isHuman(m) || m.role === 'assistant') {
        for (const p of pathTokens(text)) sets.paths.add(p);
        for (const n of text.matchAll(NUMBER_TOKEN)) sets.numbers.add(n[0]);
      }
    }
    for (const p of m.parts) {
      if (p.type === 'tool-call') {
        for (const v of stringArgs(p.arguments, (k) => PATH_ARG.test(k)))
          if (v.length >= 2 && v.length <= 300 && !v.includes('\n')) sets.paths.add(v.trim());
        const argText = typeof p.arguments === 'string' ? p.arguments : stringArgs(p.arguments, () => true).join('\n');
        for (const h of argText.matchAll(PATCH_HEADER)) sets.paths.add(h[1].trim());
        const cmd = SHELL_TOOL.test(p.name) || typeof p.arguments === 'object' ? commandOf(p) : undefined;
        if (cmd && normalize(cmd)) sets.commands.add(normalize(cmd));
      } else if (p.type === 'tool-result') {
        const text = resultText(p);
        if (!p.isError && !ERROR_WORD.test(text.slice(0, 20_000))) continue;
        let n = 0;
        for (const line of text.split('\n')) {
          const l = normalize(line);
          if (l.length < 8 || !ERROR_WORD.test(l)) continue;
          sets.errors.add(l.slice(0, 200));
          if (++n >= 3) break;
        }
      }
    }
  }
  return Object.fromEntries(Object.entries(sets).map(([k, v]) => [k, [...v]]));
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** How many items of each kind are found in the haystack. */
export function retained(items, haystack) {
  const has = (s) => haystack.includes(s);
  return {
    paths: items.paths.filter(has).length,
    commands: items.commands.filter((c) => has(c.slice(0, 60))).length,
    errors: items.errors.filter((e) => has(e.slice(0, 100))).length,
    instructions: items.instructions.filter((i) => has(i.slice(0, 200))).length,
    instructionsWhole: items.instructions.filter(has).length,
    numbers: items.numbers.filter((n) => new RegExp(`(?<![\\w.])${escapeRegExp(n)}(?![\\w])`).test(haystack)).length,
  };
}

/** Messages of `before` that are not in `after` verbatim (same object, or same role and text). */
export function archivedMessages(before, after) {
  const objects = new Set(after.map((v) => v.message));
  const texts = new Set(after.map((v) => `${v.message.role}\u0000${messageText(v.message)}`));
  return before
    .filter((v) => !objects.has(v.message) && !texts.has(`${v.message.role}\u0000${messageText(v.message)}`))
    .map((v) => v.message);
}

export const KINDS = ['paths', 'commands', 'instructions', 'errors', 'numbers'];

/** Retention of one compaction: counts of archived items and of those retained, per kind. */
export function measureRetention(viewBefore, viewAfter) {
  const items = extractItems(archivedMessages(viewBefore, viewAfter));
  const found = retained(items, viewHaystack(viewAfter));
  const out = {};
  for (const k of [...KINDS, 'instructionsWhole'])
    out[k] = { total: items[k === 'instructionsWhole' ? 'instructions' : k].length, retained: found[k] };
  return out;
}

/** The harness's text in a user's turn (slash commands, notifications, an agent loop's automatic "continue"). */
const HARNESS =
  /^\s*(?:\/[\w:-]+(\s|$)|<(?:command-|local-command|task-notification|system-reminder|user-prompt-submit-hook|environment_context|user_instructions|turn_aborted|bash-)|\[Request interrupted|Caveat: The messages below|This session is being continued|# AGENTS\.md|<INSTRUCTIONS>|Please continue working on the task)/;

/** The latest message a person wrote as an instruction (not the harness's text in the user's turn). */
export function latestInstruction(view) {
  return [...view]
    .reverse()
    .find((v) => isHuman(v.message) && textParts(v.message).trim() && !HARNESS.test(textParts(v.message)));
}

/**
 * Whether the latest human instruction of `viewBefore` reaches the model byte-identical in `viewAfter` (its text
 * appears unchanged in some message). True when there was none.
 */
export function latestInstructionVerbatim(viewBefore, viewAfter) {
  const last = latestInstruction(viewBefore);
  if (!last) return true;
  const want = textParts(last.message);
  return viewAfter.some((v) => messageText(v.message).includes(want));
}

/**
 * The lines of the last `share` (by characters) of the conversation, newest message first: every line of the messages
 * wholly inside it and, of the message that crosses the mark, the lines that reach into it. Each message's lines come
 * with the share of its characters inside the window.
 */
function tailWindow(view, share) {
  const texts = view.map((v) => messageText(v.message));
  const total = texts.reduce((n, t) => n + t.length, 0);
  let left = total * share;
  const out = [];
  for (let i = texts.length - 1; i >= 0 && left > 0; i--) {
    const t = texts[i];
    let lines = t.split('\n');
    if (t.length > left) {
      const mark = t.length - left;
      let end = t.length;
      let from = lines.length;
      while (from > 0 && end > mark) end -= lines[--from].length + 1;
      lines = lines.slice(from);
    }
    out.push({ index: i, lines: lines.filter((l) => l.trim()), inside: Math.min(1, left / Math.max(1, t.length)) });
    left -= t.length;
  }
  return out;
}

/**
 * The most of the recent tail (as recentTailVerbatim measures it) any policy could keep in `room` tokens (the budget
 * after the prefix), spending all of it on the tail and keeping nothing else — not the first request, not a summary:
 * the tail's lines from the newest while they fit, each message's at its share of the message's tokens.
 * `tokens(message)` is in the same unit as `room`.
 */
export function recentTailCeiling(view, room, tokens, share = 0.1) {
  let lines = 0;
  let kept = 0;
  let left = Math.max(0, room);
  for (const w of tailWindow(view, share)) {
    const n = w.lines.length;
    const t = tokens(view[w.index].message) * w.inside;
    lines += n;
    kept += t <= left ? n : Math.floor((n * left) / Math.max(1, t));
    left = Math.max(0, left - t);
  }
  return { total: lines, retained: kept };
}

/**
 * The recent tail kept verbatim: of the non-blank lines of the last 10% (by characters) of the conversation before
 * compaction (of the message crossing the mark, the lines inside it), how many appear byte-identical as a line of the
 * view after it.
 */
export function recentTailExact(viewBefore, viewAfter, share = 0.1) {
  const lines = tailWindow(viewBefore, share).flatMap((w) => w.lines);
  const have = new Set(viewAfter.flatMap((v) => messageText(v.message).split('\n')));
  return { total: lines.length, retained: lines.filter((l) => have.has(l)).length };
}

/** The same, counting every line of the message that crosses the mark (the measure of earlier waves). */
export function recentTailVerbatim(viewBefore, viewAfter, share = 0.1) {
  const texts = viewBefore.map((v) => messageText(v.message));
  const total = texts.reduce((n, t) => n + t.length, 0);
  let acc = 0;
  const lines = [];
  for (let i = texts.length - 1; i >= 0; i--) {
    lines.push(...texts[i].split('\n').filter((l) => l.trim()));
    acc += texts[i].length;
    if (acc >= total * share) break;
  }
  const have = new Set(viewAfter.flatMap((v) => messageText(v.message).split('\n')));
  return { total: lines.length, retained: lines.filter((l) => have.has(l)).length };
}
