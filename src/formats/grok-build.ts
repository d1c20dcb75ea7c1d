/**
 * Grok Build sessions (xAI's `grok` CLI: `~/.grok/sessions/<percent-encoded cwd>/<session id>/chat_history.jsonl`,
 * beside `updates.jsonl`, the log of what the person was shown, and `summary.json`). chat_history.jsonl is what the
 * model is given: grok rewrites it whole when the context changes (a compaction, a rewind). Read from real files
 * written by grok 2026-09 (the harness captures committed in inference-sh/agentprotocol,
 * transcript/grok/testdata/home/.grok/sessions/…/chat_history.jsonl: a tool call, a rewind, an image prompt, two
 * compactions) and that repository's notes on grok's own source (xai-grok-sampling-types conversation.rs,
 * storage/jsonl). One `ConversationItem` a line, tagged by `type`:
 *
 * - `system` `{content: string}`: the system prompt.
 * - `user` `{content: [{type: "text", text} | {type: "image", url}] | string, synthetic_reason?, prompt_index?}`: the
 *   person's prompt is wrapped `<user_query>…</user_query>` and numbered; with a `synthetic_reason`
 *   (`system_reminder`, `compaction_meta`, `task_completed`…) or without the frame (the `<user_info>` block a session
 *   starts with: OS, shell, `Workspace Path`, date, rules) it is the harness's, read as synthetic.
 * - `assistant` `{content: string, tool_calls?: [{id, name, arguments: JSON text}], model_id?}`; reasoning an older
 *   client kept on the row itself (`raw_output` reasoning items, `reasoning.text`, `reasoning_content`) comes first.
 * - `tool_result` `{tool_call_id, content: string, images?: [{type: "image", url}]}`: no error flag is recorded.
 * - `reasoning` `{id, summary: [{text}], content?: [{type: "reasoning_text", text}], encrypted_content?}` and
 *   `backend_tool_call` `{kind: {tool_type, id, status, action?, outputs?}}` (a search the server ran: call and result
 *   on one row), siblings of the assistant row.
 * - Files from before `chat_format_version` 1 hold Chat Completions rows (`{role, content, tool_calls: [{id, function:
 *   {name, arguments}}], tool_call_id}`), which grok still loads: read the same way.
 *
 * A compaction rewrites the file as grok's `build_compacted_history` assembles it: the system prompt, the `<user_info>`
 * block again, the last query re-pushed and a cut-short turn, then the summary ("This session is being continued from
 * a previous conversation…"; the versions of 2026-09-22 wrote the summary alone, "…Resume the prior task using the
 * summary above…"), the <user_info> copy and the summary marked `synthetic_reason: compaction_meta` — then the turns
 * since. grok marks no row as the summary: it is the `compaction_meta` row that is not the <user_info> copy, read as a
 * compaction marker that keeps the rows before it (what it replaced is gone from this file; updates.jsonl and
 * `compaction/segment_*.md` beside it hold that).
 *
 * No usage and no timestamps: grok keeps the counts in `signals.json` and `usage.json` beside the file, which a
 * one-file reader does not see.
 */
import type { CompactionMarker, EntryDraft, Message, Part, ResultContentPart, SessionInfo } from '../model/types.js';
import { textPart } from '../model/parts.js';
import {
  asString,
  chatToolCalls as toolCalls,
  isRecord,
  share,
  type DecodeContext,
  type EntryDecoder,
  type TranscriptFormat,
} from './format.js';
import { imageFromUrl } from './request-body.js';

const ROW_TYPES = new Set(['system', 'user', 'assistant', 'tool_result', 'reasoning', 'backend_tool_call']);
const LEGACY_ROLES = new Set(['system', 'user', 'assistant', 'tool']);
/** What a person typed: no reason, or one grok gives the person's own words. */
const HUMAN_REASONS = new Set(['human', 'interjection']);

class GrokBuildDecoder implements EntryDecoder {
  private readonly info: SessionInfo = {};
  /** Rows read as a compaction's summary, with the message each had before. */
  private readonly summaries: { draft: EntryDraft; message: Message }[] = [];

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const type = asString(r.type);
    const kind = type ?? (r.type === undefined ? asString(r.role) : undefined);
    const base: EntryDraft = { kind: 'event', sourceType: kind ?? '', raw: r };
    if (kind === undefined) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: expected a Grok Build chat history row with a string "type" (or a legacy "role"); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (type === undefined ? !LEGACY_ROLES.has(kind) : !ROW_TYPES.has(kind)) {
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: unknown Grok Build chat history row "${kind}" (expected system, user, assistant, tool_result, reasoning or backend_tool_call); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const message = (m: Message): EntryDraft[] => [{ ...base, kind: 'message', message: m }];
    switch (kind) {
      case 'system': {
        const parts = contentParts(r.content);
        return parts.length ? message({ role: 'system', parts }) : [base];
      }
      case 'user':
        return this.user(r, base, ctx);
      case 'assistant': {
        const parts: Part[] = [...legacyReasoning(r), ...contentParts(r.content)];
        if (Array.isArray(r.tool_calls)) parts.push(...toolCalls(r.tool_calls));
        if (parts.length === 0) return [base];
        const m: Message = { role: 'assistant', parts };
        const model = asString(r.model_id);
        if (model) m.model = model;
        return message(m);
      }
      case 'tool':
      case 'tool_result': {
        const callId = asString(r.tool_call_id);
        if (callId === undefined) {
          ctx.problem({
            kind: 'invalid-entry',
            message: `line ${ctx.line}: Grok Build ${kind} row without a string "tool_call_id"; kept as is`,
          });
          return [{ ...base, kind: 'unknown' }];
        }
        const content = contentParts(r.content).filter(isResultContent);
        // Images a tool returned travel beside its text.
        if (Array.isArray(r.images)) content.push(...contentParts(r.images).filter(isResultContent));
        return message({ role: 'tool', parts: [{ type: 'tool-result', callId, content, isError: false }] });
      }
      case 'reasoning': {
        const part = reasoningPart(r);
        return part ? message({ role: 'assistant', parts: [part] }) : [base];
      }
      default:
        return this.backendCall(r, base, ctx);
    }
  }

  private user(r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    if (r.content !== undefined && typeof r.content !== 'string' && !Array.isArray(r.content)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Grok Build user row's "content" is neither a list of parts nor a string; kept as is`,
      });
      return [{ ...base, kind: 'unknown' }];
    }
    const parts = contentParts(r.content);
    if (parts.length === 0) return [base];
    const text = parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    const reason = asString(r.synthetic_reason);
    const m: Message = { role: 'user', parts };
    const typed = text.includes('<user_query>') || typeof r.prompt_index === 'number';
    if ((reason !== undefined && !HUMAN_REASONS.has(reason)) || !typed) m.synthetic = true;
    if (this.info.cwd === undefined && text.includes('<user_info>')) {
      const cwd = /^Workspace Path: (.+)$/m.exec(text)?.[1];
      if (cwd) this.info.cwd = cwd.trim();
    }
    const draft: EntryDraft = { ...base, kind: 'message', message: m };
    // The summary is known as it passes (readers streaming a large file see each entry once): the `compaction_meta`
    // row that is not the copy of the <user_info> block.
    if (reason === 'compaction_meta' && !text.trimStart().startsWith('<user_info>')) this.summary(draft, m, text);
    return [draft];
  }

  private summary(draft: EntryDraft, m: Message, text: string): void {
    const marker: CompactionMarker = {
      number: this.summaries.length + 1,
      summary: text,
      source: 'grok-build',
      // What precedes it in the file is what grok rebuilt the history from (the system prompt, <user_info>, the last
      // query): kept. What it replaced is no longer in this file.
      firstKeptEntry: 0,
    };
    draft.kind = 'compaction';
    draft.compaction = marker;
    draft.message = {
      role: 'user',
      parts: [{ type: 'compaction', marker }, ...m.parts.filter((p) => p.type !== 'text')],
      synthetic: true,
    };
    this.summaries.push({ draft, message: m });
  }

  private backendCall(r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    const c = r.kind;
    if (!isRecord(c) || typeof c.id !== 'string') {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Grok Build backend_tool_call row without a "kind" {tool_type, id, status}; kept as is`,
      });
      return [{ ...base, kind: 'unknown' }];
    }
    const name = (c.tool_type === 'x_search' ? asString(c.name) : undefined) ?? asString(c.tool_type) ?? '';
    const out: string[] = [];
    if (isRecord(c.action) && Array.isArray(c.action.sources))
      for (const s of c.action.sources) if (isRecord(s) && typeof s.url === 'string') out.push(s.url);
    if (Array.isArray(c.outputs))
      for (const o of c.outputs) if (isRecord(o) && o.type === 'logs' && typeof o.logs === 'string') out.push(o.logs);
    // The server ran the call and gave the model its output: both halves are on this row.
    return [
      {
        ...base,
        kind: 'message',
        message: { role: 'assistant', parts: [{ type: 'tool-call', id: c.id, name, arguments: c }] },
      },
      {
        kind: 'message',
        sourceType: 'backend_tool_call',
        message: {
          role: 'tool',
          parts: [
            {
              type: 'tool-result',
              callId: c.id,
              toolName: name,
              content: out.length ? [textPart(out.join('\n'))] : [],
              isError: c.status === 'failed',
            },
          ],
        },
      },
    ];
  }

  finish(): { info: SessionInfo } {
    // grok rewrites the file with one compaction's history at most: should a version mark other rows so, only the last
    // is the summary, the others the context it rebuilt.
    for (const { draft, message } of this.summaries.slice(0, -1)) {
      draft.kind = 'message';
      delete draft.compaction;
      draft.message = message;
    }
    return { info: this.info };
  }
}

function isResultContent(p: Part): p is ResultContentPart {
  return p.type === 'text' || p.type === 'image' || p.type === 'file';
}

/** A content field: a string, or parts (`text`, `image` with a `url`, a legacy `image_url`); empty text is nothing. */
function contentParts(content: unknown): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [textPart(content)];
  if (!Array.isArray(content)) return [];
  const out: Part[] = [];
  for (const c of content) {
    if (!isRecord(c)) continue;
    if (c.type === 'text' || c.type === 'reasoning_text') {
      if (typeof c.text === 'string' && c.text !== '') out.push(textPart(c.text));
    } else if (c.type === 'image' && typeof c.url === 'string') out.push(imageFromUrl(c.url));
    else if (c.type === 'image_url' && isRecord(c.image_url) && typeof c.image_url.url === 'string')
      out.push(imageFromUrl(c.image_url.url));
    else out.push(textPart(JSON.stringify(c)));
  }
  return out;
}

/** A reasoning item: its reasoning text, else its summary; only encrypted content is a redacted thought. */
function reasoningPart(item: Record<string, unknown>): Part | undefined {
  const texts = (list: unknown) =>
    Array.isArray(list) ? list.map((x) => (isRecord(x) && typeof x.text === 'string' ? x.text : '')).join('') : '';
  const text = texts(item.content) || texts(item.summary);
  const encrypted = asString(item.encrypted_content);
  if (text === '' && !encrypted) return undefined;
  if (!encrypted) return { type: 'thinking', text };
  return text === ''
    ? { type: 'thinking', text, signature: encrypted, redacted: true }
    : { type: 'thinking', text, signature: encrypted };
}

/** Reasoning an older client kept on the assistant row, in the precedence grok lifts it to a reasoning item. */
function legacyReasoning(r: Record<string, unknown>): Part[] {
  if (Array.isArray(r.raw_output))
    return r.raw_output.flatMap((x) => {
      const part = isRecord(x) && x.type === 'reasoning' ? reasoningPart(x) : undefined;
      return part ? [part] : [];
    });
  const text = (isRecord(r.reasoning) ? asString(r.reasoning.text) : undefined) ?? asString(r.reasoning_content);
  return text ? [{ type: 'thinking', text }] : [];
}

/** Keys of the record formats that share grok's `type` values (Claude Code, Qwen Code, Gemini CLI's log). */
const FOREIGN_KEYS = ['message', 'uuid', 'parentUuid', 'sessionId', 'timestamp'];

function isRow(r: Record<string, unknown>): boolean {
  if (FOREIGN_KEYS.some((k) => k in r)) return false;
  if (typeof r.type === 'string') return ROW_TYPES.has(r.type);
  return r.type === undefined && typeof r.role === 'string' && LEGACY_ROLES.has(r.role);
}

/** Something only grok writes: its row fields, or a prompt in its `<user_query>` frame. */
function isGrokCue(r: Record<string, unknown>): boolean {
  if (typeof r.synthetic_reason === 'string' || typeof r.prompt_index === 'number' || typeof r.model_id === 'string')
    return true;
  if (r.type === 'tool_result' && typeof r.tool_call_id === 'string') return true;
  if (r.type !== 'user' && r.role !== 'user') return false;
  const c = r.content;
  const text =
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('')
        : '';
  return text.includes('<user_query>') || text.includes('<user_info>');
}

export const grokBuildFormat: TranscriptFormat = {
  id: 'grok-build',
  label: 'Grok Build chat_history.jsonl',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    if (!records.some(isGrokCue)) return 0;
    return share(records, isRow) >= 0.9 ? 0.9 : 0;
  },
  createDecoder: () => new GrokBuildDecoder(),
};
