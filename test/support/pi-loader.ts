/**
 * What pi resumes from a session file, by pi's own code (`@mariozechner/pi-coding-agent`, a dev dependency): the file
 * parsed, migrated and turned into the context as pi's SessionManager does on resume (leaf: the file's last entry),
 * then into the messages pi sends (`convertToLlm`), then into abridge's messages by abridge's pi decoder — with the only
 * text pi adds itself, its summary wrappers, taken off again.
 */
import {
  buildSessionContext,
  convertToLlm,
  migrateSessionEntries,
  parseSessionEntries,
} from '@mariozechner/pi-coding-agent';
import { decodePiMessage } from '../../src/formats/pi.js';
import type { Message } from '../../src/model/types.js';
import { comparable as comparableWith, firstDifference as firstDifferenceWith } from './view-compare.js';

/** pi's wrapper around a summary, read off pi's own `convertToLlm` (not copied: a NUL stands for the summary). */
function wrapperOf(role: 'compactionSummary' | 'branchSummary'): [string, string] {
  const [m] = convertToLlm([{ role, summary: '\u0000', tokensBefore: 0, fromId: 'x', timestamp: 0 } as never]);
  const text = (m as { content: { text: string }[] }).content[0]!.text;
  const [prefix, suffix] = text.split('\u0000') as [string, string];
  return [prefix, suffix];
}

export const PI_WRAPPERS = { compaction: wrapperOf('compactionSummary'), branch: wrapperOf('branchSummary') };

export interface PiResumed {
  /** pi's context messages (`buildSessionContext(...).messages`), as pi keeps them. */
  context: unknown[];
  /** What pi sends (`convertToLlm`), as abridge messages, pi's summary wrappers included. */
  sent: Message[];
  /** The model pi resumes with (the last model_change or assistant message on the path), and the thinking level. */
  model: { provider: string; modelId: string } | null;
  thinkingLevel: string;
}

export function piResume(text: string): PiResumed {
  const entries = parseSessionEntries(text);
  migrateSessionEntries(entries);
  // pi's SessionManager resumes at the last entry of the file (its header aside).
  const leaf = [...entries].reverse().find((e) => (e as { type: string }).type !== 'session') as
    | { id?: string }
    | undefined;
  const ctx = buildSessionContext(entries as never, leaf?.id);
  const sent = convertToLlm(ctx.messages).map((m) => {
    const d = decodePiMessage(m as unknown as Record<string, unknown>);
    if (!d) throw new Error(`pi sent a message abridge cannot decode: ${JSON.stringify(m).slice(0, 200)}`);
    return d;
  });
  return { context: ctx.messages, sent, model: ctx.model, thinkingLevel: ctx.thinkingLevel };
}

const unwrap = (text: string): string => {
  for (const [prefix, suffix] of Object.values(PI_WRAPPERS)) {
    if (text.startsWith(prefix) && text.endsWith(suffix)) return text.slice(prefix.length, text.length - suffix.length);
  }
  return text;
};

/** Messages as the model reads them (see view-compare), pi's summary wrappers taken off. */
export const comparable = (messages: readonly Message[]) => comparableWith(messages, unwrap);
export const firstDifference = (a: readonly Message[], b: readonly Message[]) => firstDifferenceWith(a, b, unwrap);
