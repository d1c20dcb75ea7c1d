/**
 * Comparing what the Claude Code CLI sent on `--resume` with abridge's view (both as Anthropic wire messages), the
 * CLI's own additions taken off (see src/cli/claude-code-resume.test.ts for the list).
 */

/** The prompt the resume tests send (the last user turn the CLI adds). */
export const PROMPT = 'continue';
export const NO_RESPONSE = 'No response requested.';

export type Block = Record<string, unknown>;
export interface WireMessage {
  role: string;
  content: Block[];
}

export interface Comparison {
  equal: boolean;
  differences: string[];
  /** How often each normalization applied. */
  normalized: { reminders: number; noResponse: number; seams: number; renamed: number };
  /** The resumed conversation as sent, without the CLI's own additions. */
  resumed: WireMessage[];
}

function blocksOf(content: unknown): Block[] {
  return typeof content === 'string'
    ? [{ type: 'text', text: content }]
    : Array.isArray(content)
      ? (content as Block[])
      : [];
}

/** A block without the fields the CLI adds to every request (cache breakpoints, the tool caller). */
function bare(b: Block): Block {
  const { cache_control: _c, caller: _k, ...rest } = b;
  if (rest.type === 'tool_result' && Array.isArray(rest.content)) rest.content = (rest.content as Block[]).map(bare);
  return rest;
}

function wire(messages: readonly unknown[]): WireMessage[] {
  return messages.map((m) => {
    const r = m as { role: string; content: unknown };
    return { role: r.role, content: blocksOf(r.content).map(bare) };
  });
}

/** JSON with sorted keys: the order of an object's keys means nothing to the API. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

const isReminder = (b: Block) =>
  b.type === 'text' &&
  typeof b.text === 'string' &&
  b.text.startsWith('<system-reminder>') &&
  b.text.trimEnd().endsWith('</system-reminder>');
const isNoResponse = (m: WireMessage | undefined) =>
  m?.role === 'assistant' &&
  m.content.length === 1 &&
  m.content[0]!.type === 'text' &&
  m.content[0]!.text === NO_RESPONSE;

/** The resumed conversation the CLI sent, compared with abridge's view (both as Anthropic wire messages). */
export function compareResumed(sentMessages: readonly unknown[], viewMessages: readonly unknown[]): Comparison {
  const sent = wire(sentMessages);
  const view = wire(viewMessages);
  const normalized = { reminders: 0, noResponse: 0, seams: 0, renamed: 0 };
  const differences: string[] = [];
  let carried: WireMessage | undefined;
  // Its new turn: reminders and the prompt at the end of the last message (after whatever the conversation ended with).
  const turn = sent[sent.length - 1];
  if (!turn || turn.role !== 'user' || !turn.content.some((b) => b.type === 'text' && b.text === PROMPT))
    differences.push('the last message sent does not carry the prompt');
  else {
    const own = turn.content.filter((b) => !isReminder(b) && !(b.type === 'text' && b.text === PROMPT));
    normalized.reminders = turn.content.length - own.length - 1;
    // What the conversation ended with, joined to the new turn: the prompt follows its last block at a seam.
    if (own.length > 0) {
      turn.content = own;
      carried = turn;
    } else sent.pop();
  }
  // "No response requested.": an assistant message the CLI puts after an interrupted turn; the user messages around it
  // are one in abridge's view.
  for (let i = 0; i < sent.length; i++) {
    if (!isNoResponse(sent[i]) || isNoResponse(view[i])) continue;
    sent.splice(i, 1);
    normalized.noResponse++;
    const before = sent[i - 1];
    const after = sent[i];
    if (before?.role === 'user' && after?.role === 'user') {
      before.content.push(...after.content);
      if (after === carried) carried = before;
      sent.splice(i, 1);
    }
    i--;
  }
  if (sent.length !== view.length) differences.push(`${sent.length} messages sent, ${view.length} in abridge's view`);
  for (let i = 0; i < Math.min(sent.length, view.length) && differences.length < 6; i++) {
    const s = sent[i]!;
    const v = view[i]!;
    if (s.role !== v.role) {
      differences.push(`message ${i}: role ${s.role}, view ${v.role}`);
      continue;
    }
    if (s.content.length !== v.content.length) {
      differences.push(
        `message ${i}: ${s.content.length} blocks sent [${s.content.map((b) => b.type).join(',')}], view ${v.content.length} [${v.content.map((b) => b.type).join(',')}]`,
      );
      continue;
    }
    for (let j = 0; j < s.content.length; j++) {
      const a = s.content[j]!;
      const b = v.content[j]!;
      if (canonical(a) === canonical(b)) continue;
      if (
        s.role === 'user' &&
        a.type === 'text' &&
        b.type === 'text' &&
        a.text === `${String(b.text)}\n` &&
        (j < s.content.length - 1 || s === carried)
      ) {
        normalized.seams++;
        continue;
      }
      if (
        a.type === 'tool_use' &&
        b.type === 'tool_use' &&
        a.name === 'Agent' &&
        b.name === 'Task' &&
        canonical({ ...a, name: 'Task' }) === canonical(b)
      ) {
        normalized.renamed++;
        continue;
      }
      differences.push(
        `message ${i} block ${j}: sent ${canonical(a).slice(0, 240)} — view ${canonical(b).slice(0, 240)}`,
      );
    }
  }
  return { equal: differences.length === 0, differences, normalized, resumed: sent };
}
