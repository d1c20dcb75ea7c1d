/**
 * Aider chat history (`.aider.chat.history.md`), the markdown log Aider (Aider-AI/aider) appends to as it runs:
 * `InputOutput.append_chat_history` (aider/io.py) writes
 * - `# aider chat started at <local time>` when a run starts (a new process: its chat starts empty);
 * - what a person typed as `#### ` lines (`user_input`: each line of the input prefixed, the lines joined by two spaces
 *   and a newline, the last ending in two spaces, after a blank line);
 * - the model's reply as plain markdown after a blank line (`ai_output`: the reply stripped, reasoning included, in
 *   `<thinking-content-…>` tags);
 * - Aider's own output as `> ` lines ending in two spaces (`tool_output`, `tool_warning`, `tool_error`): the start-up
 *   announcement (`Model: gpt-4o with diff edit format`), confirmations (`Add file to the chat? (Y)es/(N)o… [Yes]: y`),
 *   `Applied edit to …`, and after each request the token report (`Tokens: 3.2k sent, 21 received. Cost: …`,
 *   `calculate_and_show_tokens_and_cost` in aider/coders/base_coder.py). A message of several lines is prefixed on its
 *   first line only; its last line ends in the two spaces.
 *
 * What the model saw is read as Aider sent it within a run: the run's requests, each person's input as typed, each
 * reply without its reasoning (`remove_reasoning_content` drops it before the reply joins the chat). Each run is its
 * own conversation (entries linked by `id`/`parentId`, a run's first entry a root), so the active branch is the last
 * run, and so is `/clear` or `/reset` (they empty the chat). What is not a message: Aider's `> ` output, answers to its
 * confirmations, and commands (`/add`, `/run`, `/ls`…) but `/ask`, `/code`, `/architect` and `/context` with a message,
 * which send that message.
 *
 * Not in the file and not reproduced: the system prompt, the repository map and the content of the files in the chat
 * (the unrecorded prefix, learned from the token reports), the messages Aider adds itself (lint or test errors sent
 * back, command output added to the chat, "I committed the changes…"), the summary Aider makes of a long chat, and
 * `--restore-chat-history`, which loads the whole file as one chat (utils.split_chat_history_markdown).
 *
 * Usage is the token report after each reply: `sent` is the whole prompt (with Anthropic's cache writes added by Aider;
 * cache reads are in it), so input = sent − cache hit − cache write; `received` is the output. Aider rounds them
 * (`format_tokens`: exact below 1,000, to 100 below 10,000, to 1,000 above).
 */
import { AbridgeError } from '../errors.js';
import { SessionBuilder } from '../model/session.js';
import { isSpace } from '../model/text.js';
import type { EntryDraft, Message, Session, Usage } from '../model/types.js';
import { textPart } from '../model/parts.js';
import type { TranscriptFormat } from './format.js';

const RUN_PREFIX = '# aider chat started at ';
const TOKENS =
  /^Tokens: ([\d.]+[kKM]?) sent(?:, ([\d.]+[kKM]?) cache write)?(?:, ([\d.]+[kKM]?) cache hit)?, ([\d.]+[kKM]?) received\b/;
const MODEL = /^(?:Main model|Model): (\S+)/;
const ASKED = '(Y)es/(N)o';

/**
 * When a run started: what follows `# aider chat started at ` on its line, less trailing spaces (what
 * `/^# aider chat started at (.*?)\s*$/` captures; its lazy group retried the spaces after each character); undefined
 * for another line.
 */
function runStarted(line: string): string | undefined {
  if (!line.startsWith(RUN_PREFIX)) return undefined;
  const started = line.slice(RUN_PREFIX.length).trimEnd();
  return /[\n\r\u2028\u2029]/.test(started) ? undefined : started;
}

/**
 * An answer to one of Aider's questions, logged as input: `… (Y)es/(N)o/(D)on't ask again [Yes]: y`. What
 * `/\(Y\)es\/\(N\)o.*\[[^\]]*\]: ?\S*\s*$/` matches, in one pass (the expression retried every `[` of a line, each to
 * the end of the text): the text ends in `]:`, a space or not, a word and spaces; the `[` that opens that `]` (any
 * after the `]` before it) is on the line of a `(Y)es/(N)o` and after it.
 */
function isConfirmation(text: string): boolean {
  if (!text.includes(ASKED)) return false;
  const end = text.trimEnd().length;
  let word = end;
  while (word > 0 && !isSpace(text[word - 1]!)) word--;
  // Where the `]` may be: inside the last word (`]:y`, `]:`), or before `: ` and that word.
  const closes: number[] = [];
  for (let l = word; l <= end - 2; l++) if (text[l] === ']' && text[l + 1] === ':') closes.push(l);
  if (word >= 3 && text.slice(word - 3, word) === ']: ') closes.push(word - 3);
  // The `[` that may open each: after the `]` before it.
  const opens = new Set<number>();
  for (const close of closes) for (let i = close - 1; i >= 0 && text[i] !== ']'; i--) if (text[i] === '[') opens.add(i);
  if (opens.size === 0) return false;
  // One pass: a `(Y)es/(N)o` on the line of one of them, ending by it.
  let asked = -1;
  for (let i = 0; i <= end; i++) {
    const c = text[i]!;
    if (c === '\n' || c === '\r' || c === '\u2028' || c === '\u2029') asked = -1;
    else if (asked === -1 && text.startsWith(ASKED, i)) asked = i;
    if (asked !== -1 && asked + ASKED.length <= i && opens.has(i)) return true;
  }
  return false;
}
/** Commands whose argument is sent as a message (in that chat mode). */
const MESSAGE_COMMANDS = /^\/(ask|code|architect|context|help)\s+(\S[\s\S]*)$/;
const CLEAR_COMMANDS = /^\/(clear|reset)\s*$/;
const REASONING = /<(thinking-content-[0-9a-f]+|think|thinking|reasoning)>[\s\S]*?<\/\1>\s*/g;

type Block =
  | { kind: 'run'; line: number; text: string; started: string }
  | { kind: 'user'; line: number; lines: string[] }
  | { kind: 'assistant'; line: number; lines: string[] }
  | { kind: 'output'; line: number; lines: string[] };

/** A line Aider wrote with `linebreak=True`: input and its own output end in two spaces. */
const endsWithBreak = (line: string) => line.endsWith('  ');

/**
 * The file's lines into blocks. When the file follows the two-space convention (every version that logs input this
 * way), a `#### ` or `> ` line without it inside a reply is the reply's own markdown (a heading, a quote); otherwise
 * the prefixes alone decide, as Aider's own reader does.
 */
function blocksOf(text: string): Block[] {
  const lines = text.split(/\r?\n/);
  const strict = lines.some((l) => l.startsWith('#### ') && endsWithBreak(l));
  const blocks: Block[] = [];
  let current: Block | undefined;
  // A `> ` message of several lines continues until the line that ends in two spaces.
  let outputOpen = false;
  const open = (kind: 'user' | 'assistant' | 'output', line: number, first: string) => {
    const block: Block = { kind, line, lines: [first] };
    current = block;
    blocks.push(block);
  };
  lines.forEach((line, i) => {
    const n = i + 1;
    const started = runStarted(line);
    if (started !== undefined) {
      const block: Block = { kind: 'run', line: n, text: line, started };
      current = block;
      blocks.push(block);
      outputOpen = false;
      return;
    }
    if (outputOpen && current?.kind === 'output') {
      current.lines.push(line);
      if (endsWithBreak(line) || line === '') outputOpen = false;
      return;
    }
    const inReply = current?.kind === 'assistant';
    if (line.startsWith('#### ') && !(strict && inReply && !endsWithBreak(line))) {
      const body = line.slice(5);
      if (current?.kind === 'user') current.lines.push(body);
      else open('user', n, body);
      return;
    }
    if ((line.startsWith('> ') || line === '>') && !(strict && inReply && !endsWithBreak(line))) {
      const body = line.slice(2);
      if (current?.kind === 'output') current.lines.push(body);
      else open('output', n, body);
      outputOpen = strict && !endsWithBreak(line) && line !== '>';
      return;
    }
    if (line.trim() === '') {
      // Blank lines end input and output; inside a reply they are the reply's.
      if (current?.kind === 'assistant') current.lines.push(line);
      else if (current?.kind !== 'run') current = undefined;
      return;
    }
    if (current?.kind === 'assistant') current.lines.push(line);
    else open('assistant', n, line);
  });
  return blocks;
}

/** `3.2k` → 3200, `11k` → 11000, `653` → 653. */
function tokenCount(s: string | undefined): number {
  if (!s) return 0;
  const unit = s.endsWith('k') || s.endsWith('K') ? 1000 : s.endsWith('M') ? 1_000_000 : 1;
  const n = Number.parseFloat(unit === 1 ? s : s.slice(0, -1));
  return Number.isFinite(n) ? Math.round(n * unit) : 0;
}

function usageOf(m: RegExpExecArray): Usage {
  const sent = tokenCount(m[1]);
  const cacheWrite = tokenCount(m[2]);
  const cacheRead = tokenCount(m[3]);
  return { input: Math.max(0, sent - cacheRead - cacheWrite), output: tokenCount(m[4]), cacheRead, cacheWrite };
}

/** Input as typed: each `#### ` line less the two spaces Aider appended. */
function inputText(lines: readonly string[]): string {
  return lines.map((l) => (endsWithBreak(l) ? l.slice(0, -2) : l)).join('\n');
}

/** `2025-07-15 11:38:37` (the writer's local time, no zone) as epoch ms read as UTC; undefined when not a date. */
function runTime(started: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)/.exec(started);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}T${m[2]}Z`);
  return Number.isFinite(t) ? t : undefined;
}

function readText(text: string, source: string): Session {
  const blocks = blocksOf(text);
  if (!blocks.some((b) => b.kind === 'run' || b.kind === 'user'))
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: not an Aider chat history: expected "# aider chat started at <date>" headings and "#### " input lines`,
    );
  const builder = new SessionBuilder('aider');
  let parent: string | null = null;
  let model: string | undefined;
  let timestamp: number | undefined;
  let lastReply: Message | undefined;
  let runs = 0;
  const chain = (draft: EntryDraft, id: string, root = false) => {
    draft.id = id;
    draft.parentId = root ? null : parent;
    parent = id;
    if (timestamp !== undefined) draft.timestamp = timestamp;
    builder.add(draft);
  };
  const newChat = (draft: EntryDraft, id: string) => {
    lastReply = undefined;
    chain(draft, id, true);
  };
  for (const b of blocks) {
    if (b.kind === 'run') {
      runs++;
      timestamp = runTime(b.started);
      if (runs === 1 && timestamp !== undefined) builder.info.startedAt = timestamp;
      newChat({ kind: 'session-info', sourceType: 'run', raw: { line: b.line, text: b.text } }, `aider-${b.line}`);
      continue;
    }
    if (b.kind === 'output') {
      const raw = { line: b.line, text: b.lines.join('\n') };
      for (const [k, line] of b.lines.entries()) {
        const announced = MODEL.exec(line);
        if (announced) model = announced[1];
        const report = TOKENS.exec(line);
        if (!report) continue;
        if (lastReply && !lastReply.usage) lastReply.usage = usageOf(report);
        else
          builder.problems.push({
            line: b.line + k,
            kind: 'invalid-entry',
            message: `${source}: line ${b.line + k}: a token report with no reply of the model before it in this run; not attached to a message`,
          });
      }
      builder.add({ kind: 'event', sourceType: 'output', raw });
      continue;
    }
    if (b.kind === 'user') {
      const typed = inputText(b.lines);
      const raw = { line: b.line, text: b.lines.map((l) => `#### ${l}`).join('\n') };
      const trimmed = typed.trim();
      const asMessage = MESSAGE_COMMANDS.exec(trimmed);
      if (CLEAR_COMMANDS.test(trimmed)) {
        newChat({ kind: 'event', sourceType: 'command', raw }, `aider-${b.line}`);
        continue;
      }
      if (
        trimmed === '' ||
        trimmed === '<blank>' ||
        isConfirmation(trimmed) ||
        (trimmed.startsWith('/') && !asMessage)
      ) {
        builder.add({ kind: 'event', sourceType: trimmed.startsWith('/') ? 'command' : 'answer', raw });
        continue;
      }
      const message: Message = { role: 'user', parts: [textPart(asMessage ? asMessage[2]! : typed)] };
      if (timestamp !== undefined) message.timestamp = timestamp;
      chain({ kind: 'message', sourceType: 'user', message, raw }, `aider-${b.line}`);
      continue;
    }
    const written = b.lines.join('\n').trim();
    const reply = written.replace(REASONING, '').trim();
    const message: Message = { role: 'assistant', parts: reply ? [textPart(reply)] : [] };
    if (model) message.model = model;
    if (timestamp !== undefined) message.timestamp = timestamp;
    lastReply = message;
    chain(
      { kind: 'message', sourceType: 'assistant', message, raw: { line: b.line, text: written } },
      `aider-${b.line}`,
    );
  }
  builder.extra = { runs };
  return builder.build();
}

export const aiderFormat: TranscriptFormat = {
  id: 'aider',
  label: 'Aider chat history (.aider.chat.history.md)',
  container: 'json',
  detect({ head }) {
    if (/(?:^|\n)# aider chat started at \d{4}-\d{2}-\d{2}/.test(head)) return 0.95;
    if (/(?:^|\n)# aider chat started at /.test(head)) return 0.9;
    return 0;
  },
  readText,
};
