/**
 * Kiro CLI sessions (`~/.kiro/sessions/cli/<id>.jsonl`, next to a `<id>.json` holding the session's metadata: cwd,
 * title, the message ids of each user turn). Read from real files written by kiro-cli (the harness captures committed
 * in inference-sh/agentprotocol, transcript/kiro/testdata): one message a line,
 *
 * - `{version: "v1", kind: "Prompt", data: {message_id, content: [{kind: "text", data: "…"}], meta: {timestamp
 *   (seconds), additionalContext?}}}` — the person's turn; `additionalContext` is what hooks added ("--- CONTEXT ENTRY
 *   BEGIN ---" …), read as harness text sent before the prompt;
 * - `{kind: "AssistantMessage", data: {message_id, content: [{kind: "text"}, {kind: "toolUse", data: {toolUseId, name,
 *   input}}]}}` — a response (no model, no usage in the file);
 * - `{kind: "ToolResults", data: {message_id, content: [{kind: "toolResult", data: {toolUseId, content: [{kind:
 *   "text", data}], status: "success" | "error"}}], results: {…}}}` — the results, `results` being Kiro's own
 *   per-tool detail (not sent).
 *
 * Empty text blocks (Kiro writes `""` before a call) are nothing. The sidecar is not read (one file, one reader).
 */
import type { EntryDraft, Message, Part, ResultContentPart, SessionInfo } from '../model/types.js';
import { textPart, toEpochMs } from '../model/parts.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';

const KINDS = new Set(['Prompt', 'AssistantMessage', 'ToolResults']);

class KiroDecoder implements EntryDecoder {
  private readonly info: SessionInfo = {};

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const kind = asString(r.kind);
    const base: EntryDraft = { kind: 'event', sourceType: kind ?? '', raw: r };
    const data = r.data;
    if (kind === undefined || !isRecord(data)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: expected a Kiro session row {version, kind, data: {message_id, content}}; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (!KINDS.has(kind)) {
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: unknown Kiro row kind "${kind}" (expected Prompt, AssistantMessage or ToolResults); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (!Array.isArray(data.content)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Kiro ${kind} row's "data.content" is not a list of {kind, data} blocks; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const meta = isRecord(data.meta) ? data.meta : undefined;
    const ts = toEpochMs(meta?.timestamp);
    if (ts !== undefined) {
      base.timestamp = ts;
      if (this.info.startedAt === undefined) this.info.startedAt = ts;
    }
    const parts = blocks(data.content);
    const stamp = (m: Message): Message => {
      if (ts !== undefined) m.timestamp = ts;
      return m;
    };
    if (kind === 'AssistantMessage')
      return parts.length ? [{ ...base, kind: 'message', message: stamp({ role: 'assistant', parts }) }] : [base];
    if (kind === 'ToolResults')
      return parts.length ? [{ ...base, kind: 'message', message: stamp({ role: 'tool', parts }) }] : [base];
    const drafts: EntryDraft[] = [];
    const extra = asString(meta?.additionalContext);
    if (extra)
      drafts.push({
        ...base,
        kind: 'message',
        message: stamp({ role: 'user', parts: [textPart(extra)], synthetic: true }),
      });
    if (parts.length > 0) {
      const message = stamp({ role: 'user', parts });
      drafts.push(
        drafts.length ? { kind: 'message', sourceType: kind, message } : { ...base, kind: 'message', message },
      );
    }
    return drafts.length ? drafts : [base];
  }

  finish(): { info: SessionInfo } {
    return { info: this.info };
  }
}

/** Kiro's `{kind, data}` blocks into parts; an unknown block is kept as its JSON text. */
function blocks(content: unknown[]): Part[] {
  const out: Part[] = [];
  for (const b of content) {
    if (!isRecord(b)) continue;
    const d = b.data;
    if (b.kind === 'text') {
      if (typeof d === 'string' && d !== '') out.push(textPart(d));
      continue;
    }
    if (b.kind === 'toolUse' && isRecord(d)) {
      out.push({
        type: 'tool-call',
        id: asString(d.toolUseId) ?? '',
        name: asString(d.name) ?? '',
        arguments: d.input ?? {},
      });
      continue;
    }
    if (b.kind === 'toolResult' && isRecord(d)) {
      const content: ResultContentPart[] = [];
      if (Array.isArray(d.content))
        for (const c of d.content) {
          if (!isRecord(c)) continue;
          if (c.kind === 'text' && typeof c.data === 'string') content.push(textPart(c.data));
          else if (c.kind === 'json') content.push(textPart(JSON.stringify(c.data)));
          else content.push(textPart(JSON.stringify(c)));
        }
      out.push({
        type: 'tool-result',
        callId: asString(d.toolUseId) ?? '',
        content,
        isError: d.status !== undefined && d.status !== 'success',
      });
      continue;
    }
    out.push(textPart(JSON.stringify(b)));
  }
  return out;
}

export const kiroFormat: TranscriptFormat = {
  id: 'kiro',
  label: 'Kiro CLI session JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const rows = share(
      records,
      (r) =>
        typeof r.version === 'string' &&
        typeof r.kind === 'string' &&
        KINDS.has(r.kind) &&
        isRecord(r.data) &&
        typeof r.data.message_id === 'string',
    );
    return rows >= 0.9 ? 0.95 : 0;
  },
  createDecoder: () => new KiroDecoder(),
};
