/**
 * What must stay: the one home of the rule, for compaction (each round of its plan protects what `protect` says) and
 * for what is reported when a target cannot be reached (the overflow error, `CompactionResult.protectedParts`).
 */
import { memoryFile } from '../budget/components.js';
import type { Message } from '../model/types.js';
import type { CompactOptions } from './options.js';
import { isSummaryItem, type ViewItem } from '../model/view.js';
import { thinkingNeededFrom } from './strategies/drop-thinking.js';
import { agentSummary } from './strategies/summarize.js';
import { isHumanUser, isRequest, unitsOf } from './turns.js';

/** What must stay verbatim in one round of a compaction, and the recent window the cheap strategies leave alone. */
export interface Protection {
  entries: Map<number, Message>;
  /** Entries the cheap strategies leave alone: the protected ones and the recent window. */
  window: Set<number>;
  steps: number;
  tailCounted: number;
  /** The parts that stay verbatim at the least (counted tokens), for the report. */
  /** (`message`: a part with no entry of its own — another agent's summary standing for what it archived.) */
  parts: { what: string; counted: number; entries?: number[]; message?: Message }[];
}

/**
 * Entries the model must see verbatim: leading system messages, project memory, another agent's summary, the first
 * message a person wrote and the primary request, the latest instruction, the recent tail (whole units from the end
 * within `tailCounted` tokens, never fewer than `steps` agent steps), and the step of the latest thinking.
 */
/**
 * The test of a view item `CompactOptions.pinned` and the messages' own `pinned` field make: undefined when nothing can
 * be pinned (no option given; a message's field still counts).
 */
export function pinnedTest(pinned: CompactOptions['pinned']): (item: ViewItem) => boolean {
  const set = pinned === undefined || typeof pinned === 'function' ? undefined : new Set<number>(pinned);
  const fn = typeof pinned === 'function' ? pinned : undefined;
  return (it) =>
    it.entry !== undefined &&
    !isSummaryItem(it) &&
    (it.message.pinned === true || set?.has(it.entry) === true || (fn !== undefined && fn(it.message, it.entry)));
}

/** The latest instruction (a person's request) and the latest message a person wrote: what the next step answers. */
export function latest(view: readonly ViewItem[]): [ViewItem | undefined, ViewItem | undefined] {
  return [view.findLast((v) => isRequest(v.message)), view.findLast((v) => isHumanUser(v.message))];
}

export function protect(
  view: readonly ViewItem[],
  o: {
    steps: number;
    tailCounted: number;
    windowCounted?: number;
    counter: { message(m: Message): number };
    /**
     * What gives way (see CompactOptions.shrinkProtected): 1 the thinking step, 2 agents' summaries, 3 the first request,
     * 4 the latest instruction (cut in place to its first and last lines, never archived: see chain.ts).
     */
    relax?: number;
    /** Pinned messages (CompactOptions.pinned): they stay whatever the round, like the system messages. */
    pinned?: (item: ViewItem) => boolean;
  },
): Protection {
  const relax = o.relax ?? 0;
  const entries = new Map<number, Message>();
  const parts: Protection['parts'] = [];
  const add = (it: ViewItem | undefined, what?: string) => {
    if (it?.entry === undefined || isSummaryItem(it) || entries.has(it.entry)) return 0;
    entries.set(it.entry, it.message);
    const n = o.counter.message(it.message);
    if (what) parts.push({ what: `${what} (entry ${it.entry})`, counted: n, entries: [it.entry] });
    return n;
  };
  // Every system message: the leading ones, and those an agent restates inside the history its own compaction leaves
  // (Codex's developer instructions in a replacement history) — standing instructions wherever they are.
  for (const it of view) if (it.message.role === 'system') add(it, 'system message');
  // Project memory a harness recorded as a message (Codex's AGENTS.md block) is a standing instruction like the system
  // prompt: the newest copy of each file stays (an agent that injects it again after compacting has older copies).
  const memory = new Map<string, ViewItem>();
  for (const it of view) {
    const file = memoryFile(it.message);
    if (file !== undefined) memory.set(file, it);
  }
  for (const it of memory.values()) add(it, 'project memory');
  // Pins never give way: what the host or the person said must reach the model as it is.
  if (o.pinned) for (const it of view) if (o.pinned(it)) add(it, 'pinned message');
  // Another agent's summary stays whole: nothing else records what it replaced (until it must give way: then it is
  // quoted in abridge's summary as far as the room allows, and kept whole in the session).
  for (const it of view) {
    if (!agentSummary(it.message) || relax >= 2) continue;
    const n = o.counter.message(it.message);
    if (it.entry !== undefined && !entries.has(it.entry)) entries.set(it.entry, it.message);
    parts.push({
      what: `the agent's own summary of earlier work${it.entry !== undefined ? ` (entry ${it.entry})` : ''}`,
      counted: n,
      ...(it.entry !== undefined ? { entries: [it.entry] } : { message: it.message }),
    });
  }
  if (relax < 3) {
    add(
      view.find((v) => isHumanUser(v.message)),
      'first user message',
    );
    add(
      view.find((v) => isRequest(v.message)),
      'primary request',
    );
  }
  if (relax < 4) {
    const [instruction, message] = latest(view);
    add(instruction, 'latest instruction');
    add(message, 'latest user message');
  }
  const units = unitsOf(view);
  let steps = 0;
  let tail = 0;
  let minimal = 0;
  // The tail is a stretch at the very end: once a unit does not fit, nothing older joins it but the last steps asked
  // for (a protected stretch further back would be archived after the newer, unprotected work, not before it).
  let ended = false;
  for (let j = units.length - 1; j >= 0; j--) {
    const u = units[j]!;
    let n = 0;
    for (let i = u.start; i < u.end; i++) n += o.counter.message(view[i]!.message);
    if (u.kind === 'system') break;
    if (u.kind === 'summary') {
      // The newest thing in view (an earlier compaction archived the trailing harness messages): the work before it is
      // still the latest, and the tail goes on.
      if (tail === 0 && steps === 0 && j === units.length - 1) continue;
      // Otherwise the tail ends at a summary, but the last steps asked for are still found behind it (an earlier
      // compaction may have archived what came after them).
      if (steps >= o.steps) break;
      ended = true;
      continue;
    }
    const needed = u.kind === 'step' && steps < o.steps;
    if (!needed && (ended || tail + n > o.tailCounted)) {
      // Past the tail's tokens: stop, unless the last steps asked for are still to come (a large message after them
      // must not cost them their protection).
      if (steps >= o.steps) break;
      ended = true;
      continue;
    }
    for (let i = u.start; i < u.end; i++) {
      const added = add(view[i]);
      if (needed) minimal += added;
    }
    tail += n;
    if (u.kind === 'step') steps++;
  }
  // The recent window cheap edits leave alone: whole units from the end within `windowCounted` of what the protected
  // messages leave (it may still be archived, oldest first, if nothing else makes room).
  const window = new Set<number>(entries.keys());
  let room = (o.windowCounted ?? 0) - [...entries.values()].reduce((n, m) => n + o.counter.message(m), 0) + tail;
  for (let j = units.length - 1; j >= 0; j--) {
    const u = units[j]!;
    if (u.kind === 'summary' || u.kind === 'system') break;
    let n = 0;
    for (let i = u.start; i < u.end; i++) n += o.counter.message(view[i]!.message);
    if (n > room) break;
    room -= n;
    for (let i = u.start; i < u.end; i++) if (view[i]!.entry !== undefined) window.add(view[i]!.entry!);
  }
  if (minimal > 0)
    parts.push({ what: `the last ${steps === 1 ? 'step' : `${Math.min(steps, o.steps)} steps`}`, counted: minimal });
  // The latest assistant thinking of a tool-use loop under way stays as it was (providers verify the signed thinking of
  // that loop), with its whole step. A turn that ended with the assistant's answer has no loop under way: its thinking
  // becomes an earlier turn's with the next message, which providers do not need (Anthropic strips it).
  const from = thinkingNeededFrom(view);
  const stepUnits = units.filter((u) => u.kind === 'step' && u.start > from && relax < 1);
  for (let j = stepUnits.length - 1; j >= 0; j--) {
    const u = stepUnits[j]!;
    if (view[u.start]!.message.parts.some((p) => p.type === 'thinking')) {
      let n = 0;
      const at: number[] = [];
      for (let i = u.start; i < u.end; i++) {
        const added = add(view[i]);
        if (added > 0) at.push(view[i]!.entry!);
        n += added;
      }
      if (n > 0) parts.push({ what: 'the step of the latest thinking', counted: n, entries: at });
      break;
    }
  }
  return { entries, window, steps, tailCounted: tail, parts };
}
