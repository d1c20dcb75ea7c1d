import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { ModelCatalog, parseModelsDevCatalog, type ModelPricing } from './catalog.js';
import { readCatalogFile } from './catalog-source.js';
import { requestPrices, usageCost } from './cost.js';

/** Claude Sonnet 4 with its 1M window, as the catalog holds it: long-context rates above 200,000 prompt tokens. */
const SONNET_4: ModelPricing = {
  input: 3,
  output: 15,
  cacheRead: 0.3,
  cacheWrite: 3.75,
  longContext: [{ above: 200_000, input: 6, output: 22.5 }],
};

const usage = (input: number, cacheRead: number, cacheWrite: number, output: number) => ({
  input,
  cacheRead,
  cacheWrite,
  output,
});

function tmpJson(value: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'abridge-cost-')), 'models.json');
  writeFileSync(file, JSON.stringify(value));
  return file;
}

describe('usageCost', () => {
  it('a 150K prompt is billed at the base rates, a 250K prompt wholly at the tier’s (Claude Sonnet 4 above 200K)', () => {
    // 150,000 uncached + 2,000 out: 0.15 M × $3 + 0.002 M × $15.
    expect(usageCost(usage(150_000, 0, 0, 2_000), SONNET_4)).toBeCloseTo(0.45 + 0.03, 10);
    // 250,000 uncached + 2,000 out: every token at $6 / $22.50, not only the 50,000 past the threshold.
    expect(usageCost(usage(250_000, 0, 0, 2_000), SONNET_4)).toBeCloseTo(1.5 + 0.045, 10);
    // Cache reads and writes count toward the threshold, and are billed at the tier's (scaled) cache prices:
    // 10,000 uncached + 230,000 read + 20,000 written = 260,000 > 200,000.
    expect(usageCost(usage(10_000, 230_000, 20_000, 1_000), SONNET_4)).toBeCloseTo(
      0.01 * 6 + 0.23 * 0.6 + 0.02 * 7.5 + 0.001 * 22.5,
      10,
    );
    // Exactly at the threshold is not above it.
    expect(requestPrices(SONNET_4, 200_000).tier).toBeUndefined();
    expect(requestPrices(SONNET_4, 200_001)).toMatchObject({ input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 });
  });

  it('the highest tier the prompt exceeds applies; a tier’s own cache prices win over the scaled ones', () => {
    const p: ModelPricing = {
      input: 1,
      output: 2,
      cacheRead: 0.1,
      longContext: [
        { above: 128_000, input: 2, output: 4, cacheRead: 0.5 },
        { above: 32_000, input: 1.5, output: 3 },
      ],
    };
    expect(requestPrices(p, 32_000)).toEqual({ input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1 });
    expect(requestPrices(p, 100_000)).toMatchObject({
      input: 1.5,
      output: 3,
      cacheRead: expect.closeTo(0.15, 12),
      cacheWrite: 1.5,
    });
    expect(requestPrices(p, 200_000)).toMatchObject({ input: 2, output: 4, cacheRead: 0.5, cacheWrite: 2 });
  });

  it('cache writes: the catalog’s price or 1.25× input for the 5-minute TTL, 2× input for the 1-hour TTL', () => {
    const u = usage(1_000, 0, 100_000, 0);
    // The catalog lists $3.75 (Anthropic's 5-minute price): the same with no TTL and with '5m'.
    expect(usageCost(u, SONNET_4)).toBeCloseTo(0.003 + 0.375, 10);
    expect(usageCost(u, SONNET_4, { cacheTtl: '5m' })).toBeCloseTo(0.003 + 0.375, 10);
    // One hour: 2 × $3 whatever the catalog lists.
    expect(usageCost(u, SONNET_4, { cacheTtl: '1h' })).toBeCloseTo(0.003 + 0.6, 10);
    // No cache-write price listed: '5m' is 1.25× input ($2.50), '1h' 2× ($4), no TTL the input price (OpenAI-style).
    const noWrite: ModelPricing = { input: 2, output: 10, cacheRead: 0.2 };
    expect(usageCost(u, noWrite, { cacheTtl: '5m' })).toBeCloseTo(0.002 + 0.25, 10);
    expect(usageCost(u, noWrite, { cacheTtl: '1h' })).toBeCloseTo(0.002 + 0.4, 10);
    expect(usageCost(u, noWrite)).toBeCloseTo(0.002 + 0.2, 10);
    // Above the tier, the 1-hour write is 2× the tier's input: 250,000 written at $12.
    expect(usageCost(usage(0, 0, 250_000, 0), SONNET_4, { cacheTtl: '1h' })).toBeCloseTo(0.25 * 12, 10);
  });

  it('a model without a cache-read price is billed the input price for cache reads (OpenAI and Gemini style)', () => {
    const p: ModelPricing = { input: 30, output: 180 };
    // 100,000 read + 1,000 uncached + 500 out: (101,000 × $30 + 500 × $180) / 1M.
    expect(usageCost(usage(1_000, 100_000, 0, 500), p)).toBeCloseTo(3.03 + 0.09, 10);
  });

  it('GPT-5.4 above 272,000 prompt tokens: 2× input (cached input included), 1.5× output', () => {
    const gpt54: ModelPricing = {
      input: 2.5,
      output: 15,
      cacheRead: 0.25,
      longContext: [{ above: 272_000, input: 5, output: 22.5 }],
    };
    expect(usageCost(usage(2_000, 270_000, 0, 1_000), gpt54)).toBeCloseTo(0.005 + 0.0675 + 0.015, 10);
    expect(usageCost(usage(2_000, 280_000, 0, 1_000), gpt54)).toBeCloseTo(0.01 + 0.14 + 0.0225, 10);
  });
});

describe('long-context tiers in models.dev-shaped files', () => {
  it('reads cost.context_over_200k (above 200,000) and cost.tiers (any threshold; tiers win when both are given)', () => {
    const [batch] = parseModelsDevCatalog(
      {
        models: {
          a: {
            id: 'a',
            limit: { context: 1_000_000 },
            cost: {
              input: 3,
              output: 15,
              cache_read: 0.3,
              context_over_200k: { input: 6, output: 22.5, cache_read: 0.6, cache_write: 7.5 },
            },
          },
          b: {
            id: 'b',
            limit: { context: 1_050_000 },
            cost: {
              input: 5,
              output: 30,
              tiers: [
                { input: 10, output: 45, cache_read: 1, tier: { type: 'context', size: 272_000 } },
                { input: 99, output: 99, tier: { type: 'batch' } },
              ],
              context_over_200k: { input: 10, output: 45 },
            },
          },
        },
      },
      'models.json',
    );
    expect(batch!.map((e) => e.pricing)).toEqual([
      {
        input: 3,
        output: 15,
        cacheRead: 0.3,
        longContext: [{ above: 200_000, input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 }],
      },
      { input: 5, output: 30, longContext: [{ above: 272_000, input: 10, output: 45, cacheRead: 1 }] },
    ]);
  });

  it('a bad context_over_200k or tier in a user catalog file is an INVALID_CATALOG error naming the file and key', () => {
    const model = (cost: unknown) => ({ anthropic: { models: { m: { id: 'm', limit: { context: 1000 }, cost } } } });
    const cases: [unknown, string][] = [
      [
        { input: 3, output: 15, context_over_200k: 6 },
        'F: anthropic.models["m"].cost.context_over_200k: expected an object of prices per million tokens for prompts above 200,000 tokens (input, output, cache_read, cache_write), got 6',
      ],
      [
        { input: 3, output: 15, context_over_200k: { input: '6', output: 22.5 } },
        'F: anthropic.models["m"].cost.context_over_200k.input: expected a price per million tokens (a number ≥ 0), got "6"',
      ],
      [
        { input: 3, output: 15, context_over_200k: { input: 6 } },
        'F: anthropic.models["m"].cost.context_over_200k.output: expected a price per million tokens (a number ≥ 0), got nothing',
      ],
      [
        { input: 3, output: 15, tiers: { above: 272000 } },
        'F: anthropic.models["m"].cost.tiers: expected an array of tiers ([{"input": …, "output": …, "tier": {"type": "context", "size": tokens}}]), got {"above":272000}',
      ],
      [
        { input: 3, output: 15, tiers: [{ input: 6, output: 9, tier: { type: 'context', size: -5 } }] },
        'F: anthropic.models["m"].cost.tiers[0].tier.size: expected a positive integer (the prompt tokens above which it applies), got -5',
      ],
      [
        { input: 3, output: 15, tiers: [{ input: 6, output: 9 }] },
        'F: anthropic.models["m"].cost.tiers[0].tier: expected an object saying what the tier depends on ({"type": "context", "size": tokens}), got nothing',
      ],
    ];
    for (const [cost, message] of cases) {
      let err: unknown;
      try {
        readCatalogFile(tmpJson(model(cost)), 'F');
      } catch (e) {
        err = e;
      }
      expect(err, message).toBeInstanceOf(AbridgeError);
      expect((err as AbridgeError).code).toBe('INVALID_CATALOG');
      expect((err as AbridgeError).message).toBe(message);
    }
  });
});

describe('the bundled snapshot’s long-context tiers', () => {
  const catalog = new ModelCatalog();
  it('Claude Sonnet 4 (1M context): $6 in / $22.50 out above 200,000 prompt tokens (docs.anthropic.com pricing)', () => {
    for (const id of ['claude-sonnet-4-0', 'claude-sonnet-4-20250514'])
      expect(catalog.lookup(id, { provider: 'anthropic' }).pricing, id).toEqual({
        input: 3,
        output: 15,
        cacheRead: 0.3,
        cacheWrite: 3.75,
        longContext: [{ above: 200_000, input: 6, output: 22.5 }],
      });
  });

  it('GPT-5.4 and GPT-5.4 pro: 2× input, 1.5× output above 272,000 (developers.openai.com model pages)', () => {
    expect(catalog.lookup('gpt-5.4', { provider: 'openai' }).pricing?.longContext).toEqual([
      { above: 272_000, input: 5, output: 22.5 },
    ]);
    expect(catalog.lookup('gpt-5.4-pro', { provider: 'openai' }).pricing?.longContext).toEqual([
      { above: 272_000, input: 60, output: 270 },
    ]);
  });

  it('models whose long-context price was not found published, or that have none, carry no tier', () => {
    for (const id of ['claude-sonnet-4-6', 'claude-opus-4-6', 'claude-haiku-4-5', 'gpt-5.4-mini'])
      expect(catalog.lookup(id).pricing?.longContext, id).toBeUndefined();
  });
});
