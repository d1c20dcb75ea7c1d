import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { AbridgeError } from '../errors.js';
import { BUNDLED_SNAPSHOT_PATH, readCatalogFile } from './catalog-source.js';
import {
  ModelCatalog,
  entriesFromModelsDev,
  normalizeModelId,
  parseModelsDevCatalog,
  type CatalogEntry,
} from './catalog.js';
import { DEFAULT_BUDGET_SETTINGS } from './defaults.js';
import type { BudgetSettings } from './types.js';

const settings = (over: Partial<BudgetSettings> = {}): BudgetSettings => ({ ...DEFAULT_BUDGET_SETTINGS, ...over });

function tmpJson(name: string, value: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'abridge-catalog-')), name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return file;
}

function thrown(f: () => unknown): AbridgeError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    return err as AbridgeError;
  }
  throw new Error('expected an AbridgeError, nothing was thrown');
}

/** A small catalog of known numbers, for the rules (the bundled snapshot changes with every update). */
const LINE: CatalogEntry[] = [
  {
    id: 'acme-opus-1',
    contextWindow: 100_000,
    maxOutputTokens: 8_000,
    provider: 'acme',
    pricing: { input: 10, output: 50 },
  },
  {
    id: 'acme-opus-2',
    contextWindow: 200_000,
    maxOutputTokens: 16_000,
    provider: 'acme',
    pricing: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  },
  { id: 'acme-opus-2-20260101', contextWindow: 200_000, maxOutputTokens: 16_000, provider: 'acme' },
  { id: 'acme-opus-3', contextWindow: 500_000, maxOutputTokens: 32_000, provider: 'acme' },
  { id: 'acme-haiku-2', contextWindow: 64_000, maxOutputTokens: 4_000, provider: 'acme' },
];
const GATEWAY: CatalogEntry[] = [
  { id: 'acme/acme-opus-2', contextWindow: 800_000, maxOutputTokens: 16_000, provider: 'router' },
];
const small = (over: Partial<BudgetSettings> = {}) =>
  new ModelCatalog(settings(over), { bundled: false }).addSource(GATEWAY, 'gateway').addSource(LINE, 'acme');

describe('normalizeModelId', () => {
  it.each([
    ['claude-opus-4-1-20250805', 'claude-opus-4-1'],
    ['gpt-4o-2024-08-06', 'gpt-4o'],
    ['anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5'],
    ['openai/gpt-4o', 'gpt-4o'],
    ['models/gemini-2.5-pro', 'gemini-2-5-pro'],
    ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5'],
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 'claude-3-5-sonnet'],
    ['global.anthropic.claude-opus-4-6-v1', 'claude-opus-4-6'],
    ['jp.anthropic.claude-haiku-4-5-20251001-v1:0', 'claude-haiku-4-5'],
    ['meta.llama3-70b-instruct-v1:0', 'llama3-70b-instruct'],
    ['claude-sonnet-4-5@20250929', 'claude-sonnet-4-5'],
    ['projects/p/locations/us-east5/publishers/anthropic/models/claude-opus-4-6@20260205', 'claude-opus-4-6'],
    ['claude-sonnet-4.5', 'claude-sonnet-4-5'],
    ['claude-sonnet-4.6', 'claude-sonnet-4-6'],
    ['gpt-5.3-codex-spark', 'gpt-5-3-codex-spark'],
    ['deepseek-v4-flash', 'deepseek-v4-flash'],
    ['deepseek-v3', 'deepseek-v3'],
    ['claude-sonnet-4-5-20250929[1m]', 'claude-sonnet-4-5[1m]'],
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

describe('ModelCatalog: loading', () => {
  it('reads the bundled snapshot on the first lookup, not at import or construction', async () => {
    vi.resetModules();
    const source = await import('./catalog-source.js');
    const { ModelCatalog: Fresh } = await import('./catalog.js');
    expect(source.bundledSnapshotRead()).toBe(false);
    const c = new Fresh();
    expect(source.bundledSnapshotRead()).toBe(false);
    expect(c.lookup('claude-haiku-4-5').source).toBe('catalog');
    expect(source.bundledSnapshotRead()).toBe(true);
  });
});

describe('ModelCatalog: the bundled snapshot', () => {
  const catalog = new ModelCatalog();

  it('claude-haiku-4-5 is a plain hit: 200,000 window, 64,000 output, $1/$5 with cache prices', () => {
    expect(catalog.lookup('claude-haiku-4-5')).toEqual({
      id: 'claude-haiku-4-5',
      contextWindow: 200_000,
      maxOutputTokens: 64_000,
      family: 'claude',
      source: 'catalog',
      pricing: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
    });
  });

  it('claude-opus-4-6: 1,000,000 window, 128,000 output, priced $5/$25 (not the old $15/$75)', () => {
    expect(catalog.lookup('claude-opus-4-6')).toEqual({
      id: 'claude-opus-4-6',
      contextWindow: 1_000_000,
      maxOutputTokens: 128_000,
      family: 'claude',
      source: 'catalog',
      pricing: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
    });
  });

  it.each([
    ['claude-sonnet-4-6', 1_000_000, 128_000, 3, 15],
    ['claude-sonnet-4-5', 200_000, 64_000, 3, 15],
    ['claude-opus-4-5', 200_000, 64_000, 5, 25],
    ['claude-opus-4-1-20250805', 200_000, 32_000, 15, 75],
    ['claude-haiku-4-5-20251001', 200_000, 64_000, 1, 5],
    ['gpt-4o', 128_000, 16_384, 2.5, 10],
    ['gpt-5', 400_000, 128_000, 1.25, 10],
    ['gpt-5.3-codex', 400_000, 128_000, 1.75, 14],
    ['gpt-5.3-codex-spark', 128_000, 32_000, 1.75, 14],
    ['gpt-5.4', 272_000, 128_000, 2.5, 15],
    ['gpt-4.1', 1_047_576, 32_768, 2, 8],
    ['o3', 200_000, 100_000, 2, 8],
    ['gemini-2.5-pro', 1_048_576, 65_536, 1.25, 10],
    ['gemini-3-flash-preview', 1_048_576, 65_536, 0.5, 3],
    ['deepseek-v4-flash', 1_000_000, 384_000, 0.14, 0.28],
    ['grok-4', 256_000, 64_000, 3, 15],
  ] as const)('%s → window %d, output %d, $%d/$%d', (id, window, output, input, out) => {
    const info = catalog.lookup(id);
    expect(info).toMatchObject({ id, contextWindow: window, maxOutputTokens: output, source: 'catalog' });
    expect(info.matched).toBeUndefined();
    expect(info.note).toBeUndefined();
    expect(info.pricing).toMatchObject({ input, output: out });
  });

  it('the six providers are in, with the snapshot saying where it came from and when', () => {
    const snapshot = JSON.parse(readFileSync(BUNDLED_SNAPSHOT_PATH, 'utf8')) as Record<
      string,
      { models?: Record<string, unknown> }
    > & { $source: { generated: string; from: { package: string; version: string }[] } };
    for (const p of ['anthropic', 'openai', 'google', 'deepseek', 'mistral', 'xai'])
      expect(Object.keys(snapshot[p]?.models ?? {}).length).toBeGreaterThan(0);
    expect(snapshot.$source.generated).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(snapshot.$source.from.length).toBeGreaterThan(0);
    for (const f of snapshot.$source.from) expect(f.package).toMatch(/pi-ai$/);
    const sources = catalog.sources();
    expect(sources).toHaveLength(1);
    expect(sources[0]!.name).toBe('bundled snapshot');
    expect(sources[0]!.detail).toContain(`generated ${snapshot.$source.generated}`);
    expect(sources[0]!.models).toBe(catalog.entries().length);
  });

  it('the snapshot passes the full validation user files get (the bundled read skips it)', () => {
    const batches = parseModelsDevCatalog(JSON.parse(readFileSync(BUNDLED_SNAPSHOT_PATH, 'utf8')), 'snapshot');
    const count = batches.reduce((n, b) => n + b.length, 0);
    expect(count).toBe(catalog.entries().length);
    for (const b of batches) for (const e of b) expect(e.contextWindow).toBeGreaterThan(0);
  });

  it.each([
    ['openai/gpt-4o', 'gpt-4o', 128_000],
    ['anthropic/claude-sonnet-4.5', 'claude-sonnet-4-5', 200_000],
    ['GPT-4o', 'gpt-4o', 128_000],
    ['claude-opus-4.1', 'claude-opus-4-1', 200_000],
    ['claude-sonnet-4.6', 'claude-sonnet-4-6', 1_000_000],
    ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'claude-sonnet-4-5', 200_000],
    ['global.anthropic.claude-opus-4-6-v1', 'claude-opus-4-6', 1_000_000],
    ['claude-opus-4-6@20260205', 'claude-opus-4-6', 1_000_000],
    ['anthropic.claude-3-5-sonnet-20240620-v1:0', 'claude-3-5-sonnet-20240620', 200_000],
    ['models/gemini-2.5-pro', 'gemini-2.5-pro', 1_048_576],
  ] as const)('normalized id %s hits %s', (id, matched, window) => {
    const info = catalog.lookup(id);
    expect(info).toMatchObject({ id, source: 'catalog', matched, contextWindow: window });
    expect(info.note).toBeUndefined();
  });

  it("the transcript's provider picks that provider's entry: OpenRouter's Claude Sonnet 4.5 has the 1M window", () => {
    expect(catalog.lookup('claude-sonnet-4-5', { provider: 'anthropic' })).toMatchObject({
      contextWindow: 200_000,
      source: 'catalog',
    });
    expect(catalog.lookup('anthropic/claude-sonnet-4.5', { provider: 'openrouter' })).toMatchObject({
      contextWindow: 1_000_000,
      source: 'catalog',
    });
    // A provider the catalog does not list changes nothing.
    expect(catalog.lookup('gpt-4o', { provider: 'github-copilot' })).toMatchObject({
      contextWindow: 128_000,
      source: 'catalog',
    });
  });

  it('pricing is absent for an unknown model', () => {
    expect(catalog.lookup('totally-unknown-model').pricing).toBeUndefined();
  });
});

describe('ModelCatalog: configuration overrides', () => {
  it('a model override sets window and output (matched through normalization) and keeps catalog pricing', () => {
    const c = new ModelCatalog(
      settings({ models: { 'claude-opus-4-1': { contextWindow: 1_000_000, maxOutputTokens: 64_000 } } }),
    );
    const info = c.lookup('claude-opus-4-1-20250805');
    expect(info).toMatchObject({
      contextWindow: 1_000_000,
      maxOutputTokens: 64_000,
      source: 'config',
      matched: 'claude-opus-4-1',
      family: 'claude',
    });
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
    const c = new ModelCatalog(
      settings({
        defaultMaxOutputTokens: 12_345,
        models: {
          'my-gateway-model': { contextWindow: 64_000, aliases: ['acme/fast-1', 'fast-1-20250101'], family: 'claude' },
        },
      }),
    );
    for (const id of ['acme/fast-1', 'fast-1-20250101', 'my-gateway-model']) {
      const info = c.lookup(id);
      expect(info).toMatchObject({
        contextWindow: 64_000,
        maxOutputTokens: 12_345,
        source: 'config',
        family: 'claude',
      });
      if (id === 'my-gateway-model') expect(info.matched).toBeUndefined();
      else expect(info.matched).toBe('my-gateway-model');
    }
  });

  it('a [1m] id can be configured on its own, apart from the plain id', () => {
    const c = new ModelCatalog(settings({ models: { 'claude-sonnet-4-5[1m]': { contextWindow: 900_000 } } }));
    expect(c.lookup('claude-sonnet-4-5-20250929[1m]')).toMatchObject({
      contextWindow: 900_000,
      source: 'config',
      matched: 'claude-sonnet-4-5[1m]',
    });
    expect(c.lookup('claude-sonnet-4-5')).toMatchObject({ contextWindow: 200_000, source: 'catalog' });
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
    expect(new ModelCatalog(settings({ model: 'gpt-4o' })).lookup(undefined)).toMatchObject({
      id: 'gpt-4o',
      contextWindow: 128_000,
      source: 'catalog',
    });
  });
});

describe('ModelCatalog: transcript-reported window', () => {
  it('wins over the catalog and says so', () => {
    const info = new ModelCatalog().lookup('gpt-4o', { reportedWindow: 258_400 });
    expect(info).toMatchObject({
      contextWindow: 258_400,
      maxOutputTokens: 16_384,
      source: 'transcript',
      note: 'window reported by the agent in the transcript',
    });
  });

  it('wins over inference and the default too', () => {
    expect(small().lookup('acme-opus-9', { reportedWindow: 1_000_000 })).toMatchObject({
      contextWindow: 1_000_000,
      source: 'transcript',
    });
    expect(new ModelCatalog().lookup('totally-unknown-model', { reportedWindow: 90_000 })).toMatchObject({
      contextWindow: 90_000,
      source: 'transcript',
    });
  });

  it('does not win over a configured window', () => {
    const c = new ModelCatalog(settings({ models: { 'gpt-4o': { contextWindow: 100_000 } } }));
    expect(c.lookup('gpt-4o', { reportedWindow: 258_400 })).toMatchObject({ contextWindow: 100_000, source: 'config' });
  });

  it('a configured output limit still applies alongside a reported window', () => {
    const c = new ModelCatalog(settings({ models: { 'gpt-4o': { maxOutputTokens: 2000 } } }));
    expect(c.lookup('gpt-4o', { reportedWindow: 258_400 })).toMatchObject({
      contextWindow: 258_400,
      maxOutputTokens: 2000,
      source: 'transcript',
    });
  });

  it('a reported window of 0 is ignored', () => {
    expect(new ModelCatalog().lookup('gpt-4o', { reportedWindow: 0 })).toMatchObject({
      contextWindow: 128_000,
      source: 'catalog',
    });
  });
});

describe('ModelCatalog: inference, suffixes, stand-ins and the default', () => {
  it('an unknown newer model of a known line takes the newest model of that line, and the note names the rule', () => {
    const info = small().lookup('acme-opus-9');
    expect(info).toEqual({
      id: 'acme-opus-9',
      contextWindow: 500_000,
      maxOutputTokens: 32_000,
      family: 'other',
      source: 'inferred',
      matched: 'acme-opus-3',
      note: '"acme-opus-9" is not in the catalog; limits of acme-opus-3 assumed, the newest model of the same line (acme opus) (set models["acme-opus-9"] in abridge.config.json to override)',
    });
  });

  it('drops trailing name words until the line matches, and says which', () => {
    const info = small().lookup('acme-haiku-2-turbo');
    expect(info).toMatchObject({ source: 'inferred', matched: 'acme-haiku-2', contextWindow: 64_000 });
    expect(info.note).toContain('ignoring "turbo"');
  });

  it('leaves out words no catalog entry has (a gateway prefix, a fine-tune tag)', () => {
    const info = small().lookup('openai/router-acme-opus-2-uncensored');
    expect(info).toMatchObject({ source: 'inferred', matched: 'acme-opus-2', contextWindow: 200_000 });
    expect(info.note).toBe(
      '"openai/router-acme-opus-2-uncensored" is not in the catalog; limits of acme-opus-2 assumed, the same version of the same line (acme opus 2), ignoring "router", "uncensored" (set models["openai/router-acme-opus-2-uncensored"] in abridge.config.json to override)',
    );
  });

  it('prefers the very version asked for over a newer one when both are of the line', () => {
    expect(new ModelCatalog().lookup('claude-opus-4-6-thinking')).toMatchObject({
      source: 'inferred',
      matched: 'claude-opus-4-6',
      contextWindow: 1_000_000,
    });
  });

  it('on the real catalog: a future Claude Opus takes the newest Opus, with its prices', () => {
    const info = new ModelCatalog().lookup('claude-opus-9');
    expect(info.source).toBe('inferred');
    expect(info.matched).toMatch(/^claude-opus-/);
    expect(info.contextWindow).toBeGreaterThanOrEqual(1_000_000);
    expect(info.pricing).toBeDefined();
    expect(info.note).toContain('the newest model of the same line (claude opus)');
  });

  it('[1m] asks for the 1,000,000-token variant (Claude Code), keeping the rest of the base model', () => {
    const info = new ModelCatalog().lookup('claude-sonnet-4-5-20250929[1m]');
    expect(info).toMatchObject({
      contextWindow: 1_000_000,
      maxOutputTokens: 64_000,
      source: 'inferred',
      matched: 'claude-sonnet-4-5-20250929',
    });
    expect(info.pricing).toMatchObject({ input: 3, output: 15 });
    expect(info.note).toBe(
      "the [1m] suffix asks for the 1,000,000-token variant of claude-sonnet-4-5-20250929 (Claude Code's convention); other limits and prices of claude-sonnet-4-5-20250929",
    );
  });

  it("SWE-agent's replay model is named as such, never a silent default", () => {
    const info = new ModelCatalog().lookup('replay');
    expect(info).toMatchObject({ source: 'inferred', contextWindow: 128_000 });
    expect(info.note).toContain("SWE-agent's replay model");
  });

  it('an unknown model gets the configured default, with a note naming the model and the config keys', () => {
    expect(new ModelCatalog().lookup('totally-unknown-model')).toEqual({
      id: 'totally-unknown-model',
      contextWindow: 128_000,
      maxOutputTokens: 32_000,
      family: 'other',
      source: 'default',
      note: 'unknown model "totally-unknown-model": assuming a 128,000-token window (set models["totally-unknown-model"].contextWindow or defaultContextWindow in abridge.config.json)',
    });
  });

  it('defaultContextWindow and defaultMaxOutputTokens are used for an unknown model', () => {
    const info = new ModelCatalog(settings({ defaultContextWindow: 64_000, defaultMaxOutputTokens: 8_000 })).lookup(
      'acme-xyz',
    );
    expect(info).toMatchObject({ contextWindow: 64_000, maxOutputTokens: 8_000, source: 'default' });
    expect(info.note).toContain('"acme-xyz"');
    expect(info.note).toContain('64,000-token window');
  });

  it('no model at all is "unknown", reported as a default', () => {
    expect(new ModelCatalog().lookup(undefined)).toMatchObject({
      id: 'unknown',
      source: 'default',
      contextWindow: 128_000,
    });
  });

  it('never a zero or non-finite window, and never an unexplained guess, whatever the id', () => {
    const catalog = new ModelCatalog();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.constantFrom(
            'claude',
            'gpt',
            'gemini-',
            'o',
            '-',
            '/',
            '...',
            'claude-99',
            'gpt-99-mega',
            'x[1m]',
            '[1m]',
            'replay',
          ),
        ),
        (id) => {
          const info = catalog.lookup(id);
          expect(Number.isFinite(info.contextWindow) && info.contextWindow > 0).toBe(true);
          expect(Number.isFinite(info.maxOutputTokens) && info.maxOutputTokens > 0).toBe(true);
          if (info.source === 'default' || info.source === 'inferred') expect(info.note).toBeTruthy();
          if (info.source === 'default') expect(info.note).toContain(`"${id}"`);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('ModelCatalog: a billed prompt above the window raises it', () => {
  it('to the largest variant of the same model that covers it (the 1M Claude Sonnet 4.5), and says so', () => {
    const info = new ModelCatalog().lookup('claude-sonnet-4-5', { provider: 'anthropic', observedPrompt: 303_112 });
    expect(info).toMatchObject({
      contextWindow: 1_000_000,
      maxOutputTokens: 64_000,
      source: 'transcript',
      matched: 'anthropic/claude-sonnet-4.5',
    });
    expect(info.note).toBe(
      'a 303,112-token prompt was billed, above the 200,000 window: assuming the 1,000,000-token variant (openrouter: anthropic/claude-sonnet-4.5)',
    );
    expect(info.pricing).toMatchObject({ input: 3, output: 15 });
  });

  it('to a variant in a small catalog too', () => {
    const info = small().lookup('acme-opus-2-20260101', { observedPrompt: 250_000 });
    expect(info).toMatchObject({ contextWindow: 800_000, source: 'transcript', matched: 'acme/acme-opus-2' });
    expect(info.note).toBe(
      'a 250,000-token prompt was billed, above the 200,000 window: assuming the 800,000-token variant (router: acme/acme-opus-2)',
    );
  });

  it("else to the largest window of the model's line that covers it", () => {
    const info = small().lookup('acme-opus-1', { observedPrompt: 300_000 });
    expect(info).toMatchObject({ contextWindow: 500_000, source: 'transcript', matched: 'acme-opus-3' });
    expect(info.note).toBe(
      'a 300,000-token prompt was billed, above the 100,000 window: assuming the 500,000-token window of acme-opus-3, the largest of its line',
    );
  });

  it('else to the prompt billed, saying how to state the window', () => {
    const info = small().lookup('acme-haiku-2', { observedPrompt: 70_123 });
    expect(info).toMatchObject({ contextWindow: 70_123, source: 'transcript' });
    expect(info.note).toBe(
      'a 70,123-token prompt was billed, above the 64,000 window: assuming a window of at least 70,123 tokens, the largest prompt billed (no larger window is known for "acme-haiku-2"; set models["acme-haiku-2"].contextWindow to state it)',
    );
  });

  it('an unknown model keeps the default note and adds the evidence', () => {
    const info = new ModelCatalog().lookup('totally-unknown-model', { observedPrompt: 150_000 });
    expect(info).toMatchObject({ contextWindow: 150_000, source: 'transcript' });
    expect(info.note).toMatch(
      /^unknown model "totally-unknown-model".*; a 150,000-token prompt was billed, above the 128,000 window/,
    );
  });

  it('a prompt within the window changes nothing', () => {
    for (const observedPrompt of [0, 199_999, 200_000]) {
      expect(new ModelCatalog().lookup('claude-sonnet-4-5', { observedPrompt })).toEqual(
        new ModelCatalog().lookup('claude-sonnet-4-5'),
      );
    }
  });

  it('a configured window is kept, with a note of the evidence', () => {
    const c = new ModelCatalog(settings({ models: { 'claude-sonnet-4-5': { contextWindow: 200_000 } } }));
    const info = c.lookup('claude-sonnet-4-5', { observedPrompt: 303_112 });
    expect(info).toMatchObject({ contextWindow: 200_000, source: 'config' });
    expect(info.note).toBe(
      'a 303,112-token prompt was billed, above the 200,000 window (kept: the configuration sets it)',
    );
  });
});

describe('ModelCatalog: sources', () => {
  it('entriesFromModelsDev skips models without a context limit and maps costs', () => {
    const entries = entriesFromModelsDev({
      models: {
        a: {
          id: 'a',
          limit: { context: 1000, output: 100 },
          cost: { input: 1, output: 2, cache_read: 0.1, cache_write: 1.25 },
        },
        b: { id: 'b', limit: { output: 100 } },
        c: { id: 'c', limit: { context: 500 }, cost: { input: 1 } },
      },
    });
    expect(entries).toEqual([
      {
        id: 'a',
        contextWindow: 1000,
        maxOutputTokens: 100,
        pricing: { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25 },
      },
      { id: 'c', contextWindow: 500 },
    ]);
  });

  it('a later source wins and adds new models', () => {
    const c = new ModelCatalog().addSource([
      { id: 'gpt-4o', contextWindow: 999_000, maxOutputTokens: 1000 },
      { id: 'acme-ultra-1', contextWindow: 77_000 },
    ]);
    expect(c.lookup('gpt-4o')).toMatchObject({ contextWindow: 999_000, maxOutputTokens: 1000, source: 'catalog' });
    expect(c.lookup('acme-ultra-1')).toMatchObject({
      contextWindow: 77_000,
      maxOutputTokens: 32_000,
      source: 'catalog',
    });
  });

  const API_JSON = {
    $comment: 'keys starting with $ are not providers',
    anthropic: {
      id: 'anthropic',
      models: {
        'claude-opus-4-6': {
          id: 'claude-opus-4-6',
          limit: { context: 2_000_000, output: 256_000 },
          cost: { input: 4, output: 20, cache_read: 0.4, cache_write: 5 },
        },
        'claude-nova-1': { id: 'claude-nova-1', limit: { context: 3_000_000, output: 100_000 } },
        'no-limits': { id: 'no-limits' },
      },
    },
    acme: { models: { 'acme-1': { id: 'acme-1', limit: { context: 42_000, output: 4_200 } } } },
  };

  it("a whole api.json named in settings.catalog goes over the bundled snapshot; the rest stays the snapshot's", () => {
    const file = tmpJson('api.json', API_JSON);
    const c = new ModelCatalog(settings({ catalog: file }));
    expect(c.lookup('claude-opus-4-6')).toMatchObject({
      contextWindow: 2_000_000,
      maxOutputTokens: 256_000,
      source: 'catalog',
      pricing: { input: 4, output: 20, cacheRead: 0.4, cacheWrite: 5 },
    });
    expect(c.lookup('claude-nova-1')).toMatchObject({ contextWindow: 3_000_000, source: 'catalog' });
    expect(c.lookup('acme-1')).toMatchObject({ contextWindow: 42_000, maxOutputTokens: 4_200, source: 'catalog' });
    expect(c.lookup('claude-haiku-4-5')).toMatchObject({ contextWindow: 200_000, source: 'catalog' });
    expect(c.sources().map((s) => [s.name, s.models])).toEqual([
      ['bundled snapshot', new ModelCatalog().entries().length],
      [file, 3],
    ]);
  });

  it('one provider object works too, and options.catalogFile goes over settings.catalog', () => {
    const api = tmpJson('api.json', API_JSON);
    const one = tmpJson('anthropic.json', {
      id: 'anthropic',
      models: { 'claude-opus-4-6': { id: 'claude-opus-4-6', limit: { context: 1_500_000, output: 1000 } } },
    });
    const c = new ModelCatalog(settings({ catalog: api }), { catalogFile: one });
    expect(c.lookup('claude-opus-4-6')).toMatchObject({ contextWindow: 1_500_000, maxOutputTokens: 1000 });
    expect(c.lookup('claude-nova-1')).toMatchObject({ contextWindow: 3_000_000 });
    expect(new ModelCatalog(settings(), { catalogFile: one, bundled: false }).entries()).toEqual([
      { id: 'claude-opus-4-6', contextWindow: 1_500_000, maxOutputTokens: 1000, provider: 'anthropic' },
    ]);
  });

  it('nothing is read until the first lookup: a catalog with a missing file constructs fine and fails on use', () => {
    const c = new ModelCatalog(settings({ catalog: '/nonexistent/models.json' }));
    const err = thrown(() => c.lookup('gpt-4o'));
    expect(err.code).toBe('FILE_NOT_FOUND');
    expect(err.message).toBe('/nonexistent/models.json: no such model catalog file');
  });

  it.each([
    ['invalid JSON, with line and column', '{\n  "anthropic": {\n    "models": {,\n', /^F:3:16: invalid JSON: /],
    ['an array', '[1, 2]', /^F: expected a models\.dev catalog: .*got an array$/],
    [
      'a provider without models',
      { anthropic: { id: 'anthropic' } },
      /^F: anthropic: expected a provider object with "models"/,
    ],
    ['models that is not an object', { models: [1] }, /^F: models: expected an object of models by id, got \[1\]$/],
    [
      'a bad context limit',
      { x: { models: { m: { id: 'm', limit: { context: '200k' } } } } },
      /^F: x\.models\["m"\]\.limit\.context: expected a positive integer \(tokens\), got "200k"$/,
    ],
    [
      'a bad price',
      { x: { models: { m: { id: 'm', limit: { context: 1000 }, cost: { input: -1, output: 2 } } } } },
      /^F: x\.models\["m"\]\.cost\.input: expected a price per million tokens \(a number ≥ 0\), got -1$/,
    ],
    [
      'no usable model',
      { x: { models: { m: { id: 'm' } } } },
      /^F: no model with a context limit \(limit\.context\) found; expected a models\.dev catalog/,
    ],
  ])('a file with %s is an INVALID_CATALOG error naming it and what is wrong', (_what, content, message) => {
    const file = tmpJson('models.json', content);
    const err = thrown(() => readCatalogFile(file, 'F'));
    expect(err.code).toBe('INVALID_CATALOG');
    expect(err.message).toMatch(message);
  });

  it('every problem of a file is listed, one per line', () => {
    const err = thrown(() =>
      parseModelsDevCatalog(
        { p: { models: { a: { limit: { context: -1 } }, b: { limit: { context: 10, output: 'x' } } } } },
        'models.json',
      ),
    );
    expect(err.message.split('\n')).toEqual([
      'models.json: p.models["a"].limit.context: expected a positive integer (tokens), got -1',
      'models.json: p.models["b"].limit.output: expected a positive integer (tokens), got "x"',
    ]);
  });

  it('a changed file is read again', () => {
    const file = tmpJson('m.json', { models: { m: { id: 'm', limit: { context: 1000 } } } });
    expect(new ModelCatalog(settings({ catalog: file })).lookup('m').contextWindow).toBe(1000);
    writeFileSync(file, JSON.stringify({ models: { m: { id: 'm', limit: { context: 2000000 } } } }));
    expect(new ModelCatalog(settings({ catalog: file })).lookup('m').contextWindow).toBe(2_000_000);
  });
});
