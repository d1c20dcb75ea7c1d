/**
 * What a request's usage cost, from a catalog's prices: the long-context tier its prompt falls in (the whole request at
 * the tier's rates), cache reads and writes at their own prices (and the cache TTL's), output at the output price.
 */
import type { Usage } from '../model/types.js';
import type { LongContextPrices, ModelPricing } from './catalog-source.js';

/** Anthropic's prompt-cache lifetimes: a 5-minute write costs 1.25× the input price, a 1-hour write 2×. */
export type CacheTtl = '5m' | '1h';

export interface UsageCostOptions {
  /**
   * The lifetime the cache writes were made with. `'5m'`: the catalog's cache-write price, else 1.25× the input price;
   * `'1h'`: 2× the input price (catalogs list the 5-minute price). Unset: the catalog's cache-write price, else the
   * input price — a provider that lists no cache-write price bills the tokens it caches as input (OpenAI, Gemini).
   */
  cacheTtl?: CacheTtl;
}

/** The rates (USD per million tokens) a request is billed at, every one resolved. */
export interface RequestPrices {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** The long-context tier applied, when the prompt is above one. */
  tier?: LongContextPrices;
}

/** The tier a prompt of this many tokens falls in: the highest one whose threshold it exceeds. */
function tierFor(pricing: ModelPricing, prompt: number): LongContextPrices | undefined {
  let hit: LongContextPrices | undefined;
  for (const t of pricing.longContext ?? []) if (prompt > t.above && (!hit || t.above > hit.above)) hit = t;
  return hit;
}

/**
 * The rates of a request whose prompt (input + cache read + cache write) is `prompt` tokens. Above a long-context
 * threshold, every rate is the tier's; a cache price the tier does not list is the base one scaled as the input price
 * is (Anthropic: "prompt caching multipliers apply on top of long context pricing"; OpenAI: cached input is input).
 */
export function requestPrices(pricing: ModelPricing, prompt: number, options: UsageCostOptions = {}): RequestPrices {
  const tier = tierFor(pricing, prompt);
  const p = tier ?? pricing;
  const scaled = (base: number | undefined) =>
    tier && base !== undefined && pricing.input > 0 ? (base * tier.input) / pricing.input : undefined;
  const listedWrite = p.cacheWrite ?? scaled(pricing.cacheWrite);
  const out: RequestPrices = {
    input: p.input,
    output: p.output,
    cacheRead: p.cacheRead ?? scaled(pricing.cacheRead) ?? p.input,
    cacheWrite:
      options.cacheTtl === '1h' ? 2 * p.input : (listedWrite ?? (options.cacheTtl === '5m' ? 1.25 * p.input : p.input)),
  };
  if (tier) out.tier = tier;
  return out;
}

/**
 * USD a request's usage cost: uncached input, cache reads, cache writes and output, each at its price, the whole
 * request at a long-context tier's rates when its prompt (input + cache read + cache write) is above the tier's
 * threshold. `Usage.reasoning` is not added: providers count it within `output`.
 */
export function usageCost(
  usage: Pick<Usage, 'input' | 'output' | 'cacheRead' | 'cacheWrite'>,
  pricing: ModelPricing,
  options: UsageCostOptions = {},
): number {
  const r = requestPrices(pricing, usage.input + usage.cacheRead + usage.cacheWrite, options);
  return (
    (usage.input * r.input +
      usage.cacheRead * r.cacheRead +
      usage.cacheWrite * r.cacheWrite +
      usage.output * r.output) /
    1e6
  );
}
