#!/usr/bin/env node
/**
 * Long-context price tiers of the bundled catalog. pi-ai's registry, which scripts/catalog-snapshot.js reads, has none,
 * so they come from this table, each figure from the provider's own published pricing (the URL beside it), and are
 * written in models.dev's spelling: `cost.tiers: [{input, output, tier: {type: "context", size}}]`, the whole request
 * billed at the tier's rates when its prompt (input + cache read + cache write) is above `size` tokens.
 *
 * Only what the provider states is listed: input and output. A tier's cache prices are left to abridge (`usageCost`),
 * which scales the model's own cache prices as the input price is — Anthropic's caching multipliers apply on top of
 * long-context rates, and OpenAI's "2x input" covers cached input. A model whose tier was not found published is left
 * without one (Claude Sonnet 4.5: only third parties state it; GPT-5.5: likewise). Opus 4.6 and Sonnet 4.6 have none
 * since their 1M window became generally available at standard prices (March 2026).
 *
 * Each entry names the base prices its figures were derived from: a snapshot whose base price differs (a newer
 * registry, a price change) gets no tier for that model, with a warning, until the table is checked again.
 *
 *   node scripts/catalog-tiers.js [FILE]    adds the tiers to a snapshot in place (default data/catalog-snapshot.json)
 *
 * scripts/catalog-snapshot.js applies the same table to every snapshot it writes.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** provider → model ids → tier (USD per million tokens), with the base prices the figures rest on. */
export const LONG_CONTEXT_TIERS = [
  {
    provider: 'anthropic',
    ids: ['claude-sonnet-4-0', 'claude-sonnet-4-20250514'],
    base: { input: 3, output: 15 },
    // https://docs.anthropic.com/en/docs/about-claude/pricing ("Long context pricing", Claude Sonnet 4 with the 1M
    // context window): ≤ 200K input tokens: input $3 / MTok, output $15 / MTok; > 200K: input $6, output $22.50.
    tier: { above: 200_000, input: 6, output: 22.5 },
  },
  {
    provider: 'openai',
    ids: ['gpt-5.4'],
    base: { input: 2.5, output: 15 },
    // https://developers.openai.com/api/docs/models/gpt-5.4: input $2.50, output $15.00; "prompts with >272K input
    // tokens are priced at 2x input and 1.5x output for the full session": $5.00 and $22.50.
    tier: { above: 272_000, input: 5, output: 22.5 },
  },
  {
    provider: 'openai',
    ids: ['gpt-5.4-pro'],
    base: { input: 30, output: 180 },
    // https://developers.openai.com/api/docs/models/gpt-5.4-pro: input $30, output $180; the same "2x input and 1.5x
    // output" above 272K input tokens: $60 and $270.
    tier: { above: 272_000, input: 60, output: 270 },
  },
];

/**
 * Adds the table's tiers to a snapshot object (`{provider: {models: {id: {cost}}}}`), in place; returns how many
 * models got one. A tier the model already has (from a models.dev api.json) is replaced by the table's.
 */
export function applyLongContextTiers(snapshot, warn = (m) => console.warn(m)) {
  let count = 0;
  for (const { provider, ids, base, tier } of LONG_CONTEXT_TIERS) {
    for (const id of ids) {
      const cost = snapshot[provider]?.models?.[id]?.cost;
      if (!cost) continue;
      if (cost.input !== base.input || cost.output !== base.output) {
        warn(
          `note: ${provider}/${id} costs ${cost.input}/${cost.output}, not the ${base.input}/${base.output} its long-context tier was read against: tier left out (check scripts/catalog-tiers.js)`,
        );
        continue;
      }
      const { above, ...rates } = tier;
      cost.tiers = [{ ...rates, tier: { type: 'context', size: above } }];
      delete cost.context_over_200k;
      count++;
    }
  }
  return count;
}

/** A snapshot as abridge ships it: `$source` first, then one model per line (the file stays small, its diffs readable). */
export function formatSnapshot(meta, snapshot) {
  const lines = ['{', `  "$source": ${JSON.stringify(meta)},`];
  const providers = Object.entries(snapshot);
  providers.forEach(([name, p], i) => {
    lines.push(`  ${JSON.stringify(name)}: {`, `    "id": ${JSON.stringify(p.id)},`, '    "models": {');
    const models = Object.entries(p.models);
    models.forEach(([id, m], j) =>
      lines.push(`      ${JSON.stringify(id)}: ${JSON.stringify(m)}${j < models.length - 1 ? ',' : ''}`),
    );
    lines.push('    }', `  }${i < providers.length - 1 ? ',' : ''}`);
  });
  lines.push('}', '');
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'data', 'catalog-snapshot.json');
  const { $source, ...snapshot } = JSON.parse(readFileSync(file, 'utf8'));
  const count = applyLongContextTiers(snapshot);
  const { note, ...rest } = $source ?? {};
  const text = formatSnapshot({ ...rest, longContextTiers: count, ...(note ? { note } : {}) }, snapshot);
  JSON.parse(text);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
  console.log(`${relative(process.cwd(), file) || file}: long-context tiers on ${count} models`);
}
