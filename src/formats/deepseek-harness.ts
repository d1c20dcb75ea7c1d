/**
 * DeepSeek Harness SDK session logs (`<root>/cwd-<sha256(cwd)[:12]>/<sessionId>.jsonl`, written by the JSONL
 * persistence backend, packages/session-persistence/session-persistence-jsonl/src/format.ts; the paths here are of
 * the harness' repository as HarleyCoops/deepseek-Entire.io holds its history): a `{type: 'session', version, id,
 * createdAt, cwd?, parentSession?, seedLength?, delegationDepth}` header line, then one event a line, `{type, seq,
 * time, data, surfaceOp?, sourceEventSeqs?}`, with slash types. Read as the harness build of July 2026
 * that wrote the "v0" vocabulary reads it (commit 1097fa3507 and the 2026-07-20 merge 2e7cdddb89 that brought the
 * corpus sample in as examples/acp-agent/tests/fixtures/live-mode-switching-2026-07-07.session.jsonl); current builds
 * refuse such logs (`request/header-delta` is "unsupported legacy"), so the message shapes of current builds
 * (`data.message` wrappers, packed `*-chunks` rows) are taken too, but their newer events are kept as events.
 *
 * What the model sees is what the harness derives from the log (packages/core/session/src/index.ts
 * `Session.deriveMessages` / `deriveEventMessage`, surface.ts `SurfaceManager`) and sends
 * (packages/core/agent-loop/src/loop.ts `runStep`: `{system, tools, model}` from the folded request header, the
 * derived messages as they stood when the step started; packages/llm/llm-deepseek/src/serialize.ts on the wire):
 * - Only the five surface events produce messages, in surface order: `user/message` (its content, as a user message;
 *   a source other than `{kind: 'user'}`, e.g. the approval or bash plugins announcing a mode change, is harness
 *   text: synthetic), `context/message` and `steering/message` (user messages wrapped in `<context source="…">` …
 *   `</context>` / `<steering …>`, `renderTagged`; an `envelope: 'raw'` context is not wrapped), `assistant/message`
 *   and `tool/result`. Text blocks are joined without separator (`flattenText`), as the wire sends them.
 * - `assistant/message` holds the step's assembled response (the `block-end` blocks of its `assistant/chunk`s,
 *   listed in `sourceEventSeqs`) and its usage: the chunks are never messages. An empty content (a usage-only step)
 *   is no message (`deriveEventMessage` returns null). `reasoning` blocks are sent back as `reasoning_content` only on
 *   responses that call tools (`serializeAssistant`, DeepSeek's thinking-mode passback rule), so they are thinking
 *   parts there and left out (kept in `raw`) elsewhere. `tool-call` blocks are calls with their ids.
 * - `tool/result` answers the call of the same `callId` (a `tool` message after it); its text, or "(no output)" when
 *   empty, as the wire sends it. A result whose call no earlier assistant message made, or made and already answered,
 *   is kept as an event with a problem (the provider would reject it).
 * - `request/header` snapshots `{config: {model, …}, system?, tools?}` and `request/header-delta` amends it
 *   (`foldRequestHeader` / `applyHeaderDelta`, packages/core/session/src/request-header.ts at 1097fa3507): a
 *   `SystemDelta` keeps the first `keepStart` and last `keepEnd` lines and puts `insert` between, a `ToolsDelta` drops
 *   `removed`, replaces `changed` in place and appends `added`, a `config` replaces the config. The system prompt is
 *   one system message, at the first header that has one; a later change of the prompt updates THAT message (the
 *   model sees the prompt in force, once), so the session shows the prompt of the last request. The first turn's user
 *   message is logged before its step logs the first header: the record stays an event there and its message follows
 *   the system message, as on the wire (system first). The tools in force at the end go to `extra.request.tools` (as
 *   recorded: `{name, description, parameters}`), its model to `extra.request.model`; assistant messages carry the
 *   model of the header in force when they were written.
 * - A message event whose `surfaceOp` is `{op: 'replace', start, end}` (the compaction plugin's summary,
 *   packages/compact/compact-basic/src/index.ts `compactRegion`, always anchored at the head of the surface) is a
 *   compaction: its text is the summary, the first surface node after `end` is the first kept entry. The system prompt
 *   is not part of what it replaces: it is repeated after the marker when the marker hides it.
 * - Usage is `TokenUsage` as the adapters map it (llm-deepseek/src/translate.ts `mapUsage`, llm-pi-ai convert.ts):
 *   `inputTokens` already excludes the cache reads (`prompt_tokens − cached`), `outputTokens` includes the reasoning.
 *
 * Log-only events stay events: turn and step boundaries, `tool/call` (the call is in the assistant message),
 * `approval/*` and `bash/sandbox-mode` (audit records; what the model learns of a mode change comes through the
 * plugin's user message and the system-prompt delta), `todo/write`, `hook/*`, `compact/*`, `prompt/blocked`. Not
 * reproduced: the error results the backend appends for calls a crash left unanswered (`interruptedTurnClosers`,
 * repair.ts: they are in the file once the session was resumed), a compaction range that does not start at the head
 * of the surface (read as if it replaced everything before its first kept message; reported), the system prompt of
 * each earlier request (the session holds the last one; a streaming reader sees each prompt as it was when the system
 * message was read), the place of the system prompt after a compaction (it follows the summary and the messages kept,
 * where the wire puts it first), the messages of a log cut off before its first request header and before its turn
 * ended (they wait for either), and non-text blocks (images of later builds, which the DeepSeek wire refuses).
 */
import type { CompactionMarker, EntryDraft, Message, Part, SessionInfo, Usage } from '../model/types.js';
import { isDateMs, num, parseArguments, textPart } from '../model/parts.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';

/** Events that put a message on the surface (what the harness derives its history from). */
const SURFACE_TYPES = new Set([
  'user/message',
  'assistant/message',
  'tool/result',
  'context/message',
  'steering/message',
]);

/** The request header in force: the folded `request/header` and `request/header-delta` events (canonical form). */
interface RequestHeader {
  config: Record<string, unknown>;
  system?: string;
  tools?: unknown[];
}

class DeepSeekHarnessDecoder implements EntryDecoder {
  private readonly info: SessionInfo = {};
  private readonly extra: Record<string, unknown> = {};
  private header: RequestHeader | undefined;
  /** The system message the model sees, and its entry: updated in place when the prompt changes. */
  private system: { message: Message; entry: number } | undefined;
  /** Calls made and not answered yet, id → tool name; and the ones answered. */
  private readonly open = new Map<string, string>();
  private readonly answered = new Set<string>();
  /** The surface: seqs of the message events in the order the model sees them, and each one's entry index. */
  private readonly surface: number[] = [];
  private readonly entryOfSeq = new Map<number, number>();
  /**
   * Messages logged before the first request header (a turn's user message comes before its first step logs the
   * header): the model gets them after the system prompt, so they become messages there.
   */
  private deferred: { draft: EntryDraft; seq: number }[] = [];
  private compactions = 0;

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const type = asString(r.type);
    const base: EntryDraft = { kind: 'event', sourceType: type ?? '', raw: r };
    if (type === 'session') return [this.sessionHeader(r, base, ctx)];
    const time =
      typeof r.time === 'number'
        ? timeOf(r.time, 'time', ctx)
        : typeof r.time0 === 'number'
          ? timeOf(r.time0, 'time0', ctx)
          : undefined;
    if (time !== undefined) base.timestamp = time;
    if (type === undefined || !isRecord(r.data) || !(typeof r.seq === 'number' || isChunkRow(r))) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: expected a DeepSeek harness event {type, seq, time, data: {…}}${type ? ` (a "${type}" record without a numeric "seq" or a "data" object)` : ''}; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (!type.includes('/') && !isChunkRow(r)) {
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: unknown DeepSeek harness record type "${type}" (expected the session header or a slash-typed event such as user/message); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const d = r.data;
    switch (type) {
      case 'request/header':
        return this.flushAfter(this.requestHeader(d, base, ctx), ctx);
      case 'turn/end':
        // A turn that ended before any request: its messages are still what the next request starts from.
        return this.flushAfter([base], ctx);
      case 'request/header-delta':
        return this.headerDelta(d, base, ctx);
      case 'session/title':
        if (typeof d.title === 'string') {
          base.kind = 'session-info';
          this.info.title = d.title;
        }
        return [base];
      default:
        return SURFACE_TYPES.has(type) ? this.surfaceEvent(type, r, d, base, ctx) : [base];
    }
  }

  private sessionHeader(r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft {
    base.kind = 'header';
    if (this.info.id !== undefined) return base;
    const id = asString(r.id);
    if (id) this.info.id = id;
    const cwd = asString(r.cwd);
    if (cwd) this.info.cwd = cwd;
    if (typeof r.version === 'number') this.info.version = r.version;
    const createdAt = typeof r.createdAt === 'number' ? timeOf(r.createdAt, 'createdAt', ctx) : undefined;
    if (createdAt !== undefined) {
      this.info.startedAt = createdAt;
      base.timestamp = createdAt;
    }
    if (typeof r.delegationDepth === 'number') this.extra.delegationDepth = r.delegationDepth;
    const parent = asString(r.parentSession);
    if (parent) this.extra.parentSession = parent;
    return base;
  }

  // -------------------------------------------------------------------------------------------------------------------
  // Request header

  private requestHeader(d: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    const h = d.header;
    if (!isRecord(h) || !isRecord(h.config)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: request/header without a "header" {config: {model}, system?, tools?}; kept as is`,
      });
      return [base];
    }
    const next: RequestHeader = { config: h.config };
    if (typeof h.system === 'string' && h.system !== '') next.system = h.system;
    if (Array.isArray(h.tools) && h.tools.length > 0) next.tools = h.tools;
    return [this.install(next, base, ctx)];
  }

  private headerDelta(d: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    const prev = this.header;
    if (!prev) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: request/header-delta before any request/header snapshot (the harness calls such a log corrupt); kept as is`,
      });
      return [base];
    }
    const next: RequestHeader = { config: prev.config };
    if (prev.system !== undefined) next.system = prev.system;
    if (prev.tools !== undefined) next.tools = prev.tools;
    if (d.system !== undefined) {
      const s = d.system;
      if (
        !isRecord(s) ||
        !isCount(s.keepStart) ||
        !isCount(s.keepEnd) ||
        !Array.isArray(s.insert) ||
        !s.insert.every((l) => typeof l === 'string')
      ) {
        ctx.problem({
          kind: 'invalid-entry',
          message: `line ${ctx.line}: request/header-delta "system" is not {keepStart, keepEnd, insert: string[]}; the system prompt is left as it was`,
        });
      } else {
        const lines = prev.system === undefined ? [] : prev.system.split('\n');
        const joined = [
          ...lines.slice(0, s.keepStart),
          ...(s.insert as string[]),
          ...lines.slice(lines.length - s.keepEnd),
        ];
        if (joined.length > 0) next.system = joined.join('\n');
        else delete next.system;
      }
    }
    if (d.tools !== undefined) {
      const t = d.tools;
      if (!isRecord(t)) {
        ctx.problem({
          kind: 'invalid-entry',
          message: `line ${ctx.line}: request/header-delta "tools" is not {added, removed, changed}; the tools are left as they were`,
        });
      } else {
        const removed = new Set(Array.isArray(t.removed) ? t.removed : []);
        const changed = new Map(
          (Array.isArray(t.changed) ? t.changed : []).filter(isRecord).map((tool) => [tool.name, tool]),
        );
        const kept = (prev.tools ?? [])
          .filter((tool) => !(isRecord(tool) && removed.has(tool.name)))
          .map((tool) => (isRecord(tool) && changed.has(tool.name) ? changed.get(tool.name) : tool));
        const tools = [...kept, ...(Array.isArray(t.added) ? t.added : [])];
        if (tools.length > 0) next.tools = tools;
        else delete next.tools;
      }
    }
    if (isRecord(d.config)) next.config = d.config;
    return [this.install(next, base, ctx)];
  }

  /** Puts a header in force: the system message gets its prompt, a new model is a model change. */
  private install(next: RequestHeader, base: EntryDraft, ctx: DecodeContext): EntryDraft {
    const prevModel = this.header ? asString(this.header.config.model) : undefined;
    this.header = next;
    const model = asString(next.config.model);
    if (this.system) {
      // The prompt of the requests from here on: the model sees it instead of the earlier one, not beside it.
      const text = this.system.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
      if ((next.system ?? '') !== text) this.system.message.parts = next.system ? [textPart(next.system)] : [];
    } else if (next.system !== undefined) {
      base.kind = 'message';
      base.message = { role: 'system', parts: [textPart(next.system)] };
      if (base.timestamp !== undefined) base.message.timestamp = base.timestamp;
      this.system = { message: base.message, entry: ctx.nextIndex };
    }
    if (model && prevModel !== undefined && model !== prevModel) {
      base.model = { id: model };
      if (base.kind === 'event') base.kind = 'model-change';
    }
    return base;
  }

  // -------------------------------------------------------------------------------------------------------------------
  // Messages

  private surfaceEvent(
    type: string,
    r: Record<string, unknown>,
    d: Record<string, unknown>,
    base: EntryDraft,
    ctx: DecodeContext,
  ): EntryDraft[] {
    const seq = r.seq as number;
    const op = r.surfaceOp;
    if (op === undefined) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: ${type} without a "surfaceOp" (the harness refuses a log whose message events lack one); read as appended`,
      });
    }
    if (isRecord(op)) {
      const before = this.flushAfter([], ctx);
      return [...before, ...this.compaction(type, seq, op, d, base, ctx, ctx.nextIndex + before.length)];
    }
    if (this.header === undefined && type !== 'assistant/message' && type !== 'tool/result') {
      const drafts = this.message(type, d, base, ctx);
      if (drafts[0]?.message) {
        // The record stays where it is, as an event; its message goes after the system prompt.
        const { message } = drafts[0];
        delete drafts[0].message;
        drafts[0].kind = 'event';
        const later: EntryDraft = { kind: 'message', sourceType: type, message };
        if (base.timestamp !== undefined) later.timestamp = base.timestamp;
        this.deferred.push({ draft: later, seq });
      }
      return drafts;
    }
    // A response or result to a request whose header the log lacks still comes after the deferred messages.
    const before = this.flushAfter([], ctx);
    const drafts = this.message(type, d, base, ctx);
    this.surface.push(seq);
    this.entryOfSeq.set(seq, ctx.nextIndex + before.length);
    return [...before, ...drafts];
  }

  /** The deferred messages after `drafts` (the record's own entries stay first). */
  private flushAfter(drafts: EntryDraft[], ctx: DecodeContext): EntryDraft[] {
    if (this.deferred.length === 0) return drafts;
    const out = [...drafts];
    for (const { draft, seq } of this.deferred) {
      this.surface.push(seq);
      this.entryOfSeq.set(seq, ctx.nextIndex + out.length);
      out.push(draft);
    }
    this.deferred = [];
    return out;
  }

  private message(type: string, d: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    // Later builds wrap the message: `data.message` = {role, content, source}.
    const m = isRecord(d.message) ? d.message : d;
    const content = m.content;
    if (!Array.isArray(content)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: ${type} without a "content" list of blocks; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    switch (type) {
      case 'assistant/message':
        return [this.assistant(m, content, d, base)];
      case 'tool/result':
        return this.toolResult(d, content, base, ctx);
      default:
        return [withMessage(base, this.user(type, m, content))];
    }
  }

  /** `user/message`, `context/message`, `steering/message`: one user message of their text. */
  private user(type: string, d: Record<string, unknown>, content: unknown[]): Message {
    const source = isRecord(d.source) ? d.source : {};
    const kind = asString(source.kind) ?? 'user';
    let text = joinText(content, 'text');
    // renderTagged: `<context source="plugin">`, the content, `</context>` as text blocks, joined on the wire.
    if (type === 'steering/message') text = `<steering source=${JSON.stringify(kind)}>${text}</steering>`;
    else if (type === 'context/message' && d.envelope !== 'raw')
      text = `<context source=${JSON.stringify(kind)}>${text}</context>`;
    const message: Message = { role: 'user', parts: text === '' ? [] : [textPart(text)] };
    if (type === 'context/message' || kind !== 'user') message.synthetic = true;
    return message;
  }

  private assistant(m: Record<string, unknown>, content: unknown[], d: Record<string, unknown>, base: EntryDraft) {
    const usage = usageOf(d.usage);
    // An empty response exists only to host the usage of a step (a max-tokens step): no message.
    if (content.length === 0) {
      if (usage) base.usage = usage;
      return base;
    }
    const calls: Part[] = [];
    for (const b of content) {
      if (!isRecord(b) || b.type !== 'tool-call') continue;
      const id = asString(b.id) ?? '';
      const name = asString(b.name) ?? '';
      calls.push({ type: 'tool-call', id, name, arguments: parseArguments(b.arguments) });
      this.open.set(id, name);
    }
    const parts: Part[] = [];
    const reasoning = joinText(content, 'reasoning');
    // Sent back as reasoning_content only beside tool calls (serializeAssistant).
    if (calls.length > 0 && reasoning !== '') parts.push({ type: 'thinking', text: reasoning });
    const text = joinText(content, 'text');
    if (text !== '') parts.push(textPart(text));
    parts.push(...calls);
    const message: Message = { role: 'assistant', parts };
    const source = isRecord(m.source) ? m.source : {};
    const model = asString(source.model) ?? (this.header ? asString(this.header.config.model) : undefined);
    if (model) message.model = model;
    const provider = asString(source.provider) ?? (this.header ? asString(this.header.config.provider) : undefined);
    if (provider) message.provider = provider;
    if (usage) message.usage = usage;
    return withMessage(base, message);
  }

  /** `tool/result`: `{callId, content, isError}`, or later builds' `message` holding one `tool-result` block. */
  private toolResult(d: Record<string, unknown>, content: unknown[], base: EntryDraft, ctx: DecodeContext) {
    const results: { callId: string; content: unknown[]; isError: boolean }[] = [];
    if (isRecord(d.message)) {
      for (const b of content)
        if (isRecord(b) && b.type === 'tool-result')
          results.push({
            callId: asString(b.toolCallId) ?? '',
            content: Array.isArray(b.content) ? b.content : [],
            isError: b.isError === true,
          });
    } else results.push({ callId: asString(d.callId) ?? '', content, isError: d.isError === true });
    const parts: Part[] = [];
    for (const r of results) {
      const toolName = this.open.get(r.callId);
      if (toolName === undefined) {
        const why = this.answered.has(r.callId)
          ? 'a second result for it'
          : 'no earlier assistant message made that call';
        ctx.problem({
          kind: 'invalid-entry',
          message: `line ${ctx.line}: tool/result for call "${r.callId}" that is not waiting for a result (${why}); kept as an event, not as a message`,
        });
        continue;
      }
      this.open.delete(r.callId);
      this.answered.add(r.callId);
      // The wire sends the result's text, and "(no output)" for an empty one (serializeMessages).
      const text = joinText(r.content, 'text') || '(no output)';
      parts.push({ type: 'tool-result', callId: r.callId, toolName, content: [textPart(text)], isError: r.isError });
    }
    return [parts.length > 0 ? withMessage(base, { role: 'tool', parts }) : base];
  }

  /**
   * A message that replaces a range of the surface (`surfaceOp: {op: 'replace', start, end}`): the compaction plugin's
   * summary in place of the messages from `start` to `end`.
   */
  private compaction(
    type: string,
    seq: number,
    op: Record<string, unknown>,
    d: Record<string, unknown>,
    base: EntryDraft,
    ctx: DecodeContext,
    index: number,
  ): EntryDraft[] {
    const from = typeof op.start === 'number' ? this.surface.indexOf(op.start) : -1;
    const to = typeof op.end === 'number' ? this.surface.indexOf(op.end) : -1;
    if (op.op !== 'replace' || from === -1 || to < from) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: ${type} replaces the history from seq ${String(op.start)} to seq ${String(op.end)}, which is not a range of the messages so far (expected surfaceOp {op: 'replace', start, end} over earlier message events); read as appended`,
      });
      const drafts = this.message(type, d, base, ctx);
      this.surface.push(seq);
      this.entryOfSeq.set(seq, index);
      return drafts;
    }
    if (from > 0)
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: a compaction of the history from seq ${op.start} on, after ${from} earlier messages it keeps: read as replacing everything before its first kept message`,
      });
    this.surface.splice(from, to - from + 1, seq);
    this.entryOfSeq.set(seq, index);
    const m = isRecord(d.message) ? d.message : d;
    const marker: CompactionMarker = {
      number: ++this.compactions,
      summary: joinText(Array.isArray(m.content) ? m.content : [], 'text'),
      source: 'deepseek-harness',
    };
    const after = this.surface[from + 1];
    const firstKept = after === undefined ? undefined : this.entryOfSeq.get(after);
    if (firstKept !== undefined) marker.firstKeptEntry = firstKept;
    base.kind = 'compaction';
    base.compaction = marker;
    base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
    if (base.timestamp !== undefined) base.message.timestamp = base.timestamp;
    const drafts: EntryDraft[] = [base];
    // The marker hides every entry before its first kept one (or before itself): the system prompt is not compacted.
    const system = this.system;
    if (system && system.entry < (firstKept ?? index)) {
      const message: Message = { role: 'system', parts: system.message.parts.map((p) => ({ ...p })) };
      const copy: EntryDraft = { kind: 'message', sourceType: 'request/header', message };
      if (base.timestamp !== undefined) {
        copy.timestamp = base.timestamp;
        message.timestamp = base.timestamp;
      }
      this.system = { message, entry: index + 1 };
      drafts.push(copy);
    }
    return drafts;
  }

  finish(): { info: SessionInfo; extra?: Record<string, unknown> } {
    const request: Record<string, unknown> = {};
    const model = this.header ? asString(this.header.config.model) : undefined;
    if (model) request.model = model;
    if (this.header?.tools) request.tools = this.header.tools;
    if (Object.keys(request).length > 0) this.extra.request = request;
    return Object.keys(this.extra).length > 0 ? { info: this.info, extra: this.extra } : { info: this.info };
  }
}

function withMessage(base: EntryDraft, message: Message): EntryDraft {
  base.kind = 'message';
  base.message = message;
  if (base.timestamp !== undefined) message.timestamp = base.timestamp;
  return base;
}

/** The text of the blocks of one type, joined as the wire joins them (no separator). */
function joinText(blocks: unknown[], type: 'text' | 'reasoning'): string {
  let out = '';
  for (const b of blocks) if (isRecord(b) && b.type === type && typeof b.text === 'string') out += b.text;
  return out;
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** Later builds pack streaming chunks into rows: `{type: 'text-chunks', seq0, time0, data}`. */
function isChunkRow(r: Record<string, unknown>): boolean {
  return typeof r.type === 'string' && r.type.endsWith('-chunks') && typeof r.seq0 === 'number';
}

/**
 * The harness' `TokenUsage`: `inputTokens` excludes the cache reads (the DeepSeek adapter subtracts
 * `prompt_cache_hit_tokens` from `prompt_tokens`), `outputTokens` includes the reasoning (`reasoningTokens`).
 */
function usageOf(u: unknown): Usage | undefined {
  if (!isRecord(u) || typeof u.inputTokens !== 'number') return undefined;
  const usage: Usage = {
    input: u.inputTokens,
    output: num(u.outputTokens),
    cacheRead: num(u.cacheReadTokens),
    cacheWrite: num(u.cacheWriteTokens),
  };
  if (typeof u.reasoningTokens === 'number') usage.reasoning = u.reasoningTokens;
  return usage;
}

/** A harness event: a slash type with a numeric `seq` and `time`, or a packed chunk row. */
function isEvent(r: Record<string, unknown>): boolean {
  if (isChunkRow(r)) return true;
  return typeof r.type === 'string' && r.type.includes('/') && typeof r.seq === 'number' && typeof r.time === 'number';
}

const OWN_EVENTS = new Set(['turn/start', 'step/start', 'user/message', 'assistant/message', 'request/header']);

export const deepSeekHarnessFormat: TranscriptFormat = {
  id: 'deepseek-harness',
  label: 'DeepSeek Harness SDK session log JSONL',
  container: 'jsonl',
  /**
   * The header (`{type: 'session', createdAt, delegationDepth…}`, which looks like pi's at a glance but has no ISO
   * `timestamp`) followed by slash-typed events with `seq`/`time`; or, for a log without its header line, such
   * events only, some of them this harness' own.
   */
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const [first, ...rest] = records;
    const header =
      first!.type === 'session' &&
      ('createdAt' in first! || 'delegationDepth' in first!) &&
      typeof first!.timestamp !== 'string';
    if (header) {
      if (rest.length === 0) return 'delegationDepth' in first! ? 0.9 : 0;
      return share(rest, isEvent) > 0.8 ? 0.95 : 0;
    }
    const own = records.some((r) => typeof r.type === 'string' && OWN_EVENTS.has(r.type));
    return own && share(records, (r) => isEvent(r) && isRecord(r.data)) > 0.9 ? 0.8 : 0;
  },
  createDecoder: () => new DeepSeekHarnessDecoder(),
};

/**
 * An event's epoch-milliseconds time, when a date can hold it. Any other number (year 275,760 and on, 1e20, a huge
 * negative) is a problem of the file, not a crash of whatever formats the date later: reported, and dropped.
 */
function timeOf(v: number, field: string, ctx: DecodeContext): number | undefined {
  if (isDateMs(v)) return v;
  ctx.problem({
    kind: 'bad-timestamp',
    message: `line ${ctx.line}: "${field}" ${v} is not a time (epoch milliseconds within ±8.64e15); read without it`,
  });
  return undefined;
}
