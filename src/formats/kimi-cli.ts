/**
 * Kimi CLI context files (Moonshot's kimi-cli: `~/.kimi/sessions/<md5 of the work dir>/<session id>/context.jsonl`;
 * versions of October 2025 kept it as `<session id>.jsonl` in the same folder). Read from how kimi-cli writes and
 * restores it (src/kimi_cli/soul/context.py, compaction.py, kimisoul.py and kosong's message.py in MoonshotAI/kimi-cli)
 * and from a real session committed in that repository (outputs/scikit-learn__scikit-learn-26323/…/531d195b-….jsonl).
 * The file is the history kimi-cli sends, one record a line, keyed by `role`:
 *
 * - a kosong `Message`: `{role: "user" | "assistant" | "tool", content, tool_calls?, tool_call_id?}`. `content` is a
 *   string when it is one text part (kosong's serializer), else a list of parts: `text`, `think` (`{think, encrypted}`:
 *   the signature), `image_url` / `audio_url` / `video_url` (`{url, id}`, data URLs inline). `tool_calls` are
 *   `{type: "function", id, function: {name, arguments: JSON text | null}, extras?}`; a `tool` message answers one by
 *   `tool_call_id`, an error's first part being `<system>ERROR: …</system>`.
 * - `{"role": "_system_prompt", "content"}`: the system prompt, first (written from 2026-03; older files have none).
 * - `{"role": "_checkpoint", "id"}`: a point a D-Mail can revert the context to (the file is then rewritten up to it);
 *   with D-Mail on, a user message `<system>CHECKPOINT n</system>` follows it. Python's `json.dumps` writes these with spaces (`{"role": "_usage", …}`).
 * - `{"role": "_usage", "token_count"}`: the context's size, written as the prompt's input tokens (cache included) right
 *   after each response, before the response itself is appended, then again as input + output once it is. The pair
 *   around an assistant message is read as its usage: the prompt as `input` (the cache split is in kimi-cli's
 *   wire.jsonl, not here) and the difference as `output`.
 *
 * Harness text is user content whose parts all start `<system>`, `<system-reminder>` or `<notification` (checkpoints,
 * dynamic injections, notifications, `/init`'s AGENTS.md): read as synthetic.
 *
 * A compaction starts the file anew (the old one is renamed `context_<n>.jsonl`): the system prompt, checkpoint 0, then
 * a message whose first part is `<system>Previous context has been compacted. Here is the compaction output:</system>`
 * followed by the summary (a user message; an assistant one in versions before December 2025), the preserved last
 * messages, and a `_usage` estimate. That message is a compaction marker that keeps what precedes it in the file (the
 * system prompt): what it replaced is in the renamed file.
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
import { imageFromUrl, parseDataUrl } from './request-body.js';

const MESSAGE_ROLES = new Set(['user', 'assistant', 'tool', 'system']);
const MARKER_ROLES = new Set(['_system_prompt', '_checkpoint', '_usage']);
export const KIMI_COMPACTION_PREFIX =
  '<system>Previous context has been compacted. Here is the compaction output:</system>';
const HARNESS_PREFIXES = ['<system>', '<system-reminder>', '<notification '];

class KimiCliDecoder implements EntryDecoder {
  private readonly info: SessionInfo = {};
  private compactions = 0;
  /** The context size the last `_usage` recorded, while no message has come after it. */
  private promptTokens: number | undefined;
  /** The assistant message just read, whose prompt size is known, waiting for the `_usage` that adds its output. */
  private answered: Message | undefined;

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const role = asString(r.role);
    const base: EntryDraft = { kind: 'event', sourceType: role ?? '', raw: r };
    if (role === undefined) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: expected a Kimi CLI context record with a string "role"; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (MARKER_ROLES.has(role)) return [this.marker(role, r, base, ctx)];
    // A `_usage` pairs only with the message right after it.
    const prompt = this.promptTokens;
    this.answered = undefined;
    this.promptTokens = undefined;
    if (!MESSAGE_ROLES.has(role)) {
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: unknown Kimi CLI context role "${role}" (expected user, assistant, tool or a _system_prompt, _checkpoint or _usage record); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const content = r.content;
    if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Kimi CLI ${role} message's "content" is neither a string nor a list of parts; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const parts = contentParts(content);
    if (role === 'tool') return [this.toolResult(r, parts, base, ctx)];
    if (role === 'assistant' && Array.isArray(r.tool_calls)) parts.push(...toolCalls(r.tool_calls));
    const summary = compactionSummary(parts);
    if (summary !== undefined) return [this.compaction(summary, base)];
    if (parts.length === 0) return [base];
    const message: Message = { role: role as Message['role'], parts };
    if (role === 'user' && isHarnessText(parts)) message.synthetic = true;
    if (role === 'assistant' && prompt !== undefined) {
      message.usage = { input: prompt, output: 0, cacheRead: 0, cacheWrite: 0 };
      this.answered = message;
    }
    return [{ ...base, kind: 'message', message }];
  }

  private marker(role: string, r: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext): EntryDraft {
    const bad = (what: string): EntryDraft => {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Kimi CLI ${role} record without ${what} (kimi-cli skips it on resume); kept as is`,
      });
      return { ...base, kind: 'unknown' };
    };
    if (role === '_system_prompt') {
      if (typeof r.content !== 'string') return bad('a string "content"');
      return { ...base, kind: 'message', message: { role: 'system', parts: [textPart(r.content)] } };
    }
    if (role === '_checkpoint') return Number.isInteger(r.id) ? base : bad('an integer "id"');
    if (!Number.isInteger(r.token_count)) return bad('an integer "token_count"');
    const tokens = r.token_count as number;
    const answered = this.answered;
    this.answered = undefined;
    if (answered?.usage && tokens >= answered.usage.input) {
      answered.usage.output = tokens - answered.usage.input;
      // Also on this record: a reader streaming the file saw the reply before its output was known.
      return { ...base, usage: answered.usage };
    }
    this.promptTokens = tokens;
    return base;
  }

  private toolResult(r: Record<string, unknown>, parts: Part[], base: EntryDraft, ctx: DecodeContext): EntryDraft {
    const callId = asString(r.tool_call_id);
    if (callId === undefined) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Kimi CLI tool message without a string "tool_call_id"; kept as is`,
      });
      return { ...base, kind: 'unknown' };
    }
    const content = parts.filter(
      (p): p is ResultContentPart => p.type === 'text' || p.type === 'image' || p.type === 'file',
    );
    const first = content[0];
    const isError = first?.type === 'text' && first.text.startsWith('<system>ERROR:');
    return {
      ...base,
      kind: 'message',
      message: { role: 'tool', parts: [{ type: 'tool-result', callId, content, isError }] },
    };
  }

  private compaction(summary: string, base: EntryDraft): EntryDraft {
    const marker: CompactionMarker = {
      number: ++this.compactions,
      summary,
      source: 'kimi-cli',
      // What precedes it in the file (the system prompt) is kept; what it replaced is in the renamed file.
      firstKeptEntry: 0,
    };
    return {
      ...base,
      kind: 'compaction',
      compaction: marker,
      message: {
        role: 'user',
        parts: [textPart(KIMI_COMPACTION_PREFIX), { type: 'compaction', marker }],
        synthetic: true,
      },
    };
  }

  finish(): { info: SessionInfo } {
    return { info: this.info };
  }
}

/** kosong's content: a string is one text part; parts by their `type`, an unknown one kept as its JSON text. */
function contentParts(content: unknown): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [textPart(content)];
  if (!Array.isArray(content)) return [];
  const out: Part[] = [];
  for (const c of content) {
    if (!isRecord(c)) continue;
    if (c.type === 'text') {
      const text = asString(c.text);
      if (text) out.push(textPart(text));
    } else if (c.type === 'think') {
      const think = asString(c.think) ?? '';
      const signature = asString(c.encrypted);
      if (think === '' && !signature) continue;
      out.push(
        signature
          ? { type: 'thinking', text: think, signature, ...(think === '' ? { redacted: true } : {}) }
          : { type: 'thinking', text: think },
      );
    } else if (c.type === 'image_url' && isRecord(c.image_url) && typeof c.image_url.url === 'string') {
      out.push(imageFromUrl(c.image_url.url));
    } else if ((c.type === 'audio_url' || c.type === 'video_url') && isRecord(c[c.type])) {
      const url = asString((c[c.type] as Record<string, unknown>).url);
      if (url !== undefined) out.push(mediaFile(url));
    } else out.push(textPart(JSON.stringify(c)));
  }
  return out;
}

function mediaFile(url: string): ResultContentPart {
  const parsed = parseDataUrl(url);
  if (!parsed) return { type: 'file', url };
  return parsed.mediaType
    ? { type: 'file', mediaType: parsed.mediaType, data: parsed.data }
    : { type: 'file', data: parsed.data };
}

/** The summary of a compaction's message (its parts after kimi-cli's prefix), or undefined for any other message. */
function compactionSummary(parts: Part[]): string | undefined {
  const first = parts[0];
  if (first?.type !== 'text' || !first.text.startsWith(KIMI_COMPACTION_PREFIX)) return undefined;
  const rest = [textPart(first.text.slice(KIMI_COMPACTION_PREFIX.length)), ...parts.slice(1)];
  return rest.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

function isHarnessText(parts: Part[]): boolean {
  return parts.every((p) => p.type === 'text' && HARNESS_PREFIXES.some((x) => p.text.trimStart().startsWith(x)));
}

/** A line of a context file: a role of kimi-cli's, and none of the keys the record formats beside it carry. */
function isContextLine(r: Record<string, unknown>): boolean {
  if ('type' in r || 'message' in r || 'uuid' in r) return false;
  return typeof r.role === 'string' && (MESSAGE_ROLES.has(r.role) || MARKER_ROLES.has(r.role));
}

export const kimiCliFormat: TranscriptFormat = {
  id: 'kimi-cli',
  label: 'Kimi CLI context JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    // Bare chat messages are anyone's: kimi-cli's own records (`_checkpoint`, `_usage`, `_system_prompt`) decide.
    if (!records.some((r) => typeof r.role === 'string' && MARKER_ROLES.has(r.role))) return 0;
    return share(records, isContextLine) >= 0.9 ? 0.95 : 0;
  },
  createDecoder: () => new KimiCliDecoder(),
};
