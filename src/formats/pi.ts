/**
 * pi coding-agent session JSONL: a `session` header (v3 with `version`, or the older header without it), then entries.
 * v2+ entries link as a tree by id/parentId; the older format is linear and its compactions name the first kept entry
 * by index.
 */
import type { CompactionMarker, EntryDraft, Message, Part, SessionInfo, Usage } from '../model/types.js';
import { imageFrom, num, resultContent, textPart, toEpochMs } from '../model/parts.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';
import type { AbridgeMarker } from '../model/view.js';
import { PI_MARKER_TYPE, PI_SUMMARY_TYPE, writePi } from './pi-write.js';

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

const MESSAGE_ROLES = new Set([
  'user',
  'assistant',
  'toolResult',
  'bashExecution',
  'custom',
  'hookMessage',
  'branchSummary',
  'compactionSummary',
]);

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
          ctx.problem({
            kind: 'unknown-entry-type',
            message: `line ${ctx.line}: unknown pi message role "${String(r.message.role)}"; kept as is`,
          });
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
        // A compaction abridge's pi extension supplied is pi's own record (pi's semantics), with abridge's summary.
        const byExtension = isRecord(r.details) && isRecord(r.details.abridge) && r.details.abridge.layout === 'pi';
        const saved = byExtension ? undefined : abridgeDetails(r.details);
        if (saved) {
          // A compaction abridge wrote: restore its own marker (edits, archived span), which pi's fields cannot hold.
          const marker = restoreMarker(saved, this.compactions.length + 1, ctx.nextIndex);
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
        if (byExtension) {
          marker.trigger = 'abridge';
          marker.strategies = ['summarize'];
        }
        if (typeof r.tokensBefore === 'number') marker.tokensBefore = r.tokensBefore;
        const keptId = asString(r.firstKeptEntryId);
        if (keptId) marker.firstKeptEntryId = keptId;
        base.kind = 'compaction';
        base.compaction = marker;
        base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
        this.compactions.push({
          entry: base,
          keptOrdinal: typeof r.firstKeptEntryIndex === 'number' ? r.firstKeptEntryIndex : undefined,
        });
        return base;
      }
      case 'branch_summary':
        base.kind = 'branch-summary';
        base.message = { role: 'user', parts: [textPart(asString(r.summary) ?? '')], synthetic: true };
        return base;
      case 'custom_message': {
        const saved = r.customType === PI_SUMMARY_TYPE ? abridgeDetails(r.details) : undefined;
        if (saved) {
          // abridge's summary where pi shows it in place (the session resumes from the branch it heads).
          const marker = restoreMarker(saved, this.compactions.length + 1, ctx.nextIndex);
          base.kind = 'compaction';
          base.compaction = marker;
          base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
          this.compactions.push({ entry: base, abridge: true });
          return base;
        }
        base.kind = 'message';
        base.message = { role: 'user', parts: contentParts(r.content), synthetic: true };
        return base;
      }
      case 'custom': {
        const saved = r.customType === PI_MARKER_TYPE ? abridgeDetails(r.data) : undefined;
        if (saved) {
          // An abridge compaction that only edited results (no summary): not part of pi's context, but of abridge's.
          const marker = restoreMarker(saved, this.compactions.length + 1, ctx.nextIndex);
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
        ctx.problem({
          kind: 'unknown-entry-type',
          message: `line ${ctx.line}: unknown pi entry type "${type}"; kept as is`,
        });
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
      if (abridge) {
        // carries its own ranges; where a re-appended view ends is named by id
        const m = marker as AbridgeMarker & { viewEndsAtId?: string };
        const end = m.viewEndsAtId !== undefined ? this.indexById.get(m.viewEndsAtId) : undefined;
        delete m.viewEndsAtId;
        if (end !== undefined) m.viewEndsAt = end;
        continue;
      }
      const keptIndex =
        marker.firstKeptEntryId !== undefined
          ? this.indexById.get(marker.firstKeptEntryId)
          : keptOrdinal !== undefined
            ? this.indexByOrdinal[keptOrdinal]
            : undefined;
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
      parts.push({
        type: 'tool-call',
        id: asString(c.id) ?? '',
        name: asString(c.name) ?? '',
        arguments: c.arguments ?? {},
      });
    } else parts.push(textPart(JSON.stringify(c)));
  }
  return parts;
}

export function decodeUsage(u: unknown): Usage | undefined {
  if (!isRecord(u)) return undefined;
  const usage: Usage = {
    input: num(u.input),
    output: num(u.output),
    cacheRead: num(u.cacheRead),
    cacheWrite: num(u.cacheWrite),
  };
  // Some pi versions (seen with Google models) store the provider's prompt count, cached tokens included, as `input`;
  // their `totalTokens` is then input + output. Normalize so that input + cacheRead + cacheWrite is the prompt.
  const total = num(u.totalTokens);
  if (usage.cacheRead > 0 && total === usage.input + usage.output && usage.input >= usage.cacheRead)
    usage.input -= usage.cacheRead;
  if (typeof u.reasoning === 'number') usage.reasoning = u.reasoning;
  return usage;
}

function bashText(m: Record<string, unknown>): string {
  const output = asString(m.output);
  let text = `Ran \`${asString(m.command) ?? ''}\`\n${output ? `\`\`\`\n${output}\n\`\`\`` : '(no output)'}`;
  if (m.cancelled === true) text += '\n\n(command cancelled)';
  else if (typeof m.exitCode === 'number' && m.exitCode !== 0) text += `\n\nCommand exited with code ${m.exitCode}`;
  const full = asString(m.fullOutputPath);
  if (m.truncated === true && full) text += `\n\n[Output truncated. Full output: ${full}]`;
  return text;
}

/** One pi message (`AgentMessage`: a session's `message` record, or what pi's `buildSessionContext` returns) as abridge's. */
export function decodePiMessage(m: Record<string, unknown>): Message | undefined {
  return decodeMessage(m);
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
      // pi shows a user-run command to the model as this user text (its bashExecutionToText), unless excluded (`!!`).
      const text = m.excludeFromContext === true ? '' : bashText(m);
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

/**
 * abridge's marker as it was saved. A marker the pi writer saved on the branch it re-appended (`rebased`) heads what
 * the session resumes from: its edits are already in the records that follow, and what it archived is on the branch
 * left behind, so on this branch it stands for its own place only (where its summary goes, which a later compaction
 * covers or carries).
 */
function restoreMarker(
  saved: Omit<AbridgeMarker, 'number'> & { rebased?: boolean },
  number: number,
  index: number,
): CompactionMarker {
  // leftLeafId names the record an undo resumes from: read off the record itself (src/formats/uncompact.ts).
  const { rebased, leftLeafId: _leaf, ...rest } = saved as typeof saved & { leftLeafId?: string };
  const marker = { ...rest, number } as AbridgeMarker;
  if (rebased) {
    marker.archived = { fromEntry: index, toEntry: index };
    delete marker.hidden;
    delete marker.edits;
    delete marker.firstKeptEntry;
  }
  return marker;
}

function abridgeDetails(details: unknown): Omit<AbridgeMarker, 'number'> | undefined {
  if (!isRecord(details) || !isRecord(details.abridge)) return undefined;
  const a = details.abridge;
  if (a.source !== 'abridge' || typeof a.summary !== 'string') return undefined;
  return a as unknown as Omit<AbridgeMarker, 'number'>;
}

// ---------------------------------------------------------------------------------------------------------------------
// Writing

export const piFormat: TranscriptFormat = {
  id: 'pi',
  label: 'pi session JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const first = records[0]!;
    const header =
      first.type === 'session' &&
      typeof first.timestamp === 'string' &&
      ('cwd' in first || 'version' in first) &&
      !('seq' in first);
    const known = share(records, (r) => typeof r.type === 'string' && ENTRY_TYPES.has(r.type));
    const messages = share(
      records,
      (r) => r.type === 'message' && isRecord(r.message) && typeof r.message.role === 'string',
    );
    if (header && known > 0.8) return 0.95;
    if (header && known >= 0.5) return 0.8;
    if (known > 0.9 && messages > 0.3) return 0.7;
    return 0;
  },
  createDecoder: () => new PiDecoder(),
  write: writePi,
};
