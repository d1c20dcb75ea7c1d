/**
 * Transcript formats abridge recognizes but has no reader for yet: detecting them lets `readSession` say what the file
 * is instead of calling it unrecognized. Each detector answers 0.9 or more when it matches and 0 otherwise.
 */
import { isRecord, share, type DetectInput, type UnsupportedFormat } from './format.js';

/** JSONL records, or the records of a source that is one JSON document (an object or an array of objects). */
function recordsOf(input: DetectInput): Record<string, unknown>[] {
  if (input.records && input.records.length > 0) return input.records;
  if (Array.isArray(input.document)) return input.document.filter(isRecord);
  if (isRecord(input.document)) return [input.document];
  return [];
}

/** OpenHands evaluation `output.jsonl`: one record per benchmark instance, each with its whole event history. */
const openHands: UnsupportedFormat = {
  name: 'OpenHands evaluation output',
  detect(input) {
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
  },
};

const COPILOT_MARKERS = new Set([
  'session.start',
  'session.resume',
  'user.message',
  'assistant.message',
  'assistant.turn_start',
  'tool.execution_start',
]);

/** GitHub Copilot CLI `session-state/<id>/events.jsonl`: dotted event types with a `data` object. */
const copilotCli: UnsupportedFormat = {
  name: 'GitHub Copilot CLI events',
  detect(input) {
    const records = input.records;
    if (!records || records.length === 0) return 0;
    const dotted = share(
      records,
      (r) => typeof r.type === 'string' && /^[a-z_]+(?:\.[a-z_]+)+$/.test(r.type) && isRecord(r.data),
    );
    const marked = records.some((r) => typeof r.type === 'string' && COPILOT_MARKERS.has(r.type));
    return dotted > 0.8 && marked ? 0.95 : 0;
  },
};

/** Aider `.aider.chat.history.md`: markdown, each run opened by a `# aider chat started at <date>` heading. */
const aider: UnsupportedFormat = {
  name: 'Aider chat history',
  detect({ head }) {
    if (/(?:^|\n)# aider chat started at \d{4}-\d{2}-\d{2}/.test(head)) return 0.95;
    if (/(?:^|\n)# aider chat started at /.test(head)) return 0.9;
    return 0;
  },
};

/**
 * DeepSeek harness session trace: a `{type: 'session', version, createdAt, delegationDepth…}` header, then events
 * with `seq`/`time` and slash types (`turn/start`, `user/message`, `assistant/chunk`…). The header looks like pi's at
 * a glance (pi starts with `{type: 'session'}` too) but has no ISO `timestamp` and the events are nothing like pi's.
 */
const deepSeek: UnsupportedFormat = {
  name: 'DeepSeek harness trace',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    const [first, ...rest] = records;
    const header =
      first!.type === 'session' &&
      ('createdAt' in first! || 'delegationDepth' in first!) &&
      typeof first!.timestamp !== 'string';
    if (!header) return 0;
    if (rest.length === 0) return 'delegationDepth' in first! ? 0.9 : 0;
    const events = share(
      rest,
      (r) =>
        typeof r.type === 'string' && r.type.includes('/') && typeof r.seq === 'number' && typeof r.time === 'number',
    );
    return events > 0.8 ? 0.95 : 0;
  },
};

export const unsupportedFormats: UnsupportedFormat[] = [openHands, copilotCli, aider, deepSeek];
