/**
 * `abridge convert <transcript> --to pi | claude-code | codex`: one agent's session as a transcript another agent resumes.
 *
 * What is written is what the model sees now (the view: the source agent's and abridge's compactions applied),
 * compacted first when it would not fit the target's window (or `--budget`), as a new session of the target agent:
 * the target resumes exactly abridge's view of the written file (checked with pi's own loader and the Claude Code CLI).
 * The source agent's own system prompt and instructions (its system messages) are not carried: the target agent sends
 * its own. Every record is new, so every record is redacted (as `export` does). The source file is only read.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import type { BudgetSettings } from '../budget/types.js';
import { writeFileAtomic } from '../atomic-write.js';
import { contextBreakdown } from '../budget/breakdown.js';
import { compact, type CompactionResult } from '../compaction/compact.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import type { ResultStore } from '../compaction/result-store.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { AbridgeError } from '../errors.js';
import { parseSession, readSession } from '../formats/read.js';
import { anthropicKeeps } from '../formats/anthropic.js';
import { getFormat } from '../formats/registry.js';
import { safeName } from '../formats/request-body.js';
import { writeSession } from '../formats/write.js';
import type { FormatId, Message, Part, Session } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { compactionText } from '../model/parts.js';
import { TokenCounter } from '../tokens/counter.js';
import { HARNESS_PREFIX_TOKENS } from '../defaults.js';
import { createRedactor } from '../redact/redact.js';
import { FileResultStore } from '../store/file-result-store.js';
import { positiveInt, viewSession } from './compact.js';
import { addConfigOptions, resolveConfig, type ConfigFlags } from './config-options.js';
import { INSTANCE_OPTION, inputOptions, sourceOptions } from './input.js';
import { refuseOutOverInput } from './output.js';
import { fmtInt } from './render.js';
import { escapeControls, jsonForTerminal } from './terminal.js';

/** The agents whose transcripts abridge writes, and their resume checks. */
export const CONVERT_TARGETS = ['pi', 'claude-code', 'codex'] as const satisfies readonly FormatId[];
export type ConvertTarget = (typeof CONVERT_TARGETS)[number];

interface ConvertFlags extends ConfigFlags {
  to?: string;
  budget?: string;
  out?: string;
  format?: string;
  instance?: string;
  json?: boolean;
}

export function registerConvert(program: Command): void {
  const cmd = program
    .command('convert')
    .description(
      "Write a session as a transcript another agent resumes (pi, Claude Code, Codex): what the model sees now, compacted to the target's window on the way; the source agent's system prompt stays behind (the target sends its own)",
    )
    .argument('<transcript>', 'transcript file (any format abridge reads)')
    .option('-t, --to <agent>', `the agent that resumes it: ${CONVERT_TARGETS.join(', ')}`)
    .option(
      '-b, --budget <tokens>',
      "compact to this many tokens first (default: only when the session passes the compaction mark of the target model's window: --model, --context-window)",
    )
    .option('-o, --out <file>', 'write the transcript here (atomically; default: standard output)')
    .option('-f, --format <id>', 'read as this format instead of detecting it')
    .option(...INSTANCE_OPTION)
    .option('--json', 'print {from, to, sessionId, messages, tokens, compacted, out} instead of a sentence');
  addConfigOptions(cmd).action((file: string, opts: ConvertFlags) => convertFile(file, opts));
}

async function convertFile(file: string, opts: ConvertFlags): Promise<void> {
  if (opts.to === undefined || !(CONVERT_TARGETS as readonly string[]).includes(opts.to))
    throw new AbridgeError(
      'INVALID_INPUT',
      `--to: expected one of ${CONVERT_TARGETS.join(', ')}, got ${opts.to === undefined ? 'nothing' : `"${opts.to}"`}`,
    );
  const to = opts.to as ConvertTarget;
  if (opts.format) getFormat(opts.format);
  refuseOutOverInput(file, opts.out);
  const budget = opts.budget === undefined ? undefined : positiveInt('--budget', opts.budget, false);
  const config = await resolveConfig(opts);
  const session = await readSession(file, { ...sourceOptions(opts), ...inputOptions() });
  if (session.format === to)
    throw new AbridgeError(
      'INVALID_INPUT',
      `${file} is already a ${to} transcript: abridge compact --out writes it compacted for ${to} itself`,
    );
  const redact = createRedactor(config.redaction);

  const results: ResultStore = opts.out ? new FileResultStore(`${opts.out}.results`) : new MemoryResultStore();
  const { converted, compaction, target, text } = await convertTranscript(session, to, {
    ...(budget !== undefined ? { budget } : {}),
    settings: config.budget,
    redact,
    results,
  });
  if (compaction && !compaction.reachedTarget)
    process.stderr.write(
      escapeControls(
        `abridge convert: ${file}: the view is ${fmtInt(compaction.afterTokens)} tokens after compaction, over the budget of ${fmtInt(target!)} (what must stay verbatim: ${fmtInt(compaction.protectedTokens)}); written as it is\n`,
      ),
    );
  if (opts.out) await writeFileAtomic(opts.out, text);
  else process.stdout.write(text);

  const counter = new TokenCounter();
  const messages = activeMessages(converted);
  const tokens = messages.reduce((n, m) => n + counter.message(m), 0);
  const summary = {
    from: session.format,
    to,
    sessionId: converted.info.id,
    messages: messages.length,
    tokens,
    compacted: compaction?.entry !== undefined,
    ...(opts.out ? { out: opts.out } : {}),
  };
  // Without --out the transcript is standard output: what the command says goes to standard error.
  const say = (s: string) => (opts.out ? process.stdout.write(s) : process.stderr.write(s));
  if (opts.json) say(jsonForTerminal(`${JSON.stringify(summary, null, 2)}\n`));
  else
    say(
      escapeControls(
        `converted ${file} (${session.format}) to ${to}: ${fmtInt(messages.length)} messages, ${fmtInt(tokens)} tokens (est.)${compaction?.entry ? `, compacted to the budget of ${fmtInt(target!)}` : ''}; session ${converted.info.id}${opts.out ? ` written to ${opts.out}` : ''}\n`,
      ),
    );
}

/**
 * One session as a transcript of `to`: the view as the target will resume it (`convertedSession`), compacted when a
 * budget is given or when it would not fit the target's window (`settings`) below its compaction mark — measured with
 * the target's own system prompt and tools (`HARNESS_PREFIX_TOKENS`), unless the settings name one — and written
 * (every record redacted).
 */
export async function convertTranscript(
  session: Session,
  to: ConvertTarget,
  o: { budget?: number; settings: BudgetSettings; redact: (text: string) => string; results?: ResultStore },
): Promise<{ converted: Session; compaction?: CompactionResult; target?: number; text: string }> {
  // Written first as it is (another format's session converted: a v3 pi header and ids; Claude Code's records and
  // uuids) and read back as the target's own transcript, so that a compaction is written the way \`compact --out\`
  // writes one into that agent's file — the way the agents' own resume checks cover.
  const whole = writeSession(convertedSession(session, to), to, { redact: o.redact });
  const converted = parseSession(whole, { format: to, source: `${to} conversion` });
  const prefixTokens = o.settings.prefixTokens ?? HARNESS_PREFIX_TOKENS[to];
  const snap = contextBreakdown(converted, { settings: { ...o.settings, prefixTokens } });
  const target = o.budget ?? (snap.used >= snap.marks.compact ? snap.marks.target : undefined);
  if (target === undefined) return { converted, text: whole };
  const compaction = await compact(converted, {
    target,
    force: true,
    summarizer: new ExtractiveSummarizer(),
    store: o.results ?? new MemoryResultStore(),
    redact: o.redact,
    prefixTokens,
  });
  const text = compaction.entry ? writeSession(converted, to, { redact: o.redact }) : whole;
  return { converted, compaction, target, text };
}

/**
 * The session as the target agent will resume it: the messages of its view (system messages left behind: the target
 * sends its own prompt), as a new session of the target's format with a new id (the source is another agent's session),
 * each tool result naming its tool (pi's records carry it; Anthropic-style transcripts do not), and no bills (they
 * are of the source agent's prompts).
 */
export function convertedSession(session: Session, to: ConvertTarget): Session {
  const view = viewSession(session);
  const names = new Map<string, string>();
  // Each entry is dated by its message, else by the one before (a summary standing for archived turns has no date).
  let at = session.info.startedAt ?? session.entries.find((e) => e.timestamp !== undefined)?.timestamp;
  const entries = view.entries
    .filter((e) => e.message && e.message.role !== 'system')
    .map((e, index) => {
      const message = withToolNames(e.message!, names);
      at = message.timestamp ?? at;
      return { index, kind: 'message' as const, message, ...(at !== undefined ? { timestamp: at } : {}) };
    });
  // What says where and when it ran goes along; what the source harness recorded of itself (its version, its settings)
  // does not.
  // Claude Code, resumed, leaves out the calls no result answers (pi sends them, and answers them itself), and the API
  // takes call ids of letters, digits, `_` and `-` only (pi keeps OpenAI's `call_…|fc_…`): so does the conversion.
  // Codex, resumed, would answer such a call with an "aborted" output of its own: left out for it too.
  if (to === 'claude-code' || to === 'codex') dropUnanswered(entries);
  // It sends each assistant record as it is, where abridge's view (an Anthropic request) leaves out what the API would
  // refuse and joins consecutive assistant turns: the records are written as that request has them.
  if (to === 'claude-code') {
    dropUnsendable(entries);
    oneRecordPerResponse(entries);
    trimFinalText(entries);
  }
  if (to === 'claude-code' || to === 'codex') {
    anthropicCallIds(entries);
    entries.forEach((e, i) => {
      e.index = i;
    });
  }
  const info: Session['info'] = { id: randomUUID() };
  if (session.info.cwd !== undefined) info.cwd = session.info.cwd;
  if (session.info.title !== undefined) info.title = session.info.title;
  if (session.info.startedAt !== undefined) info.startedAt = session.info.startedAt;
  const out: Session = { format: session.format, info, entries, problems: [] };
  // The model the session was using (a request-body writer names it; transcript writers take it from the messages).
  if (view.extra) out.extra = view.extra;
  return out;
}

/** Tool calls no result answers, taken out (a message left empty too). */
function dropUnanswered(entries: { message: Message }[]): void {
  const answered = new Set<string>();
  for (const e of entries) for (const p of e.message.parts) if (p.type === 'tool-result') answered.add(p.callId);
  for (let i = entries.length - 1; i >= 0; i--) {
    const m = entries[i]!.message;
    if (m.role !== 'assistant') continue;
    const parts = m.parts.filter((p) => p.type !== 'tool-call' || answered.has(p.id));
    if (parts.length === m.parts.length) continue;
    if (parts.length === 0) entries.splice(i, 1);
    else entries[i]!.message = { ...m, parts };
  }
}

/**
 * What an assistant turn holds that the Anthropic API takes back (blank texts and reasoning it did not sign left
 * out), and turns left with nothing taken away: the Claude Code CLI sends an assistant record of no content as the
 * text "(no content)" (pi records an aborted or failed response so), which the view has no message for.
 */
function dropUnsendable(entries: { message: Message }[]): void {
  for (let i = entries.length - 1; i >= 0; i--) {
    const m = entries[i]!.message;
    if (m.role !== 'assistant') continue;
    const parts = m.parts.filter((p) => (p.type === 'text' ? p.text.trim() !== '' : anthropicKeeps(p, m)));
    if (parts.length === 0) entries.splice(i, 1);
    else if (parts.length !== m.parts.length) entries[i]!.message = { ...m, parts };
  }
}

/**
 * Consecutive assistant turns as one: the CLI joins only the records of one response (one `message.id`), and sends
 * records of other ids as messages of their own, each of its calls followed by its result (Codex records a response's
 * text and each call as items of their own) — where the view has one assistant message and then their results.
 */
function oneRecordPerResponse(entries: { message: Message }[]): void {
  for (let i = entries.length - 1; i > 0; i--) {
    const before = entries[i - 1]!.message;
    const m = entries[i]!.message;
    if (before.role !== 'assistant' || m.role !== 'assistant') continue;
    entries[i - 1]!.message = { ...before, parts: [...before.parts, ...m.parts] };
    entries.splice(i, 1);
  }
}

/**
 * A last assistant text without the whitespace at its end, as the view has it (a request ending with an assistant
 * message is a prefill, which the API takes only so); the CLI, resuming, sends the text as recorded.
 */
function trimFinalText(entries: { message: Message }[]): void {
  const last = entries[entries.length - 1];
  const m = last?.message;
  const tail = m?.parts[m.parts.length - 1];
  if (!last || m?.role !== 'assistant' || tail?.type !== 'text' || tail.text === tail.text.trimEnd()) return;
  // (Not blank: dropUnsendable took blank texts out.)
  last.message = { ...m, parts: [...m.parts.slice(0, -1), { ...tail, text: tail.text.trimEnd() }] };
}

/**
 * Calls as the Anthropic API takes them — ids of the part before a `|`, other characters as `_` (at most 64), names of
 * the characters it allows — and as Claude Code resumes them: one id per call (a source that used an id again, an
 * SWE-agent replay, has its later calls renamed, each result answering the call before it, as the view's request renames
 * them; the CLI would leave out a call whose id it has sent already, and its result), and no id that is another's
 * followed by `_<digits>` (the CLI takes a result of `<id>_<n>` for the nth entry of a batched call `<id>`, folds it
 * into that call's result and answers the call of its own with "[Tool result missing due to internal error]"). The
 * Responses API takes the same ids (pi joins OpenAI's call and item ids with a `|`, of which the call id is the first).
 */
function anthropicCallIds(entries: { message: Message }[]): void {
  const safe = (id: string) => (id.split('|')[0] ?? '').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'call';
  const all = new Set(
    entries.flatMap((e) => e.message.parts.flatMap((p) => (p.type === 'tool-call' ? [safe(p.id)] : []))),
  );
  const entryOfAnother = (id: string) => {
    const n = /_\d+$/.exec(id);
    return n !== null && all.has(id.slice(0, -n[0].length));
  };
  const used = new Set<string>();
  const latest = new Map<string, string>();
  const fresh = (id: string): string => {
    const base = safe(id);
    let out = base;
    for (let n = 2; used.has(out) || entryOfAnother(out); n++) out = `${base.slice(0, 63 - String(n).length)}-${n}`;
    used.add(out);
    latest.set(id, out);
    return out;
  };
  for (const e of entries) {
    const parts = e.message.parts.map((p): Part => {
      if (p.type === 'tool-call') {
        const id = fresh(p.id);
        const name = safeName(p.name);
        return id === p.id && name === p.name ? p : { ...p, id, name };
      }
      if (p.type !== 'tool-result') return p;
      const callId = latest.get(p.callId) ?? safe(p.callId);
      return callId === p.callId ? p : { ...p, callId };
    });
    if (parts.some((p, i) => p !== e.message.parts[i])) e.message = { ...e.message, parts };
  }
}

function withToolNames(m: Message, names: Map<string, string>): Message {
  // A bill on a message is of the source agent's prompt (its system prompt and tools): not of what the target sends.
  if (m.usage) {
    const { usage: _other, ...rest } = m;
    m = rest;
  }
  m = withProviderCompactionAsText(m);
  let changed = false;
  const parts = m.parts.map((p) => {
    if (p.type === 'tool-call') names.set(p.id, p.name);
    if (p.type !== 'tool-result' || p.toolName) return p;
    const name = names.get(p.callId);
    if (!name) return p;
    changed = true;
    return { ...p, toolName: name };
  });
  return changed ? { ...m, parts } : m;
}

/**
 * A provider's own compaction in the view (OpenAI's encrypted item, kept in a Codex replacement history) can go to no
 * other agent: it becomes the text abridge shows for it, saying that an encrypted summary was there. A compaction part
 * of an agent's summary stays one (the target writes it as its own compaction).
 */
export function withProviderCompactionAsText(m: Message): Message {
  if (!m.parts.some((p) => p.type === 'compaction' && p.marker.native)) return m;
  return {
    ...m,
    parts: m.parts.map((p) =>
      p.type === 'compaction' && p.marker.native ? { type: 'text', text: compactionText(p.marker) } : p,
    ),
  };
}
