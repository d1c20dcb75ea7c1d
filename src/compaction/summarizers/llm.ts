import { AbridgeError } from '../../errors.js';
import { argumentsText } from '../../model/parts.js';
import type { FilePart, ImagePart, Message, ResultContentPart } from '../../model/types.js';
import type { TokenCounter } from '../../tokens/counter.js';
import { extractHandOff, type HandOff } from './handoff.js';
import { oneLine } from '../records.js';
import { itemsOf, pack } from './render.js';
import { ExtractiveSummarizer } from './extractive.js';
import type { SummaryRequest, Summarizer } from './summarizer.js';

/** One completion: a system prompt and one user prompt in, the model's text out. */
export interface LlmCompletionRequest {
  system: string;
  prompt: string;
  /** The most tokens the answer may take (the provider's `max_tokens`). */
  maxOutputTokens: number;
  /** Aborted when the summarizer gives up waiting (its timeout); clients should pass it on to their HTTP call. */
  signal?: AbortSignal;
}

/** A model that completes text: what the LLM summarizer needs of a provider (see `abridge-context/providers/*`). */
export interface LlmClient {
  readonly model: string;
  /** The model's context window, in its own tokens: the whole request plus the answer must fit in it. */
  readonly contextWindow: number;
  /** The model's own output limit, when known: the summarizer never asks for more. */
  readonly maxOutputTokens?: number;
  complete(request: LlmCompletionRequest): Promise<string>;
}

export interface LlmSummarizerOptions {
  /** Tokens of the window left unused besides the answer (default: 2% of the window, at least 256). */
  safetyMargin?: number;
  /** Our counts are multiplied by this to bound the model's tokenizer, which may count more (default 1.25). */
  tokenizerSlack?: number;
  /** The answer's `max_tokens` (default: the summary budget ×1.25 plus 256, within the model's output limit). */
  maxOutputTokens?: number;
  /** How long to wait for one answer, in milliseconds (default 60,000). */
  timeoutMs?: number;
  /** Further attempts after a failed, empty or invalid answer (default 1). */
  retries?: number;
  /**
   * What summarizes when the model cannot (default: the extractive summarizer). `null` makes a failure throw, so the
   * chain skips summarization instead.
   */
  fallback?: Summarizer | null;
}

/** What the summarizer sends, and what it had to leave out to fit the summarizer model's window. */
export interface PreparedSummaryRequest extends LlmCompletionRequest {
  /** What an answer must mention to stand for the span (see `checkAnswer`). */
  checklist: AnswerChecklist;
  /** Messages of the span left out (oldest first) because the span did not fit. */
  omittedMessages: number;
  /** Tool results, tool inputs or messages cut to their first and last lines to fit. */
  truncatedBlocks: number;
  /** The request's size as the summarizer's counter counts it, times the tokenizer slack. */
  requestTokens: number;
}

export const LLM_SUMMARY_SECTIONS = [
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

/** The sections an answer cannot do without: what the task is, where the work stands, what comes next. */
const REQUIRED_SECTIONS = ['Primary request', 'Current state', 'Next step'] as const;

const SECTION_HINTS: Record<(typeof LLM_SUMMARY_SECTIONS)[number], string> = {
  'Primary request':
    "the task the person set, in their words (given in <original-task> when known); not the harness's own messages such as slash commands, notifications or interruptions",
  'User messages (verbatim)':
    'every message the person wrote, quoted word for word, in order; do not soften, merge or drop any',
  'Current state':
    'where the work stands at the end of these messages: what is done, what is half done, what was being looked at',
  Plan: 'the plan: each item done, in progress or pending, as the agent kept it',
  'Files and changes':
    'every file modified with what changed in it (the code, briefly), and the files read with what was learned from them; full paths',
  'Errors and fixes':
    'each error, quoted, and whether a later step resolved it (say "unresolved" when nothing did; never call an error fixed without a later success)',
  'Commands (exit status)': 'commands run with the exit status the records give, failing ones first',
  'Findings and key facts':
    'what the agent found and answered; hosts, ports, URLs, environment variables, versions and ids that were fixed',
  'Next step': "the very next action: the plan's item in progress or the latest request — not a narration",
};

const DEFAULT_SLACK = 1.25;

/**
 * A summarizer that asks a model for a structured summary: the original task, the user's instructions verbatim,
 * progress and decisions, working memory (files, commands with exit status, errors, numbers) and what is still open.
 * The evidence of the span (extractEvidence) goes with it as a checklist, so that no path or command is lost. When the
 * span holds an earlier summary, the model updates that summary with the new messages only.
 *
 * The request always fits the summarizer model's window, even when the session has overflowed its own: huge tool
 * results are cut to their first and last lines, then the oldest message groups are left out (and said to be). A
 * failed call or an empty answer throws, so that the compaction chain skips this strategy and says why.
 */
export class LlmSummarizer implements Summarizer {
  readonly name = 'llm';

  constructor(
    readonly client: LlmClient,
    private readonly options: LlmSummarizerOptions = {},
  ) {}

  async summarize(req: SummaryRequest): Promise<string> {
    let prepared: PreparedSummaryRequest;
    try {
      prepared = this.prepare(req);
    } catch (err) {
      return this.fallBack(req, err instanceof Error ? err.message : String(err));
    }
    if (prepared.omittedMessages > 0)
      req.report?.(
        `the LLM summarizer's request left out the ${prepared.omittedMessages} oldest messages of the span${entryRange(req, prepared.omittedMessages)} to fit ${this.client.model}'s window; they are archived, and listed only in its checklist`,
      );
    const attempts = 1 + Math.max(0, this.options.retries ?? 1);
    const timeout = this.options.timeoutMs ?? 60_000;
    let reason = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let answer: unknown;
      try {
        answer = await withTimeout(
          (signal) =>
            this.client.complete({
              system: prepared.system,
              prompt: prepared.prompt,
              maxOutputTokens: prepared.maxOutputTokens,
              signal,
            }),
          timeout,
        );
      } catch (err) {
        reason = `the call to ${this.client.model} failed: ${err instanceof Error ? err.message : String(err)}`;
        continue;
      }
      const text = cleanAnswer(typeof answer === 'string' ? answer : '');
      const problems = checkAnswer(text, req, req.counter, prepared.checklist);
      if (problems.length > 0) {
        reason = `${this.client.model} ${problems.join('; ')}`;
        // The next attempt is told what was wrong with this one.
        prepared = { ...prepared, prompt: `${prepared.prompt.replace(RETRY_NOTE, '')}${retryNote(problems)}` };
        continue;
      }
      return fitAnswer(text, req.maxTokens, req.counter);
    }
    return this.fallBack(req, `${reason} (${attempts} attempt${attempts === 1 ? '' : 's'})`);
  }

  /** The fallback's summary when the model gave none worth keeping, and a note saying so. */
  private async fallBack(req: SummaryRequest, reason: string): Promise<string> {
    const fallback = this.options.fallback === undefined ? new ExtractiveSummarizer() : this.options.fallback;
    if (fallback === null) throw new AbridgeError('SUMMARIZER_FAILED', `the LLM summarizer failed: ${reason}`);
    req.report?.(`the LLM summarizer failed (${reason}); the ${fallback.name} summary was used instead`);
    return fallback.summarize(req);
  }

  /** The request `summarize` sends for `req`, fitted to the summarizer model's window. */
  prepare(req: SummaryRequest): PreparedSummaryRequest {
    const { counter } = req;
    const slack = this.options.tokenizerSlack ?? DEFAULT_SLACK;
    const window = this.client.contextWindow;
    let maxOutputTokens = this.options.maxOutputTokens ?? Math.ceil(req.maxTokens * slack) + 256;
    if (this.client.maxOutputTokens !== undefined)
      maxOutputTokens = Math.min(maxOutputTokens, this.client.maxOutputTokens);
    maxOutputTokens = Math.max(1, Math.min(maxOutputTokens, Math.floor(window / 2)));
    const margin = this.options.safetyMargin ?? Math.max(256, Math.ceil(window * 0.02));
    const limit = window - maxOutputTokens - margin; // in the model's tokens
    const fits = (n: number) => Math.ceil(n * slack) <= limit;
    const avail = Math.floor(limit / slack); // in our tokens

    const summaries = req.messages.filter(isSummaryMessage);
    const messages = req.messages.filter((m) => !isSummaryMessage(m));
    let previous = req.previousSummary ?? (summaries.length > 0 ? summaries.map(summaryOf).join('\n\n') : undefined);
    if (previous !== undefined && !previous.trim()) previous = undefined;
    // The checklist is the extractive hand-off of the same messages: files with their changes, errors and whether they
    // were resolved, the plan, every person's message — the facts the answer must carry.
    const evidence = extractHandOff(messages);
    const items = itemsOf(evidence, {
      ...(req.task ? { task: req.task } : {}),
      ...(req.instructions ? { instructions: req.instructions } : {}),
      ...(req.laterRequestKept ? { laterRequestKept: true } : {}),
    });
    const checklistAt = (tokens: number) => (tokens <= 0 ? '' : pack([], items, tokens, counter).trim());
    const system = systemPrompt(req.maxTokens, req.task !== undefined);
    let task = req.task;

    const shape: PromptShape = {
      previous,
      task,
      checklist: checklistAt(CHECKLIST_TOKENS),
      ...(req.instructions ? { instructions: req.instructions } : {}),
    };
    const fixedCost = (omitted: number) =>
      counter.text(system) + counter.text(renderPrompt(shape, [], omitted, messages.length));
    let truncatedBlocks = 0;
    // The parts besides the messages: the checklist gives way first (it may take at most half), then the task, then
    // the earlier summary (cut, as a last resort).
    for (const tokens of [2000, 1000, 500, 250, 120, 0]) {
      if (fixedCost(messages.length) <= avail / 2) break;
      shape.checklist = checklistAt(tokens);
    }
    if (task && fixedCost(messages.length) > avail * 0.75) {
      task = headTail(task, Math.max(100, Math.floor(avail / 10)), counter);
      shape.task = task;
      truncatedBlocks++;
    }
    if (previous && fixedCost(messages.length) > avail) {
      const room = avail - (fixedCost(messages.length) - counter.text(previous));
      if (room > 100) {
        shape.previous = headTail(previous, room - 50, counter);
        truncatedBlocks++;
      }
    }
    if (fixedCost(messages.length) > avail) {
      throw new AbridgeError(
        'SUMMARIZER_FAILED',
        `the LLM summarizer's model ${this.client.model} has too small a window (${window} tokens, ${maxOutputTokens} for the answer) for even the instructions and the earlier summary`,
      );
    }

    // The messages, in groups that are kept or left out whole: an assistant message with its tool results, or a user message.
    const groups = groupMessages(messages).map((g) => ({ size: g.length, blocks: g.flatMap(renderMessage) }));
    const groupTokens = (g: Group) => g.blocks.reduce((n, b) => n + counter.text(b.text) + 1, 0);
    // Room for the messages, with the omission note at its longest (the final check below settles any difference).
    const budget = avail - fixedCost(messages.length);
    let sizes = groups.map(groupTokens);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    if (sum(sizes) > budget) {
      // First cut any single huge block (a tool result, a file written through a tool call) to its head and tail.
      const cap = Math.max(200, Math.floor(budget / 4));
      for (const g of groups) {
        g.blocks = g.blocks.map((b) => {
          if (!b.cuttable || counter.text(b.text) <= cap) return b;
          truncatedBlocks++;
          return { ...b, text: headTail(b.text, cap, counter) };
        });
      }
      sizes = groups.map(groupTokens);
    }
    // Then leave out the oldest groups until the rest fits.
    let first = 0;
    let omitted = 0;
    let kept = sum(sizes);
    while (first < groups.length && kept > budget) {
      if (first === groups.length - 1) {
        // The newest group alone is too large: cut it rather than send no messages at all.
        const room = budget - 20;
        const last = groups[first]!;
        if (room >= 100) {
          const text = last.blocks.map((b) => b.text).join('\n');
          last.blocks = [{ text: headTail(text, room, counter), cuttable: true }];
          truncatedBlocks++;
          kept = sizes[first] = groupTokens(last);
          if (kept <= budget) break;
        }
      }
      kept -= sizes[first]!;
      omitted += groups[first]!.size;
      first++;
    }

    // Check the whole request as it will be sent; leave out more if the parts did not add up.
    for (;;) {
      const rendered = groups.slice(first).flatMap((g) => g.blocks.map((b) => b.text));
      const prompt = renderPrompt(shape, rendered, omitted, messages.length);
      const total = counter.text(system) + counter.text(prompt);
      if (fits(total) || first >= groups.length) {
        if (!fits(total))
          throw new AbridgeError(
            'SUMMARIZER_FAILED',
            `the LLM summarizer could not fit its request into the window of ${this.client.model} (${window} tokens)`,
          );
        return {
          system,
          prompt,
          maxOutputTokens,
          omittedMessages: omitted,
          truncatedBlocks,
          requestTokens: Math.ceil(total * slack),
          checklist: answerChecklist(evidence, shape.checklist, req),
        };
      }
      omitted += groups[first]!.size;
      first++;
    }
  }
}

interface Block {
  text: string;
  /** A tool result or tool input that may be cut to its head and tail. */
  cuttable: boolean;
}

interface Group {
  size: number;
  blocks: Block[];
}

interface PromptShape {
  previous: string | undefined;
  task: string | undefined;
  /** The extractive hand-off of the messages, as far as it fits (empty: none). */
  checklist: string;
  instructions?: string;
}

/** The most the checklist may take of the request, in tokens, before the window asks for less. */
const CHECKLIST_TOKENS = 4000;

function isSummaryMessage(m: Message): boolean {
  return m.parts.some((p) => p.type === 'compaction');
}

function summaryOf(m: Message): string {
  return m.parts.map((p) => (p.type === 'compaction' ? p.marker.summary : p.type === 'text' ? p.text : '')).join('\n');
}

function systemPrompt(maxTokens: number, hasTask: boolean): string {
  const words = Math.max(50, Math.floor(maxTokens * 0.7));
  return [
    "You write the hand-off summary that replaces part of an AI agent's conversation when its context window fills up. The agent continues the work from your summary alone: whatever you leave out is lost to it.",
    '',
    'Write exactly these sections, as Markdown headings, in this order:',
    ...LLM_SUMMARY_SECTIONS.flatMap((title) => [
      `## ${title}`,
      `(${title === 'Primary request' && !hasTask ? 'the task the person set, as the messages show it' : SECTION_HINTS[title]})`,
    ]),
    '',
    'Rules:',
    '- Keep every file path, command, error line and number you are given, exactly as written. The <checklist> lists them: each item must appear in your summary.',
    '- Do not invent anything the material does not say.',
    `- The summary must be at most ${maxTokens} tokens (about ${words} words). Be terse: lists, not prose.`,
    '- Answer only with the summary: no preamble, no closing remarks, no code fence around it.',
  ].join('\n');
}

function renderPrompt(s: PromptShape, rendered: string[], omitted: number, total: number): string {
  const out: string[] = [];
  const incremental = s.previous !== undefined;
  if (incremental) {
    out.push(
      'Update this summary with what follows; keep everything in it. Fold the new messages into its sections; where they change something (a TODO done, a decision reversed), say so.',
      '',
      '<previous-summary>',
      s.previous!,
      '</previous-summary>',
      '',
    );
  } else {
    out.push('Summarize the conversation below.', '');
  }
  if (s.task) out.push('<original-task>', s.task, '</original-task>', '');
  if (s.instructions)
    out.push(
      '<instructions>',
      'The person asked this summary to keep or focus on the following; follow it first:',
      s.instructions,
      '</instructions>',
      '',
    );
  if (s.checklist)
    out.push(
      '<checklist>',
      `What the records of the ${incremental ? 'new ' : ''}messages say, extracted without a model: every file, unresolved error, plan item and person's message in it must appear in your summary (paths, commands and error lines exactly as written). It is a list of facts, not the summary: say what the work is, what was done and what comes next.`,
      s.checklist,
      '</checklist>',
      '',
    );
  const tag = incremental ? 'new-messages' : 'messages';
  out.push(`<${tag}>`);
  if (omitted > 0) out.push(`[${omitted} earlier messages omitted to fit the summarizer's window]`);
  if (total === 0) out.push('(none)');
  out.push(...rendered, `</${tag}>`, '');
  out.push(
    `Write the summary now, with the ${LLM_SUMMARY_SECTIONS.length} sections, in at most the given number of tokens.`,
  );
  return out.join('\n');
}

const RETRY_NOTE = /\n\nYour previous answer was not accepted:[\s\S]*$/;

function retryNote(problems: string[]): string {
  return `\n\nYour previous answer was not accepted: it ${problems.join('; it ')}. Write the whole summary again, every section, mentioning every file and unresolved error of the checklist.`;
}

/** Assistant messages with the tool results after them; user and system messages alone. */
function groupMessages(messages: readonly Message[]): Message[][] {
  const groups: Message[][] = [];
  for (const m of messages) {
    const last = groups[groups.length - 1];
    if (m.role === 'tool' && last && (last[0]!.role === 'assistant' || last[0]!.role === 'tool')) last.push(m);
    else groups.push([m]);
  }
  return groups;
}

function renderMessage(m: Message): Block[] {
  const out: Block[] = [];
  const label =
    m.role === 'user' && m.synthetic ? 'user (injected by the harness)' : m.role === 'tool' ? undefined : m.role;
  if (label) out.push({ text: `[${label}]`, cuttable: false });
  for (const p of m.parts) {
    switch (p.type) {
      case 'text':
        if (p.text.trim()) out.push({ text: p.text, cuttable: true });
        break;
      case 'tool-call':
        out.push({
          text: `[tool call ${p.name}${p.id ? ` #${p.id}` : ''}] ${argumentsText(p.arguments)}`,
          cuttable: true,
        });
        break;
      case 'tool-result': {
        const head = `[tool result${p.toolName ? ` ${p.toolName}` : ''}${p.callId ? ` #${p.callId}` : ''}${p.isError ? ', error' : ''}]`;
        out.push({ text: `${head}\n${p.content.map(contentText).join('\n')}`, cuttable: true });
        break;
      }
      case 'image':
      case 'file':
        out.push({ text: media(p), cuttable: false });
        break;
      case 'compaction':
        out.push({ text: `[earlier summary]\n${p.marker.summary}`, cuttable: true });
        break;
      case 'thinking':
        break; // reasoning is not part of what the agent said or did
    }
  }
  return out;
}

function contentText(c: ResultContentPart): string {
  return c.type === 'text' ? c.text : media(c);
}

function media(p: ImagePart | FilePart): string {
  const what = p.type === 'image' ? 'image' : `file${p.name ? ` ${p.name}` : ''}`;
  return `[${what}${p.mediaType ? ` ${p.mediaType}` : ''} not shown]`;
}

/** `text` cut to about `maxTokens` tokens: its first and last lines, with a note of what was left out between them. */
export function headTail(text: string, maxTokens: number, counter: TokenCounter): string {
  const tokens = counter.text(text);
  if (tokens <= maxTokens) return text;
  let keepChars = Math.max(40, Math.floor((text.length * maxTokens) / tokens));
  for (let i = 0; i < 20; i++) {
    const out = cutMiddle(text, keepChars);
    if (counter.text(out) <= maxTokens || keepChars <= 40) return out;
    keepChars = Math.floor(keepChars * 0.8);
  }
  return cutMiddle(text, 40);
}

function cutMiddle(text: string, keepChars: number): string {
  const half = Math.floor(keepChars / 2);
  let head = text.slice(0, half);
  let tail = text.slice(text.length - half);
  // Cut at line boundaries when one is near.
  const nl = head.lastIndexOf('\n');
  if (nl > half * 0.6) head = head.slice(0, nl);
  const tl = tail.indexOf('\n');
  if (tl !== -1 && tl < half * 0.4) tail = tail.slice(tl + 1);
  const dropped = text.length - head.length - tail.length;
  return `${head}\n[… ${dropped} characters omitted …]\n${tail}`;
}

/** Runs `call` with an abort signal that fires, and a rejection, after `ms` milliseconds. */
async function withTimeout<T>(call: (signal: AbortSignal) => Promise<T>, ms: number): Promise<T> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ac.abort();
      reject(new Error(`no answer within ${ms.toLocaleString('en-US')} ms`));
    }, ms);
  });
  try {
    return await Promise.race([call(ac.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** What an answer must mention to stand for a span: the checklist's files and unresolved errors, and the task's words. */
export interface AnswerChecklist {
  /** Files the checklist lists (modified and read): each by its path or its file name. */
  files: string[];
  /** Unresolved errors: each by the opening of its command or call. */
  errors: string[];
  /** Distinctive words of the people's requests (and an earlier summary): an answer that has none is off-task. */
  words: string[];
}

function answerChecklist(h: HandOff, rendered: string, req: SummaryRequest): AnswerChecklist {
  const files = h.files.map((f) => f.path).filter((p) => rendered.includes(p));
  const errors = h.errors
    .filter((e) => e.resolved === undefined)
    .map((e) => e.what.replace(/^`|`$/g, ''))
    .map((w) => oneLine(w).slice(0, 30))
    .filter((w) => w && rendered.includes(w));
  const said = [req.task ?? '', ...h.requests.map((r) => r.text), req.previousSummary ?? ''].join('\n');
  return { files, errors, words: distinctiveWords(said) };
}

const STOP = new Set(
  'about above after again against because before being below between could doing during every from further having other should their there these those through under until where which while would your yours please thanks'.split(
    ' ',
  ),
);

/** Up to 12 of the longest words (5+ letters) of a text: what an answer about it will name. */
function distinctiveWords(text: string): string[] {
  const words = [...new Set((text.toLowerCase().match(/[a-z][a-z0-9_-]{4,}/g) ?? []).filter((w) => !STOP.has(w)))];
  return words.sort((a, b) => b.length - a.length).slice(0, 12);
}

/**
 * Why an answer cannot stand in for the span, or an empty list when it can: empty, absurdly short, without the
 * sections that say what the task is, where the work stands and what comes next (a truncated answer loses the last),
 * missing a file or an unresolved error of the checklist, or about something else (none of the requests' words).
 */
export function checkAnswer(
  text: string,
  req: Pick<SummaryRequest, 'maxTokens' | 'messages'>,
  counter: TokenCounter,
  checklist?: AnswerChecklist,
): string[] {
  if (!text) return ['returned an empty summary'];
  const problems: string[] = [];
  const section = (title: string) => {
    const m = new RegExp(
      `^#{1,4}\\s*${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^\\n]*\\n([\\s\\S]*?)(?=^#{1,4}\\s|(?![\\s\\S]))`,
      'im',
    ).exec(text);
    return m ? m[1]!.trim() : undefined;
  };
  const absent = REQUIRED_SECTIONS.filter((t) => !section(t));
  if (absent.length > 0) problems.push(`left out the ${absent.join(', ')} section${absent.length > 1 ? 's' : ''}`);
  const missing = LLM_SUMMARY_SECTIONS.filter((t) => section(t) === undefined);
  if (missing.length > 2) problems.push(`left out the summary's sections (${missing.join(', ')})`);
  const tokens = counter.text(text);
  const least = Math.min(300, Math.floor(req.maxTokens / 4), 40 + 2 * req.messages.length);
  if (tokens < least)
    problems.push(`returned ${tokens} tokens for ${req.messages.length} messages (at least ${least} expected)`);
  if (checklist) {
    const lower = text.toLowerCase();
    const files = checklist.files.filter((f) => !text.includes(f) && !text.includes(f.slice(f.lastIndexOf('/') + 1)));
    if (files.length > 0)
      problems.push(
        `did not mention ${files.length} file${files.length > 1 ? 's' : ''} of the checklist (${files.slice(0, 5).join(', ')}${files.length > 5 ? ', …' : ''})`,
      );
    const errors = checklist.errors.filter((e) => !oneLine(text).includes(e));
    if (errors.length > 0)
      problems.push(
        `did not mention ${errors.length} unresolved error${errors.length > 1 ? 's' : ''} (${errors.slice(0, 3).join('; ')})`,
      );
    if (checklist.words.length >= 3 && !checklist.words.some((w) => lower.includes(w)))
      problems.push('is about something else: it names none of the requests’ words');
  }
  return problems;
}

/** Why an answer cannot stand in for the span, or undefined when it can (see checkAnswer). */
export function invalidAnswer(text: string, req: SummaryRequest, counter: TokenCounter): string | undefined {
  const problems = checkAnswer(text, req, counter);
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/** ` (entries a–b)` for the first `n` messages of a request, when their entries are known. */
function entryRange(req: SummaryRequest, n: number): string {
  const known = (req.entries ?? []).slice(0, n).filter((e): e is number => e !== undefined);
  if (known.length === 0) return '';
  const lo = Math.min(...known);
  const hi = Math.max(...known);
  return lo === hi ? ` (entry ${lo})` : ` (entries ${lo}–${hi})`;
}

function cleanAnswer(text: string): string {
  let t = text.trim();
  const fence = /^```[\w-]*\n([\s\S]*?)\n```$/.exec(t);
  if (fence) t = fence[1]!.trim();
  return t;
}

/** The answer within `maxTokens`: whole lines from the start, and a note that the rest was cut. */
function fitAnswer(text: string, maxTokens: number, counter: TokenCounter): string {
  if (counter.text(text) <= maxTokens) return text;
  const note = `[summary truncated to fit ${maxTokens} tokens]`;
  const lines = text.split('\n');
  let lo = 0;
  let hi = lines.length;
  // The most whole lines that fit with the note.
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (counter.text(`${lines.slice(0, mid).join('\n')}\n${note}`) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  if (lo > 0) return `${lines.slice(0, lo).join('\n').trimEnd()}\n${note}`;
  // Not even the first line fits: cut it.
  let chars = Math.floor((lines[0]!.length * maxTokens) / Math.max(1, counter.text(lines[0]!)));
  while (chars > 0 && counter.text(`${lines[0]!.slice(0, chars)}…\n${note}`) > maxTokens)
    chars = Math.floor(chars * 0.8);
  return chars > 0 ? `${lines[0]!.slice(0, chars)}…\n${note}` : note;
}
