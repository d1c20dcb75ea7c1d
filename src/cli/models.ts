import type { Command } from 'commander';
import pc from 'picocolors';
import { ModelCatalog, type CatalogEntry, type ModelInfo, type ModelPricing } from '../budget/catalog.js';
import { requestPrices } from '../budget/cost.js';
import { addConfigOptions, resolveConfig, type ConfigFlags } from './config-options.js';
import { fmtInt, table } from './render.js';

interface ModelsFlags extends ConfigFlags {
  json?: boolean;
  provider?: string;
}

/** `abridge models [<id>…]`: what each id resolves to (window, max output, prices, where from); no id: every model known. */
export function registerModels(program: Command): void {
  const cmd = program
    .command('models')
    .description(
      'Show what model ids resolve to: context window, max output, prices, and where they come from (catalog, configuration, inference); no id lists the catalog',
    )
    .argument(
      '[ids...]',
      'model ids (claude-sonnet-4-5, openai/gpt-5.4, us.anthropic.claude-opus-4-6-v1, claude-sonnet-4-5[1m]…)',
    )
    .option(
      '--provider <name>',
      'the provider the ids are called through (anthropic, openai, openrouter…): its own catalog entry wins',
    )
    .option('--json', 'print one JSON object: {catalog, models} (or {catalog, entries} with no id)');
  addConfigOptions(cmd).action(async (ids: string[], opts: ModelsFlags) => {
    const config = await resolveConfig(opts);
    const catalog = new ModelCatalog(config.budget);
    const sources = catalog.sources();
    if (ids.length === 0) {
      const entries = catalog
        .entries()
        .sort((a, b) => (a.provider ?? '').localeCompare(b.provider ?? '') || a.id.localeCompare(b.id));
      if (opts.json) process.stdout.write(`${JSON.stringify({ catalog: sources, entries }, null, 2)}\n`);
      else process.stdout.write(`${renderEntries(entries)}\n\n${renderSources(sources)}\n`);
      return;
    }
    const models = ids.map((id) => catalog.lookup(id, opts.provider ? { provider: opts.provider } : {}));
    if (opts.json) process.stdout.write(`${JSON.stringify({ catalog: sources, models }, null, 2)}\n`);
    else process.stdout.write(`${models.map(renderInfo).join('\n\n')}\n\n${renderSources(sources)}\n`);
  });
}

function price(n: number): string {
  return `$${Number(n.toPrecision(6))}`;
}

function prices(p: ModelPricing | undefined): string {
  if (!p) return 'no prices';
  const cache = [
    p.cacheRead !== undefined ? `cache read ${price(p.cacheRead)}` : '',
    p.cacheWrite !== undefined ? `cache write ${price(p.cacheWrite)}` : '',
  ].filter(Boolean);
  // A tier's cache prices as abridge bills them (the base ones scaled with the input price, when the tier has none).
  const tiers = (p.longContext ?? []).map((t) => {
    const r = requestPrices(p, t.above + 1);
    const at: ModelPricing = { input: r.input, output: r.output };
    if (p.cacheRead !== undefined || t.cacheRead !== undefined) at.cacheRead = r.cacheRead;
    if (p.cacheWrite !== undefined || t.cacheWrite !== undefined) at.cacheWrite = r.cacheWrite;
    return `\n  above ${fmtInt(t.above)} prompt tokens, the whole request: ${prices(at)}`;
  });
  return `${price(p.input)} in / ${price(p.output)} out${cache.length ? ` · ${cache.join(' · ')}` : ''} per million tokens${tiers.join('')}`;
}

function renderInfo(m: ModelInfo): string {
  const from = `${m.source}${m.matched ? `: ${m.matched}` : ''}`;
  const lines = [
    `${pc.bold(m.id)} ${pc.dim(`(${from})`)}`,
    `  window ${fmtInt(m.contextWindow)} · max output ${fmtInt(m.maxOutputTokens)} · family ${m.family}`,
    `  ${prices(m.pricing)}`,
  ];
  if (m.note) lines.push(`  ${pc.yellow('note')} ${m.note}`);
  return lines.join('\n');
}

function renderEntries(entries: CatalogEntry[]): string {
  const rows = entries.map((e) => [
    e.id,
    e.provider ?? '',
    fmtInt(e.contextWindow),
    e.maxOutputTokens !== undefined ? fmtInt(e.maxOutputTokens) : '',
    e.pricing ? price(e.pricing.input) : '',
    e.pricing ? price(e.pricing.output) : '',
  ]);
  return table(['model', 'provider', 'window', 'max output', '$/M in', '$/M out'], rows);
}

function renderSources(sources: { name: string; detail?: string; models: number }[]): string {
  return pc.dim(
    `catalog: ${sources.map((s) => `${s.name}${s.detail ? ` (${s.detail})` : ''}, ${fmtInt(s.models)} models`).join('; then ')}`,
  );
}
