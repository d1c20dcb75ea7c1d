/**
 * pi coding-agent session JSONL: a `session` header (v3 with `version`, or the older header without it), then entries.
 * v2+ entries link as a tree by id/parentId; the older format is linear and its compactions name the first kept entry
 * by index.
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
import { imageFrom, num, resultContent, textPart, toEpochMs } from '../model/parts.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';
import { writeJsonl } from './jsonl.js';
import { stableId } from './ids.js';
import type { AbridgeMarker } from '../model/view.js';

const ENTRY_TYPES = new Set([
  'session',
  'message',
  'model_change',
  'thinking_level_change',
  'compaction',
  'branch_summary',
  'custom',
  'custom_message',
  'label',
  'session_info',
  'context_transform',
  'ephemeral',
]);

const MESSAGE_ROLES = new Set(['user', 'assistant', 'toolResult', 'bashExecution', 'custom', 'hookMessage', 'branchSummary', 'compactionSummary']);

class PiDecoder implements EntryDecoder {
  private info: SessionInfo = {};
  // Positions only (never the entries themselves), so that a streamed session is not held in memory.
  private readonly indexByOrdinal: number[] = [];
  private readonly indexById = new Map<string, number>();
  private firstIsHeader = false;
  private readonly compactions: { entry: EntryDraft; keptOrdinal?: number | undefined; abridge?: boolean }[] = [];

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const ordinal = this.indexByOrdinal.length;
    const draft = this.decodeRecord(r, ctx, ordinal);
    this.indexByOrdinal.push(ctx.nextIndex);
    if (ordinal === 0 && draft.kind === 'header') this.firstIsHeader = true;
    if (draft.id !== undefined) this.indexById.set(draft.id, ctx.nextIndex);
    return [draft];
  }

  private decodeRecord(r: Record<string, unknown>, ctx: DecodeContext, ordinal: number): EntryDraft {
    const type = asString(r.type) ?? '';
    const base: EntryDraft = { kind: 'unknown', sourceType: type, raw: r };
    if (typeof r.id === 'string' && type !== 'session') base.id = r.id;
    if ('parentId' in r && type !== 'session') base.parentId = asString(r.parentId) ?? null;
    const ts = toEpochMs(r.timestamp);
    if (ts !== undefined) base.timestamp = ts;

    switch (type) {
      case 'session': {
        this.info = { ...this.info, id: asString(r.id), cwd: asString(r.cwd), startedAt: ts };
        if (typeof r.version === 'number') this.info.version = r.version;
        base.kind = 'header';
        const modelId = asString(r.modelId);
        if (modelId) base.model = { provider: asString(r.provider), id: modelId };
        return base;
      }
      case 'message': {
        if (!isRecord(r.message)) {
          ctx.problem({ kind: 'invalid-entry', message: `line ${ctx.line}: pi "message" entry has no message object` });
          return base;
        }
        const message = decodeMessage(r.message);
        if (!message) {
          ctx.problem({ kind: 'unknown-entry-type', message: `line ${ctx.line}: unknown pi message role "${String(r.message.role)}"; kept as is` });
          return base;
        }
        base.kind = 'message';
        base.message = message;
        return base;
      }
      case 'model_change':
        base.kind = 'model-change';
        base.model = { provider: asString(r.provider), id: asString(r.modelId) ?? '' };
        return base;
      case 'thinking_level_change':
        base.kind = 'thinking-level';
        return base;
      case 'compaction': {
        const saved = abridgeDetails(r.details);
        if (saved) {
          // A compaction abridge wrote: restore its own marker (edits, archived span), which pi's fields cannot hold.
          const marker = { ...saved, number: this.compactions.length + 1 } as CompactionMarker;
          base.kind = 'compaction';
          base.compaction = marker;
          base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
          this.compactions.push({ entry: base, abridge: true });
          return base;
        }
        const marker: CompactionMarker = {
          number: this.compactions.length + 1,
          summary: asString(r.summary) ?? '',
          source: 'pi',
        };
        if (typeof r.tokensBefore === 'number') marker.tokensBefore = r.tokensBefore;
        const keptId = asString(r.firstKeptEntryId);
        if (keptId) marker.firstKeptEntryId = keptId;
        base.kind = 'compaction';
        base.compaction = marker;
        base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
        this.compactions.push({ entry: base, keptOrdinal: typeof r.firstKeptEntryIndex === 'number' ? r.firstKeptEntryIndex : undefined });
        return base;
      }
      case 'branch_summary':
        base.kind = 'branch-summary';
        base.message = { role: 'user', parts: [textPart(asString(r.summary) ?? '')], synthetic: true };
        return base;
      case 'custom_message':
        base.kind = 'message';
        base.message = { role: 'user', parts: contentParts(r.content), synthetic: true };
        return base;
      case 'custom': {
        const saved = r.customType === 'abridge.compaction' ? abridgeDetails(r.data) : undefined;
        if (saved) {
          // An abridge compaction that only edited results (no summary): not part of pi's context, but of abridge's.
          const marker = { ...saved, number: this.compactions.length + 1 } as CompactionMarker;
          base.kind = 'compaction';
          base.compaction = marker;
          this.compactions.push({ entry: base, abridge: true });
          return base;
        }
        base.kind = 'custom';
        return base;
      }
      case 'label':
        base.kind = 'label';
        return base;
      case 'session_info':
        base.kind = 'session-info';
        if (typeof r.name === 'string') this.info.title = r.name;
        return base;
      case 'context_transform':
      case 'ephemeral':
        base.kind = 'event';
        return base;
      default:
        ctx.problem({ kind: 'unknown-entry-type', message: `line ${ctx.line}: unknown pi entry type "${type}"; kept as is` });
        void ordinal;
        return base;
    }
  }

  finish(): { info: SessionInfo } {
    // Resolve what each compaction archived: from the previous compaction's first kept entry (or the start) up to the
    // entry before this one's first kept entry.
    let from = this.firstIsHeader ? 1 : 0;
    for (const { entry, keptOrdinal, abridge } of this.compactions) {
      const marker = entry.compaction!;
      if (abridge) continue; // carries its own ranges
      const keptIndex = marker.firstKeptEntryId !== undefined ? this.indexById.get(marker.firstKeptEntryId) : keptOrdinal !== undefined ? this.indexByOrdinal[keptOrdinal] : undefined;
      if (keptIndex !== undefined) {
        marker.firstKeptEntry = keptIndex;
        if (keptIndex - 1 >= from) marker.archived = { fromEntry: from, toEntry: keptIndex - 1 };
        from = keptIndex;
      }
    }
    return { info: this.info };
  }
}

function contentParts(content: unknown): Part[] {
  if (typeof content === 'string') return [textPart(content)];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const c of content) {
    if (!isRecord(c)) continue;
    if (c.type === 'text') parts.push(textPart(asString(c.text) ?? ''));
    else if (c.type === 'image') parts.push(imageFrom(c));
    else if (c.type === 'thinking') {
      const p: Part = { type: 'thinking', text: asString(c.thinking) ?? '' };
      const sig = asString(c.thinkingSignature);
      if (sig) p.signature = sig;
      if (c.redacted === true) p.redacted = true;
      parts.push(p);
    } else if (c.type === 'toolCall') {
      parts.push({ type: 'tool-call', id: asString(c.id) ?? '', name: asString(c.name) ?? '', arguments: c.arguments ?? {} });
    } else parts.push(textPart(JSON.stringify(c)));
  }
  return parts;
}

export function decodeUsage(u: unknown): Usage | undefined {
  if (!isRecord(u)) return undefined;
  const usage: Usage = { input: num(u.input), output: num(u.output), cacheRead: num(u.cacheRead), cacheWrite: num(u.cacheWrite) };
  // Some pi versions (seen with Google models) store the provider's prompt count, cached tokens included, as `input`;
  // their `totalTokens` is then input + output. Normalize so that input + cacheRead + cacheWrite is the prompt.
  const total = num(u.totalTokens);
  if (usage.cacheRead > 0 && total === usage.input + usage.output && usage.input >= usage.cacheRead) usage.input -= usage.cacheRead;
  if (typeof u.reasoning === 'number') usage.reasoning = u.reasoning;
  return usage;
}

function decodeMessage(m: Record<string, unknown>): Message | undefined {
  const role = asString(m.role) ?? '';
  if (!MESSAGE_ROLES.has(role)) return undefined;
  let message: Message;
  switch (role) {
    case 'user':
      message = { role: 'user', parts: contentParts(m.content) };
      break;
    case 'assistant': {
      message = { role: 'assistant', parts: contentParts(m.content) };
      const model = asString(m.model);
      if (model) message.model = model;
      const provider = asString(m.provider);
      if (provider) message.provider = provider;
      const usage = decodeUsage(m.usage);
      if (usage) message.usage = usage;
      const responseId = asString(m.responseId);
      if (responseId) message.responseId = responseId;
      const stop = asString(m.stopReason);
      if (stop) message.stopReason = stop;
      break;
    }
    case 'toolResult':
      message = {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: asString(m.toolCallId) ?? '',
            toolName: asString(m.toolName),
            content: resultContent(m.content),
            isError: m.isError === true,
          },
        ],
      };
      break;
    case 'bashExecution': {
      // pi shows a user-run command to the model as user text (unless excluded with `!!`).
      const exit = m.exitCode === undefined || m.exitCode === null ? '' : `\n(exit code ${String(m.exitCode)})`;
      const text = m.excludeFromContext === true ? '' : `Ran \`${asString(m.command) ?? ''}\`\n\`\`\`\n${asString(m.output) ?? ''}\n\`\`\`${exit}`;
      message = { role: 'user', parts: text ? [textPart(text)] : [], synthetic: true };
      break;
    }
    case 'branchSummary':
    case 'compactionSummary':
      message = { role: 'user', parts: [textPart(asString(m.summary) ?? '')], synthetic: true };
      break;
    default:
      // custom (v3) and hookMessage (v2): extension messages in the model's context.
      message = { role: 'user', parts: contentParts(m.content), synthetic: true };
  }
  const ts = toEpochMs(m.timestamp);
  if (ts !== undefined) message.timestamp = ts;
  return message;
}

// ---------------------------------------------------------------------------------------------------------------------
// Writing

function encodeParts(parts: Part[]): unknown[] {
  const out: unknown[] = [];
  for (const p of parts) {
    switch (p.type) {
      case 'text':
        out.push({ type: 'text', text: p.text });
        break;
      case 'thinking':
        out.push(p.signature ? { type: 'thinking', thinking: p.text, thinkingSignature: p.signature } : { type: 'thinking', thinking: p.text });
        break;
      case 'tool-call':
        out.push({ type: 'toolCall', id: p.id, name: p.name, arguments: p.arguments });
        break;
      case 'image':
        out.push({ type: 'image', data: p.data ?? '', mimeType: p.mediaType ?? 'image/png' });
        break;
      case 'file':
        out.push({ type: 'text', text: `[file ${p.name ?? ''} ${p.mediaType ?? ''} ${p.byteSize ?? '?'} bytes]` });
        break;
      case 'compaction':
        out.push({ type: 'text', text: p.marker.summary });
        break;
      case 'tool-result':
        break;
    }
  }
  return out;
}

/**
 * An abridge compaction as pi records it: a `compaction` entry whose summary starts with the original request (pi
 * shows only the summary and what follows its first kept entry) and whose `details.abridge` keeps abridge's own
 * marker. A compaction that only edited results has no pi equivalent: a `custom` entry keeps it for abridge.
 */
function encodeAbridgeMarker(m: AbridgeMarker, iso: string, ctx: EncodeContext): Record<string, unknown> {
  const { number: _n, ...saved } = m;
  if (!m.archived) return { type: 'custom', timestamp: iso, customType: 'abridge.compaction', data: { abridge: saved } };
  const r: Record<string, unknown> = { type: 'compaction', timestamp: iso };
  r.summary = ctx.task ? `## Original request (verbatim)\n${ctx.task}\n\n${m.summary}` : m.summary;
  const keptId = m.firstKeptEntry !== undefined ? ctx.idOf(m.firstKeptEntry) : undefined;
  if (keptId) r.firstKeptEntryId = keptId;
  else if (m.firstKeptEntry !== undefined) r.firstKeptEntryIndex = m.firstKeptEntry;
  r.tokensBefore = m.tokensBefore ?? 0;
  r.details = { abridge: saved };
  return r;
}

function abridgeDetails(details: unknown): Omit<AbridgeMarker, 'number'> | undefined {
  if (!isRecord(details) || !isRecord(details.abridge)) return undefined;
  const a = details.abridge;
  if (a.source !== 'abridge' || typeof a.summary !== 'string') return undefined;
  return a as unknown as Omit<AbridgeMarker, 'number'>;
}

function encodeUsage(u: Usage): Record<string, unknown> {
  const total = u.input + u.output + u.cacheRead + u.cacheWrite;
  return {
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
    totalTokens: total,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/**
 * pi records (without id links) for an entry that did not come from a pi file. `written` holds the compaction markers
 * already written, so that a format that stores a compaction twice (Claude Code: boundary + summary) gives one.
 */
interface EncodeContext {
  written: Set<CompactionMarker>;
  /** The id of the entry at an index, in a tree-shaped session. */
  idOf(index: number): string | undefined;
  /** The first thing the user asked, verbatim (pi drops what comes before a compaction's first kept entry). */
  task?: string;
}

function encodeEntry(e: Entry, iso: string, ctx: EncodeContext): Record<string, unknown>[] {
  const written = ctx.written;
  const carried = e.compaction ?? e.message?.parts.find((p) => p.type === 'compaction')?.marker;
  if (carried?.source === 'abridge') {
    if (written.has(carried)) return [];
    written.add(carried);
    return [encodeAbridgeMarker(carried as AbridgeMarker, iso, ctx)];
  }
  if (carried) {
    if (written.has(carried)) return [];
    written.add(carried);
    const r: Record<string, unknown> = { type: 'compaction', timestamp: iso, summary: carried.summary, tokensBefore: carried.tokensBefore ?? 0 };
    if (carried.firstKeptEntryId) r.firstKeptEntryId = carried.firstKeptEntryId;
    return [r];
  }
  if (e.sidechain) {
    // A subagent's messages are not part of the main conversation: keep them outside the model's context.
    return [{ type: 'custom', timestamp: iso, customType: 'abridge.sidechain', data: { message: e.message, raw: e.raw } }];
  }
  if (e.kind === 'model-change' && e.model) return [{ type: 'model_change', timestamp: iso, provider: e.model.provider ?? 'unknown', modelId: e.model.id }];
  const m = e.message;
  if (!m) return [{ type: 'custom', timestamp: iso, customType: 'abridge.entry', data: { kind: e.kind, sourceType: e.sourceType, raw: e.raw } }];
  const ts = m.timestamp ?? e.timestamp ?? Date.parse(iso);
  switch (m.role) {
    case 'system':
      // pi keeps no system prompt in its sessions: preserve it as extension data, outside the model's context.
      return [{ type: 'custom', timestamp: iso, customType: 'abridge.system', data: { text: m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n') } }];
    case 'user':
      return [{ type: 'message', timestamp: iso, message: { role: 'user', content: encodeParts(m.parts), timestamp: ts } }];
    case 'assistant': {
      const msg: Record<string, unknown> = { role: 'assistant', content: encodeParts(m.parts), api: apiFor(m.provider), provider: m.provider ?? 'unknown', model: m.model ?? 'unknown' };
      msg.usage = encodeUsage(m.usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
      msg.stopReason = m.stopReason ?? (m.parts.some((p) => p.type === 'tool-call') ? 'toolUse' : 'stop');
      msg.timestamp = ts;
      return [{ type: 'message', timestamp: iso, message: msg }];
    }
    case 'tool': {
      const out: Record<string, unknown>[] = [];
      for (const p of m.parts) {
        if (p.type !== 'tool-result') continue;
        out.push({
          type: 'message',
          timestamp: iso,
          message: { role: 'toolResult', toolCallId: p.callId, toolName: p.toolName ?? '', content: encodeParts(p.content), isError: p.isError, timestamp: ts },
        });
      }
      return out;
    }
  }
}

function apiFor(provider: string | undefined): string {
  if (provider === 'anthropic') return 'anthropic-messages';
  if (provider === 'openai') return 'openai-responses';
  if (provider === 'google') return 'google-generative-ai';
  return 'unknown';
}

function writePi(session: Session, options: { redact?: (text: string) => string } = {}): string {
  const redact = options.redact ?? ((t: string) => t);
  if (session.format === 'pi') {
    // Records read from pi are written as they were; entries added since (e.g. compaction markers) are encoded and,
    // in a tree-shaped session, linked to the entry before them.
    const tree = session.entries.some((e) => e.id !== undefined);
    const items: { text: string; sameLineAsPrevious?: boolean; blankLinesBefore?: number }[] = [];
    const written = new Set<CompactionMarker>();
    for (const e of session.entries) if (e.raw !== undefined && e.compaction) written.add(e.compaction);
    const ctx = encodeContext(session, written);
    let lastId: string | null = null;
    for (const e of session.entries) {
      if (e.fromSameRecord) continue;
      if (e.raw !== undefined || e.rawText !== undefined) {
        items.push({ text: e.rawText ?? JSON.stringify(e.raw), sameLineAsPrevious: e.sameLineAsPrevious, blankLinesBefore: e.blankLinesBefore });
        if (e.id !== undefined) lastId = e.id;
        continue;
      }
      let first = true;
      for (const r of encodeEntry(e, isoOf(e), ctx)) {
        if (tree) {
          // An entry added in memory may already have its id (a compaction marker linked into the tree): keep it.
          const id = (first && e.id) || stableId(`${e.index}:${items.length}:${JSON.stringify(r).length}`, 8);
          items.push({ text: redact(JSON.stringify({ type: r.type, id, parentId: lastId, ...withoutType(r) })) });
          lastId = id;
          first = false;
        } else items.push({ text: redact(JSON.stringify(r)) });
      }
    }
    return writeJsonl(items, session);
  }
  // From another format: a v3 session whose entries form one linear branch.
  const records: Record<string, unknown>[] = [];
  const start = session.entries.find((e) => e.timestamp !== undefined)?.timestamp ?? 0;
  records.push({
    type: 'session',
    version: 3,
    id: session.info.id ?? stableId(`${session.format}:${session.entries.length}`, 36),
    timestamp: new Date(session.info.startedAt ?? start).toISOString(),
    cwd: session.info.cwd ?? '',
  });
  let parentId: string | null = null;
  const ctx = encodeContext(session, new Set<CompactionMarker>());
  for (const e of session.entries) {
    if (e.kind === 'header') continue;
    for (const r of encodeEntry(e, isoOf(e), ctx)) {
      const id = stableId(`${records.length}:${e.index}`, 8);
      records.push({ type: r.type, id, parentId, ...withoutType(r) });
      parentId = id;
    }
  }
  return writeJsonl(records.map((r) => ({ text: JSON.stringify(r) })));
}

function encodeContext(session: Session, written: Set<CompactionMarker>): EncodeContext {
  const first = session.entries.find((e) => e.message?.role === 'user' && !e.message.synthetic && !e.sidechain)?.message;
  const task = first?.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n').trim();
  const ctx: EncodeContext = { written, idOf: (i) => session.entries[i]?.id };
  if (task) ctx.task = task;
  return ctx;
}

function withoutType(r: Record<string, unknown>): Record<string, unknown> {
  const { type: _type, ...rest } = r;
  return rest;
}

function isoOf(e: Entry): string {
  return new Date(e.timestamp ?? e.message?.timestamp ?? 0).toISOString();
}

export const piFormat: TranscriptFormat = {
  id: 'pi',
  label: 'pi session JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const first = records[0]!;
    const header = first.type === 'session' && typeof first.timestamp === 'string' && ('cwd' in first || 'version' in first) && !('seq' in first);
    const known = share(records, (r) => typeof r.type === 'string' && ENTRY_TYPES.has(r.type));
    const messages = share(records, (r) => r.type === 'message' && isRecord(r.message) && typeof r.message.role === 'string');
    if (header && known > 0.8) return 0.95;
    if (header && known >= 0.5) return 0.8;
    if (known > 0.9 && messages > 0.3) return 0.7;
    return 0;
  },
  createDecoder: () => new PiDecoder(),
  write: writePi,
};
