/**
 * A scripted model for abridge's LLM summarizer: recognizes the summarizer's requests and writes the answers a test
 * needs — a careful hand-off made from what the request gives (the task, the checklist), one cut before its last
 * sections, one without sections, one about something else. The section titles are written out here rather than
 * imported: a change of the summarizer's sections shows up as a failing test.
 */

/** The hand-off's sections, in order (abridge's `LLM_SUMMARY_SECTIONS`). */
export const SECTIONS = [
  'Primary request',
  'User messages (verbatim)',
  'Current state',
  'Plan',
  'Files and changes',
  'Errors and fixes',
  'Commands (exit status)',
  'Findings and key facts',
  'Next step',
] as const;

/** Whether a system prompt is the LLM summarizer's. */
export function isSummaryRequest(system: unknown): boolean {
  const text = typeof system === 'string' ? system : JSON.stringify(system ?? '');
  return text.includes("You write the hand-off summary that replaces part of an AI agent's conversation");
}

/** The text between `open` and `close` in `text` (undefined when absent). */
export function between(text: string, open: string, close: string): string | undefined {
  const at = text.indexOf(open);
  if (at < 0) return undefined;
  const end = text.indexOf(close, at + open.length);
  return end < 0 ? undefined : text.slice(at + open.length, end);
}

/** The checklist the request carries, without its heading line (the facts the answer must name). */
export function checklistOf(prompt: string): string {
  const block = between(prompt, '<checklist>\n', '\n</checklist>') ?? '';
  return block.split('\n').slice(1).join('\n').trim();
}

/** The checklist's items, each cut to its opening (a path, a command, an error line): what a terse answer keeps. */
function checklistFacts(prompt: string): string {
  return checklistOf(prompt)
    .split('\n')
    .filter((l) => l.startsWith('- '))
    .map((l) => (l.length > 110 ? `${l.slice(0, 110)}…` : l))
    .join('\n');
}

export interface HandOffOptions {
  /** Sections left out (a truncated answer loses `Next step`). */
  omit?: readonly string[];
  /** The next step, as the answer says it. */
  next?: string;
  /** A line the answer starts its Current state with (for a test to find it in the view). */
  mark?: string;
}

/** A careful model's hand-off for a summarizer request: every section, the task, every fact of the checklist. */
export function handOffFor(prompt: string, options: HandOffOptions = {}): string {
  const task = between(prompt, '<original-task>\n', '\n</original-task>')?.trim() ?? 'The task the person set.';
  const checklist = checklistFacts(prompt);
  const body: Record<(typeof SECTIONS)[number], string> = {
    'Primary request': task,
    'User messages (verbatim)': `- ${task}`,
    'Current state': [options.mark, 'Where the work stands, from the records:', checklist].filter(Boolean).join('\n'),
    Plan: '- continue from the next step',
    'Files and changes': '- as listed under Current state',
    'Errors and fixes': '- as listed under Current state',
    'Commands (exit status)': '- as listed under Current state',
    'Findings and key facts': '- none beyond the above',
    'Next step': options.next ?? 'Run the test suite again and fix what still fails.',
  };
  return SECTIONS.filter((s) => !options.omit?.includes(s))
    .map((s) => `## ${s}\n${body[s]}`)
    .join('\n\n');
}

/** An answer with every section, long enough, about something that is not in the conversation at all. */
export function offTaskAnswer(): string {
  return SECTIONS.map(
    (s) =>
      `## ${s}\n- Bake the sourdough loaf at 230 °C for forty minutes, then let it rest on a wire rack before slicing; the starter was refreshed yesterday morning with rye flour.`,
  ).join('\n\n');
}
