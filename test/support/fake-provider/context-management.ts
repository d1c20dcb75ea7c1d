/**
 * Anthropic context editing (`context_management.edits`, beta `context-management-2025-06-27`), applied server-side
 * before the prompt is billed, as documented at https://platform.claude.com/docs/en/build-with-claude/context-editing
 * and typed in `@anthropic-ai/sdk` (`BetaClearToolUses20250919Edit`, `BetaClearThinking20251015Edit`,
 * `BetaContextManagementResponse`, `BetaCountTokensContextManagementResponse`):
 *
 * - `clear_tool_uses_20250919`: when the prompt reaches `trigger` (default 100,000 input tokens; or a number of tool
 *   uses), the oldest tool results are replaced by a placeholder text, keeping the last `keep` tool uses (default 3) and
 *   those of `exclude_tools`; `clear_tool_inputs` (true, or a list of tool names) also empties the calls' inputs. With
 *   `clear_at_least`, nothing is cleared unless at least that many input tokens go.
 * - `clear_thinking_20251015`: thinking blocks of the last `keep` assistant turns are kept (default 1; `"all"` keeps
 *   every one), older ones are dropped. Must come first when combined with other edits.
 *
 * - `compact_20260112` (beta `compact-2026-01-12`, https://platform.claude.com/docs/en/build-with-claude/compaction):
 *   when the prompt (after the clearings) reaches `trigger` (default 150,000, at least 50,000 input tokens), the
 *   conversation is summarized (a deterministic scripted text) into a `compaction` block that opens the response; the
 *   answer is then sampled from tools + system + that block, unless `pause_after_compaction` (stop_reason
 *   `compaction`, nothing after the block). A compaction block sent back makes the parser drop everything before it.
 *
 * The edited prompt is what is billed (and cached: an edited block changes the prefix from there on). The client keeps
 * its full history; the response reports `context_management.applied_edits` (clearings only: the SDK's
 * `BetaContextManagementResponse` has no compaction entry).
 */
import { parseAnthropic, type Parsed } from './anthropic.js';
import { invalid, isRecord, type WireEnv } from './wire.js';

export const CONTEXT_MANAGEMENT_BETA = 'context-management-2025-06-27';
export const COMPACTION_BETA = 'compact-2026-01-12';
/** What replaces a cleared tool result (the docs say "placeholder text", without quoting it: this text is the fake's). */
export const CLEARED_TOOL_RESULT = '[Tool result cleared to save context]';

const EDIT_KEYS: Record<string, string[]> = {
  clear_tool_uses_20250919: ['type', 'trigger', 'keep', 'clear_at_least', 'exclude_tools', 'clear_tool_inputs'],
  clear_thinking_20251015: ['type', 'keep'],
  compact_20260112: ['type', 'trigger', 'pause_after_compaction', 'instructions'],
};
const EDIT_BETA: Record<string, string> = {
  clear_tool_uses_20250919: CONTEXT_MANAGEMENT_BETA,
  clear_thinking_20251015: CONTEXT_MANAGEMENT_BETA,
  compact_20260112: COMPACTION_BETA,
};

type Edit =
  | {
      type: 'clear_tool_uses_20250919';
      trigger: { type: 'input_tokens' | 'tool_uses'; value: number };
      keep: number;
      clearAtLeast?: number;
      excludeTools: string[];
      clearToolInputs: boolean | string[];
    }
  | { type: 'clear_thinking_20251015'; keep: number | 'all' }
  | { type: 'compact_20260112'; trigger: number; pause: boolean };

export interface EditedRequest {
  parsed: Parsed;
  /** Prompt tokens of the request as sent, before any edit (count_tokens' `original_input_tokens`). */
  originalTokens?: number;
}

function tagError(at: string, type: unknown, tags: string[]): Error {
  return invalid(
    `${at}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${tags
      .map((t) => `'${t}'`)
      .join(', ')}`,
  );
}

function intValue(v: Record<string, unknown>, at: string, min: number): number {
  if (v.value === undefined) throw invalid(`${at}.value: Field required`);
  if (!Number.isInteger(v.value)) throw invalid(`${at}.value: Input should be a valid integer`);
  if ((v.value as number) < min) throw invalid(`${at}.value: Input should be greater than or equal to ${min}`);
  return v.value as number;
}

/** A `{type, value}` object whose type is one of `tags` (each with its own minimum value). */
function counted<T extends string>(v: unknown, at: string, mins: Record<T, number>): { type: T; value: number } {
  if (!isRecord(v)) throw invalid(`${at}: Input should be a valid dictionary or object to extract fields from`);
  const tags = Object.keys(mins) as T[];
  if (!tags.includes(v.type as T)) throw tagError(at, v.type, tags);
  const type = v.type as T;
  for (const k of Object.keys(v))
    if (k !== 'type' && k !== 'value') throw invalid(`${at}.${type}.${k}: Extra inputs are not permitted`);
  return { type, value: intValue(v, `${at}.${type}`, mins[type]) };
}

/** Validate `context_management` (the request already passed the beta check). */
export function parseEdits(cm: unknown, betas: string[] = [CONTEXT_MANAGEMENT_BETA, COMPACTION_BETA]): Edit[] {
  const tags = Object.keys(EDIT_KEYS).filter((t) => betas.includes(EDIT_BETA[t]!));
  if (!isRecord(cm))
    throw invalid('context_management: Input should be a valid dictionary or object to extract fields from');
  for (const k of Object.keys(cm))
    if (k !== 'edits') throw invalid(`context_management.${k}: Extra inputs are not permitted`);
  if (cm.edits === undefined || cm.edits === null) return [];
  if (!Array.isArray(cm.edits)) throw invalid('context_management.edits: Input should be a valid list');
  const edits = cm.edits.map((e, i): Edit => {
    const at = `context_management.edits.${i}`;
    if (!isRecord(e)) throw invalid(`${at}: Input should be a valid dictionary or object to extract fields from`);
    if (!tags.includes(String(e.type))) throw tagError(at, e.type, tags);
    const allowed = EDIT_KEYS[String(e.type)]!;
    const here = `${at}.${String(e.type)}`;
    for (const k of Object.keys(e))
      if (!allowed.includes(k)) throw invalid(`${here}.${k}: Extra inputs are not permitted`);
    if (e.type === 'clear_thinking_20251015') {
      let keep: number | 'all' = 1;
      if (e.keep === 'all') keep = 'all';
      else if (e.keep !== undefined) {
        const k = counted(e.keep, `${here}.keep`, { thinking_turns: 1, all: 0 } as Record<
          'thinking_turns' | 'all',
          number
        >);
        keep = k.type === 'all' ? 'all' : k.value;
      }
      return { type: 'clear_thinking_20251015', keep };
    }
    if (e.type === 'compact_20260112') {
      // Default 150,000 input tokens, at least 50,000 (the compaction docs' parameters).
      const trigger =
        e.trigger === undefined || e.trigger === null
          ? 150_000
          : counted(e.trigger, `${here}.trigger`, { input_tokens: 50_000 }).value;
      if (e.pause_after_compaction !== undefined && typeof e.pause_after_compaction !== 'boolean')
        throw invalid(`${here}.pause_after_compaction: Input should be a valid boolean`);
      if (e.instructions !== undefined && e.instructions !== null && typeof e.instructions !== 'string')
        throw invalid(`${here}.instructions: Input should be a valid string`);
      return { type: 'compact_20260112', trigger, pause: e.pause_after_compaction === true };
    }
    const trigger =
      e.trigger === undefined || e.trigger === null
        ? { type: 'input_tokens' as const, value: 100_000 }
        : counted(e.trigger, `${here}.trigger`, { input_tokens: 1, tool_uses: 1 });
    const keep = e.keep === undefined || e.keep === null ? 3 : counted(e.keep, `${here}.keep`, { tool_uses: 0 }).value;
    const clearAtLeast =
      e.clear_at_least === undefined || e.clear_at_least === null
        ? undefined
        : counted(e.clear_at_least, `${here}.clear_at_least`, { input_tokens: 0 }).value;
    let excludeTools: string[] = [];
    if (e.exclude_tools !== undefined && e.exclude_tools !== null) {
      if (!Array.isArray(e.exclude_tools)) throw invalid(`${here}.exclude_tools: Input should be a valid list`);
      e.exclude_tools.forEach((t, j) => {
        if (typeof t !== 'string') throw invalid(`${here}.exclude_tools.${j}: Input should be a valid string`);
      });
      excludeTools = e.exclude_tools as string[];
    }
    let clearToolInputs: boolean | string[] = false;
    if (e.clear_tool_inputs !== undefined && e.clear_tool_inputs !== null) {
      if (typeof e.clear_tool_inputs === 'boolean') clearToolInputs = e.clear_tool_inputs;
      else if (Array.isArray(e.clear_tool_inputs) && e.clear_tool_inputs.every((t) => typeof t === 'string'))
        clearToolInputs = e.clear_tool_inputs as string[];
      else throw invalid(`${here}.clear_tool_inputs: Input should be a valid boolean or a valid list of strings`);
    }
    return {
      type: 'clear_tool_uses_20250919',
      trigger,
      keep,
      ...(clearAtLeast !== undefined ? { clearAtLeast } : {}),
      excludeTools,
      clearToolInputs,
    };
  });
  const thinkingAt = edits.findIndex((e) => e.type === 'clear_thinking_20251015');
  if (thinkingAt > 0) {
    throw invalid(
      'context_management.edits: `clear_thinking_20251015` must be the first edit in `edits` when combined with other edits',
    );
  }
  return edits;
}

function hasBeta(headers: Record<string, string>, beta: string): boolean {
  return (headers['anthropic-beta'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .includes(beta);
}

const total = (p: Parsed) => p.segments.reduce((s, x) => s + x.tokens, 0);

/** Assistant-message indices grouped by assistant turn (a turn ends at a user message that is not only tool results). */
function assistantTurns(messages: Record<string, unknown>[]): number[][] {
  const turns: number[][] = [];
  let open = false;
  messages.forEach((m, i) => {
    if (m.role === 'assistant') {
      if (!open) turns.push([]);
      turns.at(-1)!.push(i);
      open = true;
    } else {
      const blocks = Array.isArray(m.content) ? m.content : [];
      const onlyResults = blocks.length > 0 && blocks.every((b) => isRecord(b) && b.type === 'tool_result');
      if (!onlyResults) open = false;
    }
  });
  return turns;
}

function hasThinking(m: Record<string, unknown>): boolean {
  return (
    Array.isArray(m.content) &&
    m.content.some((b) => isRecord(b) && (b.type === 'thinking' || b.type === 'redacted_thinking'))
  );
}

/** The compaction block as the response carries it (and a later request sends it back). */
export function compactionBlock(summary: string): Record<string, unknown> {
  return { type: 'compaction', content: summary, encrypted_content: null };
}
/** A compaction block sent back first in its message: block + message overheads, as the parser bills it. */
const COMPACTION_BLOCK_OVERHEAD = 2 + 4;

/** The scripted summary: deterministic, naming the task and the latest request. */
function summarize(p: Parsed): string {
  const texts = p.messages
    .filter((m) => m.role === 'user')
    .flatMap((m) => m.parts.flatMap((x) => (x.kind === 'text' ? [x.text] : [])));
  const calls = p.messages.flatMap((m) => m.parts.filter((x) => x.kind === 'tool_call')).length;
  const clip = (t: string | undefined) => (t ?? '').replace(/\s+/g, ' ').slice(0, 200);
  return `<summary>Conversation of ${p.messages.length} messages and ${calls} tool calls. Task: ${clip(texts[0])}. Latest request: ${clip(texts.at(-1))}.</summary>`;
}

/**
 * Parse an Anthropic request, applying its `context_management.edits`. Without `context_management` this is
 * `parseAnthropic`; with it, the beta header is required and the parsed request is the edited one, carrying
 * `appliedEdits`.
 */
export function parseAnthropicEdited(
  body: Record<string, unknown>,
  headers: Record<string, string>,
  env: WireEnv,
  countOnly = false,
): EditedRequest {
  const cm = body.context_management;
  const compactionBlocks = hasBeta(headers, COMPACTION_BETA);
  if (cm === undefined)
    return { parsed: parseAnthropic(body, headers, env, countOnly, { compaction: compactionBlocks }) };
  const betas = [CONTEXT_MANAGEMENT_BETA, COMPACTION_BETA].filter((b) => hasBeta(headers, b));
  if (betas.length === 0) {
    // Without a beta the field is not part of the request schema.
    throw invalid('context_management: Extra inputs are not permitted');
  }
  const edits = cm === null ? [] : parseEdits(cm, betas);
  const messages = (body.messages as Record<string, unknown>[] | undefined) ?? [];
  // Validate the request as sent (refusals first), then edit a copy.
  const thinkingEdit = edits.find((e) => e.type === 'clear_thinking_20251015');
  const allThinking = thinkingEdit
    ? new Set(messages.flatMap((m, i) => (isRecord(m) && m.role === 'assistant' ? [i] : [])))
    : undefined;
  let parsed = parseAnthropic(body, headers, env, countOnly, {
    compaction: compactionBlocks,
    ...(allThinking ? { keepThinkingIn: allThinking } : {}),
  });
  const originalTokens = total(parsed);
  let tokens = originalTokens;
  const applied: Record<string, unknown>[] = [];
  let keepThinkingIn = allThinking;
  let edited: Record<string, unknown>[] = structuredClone(messages);
  const reparse = (msgs: Record<string, unknown>[], keep: ReadonlySet<number> | undefined) =>
    parseAnthropic({ ...body, messages: msgs }, headers, env, countOnly, {
      compaction: compactionBlocks,
      ...(keep ? { keepThinkingIn: keep } : {}),
    });

  for (const edit of edits) {
    if (edit.type === 'clear_thinking_20251015') {
      const turns = assistantTurns(edited).filter((t) => t.some((i) => hasThinking(edited[i]!)));
      const kept = edit.keep === 'all' ? turns : turns.slice(Math.max(0, turns.length - edit.keep));
      const cleared = turns.length - kept.length;
      keepThinkingIn = new Set(kept.flat());
      if (cleared === 0) continue;
      const next = reparse(edited, keepThinkingIn);
      applied.push({ type: edit.type, cleared_thinking_turns: cleared, cleared_input_tokens: tokens - total(next) });
      parsed = next;
      tokens = total(next);
      continue;
    }
    if (edit.type === 'compact_20260112') {
      // Compaction is not an applied edit (applied_edits lists clearings only): the response opens with the block.
      if (countOnly || tokens < edit.trigger) continue;
      const summary = summarize(parsed);
      const c = env.counter;
      parsed.compaction = { summary, pause: edit.pause, inputTokens: tokens, outputTokens: c.text(summary) };
      // What the model reads after compacting: tools and system, then the block (as a later request sends it back).
      parsed.segments = [
        ...parsed.segments.slice(0, parsed.messageStart),
        {
          key: `assistant|${JSON.stringify(compactionBlock(summary))}`,
          tokens: c.text(summary) + COMPACTION_BLOCK_OVERHEAD,
        },
      ];
      tokens = total(parsed);
      continue;
    }
    const uses: { message: number; block: number; id: string; name: string }[] = [];
    edited.forEach((m, i) => {
      if (m.role !== 'assistant' || !Array.isArray(m.content)) return;
      m.content.forEach((b, j) => {
        if (isRecord(b) && b.type === 'tool_use')
          uses.push({ message: i, block: j, id: String(b.id), name: String(b.name) });
      });
    });
    const triggered =
      edit.trigger.type === 'input_tokens' ? tokens >= edit.trigger.value : uses.length >= edit.trigger.value;
    if (!triggered) continue;
    const candidates = uses
      .slice(0, Math.max(0, uses.length - edit.keep))
      .filter((u) => !edit.excludeTools.includes(u.name));
    if (candidates.length === 0) continue;
    const attempt: Record<string, unknown>[] = structuredClone(edited);
    const ids = new Set(candidates.map((u) => u.id));
    for (const u of candidates) {
      const clearInput =
        edit.clearToolInputs === true || (Array.isArray(edit.clearToolInputs) && edit.clearToolInputs.includes(u.name));
      if (clearInput) (attempt[u.message]!.content as Record<string, unknown>[])[u.block]!.input = {};
    }
    for (const m of attempt) {
      if (m.role !== 'user' || !Array.isArray(m.content)) continue;
      for (const b of m.content) {
        if (isRecord(b) && b.type === 'tool_result' && ids.has(String(b.tool_use_id))) b.content = CLEARED_TOOL_RESULT;
      }
    }
    const next = reparse(attempt, keepThinkingIn);
    const cleared = tokens - total(next);
    if (edit.clearAtLeast !== undefined && cleared < edit.clearAtLeast) continue;
    applied.push({ type: edit.type, cleared_tool_uses: candidates.length, cleared_input_tokens: cleared });
    edited = attempt;
    parsed = next;
    tokens = total(next);
  }
  parsed.appliedEdits = applied;
  return { parsed, originalTokens };
}
