/**
 * The fake provider's bill: o200k counts (gpt-tokenizer, independent of abridge's counting) of a canonical rendering of
 * the request, scaled by a provider ratio, plus fixed overheads per message, block and tool pair; and the providers'
 * prompt caching, simulated over the same rendering.
 *
 * A request is rendered as a sequence of segments (one per tool definition, system block, message content block) in
 * the order the provider caches them (tools, system, messages). A prefix is identified by a hash chained over the
 * segments' canonical text, so "identical prefix" means byte-identical content up to a block boundary.
 */
import { createHash } from 'node:crypto';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

export interface Segment {
  /** Canonical text of the block: identity for caching (includes everything that changes what the model reads). */
  key: string;
  /** Billed tokens of the block (scaled text + overheads). */
  tokens: number;
  /** An Anthropic `cache_control` breakpoint on this block. */
  breakpoint?: boolean;
}

export function o200k(text: string): number {
  return text.length === 0 ? 0 : countTokens(text);
}

/** A counter for one request: o200k × ratio, rounded per text so that prefixes sum consistently. */
export class TokenCounter {
  constructor(readonly ratio: number) {}
  text(s: string): number {
    return Math.round(o200k(s) * this.ratio);
  }
  json(v: unknown): number {
    return this.text(JSON.stringify(v ?? {}));
  }
}

/** Cumulative tokens and chained prefix hashes at every segment boundary (index i = after segment i). */
export function prefixes(segments: Segment[]): { hashes: string[]; cumulative: number[]; total: number } {
  const hashes: string[] = [];
  const cumulative: number[] = [];
  let h = '';
  let sum = 0;
  for (const s of segments) {
    h = createHash('sha256').update(h).update('\u0000').update(s.key).digest('hex');
    sum += s.tokens;
    hashes.push(h);
    cumulative.push(sum);
  }
  return { hashes, cumulative, total: sum };
}

export interface CacheOutcome {
  total: number;
  read: number;
  write: number;
  uncached: number;
  /** Record this request's cache entries (call only for an accepted request). */
  commit(): void;
}

/**
 * Anthropic prompt caching: entries are written at `cache_control` breakpoints (when the prefix there reaches the
 * minimum cacheable length); a later request reads the longest written entry found at a breakpoint or up to 20 blocks
 * before it (the documented lookback); what lies between the read and the last breakpoint is written.
 */
export class AnthropicCache {
  private readonly entries = new Set<string>();
  constructor(private readonly minCacheable: number) {}

  evaluate(segments: Segment[]): CacheOutcome {
    const { hashes, cumulative, total } = prefixes(segments);
    const breakpoints = segments.flatMap((s, i) => (s.breakpoint ? [i] : []));
    let read = 0;
    for (const bp of breakpoints) {
      for (let j = bp; j >= 0 && j >= bp - 19; j--) {
        if (this.entries.has(hashes[j]!)) {
          read = Math.max(read, cumulative[j]!);
          break;
        }
      }
    }
    const last = breakpoints.at(-1);
    const lastPrefix = last === undefined ? 0 : cumulative[last]!;
    const write = last !== undefined && lastPrefix >= this.minCacheable ? Math.max(0, lastPrefix - read) : 0;
    const writable = breakpoints.filter((bp) => cumulative[bp]! >= this.minCacheable).map((bp) => hashes[bp]!);
    return {
      total,
      read,
      write,
      uncached: total - read - write,
      commit: () => {
        for (const h of writable) this.entries.add(h);
      },
    };
  }
}

/**
 * OpenAI automatic prefix caching: prompts of 1,024 tokens or more; the cached part is the longest prefix identical to
 * an earlier request's, counted in 128-token steps above 1,024.
 */
export class OpenAICache {
  private readonly entries = new Set<string>();

  evaluate(segments: Segment[]): CacheOutcome {
    const { hashes, cumulative, total } = prefixes(segments);
    let common = 0;
    for (let j = hashes.length - 1; j >= 0; j--) {
      if (this.entries.has(hashes[j]!)) {
        common = cumulative[j]!;
        break;
      }
    }
    const read = total >= 1024 && common >= 1024 ? 1024 + Math.floor((common - 1024) / 128) * 128 : 0;
    return {
      total,
      read,
      write: 0,
      uncached: total - read,
      commit: () => {
        if (total < 1024) return;
        for (const h of hashes) this.entries.add(h);
      },
    };
  }
}
