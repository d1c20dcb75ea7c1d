/**
 * Codex CLI rollout JSONL (`~/.codex/sessions/…/rollout-*.jsonl`): one `{timestamp, type, payload}` record a line.
 *
 * `session_meta` opens the file; `turn_context` names the model of each turn; `response_item` records are the items the
 * model saw or produced (messages, reasoning, tool calls and their outputs), one item a record; `event_msg` records are
 * UI events (they repeat the user and agent messages, so they never become messages here) and carry `token_count`
 * usage; `compacted` records replace the history with a summary.
 */
import type {
  CompactionMarker,
  EntryDraft,
  Message,
  Part,
  ResultContentPart,
  Role,
  SessionInfo,
  Usage,
} from '../model/types.js';
import { imageFrom, num, parseArguments, resultContent, textPart, toEpochMs } from '../model/parts.js';
import { writeCodex } from './codex-write.js';
import { imageFromUrl } from './request-body.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';

const RECORD_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);

/**
 * Response items as older Codex rollouts wrote them, one a line without the `{type, payload}` envelope (after a first
 * line `{id, timestamp, instructions?}`; the oldest also hold `{record_type: "state"}` lines).
 */
const DIRECT_ITEMS = new Set([
  'message',
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'local_shell_call_output',
  'web_search_call',
]);

function isDirectItem(r: Record<string, unknown>): boolean {
  return typeof r.type === 'string' && DIRECT_ITEMS.has(r.type) && !('payload' in r);
}

function isDirectMeta(r: Record<string, unknown>): boolean {
  return r.type === undefined && typeof r.id === 'string' && typeof r.timestamp === 'string';
}

/** Response items that are bookkeeping of the agent rather than model context. */
const EVENT_ITEMS = new Set(['ghost_snapshot', 'compaction', 'compaction_summary']);

const ROLES: Record<string, Role> = { user: 'user', assistant: 'assistant', developer: 'system', system: 'system' };

/** User-role text that Codex injects itself (workspace instructions, environment), not typed by a person. */
const HARNESS_PREFIXES = ['<environment_context>', '# AGENTS.md instructions', '<user_instructions>'];

class CodexDecoder implements EntryDecoder {
  private info: SessionInfo = {};
  private provider: string | undefined;
  private model: string | undefined;
  /** The latest assistant message since the previous token_count: the one that report's usage belongs to. */
  private pendingAssistant: Message | undefined;
  private readonly toolNames = new Map<string, string>();
  private readonly compactions: EntryDraft[] = [];
  private firstContentEntry: EntryDraft | undefined;
  private lastContextTokens: number | undefined;
  private ordinal = 0;
  /** Codex's limit on a tool output kept in the history it sends (see tokens/sent.ts). */
  private truncation: { mode: 'tokens' | 'bytes'; limit: number } | undefined;
  private cliVersion: string | undefined;

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const ordinal = this.ordinal++;
    const draft = this.decodeRecord(r, ctx, ordinal);
    if (draft.kind !== 'header' && this.firstContentEntry === undefined) this.firstContentEntry = draft;
    if (draft.kind !== 'compaction' || !isRecord(r.payload) || !Array.isArray(r.payload.replacement_history))
      return [draft];
    return [draft, ...this.replacement(r.payload.replacement_history, draft, ctx)];
  }

  /**
   * A compaction's `replacement_history`: the items Codex sends in place of everything before it (the user's messages
   * and OpenAI's encrypted compaction, or abridge's compacted view), each a message after the marker, from the same
   * record.
   */
  private replacement(history: unknown[], marker: EntryDraft, ctx: DecodeContext): EntryDraft[] {
    const out: EntryDraft[] = [];
    // The copies are not responses: a token_count after the compaction belongs to the response before it, if any.
    const pending = this.pendingAssistant;
    for (const item of history) {
      if (!isRecord(item)) continue;
      const base: EntryDraft = { kind: 'unknown', sourceType: 'compacted/replacement_history', fromSameRecord: true };
      if (marker.timestamp !== undefined) base.timestamp = marker.timestamp;
      if (item.type === 'compaction' || item.type === 'compaction_summary') {
        const native = nativeCompactionMarker(item, marker.compaction!.number);
        if (!native) continue;
        base.kind = 'message';
        // As a provider's compaction is kept in a working session: the model's own item, sent back as it came.
        base.message = { role: 'assistant', parts: [{ type: 'compaction', marker: native }] };
        if (this.model) base.message.model = this.model;
        if (this.provider) base.message.provider = this.provider;
      } else if (isSummaryItem(item, marker.compaction!.summary)) {
        // The summary itself (abridge writes it as a user message of the `message` text): known as a summary again.
        base.kind = 'message';
        base.message = { role: 'user', parts: [{ type: 'compaction', marker: marker.compaction! }], synthetic: true };
      } else {
        const draft = this.responseItem(item, base, ctx, this.ordinal);
        if (draft.kind !== 'message') continue;
        delete draft.id;
      }
      if (base.message && base.timestamp !== undefined) base.message.timestamp = base.timestamp;
      out.push(base);
    }
    this.pendingAssistant = pending;
    return out;
  }

  private decodeRecord(r: Record<string, unknown>, ctx: DecodeContext, ordinal: number): EntryDraft {
    // Older rollouts: the same records without the envelope.
    if (isDirectItem(r)) return this.unwrapped(r, 'response_item', ctx, ordinal, r);
    if (isDirectMeta(r))
      return this.unwrapped({ ...r, base_instructions: r.instructions }, 'session_meta', ctx, ordinal, r);
    if (r.record_type === 'state') {
      const base: EntryDraft = { kind: 'event', sourceType: 'state', raw: r };
      return base;
    }
    const type = asString(r.type) ?? '';
    const base: EntryDraft = { kind: 'unknown', sourceType: type, raw: r };
    const ts = toEpochMs(r.timestamp);
    if (ts !== undefined) base.timestamp = ts;

    if (!RECORD_TYPES.has(type)) {
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: unknown Codex record type "${type}"; kept as is`,
      });
      return base;
    }
    const p = r.payload;
    if (!isRecord(p)) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Codex "${type}" record has no payload object; kept as is`,
      });
      return base;
    }

    switch (type) {
      case 'session_meta':
        return this.sessionMeta(p, base, ts);
      case 'turn_context': {
        const policy = isRecord(p.truncation_policy) ? p.truncation_policy : undefined;
        if (policy && (policy.mode === 'tokens' || policy.mode === 'bytes') && typeof policy.limit === 'number')
          this.truncation = { mode: policy.mode, limit: policy.limit };
        const model = asString(p.model);
        if (model && model !== this.model) {
          this.model = model;
          base.kind = 'model-change';
          base.model = this.provider ? { provider: this.provider, id: model } : { id: model };
        } else base.kind = 'event';
        return base;
      }
      case 'response_item':
        return this.responseItem(p, base, ctx, ordinal);
      case 'event_msg':
        return this.eventMsg(p, base);
      default:
        return this.compacted(p, base);
    }
  }

  /** An envelope-less record, decoded as its envelope would have been (the raw record stays the original). */
  private unwrapped(
    payload: Record<string, unknown>,
    type: 'response_item' | 'session_meta',
    ctx: DecodeContext,
    ordinal: number,
    raw: Record<string, unknown>,
  ): EntryDraft {
    const draft = this.decodeRecord({ type, timestamp: payload.timestamp, payload }, ctx, ordinal);
    draft.raw = raw;
    return draft;
  }

  private sessionMeta(p: Record<string, unknown>, base: EntryDraft, ts: number | undefined): EntryDraft {
    base.kind = 'header';
    // A resumed or forked rollout can repeat session_meta: the first one names the session.
    if (this.info.id === undefined) {
      const id = asString(p.id) ?? asString(p.session_id);
      if (id) this.info.id = id;
      const cwd = asString(p.cwd);
      if (cwd) this.info.cwd = cwd;
      const started = toEpochMs(p.timestamp) ?? ts;
      if (started !== undefined) this.info.startedAt = started;
    }
    const provider = asString(p.model_provider);
    if (provider) this.provider = provider;
    const version = asString(p.cli_version);
    if (version && this.cliVersion === undefined) this.cliVersion = version;
    const instructions =
      typeof p.base_instructions === 'string'
        ? p.base_instructions
        : isRecord(p.base_instructions)
          ? asString(p.base_instructions.text)
          : undefined;
    if (instructions) {
      base.message = { role: 'system', parts: [textPart(instructions)] };
      if (ts !== undefined) base.message.timestamp = ts;
    }
    return base;
  }

  private responseItem(p: Record<string, unknown>, base: EntryDraft, ctx: DecodeContext, ordinal: number): EntryDraft {
    const itemType = asString(p.type) ?? '';
    base.sourceType = `response_item/${itemType}`;
    const itemId = asString(p.id);
    if (itemId) base.id = itemId;
    let message: Message | undefined;

    switch (itemType) {
      case 'message': {
        const role = ROLES[asString(p.role) ?? ''];
        if (!role) {
          ctx.problem({
            kind: 'unknown-entry-type',
            message: `line ${ctx.line}: Codex message with unknown role "${String(p.role)}"; kept as is`,
          });
          return base;
        }
        const parts = contentParts(p.content);
        message = role === 'assistant' ? this.assistant(parts) : { role, parts };
        if (role === 'user' && isHarnessText(parts)) message.synthetic = true;
        break;
      }
      case 'reasoning':
        message = this.assistant([reasoningPart(p)]);
        break;
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call': {
        const id = asString(p.call_id) ?? itemId ?? '';
        const name = asString(p.name) ?? (itemType === 'local_shell_call' ? 'local_shell' : '');
        const args =
          itemType === 'function_call'
            ? parseArguments(p.arguments)
            : itemType === 'custom_tool_call'
              ? (p.input ?? '')
              : (p.action ?? {});
        if (id) this.toolNames.set(id, name);
        message = this.assistant([{ type: 'tool-call', id, name, arguments: args }]);
        break;
      }
      case 'web_search_call': {
        // Web searches run on the provider's side: no output item follows, and older rollouts give them no id.
        const id = asString(p.call_id) ?? itemId ?? `codex-web-search-${ordinal}`;
        message = this.assistant([{ type: 'tool-call', id, name: 'web_search', arguments: p.action ?? {} }]);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output': {
        const callId = asString(p.call_id) ?? '';
        const { content, isError } = decodeOutput(p.output);
        const part: Part = { type: 'tool-result', callId, content, isError };
        const name = this.toolNames.get(callId);
        if (name !== undefined) part.toolName = name;
        message = { role: 'tool', parts: [part] };
        break;
      }
      default:
        if (EVENT_ITEMS.has(itemType)) {
          base.kind = 'event';
          return base;
        }
        ctx.problem({
          kind: 'unknown-entry-type',
          message: `line ${ctx.line}: unknown Codex response item type "${itemType}"; kept as is`,
        });
        return base;
    }
    if (base.timestamp !== undefined) message.timestamp = base.timestamp;
    base.kind = 'message';
    base.message = message;
    return base;
  }

  private assistant(parts: Part[]): Message {
    const m: Message = { role: 'assistant', parts };
    if (this.model) m.model = this.model;
    if (this.provider) m.provider = this.provider;
    this.pendingAssistant = m;
    return m;
  }

  private eventMsg(p: Record<string, unknown>, base: EntryDraft): EntryDraft {
    const eventType = asString(p.type) ?? '';
    base.sourceType = `event_msg/${eventType}`;
    base.kind = 'event';
    if (eventType !== 'token_count' || !isRecord(p.info)) return base;
    const usage = decodeUsage(p.info);
    if (!usage) return base;
    base.usage = usage;
    this.lastContextTokens = usage.input + usage.cacheRead + usage.cacheWrite + usage.output;
    if (this.pendingAssistant) {
      this.pendingAssistant.usage = usage;
      if (this.model) this.pendingAssistant.model = this.model;
      this.pendingAssistant = undefined;
    }
    return base;
  }

  private compacted(p: Record<string, unknown>, base: EntryDraft): EntryDraft {
    const message = asString(p.message);
    const marker: CompactionMarker = {
      number: this.compactions.length + 1,
      summary: message && message.trim() !== '' ? message : summarizeReplacement(p.replacement_history),
      source: 'codex',
    };
    if (this.lastContextTokens !== undefined) marker.tokensBefore = this.lastContextTokens;
    base.kind = 'compaction';
    base.compaction = marker;
    // With a replacement history, the items it lists are what follows (see replacement()); the summary is only its name.
    if (!Array.isArray(p.replacement_history)) {
      base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
      if (base.timestamp !== undefined) base.message.timestamp = base.timestamp;
    }
    this.compactions.push(base);
    return base;
  }

  finish(): { info: SessionInfo; extra?: Record<string, unknown> } {
    // A Codex compaction replaces the whole history before it: everything from the start (after the header), or from
    // the previous compaction's marker, up to the entry before it.
    let from = (this.firstContentEntry as { index?: number } | undefined)?.index;
    for (const draft of this.compactions) {
      const index = (draft as { index?: number }).index;
      if (index === undefined) continue;
      if (from !== undefined && index - 1 >= from) draft.compaction!.archived = { fromEntry: from, toEntry: index - 1 };
      from = index;
    }
    const extra: Record<string, unknown> = {};
    if (this.cliVersion) extra.cliVersion = this.cliVersion;
    if (this.truncation) extra.truncationPolicy = this.truncation;
    return Object.keys(extra).length > 0 ? { info: this.info, extra } : { info: this.info };
  }
}

function contentParts(content: unknown): Part[] {
  if (typeof content === 'string') return [textPart(content)];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const c of content) {
    if (typeof c === 'string') parts.push(textPart(c));
    else if (!isRecord(c)) continue;
    else if (c.type === 'input_text' || c.type === 'output_text' || c.type === 'text')
      parts.push(textPart(asString(c.text) ?? ''));
    else if (c.type === 'input_image') parts.push(inputImage(c));
    else if (c.type === 'refusal') parts.push(textPart(asString(c.refusal) ?? ''));
    else parts.push(textPart(JSON.stringify(c)));
  }
  return parts;
}

/** An `input_image`: Codex keeps a pasted image as a data URL, whose data is the image. */
function inputImage(c: Record<string, unknown>): ResultContentPart {
  const url = asString(c.image_url);
  return url ? imageFromUrl(url) : imageFrom(c);
}

function isHarnessText(parts: Part[]): boolean {
  return (
    parts.length > 0 &&
    parts.every((p) => p.type === 'text' && HARNESS_PREFIXES.some((prefix) => p.text.trimStart().startsWith(prefix)))
  );
}

function reasoningPart(p: Record<string, unknown>): Part {
  const texts = (list: unknown): string[] =>
    Array.isArray(list)
      ? list.flatMap((s) => (isRecord(s) && typeof s.text === 'string' ? [s.text] : typeof s === 'string' ? [s] : []))
      : [];
  let text = texts(p.summary).join('\n\n');
  // Newer rollouts may carry the raw reasoning text as `content` when there is no summary.
  if (text === '') text = texts(p.content).join('\n\n');
  const part: Part = { type: 'thinking', text };
  const encrypted = asString(p.encrypted_content);
  if (encrypted) {
    part.signature = encrypted;
    if (text === '') part.redacted = true;
  }
  return part;
}

/** `last_token_usage` into a normalized Usage: Codex counts cached prompt tokens inside `input_tokens`. */
function decodeUsage(info: Record<string, unknown>): Usage | undefined {
  const last = info.last_token_usage;
  if (!isRecord(last)) return undefined;
  const cached = num(last.cached_input_tokens);
  const usage: Usage = {
    input: Math.max(0, num(last.input_tokens) - cached),
    output: num(last.output_tokens),
    cacheRead: cached,
    cacheWrite: 0,
  };
  if (typeof last.reasoning_output_tokens === 'number') usage.reasoning = last.reasoning_output_tokens;
  if (typeof info.model_context_window === 'number') usage.contextWindow = info.model_context_window;
  return usage;
}

/** Exit code in the header Codex puts before a command's output ("Process exited with code 1", "Exit code: 1"). */
const EXIT_CODE = /^(?:Process exited with code|Exit code:) (-?\d+)\s*$/m;

/**
 * A tool output: plain text (exec output with a header), JSON text `{output, metadata: {exit_code}}` (older shell
 * tool), an object `{content, success}`, or a list of content items.
 */
export function decodeOutput(output: unknown): { content: ResultContentPart[]; isError: boolean } {
  if (typeof output === 'string') {
    if (output.trimStart().startsWith('{')) {
      try {
        const parsed: unknown = JSON.parse(output);
        if (isRecord(parsed) && typeof parsed.output === 'string') {
          const exit = isRecord(parsed.metadata) ? parsed.metadata.exit_code : undefined;
          return { content: [textPart(parsed.output)], isError: typeof exit === 'number' && exit !== 0 };
        }
      } catch {
        // Plain text that happens to start with a brace.
      }
    }
    const header = output.split(/\nOutput:\n/, 1)[0]!.slice(0, 500);
    const m = header.match(EXIT_CODE);
    return { content: [textPart(output)], isError: m !== null && Number(m[1]) !== 0 };
  }
  if (Array.isArray(output))
    return {
      content: output.flatMap((c) => (isRecord(c) && c.type === 'input_image' ? [inputImage(c)] : resultContent([c]))),
      isError: false,
    };
  if (isRecord(output)) {
    const body = 'content' in output ? output.content : 'output' in output ? output.output : output;
    const exit = isRecord(output.metadata) ? output.metadata.exit_code : undefined;
    return {
      content: resultContent(body),
      isError: output.success === false || (typeof exit === 'number' && exit !== 0),
    };
  }
  return { content: resultContent(output), isError: false };
}

/** A user message of the compaction's own summary text, alone. */
function isSummaryItem(item: Record<string, unknown>, summary: string): boolean {
  if (summary.trim() === '' || item.type !== 'message' || item.role !== 'user' || !Array.isArray(item.content))
    return false;
  const [only, ...rest] = item.content as unknown[];
  return rest.length === 0 && isRecord(only) && only.type === 'input_text' && only.text === summary;
}

/** OpenAI's encrypted compaction in a replacement history, as a marker that sends it back as it came. */
function nativeCompactionMarker(item: Record<string, unknown>, number: number): CompactionMarker | undefined {
  const encrypted = asString(item.encrypted_content);
  const summary = asString(item.summary) ?? asString(item.text) ?? '';
  if (!encrypted && summary === '') return undefined;
  const marker: CompactionMarker = { number, summary, source: 'codex' };
  if (encrypted) marker.native = { provider: 'openai', item: { type: 'compaction', encrypted_content: encrypted } };
  return marker;
}

/** What the model sees after a compaction with no summary text: the replacement history, as text. */
function summarizeReplacement(history: unknown): string {
  if (!Array.isArray(history)) return '';
  const out: string[] = [];
  for (const item of history) {
    if (!isRecord(item)) continue;
    if (item.type === 'message') {
      const text = contentParts(item.content)
        .map((p) => (p.type === 'text' ? p.text : '[image]'))
        .join('\n');
      out.push(`[${asString(item.role) ?? 'unknown'}]\n${text}`);
    } else if (item.type === 'compaction' || item.type === 'compaction_summary') {
      const summary = asString(item.summary) ?? asString(item.text);
      out.push(summary ?? '[encrypted compaction summary]');
    }
  }
  return out.join('\n\n');
}

export const codexFormat: TranscriptFormat = {
  id: 'codex',
  label: 'Codex CLI rollout JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const known = share(records, (r) => typeof r.type === 'string' && RECORD_TYPES.has(r.type) && isRecord(r.payload));
    if (known > 0.8) return 0.95;
    if (known > 0.5) return 0.7;
    // Older rollouts: a `{id, timestamp}` first line, then bare response items (and `record_type: state` lines).
    const direct = share(records, (r) => isDirectItem(r) || r.record_type === 'state');
    if (isDirectMeta(records[0]!) && direct >= 0.5) return 0.9;
    return 0;
  },
  createDecoder: () => new CodexDecoder(),
  write: writeCodex,
};
