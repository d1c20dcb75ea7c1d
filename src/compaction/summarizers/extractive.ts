import type { Message } from '../../model/types.js';
import { clean } from '../records.js';
import { extractHandOff, type HandOff } from './handoff.js';
import { itemsOf, mergeItems, pack, parseSummary as parseItems, TITLE, type Item } from './render.js';
import type { SummaryRequest, Summarizer } from './summarizer.js';

/**
 * A hand-off summary that needs no LLM, made only of what the records say: the primary request and every person's
 * message verbatim, where the work stands (the next step from the plan or the latest request, an open blocker, the last
 * actions), the plan with what is done and pending, errors with whether a later call resolved them, each file modified
 * with what changed (diff lines), commands with the exit status their harness recorded, files read with what they
 * define, the agent's findings and answers, and key facts (hosts, ports, URLs, variables, versions, ids) with the line
 * they were said in. Packed by priority into its budget (see render.ts). Summarizing an earlier summary of its own, it
 * carries its items forward (the modified-files ledger and the plan accumulate); another agent's summary is quoted.
 */
export class ExtractiveSummarizer implements Summarizer {
  readonly name = 'extractive';
  readonly local = true;

  async summarize(req: SummaryRequest): Promise<string> {
    return this.summarizeSync(req);
  }

  summarizeSync(req: SummaryRequest): string {
    const messages = req.messages.filter((m) => !m.parts.some((p) => p.type === 'compaction'));
    const handOff = handOffOf(messages);
    let inherited: Item[] = [];
    let earlier = 0;
    let foreign: string | undefined;
    if (req.previousSummary) {
      const parsed = parsedOf(req.previousSummary);
      if (parsed) {
        earlier = parsed.archivedMessages;
        inherited = parsed.items;
        foreign = parsed.foreign;
      } else foreign = clean(req.previousSummary);
    }
    if (req.otherSummaries?.length)
      foreign = [foreign, ...req.otherSummaries.map((t) => clean(t))].filter(Boolean).join('\n\n');
    const items = mergeItems(
      inherited,
      itemsOf(handOff, {
        ...(req.task ? { task: req.task } : {}),
        ...(req.instructions ? { instructions: req.instructions } : {}),
        ...(req.laterRequestKept ? { laterRequestKept: true } : {}),
      }),
    );
    if (foreign)
      items.push({
        section: 'foreign',
        key: 'foreign',
        order: 0,
        priority: 8.5,
        levels: [foreign, ...(foreign.length > 2000 ? [clipLines(foreign, 2000)] : []), clipLines(foreign, 500)],
      });
    const header = [
      TITLE,
      `${messages.length + earlier} earlier messages were archived here; the full history is kept, nothing was deleted.`,
    ];
    const text = pack(header, items, req.maxTokens, req.counter);
    if (req.counter.text(text) <= req.maxTokens || !req.strict) return text;
    return shortNote(messages.length + earlier);
  }
}

/**
 * The last hand-off extracted and the last summary parsed: a compaction asks for the summary of a span again (a span
 * re-chosen, a summary given more room), with the same messages or the same earlier summary. Neither is changed by
 * what reads it (mergeItems and pack make new arrays and maps; itemsOf reads the hand-off).
 */
let lastHandOff: { messages: readonly Message[]; handOff: HandOff } | undefined;
let lastParsed: { text: string; parsed: ReturnType<typeof parseItems> } | undefined;

function handOffOf(messages: readonly Message[]): HandOff {
  const last = lastHandOff;
  if (last && last.messages.length === messages.length && last.messages.every((m, i) => m === messages[i]))
    return last.handOff;
  const handOff = extractHandOff(messages);
  lastHandOff = { messages, handOff };
  return handOff;
}

function parsedOf(text: string): ReturnType<typeof parseItems> {
  if (lastParsed?.text === text) return lastParsed.parsed;
  const parsed = parseItems(text);
  lastParsed = { text, parsed };
  return parsed;
}

function clipLines(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const head = text.slice(0, chars);
  const nl = head.lastIndexOf('\n');
  return `${nl > chars / 2 ? head.slice(0, nl) : head}\n[… ${text.length - chars} more characters of the earlier summary are archived]`;
}

/** The shortest record of an archived span. */
function shortNote(messages: number): string {
  return `[${messages} earlier messages archived; the full history is kept.]`;
}

/** Reads a summary this summarizer wrote back (its sections as items); undefined for any other text. */
export function parseSummary(text: string): { archivedMessages: number; items: Item[]; foreign?: string } | undefined {
  return parseItems(text);
}

/** A summary that only notes what was dropped, for the last-resort truncation step. */
export function truncationNote(messages: readonly Message[]): string {
  return `[${messages.length} earlier messages were archived without a summary to fit the context; the full history is kept.]`;
}
