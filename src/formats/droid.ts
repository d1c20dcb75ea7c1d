/**
 * Factory's Droid CLI sessions (`~/.factory/sessions/<cwd with / as ->/<sessionId>.jsonl`, next to a
 * `<sessionId>.settings.json`). Read from real files written by droid 0.2xx (the harness captures committed in
 * inference-sh/agentprotocol, transcript/droid/testdata) and from how Droid loads a session back (its own reader reads
 * the `message` records in file order, and from a `compaction_state` on):
 *
 * - `session_start` (first line): `{id, title, sessionTitle?, owner, version: 2, cwd, hostId, parent?,
 *   isSessionTitleManuallySet, sessionTitleAutoStage}`; `parent` names the session a `/compress` continued from.
 * - `message`: `{id, parentId?, timestamp, message: {role, content: [Anthropic blocks], visibility?, modelId?,
 *   reasoningEffort?, …}, compactionSummaryId?}`. Content blocks are Anthropic's: `text`, `tool_use`, `tool_result`
 *   (`content` a string, `is_error`), `thinking`, `image`. `visibility: "llm_only"` marks what Droid injects for the
 *   model alone (the first message of a session: tool catalog, skills, system info, AGENTS.md, git state) — sent, read
 *   as a synthetic user message. `visibility: "user_only"` marks what the model never sees: hook runs
 *   (`hookEventName`, `hookCommands`, `hookResults`, with empty content) — kept as events. The assistant's model is
 *   `message.modelId` (`custom:<name>` for a BYOK model).
 * - `compaction_state`: `{id, timestamp, summaryText, summaryTokens, summaryKind, removedCount, anchorMessage?: {id,
 *   index}, systemInfo?, systemInfoText?}`. Droid sends the summary as a user message ("A previous instance of Droid
 *   has summarized the conversation thus far…") with the system info reminder, then the messages after the anchor
 *   (an automatic compaction inside a session) or, with no anchor (a `/compress`, whose new session starts with it),
 *   after the record itself.
 * - `todo_state`, `agent_turn_outcome`, `session_end`: bookkeeping, not sent.
 *
 * `parentId` is not a tree Droid walks: hook records hang off the same assistant message as the tool result that
 * follows them, and Droid resumes the file's messages in order. Entries are read in file order, without links.
 *
 * Usage is not in the transcript: Droid keeps it in the `.settings.json` beside it (`tokenUsage` totals,
 * `lastCallTokenUsage`), which a one-file reader does not see. An Anthropic-shaped `message.usage`, if a version
 * writes one, is read.
 */
import type { CompactionMarker, EntryDraft, Message, Part, SessionInfo, Usage } from '../model/types.js';
import { num, textPart, toEpochMs } from '../model/parts.js';
import { asString, isRecord, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';
import { contentParts } from './claude-code.js';

const RECORD_TYPES = new Set([
  'session_start',
  'message',
  'compaction_state',
  'todo_state',
  'agent_turn_outcome',
  'session_end',
]);

/** The user message Droid makes of a compaction summary (droid 0.226, as its mock server received it). */
export function droidSummaryText(summary: string): string {
  return (
    'A previous instance of Droid has summarized the conversation thus far as follows:\n\n' +
    `<summary>\n${summary}\n</summary>\n\n` +
    'IMPORTANT: This summary was created by a previous instance of Droid. Files referenced in the summary may not be ' +
    'available until you explicitly view them again.'
  );
}

class DroidDecoder implements EntryDecoder {
  private readonly info: SessionInfo = {};
  /** Message id → the index of the entry after its record (positions only, never the entries). */
  private readonly afterById = new Map<string, number>();
  private readonly compactions: { draft: EntryDraft; index: number; kept?: number }[] = [];

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const type = asString(r.type);
    const base: EntryDraft = { kind: 'event', sourceType: type ?? '', raw: r };
    const ts = toEpochMs(r.timestamp);
    if (ts !== undefined) {
      base.timestamp = ts;
      if (this.info.startedAt === undefined) this.info.startedAt = ts;
    }
    if (type === undefined) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: expected a Droid session record with a string "type"; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (!RECORD_TYPES.has(type)) {
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: unknown Droid record type "${type}" (expected session_start, message, compaction_state, todo_state…); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (type === 'session_start') return [this.sessionStart(r, base)];
    if (type === 'compaction_state') return [this.compaction(r, base, ctx)];
    if (type !== 'message') return [base];
    const drafts = this.message(r, base, ctx);
    const id = asString(r.id);
    if (id !== undefined) this.afterById.set(id, ctx.nextIndex + drafts.length);
    return drafts;
  }

  private sessionStart(r: Record<string, unknown>, base: EntryDraft): EntryDraft {
    base.kind = 'header';
    const id = asString(r.id);
    if (id !== undefined && this.info.id === undefined) this.info.id = id;
    const cwd = asString(r.cwd);
    if (cwd !== undefined && this.info.cwd === undefined) this.info.cwd = cwd;
    const title = asString(r.sessionTitle) ?? asString(r.title);
    if (title) this.info.title = title;
    if (typeof r.version === 'number') this.info.version = r.version;
    return base;
  }

  private message(r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    const m = r.message;
    if (!isRecord(m) || (m.role !== 'user' && m.role !== 'assistant')) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Droid message record's "message" is not {role: "user" | "assistant", content}; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (m.content !== undefined && typeof m.content !== 'string' && !Array.isArray(m.content)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Droid message's "message.content" is neither a list of blocks nor a string; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    // Hook runs and other records shown to the person only: never sent.
    if (m.visibility === 'user_only') {
      base.sourceType = typeof m.hookEventName === 'string' ? 'message/hook' : 'message/user_only';
      return [base];
    }
    const parts = contentParts(m.content);
    if (parts.length === 0) return [base];
    const stamp = (msg: Message): Message => {
      if (base.timestamp !== undefined) msg.timestamp = base.timestamp;
      return msg;
    };
    if (m.role === 'assistant') {
      const message = stamp({ role: 'assistant', parts });
      const model = asString(m.modelId) ?? asString(m.model);
      if (model) message.model = model;
      const usage = usageOf(m.usage);
      if (usage) message.usage = usage;
      return [{ ...base, kind: 'message', message }];
    }
    const synthetic = m.visibility === 'llm_only';
    const results = parts.filter((p) => p.type === 'tool-result');
    const others = parts.filter((p) => p.type !== 'tool-result');
    const drafts: EntryDraft[] = [];
    const make = (role: Message['role'], ps: Part[]): Message => {
      const msg = stamp({ role, parts: ps });
      if (synthetic) msg.synthetic = true;
      return msg;
    };
    // Tool results first: they answer the previous assistant turn (Droid writes them in a message of their own).
    if (results.length > 0) drafts.push({ ...base, kind: 'message', message: make('tool', results) });
    if (others.length > 0) {
      const message = make('user', others);
      drafts.push(
        drafts.length === 0
          ? { ...base, kind: 'message', message }
          : { kind: 'message', sourceType: 'message', message },
      );
    }
    return drafts;
  }

  private compaction(r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft {
    const summary = asString(r.summaryText);
    if (summary === undefined) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Droid compaction_state has no string "summaryText"; kept as is, not read as a compaction`,
      });
      return base;
    }
    const marker: CompactionMarker = {
      number: this.compactions.length + 1,
      summary: droidSummaryText(summary),
      source: 'droid',
    };
    const kind = asString(r.summaryKind);
    if (kind) marker.trigger = kind;
    const anchor = isRecord(r.anchorMessage) ? asString(r.anchorMessage.id) : undefined;
    let kept: number | undefined;
    if (anchor !== undefined) {
      kept = this.afterById.get(anchor);
      if (kept === undefined)
        ctx.problem({
          kind: 'invalid-entry',
          message: `line ${ctx.line}: Droid compaction_state's anchorMessage.id "${anchor}" names no earlier message; read as replacing everything before it`,
        });
      else {
        marker.firstKeptEntryId = anchor;
        marker.firstKeptEntry = kept;
      }
    }
    const parts: Part[] = [{ type: 'compaction', marker }];
    const systemInfo = asString(r.systemInfoText);
    if (systemInfo) parts.push(textPart(systemInfo));
    base.kind = 'compaction';
    base.compaction = marker;
    base.message = { role: 'user', parts, synthetic: true };
    if (base.timestamp !== undefined) base.message.timestamp = base.timestamp;
    this.compactions.push({ draft: base, index: ctx.nextIndex, ...(kept !== undefined ? { kept } : {}) });
    return base;
  }

  finish(): { info: SessionInfo } {
    // What each compaction replaced: from the previous one to its anchor (or to itself).
    let from = 0;
    for (const { draft, index, kept } of this.compactions) {
      const to = (kept ?? index) - 1;
      if (to >= from) draft.compaction!.archived = { fromEntry: from, toEntry: to };
      from = index + 1;
    }
    return { info: this.info };
  }
}

/** An Anthropic-shaped usage, should a record carry one (the transcripts seen so far do not). */
function usageOf(u: unknown): Usage | undefined {
  if (!isRecord(u) || (typeof u.input_tokens !== 'number' && typeof u.output_tokens !== 'number')) return undefined;
  return {
    input: num(u.input_tokens),
    output: num(u.output_tokens),
    cacheRead: num(u.cache_read_input_tokens),
    cacheWrite: num(u.cache_creation_input_tokens),
  };
}

export const droidFormat: TranscriptFormat = {
  id: 'droid',
  label: 'Factory Droid session JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    // Its header: pi's is `{"type": "session"}`, with message records of the same envelope.
    const start = records.find((r) => r.type === 'session_start');
    if (!start || typeof start.id !== 'string') return 0;
    const known = records.filter((r) => typeof r.type === 'string' && RECORD_TYPES.has(r.type)).length;
    const messages = records.filter((r) => r.type === 'message');
    const shaped = messages.every((r) => isRecord(r.message) && typeof r.message.role === 'string');
    if (known / records.length >= 0.9 && shaped) return 0.95;
    return 0;
  },
  createDecoder: () => new DroidDecoder(),
};
