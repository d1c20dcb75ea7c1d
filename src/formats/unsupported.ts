/**
 * Transcript formats abridge recognizes but has no reader for yet: detecting them lets `readSession` say what the file
 * is instead of calling it unrecognized. Each detector answers 0.9 or more when it matches and 0 otherwise.
 */
import { share, type UnsupportedFormat } from './format.js';

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

export const unsupportedFormats: UnsupportedFormat[] = [aider, deepSeek];
