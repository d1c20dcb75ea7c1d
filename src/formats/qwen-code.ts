/**
 * Qwen Code chat recordings (`~/.qwen/projects/<project>/chats/<sessionId>.jsonl`), written by ChatRecordingService
 * (packages/core/src/services/chatRecordingService.ts of QwenLM/qwen-code): one `ChatRecord` a line —
 * `{uuid, parentUuid, sessionId, timestamp, type: 'user' | 'assistant' | 'tool_result' | 'system', subtype?, cwd,
 * version, gitBranch?, message?: Content, usageMetadata?, model?, toolCallResult?, systemPayload?, isSidechain?, …}`.
 *
 * What the model sees is decided the way Qwen Code decides it when it resumes a session:
 * - The conversation is the chain of `parentUuid` links walked back from the last record of the file
 *   (`buildOrderedUuidChain`, core/src/utils/conversation-chain.ts): a rewind or fork leaves the other branch in the
 *   file, off the chain. Records are read as entries with `id`/`parentId`, so abridge's branch logic walks the same way.
 * - The chain's records become `Content[]` in order (`SessionApiHistoryAccumulator`, core/src/services/
 *   session-api-history.ts): every record's `message` (a Gemini `Content`, `{role, parts}`) is pushed as is, except
 *   `realtime_message` records and `code_mode_tool_result` tool results; system records carry no message. A
 *   `system`/`chat_compression` record REPLACES the history built so far by its `systemPayload.compressedHistory`
 *   (the summary turns and the retained tail, as `Content[]`), and the records after it are appended to that. Here it
 *   is a compaction marker (source `qwen-code`) followed by one entry per compressed content, so that `activeView`
 *   shows that history and what follows it.
 * - `user` records: `recordUserMessage` writes `createUserContent(parts)`; `notification`, `cron`, `goal_runtime` and
 *   `mid_turn_user_message` subtypes are harness-injected user content (read as synthetic user messages).
 * - `assistant` records: `recordAssistantTurn` writes `createModelContent(response parts)` with `usageMetadata` and
 *   `model`. `functionCall` parts are tool calls (with their `id`). `thought` parts are KEPT as thinking: Qwen Code
 *   stopped stripping thoughts from history (no `stripThoughtsFromHistory` on resume; the OpenAI-compatible converter,
 *   core/src/core/openaiContentGenerator/converter.ts `processContent`, sends them back as `reasoning_content`), unlike
 *   Gemini CLI. Versions before that change stripped them on resume; those files are read the same way.
 * - `tool_result` records: `recordToolResult` writes `createUserContent(responseParts)`: `functionResponse` parts
 *   `{id, name, response: {output} | {error}, parts?}`, one record per call. The converter sends `response.output`,
 *   else `response.error`, else the response as JSON (`extractFunctionResponseContent`), then the nested media
 *   (`createToolMessage`). A result is an error when its response holds `error` or the record's
 *   `toolCallResult.status` is `error` or `cancelled`.
 *
 * Usage is the response's `usageMetadata`: `promptTokenCount` counts the cached prompt in (`cachedContentTokenCount`),
 * so input = prompt − cached; output = candidates + thoughts, of which `reasoning` names the thoughts.
 *
 * Not reproduced (uncommon; the records are kept, their effect on the history is not): a `slash_command` result record
 * that pops the user record before it (ACP local commands), `mid_turn_user_message` parts merged into the previous
 * user content, the merging of records sharing one uuid, and the bridging of chain gaps (`bridgeGaps`).
 */
import type {
  CompactionMarker,
  EntryDraft,
  Message,
  Part,
  ResultContentPart,
  SessionInfo,
  Usage,
} from '../model/types.js';
import { num, textPart } from '../model/parts.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';
import { takeLinkedRecord } from './linked-record.js';
import { functionCallPart, mediaPart } from './gemini-parts.js';

const RECORD_TYPES = new Set(['user', 'assistant', 'tool_result', 'system']);
/** User records the harness writes (notifications, cron prompts, goal runtime, messages drained mid-turn). */
const SYNTHETIC_USER_SUBTYPES = new Set(['notification', 'cron', 'goal_runtime', 'mid_turn_user_message']);

class QwenCodeDecoder implements EntryDecoder {
  private readonly info: SessionInfo = {};
  private readonly compactions: { draft: EntryDraft; index: number }[] = [];

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const type = asString(r.type);
    const uuid = asString(r.uuid);
    const subtype = asString(r.subtype);
    const base: EntryDraft = { kind: 'event', sourceType: subtype ? `${type}/${subtype}` : (type ?? ''), raw: r };
    if (type === undefined || uuid === undefined) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: expected a Qwen Code ChatRecord with a string "uuid" and "type"; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    takeLinkedRecord(r, base, this.info, uuid);

    if (!RECORD_TYPES.has(type)) {
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: unknown Qwen Code record type "${type}" (expected user, assistant, tool_result or system); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    if (type === 'system') return this.system(r, base, subtype, ctx);

    const usage = type === 'assistant' ? usageOf(r.usageMetadata) : undefined;
    // Records Qwen Code leaves out of the history it rebuilds.
    if (subtype === 'realtime_message' || (type === 'tool_result' && subtype === 'code_mode_tool_result')) {
      if (usage) base.usage = usage;
      return [base];
    }
    if (r.message === undefined) {
      // An assistant turn recorded without content (usage only): nothing entered the history.
      if (usage) base.usage = usage;
      return [base];
    }
    const content = r.message;
    if (!isRecord(content) || !Array.isArray(content.parts)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: ${type} record's "message" is not a Gemini Content {role, parts: [...]}; kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const status = isRecord(r.toolCallResult) ? asString(r.toolCallResult.status) : undefined;
    const failed = type === 'tool_result' && (status === 'error' || status === 'cancelled');
    const messages = contentMessages(content, {
      failed,
      synthetic: type === 'user' && subtype !== undefined && SYNTHETIC_USER_SUBTYPES.has(subtype),
    });
    if (messages.length === 0) return [base];
    const model = asString(r.model);
    return messages.map((message, i) => {
      if (base.timestamp !== undefined) message.timestamp = base.timestamp;
      if (message.role === 'assistant') {
        if (model) message.model = model;
        if (usage) message.usage = usage;
      }
      if (i === 0) return { ...base, kind: 'message', message };
      return { kind: 'message', sourceType: base.sourceType, message, ...(base.sidechain ? { sidechain: true } : {}) };
    });
  }

  private system(
    r: Record<string, unknown>,
    base: EntryDraft,
    subtype: string | undefined,
    ctx: DecodeContext,
  ): EntryDraft[] {
    const payload = isRecord(r.systemPayload) ? r.systemPayload : undefined;
    if (subtype === 'custom_title' && typeof payload?.customTitle === 'string') {
      base.kind = 'session-info';
      this.info.title = payload.customTitle;
      return [base];
    }
    if (subtype !== 'chat_compression' || !payload?.compressedHistory) return [base];
    if (!Array.isArray(payload.compressedHistory)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: chat_compression record's systemPayload.compressedHistory is not a Content[] list; kept as is`,
      });
      return [base];
    }
    return this.compression(payload, payload.compressedHistory, base, ctx);
  }

  /**
   * The compaction marker, then the compressed history, one entry per message, chained by ids so that they sit on the
   * branch between the record's parent and its children: the last one carries the record's uuid.
   */
  private compression(
    payload: Record<string, unknown>,
    history: unknown[],
    base: EntryDraft,
    ctx: DecodeContext,
  ): EntryDraft[] {
    const info = isRecord(payload.info) ? payload.info : {};
    const marker: CompactionMarker = { number: this.compactions.length + 1, summary: '', source: 'qwen-code' };
    if (typeof info.originalTokenCount === 'number') marker.tokensBefore = info.originalTokenCount;
    if (typeof info.newTokenCount === 'number') marker.tokensAfter = info.newTokenCount;
    const messages: Message[] = [];
    history.forEach((c, i) => {
      if (!isRecord(c) || !Array.isArray(c.parts)) {
        ctx.problem({
          kind: 'invalid-entry',
          message: `line ${ctx.line}: chat_compression compressedHistory[${i}] is not a Gemini Content {role, parts: [...]}; left out`,
        });
        return;
      }
      messages.push(...contentMessages(c, { failed: false, synthetic: false }));
    });
    // The summary: the first content when it is a user turn of text only (ChatCompressionService's summary turn).
    const first = messages[0];
    let summaryMessage: Message | undefined;
    if (first?.role === 'user' && first.parts.length > 0 && first.parts.every((p) => p.type === 'text')) {
      marker.summary = first.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
      summaryMessage = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
      messages.shift();
    }
    const uuid = base.id!;
    const head: EntryDraft = { ...base, kind: 'compaction', compaction: marker };
    if (summaryMessage) {
      if (base.timestamp !== undefined) summaryMessage.timestamp = base.timestamp;
      head.message = summaryMessage;
    }
    const drafts: EntryDraft[] = [head];
    messages.forEach((m) => {
      if (base.timestamp !== undefined) m.timestamp = base.timestamp;
      const d: EntryDraft = { kind: 'message', sourceType: base.sourceType, message: m };
      if (base.sidechain) d.sidechain = true;
      drafts.push(d);
    });
    drafts.forEach((d, i) => {
      d.id = i === drafts.length - 1 ? uuid : `${uuid}#${i}`;
      if (i > 0) d.parentId = drafts[i - 1]!.id!;
      if (base.timestamp !== undefined) d.timestamp = base.timestamp;
    });
    this.compactions.push({ draft: head, index: ctx.nextIndex });
    return drafts;
  }

  finish(): { info: SessionInfo } {
    // What each compression replaced, in source order: from the previous marker to the entry before this one.
    let from = 0;
    for (const { draft, index } of this.compactions) {
      if (index - 1 >= from) draft.compaction!.archived = { fromEntry: from, toEntry: index - 1 };
      from = index + 1;
    }
    return { info: this.info };
  }
}

/**
 * One Gemini Content into abridge messages. A model content is one assistant message; a user content's
 * `functionResponse` parts are one tool message, its other parts a user message after it (the converter sends the
 * tool messages first, then the user message).
 */
function contentMessages(content: Record<string, unknown>, opts: { failed: boolean; synthetic: boolean }): Message[] {
  const list = Array.isArray(content.parts) ? content.parts : [];
  if (content.role === 'model') {
    const parts: Part[] = [];
    for (const p of list) {
      if (typeof p === 'string') {
        if (p !== '') parts.push(textPart(p));
        continue;
      }
      if (!isRecord(p)) continue;
      if (p.thought === true) {
        if (typeof p.text === 'string' && p.text !== '') {
          const part: Part = { type: 'thinking', text: p.text };
          const sig = asString(p.thoughtSignature);
          if (sig) part.signature = sig;
          parts.push(part);
        }
        continue;
      }
      if (isRecord(p.functionCall)) {
        parts.push(functionCallPart(p.functionCall));
        continue;
      }
      const other = plainPart(p);
      if (other) parts.push(other);
    }
    return parts.length > 0 ? [{ role: 'assistant', parts }] : [];
  }
  const results: Part[] = [];
  const others: Part[] = [];
  for (const p of list) {
    if (typeof p === 'string') {
      if (p !== '') others.push(textPart(p));
      continue;
    }
    if (!isRecord(p)) continue;
    if (isRecord(p.functionResponse)) {
      results.push(toolResult(p.functionResponse, opts.failed));
      continue;
    }
    // Thoughts on a user turn are not sent (the converter keeps them only on assistant messages).
    if (p.thought === true) continue;
    const other = plainPart(p);
    if (other) others.push(other);
  }
  const out: Message[] = [];
  if (results.length > 0) out.push({ role: 'tool', parts: results });
  if (others.length > 0 || results.length === 0) {
    const m: Message = { role: 'user', parts: others };
    if (opts.synthetic) m.synthetic = true;
    if (others.length > 0 || out.length === 0) out.push(m);
  }
  return out;
}

/** Text and media parts; an unknown part is kept as its JSON text. Empty text is nothing. */
function plainPart(p: Record<string, unknown>): Part | undefined {
  if (typeof p.text === 'string') return p.text === '' ? undefined : textPart(p.text);
  const media = mediaPart(p);
  if (media) return media;
  // Parts with no model-facing content (a bare thoughtSignature, executable code results…) as their JSON.
  return textPart(JSON.stringify(p));
}

/**
 * A `functionResponse` as the converter sends it: `response.output` when a string, else `response.error` when a
 * string, else the response as JSON; then the media nested in `parts` (text parts there as text).
 */
function toolResult(fr: Record<string, unknown>, failed: boolean): Part {
  const content: ResultContentPart[] = [];
  const response = fr.response;
  let isError = failed;
  let text: string;
  if (response === undefined || response === null) text = '';
  else if (typeof response === 'string') text = response;
  else if (isRecord(response) && typeof response.output === 'string') text = response.output;
  else if (isRecord(response) && typeof response.error === 'string') {
    text = response.error;
    isError = true;
  } else text = JSON.stringify(response) ?? '';
  if (isRecord(response) && response.error !== undefined && response.error !== null) isError = true;
  if (text !== '') content.push(textPart(text));
  if (Array.isArray(fr.parts))
    for (const nested of fr.parts) {
      if (!isRecord(nested)) continue;
      if (typeof nested.text === 'string') {
        if (nested.text !== '') content.push(textPart(nested.text));
        continue;
      }
      const media = mediaPart(nested);
      if (media) content.push(media);
    }
  const part: Part = { type: 'tool-result', callId: asString(fr.id) ?? '', content, isError };
  const name = asString(fr.name);
  if (name) part.toolName = name;
  return part;
}

/** `usageMetadata` into a normalized Usage (promptTokenCount includes cachedContentTokenCount). */
function usageOf(u: unknown): Usage | undefined {
  if (!isRecord(u)) return undefined;
  if (typeof u.promptTokenCount !== 'number' && typeof u.candidatesTokenCount !== 'number') return undefined;
  const prompt = num(u.promptTokenCount);
  const cacheRead = Math.min(num(u.cachedContentTokenCount), prompt);
  const thoughts = num(u.thoughtsTokenCount);
  const usage: Usage = {
    input: prompt - cacheRead,
    output: num(u.candidatesTokenCount) + thoughts,
    cacheRead,
    cacheWrite: 0,
  };
  if (thoughts > 0) usage.reasoning = thoughts;
  return usage;
}

/** A Gemini Content: `{role: 'user' | 'model', parts: [...]}`. */
function isGeminiContent(m: unknown): boolean {
  return isRecord(m) && (m.role === 'user' || m.role === 'model') && Array.isArray(m.parts);
}

export const qwenCodeFormat: TranscriptFormat = {
  id: 'qwen-code',
  label: 'Qwen Code chat recording JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const known = share(
      records,
      (r) =>
        typeof r.type === 'string' &&
        RECORD_TYPES.has(r.type) &&
        typeof r.uuid === 'string' &&
        typeof r.sessionId === 'string',
    );
    if (known < 0.9) return 0;
    // Its own evidence: Gemini Content messages (Claude Code's are {role, content}), tool_result records, system
    // records with a systemPayload.
    const withMessage = records.filter((r) => r.message !== undefined);
    const gemini = withMessage.filter((r) => isGeminiContent(r.message)).length;
    const anthropicLike = withMessage.some((r) => isRecord(r.message) && 'content' in r.message);
    if (anthropicLike) return 0;
    const own = records.some((r) => r.type === 'tool_result' || (r.type === 'system' && isRecord(r.systemPayload)));
    if (withMessage.length > 0 && gemini === withMessage.length) return 0.98;
    if (gemini > 0 || own) return 0.7;
    return 0;
  },
  createDecoder: () => new QwenCodeDecoder(),
};
