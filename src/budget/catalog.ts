import { bracketSuffix } from '../model/text.js';
import { familyOf, type ProviderFamily } from '../tokens/family.js';
import {
  bundledSource,
  readCatalogFile,
  type CatalogEntry,
  type CatalogSource,
  type ModelPricing,
} from './catalog-source.js';
import { DEFAULT_BUDGET_SETTINGS } from './defaults.js';
import type { BudgetSettings, ModelOverride } from './types.js';

export {
  entriesFromModelsDev,
  parseModelsDevCatalog,
  type CatalogEntry,
  type CatalogSource,
  type LongContextPrices,
  type ModelPricing,
  type TokenPrices,
} from './catalog-source.js';

export interface ModelInfo {
  /** The id asked for. */
  id: string;
  contextWindow: number;
  maxOutputTokens: number;
  family: ProviderFamily;
  /**
   * Where the limits came from: the user's `config`; the `transcript` (an agent that reported its window, or a billed
   * prompt larger than the window assumed); the `catalog` (the bundled snapshot, a catalog file, or entries added with
   * `addSource`); `inferred` by a rule the note names (the closest model of the same line, a `[1m]` suffix, a harness's
   * stand-in model); or the configured `default` for a model nobody knows.
   */
  source: 'config' | 'transcript' | 'catalog' | 'inferred' | 'default';
  /** The catalog entry used, when it is not the id asked for. */
  matched?: string;
  /** For people: why these numbers, when they are not a plain catalog hit. */
  note?: string;
  pricing?: ModelPricing;
}

export interface LookupOptions {
  /** The provider the transcript names (`anthropic`, `openrouter`…): its own entry for the model wins when it has one. */
  provider?: string;
  /** The window the agent reported (Codex): the truth for that session, unless the configuration says otherwise. */
  reportedWindow?: number;
  /**
   * The largest prompt (input + cache read + cache write) the provider billed for this model in the session: the
   * window is at least that, so a smaller one assumed is raised (to the largest window known for the model, else to it).
   */
  observedPrompt?: number;
}

export interface ModelCatalogOptions {
  /** A models.dev-shaped file read over the bundled snapshot (and over `settings.catalog`). */
  catalogFile?: string;
  /** Leave the bundled snapshot out (default: in). */
  bundled?: boolean;
}

/** A model id reduced to what identifies it: no provider prefix, date stamp, `-latest`/`-preview`, dots as dashes; a `[1m]` suffix kept. */
export function normalizeModelId(id: string): string {
  let s = id.trim().toLowerCase();
  const suffix = bracketSuffix(s); // Claude Code's claude-sonnet-4-5[1m]
  s = s.slice(0, s.length - suffix.length);
  s = s.slice(s.lastIndexOf('/') + 1); // anthropic/claude-…, models/gemini-…, publishers/anthropic/models/claude-…
  // Bedrock: [region.]vendor.model[-v1[:0]] (us.anthropic.claude-…, global.anthropic.claude-…, meta.llama3-…)
  const bedrock =
    /^(?:(?:us|eu|apac|global|jp|au|ca|us-gov)\.)?(?:anthropic|meta|amazon|mistral|deepseek|openai|qwen|cohere|ai21|writer|moonshot|minimax|zai|google)\.(?=[a-z])/.exec(
      s,
    );
  if (bedrock) s = s.slice(bedrock[0].length).replace(/-v\d+(:\d+)?$/, '');
  s = s.replace(/-v\d+:\d+$/, '').replace(/@\d{8}$/, ''); // Bedrock / Vertex version suffixes
  s = s.replace(/[._]/g, '-');
  s = s.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, '');
  s = s.replace(/-(latest|preview|exp|experimental)(-\d+(-\d+)*)?$/, '');
  return s + suffix;
}

interface Words {
  names: string[];
  version: number[];
}

function words(normalized: string): Words {
  const names: string[] = [];
  const version: number[] = [];
  const suffix = bracketSuffix(normalized);
  for (const part of normalized.slice(0, normalized.length - suffix.length).split('-')) {
    if (/^\d+$/.test(part)) version.push(Number(part));
    else if (part) names.push(part); // claude, opus, 4o, o3, 8b, a3b
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

// Thousands separators without Intl: the first toLocaleString of a process costs ~30 ms (ICU set-up).
const fmt = (n: number) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** `[1m]`, `[200k]`: the window a suffix asks for (Claude Code writes `claude-sonnet-4-5[1m]` for the 1M-context variant). */
function suffixWindow(id: string): { base: string; window: number; suffix: string } | undefined {
  const m = /^(.*)\[(\d+(?:\.\d+)?)([km])\]$/i.exec(id.trim());
  if (!m || !m[1]) return undefined;
  return {
    base: m[1],
    window: Math.round(Number(m[2]) * (m[3]!.toLowerCase() === 'm' ? 1_000_000 : 1_000)),
    suffix: `[${m[2]}${m[3]}]`,
  };
}

/** Ids agent harnesses record for a turn no LLM produced: no window applies, and none should be guessed from a namesake. */
const STAND_INS: Record<string, string> = {
  replay: "SWE-agent's replay model (it replays recorded actions; no LLM is called)",
  human: "SWE-agent's human model (a person types the actions; no LLM is called)",
  'human-thought': "SWE-agent's human model (a person types the actions; no LLM is called)",
  'instant-empty-submit': "SWE-agent's instant_empty_submit test model (no LLM is called)",
};

/** Everything the catalog knows, indexed: built once for the bundled snapshot, once more per catalog with sources of its own. */
class CatalogIndex {
  /** Lower-cased id → entry (the last source wins). */
  readonly exact = new Map<string, CatalogEntry>();
  /** Normalized id → the entry standing for it: the last source's, within it the plainest id. */
  readonly byNorm = new Map<string, CatalogEntry>();
  /** Provider → (`=` + lower-cased id, or normalized id → entry). */
  readonly byProvider = new Map<string, Map<string, CatalogEntry>>();
  /** Normalized id → every entry of that model, whatever provider lists it (its variants). */
  readonly variants = new Map<string, CatalogEntry[]>();
  private wordCache?: Map<string, Words>;
  private knownNames?: Set<string>;

  constructor(readonly sources: CatalogSource[] = []) {
    for (const s of sources) for (const b of s.batches) this.addBatch(b);
  }

  with(source: CatalogSource): CatalogIndex {
    return new CatalogIndex([...this.sources, source]);
  }

  private addBatch(entries: Iterable<CatalogEntry>): void {
    // Several ids can normalize alike (a model and its dated releases): the plainest id stands for them.
    const plainest = new Map<string, CatalogEntry>();
    const ownPlainest = new Map<string, Map<string, CatalogEntry>>();
    const keep = (m: Map<string, CatalogEntry>, norm: string, e: CatalogEntry) => {
      const had = m.get(norm);
      if (!had || e.id.length < had.id.length) m.set(norm, e);
    };
    for (const e of entries) {
      const lower = e.id.toLowerCase();
      const norm = normalizeModelId(e.id);
      this.exact.set(lower, e);
      keep(plainest, norm, e);
      const variants = this.variants.get(norm);
      if (variants) variants.push(e);
      else this.variants.set(norm, [e]);
      if (e.provider) {
        const provider = e.provider.toLowerCase();
        let own = this.byProvider.get(provider);
        if (!own) this.byProvider.set(provider, (own = new Map()));
        own.set(`=${lower}`, e);
        let mine = ownPlainest.get(provider);
        if (!mine) ownPlainest.set(provider, (mine = new Map()));
        keep(mine, norm, e);
      }
    }
    for (const [norm, e] of plainest) this.byNorm.set(norm, e);
    for (const [provider, mine] of ownPlainest)
      for (const [norm, e] of mine) this.byProvider.get(provider)!.set(norm, e);
  }

  size(): number {
    return this.exact.size;
  }

  words(norm: string): Words {
    this.wordCache ??= new Map();
    let w = this.wordCache.get(norm);
    if (!w) this.wordCache.set(norm, (w = words(norm)));
    return w;
  }

  /** Every name word of the catalog (claude, opus, gpt, codex, llama…). */
  names(): Set<string> {
    if (!this.knownNames) {
      this.knownNames = new Set();
      for (const norm of this.byNorm.keys()) for (const n of this.words(norm).names) this.knownNames.add(n);
    }
    return this.knownNames;
  }
}

let bundledIndex: CatalogIndex | undefined;

function baseIndex(withBundled: boolean): CatalogIndex {
  if (!withBundled) return new CatalogIndex();
  return (bundledIndex ??= new CatalogIndex([bundledSource()]));
}

/**
 * Context windows, output limits and prices of models: the user's configuration first, then what the transcript itself
 * reported, then the catalog (the snapshot bundled with abridge, a newer models.dev-shaped file named in the
 * configuration, and any source added with `addSource`), then the closest model of the same line, then the configured
 * default — always saying which. A billed prompt larger than the window assumed raises it. Nothing is read until the
 * first lookup.
 */
export class ModelCatalog {
  private readonly overrides = new Map<string, { key: string; override: ModelOverride }>();
  private readonly added: CatalogSource[] = [];
  private index: CatalogIndex | undefined;
  /** largestWindow by provider and model (the line scan is a walk over the catalog). */
  private readonly largest = new Map<string, number | undefined>();

  constructor(
    private readonly settings: BudgetSettings = DEFAULT_BUDGET_SETTINGS,
    private readonly options: ModelCatalogOptions = {},
  ) {
    for (const [key, override] of Object.entries(settings.models)) {
      this.overrides.set(normalizeModelId(key), { key, override });
      for (const alias of override.aliases ?? []) this.overrides.set(normalizeModelId(alias), { key, override });
    }
  }

  /** Adds catalog entries (a newer models.dev snapshot, a provider's list); later sources win over earlier ones. */
  addSource(entries: Iterable<CatalogEntry>, name = 'added'): this {
    this.added.push({ name, batches: [[...entries]] });
    this.index = undefined;
    this.largest.clear();
    return this;
  }

  /** The sources in use, earliest first (each later one wins over those before it), with how many models each holds. */
  sources(): { name: string; detail?: string; models: number }[] {
    return this.catalog().sources.map((s) => ({
      name: s.name,
      ...(s.detail ? { detail: s.detail } : {}),
      models: s.batches.reduce((n, b) => n + b.length, 0),
    }));
  }

  /** Every model of every source, one entry per provider and id (a later source's replacing an earlier one's). */
  entries(): CatalogEntry[] {
    const all = new Map<string, CatalogEntry>();
    for (const s of this.catalog().sources)
      for (const b of s.batches) for (const e of b) all.set(`${e.provider ?? ''}\0${e.id.toLowerCase()}`, e);
    return [...all.values()];
  }

  private catalog(): CatalogIndex {
    if (!this.index) {
      let index = baseIndex(this.options.bundled !== false);
      if (this.settings.catalog !== undefined) index = index.with(readCatalogFile(this.settings.catalog));
      if (this.options.catalogFile !== undefined) index = index.with(readCatalogFile(this.options.catalogFile));
      for (const s of this.added) index = index.with(s);
      this.index = index;
    }
    return this.index;
  }

  lookup(model: string | undefined, options: LookupOptions = {}): ModelInfo {
    const id = model ?? this.settings.model ?? 'unknown';
    const family = this.overrides.get(normalizeModelId(id))?.override.family ?? familyOf(id, options.provider);
    const info = this.resolve(id, family, options);
    if (this.settings.contextWindow !== undefined) {
      info.contextWindow = this.settings.contextWindow;
      info.source = 'config';
      info.note = 'contextWindow set in the configuration';
    }
    const observed = options.observedPrompt;
    if (observed !== undefined && Number.isFinite(observed) && observed > info.contextWindow)
      this.raise(info, Math.round(observed), options.provider);
    return info;
  }

  /**
   * The largest window known for a model: its catalog entry's, or a larger variant's (the same model at another
   * provider, a 1M-context variant), or the largest of its line; undefined when the catalog does not know the model.
   * A prompt billed above it is no bill of that model (PromptTracker `windowOf`).
   */
  largestWindow(model: string, provider?: string): number | undefined {
    const key = `${provider ?? ''}\u0000${model}`;
    const hit = this.largest.get(key);
    if (hit !== undefined || this.largest.has(key)) return hit;
    const sized = this.overrides.has(normalizeModelId(model)) ? undefined : suffixWindow(model);
    const base = sized?.base ?? model;
    const entry = this.find(base, provider);
    let out: number | undefined;
    if (entry) {
      const index = this.catalog();
      out = Math.max(entry.contextWindow, sized?.window ?? 0);
      for (const e of [
        ...(index.variants.get(normalizeModelId(base)) ?? []),
        ...(index.variants.get(normalizeModelId(entry.id)) ?? []),
      ])
        out = Math.max(out, e.contextWindow);
      const want = index.words(normalizeModelId(entry.id)).names.join(' ');
      const family = familyOf(entry.id);
      if (want)
        for (const [k, e] of index.byNorm)
          if (index.words(k).names.join(' ') === want && familyOf(e.id) === family)
            out = Math.max(out, e.contextWindow);
    }
    this.largest.set(key, out);
    return out;
  }

  private resolve(id: string, family: ProviderFamily, options: LookupOptions): ModelInfo {
    const norm = normalizeModelId(id);
    const over = this.overrides.get(norm);
    const sized = over ? undefined : suffixWindow(id);
    const lookupId = sized?.base ?? id;
    const fromCatalog = this.find(lookupId, options.provider);
    if (over && over.override.contextWindow !== undefined) {
      const info: ModelInfo = {
        id,
        contextWindow: over.override.contextWindow,
        maxOutputTokens:
          over.override.maxOutputTokens ?? fromCatalog?.maxOutputTokens ?? this.settings.defaultMaxOutputTokens,
        family,
        source: 'config',
      };
      if (over.key !== id) info.matched = over.key;
      if (fromCatalog?.pricing) info.pricing = fromCatalog.pricing;
      return info;
    }
    const base = fromCatalog
      ? this.hit(id, fromCatalog, family, 'catalog')
      : this.infer(id, normalizeModelId(lookupId), family);
    if (sized) {
      base.contextWindow = sized.window;
      base.source = 'inferred';
      base.matched = fromCatalog?.id ?? base.matched ?? sized.base;
      base.note = `the ${sized.suffix} suffix asks for the ${fmt(sized.window)}-token variant of ${sized.base} (Claude Code's convention); other limits and prices of ${base.matched}${fromCatalog ? '' : ` (${base.note ?? 'inferred'})`}`;
    }
    if (over?.override.maxOutputTokens !== undefined) base.maxOutputTokens = over.override.maxOutputTokens;
    if (options.reportedWindow && options.reportedWindow > 0) {
      // The agent said what window it ran with: that is the truth for this session.
      base.contextWindow = options.reportedWindow;
      base.source = 'transcript';
      base.note = 'window reported by the agent in the transcript';
    }
    return base;
  }

  /** The provider's own entry for the id, else any source's: exact id first, then the normalized id. */
  private find(id: string, provider: string | undefined): CatalogEntry | undefined {
    const index = this.catalog();
    const lower = id.trim().toLowerCase();
    const norm = normalizeModelId(id);
    const own = provider ? index.byProvider.get(provider.toLowerCase()) : undefined;
    // A gateway's vendor-prefixed id (openrouter's anthropic/claude-sonnet-4.5) stands for the model maker's own entry
    // unless that gateway is the provider: its limits can differ (a 1M window), and the maker's are the safer guess.
    const exact = index.exact.get(lower);
    return (
      own?.get(`=${lower}`) ??
      own?.get(norm) ??
      (exact && !lower.includes('/') ? exact : undefined) ??
      index.byNorm.get(norm) ??
      exact
    );
  }

  private hit(id: string, e: CatalogEntry, family: ProviderFamily, source: ModelInfo['source']): ModelInfo {
    const info: ModelInfo = {
      id,
      contextWindow: e.contextWindow,
      maxOutputTokens: e.maxOutputTokens ?? this.settings.defaultMaxOutputTokens,
      family,
      source,
    };
    if (e.id !== id) info.matched = e.id;
    if (e.pricing) info.pricing = e.pricing;
    return info;
  }

  /**
   * The closest known model of the same line: same name words (claude + opus), the highest version; words no catalog
   * entry has (a gateway's or a fine-tune's: openrouter, uncensored…) are left out, then trailing words (codex, spark…)
   * until something matches. Newer models rarely have smaller windows than their predecessors, so this errs on the side
   * of compacting early.
   */
  private infer(id: string, norm: string, family: ProviderFamily): ModelInfo {
    const standIn = STAND_INS[norm];
    if (standIn) {
      return {
        id,
        contextWindow: this.settings.defaultContextWindow,
        maxOutputTokens: this.settings.defaultMaxOutputTokens,
        family,
        source: 'inferred',
        note: `"${id}" is ${standIn}: no window applies; the default ${fmt(this.settings.defaultContextWindow)}-token window is assumed`,
      };
    }
    const index = this.catalog();
    const want = index.words(norm);
    const known = index.names();
    const kept = want.names.filter((n) => known.has(n));
    const names = kept.length ? kept : want.names;
    const dropped = want.names.filter((n) => !names.includes(n));
    for (let keep = names.length; keep >= 1; keep--) {
      const line = names.slice(0, keep);
      // Fewest other words first; then the very version asked for (claude-opus-4-6-thinking → claude-opus-4-6); then the newest.
      let best: { e: CatalogEntry; extra: number; same: boolean; version: number[] } | undefined;
      for (const [key, e] of index.byNorm) {
        const w = index.words(key);
        if (!line.every((n) => w.names.includes(n))) continue;
        if (familyOf(e.id) !== family) continue;
        const extra = w.names.length - line.length;
        const same = want.version.length > 0 && compareVersions(w.version, want.version) === 0;
        const better =
          !best ||
          extra < best.extra ||
          (extra === best.extra && (same !== best.same ? same : compareVersions(w.version, best.version) > 0));
        if (better) best = { e, extra, same, version: w.version };
      }
      if (best) {
        const info = this.hit(id, best.e, family, 'inferred');
        info.matched = best.e.id;
        const ignored = [...dropped, ...names.slice(keep)];
        const what = best.same
          ? `the same version of the same line (${line.join(' ')} ${want.version.join('.')})`
          : `the newest model of the same line (${line.join(' ')})`;
        const rule = `${what}${ignored.length ? `, ignoring ${ignored.map((n) => `"${n}"`).join(', ')}` : ''}`;
        info.note = `"${id}" is not in the catalog; limits of ${best.e.id} assumed, ${rule} (set models["${id}"] in abridge.config.json to override)`;
        return info;
      }
    }
    return {
      id,
      contextWindow: this.settings.defaultContextWindow,
      maxOutputTokens: this.settings.defaultMaxOutputTokens,
      family,
      source: 'default',
      note: `unknown model "${id}": assuming a ${fmt(this.settings.defaultContextWindow)}-token window (set models["${id}"].contextWindow or defaultContextWindow in abridge.config.json)`,
    };
  }

  /**
   * The provider billed a prompt larger than the window assumed, so the window is larger: the largest window known
   * for this model (a variant another provider lists, e.g. the 1M-context Claude Sonnet 4.5), else for its line, when
   * that covers the prompt; else the prompt's size. A window the configuration states is kept, with a note.
   */
  private raise(info: ModelInfo, observed: number, provider: string | undefined): void {
    const head = `a ${fmt(observed)}-token prompt was billed, above the ${fmt(info.contextWindow)} window`;
    const add = (note: string) => (info.note ? `${info.note}; ${note}` : note);
    if (info.source === 'config') {
      info.note = add(`${head} (kept: the configuration sets it)`);
      return;
    }
    const index = this.catalog();
    const base = suffixWindow(info.id)?.base ?? info.id;
    const norm = normalizeModelId(base);
    const family = info.family;
    const largest = (entries: Iterable<CatalogEntry>) => {
      let best: CatalogEntry | undefined;
      for (const e of entries)
        if (e.contextWindow >= observed && (!best || e.contextWindow > best.contextWindow)) best = e;
      return best;
    };
    const named = (e: CatalogEntry) => (e.provider && e.provider !== provider ? `${e.provider}: ${e.id}` : e.id);
    // A variant is the same model at another provider (named with it); a line's model is named by its id alone.
    let best = largest([
      ...(index.variants.get(norm) ?? []),
      ...(info.matched ? (index.variants.get(normalizeModelId(info.matched)) ?? []) : []),
    ]);
    let how = best ? `assuming the ${fmt(best.contextWindow)}-token variant (${named(best)})` : '';
    if (!best) {
      const want = index.words(info.matched ? normalizeModelId(info.matched) : norm).names.join(' ');
      const line: CatalogEntry[] = [];
      for (const [key, e] of index.byNorm)
        if (index.words(key).names.join(' ') === want && familyOf(e.id) === family) line.push(e);
      best = want ? largest(line) : undefined;
      if (best) how = `assuming the ${fmt(best.contextWindow)}-token window of ${best.id}, the largest of its line`;
    }
    info.source = 'transcript';
    if (best) {
      info.contextWindow = best.contextWindow;
      info.matched = best.id;
      info.note = add(`${head}: ${how}`);
    } else {
      info.contextWindow = observed;
      info.note = add(
        `${head}: assuming a window of at least ${fmt(observed)} tokens, the largest prompt billed (no larger window is known for "${base}"; set models["${base}"].contextWindow to state it)`,
      );
    }
  }
}
