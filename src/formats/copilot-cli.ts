/**
 * GitHub Copilot CLI session events (`~/.copilot/session-state/<id>/events.jsonl`): one `{type, data, id, timestamp,
 * parentId}` event a line, with dotted types. Field meanings are those of Copilot's published event schema
 * (`@github/copilot-sdk`, generated/session-events).
 *
 * What the model sees is spread over a few events: `system.message` (the system prompt, which newer versions record),
 * `user.message` (its `transformedContent` is what the model got: the person's text wrapped in `<current_datetime>` and
 * `<system_reminder>`), `assistant.message` (one model response: reasoning, text and `toolRequests`),
 * `tool.execution_complete` (one result), and context Copilot injects as user messages (`skill.invoked`: a skill's
 * body; `system.notification`). Everything else — turns, hooks, permissions, session bookkeeping — is an event.
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
import { num, parseArguments, resultContent, textPart, toEpochMs } from '../model/parts.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';

/** The events Copilot CLI persists (schema of @github/copilot-sdk 1.0.14), and `assistant.usage`, which it streams. */
const KNOWN_TYPES = new Set(
  `session.start session.resume session.shutdown session.model_change session.info session.warning session.error
  session.mode_changed session.mode_notice_delivered session.permissions_changed session.plan_changed
  session.workspace_file_changed session.handoff session.truncation session.usage_checkpoint session.context_changed
  session.context_cleared session.compaction_start session.compaction_complete session.task_complete
  session.completion_receipt session.remote_steerable_changed session.schedule_created session.schedule_cancelled
  session.schedule_rearmed session.session_limits_changed session.autopilot_objective_changed
  session.auto_mode_resolved session.binary_asset session.canvas.recorded session.canvas.removed session.fusion_completed
  session.fusion_resolved session.fusion_route_failed session.title_changed system.message system.notification
  user.message assistant.turn_start assistant.turn_end assistant.message assistant.reasoning assistant.usage
  assistant.fusion_phase_completed assistant.fusion_phase_failed tool.execution_start tool.execution_complete
  tool.user_requested tool_search.activated skill.invoked subagent.started subagent.configured subagent.completed
  subagent.failed subagent.selected subagent.deselected hook.start hook.end permission.requested permission.completed
  external_tool.requested external_tool.completed`.split(/\s+/),
);

/** Events that end an agent's tool phase: injected messages still waiting for results go in after them. */
const PHASE_ENDS = new Set(['assistant.turn_start', 'assistant.turn_end']);

/** The state of one agent's conversation (the main one, or a subagent's: its events carry `agentId`). */
interface Conversation {
  /** Calls of the latest response that no result has answered yet, id → tool name. */
  open: Map<string, string>;
  responseId?: string;
  /** Every call made so far, and the ones answered: to tell a second result from a result with no call at all. */
  calls: Set<string>;
  answered: Set<string>;
  /**
   * Messages Copilot injected (a steering user message, a skill, a notification) while calls were open: the model gets
   * them after the results (a provider takes nothing between calls and their results), so they become messages there.
   * Still waiting when the file ends, they were in no request and stay events.
   */
  deferred: EntryDraft[];
}

interface Asset {
  data: string;
  mimeType?: string;
  byteLength?: number;
}

class CopilotCliDecoder implements EntryDecoder {
  private info: SessionInfo = {};
  private copilotVersion: string | undefined;
  private model: string | undefined;
  private systemPrompt: string | undefined;
  private readonly conversations = new Map<string, Conversation>();
  /** Images and documents the events refer to by id (`session.binary_asset`). */
  private readonly assets = new Map<string, Asset>();
  private lastAssistant: Message | undefined;
  private pendingUsage: { apiCallId: string; usage: Usage } | undefined;
  /** Main-agent responses since the process (re)started, to tie a one-request shutdown report to its response. */
  private responsesSinceStart = 0;
  private compactions = 0;
  private compactionStart: number | undefined;

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const type = asString(r.type) ?? '';
    const base: EntryDraft = { kind: 'event', sourceType: type, raw: r };
    // Only the id: Copilot's `parentId` chains every event to the one before it, so the session is linear, and a
    // tree-shaped session would leave out the entries this reader derives (they have no id of their own).
    const id = asString(r.id);
    if (id) base.id = id;
    const ts = toEpochMs(r.timestamp);
    if (ts !== undefined) base.timestamp = ts;
    if (!KNOWN_TYPES.has(type)) {
      base.kind = 'unknown';
      ctx.problem({
        kind: 'unknown-entry-type',
        message: `line ${ctx.line}: ${type ? `unknown Copilot CLI event type "${type}"` : 'record without a "type"'} (expected a Copilot CLI event such as user.message, assistant.message or tool.execution_complete); kept as is`,
      });
      return [base];
    }
    const d = r.data;
    if (!isRecord(d)) {
      base.kind = 'unknown';
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Copilot CLI "${type}" event has no "data" object; kept as is`,
      });
      return [base];
    }
    const agent = asString(r.agentId) ?? asString(d.parentToolCallId);
    if (agent !== undefined) base.sidechain = true;
    const conv = this.conversation(agent ?? '');

    switch (type) {
      case 'session.start':
        this.start(d, base);
        return this.endPhase([base]);
      case 'session.resume': {
        this.responsesSinceStart = 0;
        const cwd = isRecord(d.context) ? asString(d.context.cwd) : undefined;
        if (this.info.cwd === undefined && cwd) this.info.cwd = cwd;
        return this.endPhase([base]);
      }
      case 'session.model_change': {
        const model = asString(d.newModel);
        if (model && model !== this.model) {
          base.kind = 'model-change';
          base.model = { id: model };
        }
        if (model) this.model = model;
        return [base];
      }
      case 'session.title_changed':
        base.kind = 'session-info';
        if (typeof d.title === 'string') this.info.title = d.title;
        return [base];
      case 'session.binary_asset': {
        const assetId = asString(d.assetId);
        if (assetId && typeof d.data === 'string') this.assets.set(assetId, asset(d, d.data));
        return [base];
      }
      case 'session.compaction_start':
        this.compactionStart = ctx.nextIndex;
        return [base];
      case 'session.compaction_complete':
        return [this.compaction(d, base)];
      case 'session.shutdown':
        this.shutdown(d);
        return [base];
      case 'system.message': {
        const content = asString(d.content) ?? '';
        // Recorded again for a later run of the agent loop: the model gets the prompt once, not once per recording.
        if (content === this.systemPrompt) return [base];
        this.systemPrompt = content;
        return [message(base, { role: 'system', parts: [textPart(content)] })];
      }
      case 'user.message': {
        const text = asString(d.transformedContent) ?? asString(d.content) ?? '';
        const m: Message = { role: 'user', parts: [textPart(text), ...this.media(d.attachments, 'native')] };
        // Autopilot continuations, hidden skill injections (`skill-…`) and prompts from another agent (`agent-…`).
        const source = asString(d.source) ?? '';
        if (d.isAutopilotContinuation === true || /^(skill|agent)-/.test(source)) m.synthetic = true;
        return this.injected(conv, base, m);
      }
      case 'skill.invoked':
      case 'system.notification':
        // The skill's body is "injected into the conversation for the model" (the skill tool itself only answers
        // "Skill … loaded successfully. Follow the instructions in the skill context."); a notification's text is
        // `<system_notification>`-wrapped for the model, and the assistant acts on it (read_bash of the shell it names).
        return this.injected(conv, base, {
          role: 'user',
          parts: [textPart(asString(d.content) ?? '')],
          synthetic: true,
        });
      case 'assistant.message':
        return this.assistant(d, base, conv);
      case 'assistant.usage':
        this.usage(d, base);
        return [base];
      case 'tool.execution_complete':
        return this.toolResult(d, base, conv, ctx);
      default:
        return PHASE_ENDS.has(type) ? this.flush(conv, [base]) : [base];
    }
  }

  private conversation(agent: string): Conversation {
    let conv = this.conversations.get(agent);
    if (!conv) {
      conv = { open: new Map(), calls: new Set(), answered: new Set(), deferred: [] };
      this.conversations.set(agent, conv);
    }
    return conv;
  }

  private start(d: Record<string, unknown>, base: EntryDraft): void {
    base.kind = 'header';
    this.responsesSinceStart = 0;
    if (this.info.id !== undefined) return;
    const id = asString(d.sessionId);
    if (id) this.info.id = id;
    const cwd = isRecord(d.context) ? asString(d.context.cwd) : undefined;
    if (cwd) this.info.cwd = cwd;
    if (typeof d.version === 'number') this.info.version = d.version;
    const started = toEpochMs(d.startTime) ?? base.timestamp;
    if (started !== undefined) this.info.startedAt = started;
    this.copilotVersion = asString(d.copilotVersion);
    const model = asString(d.selectedModel);
    if (model) this.model = model;
  }

  /** A message Copilot puts in the conversation as a user message: at its place, or after the results still due. */
  private injected(conv: Conversation, base: EntryDraft, m: Message): EntryDraft[] {
    if (conv.open.size === 0) return [message(base, m)];
    const later: EntryDraft = { kind: 'event', sourceType: base.sourceType };
    if (base.sidechain) later.sidechain = true;
    if (base.timestamp !== undefined) later.timestamp = base.timestamp;
    conv.deferred.push(message(later, m));
    return [base];
  }

  /** The deferred messages after `drafts`: their calls were all answered, or the tool phase ended without them. */
  private flush(conv: Conversation, drafts: EntryDraft[]): EntryDraft[] {
    if (conv.deferred.length === 0) return drafts;
    const out = [...drafts, ...conv.deferred];
    conv.deferred = [];
    return out;
  }

  private endPhase(drafts: EntryDraft[]): EntryDraft[] {
    let out = drafts;
    for (const conv of this.conversations.values()) out = this.flush(conv, out);
    return out;
  }

  private assistant(d: Record<string, unknown>, base: EntryDraft, conv: Conversation): EntryDraft[] {
    const parts: Part[] = [];
    const reasoning = asString(d.reasoningText) ?? '';
    // Anthropic models' signed thinking (`reasoningOpaque`) or OpenAI models' encrypted reasoning: opaque, not text.
    const opaque = asString(d.reasoningOpaque) ?? asString(d.encryptedContent);
    if (reasoning !== '' || opaque) {
      const thinking: Part = { type: 'thinking', text: reasoning };
      if (opaque) thinking.signature = opaque;
      if (reasoning === '' && opaque) thinking.redacted = true;
      parts.push(thinking);
    }
    const text = asString(d.content) ?? '';
    if (text !== '') parts.push(textPart(text));
    // `apiCallId` is the provider's response id, shared by the messages one response was split into (`chunkIndex`);
    // `messageId` is one message's own, which is one response for older versions that record no `apiCallId`.
    const responseId = asString(d.apiCallId) ?? asString(d.messageId);
    if (responseId === undefined || responseId !== conv.responseId) conv.open = new Map();
    conv.responseId = responseId;
    for (const t of Array.isArray(d.toolRequests) ? d.toolRequests : []) {
      if (!isRecord(t)) continue;
      const call: Part = {
        type: 'tool-call',
        id: asString(t.toolCallId) ?? '',
        name: asString(t.name) ?? '',
        arguments: parseArguments(t.arguments),
      };
      conv.open.set(call.id, call.name);
      conv.calls.add(call.id);
      parts.push(call);
    }
    const m: Message = { role: 'assistant', parts };
    const model = asString(d.model) ?? this.model;
    if (model) m.model = model;
    if (responseId) m.responseId = responseId;
    if (!base.sidechain) {
      this.lastAssistant = m;
      this.responsesSinceStart++;
      if (this.pendingUsage && this.pendingUsage.apiCallId === responseId) m.usage = this.pendingUsage.usage;
      this.pendingUsage = undefined;
    }
    // Messages injected before this response that no result released go before it, not between it and its results.
    const drafts = [message(base, m)];
    if (conv.deferred.length === 0) return drafts;
    const out = [...conv.deferred, ...drafts];
    conv.deferred = [];
    return out;
  }

  /**
   * A tool's result. The model gets `result.content` ("concise tool result text sent to the LLM", possibly truncated)
   * and `binaryResultsForLlm`; `detailedContent` is the UI's (the diff of an edit where the model got "File … updated
   * with changes.", the whole skill file where it got "Skill … loaded successfully"), and `contents` is the tool's raw
   * output (365 KB of JSON where the model got "Output too large to read at once … Saved to: /tmp/…"). The corpus
   * agrees: the `postToolUse` hook's `textResultForLlm` equals `result.content` for all 67 results of a session. A
   * failed call has no result: the model gets the error message.
   */
  private toolResult(
    d: Record<string, unknown>,
    base: EntryDraft,
    conv: Conversation,
    ctx: DecodeContext,
  ): EntryDraft[] {
    const callId = asString(d.toolCallId) ?? '';
    const toolName = conv.open.get(callId);
    if (toolName === undefined) {
      // A command the person ran (`!cmd`): no call of the model's answers to it.
      if (d.isUserRequested === true) return [base];
      const why = conv.answered.has(callId)
        ? 'a second result for it'
        : conv.calls.has(callId)
          ? 'its call belongs to an earlier response than the latest'
          : 'no earlier assistant message made that call';
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: tool result for call "${callId}" where a result of the latest response's calls was expected (${why}); kept as an event, not as a message`,
      });
      return [base];
    }
    conv.open.delete(callId);
    conv.answered.add(callId);
    const result = isRecord(d.result) ? d.result : undefined;
    const error = isRecord(d.error) ? asString(d.error.message) : asString(d.error);
    const content: ResultContentPart[] =
      result && typeof result.content === 'string'
        ? [textPart(result.content), ...this.media(result.binaryResultsForLlm, 'all')]
        : resultContent(error ?? '');
    const part: Part = {
      type: 'tool-result',
      callId,
      toolName,
      content,
      isError: d.success === false || error !== undefined,
    };
    const drafts = [message(base, { role: 'tool', parts: [part] })];
    return conv.open.size === 0 ? this.flush(conv, drafts) : drafts;
  }

  /**
   * Images and documents sent to the model natively: inline (`data`), by reference to a `session.binary_asset`, or
   * omitted from the file for their size (their byte length kept). Of a user message's attachments only those
   * (`native`): the others (files, selections, GitHub references) reach the model as text in `transformedContent`.
   */
  private media(list: unknown, which: 'all' | 'native'): ResultContentPart[] {
    if (!Array.isArray(list)) return [];
    const out: ResultContentPart[] = [];
    for (const item of list) {
      if (!isRecord(item)) continue;
      const assetId = asString(item.assetId);
      if (which === 'native' && item.type !== 'blob' && assetId === undefined) continue;
      const stored = assetId ? this.assets.get(assetId) : undefined;
      const data = asString(item.data) ?? stored?.data;
      const mediaType = asString(item.mimeType) ?? stored?.mimeType;
      const size = typeof item.byteLength === 'number' ? item.byteLength : stored?.byteLength;
      const part: ResultContentPart = mediaType?.startsWith('image/') ? { type: 'image' } : { type: 'file' };
      if (mediaType) part.mediaType = mediaType;
      if (data !== undefined) part.data = data;
      if (size !== undefined) part.byteSize = size;
      else if (data !== undefined) part.byteSize = Math.floor((data.length * 3) / 4);
      const name = asString(item.displayName);
      if (part.type === 'file' && name) part.name = name;
      out.push(part);
    }
    return out;
  }

  /** `assistant.usage` (streamed by the SDK, not persisted by the CLI): one request's usage, tied by `apiCallId`. */
  private usage(d: Record<string, unknown>, base: EntryDraft): void {
    const usage = copilotUsage(d);
    if (!usage) return;
    base.usage = usage;
    const apiCallId = asString(d.apiCallId);
    if (!apiCallId) return;
    if (this.lastAssistant?.responseId === apiCallId) this.lastAssistant.usage = usage;
    else this.pendingUsage = { apiCallId, usage };
  }

  /**
   * `session.shutdown` sums usage per model over the requests since the process started. Only when that is one
   * request, and one response was recorded since, is it that response's usage; a sum would pass for one prompt's size.
   */
  private shutdown(d: Record<string, unknown>): void {
    const metrics = isRecord(d.modelMetrics) ? Object.values(d.modelMetrics).filter(isRecord) : [];
    const only = metrics.length === 1 ? metrics[0]! : undefined;
    if (!only || !isRecord(only.requests) || only.requests.count !== 1 || this.responsesSinceStart !== 1) return;
    const usage = isRecord(only.usage) ? copilotUsage(only.usage) : undefined;
    if (usage && this.lastAssistant && !this.lastAssistant.usage) this.lastAssistant.usage = usage;
  }

  /**
   * Copilot's compaction runs beside the agent loop: the summary replaces the history up to where it started
   * (`session.compaction_start`), and what the agent did meanwhile stays.
   */
  private compaction(d: Record<string, unknown>, base: EntryDraft): EntryDraft {
    const start = this.compactionStart;
    this.compactionStart = undefined;
    if (d.success !== true || typeof d.summaryContent !== 'string') return base;
    const marker: CompactionMarker = {
      number: ++this.compactions,
      summary: d.summaryContent,
      source: 'copilot-cli',
    };
    if (typeof d.preCompactionTokens === 'number') marker.tokensBefore = d.preCompactionTokens;
    if (typeof d.postCompactionTokens === 'number') marker.tokensAfter = d.postCompactionTokens;
    if (typeof d.trigger === 'string') marker.trigger = d.trigger;
    if (start !== undefined) marker.firstKeptEntry = start + 1;
    base.kind = 'compaction';
    base.compaction = marker;
    base.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
    if (base.timestamp !== undefined) base.message.timestamp = base.timestamp;
    return base;
  }

  finish(): { info: SessionInfo; extra?: Record<string, unknown> } {
    return this.copilotVersion
      ? { info: this.info, extra: { copilotVersion: this.copilotVersion } }
      : { info: this.info };
  }
}

function message(base: EntryDraft, m: Message): EntryDraft {
  base.kind = 'message';
  base.message = m;
  if (base.timestamp !== undefined) m.timestamp = base.timestamp;
  return base;
}

function asset(d: Record<string, unknown>, data: string): Asset {
  const a: Asset = { data };
  const mimeType = asString(d.mimeType);
  if (mimeType) a.mimeType = mimeType;
  if (typeof d.byteLength === 'number') a.byteLength = d.byteLength;
  return a;
}

/**
 * Copilot's usage in OpenAI's terms: `inputTokens` counts the whole prompt, cached tokens included (a one-request
 * session of the corpus reports 15,534 input tokens of which 14,848 were read from cache, for a ~15.9k-token context).
 * Without `inputTokens` the prompt's size is unknown, and no usage is better than one that says 0.
 */
function copilotUsage(u: Record<string, unknown>): Usage | undefined {
  if (typeof u.inputTokens !== 'number') return undefined;
  const cacheRead = num(u.cacheReadTokens);
  const cacheWrite = num(u.cacheWriteTokens);
  const usage: Usage = {
    input: Math.max(0, u.inputTokens - cacheRead - cacheWrite),
    output: num(u.outputTokens),
    cacheRead,
    cacheWrite,
  };
  if (typeof u.reasoningTokens === 'number') usage.reasoning = u.reasoningTokens;
  return usage;
}

const COPILOT_MARKERS = new Set([
  'session.start',
  'session.resume',
  'user.message',
  'assistant.message',
  'assistant.turn_start',
  'tool.execution_start',
]);

export const copilotCliFormat: TranscriptFormat = {
  id: 'copilot-cli',
  label: 'GitHub Copilot CLI events JSONL',
  container: 'jsonl',
  /** Dotted event types with a `data` object, and at least one event only Copilot CLI writes. */
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const dotted = share(
      records,
      (r) => typeof r.type === 'string' && /^[a-z_]+(?:\.[a-z_]+)+$/.test(r.type) && isRecord(r.data),
    );
    const marked = records.some((r) => typeof r.type === 'string' && COPILOT_MARKERS.has(r.type));
    return dotted > 0.8 && marked ? 0.95 : 0;
  },
  createDecoder: () => new CopilotCliDecoder(),
};
