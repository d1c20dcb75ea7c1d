/**
 * OpenHands evaluation output (`output.jsonl`): one JSON record a line per benchmark instance, each holding the run's
 * whole event `history`, its `metrics` (per-response `token_usages`), `instruction`, `metadata` and `test_result`.
 *
 * A session is one conversation: the file's first instance is read; the others are named in a problem.
 *
 * The messages are the ones OpenHands' ConversationMemory (openhands/memory/conversation_memory.py, 0.3x–0.6x) sends:
 * the `system` action as the system message (its tools go to `extra.request.tools`), `message` actions as user or
 * assistant text, each agent action made by a function call (`tool_call_metadata`) as the assistant message of its
 * model response — one message for all calls of one response, sent once every call has its observation, and not at all
 * otherwise — and each observation answering a call as that call's result, in the text OpenHands renders for it.
 * Observations that answer no call are sent as user text; recall, state changes, condensation bookkeeping and null
 * observations are not sent (kept as entries without a message).
 *
 * Older runs (2024) write `history` as [action, observation] pairs and parse actions out of the model's text (no
 * `tool_call_metadata`): an action its observation answers is read as a tool call (named by its `<execute_…>` tag, with
 * a stable synthesized id) and the observation as its result, as swe-agent.ts does, so that every result has its call.
 * Their system prompt and in-context example lived in the agent's code: the history does not record them.
 */
import { AbridgeError } from '../errors.js';
import type { EntryDraft, Message, Part, Problem, Role, SessionInfo, Usage } from '../model/types.js';
import { argumentsText, num, parseArguments, textPart, toEpochMs } from '../model/parts.js';
import {
  asString,
  isRecord,
  share,
  type DecodeContext,
  type DecoderOptions,
  type DetectInput,
  type EntryDecoder,
  type TranscriptFormat,
} from './format.js';

/** Actions ConversationMemory sends as the assistant's tool calls when they came from a function call. */
const TOOL_ACTIONS = new Set([
  'run',
  'run_ipython',
  'read',
  'write',
  'edit',
  'browse',
  'browse_interactive',
  'call_tool_mcp',
  'delegate',
  'think',
  'task_tracking',
]);
/** Actions that never reach the model: control of the run, recall of context, condensation bookkeeping. */
const SILENT_ACTIONS = new Set([
  'start',
  'null',
  'reject',
  'pause',
  'resume',
  'stop',
  'change_agent_state',
  'push',
  'send_pr',
  'recall',
  'condensation',
  'condensation_request',
  'loop_recovery',
]);
/** Observations whose content the model reads (as a call's result, or as user text when they answer no call). */
const SENT_OBSERVATIONS = new Set([
  'run',
  'run_ipython',
  'read',
  'write',
  'edit',
  'browse',
  'mcp',
  'delegate',
  'think',
  'task_tracking',
  'error',
  'user_rejected',
  'condense',
  'download',
  'chat',
  'message',
  'success',
]);
/** Recall results are sent only when prompt extensions are on; evaluations turn them off (see recallText). */
const SILENT_OBSERVATIONS = new Set(['null', 'agent_state_changed', 'loop_detection', 'recall']);

/** The tag older CodeAct agents parsed an action out of: the name its synthesized call gets. */
const TEXT_ACTION_TOOLS: Record<string, { name: string; argument: string }> = {
  run: { name: 'execute_bash', argument: 'command' },
  run_ipython: { name: 'execute_ipython', argument: 'code' },
  browse_interactive: { name: 'execute_browse', argument: 'browser_actions' },
};

interface Call {
  id: string;
  name: string;
  arguments: unknown;
}

/** One model response that made tool calls: what ConversationMemory keeps pending until every call is answered. */
interface Response {
  key: string;
  calls: Call[];
  /** Every call has an observation somewhere in the history: the message is sent. */
  complete: boolean;
}

/** An item of the history with where it sits, for problems: `history[3]`, or `history[3][1]` in a pair. */
interface Item {
  value: unknown;
  where: string;
}

class OpenHandsDecoder implements EntryDecoder {
  private info: SessionInfo = {};
  private extra: Record<string, unknown> = {};
  private readonly instances: { id: string; line: number }[] = [];
  /** The instance read: the one asked for, else the first. */
  private chosen: { id: string; line: number } | undefined;

  constructor(private readonly options: DecoderOptions = {}) {}

  decode(record: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const instance = { id: instanceId(record) ?? `line ${ctx.line ?? this.instances.length + 1}`, line: ctx.line ?? 0 };
    this.instances.push(instance);
    if (this.chosen || (this.options.instance !== undefined && instance.id !== this.options.instance)) return [];
    this.chosen = instance;
    const reader = new InstanceReader(record, instance.id, ctx);
    const drafts = reader.read();
    this.info = reader.info();
    this.extra = reader.extra();
    return drafts;
  }

  finish(): { info: SessionInfo; extra?: Record<string, unknown>; problems?: Problem[] } {
    const ids = this.instances.map((i) => i.id);
    const wanted = this.options.instance;
    if (wanted !== undefined && !this.chosen)
      throw new AbridgeError(
        'INVALID_INPUT',
        `${this.options.source ?? '<input>'}: no OpenHands instance "${wanted}" in this file; it holds ${ids.length ? ids.join(', ') : 'none'}`,
      );
    const out: { info: SessionInfo; extra?: Record<string, unknown>; problems?: Problem[] } = { info: this.info };
    if (this.instances.length > 1) {
      this.extra.instances = ids;
      const skipped = this.instances.find((i) => i !== this.chosen)!;
      out.problems = [
        {
          line: skipped.line,
          kind: 'more-sessions',
          message: `line ${skipped.line}: the file holds ${ids.length} OpenHands instances (${ids.join(', ')}); a session is one conversation: ${wanted === undefined ? 'the first, ' : ''}${this.chosen!.id}, was read and the other ${ids.length - 1} skipped (choose one with --instance <id>)`,
        },
      ];
    }
    if (Object.keys(this.extra).length > 0) out.extra = this.extra;
    return out;
  }
}

/** One instance's history into entries, in two passes: which calls get answered, then the messages. */
class InstanceReader {
  private readonly items: Item[] = [];
  private readonly responses = new Map<string, Response>();
  /** Call id → its response, for observations. */
  private readonly callResponse = new Map<string, Response>();
  /** Text actions (no tool_call_metadata) answered by an observation: item position → synthesized call. */
  private readonly textCalls = new Map<number, Call>();
  /** Observation item position → the synthesized call it answers. */
  private readonly textResults = new Map<number, Call>();
  private readonly usages = new Map<string, Record<string, unknown>>();
  /** Responses whose first action was seen: that action carries the message. */
  private readonly opened = new Set<string>();
  private readonly model: string | undefined;
  private readonly maxChars: number | undefined;
  private readonly promptExtensions: boolean;
  private tools: unknown[] | undefined;
  private openhandsVersion: string | undefined;

  constructor(
    private readonly record: Record<string, unknown>,
    private readonly id: string,
    private readonly ctx: DecodeContext,
  ) {
    const metadata = isRecord(record.metadata) ? record.metadata : {};
    const llm = isRecord(metadata.llm_config) ? metadata.llm_config : {};
    this.model = asString(llm.model) ?? asString(metadata.model_name);
    // ConversationMemory truncates the middle of an observation past the LLM config's max_message_chars.
    this.maxChars = typeof llm.max_message_chars === 'number' ? llm.max_message_chars : undefined;
    // Evaluations turn prompt extensions off (most run_infer.py scripts) and do not record it: only an explicit true counts.
    this.promptExtensions = isRecord(metadata.agent_config) && metadata.agent_config.enable_prompt_extensions === true;
    const metrics = isRecord(record.metrics) ? record.metrics : {};
    if (Array.isArray(metrics.token_usages))
      for (const u of metrics.token_usages) {
        const rid = isRecord(u) ? asString(u.response_id) : undefined;
        if (rid && !this.usages.has(rid)) this.usages.set(rid, u as Record<string, unknown>);
      }
  }

  read(): EntryDraft[] {
    if (!Array.isArray(this.record.history)) {
      this.problem('invalid-entry', `instance ${this.id} has no "history" array; kept as is`);
      return [{ kind: 'unknown', raw: this.record }];
    }
    this.record.history.forEach((h, i) => {
      // Older runs: [action, observation] pairs.
      if (Array.isArray(h) && h.length === 2 && h.every(isRecord)) {
        this.items.push({ value: h[0], where: `history[${i}][0]` }, { value: h[1], where: `history[${i}][1]` });
      } else this.items.push({ value: h, where: `history[${i}]` });
    });
    this.collectCalls();
    return this.messages();
  }

  info(): SessionInfo {
    const info: SessionInfo = { id: this.id };
    const metadata = isRecord(this.record.metadata) ? this.record.metadata : {};
    const first = this.items.find((it) => isRecord(it.value) && it.value.timestamp !== undefined)?.value;
    const started = timestamp(isRecord(first) ? first.timestamp : undefined) ?? timestamp(metadata.start_time);
    if (started !== undefined) info.startedAt = started;
    return info;
  }

  extra(): Record<string, unknown> {
    const extra: Record<string, unknown> = {};
    const metadata = isRecord(this.record.metadata) ? this.record.metadata : {};
    const agent = asString(metadata.agent_class);
    if (agent) extra.agentClass = agent;
    if (this.openhandsVersion) extra.openhandsVersion = this.openhandsVersion;
    if (typeof this.record.error === 'string') extra.error = this.record.error;
    // Where request formats keep their tool definitions, so that the budget and the replay count them.
    if (this.tools) extra.request = { tools: this.tools };
    return extra;
  }

  /** First pass: the calls each response made, and which of them an observation answers. */
  private collectCalls(): void {
    const answered = new Set<string>();
    /** Agent actions without tool_call_metadata, by `id:<event id>` (or `pos:<position>`). */
    const textActions = new Map<string, number>();
    this.items.forEach(({ value: e }, pos) => {
      if (!isRecord(e)) return;
      const meta = isRecord(e.tool_call_metadata) ? e.tool_call_metadata : undefined;
      if (typeof e.observation === 'string') {
        const callId = asString(meta?.tool_call_id);
        if (callId) answered.add(callId);
        return;
      }
      const action = asString(e.action);
      if (!action) return;
      if (meta && TOOL_ACTIONS.has(action)) {
        const call = callFrom(e, meta);
        const response = asRecord(meta.model_response);
        const key = asString(response?.id) ?? `call:${call.id}`;
        let r = this.responses.get(key);
        if (!r) {
          // Finish is sent as text, never as a call: a response that also finished has its other calls only.
          r = { key, calls: responseCalls(response).filter((c) => c.name !== 'finish'), complete: false };
          this.responses.set(key, r);
        }
        if (!r.calls.some((c) => c.id === call.id)) r.calls.push(call);
        for (const c of r.calls) this.callResponse.set(c.id, r);
      } else if (!meta && e.source === 'agent' && TOOL_ACTIONS.has(action)) {
        textActions.set(e.id === undefined || e.id === null ? `pos:${pos}` : `id:${String(e.id)}`, pos);
      }
    });
    for (const r of this.responses.values()) r.complete = r.calls.every((c) => answered.has(c.id));

    // Text actions: the observation paired with the action (older runs), or the one it caused.
    const positions = new Set(textActions.values());
    this.items.forEach(({ value: e, where }, pos) => {
      if (!isRecord(e) || typeof e.observation !== 'string' || e.observation === 'null' || e.tool_call_metadata) return;
      const at =
        where.endsWith('][1]') && positions.has(pos - 1)
          ? pos - 1
          : e.cause === undefined || e.cause === null
            ? undefined
            : textActions.get(`id:${String(e.cause)}`);
      if (at === undefined || this.textCalls.has(at)) return;
      const call = textActionCall(this.items[at]!.value as Record<string, unknown>, at);
      this.textCalls.set(at, call);
      this.textResults.set(pos, call);
    });
  }

  /**
   * Second pass. A response's message and its results are held until its last call is answered, as ConversationMemory
   * does: a message that comes in between (an error, a user's message) is sent before them.
   */
  private messages(): EntryDraft[] {
    const out: EntryDraft[] = [];
    let open: { remaining: Set<string>; held: EntryDraft[] } | undefined;
    const release = (keepMessages: boolean) => {
      if (!open) return;
      for (const d of open.held) {
        if (!keepMessages && d.message) {
          delete d.message;
          d.kind = 'event';
        }
        out.push(d);
      }
      open = undefined;
    };

    this.items.forEach((item, pos) => {
      const { draft, response, answers } = this.decodeItem(item, pos);
      if (response) {
        // A new response while another is still waiting for results: OpenHands would never send the earlier one.
        release(false);
        if (response.complete) open = { remaining: new Set(response.calls.map((c) => c.id)), held: [draft] };
        else out.push(draft);
        return;
      }
      if (answers !== undefined) {
        if (open?.remaining.has(answers)) {
          open.held.push(draft);
          open.remaining.delete(answers);
          if (open.remaining.size === 0) release(true);
          return;
        }
        // Its call's message is not the one waiting for results (the result came first, or twice): never an orphan.
        delete draft.message;
        draft.kind = 'event';
        this.problem(
          'invalid-entry',
          `instance ${this.id}: ${item.where} answers tool call ${answers} out of turn (no message waiting for it holds that call); kept without a message`,
        );
      }
      if (open && !draft.message) open.held.push(draft);
      else out.push(draft);
    });
    // Results that never came: the response stays unsent.
    release(false);
    return out;
  }

  /** One history item: its entry, the response whose message it opens, or the call id it answers. */
  private decodeItem(item: Item, pos: number): { draft: EntryDraft; response?: Response; answers?: string } {
    const e = item.value;
    if (!isRecord(e)) {
      this.problem('not-an-object', `instance ${this.id}: ${item.where} is not an object; kept as is`);
      return { draft: { kind: 'unknown', raw: e } };
    }
    const draft: EntryDraft = { kind: 'event', raw: e };
    if (e.id !== undefined && e.id !== null) draft.id = String(e.id);
    const ts = timestamp(e.timestamp);
    if (ts !== undefined) draft.timestamp = ts;
    const action = asString(e.action);
    const observation = asString(e.observation);
    if (action !== undefined) {
      draft.sourceType = `action/${action}`;
      return this.action(e, action, draft, item, pos);
    }
    if (observation !== undefined) {
      draft.sourceType = `observation/${observation}`;
      return this.observation(e, observation, draft, item, pos);
    }
    draft.kind = 'unknown';
    this.problem(
      'invalid-entry',
      `instance ${this.id}: ${item.where} is neither an action nor an observation; kept as is`,
    );
    return { draft };
  }

  private action(
    e: Record<string, unknown>,
    action: string,
    draft: EntryDraft,
    item: Item,
    pos: number,
  ): { draft: EntryDraft; response?: Response } {
    const args = isRecord(e.args) ? e.args : {};
    const meta = isRecord(e.tool_call_metadata) ? e.tool_call_metadata : undefined;
    const fromUser = e.source === 'user';
    if (action === 'system') {
      if (Array.isArray(args.tools)) this.tools = args.tools;
      const version = asString(args.openhands_version);
      if (version) this.openhandsVersion = version;
      return { draft: withMessage(draft, { role: 'system', parts: [textPart(asString(args.content) ?? '')] }) };
    }
    if (action === 'message') {
      const text = asString(args.content) ?? asString(e.message) ?? '';
      return {
        draft: withMessage(
          draft,
          fromUser ? { role: 'user', parts: [textPart(text)] } : this.assistant([textPart(text)], e),
        ),
      };
    }
    if (action === 'finish') {
      // Sent as the assistant's text (its thought, and the response's text when they differ), never as a call.
      const rid = asString(asRecord(meta?.model_response)?.id);
      if (rid !== undefined && this.responses.has(rid)) return { draft };
      const thought = asString(args.thought) ?? '';
      const content = responseText(meta) ?? '';
      const text =
        thought === '' ? content : content !== '' && content !== thought ? `${thought}\n${content}` : thought;
      if (text === '') return { draft };
      const message = fromUser
        ? { role: 'user' as Role, parts: [textPart(text)] }
        : this.assistant([textPart(text)], e);
      return { draft: withMessage(draft, message) };
    }
    if (TOOL_ACTIONS.has(action)) {
      if (meta && !fromUser) {
        const response = this.callResponse.get(asString(meta.tool_call_id) ?? '');
        if (!response) return { draft };
        // The response's first action carries its message; the others belong to it.
        if (this.opened.has(response.key)) return { draft };
        this.opened.add(response.key);
        if (!response.complete) return { draft };
        // The response's text when OpenHands kept the response; the action's thought (the same text) otherwise.
        const text = isRecord(meta.model_response)
          ? (responseText(meta) ?? '')
          : action === 'think'
            ? ''
            : (asString(args.thought) ?? '');
        const parts: Part[] = text.trim() === '' ? [] : [textPart(text)];
        for (const c of response.calls)
          parts.push({ type: 'tool-call', id: c.id, name: c.name, arguments: c.arguments });
        return { draft: withMessage(draft, this.assistant(parts, e)), response };
      }
      if (fromUser) {
        if (action !== 'run') return { draft };
        const text = `User executed the command:\n${asString(args.command) ?? ''}`;
        return { draft: withMessage(draft, { role: 'user', parts: [textPart(text)] }) };
      }
      const call = this.textCalls.get(pos);
      const thought = asString(args.thought) ?? '';
      const parts: Part[] = thought.trim() === '' ? [] : [textPart(thought)];
      if (!call) {
        // Nothing answered it (the run ended): the model's text, not a call left open.
        parts.push(textPart(argumentsText(textActionCall(e, pos).arguments)));
        return { draft: withMessage(draft, this.assistant(parts, e)) };
      }
      parts.push({ type: 'tool-call', id: call.id, name: call.name, arguments: call.arguments });
      return {
        draft: withMessage(draft, this.assistant(parts, e)),
        response: { key: call.id, calls: [call], complete: true },
      };
    }
    if (SILENT_ACTIONS.has(action)) return { draft };
    draft.kind = 'unknown';
    this.problem('unknown-entry-type', `instance ${this.id}: ${item.where} has unknown action "${action}"; kept as is`);
    return { draft };
  }

  private observation(
    e: Record<string, unknown>,
    observation: string,
    draft: EntryDraft,
    item: Item,
    pos: number,
  ): { draft: EntryDraft; answers?: string } {
    const meta = isRecord(e.tool_call_metadata) ? e.tool_call_metadata : undefined;
    if (SILENT_OBSERVATIONS.has(observation)) {
      if (observation === 'recall' && this.promptExtensions) {
        const text = recallText(e);
        if (text !== '')
          return { draft: withMessage(draft, { role: 'user', parts: [textPart(text)], synthetic: true }) };
      }
      return { draft };
    }
    if (!SENT_OBSERVATIONS.has(observation)) {
      draft.kind = 'unknown';
      this.problem(
        'unknown-entry-type',
        `instance ${this.id}: ${item.where} has unknown observation "${observation}"; kept as is`,
      );
      return { draft };
    }
    const text = observationText(e, observation, this.maxChars);
    const callId = asString(meta?.tool_call_id);
    if (meta && callId !== undefined) {
      const response = this.callResponse.get(callId);
      if (!response) {
        this.problem(
          'invalid-entry',
          `instance ${this.id}: ${item.where} answers tool call ${callId}, which no action of the history made; kept without a message`,
        );
        return { draft };
      }
      // A result of a response OpenHands never sent (one of its calls went unanswered) is not sent either.
      if (!response.complete) return { draft };
      const name = response.calls.find((c) => c.id === callId)?.name ?? asString(meta.function_name);
      return { draft: withMessage(draft, resultMessage(callId, name, text, isError(e, observation))), answers: callId };
    }
    const call = this.textResults.get(pos);
    if (call) {
      const content = asString(e.content) ?? '';
      return {
        draft: withMessage(draft, resultMessage(call.id, call.name, content, isError(e, observation))),
        answers: call.id,
      };
    }
    // Answers no call: the model reads it as user text.
    const shown = observation === 'run' ? `\nObserved result of command executed by user:\n${text}` : text;
    return { draft: withMessage(draft, { role: 'user', parts: [textPart(shown)], synthetic: true }) };
  }

  private assistant(parts: Part[], e: Record<string, unknown>): Message {
    const m: Message = { role: 'assistant', parts };
    const meta = isRecord(e.tool_call_metadata) ? e.tool_call_metadata : undefined;
    const response = asRecord(meta?.model_response);
    const rid = asString(response?.id);
    const model = asString(response?.model) ?? this.model;
    if (model) m.model = model;
    if (rid) {
      m.responseId = rid;
      const usage = decodeUsage(this.usages.get(rid) ?? asRecord(response?.usage));
      if (usage) m.usage = usage;
      const choice = firstChoice(response);
      const stop = asString(choice?.finish_reason);
      if (stop) m.stopReason = stop;
    }
    const ts = timestamp(e.timestamp);
    if (ts !== undefined) m.timestamp = ts;
    return m;
  }

  private problem(kind: 'not-an-object' | 'invalid-entry' | 'unknown-entry-type', message: string): void {
    this.ctx.problem({ kind, message: `line ${this.ctx.line}: ${message}` });
  }
}

function withMessage(draft: EntryDraft, message: Message): EntryDraft {
  draft.kind = 'message';
  if (draft.timestamp !== undefined && message.timestamp === undefined) message.timestamp = draft.timestamp;
  draft.message = message;
  return draft;
}

function resultMessage(callId: string, name: string | undefined, text: string, error: boolean): Message {
  const part: Part = { type: 'tool-result', callId, content: [textPart(text)], isError: error };
  if (name !== undefined) part.toolName = name;
  return { role: 'tool', parts: [part] };
}

function instanceId(r: Record<string, unknown>): string | undefined {
  const v = r.instance_id ?? r.id ?? (isRecord(r.instance) ? (r.instance.instance_id ?? r.instance.id) : undefined);
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return isRecord(v) ? v : undefined;
}

function firstChoice(response: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  return Array.isArray(response?.choices) ? asRecord(response.choices[0]) : undefined;
}

/** The text of the model response behind a function-call action. */
function responseText(meta: Record<string, unknown> | undefined): string | undefined {
  const message = asRecord(firstChoice(asRecord(meta?.model_response))?.message);
  return asString(message?.content);
}

/** Every tool call of a model response, with its arguments as the model wrote them. */
function responseCalls(response: Record<string, unknown> | undefined): Call[] {
  const message = asRecord(firstChoice(response)?.message);
  if (!Array.isArray(message?.tool_calls)) return [];
  return message.tool_calls.filter(isRecord).flatMap((c) => {
    const id = asString(c.id);
    const fn = asRecord(c.function) ?? {};
    return id ? [{ id, name: asString(fn.name) ?? '', arguments: parseArguments(fn.arguments) }] : [];
  });
}

/** The call of one action, from its model response when it is there, else from the action's own arguments. */
function callFrom(e: Record<string, unknown>, meta: Record<string, unknown>): Call {
  const id = asString(meta.tool_call_id) ?? '';
  const fromResponse = responseCalls(asRecord(meta.model_response)).find((c) => c.id === id);
  if (fromResponse) return fromResponse;
  // The thought is the text around the call — but for think, the call's one argument.
  const { thought, ...args } = isRecord(e.args) ? e.args : {};
  const name = asString(meta.function_name) ?? asString(e.action) ?? '';
  return { id, name, arguments: e.action === 'think' ? { thought } : args };
}

/** A call for an action parsed from the model's text, with an id stable across reads. */
function textActionCall(e: Record<string, unknown>, pos: number): Call {
  const action = asString(e.action) ?? '';
  const args = isRecord(e.args) ? e.args : {};
  const tool = TEXT_ACTION_TOOLS[action];
  const id = `openhands-${e.id ?? pos}`;
  if (tool) return { id, name: tool.name, arguments: { [tool.argument]: args[tool.argument] ?? '' } };
  const { thought: _thought, ...rest } = args;
  return { id, name: action, arguments: rest };
}

/** What ConversationMemory renders of an observation (serialization field `content` plus what the agent adds). */
function observationText(e: Record<string, unknown>, observation: string, maxChars: number | undefined): string {
  const content = asString(e.content) ?? '';
  const extras = isRecord(e.extras) ? e.extras : {};
  switch (observation) {
    case 'read':
      // openhands-aci already cut it.
      return content;
    case 'run':
      return truncate(commandOutput(content, extras), maxChars);
    case 'run_ipython':
      return truncate(
        content
          .split('\n')
          .map((l) =>
            l.includes('![image](data:image/png;base64,')
              ? '![image](data:image/png;base64, ...) already displayed to user'
              : l,
          )
          .join('\n'),
        maxChars,
      );
    case 'delegate': {
      const outputs = isRecord(extras.outputs) ? extras.outputs : {};
      return truncate(asString(outputs.content) ?? content, maxChars);
    }
    case 'error':
      return `${truncate(content, maxChars)}\n[Error occurred in processing last action]`;
    case 'user_rejected':
      return `OBSERVATION:\n${truncate(content, maxChars)}\n[Last action has been rejected by the user]`;
    default:
      return truncate(content, maxChars);
  }
}

/** CmdOutputObservation.to_agent_observation: the output between the shell's prefix and suffix, then its state. */
function commandOutput(content: string, extras: Record<string, unknown>): string {
  const md = isRecord(extras.metadata) ? extras.metadata : undefined;
  if (!md) return content;
  let out = `${asString(md.prefix) ?? ''}${content}${asString(md.suffix) ?? ''}`;
  const cwd = asString(md.working_dir);
  if (cwd) out += `\n[Current working directory: ${cwd}]`;
  const python = asString(md.py_interpreter_path);
  if (python) out += `\n[Python interpreter: ${python}]`;
  const exit = md.exit_code;
  if (typeof exit === 'number' && exit !== -1) out += `\n[Command finished with exit code ${exit}]`;
  return out;
}

/** OpenHands' truncate_content: the middle cut out past `max` characters. */
function truncate(text: string, max: number | undefined): string {
  if (max === undefined || max < 0 || text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[... Observation truncated due to length ...]\n${text.slice(text.length - half)}`;
}

/** An error observation, or a command that exited non-zero (-1 is OpenHands' "no exit code": a command still running). */
function isError(e: Record<string, unknown>, observation: string): boolean {
  if (observation === 'error') return true;
  const extras = isRecord(e.extras) ? e.extras : {};
  const md = isRecord(extras.metadata) ? extras.metadata : {};
  const exit = md.exit_code ?? extras.exit_code;
  return observation === 'run' && typeof exit === 'number' && exit !== 0 && exit !== -1;
}

/**
 * What a recall observation adds when prompt extensions are on: the repository's instructions, extra instructions and
 * the triggered microagents' knowledge. OpenHands wraps them in its own templates (additional_info.j2,
 * microagent_info.j2), which this does not reproduce: the text is theirs, the framing is not.
 */
function recallText(e: Record<string, unknown>): string {
  const x = isRecord(e.extras) ? e.extras : {};
  const texts = [asString(x.repo_instructions), asString(x.additional_agent_instructions)];
  if (Array.isArray(x.microagent_knowledge))
    for (const k of x.microagent_knowledge) if (isRecord(k)) texts.push(asString(k.content));
  return texts.filter((t): t is string => t !== undefined && t.trim() !== '').join('\n\n');
}

/**
 * A token_usages entry (or a model response's own usage) into a normalized Usage. OpenHands records litellm's
 * `prompt_tokens`, which counts the cached prompt in (OpenAI semantics; for Anthropic litellm adds cache reads — and in
 * most versions cache writes — to `input_tokens`), with the cache read and write beside it: the full-rate input is the
 * rest.
 */
function decodeUsage(u: Record<string, unknown> | undefined): Usage | undefined {
  if (!u || typeof u.prompt_tokens !== 'number') return undefined;
  const details = isRecord(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const cacheRead = num(u.cache_read_tokens ?? details.cached_tokens);
  const cacheWrite = num(u.cache_write_tokens ?? u.cache_creation_input_tokens);
  return {
    input: Math.max(0, u.prompt_tokens - cacheRead - cacheWrite),
    output: num(u.completion_tokens),
    cacheRead,
    cacheWrite,
  };
}

/** OpenHands writes local times without a zone (datetime.now().isoformat()): read as UTC, the same on every machine. */
function timestamp(v: unknown): number | undefined {
  if (typeof v === 'string' && /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(v))
    return toEpochMs(`${v.replace(' ', 'T')}Z`);
  return toEpochMs(v);
}

// ---------------------------------------------------------------------------------------------------------------------
// Detection

/** JSONL records, or the record of a source that is one JSON document (a single-instance file). */
function recordsOf(input: DetectInput): Record<string, unknown>[] {
  if (input.records && input.records.length > 0) return input.records;
  if (Array.isArray(input.document)) return input.document.filter(isRecord);
  if (isRecord(input.document)) return [input.document];
  return [];
}

function detect(input: DetectInput): number {
  const records = recordsOf(input);
  if (records.length > 0) {
    const matched = share(
      records,
      (r) => ('instance_id' in r || 'instance' in r) && ('history' in r || 'metrics' in r || 'test_result' in r),
    );
    return matched > 0.5 ? 0.96 : 0;
  }
  // A first record longer than the sampled head: judge by its first keys.
  const head = input.head.trimStart();
  if (
    head.startsWith('{') &&
    /^\{\s*"(?:instance_id|id|instance)"\s*:/.test(head) &&
    /"(?:instance_id|instance)"\s*:/.test(head) &&
    /"(?:test_result|history|metrics|instruction)"\s*:/.test(head)
  ) {
    return 0.9;
  }
  return 0;
}

export const openHandsFormat: TranscriptFormat = {
  id: 'openhands',
  label: 'OpenHands evaluation output (output.jsonl)',
  container: 'jsonl',
  detect,
  createDecoder: (options) => new OpenHandsDecoder(options),
  severalSessions: true,
};
