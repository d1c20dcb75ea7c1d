import { argumentsText } from '../../model/parts.js';
import type { FilePart, ImagePart, Message, ResultContentPart } from '../../model/types.js';
import type { TokenCounter } from '../../tokens/counter.js';
import { extractEvidence, type Evidence } from './extract.js';
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

/** A model that completes text: what the LLM summarizer needs of a provider (see `abridge/providers/*`). */
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
  'Errors and fixes',
  'Files and changes',
  'Commands (exit status)',
  'Decisions',
  'Pending tasks',
  'Next step',
] as const;

const SECTION_HINTS: Record<(typeof LLM_SUMMARY_SECTIONS)[number], string> = {
  'Primary request':
    "the task the person set, in their words (given in <original-task> when known); not the harness's own messages such as slash commands, notifications or interruptions",
  'User messages (verbatim)':
    'every message the person wrote, quoted word for word, in order; do not soften, merge or drop any',
  'Current state':
    'where the work stands at the end of these messages: what is done, what is half done, what was being looked at',
  'Errors and fixes': 'each error, quoted, and how it was fixed (or that it was not)',
  'Files and changes': 'files read, and files modified with what changed in each, with their full paths',
  'Commands (exit status)': 'commands run with their exit status, failing ones first',
  Decisions: 'what was decided, as outcomes, and why',
  'Pending tasks': 'what is still to do, in order',
  'Next step': 'the very next action, as the agent was about to take it',
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
      const problem = invalidAnswer(text, req, req.counter);
      if (problem) {
        reason = `${this.client.model} ${problem}`;
        continue;
      }
      return fitAnswer(text, req.maxTokens, req.counter);
    }
    return this.fallBack(req, `${reason} (${attempts} attempt${attempts === 1 ? '' : 's'})`);
  }

  /** The fallback's summary when the model gave none worth keeping, and a note saying so. */
  private async fallBack(req: SummaryRequest, reason: string): Promise<string> {
    const fallback = this.options.fallback === undefined ? new ExtractiveSummarizer() : this.options.fallback;
    if (fallback === null) throw new Error(`the LLM summarizer failed: ${reason}`);
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
    const evidence = extractEvidence(messages);
    if (req.task) evidence.instructions = evidence.instructions.filter((i) => i !== req.task);
    const system = systemPrompt(req.maxTokens, req.task !== undefined);
    let task = req.task;

    const shape: PromptShape = { previous, task, checklistLimit: Number.POSITIVE_INFINITY, evidence };
    const fixedCost = (omitted: number) =>
      counter.text(system) + counter.text(renderPrompt(shape, [], omitted, messages.length));
    let truncatedBlocks = 0;
    // The parts besides the messages: the checklist gives way first (it may take at most half), then the task, then
    // the earlier summary (cut, as a last resort).
    for (const lim of [200, 100, 50, 20, 10, 5, 0]) {
      if (fixedCost(messages.length) <= avail / 2) break;
      shape.checklistLimit = lim;
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
      throw new Error(
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
          throw new Error(
            `the LLM summarizer could not fit its request into the window of ${this.client.model} (${window} tokens)`,
          );
        return {
          system,
          prompt,
          maxOutputTokens,
          omittedMessages: omitted,
          truncatedBlocks,
          requestTokens: Math.ceil(total * slack),
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
  evidence: Evidence;
  /** Most items per checklist list (the latest are kept). */
  checklistLimit: number;
}

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
  const checklist = renderChecklist(s.evidence, s.checklistLimit);
  if (checklist)
    out.push(
      '<checklist>',
      `These come from the ${incremental ? 'new ' : ''}messages. Every item must appear in your summary, exactly as written:`,
      checklist,
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

function renderChecklist(e: Evidence, limit: number): string {
  const out: string[] = [];
  const list = (title: string, items: string[], itemChars: number) => {
    if (items.length === 0) return;
    const shown = limit >= items.length ? items : limit <= 0 ? [] : items.slice(items.length - limit);
    out.push(`${title}:`);
    const dropped = items.length - shown.length;
    if (dropped > 0) out.push(`- (${dropped} earlier ones not listed here; keep those the messages show)`);
    for (const it of shown) out.push(`- ${clip(it, itemChars).replace(/\n/g, '\n  ')}`);
  };
  list('Files modified', e.filesModified, 400);
  list('Files read', e.filesRead, 400);
  list(
    'Commands run (exit status)',
    e.commands.map((c) => `${code(c.command)} → ${c.status}`),
    400,
  );
  list('Errors', e.errors, 300);
  list('Numbers', e.numbers, 240);
  list('User instructions (quote them verbatim)', e.instructions, 1500);
  list('Open items mentioned', e.todos, 240);
  return out.join('\n');
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

/**
 * Why an answer cannot stand in for the span, or undefined when it can: empty, missing the summary's sections, or
 * absurdly short for what it replaces.
 */
export function invalidAnswer(text: string, req: SummaryRequest, counter: TokenCounter): string | undefined {
  if (!text) return 'returned an empty summary';
  const missing = LLM_SUMMARY_SECTIONS.filter(
    (title) => !new RegExp(`^#{1,4}\\s*${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'im').test(text),
  );
  if (missing.length > 1) return `left out the summary's sections (${missing.join(', ')})`;
  const tokens = counter.text(text);
  const least = Math.min(300, Math.floor(req.maxTokens / 4), 40 + 2 * req.messages.length);
  if (tokens < least)
    return `returned ${tokens} tokens for ${req.messages.length} messages (at least ${least} expected)`;
  return undefined;
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

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}… [${s.length - n} more chars]` : s;
}

function code(s: string): string {
  return s.includes('`') ? `\`\` ${s} \`\`` : `\`${s}\``;
}
