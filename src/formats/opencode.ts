/**
 * opencode sessions as `opencode export [sessionID]` writes them (packages/opencode/src/cli/cmd/export.ts of
 * sst/opencode, now anomalyco/opencode): one JSON document `{info: Session.Info, messages: [{info, parts}], todos?}`,
 * the session's messages oldest first, each its `MessageV2.Info` (`role` "user" or "assistant") and its stored parts
 * (packages/opencode/src/session/message-v2.ts).
 *
 * What the model sees is decided the way opencode decides it before every request: `MessageV2.filterCompacted` cuts the
 * history at the last completed compaction, then `MessageV2.toModelMessages` turns the stored parts into AI SDK UI
 * messages, which `convertToModelMessages` (ai) splits into model messages:
 * - user: `text` parts unless `ignored` (`synthetic` ones are sent: file contents, reminders, auto-continue prompts);
 *   `file` parts but `text/plain` and `application/x-directory` (their contents were stored as synthetic text) — images
 *   as images, other media as files; a `compaction` part is sent as "What did we do so far?", a `subtask` part as "The
 *   following tool was executed by the user". `agent` parts are not sent.
 * - assistant: skipped whole when it has an `error`, unless it was aborted (MessageAbortedError) after producing more
 *   than step-start and reasoning parts. `text` and `reasoning` are sent; a `tool` part is a call plus its result: a
 *   completed call's `output` (the placeholder "[Old tool result content cleared]" once `time.compacted` is set — opencode's
 *   prune), an error call's `error` as an error result (or, when it was interrupted with output, that output), a pending
 *   or running call "[Tool execution was interrupted]" as an error. `step-start` parts split the message into its
 *   steps (one request each: convertToModelMessages makes an assistant message and a tool message per step);
 *   `step-finish`, `snapshot`, `patch`, `retry` are not sent. Each step's usage is its `step-finish` part's `tokens`.
 * - compaction: a compaction is a user message holding a `compaction` part (its `tail_start_id`, when set, names the
 *   first message of the recent turns kept verbatim) answered by an assistant message with `summary: true`, whose
 *   `parentID` is that user message. Once the summary finished without error, filterCompacted sends nothing before the
 *   user message (or before the tail it names). It is read here as a marker entry of its own just before the user message
 *   (which is sent as "What did we do so far?", after the kept tail) and the summary as a `compaction` part in the
 *   assistant message. Versions before compaction parts
 *   (2025) sent the history from the last `summary: true` assistant message on (`msgs.filter(m => m.info.id >=
 *   lastSummary.info.id)` in session/index.ts); the summary message itself is then the marker.
 *
 * Usage (`Session.getUsage`): `tokens.input` leaves out cache reads and writes (`cache.read`, `cache.write`), as
 * abridge's Usage does; `tokens.output` and `tokens.reasoning` are copied as they are.
 */
import { AbridgeError } from '../errors.js';
import { SessionBuilder } from '../model/session.js';
import type {
  CompactionMarker,
  EntryDraft,
  Message,
  Part,
  ProblemKind,
  ResultContentPart,
  Session,
  SessionInfo,
  Usage,
} from '../model/types.js';
import { base64ByteSize, num, textPart } from '../model/parts.js';
import { asString, isRecord, type TranscriptFormat } from './format.js';

/** What toModelMessages sends for parts that carry no text of their own (message-v2.ts). */
export const OPENCODE_COMPACTION_PROMPT = 'What did we do so far?';
export const OPENCODE_SUBTASK_PROMPT = 'The following tool was executed by the user';
export const OPENCODE_CLEARED_RESULT = '[Old tool result content cleared]';
export const OPENCODE_INTERRUPTED_RESULT = '[Tool execution was interrupted]';

const PART_TYPES = new Set([
  'text',
  'subtask',
  'reasoning',
  'file',
  'tool',
  'step-start',
  'step-finish',
  'snapshot',
  'patch',
  'agent',
  'retry',
  'compaction',
]);
/** Files toModelMessages leaves out: their contents were stored as synthetic text parts beside them. */
const FILES_SENT_AS_TEXT = new Set(['text/plain', 'application/x-directory']);

type Rec = Record<string, unknown>;

interface Ctx {
  source: string;
  problem(i: number, kind: ProblemKind, what: string): void;
}

/** A message of the export: `{info, parts}` with a role opencode has. */
function isMessageRecord(m: unknown): m is { info: Rec; parts: unknown[] } {
  return (
    isRecord(m) && isRecord(m.info) && (m.info.role === 'user' || m.info.role === 'assistant') && Array.isArray(m.parts)
  );
}

function readExport(document: unknown, source: string): Session {
  if (!isRecord(document) || !isRecord(document.info) || !Array.isArray(document.messages)) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: not an opencode export: expected a JSON object {"info": {…session…}, "messages": [{"info", "parts"}, …]} as "opencode export" writes it`,
    );
  }
  const builder = new SessionBuilder('opencode');
  builder.info = sessionInfo(document.info);
  const ctx: Ctx = {
    source,
    problem: (i, kind, what) =>
      builder.problems.push({ line: i + 1, kind, message: `${source}: messages[${i}]${what}` }),
  };
  const messages = document.messages as unknown[];
  const cut = findCut(messages, ctx);

  messages.forEach((record, i) => {
    if (!isRecord(record)) {
      ctx.problem(i, 'not-an-object', ' is not an object (expected {"info": {…}, "parts": […]}); kept as is');
      builder.add({ kind: 'unknown', raw: record });
      return;
    }
    if (!isMessageRecord(record)) {
      const what = !isRecord(record.info)
        ? ' has no "info" object'
        : record.info.role !== 'user' && record.info.role !== 'assistant'
          ? `.info has role ${JSON.stringify(record.info.role)}`
          : ' has no "parts" array';
      ctx.problem(
        i,
        'invalid-entry',
        `${what} (expected {"info": {"role": "user" or "assistant", …}, "parts": […]}); kept as is, not sent`,
      );
      builder.add({ kind: 'unknown', raw: record });
      return;
    }
    const info = record.info;
    const base: EntryDraft = { kind: 'event', sourceType: info.role as string, raw: record };
    const id = asString(info.id);
    if (id) base.id = id;
    const created = isRecord(info.time) && typeof info.time.created === 'number' ? info.time.created : undefined;
    if (created !== undefined) base.timestamp = created;

    const drafts = info.role === 'user' ? userDrafts(record, i, base, ctx) : assistantDrafts(record, i, base, ctx);
    if (cut?.markerAt === i && cut.summaryAt !== i) {
      // The marker stands on an entry of its own, before the compaction's message: filterCompacted sends the tail it
      // keeps, then "What did we do so far?" and the summary, in the order they were written.
      builder.add({ kind: 'compaction', sourceType: 'compaction', raw: record, compaction: cut.marker });
      for (const d of drafts) d.fromSameRecord = true;
    } else if (cut?.markerAt === i) {
      // Older versions: the summary message itself starts the history.
      const first = drafts[0]!;
      first.kind = 'compaction';
      first.compaction = cut.marker;
    }
    if (cut?.summaryAt === i) {
      // The summary's text stands as the compaction part (sent after the marker's message, or as it).
      const reply = drafts.find((d) => d.message?.role === 'assistant');
      if (reply?.message) reply.message.parts = withSummary(reply.message.parts, cut.marker);
    }
    for (const d of drafts) builder.add(d);
  });

  if (cut) {
    const marker = cut.marker;
    const at = builder.entries.find((e) => e.compaction === marker)?.index;
    const kept =
      cut.tailId !== undefined
        ? builder.entries.find((e) => e.id === cut.tailId && !e.fromSameRecord)?.index
        : undefined;
    if (at !== undefined) {
      marker.firstKeptEntry = kept !== undefined && kept < at ? kept : at + 1;
      if (marker.firstKeptEntry > 0 && Math.min(marker.firstKeptEntry, at) > 0)
        marker.archived = { fromEntry: 0, toEntry: Math.min(marker.firstKeptEntry, at) - 1 };
      if (cut.tailId !== undefined) marker.firstKeptEntryId = cut.tailId;
    }
  }
  return builder.build();
}

function sessionInfo(info: Rec): SessionInfo {
  const out: SessionInfo = {};
  const id = asString(info.id);
  if (id) out.id = id;
  const cwd = asString(info.directory);
  if (cwd) out.cwd = cwd;
  const title = asString(info.title);
  if (title) out.title = title;
  if (isRecord(info.time) && typeof info.time.created === 'number') out.startedAt = info.time.created;
  return out;
}

interface Cut {
  /** The message whose entry holds the marker: the compaction's user message, or (older versions) the summary. */
  markerAt: number;
  summaryAt: number;
  tailId?: string;
  marker: CompactionMarker;
}

/**
 * The compaction filterCompacted cuts at: the last user message with a `compaction` part answered by a finished,
 * error-free `summary` assistant message. Without compaction parts (older versions): the last `summary` assistant
 * message without an error.
 */
function findCut(messages: readonly unknown[], ctx: Ctx): Cut | undefined {
  const valid = messages.map((m) => (isMessageRecord(m) ? m : undefined));
  const hasCompactionParts = valid.some(
    (m) => m?.info.role === 'user' && m.parts.some((p) => isRecord(p) && p.type === 'compaction'),
  );
  const summaries = (finished: boolean) =>
    valid.flatMap((m, i) =>
      m?.info.role === 'assistant' &&
      m.info.summary === true &&
      !m.info.error &&
      (!finished || (typeof m.info.finish === 'string' && m.info.finish !== ''))
        ? [i]
        : [],
    );
  const numberOf = (upTo: number) => 1 + countCompactions(valid.slice(0, upTo), hasCompactionParts);
  if (hasCompactionParts) {
    for (let u = valid.length - 1; u >= 0; u--) {
      const m = valid[u];
      if (m?.info.role !== 'user') continue;
      const part = m.parts.find((p): p is Rec => isRecord(p) && p.type === 'compaction');
      if (!part) continue;
      const s = summaries(true).find((k) => k > u && valid[k]!.info.parentID === m.info.id);
      if (s === undefined) continue;
      const marker: CompactionMarker = {
        number: numberOf(u),
        summary: summaryText(valid[s]!.parts),
        source: 'opencode',
        trigger: part.auto === true ? (part.overflow === true ? 'overflow' : 'auto') : 'manual',
      };
      const tail = asString(part.tail_start_id);
      if (tail !== undefined && !valid.some((x, k) => k < u && x?.info.id === tail)) {
        // filterCompacted keeps walking back for it and, not finding it, sends the whole history.
        ctx.problem(
          u,
          'invalid-entry',
          `.parts (a compaction) keeps the tail from message ${JSON.stringify(tail)}, which is not an earlier message of the export; read as opencode reads it: nothing is cut`,
        );
        return undefined;
      }
      return tail !== undefined
        ? { markerAt: u, summaryAt: s, tailId: tail, marker }
        : { markerAt: u, summaryAt: s, marker };
    }
    return undefined;
  }
  const s = summaries(false).at(-1);
  if (s === undefined) return undefined;
  const marker: CompactionMarker = {
    number: numberOf(s),
    summary: summaryText(valid[s]!.parts),
    source: 'opencode',
  };
  return { markerAt: s, summaryAt: s, marker };
}

function countCompactions(earlier: readonly ({ info: Rec; parts: unknown[] } | undefined)[], parts: boolean): number {
  if (!parts)
    return earlier.filter((m) => m?.info.role === 'assistant' && m.info.summary === true && !m.info.error).length;
  const ids = new Set(
    earlier.flatMap((m) =>
      m?.info.role === 'assistant' && m.info.summary === true && !m.info.error && typeof m.info.finish === 'string'
        ? [m.info.parentID]
        : [],
    ),
  );
  return earlier.filter(
    (m) => m?.info.role === 'user' && ids.has(m.info.id) && m.parts.some((p) => isRecord(p) && p.type === 'compaction'),
  ).length;
}

function summaryText(parts: readonly unknown[]): string {
  return parts
    .filter((p): p is Rec => isRecord(p) && p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n');
}

/** The summary message's text parts replaced by one compaction part, where the first of them was. */
function withSummary(parts: Part[], marker: CompactionMarker): Part[] {
  const out: Part[] = [];
  let placed = false;
  for (const p of parts) {
    if (p.type !== 'text') out.push(p);
    else if (!placed) {
      out.push({ type: 'compaction', marker });
      placed = true;
    }
  }
  if (!placed) out.push({ type: 'compaction', marker });
  return out;
}

/** Checks a part's shape; reports what is wrong and returns undefined when it cannot be read. */
function checkedPart(p: unknown, i: number, k: number, ctx: Ctx): Rec | undefined {
  const where = `.parts[${k}]`;
  if (!isRecord(p)) {
    ctx.problem(i, 'invalid-entry', `${where} is not an object (expected a part {"type", …}); left out`);
    return undefined;
  }
  const type = asString(p.type);
  if (type === undefined || !PART_TYPES.has(type)) {
    ctx.problem(
      i,
      'unknown-entry-type',
      `${where} has ${type === undefined ? 'no "type"' : `unknown type "${type}"`} (expected one of ${[...PART_TYPES].join(', ')}); left out`,
    );
    return undefined;
  }
  const bad = (expected: string) => {
    ctx.problem(i, 'invalid-entry', `${where} (a ${type} part) ${expected}; left out`);
    return undefined;
  };
  if ((type === 'text' || type === 'reasoning') && typeof p.text !== 'string') return bad('has no string "text"');
  if (type === 'file' && (typeof p.mime !== 'string' || typeof p.url !== 'string'))
    return bad('has no string "mime" and "url"');
  if (type === 'tool') {
    if (typeof p.callID !== 'string' || typeof p.tool !== 'string') return bad('has no string "callID" and "tool"');
    const s = p.state;
    if (!isRecord(s) || !['pending', 'running', 'completed', 'error'].includes(s.status as string))
      return bad('has no "state" with a status "pending", "running", "completed" or "error"');
    if (s.status === 'completed' && typeof s.output !== 'string') return bad('is completed without a string "output"');
    if (s.status === 'error' && typeof s.error !== 'string') return bad('failed without a string "error"');
  }
  return p;
}

function userDrafts(record: { info: Rec; parts: unknown[] }, i: number, base: EntryDraft, ctx: Ctx): EntryDraft[] {
  const parts: Part[] = [];
  let texts = 0;
  let synthetic = 0;
  record.parts.forEach((raw, k) => {
    const p = checkedPart(raw, i, k, ctx);
    if (!p) return;
    if (p.type === 'text' && p.ignored !== true) {
      parts.push(textPart(p.text as string));
      texts++;
      if (p.synthetic === true) synthetic++;
    } else if (p.type === 'file' && !FILES_SENT_AS_TEXT.has(p.mime as string)) parts.push(mediaPart(p));
    else if (p.type === 'compaction') parts.push(textPart(OPENCODE_COMPACTION_PROMPT));
    else if (p.type === 'subtask') parts.push(textPart(OPENCODE_SUBTASK_PROMPT));
  });
  if (parts.length === 0) return [base];
  const message: Message = { role: 'user', parts };
  if (texts > 0 && synthetic === texts && parts.every((p) => p.type === 'text')) message.synthetic = true;
  if (base.timestamp !== undefined) message.timestamp = base.timestamp;
  return [{ ...base, kind: 'message', message }];
}

/** An image or other file, inline when its url is a data: url. */
function mediaPart(p: Rec): ResultContentPart {
  const mime = p.mime as string;
  const part: ResultContentPart = mime.startsWith('image/')
    ? { type: 'image', mediaType: mime }
    : { type: 'file', mediaType: mime };
  const url = p.url as string;
  const comma = url.indexOf(',');
  if (url.startsWith('data:') && comma !== -1) {
    const data = url.slice(comma + 1);
    part.data = data;
    part.byteSize = base64ByteSize(data);
  } else part.url = url;
  if (part.type === 'file' && typeof p.filename === 'string') part.name = p.filename;
  return part;
}

function usageOf(t: unknown): Usage | undefined {
  if (!isRecord(t)) return undefined;
  const cache = isRecord(t.cache) ? t.cache : {};
  const usage: Usage = {
    input: num(t.input),
    output: num(t.output),
    cacheRead: num(cache.read),
    cacheWrite: num(cache.write),
  };
  if (num(t.reasoning) > 0) usage.reasoning = num(t.reasoning);
  return usage.input + usage.output + usage.cacheRead + usage.cacheWrite > 0 ? usage : undefined;
}

function assistantDrafts(record: { info: Rec; parts: unknown[] }, i: number, base: EntryDraft, ctx: Ctx): EntryDraft[] {
  const info = record.info;
  const parts = record.parts.map((p, k) => checkedPart(p, i, k, ctx));
  const ok = parts.filter((p): p is Rec => p !== undefined);
  const model = asString(info.modelID);
  const provider = asString(info.providerID);
  if (model) base.model = provider ? { provider, id: model } : { id: model };
  const aborted = isRecord(info.error) && info.error.name === 'MessageAbortedError';
  if (info.error && !(aborted && ok.some((p) => p.type !== 'step-start' && p.type !== 'reasoning'))) {
    // toModelMessages skips it: the failed request is kept as an event with what it billed.
    const usage = usageOf(info.tokens);
    if (usage) base.usage = usage;
    return [base];
  }

  // One block per step (convertToModelMessages splits at step-start): an assistant message, then the results.
  interface Step {
    said: Part[];
    results: Part[];
    usage?: Usage;
  }
  const steps: Step[] = [{ said: [], results: [] }];
  let usageSeen = false;
  for (const p of ok) {
    const step = steps.at(-1)!;
    switch (p.type) {
      case 'step-start':
        if (step.said.length > 0 || step.results.length > 0 || step.usage) steps.push({ said: [], results: [] });
        break;
      case 'step-finish': {
        const usage = usageOf(p.tokens);
        usageSeen = true;
        if (usage) step.usage = usage;
        break;
      }
      case 'text':
        if (p.text !== '') step.said.push(textPart(p.text as string));
        break;
      case 'reasoning': {
        const thinking: Part = { type: 'thinking', text: p.text as string };
        const meta = isRecord(p.metadata) && isRecord(p.metadata.anthropic) ? p.metadata.anthropic : undefined;
        if (typeof meta?.signature === 'string') thinking.signature = meta.signature;
        step.said.push(thinking);
        break;
      }
      case 'tool': {
        const state = p.state as Rec;
        const callId = p.callID as string;
        const name = p.tool as string;
        step.said.push({
          type: 'tool-call',
          id: callId,
          name,
          arguments: isRecord(state.input) ? state.input : {},
        });
        step.results.push(toolResult(callId, name, state));
        break;
      }
    }
  }
  if (!usageSeen) {
    // No step-finish parts: the message's tokens are its last request's.
    const usage = usageOf(info.tokens);
    const last = steps.findLast((s) => s.said.length > 0);
    if (usage && last) last.usage = usage;
    else if (usage) base.usage = usage;
  }

  const drafts: EntryDraft[] = [];
  const finish = asString(info.finish);
  steps.forEach((step, k) => {
    if (step.said.length === 0) {
      // A step with nothing sent (convertToModelMessages drops it) still billed its request: an event.
      if (step.usage) {
        const at: EntryDraft =
          drafts.length === 0 ? base : { kind: 'event', sourceType: 'assistant/step', fromSameRecord: true };
        at.usage = step.usage;
        drafts.push(at);
      }
      return;
    }
    const message: Message = { role: 'assistant', parts: step.said };
    if (model) message.model = model;
    if (provider) message.provider = provider;
    if (step.usage) message.usage = step.usage;
    if (finish && k === steps.length - 1) message.stopReason = finish;
    if (base.timestamp !== undefined) message.timestamp = base.timestamp;
    if (drafts.length === 0) drafts.push({ ...base, kind: 'message', message });
    else drafts.push({ kind: 'message', sourceType: 'assistant/step', fromSameRecord: true, message });
    if (step.results.length > 0)
      drafts.push({
        kind: 'message',
        sourceType: 'assistant/tool',
        fromSameRecord: true,
        message: { role: 'tool', parts: step.results },
      });
  });
  return drafts.length === 0 ? [base] : drafts;
}

/** A tool part's result as toModelMessages sends it. */
function toolResult(callId: string, toolName: string, state: Rec): Part {
  const result = (text: string, isError: boolean, more: ResultContentPart[] = []): Part => ({
    type: 'tool-result',
    callId,
    toolName,
    content: [textPart(text), ...more],
    isError,
  });
  if (state.status === 'completed') {
    const time = isRecord(state.time) ? state.time : {};
    if (time.compacted) return result(OPENCODE_CLEARED_RESULT, false);
    const attachments = Array.isArray(state.attachments)
      ? state.attachments.filter(
          (a): a is Rec => isRecord(a) && typeof a.mime === 'string' && typeof a.url === 'string',
        )
      : [];
    return result(state.output as string, false, attachments.map(mediaPart));
  }
  if (state.status === 'error') {
    const meta = isRecord(state.metadata) ? state.metadata : {};
    if (meta.interrupted === true && typeof meta.output === 'string') return result(meta.output, false);
    return result(state.error as string, true);
  }
  return result(OPENCODE_INTERRUPTED_RESULT, true);
}

/** An export: its session info (an opencode id, `ses_…`) and messages of `{info: {role}, parts}`. */
function confidence(document: unknown): number {
  if (!isRecord(document) || !isRecord(document.info) || !Array.isArray(document.messages)) return 0;
  const info = document.info;
  if (typeof info.id !== 'string') return 0;
  const sample = document.messages.slice(0, 20);
  if (!sample.every(isMessageRecord)) return 0;
  const sessionLike = info.id.startsWith('ses_') || (isRecord(info.time) && typeof info.title === 'string');
  if (sample.length === 0) return sessionLike ? 0.8 : 0;
  return sessionLike ? 0.95 : 0.7;
}

export const opencodeFormat: TranscriptFormat = {
  id: 'opencode',
  label: 'opencode session export (opencode export <sessionID>)',
  container: 'json',
  detect: ({ document }) => confidence(document),
  readDocument: readExport,
};
