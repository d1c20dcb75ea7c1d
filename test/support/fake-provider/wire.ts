/** What the three wire modules share: refusals, the parsed request, deterministic ids, SSE events. */
import { createHash } from 'node:crypto';
import type { Segment, TokenCounter } from './billing.js';
import type { BilledUsage, ConversationMessage, FakeProviderOptions, ModelAnswer, Refusal } from './types.js';

export class RefusalError extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.message);
  }
}

export function invalid(message: string, extra: Partial<Refusal> = {}): RefusalError {
  return new RefusalError({ status: 400, type: 'invalid_request_error', message, ...extra });
}

export interface ParsedRequest {
  model: string;
  stream: boolean;
  /** Requested max output tokens, when the request says. */
  maxOutputTokens?: number;
  segments: Segment[];
  system: string;
  tools: { name: string; inputSchema: unknown }[];
  messages: ConversationMessage[];
  thinkingEnabled: boolean;
}

export interface WireEnv {
  options: FakeProviderOptions;
  counter: TokenCounter;
}

/** The answer with its wire ids, and the bill. */
export interface Emission {
  answer: ModelAnswer;
  calls: { id: string; itemId: string; name: string; input: Record<string, unknown> }[];
  messageId: string;
  /** Deterministic id source for anything else the wire needs. */
  id(prefix: string, k: number, length: number): string;
  usage: BilledUsage;
  created: number;
}

export interface SseEvent {
  event?: string;
  data: unknown;
}

export type WireResponse = { json: unknown } | { events: SseEvent[]; done?: boolean };

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A deterministic id of `length` base-62 characters derived from `seed` (the request body) and a counter. */
export function idFrom(seed: string, prefix: string, k: number, length: number): string {
  let out = '';
  let round = 0;
  while (out.length < length) {
    const bytes = createHash('sha256').update(`${seed}\u0000${prefix}\u0000${k}\u0000${round++}`).digest();
    for (const b of bytes) if (out.length < length) out += ALPHABET[b % 62];
  }
  return prefix + out;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Split a string into chunks of at most `size` characters (for streaming deltas). */
export function chunks(s: string, size: number): string[] {
  if (s.length === 0) return [];
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}
