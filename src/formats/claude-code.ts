/**
 * Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`, subagents in `<session>/subagents/`).
 * Records link as a tree by uuid/parentUuid; a `compact_boundary` system record starts a new root and points back with
 * `logicalParentUuid`, and the next user record (`isCompactSummary`) carries the summary. One API response is written
 * as several assistant records (one per content block) that share `message.id` and repeat the usage.
 */
import type {
  CompactionMarker,
  Entry,
  EntryDraft,
  Message,
  Part,
  Session,
  SessionInfo,
  Usage,
} from '../model/types.js';
import { EPOCH_ISO, imageFrom, isoTime, num, resultContent, textPart, compactionText } from '../model/parts.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';
import { takeLinkedRecord } from './linked-record.js';
import { writeJsonl } from './jsonl.js';
import { stableId } from '../model/ids.js';
import { activeView, type AbridgeMarker, type ViewItem } from '../model/view.js';
import { anthropicBodyOfSession, anthropicKeeps, toolInput } from './anthropic.js';

const RECORD_TYPES = new Set([
  'user',
  'assistant',
  'system',
  'summary',
  'progress',
  'file-history-snapshot',
  'queue-operation',
  'custom-title',
  'tag',
  'attachment',
  'result',
]);

class ClaudeCodeDecoder implements EntryDecoder {
  private info: SessionInfo = {};
  // Positions only (never the entries themselves), so that a streamed session is not held in memory.
  private readonly indexById = new Map<string, number>();
  private readonly boundaries: { draft: EntryDraft; index: number }[] = [];
  private pendingSummary: CompactionMarker | undefined;

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const drafts = this.decodeRecord(r, ctx);
    const first = drafts[0];
    if (first?.id !== undefined) this.indexById.set(first.id, ctx.nextIndex);
    if (first?.kind === 'compaction') this.boundaries.push({ draft: first, index: ctx.nextIndex });
    return drafts;
  }

  private decodeRecord(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const type = asString(r.type) ?? '';
    const base: EntryDraft = { kind: 'event', sourceType: type, raw: r };
    takeLinkedRecord(r, base, this.info, asString(r.uuid));
    const logical = asString(r.logicalParentUuid);
    if (logical) base.logicalParentId = logical;

    switch (type) {
      case 'assistant':
        return [this.assistant(r, base, ctx)];
      case 'user':
        return this.user(r, base, ctx);
      case 'system': {
        if (r.subtype === 'compact_boundary') {
          const meta = isRecord(r.compactMetadata) ? r.compactMetadata : {};
          const marker: CompactionMarker = { number: this.boundaries.length + 1, summary: '', source: 'claude-code' };
          if (typeof meta.preTokens === 'number') marker.tokensBefore = meta.preTokens;
          if (typeof meta.trigger === 'string') marker.trigger = meta.trigger;
          base.kind = 'compaction';
          base.compaction = marker;
          this.pendingSummary = marker;
        }
        // A slash command run in the terminal and its output: Claude Code sends them to the model as user messages.
        if (r.subtype === 'local_command' && typeof r.content === 'string' && r.content !== '') {
          base.kind = 'message';
          base.message = { role: 'user', parts: [textPart(r.content)], synthetic: true };
          if (base.timestamp !== undefined) base.message.timestamp = base.timestamp;
        }
        return [base];
      }
      case 'summary':
        base.kind = 'session-info';
        if (typeof r.summary === 'string') this.info.title = r.summary;
        return [base];
      case 'custom-title':
        base.kind = 'session-info';
        if (typeof r.customTitle === 'string') this.info.title = r.customTitle;
        return [base];
      default:
        if (!RECORD_TYPES.has(type)) {
          base.kind = 'unknown';
          ctx.problem({
            kind: 'unknown-entry-type',
            message: `line ${ctx.line}: unknown Claude Code record type "${type}"; kept as is`,
          });
        }
        return [base];
    }
  }

  private assistant(r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft {
    const m = r.message;
    if (!isRecord(m)) {
      ctx.problem({ kind: 'invalid-entry', message: `line ${ctx.line}: assistant record has no message object` });
      base.kind = 'unknown';
      return base;
    }
    const message: Message = { role: 'assistant', parts: contentParts(m.content) };
    const model = asString(m.model);
    if (model) {
      message.model = model;
      message.provider = 'anthropic';
      // Claude Code writes locally made-up replies (API errors, interruptions) with the model "<synthetic>".
      if (model === '<synthetic>') message.synthetic = true;
    }
    const usage = decodeUsage(m.usage);
    if (usage && !message.synthetic) message.usage = usage;
    const id = asString(m.id);
    if (id) message.responseId = id;
    const stop = asString(m.stop_reason);
    if (stop) message.stopReason = stop;
    if (base.timestamp !== undefined) message.timestamp = base.timestamp;
    base.kind = 'message';
    base.message = message;
    return base;
  }

  private user(r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    const m = r.message;
    if (!isRecord(m)) {
      ctx.problem({ kind: 'invalid-entry', message: `line ${ctx.line}: user record has no message object` });
      base.kind = 'unknown';
      return [base];
    }
    const synthetic = r.isMeta === true || r.isCompactSummary === true || r.isVisibleInTranscriptOnly === true;
    if (r.isCompactSummary === true) {
      const summary =
        typeof m.content === 'string'
          ? m.content
          : contentParts(m.content)
              .map((p) => (p.type === 'text' ? p.text : ''))
              .join('\n');
      const marker = this.pendingSummary ?? { number: this.boundaries.length + 1, summary: '', source: 'claude-code' };
      marker.summary = summary;
      this.pendingSummary = undefined;
      base.kind = 'message';
      base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
      if (base.timestamp !== undefined) base.message.timestamp = base.timestamp;
      return [base];
    }
    const parts = contentParts(m.content);
    const results = parts.filter((p) => p.type === 'tool-result');
    const others = parts.filter((p) => p.type !== 'tool-result');
    const drafts: EntryDraft[] = [];
    const make = (role: Message['role'], ps: Part[]): Message => {
      const msg: Message = { role, parts: ps };
      if (synthetic) msg.synthetic = true;
      if (base.timestamp !== undefined) msg.timestamp = base.timestamp;
      return msg;
    };
    // Tool results first: they answer the previous assistant turn and must directly follow it.
    if (results.length > 0) drafts.push({ ...base, kind: 'message', message: make('tool', results) });
    if (others.length > 0 || results.length === 0) {
      const msg = make('user', others);
      if (drafts.length === 0) drafts.push({ ...base, kind: 'message', message: msg });
      else
        drafts.push({
          kind: 'message',
          sourceType: 'user',
          message: msg,
          ...(base.sidechain ? { sidechain: true } : {}),
        });
    }
    return drafts;
  }

  finish(): { info: SessionInfo } {
    // What each compaction archived: from the previous boundary up to the record the boundary logically follows.
    let from = 0;
    for (const { draft, index: at } of this.boundaries) {
      const parent = draft.logicalParentId ? this.indexById.get(draft.logicalParentId) : undefined;
      const to = parent ?? at - 1;
      if (to >= from) draft.compaction!.archived = { fromEntry: from, toEntry: to };
      draft.compaction!.firstKeptEntry = at + 1;
      from = at + 1;
    }
    return { info: this.info };
  }
}

function decodeUsage(u: unknown): Usage | undefined {
  if (!isRecord(u)) return undefined;
  return {
    input: num(u.input_tokens),
    output: num(u.output_tokens),
    cacheRead: num(u.cache_read_input_tokens),
    cacheWrite: num(u.cache_creation_input_tokens),
  };
}

/** Anthropic content blocks (as Claude Code stores them) into parts. */
export function contentParts(content: unknown): Part[] {
  if (typeof content === 'string') return [textPart(content)];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const b of content) {
    if (typeof b === 'string') {
      parts.push(textPart(b));
      continue;
    }
    if (!isRecord(b)) continue;
    switch (b.type) {
      case 'text':
        parts.push(textPart(asString(b.text) ?? ''));
        break;
      case 'thinking': {
        const p: Part = { type: 'thinking', text: asString(b.thinking) ?? '' };
        const sig = asString(b.signature);
        if (sig) p.signature = sig;
        parts.push(p);
        break;
      }
      case 'redacted_thinking':
        parts.push({ type: 'thinking', text: '', signature: asString(b.data) ?? '', redacted: true });
        break;
      case 'tool_use':
      case 'server_tool_use':
        parts.push({
          type: 'tool-call',
          id: asString(b.id) ?? '',
          name: asString(b.name) ?? '',
          arguments: b.input ?? {},
        });
        break;
      case 'tool_result':
        parts.push({
          type: 'tool-result',
          callId: asString(b.tool_use_id) ?? '',
          content: resultContent(b.content),
          isError: b.is_error === true,
          ...(b.is_error === false ? { isErrorExplicit: true as const } : {}),
        });
        break;
      case 'image':
        parts.push(imageFrom(b));
        break;
      case 'document': {
        const source = isRecord(b.source) ? b.source : {};
        const p: Part = { type: 'file' };
        const mediaType = asString(source.media_type);
        if (mediaType) p.mediaType = mediaType;
        const title = asString(b.title);
        if (title) p.name = title;
        if (typeof source.data === 'string') {
          p.data = source.data;
          p.byteSize = source.type === 'base64' ? Math.floor((source.data.length * 3) / 4) : source.data.length;
        }
        parts.push(p);
        break;
      }
      default:
        parts.push(textPart(JSON.stringify(b)));
    }
  }
  return parts;
}

// ---------------------------------------------------------------------------------------------------------------------
// Writing

/** A result's content: one text as a string, else its blocks (empty texts left out, as the API wants). */
function resultBlocksOf(content: Part[]): unknown {
  const kept = content.filter((c) => c.type !== 'text' || c.text.trim() !== '');
  if (kept.length === 1 && kept[0]!.type === 'text') return kept[0]!.text;
  return encodeBlocks(kept);
}

/**
 * Parts as Claude Code records them — what its CLI sends back as it is: thinking only when the API takes it back
 * (signed by Anthropic: another provider's reasoning, in a session converted from another agent, would be refused), a
 * result of one text as a string (as Claude Code writes its own).
 */
function encodeBlocks(parts: Part[], message?: Message): unknown[] {
  const out: unknown[] = [];
  for (const p of parts) {
    switch (p.type) {
      case 'text':
        // An empty text block is refused by the API (and sent by the CLI as "(no content)"): left out.
        if (p.text.trim() !== '') out.push({ type: 'text', text: p.text });
        break;
      case 'thinking':
        if (message && !anthropicKeeps(p, message)) break;
        if (p.redacted) out.push({ type: 'redacted_thinking', data: p.signature ?? '' });
        else out.push({ type: 'thinking', thinking: p.text, signature: p.signature ?? '' });
        break;
      case 'tool-call':
        // Arguments that are not an object (a Codex custom tool's patch text) as the API takes them: the CLI sends
        // what is recorded.
        out.push({ type: 'tool_use', id: p.id, name: p.name, input: toolInput(p.arguments) });
        break;
      case 'tool-result': {
        const content = resultBlocksOf(p.content);
        out.push({
          type: 'tool_result',
          tool_use_id: p.callId,
          // (An empty result goes without content, as the API takes it.)
          ...(Array.isArray(content) && content.length === 0 ? {} : { content }),
          ...(p.isError ? { is_error: true } : p.isErrorExplicit ? { is_error: false } : {}),
        });
        break;
      }
      case 'image':
        out.push(
          p.data
            ? { type: 'image', source: { type: 'base64', media_type: p.mediaType ?? 'image/png', data: p.data } }
            : p.url
              ? { type: 'image', source: { type: 'url', url: p.url } }
              : { type: 'text', text: `[image ${p.mediaType ?? ''} not stored]` },
        );
        break;
      case 'file':
        out.push({ type: 'text', text: `[file ${p.name ?? ''} ${p.mediaType ?? ''} ${p.byteSize ?? '?'} bytes]` });
        break;
      case 'compaction':
        out.push({ type: 'text', text: compactionText(p.marker) });
        break;
    }
  }
  return out;
}

interface RecordContext {
  sessionId: string;
  cwd: string;
  parent: string | null;
  n: number;
  session: Session;
}

/** The fields every record abridge writes begins with, as Claude Code writes them. */
function recordHeader(ctx: RecordContext, parent: string | null, uuid: string, timestamp: string, sidechain: boolean) {
  return {
    parentUuid: parent,
    isSidechain: sidechain,
    userType: 'external',
    cwd: ctx.cwd,
    sessionId: ctx.sessionId,
    version: 'abridge',
    uuid,
    timestamp,
  };
}

/**
 * An abridge compaction as Claude Code records its own: a `compact_boundary` (no parent; `logicalParentUuid` = the record
 * it follows), then the compacted context re-appended as a new chain of user and assistant records, and the summary as
 * an `isCompactSummary` user record at its place. On `--resume`, Claude Code loads only the chain after the last
 * boundary, so it sends this context; the records before stay in the file.
 *
 * The chain holds the compacted view (edits applied) as the Anthropic request writer sends it — one record per API
 * message, calls and results already paired — rather than one copy per original record, because Claude Code repairs a
 * transcript as it loads it in its own ways: it gathers every record sharing a response's `message.id` into that
 * response (a copy keeping the original id pulled the original blocks and their unedited results back in), drops a
 * response's thinking left alone, and pairs results interleaved with a response's later blocks differently. Records get
 * new uuids and new `message.id`s; none is a sidechain record, so a subagent's own transcript resumes as a session.
 */
function encodeAbridgeCompaction(e: Entry, marker: AbridgeMarker, ctx: RecordContext): Record<string, unknown>[] {
  const view = activeView({ ...ctx.session, entries: ctx.session.entries.slice(0, e.index + 1) });
  const seed = `${ctx.sessionId}:${e.index}:${ctx.n}`;
  return encodeViewChain(view, ctx, seed, isoTime(e.timestamp) ?? EPOCH_ISO, {
    compactMetadata: { trigger: 'manual', preTokens: marker.tokensBefore ?? 0 },
  });
}

/** Field of the boundary an undo writes, naming the compactions it undid (Claude Code ignores fields it does not know). */
export const CLAUDE_CODE_UNDO_FIELD = 'abridgeUndo';

/**
 * The records that undo compactions of a Claude Code transcript, appended after its last record: a `compact_boundary`
 * following that record (marked with the compactions it undoes, and no summary), then the view before them as a new
 * chain — the one way Claude Code's own model allows, since `--resume` loads the chain after the last boundary.
 */
export function claudeCodeUndoRecords(
  session: Session,
  view: readonly ViewItem[],
  undone: Record<string, unknown>[],
  preTokens: number,
  iso: string,
): Record<string, unknown>[] {
  let parent: string | null = null;
  for (const e of session.entries) if (e.id !== undefined && !e.sidechain) parent = e.id;
  const ctx: RecordContext = {
    sessionId: session.info.id ?? uuidFrom(`session:${session.entries.length}`),
    cwd: session.info.cwd ?? '',
    parent,
    n: session.entries.length,
    session,
  };
  const seed = `abridge-undo:${ctx.sessionId}:${session.entries.length}`;
  return encodeViewChain(view, ctx, seed, iso, {
    compactMetadata: { trigger: 'manual', preTokens },
    [CLAUDE_CODE_UNDO_FIELD]: { undone },
  });
}

/** A boundary then a view as a new chain of records (see encodeAbridgeCompaction). */
function encodeViewChain(
  view: readonly ViewItem[],
  ctx: RecordContext,
  seed: string,
  iso: string,
  boundary: Record<string, unknown>,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let parent: string | null = null;
  const push = (fields: Record<string, unknown>) => {
    const uuid = uuidFrom(`abridge-copy:${seed}:${out.length}`);
    out.push({ ...recordHeader(ctx, parent, uuid, iso, false), ...fields });
    parent = uuid;
  };
  push({
    logicalParentUuid: ctx.parent,
    type: 'system',
    subtype: 'compact_boundary',
    content: 'Conversation compacted',
    isMeta: false,
    level: 'info',
    ...boundary,
  });
  const request = anthropicBodyOfSession({
    format: 'anthropic',
    info: {},
    entries: view.map((v, index) => ({ index, kind: 'message' as const, message: v.message })),
    problems: [],
  });
  const summary = view.find((v) => v.covers !== undefined && v.message.parts.some((p) => p.type === 'compaction'));
  const summaryText = summary
    ? summary.message.parts.map((p) => (p.type === 'compaction' ? compactionText(p.marker) : '')).join('')
    : undefined;
  // A system prompt (a session from another format) is not part of a Claude Code transcript: kept as a meta record.
  if (request.system)
    push({ type: 'user', isMeta: true, message: { role: 'user', content: [{ type: 'text', text: request.system }] } });
  let summaryPlaced = false;
  for (const m of request.messages) {
    if (m.role === 'assistant') {
      const id = `msg_abridge_${stableId(`${seed}:${out.length}`, 24)}`;
      const usage = { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };
      push({
        type: 'assistant',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model: request.model,
          content: m.content,
          stop_reason: null,
          stop_sequence: null,
          usage,
        },
      });
      continue;
    }
    const at =
      summaryPlaced || !summaryText ? -1 : m.content.findIndex((b) => b.type === 'text' && b.text === summaryText);
    if (at === -1) {
      push({ type: 'user', message: { role: 'user', content: m.content } });
      continue;
    }
    summaryPlaced = true;
    if (at > 0) push({ type: 'user', message: { role: 'user', content: m.content.slice(0, at) } });
    push({
      type: 'user',
      isCompactSummary: true,
      isVisibleInTranscriptOnly: true,
      message: { role: 'user', content: summaryText },
    });
    if (at < m.content.length - 1) push({ type: 'user', message: { role: 'user', content: m.content.slice(at + 1) } });
  }
  return out;
}

function assistantMessage(m: Message, id: string): Record<string, unknown> {
  const u = m.usage;
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: m.model ?? 'unknown',
    content: encodeBlocks(m.parts, m),
    stop_reason: m.stopReason ?? null,
    stop_sequence: null,
    usage: {
      input_tokens: u?.input ?? 0,
      cache_creation_input_tokens: u?.cacheWrite ?? 0,
      cache_read_input_tokens: u?.cacheRead ?? 0,
      output_tokens: u?.output ?? 0,
    },
  };
}

function encodeRecords(e: Entry, ctx: RecordContext): Record<string, unknown>[] {
  if (e.compaction?.source === 'abridge') return encodeAbridgeCompaction(e, e.compaction as AbridgeMarker, ctx);
  const iso = isoTime(e.timestamp) ?? isoTime(e.message?.timestamp) ?? EPOCH_ISO;
  const common = (uuid: string) => recordHeader(ctx, ctx.parent, uuid, iso, e.sidechain === true);
  const uuid = uuidFrom(`${ctx.sessionId}:${ctx.n}`);
  if (e.compaction && !e.message) {
    return [
      {
        ...common(uuid),
        parentUuid: null,
        logicalParentUuid: ctx.parent,
        type: 'system',
        subtype: 'compact_boundary',
        content: 'Conversation compacted',
        isMeta: false,
        level: 'info',
        compactMetadata: { trigger: e.compaction.trigger ?? 'auto', preTokens: e.compaction.tokensBefore ?? 0 },
      },
    ];
  }
  const m = e.message;
  if (!m) return [];
  if (m.role === 'assistant')
    return [
      { ...common(uuid), type: 'assistant', message: assistantMessage(m, m.responseId ?? `msg_${stableId(uuid, 24)}`) },
    ];
  const compaction = m.parts.find((p) => p.type === 'compaction');
  if (compaction)
    return [
      {
        ...common(uuid),
        type: 'user',
        isCompactSummary: true,
        isVisibleInTranscriptOnly: true,
        message: { role: 'user', content: compaction.marker.summary },
      },
    ];
  // System prompts are not part of Claude Code transcripts: keep one as a meta user record rather than lose it.
  const meta = m.role === 'system' || m.synthetic === true;
  return [
    {
      ...common(uuid),
      type: 'user',
      ...(meta ? { isMeta: true } : {}),
      message: { role: 'user', content: encodeBlocks(m.parts) },
    },
  ];
}

function uuidFrom(seed: string): string {
  const h = stableId(seed, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function writeClaudeCode(session: Session, options: { redact?: (text: string) => string } = {}): string {
  const redact = options.redact ?? ((t: string) => t);
  const sessionId = session.info.id ?? uuidFrom(`session:${session.format}:${session.entries.length}`);
  const cwd = session.info.cwd ?? '';
  const items: { text: string; sameLineAsPrevious?: boolean; blankLinesBefore?: number }[] = [];
  let parent: string | null = null;
  let lastSidechain: string | null = null;
  const same = session.format === 'claude-code';
  for (const e of session.entries) {
    if (same && e.fromSameRecord) continue;
    if (same && (e.raw !== undefined || e.rawText !== undefined)) {
      items.push({
        text: e.rawText ?? JSON.stringify(e.raw),
        sameLineAsPrevious: e.sameLineAsPrevious,
        blankLinesBefore: e.blankLinesBefore,
      });
      if (e.id !== undefined && !e.sidechain) parent = e.id;
      if (e.id !== undefined && e.sidechain) lastSidechain = e.id;
      continue;
    }
    for (const r of encodeRecords(e, { sessionId, cwd, parent: parent ?? lastSidechain, n: items.length, session })) {
      // Records abridge adds (or converts) are redacted; the session's own records above are written as they were.
      items.push({ text: redact(JSON.stringify(r)) });
      parent = r.uuid as string;
    }
  }
  return writeJsonl(items, same ? session : {});
}

export const claudeCodeFormat: TranscriptFormat = {
  id: 'claude-code',
  label: 'Claude Code transcript JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    // Qwen Code's recordings link records the same way, but hold Gemini Contents (`{role, parts}`): not ours.
    if (records.some((r) => isRecord(r.message) && Array.isArray(r.message.parts) && !('content' in r.message)))
      return 0;
    const known = share(records, (r) => typeof r.type === 'string' && RECORD_TYPES.has(r.type));
    const linked = share(records, (r) => typeof r.uuid === 'string' && typeof r.sessionId === 'string');
    const msgs = share(records, (r) => (r.type === 'user' || r.type === 'assistant') && isRecord(r.message));
    if (known > 0.9 && (linked > 0.3 || msgs > 0.3)) return 0.95;
    if (known > 0.6 && msgs > 0.2) return 0.6;
    return 0;
  },
  createDecoder: () => new ClaudeCodeDecoder(),
  write: writeClaudeCode,
};
