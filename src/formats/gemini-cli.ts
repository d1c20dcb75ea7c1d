/**
 * Gemini CLI chat sessions (`~/.gemini/tmp/<project_hash>/chats/session-<time>-<id>.json`): one JSON
 * `ConversationRecord` — `{sessionId, projectHash, startTime, lastUpdated, messages, summary?, directories?, kind?}` —
 * rewritten whole after every change by ChatRecordingService (packages/core/src/services/chatRecordingService.ts of
 * google-gemini/gemini-cli). Versions from April 2026 append JSONL (`.jsonl`) instead: a metadata line, then message
 * records (a record whose `id` was seen replaces the earlier one in its place), `{$set}` updates (a `messages` list in
 * one replaces them all) and `{$rewindTo: id}` (drops that message and every later one); `loadConversationRecord`
 * folds them into the same ConversationRecord, and so does this reader (foldLog) before reading it.
 *
 * Which records are model context is decided the way Gemini CLI decides it when it resumes a session
 * (`convertSessionToClientHistory`, core/src/utils/sessionUtils.ts):
 * - `user`: its `content` is the parts GeminiChat.sendMessageStream sent (`displayContent` is what the UI showed).
 *   Function responses are never recorded as user messages: they live in the tool call records.
 * - `gemini`: one model response: `content` (its text, consolidated without thoughts) and `toolCalls`, each
 *   `{id, name, args, result, status}`, whose `result` is the `responseParts` sent back — a `functionResponse` whose
 *   `response` is `{output}` (convertToFunctionResponse) or `{error}` (a failed or cancelled call), sometimes followed by
 *   sibling parts (media, text). The calls' results go back together as one user turn, read here as one tool message.
 * - `info`, `error`, `warning`: what the UI showed (useHistoryManager records them, compression notices included);
 *   the model never saw them: events.
 * - `thoughts` (thought summaries) and `tokens` ride on the response record. GeminiChat keeps thoughts out of the
 *   history it sends (`content.parts.filter(part => !part.thought)` when it collects a response), so they are not read
 *   as parts; they stay in `raw`. A response with neither text nor calls (thoughts only) was refused by GeminiChat's
 *   stream validation and never entered the history: an event carrying its usage.
 *
 * Usage is `recordMessageTokens`' copy of the response's `usageMetadata`: `input` = promptTokenCount, which counts the
 * cached prompt in (`cached` = cachedContentTokenCount), `output` = candidatesTokenCount, which leaves the thoughts out
 * (`thoughts` = thoughtsTokenCount). Early files (2025) hold `content` as a plain string; later ones a part list.
 */
import { AbridgeError } from '../errors.js';
import { SessionBuilder } from '../model/session.js';
import type {
  EntryDraft,
  Message,
  Part,
  Problem,
  ResultContentPart,
  Session,
  SessionInfo,
  Usage,
} from '../model/types.js';
import { num, textPart, toEpochMs } from '../model/parts.js';
import { asString, isRecord, type TranscriptFormat } from './format.js';
import { functionCallPart, mediaPart } from './gemini-parts.js';

const UI_ONLY = new Set(['info', 'error', 'warning']);

/**
 * `lines`: of a session log, the line each message was last written on (problems name it); of a JSON document, none
 * (problems name the message's index).
 */
function readConversation(document: unknown, source: string, lines?: readonly number[]): Session {
  if (!isRecord(document) || !Array.isArray(document.messages)) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: not a Gemini CLI session: expected a JSON object with a "messages" array`,
    );
  }
  const builder = new SessionBuilder('gemini-cli');
  builder.info = sessionInfo(document);
  const extra: Record<string, unknown> = {};
  for (const key of ['projectHash', 'lastUpdated', 'kind', 'directories'])
    if (document[key] !== undefined) extra[key] = document[key];
  if (Object.keys(extra).length > 0) builder.extra = extra;

  const problem = (i: number, kind: 'not-an-object' | 'unknown-entry-type' | 'invalid-entry', what: string) =>
    builder.problems.push(
      lines
        ? { line: lines[i]!, kind, message: `${source}: line ${lines[i]} (a message record) ${what}` }
        : { line: i + 1, kind, message: `${source}: messages[${i}] ${what}` },
    );

  document.messages.forEach((record: unknown, i) => {
    if (!isRecord(record)) {
      problem(
        i,
        'not-an-object',
        'is not an object (expected a message record {id, timestamp, type, content}); kept as is',
      );
      builder.add({ kind: 'unknown', raw: record });
      return;
    }
    const type = asString(record.type) ?? '';
    const draft: EntryDraft = { kind: 'event', sourceType: type, raw: record };
    const id = asString(record.id);
    if (id) draft.id = id;
    const ts = toEpochMs(record.timestamp);
    if (ts !== undefined) draft.timestamp = ts;

    if (UI_ONLY.has(type)) {
      builder.add(draft);
      return;
    }
    if (type === 'user') {
      const message: Message = { role: 'user', parts: contentParts(record.content, false) };
      if (ts !== undefined) message.timestamp = ts;
      draft.kind = 'message';
      draft.message = message;
      builder.add(draft);
      return;
    }
    if (type !== 'gemini') {
      problem(
        i,
        'unknown-entry-type',
        `${type ? `has unknown type "${type}"` : 'has no "type"'} (expected "user", "gemini", "info", "error" or "warning"); kept as is`,
      );
      draft.kind = 'unknown';
      builder.add(draft);
      return;
    }

    const usage = isRecord(record.tokens) ? geminiUsage(record.tokens) : undefined;
    let calls: Record<string, unknown>[] = [];
    if (Array.isArray(record.toolCalls)) {
      record.toolCalls.forEach((call: unknown, k) => {
        if (isRecord(call) && typeof call.name === 'string' && call.name !== '') calls.push(call);
        else
          problem(
            i,
            'invalid-entry',
            `toolCalls[${k}] is not a tool call record (expected an object with a "name", an "id" and "args"); left out`,
          );
      });
    } else if (record.toolCalls !== undefined && record.toolCalls !== null) {
      problem(
        i,
        'invalid-entry',
        'has "toolCalls" that is not an array (expected a list of tool call records); ignored',
      );
    }

    const parts = contentParts(record.content, true);
    // Newer records may hold the function calls in `content` itself: then it is the source of truth, as on resume.
    const callsInContent = parts.some((p) => p.type === 'tool-call');
    if (!callsInContent)
      calls.forEach((call, k) => {
        parts.push({
          type: 'tool-call',
          id: asString(call.id) ?? `gemini-${i}-${k}`,
          name: call.name as string,
          arguments: call.args ?? {},
        });
      });
    else calls = calls.filter((c) => parts.some((p) => p.type === 'tool-call' && p.id === asString(c.id)));

    if (parts.length === 0) {
      // Thoughts only, or nothing: not in the history GeminiChat sent next; the request was still billed.
      if (usage) draft.usage = usage;
      builder.add(draft);
      return;
    }
    const message: Message = { role: 'assistant', parts };
    const model = asString(record.model);
    if (model) message.model = model;
    if (usage) message.usage = usage;
    if (id) message.responseId = id;
    if (ts !== undefined) message.timestamp = ts;
    draft.kind = 'message';
    draft.message = message;
    builder.add(draft);

    const results: Part[] = [];
    calls.forEach((call, k) => {
      const callId = asString(call.id) ?? `gemini-${i}-${k}`;
      const result = toolResult(call, callId);
      if (result) results.push(result);
    });
    if (results.length > 0) {
      const answer: EntryDraft = {
        kind: 'message',
        sourceType: 'gemini/toolCalls',
        fromSameRecord: true,
        message: { role: 'tool', parts: results },
      };
      const done = calls.map((c) => toEpochMs(c.timestamp)).find((t) => t !== undefined);
      if (done !== undefined) {
        answer.timestamp = done;
        answer.message!.timestamp = done;
      }
      builder.add(answer);
    }
  });
  return builder.build();
}

function sessionInfo(document: Record<string, unknown>): SessionInfo {
  const info: SessionInfo = {};
  const id = asString(document.sessionId);
  if (id) info.id = id;
  const started = toEpochMs(document.startTime);
  if (started !== undefined) info.startedAt = started;
  // The one-line summary Gemini CLI generates to describe the session in its browser.
  const summary = asString(document.summary);
  if (summary) info.title = summary;
  return info;
}

/**
 * `content` is a PartListUnion: a string, one part, or a list of parts and strings. Model content leaves thought parts
 * out (GeminiChat never sends them back).
 */
function contentParts(content: unknown, model: boolean): Part[] {
  const list = Array.isArray(content) ? content : content === undefined || content === null ? [] : [content];
  const parts: Part[] = [];
  list.forEach((p: unknown) => {
    if (typeof p === 'string') {
      if (p !== '') parts.push(textPart(p));
      return;
    }
    if (!isRecord(p)) return;
    if (p.thought === true && model) return;
    if (isRecord(p.functionCall)) {
      parts.push(functionCallPart(p.functionCall));
      return;
    }
    if (typeof p.text === 'string') {
      if (p.text !== '') parts.push(textPart(p.text));
      return;
    }
    const media = mediaPart(p);
    if (media) parts.push(media);
    else if (!isRecord(p.functionResponse)) parts.push(textPart(JSON.stringify(p)));
  });
  return parts;
}

/**
 * The result of one call, as Gemini CLI sends it back: the text of its functionResponse's `response` (`output`, or
 * `error` for a failed or cancelled call; any other shape as JSON), media nested in the functionResponse (`parts`), and
 * the sibling parts that follow it. A string `result` (early files) is `{output: result}`, as on resume. No `result`:
 * nothing was sent back.
 */
function toolResult(call: Record<string, unknown>, callId: string): Part | undefined {
  const raw = call.result;
  if (raw === undefined || raw === null || raw === '') return undefined;
  const name = call.name as string;
  const content: ResultContentPart[] = [];
  let isError = call.status === 'error' || call.status === 'cancelled';
  if (typeof raw === 'string') content.push(textPart(raw));
  else {
    const list = Array.isArray(raw) ? raw : [raw];
    // A result may carry the whole user turn it was synced from: take this call's response and what follows it.
    let mine = true;
    for (const p of list) {
      if (typeof p === 'string') {
        if (mine && p !== '') content.push(textPart(p));
        continue;
      }
      if (!isRecord(p)) continue;
      if (isRecord(p.functionResponse)) {
        const fr = p.functionResponse;
        const frId = asString(fr.id);
        mine = frId === undefined || frId === callId;
        if (!mine) continue;
        const response = isRecord(fr.response) ? fr.response : {};
        const text = responseText(response);
        if (text.error) isError = true;
        if (text.text !== '') content.push(textPart(text.text));
        if (Array.isArray(fr.parts))
          for (const nested of fr.parts) {
            const media = isRecord(nested) ? mediaPart(nested) : undefined;
            if (media) content.push(media);
          }
        continue;
      }
      if (!mine) continue;
      if (typeof p.text === 'string') {
        if (p.text !== '') content.push(textPart(p.text));
        continue;
      }
      const media = mediaPart(p);
      content.push(media ?? textPart(JSON.stringify(p)));
    }
  }
  return { type: 'tool-result', callId, toolName: name, content, isError };
}

function responseText(response: Record<string, unknown>): { text: string; error: boolean } {
  const keys = Object.keys(response).filter((k) => k !== '__binary_injection__');
  if (typeof response.output === 'string' && keys.length === 1) return { text: response.output, error: false };
  if (typeof response.error === 'string' && keys.length === 1) return { text: response.error, error: true };
  if (keys.length === 0) return { text: '', error: false };
  const shown: Record<string, unknown> = {};
  for (const k of keys) shown[k] = response[k];
  return { text: JSON.stringify(shown), error: typeof response.error === 'string' };
}

/**
 * `tokens` into a normalized Usage. Gemini's promptTokenCount includes the cached part (cachedContentTokenCount), so
 * the full-rate input is the rest; Gemini has no separate cache-write count (implicit caching). The output is what
 * Gemini bills as output: candidates plus thoughts, of which `reasoning` names the thoughts. `tool`
 * (toolUsePromptTokenCount, the prompt of server-side tool use) is left out: it is not this request's prompt.
 */
function geminiUsage(t: Record<string, unknown>): Usage | undefined {
  if (typeof t.input !== 'number' && typeof t.output !== 'number') return undefined;
  const input = num(t.input);
  const cacheRead = Math.min(num(t.cached), input);
  const thoughts = num(t.thoughts);
  const usage: Usage = { input: input - cacheRead, output: num(t.output) + thoughts, cacheRead, cacheWrite: 0 };
  if (thoughts > 0) usage.reasoning = thoughts;
  return usage;
}

/** The session's metadata line of a log (or the whole record of a JSON file): what Gemini CLI looks for first. */
function isMetadata(r: Record<string, unknown>): boolean {
  return typeof r.sessionId === 'string' && typeof r.projectHash === 'string';
}

/** A message record as Gemini CLI writes them: its own types, an id, and none of Claude Code's or Copilot's fields. */
function isMessageRecord(r: Record<string, unknown>): boolean {
  return (
    typeof r.id === 'string' &&
    typeof r.type === 'string' &&
    ['user', 'gemini', 'info', 'error', 'warning'].includes(r.type) &&
    !('message' in r) &&
    !('uuid' in r) &&
    !('data' in r)
  );
}

/**
 * A session log (`.jsonl`) folded into the ConversationRecord it stands for, as loadConversationRecord folds it: the
 * metadata merged from the first line and every `$set`; messages in the order first written, each as last written; a
 * `$set` with `messages` replacing them all; `$rewindTo` dropping its message and every later one (all of them when the
 * id is unknown). Lines that are not JSON are skipped, as Gemini CLI skips them, and reported.
 */
export function foldLog(
  text: string,
  source: string,
): { document: Record<string, unknown>; lines: number[]; problems: Problem[] } {
  let metadata: Record<string, unknown> = {};
  const messages = new Map<string, { record: Record<string, unknown>; line: number }>();
  const problems: Problem[] = [];
  const addAll = (list: unknown[], line: number) => {
    for (const m of list) if (isRecord(m) && typeof m.id === 'string') messages.set(m.id, { record: m, line });
  };
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (!raw.trim()) return;
    let record: unknown;
    try {
      record = JSON.parse(raw);
    } catch {
      problems.push({
        line,
        kind: 'invalid-json',
        message: `${source}: line ${line} is not valid JSON (expected one record of a Gemini CLI session log); skipped, as Gemini CLI skips it`,
      });
      return;
    }
    if (!isRecord(record)) {
      problems.push({
        line,
        kind: 'not-an-object',
        message: `${source}: line ${line} is not an object (expected a message record, {"$set": …}, {"$rewindTo": id} or the session's metadata); skipped`,
      });
      return;
    }
    if (typeof record.$rewindTo === 'string') {
      const ids = [...messages.keys()];
      const from = ids.indexOf(record.$rewindTo);
      for (const id of from === -1 ? ids : ids.slice(from)) messages.delete(id);
    } else if (typeof record.id === 'string') messages.set(record.id, { record, line });
    else if (isRecord(record.$set)) {
      if (Array.isArray(record.$set.messages)) {
        messages.clear();
        addAll(record.$set.messages, line);
      }
      metadata = { ...metadata, ...record.$set };
    } else if (isMetadata(record)) {
      metadata = { ...metadata, ...record };
      if (Array.isArray(record.messages)) addAll(record.messages, line);
    } else
      problems.push({
        line,
        kind: 'unknown-entry-type',
        message: `${source}: line ${line} is not a record of a Gemini CLI session log (expected a message record {id, type, …}, {"$set": …}, {"$rewindTo": id} or the session's metadata {sessionId, projectHash, …}); ignored`,
      });
  });
  const list = [...messages.values()];
  return { document: { ...metadata, messages: list.map((m) => m.record) }, lines: list.map((m) => m.line), problems };
}

/**
 * Gemini API `Content[]` (`[{role: "user" | "model", parts}]`): what Gemini CLI's `/chat save` checkpoints hold
 * (`checkpoint-<tag>.json`, its chat history as GeminiChat sends it) and what other Gemini agents keep. `model` turns are
 * assistant messages (thought parts left out, as GeminiChat leaves them out of what it sends); a `user` turn's
 * `functionResponse` parts are the results of the calls before them (paired by id, else by name in call order) and its
 * other parts the person's message.
 */
function readContents(contents: readonly unknown[], source: string): Session {
  const builder = new SessionBuilder('gemini-cli');
  let pending: { id: string; name: string }[] = [];
  contents.forEach((c: unknown, i) => {
    if (!isRecord(c) || (c.role !== 'user' && c.role !== 'model') || !Array.isArray(c.parts)) {
      builder.problems.push({
        line: i + 1,
        kind: isRecord(c) ? 'invalid-entry' : 'not-an-object',
        message: `${source}: [${i}] is not a Gemini Content (expected {"role": "user" or "model", "parts": [...]}); kept as is`,
      });
      builder.add({ kind: 'unknown', raw: c });
      return;
    }
    if (c.role === 'model') {
      const parts = contentParts(c.parts, true).map((p, k) =>
        p.type === 'tool-call' && p.id === '' ? { ...p, id: `gemini-${i}-${k}` } : p,
      );
      pending = parts.flatMap((p) => (p.type === 'tool-call' ? [{ id: p.id, name: p.name }] : []));
      builder.add({ kind: 'message', sourceType: 'model', raw: c, message: { role: 'assistant', parts } });
      return;
    }
    const results: Part[] = [];
    for (const p of c.parts) {
      if (!isRecord(p) || !isRecord(p.functionResponse)) continue;
      const fr = p.functionResponse;
      const name = asString(fr.name) ?? '';
      const at = pending.findIndex((x) => (asString(fr.id) !== undefined ? x.id === fr.id : x.name === name));
      const callId = at === -1 ? (asString(fr.id) ?? `gemini-${i}-${results.length}`) : pending.splice(at, 1)[0]!.id;
      const text = responseText(isRecord(fr.response) ? fr.response : {});
      results.push({
        type: 'tool-result',
        callId,
        toolName: name,
        content: text.text === '' ? [] : [textPart(text.text)],
        isError: text.error,
      });
    }
    if (results.length > 0)
      builder.add({ kind: 'message', sourceType: 'user', raw: c, message: { role: 'tool', parts: results } });
    const own = contentParts(
      c.parts.filter((p: unknown) => !(isRecord(p) && isRecord(p.functionResponse))),
      false,
    );
    if (own.length > 0)
      builder.add({
        kind: 'message',
        sourceType: 'user',
        raw: c,
        ...(results.length > 0 ? { fromSameRecord: true } : {}),
        message: { role: 'user', parts: own },
      });
  });
  return builder.build();
}

/** Confidence that an array is Gemini API `Content[]`: every item a role and parts; `model` is Gemini's own role. */
function contentsConfidence(document: readonly unknown[]): number {
  if (document.length === 0) return 0;
  const contents = document.every(
    (c) => isRecord(c) && (c.role === 'user' || c.role === 'model') && Array.isArray(c.parts) && !('content' in c),
  );
  if (!contents) return 0;
  return document.some((c) => isRecord(c) && c.role === 'model') ? 0.9 : 0.6;
}

/** The whole file: one JSON document (up to April 2026), else a session log. */
function readText(text: string, source: string): Session {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    document = undefined;
  }
  if (Array.isArray(document)) return readContents(document, source);
  // A log of one line (its metadata) parses as JSON too, but holds no `messages`.
  if (document !== undefined && !(isRecord(document) && isMetadata(document) && !Array.isArray(document.messages)))
    return readConversation(document, source);
  const log = foldLog(text, source);
  if (log.lines.length === 0 && !isMetadata(log.document))
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: not a Gemini CLI session: expected one JSON object with a "messages" array, or a session log (JSONL) opening with the session's metadata {sessionId, projectHash, …}`,
    );
  const session = readConversation(log.document, source, log.lines);
  session.problems.unshift(...log.problems);
  session.problems.sort((a, b) => a.line - b.line);
  return session;
}

export const geminiCliFormat: TranscriptFormat = {
  id: 'gemini-cli',
  label: 'Gemini CLI chat session (.json, .jsonl, or a saved chat: Gemini API Content[])',
  container: 'json',
  detect({ document, records }) {
    if (Array.isArray(document)) return contentsConfidence(document);
    // A session log: its metadata line first, or (a log cut at the start) records of Gemini CLI's own shapes.
    if (records && records.length > 0 && !(isRecord(document) && Array.isArray(document.messages))) {
      if (isMetadata(records[0]!) && !Array.isArray(records[0]!.messages)) return 0.95;
      const own = records.filter((r) => isMessageRecord(r) || isRecord(r.$set) || typeof r.$rewindTo === 'string');
      return own.length === records.length && records.some((r) => r.type === 'gemini') ? 0.8 : 0;
    }
    if (!isRecord(document) || !Array.isArray(document.messages) || typeof document.sessionId !== 'string') return 0;
    if (typeof document.projectHash === 'string') return 0.95;
    // Without the project hash: still Gemini CLI when its records have Gemini CLI's message types.
    const typed = document.messages.filter(
      (m) => isRecord(m) && (m.type === 'user' || m.type === 'gemini') && typeof m.id === 'string',
    );
    return typed.length > 0 && typed.length === document.messages.length ? 0.7 : 0;
  },
  readDocument: (document, source) =>
    Array.isArray(document) ? readContents(document, source) : readConversation(document, source),
  readText,
};
