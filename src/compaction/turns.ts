import type { Message } from '../model/types.js';
import type { ViewItem } from '../model/view.js';

/**
 * The atoms of compaction: a person's message (a user turn), or one agent step — an assistant message with the tool
 * results that answer it. Nothing ever splits a step, so a call never loses its result.
 */
export interface Unit {
  kind: 'system' | 'user' | 'step' | 'summary';
  /** View positions [start, end). */
  start: number;
  end: number;
}

export function isHumanUser(m: Message): boolean {
  return m.role === 'user' && !m.synthetic && !m.parts.some((p) => p.type === 'compaction');
}

export function isSummary(m: Message): boolean {
  return m.parts.some((p) => p.type === 'compaction');
}

/**
 * Splits a view into units. Tool messages join the step before them, and so do assistant messages of the same response
 * (Claude Code writes a response as one record per content block: its thinking, text and calls are one step, and
 * Claude Code drops a thinking block left alone when the rest of its response is archived); other messages stand alone.
 */
export function unitsOf(view: readonly ViewItem[]): Unit[] {
  const units: Unit[] = [];
  for (let i = 0; i < view.length; i++) {
    const m = view[i]!.message;
    const last = units[units.length - 1];
    const sameResponse = m.role === 'assistant' && m.responseId !== undefined && last?.kind === 'step' && view.slice(last.start, last.end).some((v) => v.message.role === 'assistant' && v.message.responseId === m.responseId);
    if ((m.role === 'tool' || sameResponse) && last?.kind === 'step') {
      last.end = i + 1;
      continue;
    }
    const kind: Unit['kind'] = isSummary(m) ? 'summary' : m.role === 'system' ? 'system' : m.role === 'assistant' || m.role === 'tool' ? 'step' : 'user';
    units.push({ kind, start: i, end: i + 1 });
  }
  return units;
}

const INSTRUCTION = /\b(don't|do not|never|always|must|should(n't)? |make sure|instead|only|please|stop|keep|use|avoid|remember|important|constraint|require)/i;
const CONCLUSION = /\b(done|fixed|found|root cause|the (issue|problem|bug) (is|was)|conclusion|works now|passes|resolved|decided|decision|summary|in short|result)/i;

function text(m: Message): string {
  return m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

/**
 * How much a unit is worth keeping verbatim, 0 (noise) to ~10: people's words and instructions most, conclusions
 * next, bare tool-call chains least; newer units a little more than older ones.
 */
export function scoreUnit(view: readonly ViewItem[], u: Unit, position: number, of: number): number {
  const first = view[u.start]!.message;
  let score = 0;
  if (u.kind === 'user') {
    score = 6;
    if (INSTRUCTION.test(text(first))) score += 3;
  } else if (u.kind === 'summary') score = 8;
  else if (u.kind === 'system') score = 10;
  else {
    const said = text(first).trim();
    if (said.length === 0) score = 1; // a pure tool-call chain
    else score = CONCLUSION.test(said) ? 4 : 2;
    // Failing commands and their errors are evidence later steps build on.
    for (let i = u.start + 1; i < u.end; i++) if (view[i]!.message.parts.some((p) => p.type === 'tool-result' && p.isError)) score += 0.5;
  }
  return score + (of > 1 ? position / (of - 1) : 0);
}
