import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ModelCatalog, entriesFromModelsDev, normalizeModelId } from './catalog.js';
import { DEFAULT_BUDGET_SETTINGS } from './defaults.js';
import type { BudgetSettings } from './types.js';

const settings = (over: Partial<BudgetSettings> = {}): BudgetSettings => ({ ...DEFAULT_BUDGET_SETTINGS, ...over });

describe('normalizeModelId', () => {
  it.each([
    ['claude-opus-4-1-20250805', 'claude-opus-4-1'],
    ['gpt-4o-2024-08-06', 'gpt-4o'],
    ['anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5'],
    ['openai/gpt-4o', 'gpt-4o'],
    ['models/gemini-2.5-pro', 'gemini-2-5-pro'],
    ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5'],
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 'claude-3-5-sonnet'],
    ['claude-sonnet-4-5@20250929', 'claude-sonnet-4-5'],
    ['claude-sonnet-4.5', 'claude-sonnet-4-5'],
    ['Claude-3-5-Sonnet-Latest', 'claude-3-5-sonnet'],
    ['gemini-2.5-flash-preview-05-20', 'gemini-2-5-flash'],
    ['  GPT-4o  ', 'gpt-4o'],
  ])('%s → %s', (id, want) => {
    expect(normalizeModelId(id)).toBe(want);
  });

  it('dots and dashes normalize alike', () => {
    expect(normalizeModelId('claude-opus-4.1')).toBe(normalizeModelId('claude-opus-4-1'));
    expect(normalizeModelId('gpt-4.1')).toBe('gpt-4-1');
  });
});

describe('ModelCatalog: catalog hits', () => {
  const catalog = new ModelCatalog();

  it('claude-opus-4-1-20250805 is a plain hit: 200,000 window, 32,000 output, no matched id, no note', () => {
    const info = catalog.lookup('claude-opus-4-1-20250805');
    expect(info).toEqual({
      id: 'claude-opus-4-1-20250805',
      contextWindow: 200_000,
      maxOutputTokens: 32_000,
      family: 'claude',
      source: 'catalog',
      pricing: { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
    });
  });

  it('gpt-4o → 128,000 / 16,384, gpt family, with pricing', () => {
    const info = catalog.lookup('gpt-4o');
    expect(info.contextWindow).toBe(128_000);
    expect(info.maxOutputTokens).toBe(16_384);
    expect(info.family).toBe('gpt');
    expect(info.source).toBe('catalog');
    expect(info.matched).toBeUndefined();
    expect(info.note).toBeUndefined();
    expect(info.pricing).toEqual({ input: 2.5, output: 10, cacheRead: 1.25 });
  });

  it.each([
    ['gemini-2.5-pro', 1_048_576, 65_536, 'gemini'],
    ['o3', 200_000, 100_000, 'gpt'],
    ['gpt-5', 400_000, 128_000, 'gpt'],
    ['gpt-4.1', 1_047_576, 32_768, 'gpt'],
  ] as const)('%s → %d / %d (%s)', (id, window, output, family) => {
    const info = catalog.lookup(id);
    expect(info).toMatchObject({ contextWindow: window, maxOutputTokens: output, family, source: 'catalog' });
    expect(info.pricing).toBeDefined();
  });

  it.each([
    ['openai/gpt-4o', 'gpt-4o', 128_000, 16_384],
    ['GPT-4o', 'gpt-4o', 128_000, 16_384],
    ['gpt-4o-2024-08-06', 'gpt-4o', 128_000, 16_384],
    ['claude-opus-4-1', 'claude-opus-4-1-20250805', 200_000, 32_000],
    ['claude-opus-4.1', 'claude-opus-4-1-20250805', 200_000, 32_000],
    ['anthropic/claude-opus-4-1', 'claude-opus-4-1-20250805', 200_000, 32_000],
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 'claude-3-5-sonnet-20240620', 200_000, 8_192],
    ['claude-3-5-sonnet-latest', 'claude-3-5-sonnet-20240620', 200_000, 8_192],
    ['models/gemini-2.5-pro', 'gemini-2.5-pro', 1_048_576, 65_536],
  ] as const)('normalized id %s hits %s', (id, matched, window, output) => {
    const info = catalog.lookup(id);
    expect(info.source).toBe('catalog');
    expect(info.id).toBe(id);
    expect(info.matched).toBe(matched);
    expect(info.contextWindow).toBe(window);
    expect(info.maxOutputTokens).toBe(output);
    expect(info.note).toBeUndefined();
  });

  it('pricing comes with catalog hits and is absent for an unknown model', () => {
    expect(catalog.lookup('claude-opus-4-1-20250805').pricing).toEqual({ input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 });
    expect(catalog.lookup('openai/gpt-4o').pricing).toEqual({ input: 2.5, output: 10, cacheRead: 1.25 });
    expect(catalog.lookup('totally-unknown-model').pricing).toBeUndefined();
  });
});

describe('ModelCatalog: configuration overrides', () => {
  it('a model override sets window and output (matched through normalization) and keeps catalog pricing', () => {
    const c = new ModelCatalog(settings({ models: { 'claude-opus-4-1': { contextWindow: 1_000_000, maxOutputTokens: 64_000 } } }));
    const info = c.lookup('claude-opus-4-1-20250805');
    expect(info).toMatchObject({ contextWindow: 1_000_000, maxOutputTokens: 64_000, source: 'config', matched: 'claude-opus-4-1', family: 'claude' });
    expect(info.pricing).toEqual({ input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 });
  });

  it('an override of the window only keeps the catalog output limit', () => {
    const c = new ModelCatalog(settings({ models: { 'gpt-4o': { contextWindow: 64_000 } } }));
    const info = c.lookup('gpt-4o');
    expect(info).toMatchObject({ contextWindow: 64_000, maxOutputTokens: 16_384, source: 'config' });
    expect(info.matched).toBeUndefined();
  });

  it('an override of the output only keeps the catalog window and source', () => {
    const c = new ModelCatalog(settings({ models: { 'gpt-4o': { maxOutputTokens: 4096 } } }));
    expect(c.lookup('gpt-4o')).toMatchObject({ contextWindow: 128_000, maxOutputTokens: 4096, source: 'catalog' });
  });

  it('aliases resolve to the override, which names its key; output falls back to defaultMaxOutputTokens', () => {
    const c = new ModelCatalog(settings({ defaultMaxOutputTokens: 12_345, models: { 'my-gateway-model': { contextWindow: 64_000, aliases: ['acme/fast-1', 'fast-1-20250101'], family: 'claude' } } }));
    for (const id of ['acme/fast-1', 'fast-1-20250101', 'my-gateway-model']) {
      const info = c.lookup(id);
      expect(info.contextWindow).toBe(64_000);
      expect(info.maxOutputTokens).toBe(12_345);
      expect(info.source).toBe('config');
      expect(info.family).toBe('claude');
      if (id === 'my-gateway-model') expect(info.matched).toBeUndefined();
      else expect(info.matched).toBe('my-gateway-model');
    }
  });

  it('the contextWindow setting overrides everything: catalog, model override and transcript', () => {
    const c = new ModelCatalog(settings({ contextWindow: 50_000, models: { 'gpt-4o': { contextWindow: 64_000 } } }));
    for (const [id, reported] of [
      ['claude-opus-4-1-20250805', 300_000],
      ['gpt-4o', undefined],
      ['totally-unknown-model', undefined],
      ['claude-opus-4-6', undefined],
    ] as const) {
      const info = c.lookup(id, reported ? { reportedWindow: reported } : {});
      expect(info.contextWindow).toBe(50_000);
      expect(info.source).toBe('config');
      expect(info.note).toBe('contextWindow set in the configuration');
    }
    expect(c.lookup('claude-opus-4-1-20250805').maxOutputTokens).toBe(32_000);
  });

  it('settings.model is the model assumed when none is named', () => {
    expect(new ModelCatalog(settings({ model: 'gpt-4o' })).lookup(undefined)).toMatchObject({ id: 'gpt-4o', contextWindow: 128_000, source: 'catalog' });
  });
});

describe('ModelCatalog: transcript-reported window', () => {
  it('wins over the catalog and says so', () => {
    const info = new ModelCatalog().lookup('gpt-4o', { reportedWindow: 258_400 });
    expect(info).toMatchObject({ contextWindow: 258_400, maxOutputTokens: 16_384, source: 'transcript', note: 'window reported by the agent in the transcript' });
  });

  it('wins over inference and the default too', () => {
    expect(new ModelCatalog().lookup('claude-opus-4-6', { reportedWindow: 1_000_000 })).toMatchObject({ contextWindow: 1_000_000, source: 'transcript' });
    expect(new ModelCatalog().lookup('totally-unknown-model', { reportedWindow: 90_000 })).toMatchObject({ contextWindow: 90_000, source: 'transcript' });
  });

  it('does not win over a configured window', () => {
    const c = new ModelCatalog(settings({ models: { 'gpt-4o': { contextWindow: 100_000 } } }));
    expect(c.lookup('gpt-4o', { reportedWindow: 258_400 })).toMatchObject({ contextWindow: 100_000, source: 'config' });
  });

  it('a configured output limit still applies alongside a reported window', () => {
    const c = new ModelCatalog(settings({ models: { 'gpt-4o': { maxOutputTokens: 2000 } } }));
    expect(c.lookup('gpt-4o', { reportedWindow: 258_400 })).toMatchObject({ contextWindow: 258_400, maxOutputTokens: 2000, source: 'transcript' });
  });

  it('a reported window of 0 is ignored', () => {
    expect(new ModelCatalog().lookup('gpt-4o', { reportedWindow: 0 })).toMatchObject({ contextWindow: 128_000, source: 'catalog' });
  });
});

describe('ModelCatalog: inference and default', () => {
  const catalog = new ModelCatalog();

  it('an unknown newer model of a known line takes the closest model of that line, and says how to override', () => {
    const info = catalog.lookup('claude-opus-4-6');
    expect(info.source).toBe('inferred');
    expect(info.matched).toBe('claude-opus-4-1-20250805');
    expect(info.contextWindow).toBe(200_000);
    expect(info.maxOutputTokens).toBe(32_000);
    expect(info.family).toBe('claude');
    expect(info.note).toBe('"claude-opus-4-6" is not in the catalog; limits of claude-opus-4-1-20250805 assumed (set models["claude-opus-4-6"] in abridge.config.json to override)');
    expect(info.pricing).toEqual({ input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 });
  });

  it('drops trailing name words until the line matches (gpt-5-codex → gpt-5)', () => {
    expect(catalog.lookup('gpt-5-codex')).toMatchObject({ source: 'inferred', matched: 'gpt-5', contextWindow: 400_000, maxOutputTokens: 128_000, family: 'gpt' });
  });

  it('an unknown model gets the configured default, with a note naming the model and the config keys', () => {
    const info = catalog.lookup('totally-unknown-model');
    expect(info).toEqual({
      id: 'totally-unknown-model',
      contextWindow: 128_000,
      maxOutputTokens: 32_000,
      family: 'other',
      source: 'default',
      note: 'unknown model "totally-unknown-model": assuming a 128,000-token window (set models["totally-unknown-model"].contextWindow or defaultContextWindow in abridge.config.json)',
    });
  });

  it('defaultContextWindow and defaultMaxOutputTokens are used for an unknown model', () => {
    const info = new ModelCatalog(settings({ defaultContextWindow: 64_000, defaultMaxOutputTokens: 8_000 })).lookup('acme-xyz');
    expect(info.contextWindow).toBe(64_000);
    expect(info.maxOutputTokens).toBe(8_000);
    expect(info.source).toBe('default');
    expect(info.note).toContain('"acme-xyz"');
    expect(info.note).toContain('64,000-token window');
    expect(info.note).toContain('models["acme-xyz"].contextWindow');
    expect(info.note).toContain('defaultContextWindow');
  });

  it('no model at all is "unknown", reported as a default', () => {
    expect(catalog.lookup(undefined)).toMatchObject({ id: 'unknown', source: 'default', contextWindow: 128_000 });
  });

  it('never a zero or non-finite window, whatever the id', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.constantFrom('claude', 'gpt', 'gemini-', 'o', '-', '/', '...', 'claude-99', 'gpt-99-mega')), (id) => {
        const info = catalog.lookup(id);
        expect(Number.isFinite(info.contextWindow) && info.contextWindow > 0).toBe(true);
        expect(Number.isFinite(info.maxOutputTokens) && info.maxOutputTokens > 0).toBe(true);
        if (info.source === 'default' || info.source === 'inferred') expect(info.note).toContain(`"${id}"`);
      }),
      { numRuns: 300 },
    );
  });
});

describe('ModelCatalog: sources', () => {
  it('entriesFromModelsDev skips models without a context limit and maps costs', () => {
    const entries = entriesFromModelsDev({
      models: {
        a: { id: 'a', limit: { context: 1000, output: 100 }, cost: { input: 1, output: 2, cache_read: 0.1, cache_write: 1.25 } },
        b: { id: 'b', limit: { output: 100 } },
        c: { id: 'c', limit: { context: 500 }, cost: { input: 1 } },
      },
    });
    expect(entries).toEqual([
      { id: 'a', contextWindow: 1000, maxOutputTokens: 100, pricing: { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25 } },
      { id: 'c', contextWindow: 500 },
    ]);
  });

  it('a later source wins and adds new models', () => {
    const c = new ModelCatalog().addSource([
      { id: 'gpt-4o', contextWindow: 999_000, maxOutputTokens: 1000 },
      { id: 'acme-ultra-1', contextWindow: 77_000 },
    ]);
    expect(c.lookup('gpt-4o')).toMatchObject({ contextWindow: 999_000, maxOutputTokens: 1000, source: 'catalog' });
    expect(c.lookup('acme-ultra-1')).toMatchObject({ contextWindow: 77_000, maxOutputTokens: 32_000, source: 'catalog' });
  });
});
