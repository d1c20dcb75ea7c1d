/**
 * SWE-agent trajectories (`.traj`): one JSON object whose `history` is the conversation the model saw (system prompt,
 * task, thought/action turns and observations), beside the per-step `trajectory`, run `info` and `replay_config`.
 *
 * Function-calling runs give assistant turns OpenAI-style `tool_calls` answered by `tool` messages naming
 * `tool_call_ids`. Older runs parse the command out of the model's text (`action`) and answer with a plain `user`
 * observation: that pair is read as a tool call (named `bash`, with a stable synthesized id) and its result, so that
 * every result has its call. There is no per-message usage, only the run's aggregate `info.model_stats`.
 */
import { AbridgeError } from '../errors.js';
import { SessionBuilder } from '../model/session.js';
import type { EntryDraft, Message, Part, Session, SessionInfo } from '../model/types.js';
import { imageFrom, parseArguments, resultContent, textPart } from '../model/parts.js';
import { asString, isRecord, type TranscriptFormat } from './format.js';

/** The tool name given to an action parsed from the model's text. */
const ACTION_TOOL = 'bash';

function readTrajectory(document: unknown, source: string): Session {
  if (!isRecord(document) || !Array.isArray(document.history)) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: not a SWE-agent trajectory: expected a JSON object with a "history" array`,
    );
  }
  const builder = new SessionBuilder('swe-agent');
  const history: unknown[] = document.history;
  const replay = replayConfig(document.replay_config);
  const model = asString(path(replay, 'agent', 'model', 'name'));

  builder.info = sessionInfo(document, replay);
  const extra: Record<string, unknown> = {};
  const info = isRecord(document.info) ? document.info : undefined;
  if (info && isRecord(info.model_stats)) extra.modelStats = info.model_stats;
  if (info && typeof info.exit_status === 'string') extra.exitStatus = info.exit_status;
  if (typeof document.environment === 'string') extra.environment = document.environment;
  if (Object.keys(extra).length > 0) builder.extra = extra;

  const toolNames = new Map<string, string>();
  /** History index of a user observation → the id of the action call it answers. */
  const observationFor = new Map<number, string>();
  /** Calls of the latest assistant turn not yet answered, for tool messages that name no ids. */
  let unanswered: string[] = [];

  history.forEach((item, i) => {
    const draft: EntryDraft = { kind: 'unknown', raw: item };
    if (!isRecord(item)) {
      builder.problems.push({
        line: i + 1,
        kind: 'not-an-object',
        message: `${source}: history[${i}] is not an object; kept as is`,
      });
      builder.add(draft);
      return;
    }
    const role = asString(item.role) ?? '';
    draft.sourceType = asString(item.message_type) ?? role;
    let message: Message | undefined;
    switch (role) {
      case 'system':
        message = { role: 'system', parts: contentParts(item.content) };
        break;
      case 'user': {
        const callId = observationFor.get(i);
        if (callId !== undefined) {
          message = {
            role: 'tool',
            parts: [
              {
                type: 'tool-result',
                callId,
                toolName: toolNames.get(callId),
                content: resultContent(item.content),
                isError: false,
              },
            ],
          };
          unanswered = unanswered.filter((id) => id !== callId);
        } else {
          message = { role: 'user', parts: contentParts(item.content) };
          if (item.is_demo === true) message.synthetic = true;
        }
        break;
      }
      case 'assistant': {
        const parts = contentParts(item.content);
        const calls = Array.isArray(item.tool_calls) ? item.tool_calls.filter(isRecord) : [];
        unanswered = [];
        if (calls.length > 0) {
          calls.forEach((call, k) => {
            const fn = isRecord(call.function) ? call.function : {};
            const id = asString(call.id) ?? `swe-${i}-${k}`;
            const name = asString(fn.name) ?? asString(call.name) ?? '';
            toolNames.set(id, name);
            unanswered.push(id);
            parts.push({ type: 'tool-call', id, name, arguments: parseArguments(fn.arguments ?? call.arguments) });
          });
        } else {
          const action = asString(item.action);
          const next = history[i + 1];
          // Only when an observation answers it: an action left unanswered (the last `submit`) stays text.
          if (action && action.trim() !== '' && isRecord(next) && next.role === 'user' && next.is_demo !== true) {
            const id = `swe-${i}`;
            toolNames.set(id, ACTION_TOOL);
            unanswered.push(id);
            observationFor.set(i + 1, id);
            parts.push({ type: 'tool-call', id, name: ACTION_TOOL, arguments: { command: action } });
          }
        }
        message = { role: 'assistant', parts };
        if (model) message.model = model;
        break;
      }
      case 'tool': {
        const named = Array.isArray(item.tool_call_ids)
          ? item.tool_call_ids.filter((x): x is string => typeof x === 'string')
          : [];
        const ids = named.length > 0 ? named : unanswered.slice(0, 1);
        const content = resultContent(item.content);
        const parts: Part[] = (ids.length > 0 ? ids : ['']).map((callId, k) => ({
          type: 'tool-result',
          callId,
          toolName: toolNames.get(callId),
          // One observation answers the calls together: its text is given once, with the first.
          content: k === 0 ? content : [],
          isError: false,
        }));
        unanswered = unanswered.filter((id) => !ids.includes(id));
        message = { role: 'tool', parts };
        break;
      }
      default:
        builder.problems.push({
          line: i + 1,
          kind: 'unknown-entry-type',
          message: `${source}: history[${i}] has unknown role "${role}"; kept as is`,
        });
        builder.add(draft);
        return;
    }
    for (const part of message.parts)
      if (part.type === 'tool-result' && part.toolName === undefined) delete part.toolName;
    draft.kind = 'message';
    draft.message = message;
    builder.add(draft);
  });
  return builder.build();
}

function sessionInfo(document: Record<string, unknown>, replay: Record<string, unknown> | undefined): SessionInfo {
  const info: SessionInfo = {};
  const runInfo = isRecord(document.info) ? document.info : {};
  const id =
    asString(path(replay, 'problem_statement', 'id')) ??
    asString(runInfo.instance_id) ??
    asString(document.instance_id) ??
    asString(path(document.environment, 'instance_id')) ??
    asString(path(document.environment, 'name'));
  if (id) info.id = id;
  return info;
}

/** `replay_config` is an object in recent trajectories and JSON text in some older ones. */
function replayConfig(v: unknown): Record<string, unknown> | undefined {
  if (isRecord(v)) return v;
  if (typeof v === 'string') {
    try {
      const parsed: unknown = JSON.parse(v);
      return isRecord(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function path(v: unknown, ...keys: string[]): unknown {
  let cur = v;
  for (const k of keys) {
    if (!isRecord(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function contentParts(content: unknown): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [textPart(content)];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const c of content) {
    if (typeof c === 'string') parts.push(textPart(c));
    else if (!isRecord(c)) continue;
    else if (typeof c.text === 'string') parts.push(textPart(c.text));
    else if (c.type === 'image_url' || c.type === 'image') parts.push(imageFrom(c));
    else parts.push(textPart(JSON.stringify(c)));
  }
  return parts;
}

export const sweAgentFormat: TranscriptFormat = {
  id: 'swe-agent',
  label: 'SWE-agent trajectory (.traj)',
  container: 'json',
  detect({ document }) {
    if (!isRecord(document) || !Array.isArray(document.history)) return 0;
    if ('trajectory' in document || 'info' in document) return 0.95;
    return 0;
  },
  readDocument: readTrajectory,
};
