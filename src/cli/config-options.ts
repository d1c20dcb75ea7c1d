import { resolve } from 'node:path';
import type { Command } from 'commander';
import { ModelCatalog } from '../budget/catalog.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { findConfigFile } from '../manager/config-find.js';
import type { AbridgeConfig, ConfigOverrides } from '../manager/config.js';

export interface ConfigFlags {
  config?: string;
  model?: string;
  contextWindow?: string;
  reserveTokens?: string;
  warn?: string;
  compact?: string;
  block?: string;
  target?: string;
  prefixTokens?: string;
  catalog?: string;
}

/** The options every budget-aware command takes: a config file, and flags that override it. */
export function addConfigOptions(cmd: Command): Command {
  return cmd
    .option(
      '-c, --config <file>',
      'configuration file (default: abridge.config.json or .abridge/abridge.config.json, searched upward)',
    )
    .option('-m, --model <id>', 'model to assume when the transcript does not name one')
    .option('--context-window <tokens>', "context window, overriding the model's")
    .option('--reserve-tokens <tokens>', 'tokens reserved for the response')
    .option('--warn <share>', 'warn level, e.g. 80% or 0.8 of the usable window')
    .option('--compact <share>', 'compact level')
    .option('--block <share>', 'block level')
    .option('--target <share>', 'fill compaction aims for')
    .option('--prefix-tokens <n>', "tokens of the agent's system prompt and tools, not in the transcript")
    .option(
      '--catalog <file>',
      'a models.dev-shaped model catalog (api.json or one provider) read over the bundled one',
    );
}

/** The configuration file (if any) with the command line's flags on top. */
export async function resolveConfig(flags: ConfigFlags): Promise<AbridgeConfig> {
  const o = overridesOf(flags);
  // No file and no flag, the usual case: the defaults, without loading the schema (zod costs a cold start ~40 ms).
  if (flags.config === undefined && Object.keys(o).length === 0 && findConfigFile(process.cwd()) === undefined)
    return defaultConfig();
  const [{ loadConfig }, { mergeConfig }] = await Promise.all([
    import('../manager/config-file.js'),
    import('../manager/config.js'),
  ]);
  const base = await loadConfig(flags.config !== undefined ? { path: flags.config } : {});
  const config = Object.keys(o).length > 0 ? mergeConfig(base, o) : base;
  // A bad catalog file is reported now, whatever the command goes on to look up (or not).
  if (config.budget.catalog !== undefined) new ModelCatalog(config.budget).sources();
  return config;
}

/** What loadConfig returns when there is no file (DEFAULT_CONFIG, a copy), built from the budget's defaults. */
export function defaultConfig(): AbridgeConfig {
  return { budget: structuredClone(DEFAULT_BUDGET_SETTINGS) };
}

function overridesOf(flags: ConfigFlags): ConfigOverrides {
  const o: ConfigOverrides = {};
  if (flags.model !== undefined) o.model = flags.model;
  if (flags.contextWindow !== undefined) o.contextWindow = flags.contextWindow;
  if (flags.reserveTokens !== undefined) o.reserveTokens = flags.reserveTokens;
  if (flags.prefixTokens !== undefined) o.prefixTokens = flags.prefixTokens;
  if (flags.catalog !== undefined) o.catalog = flags.catalog === '' ? flags.catalog : resolve(flags.catalog);
  const t: NonNullable<ConfigOverrides['thresholds']> = {};
  if (flags.warn !== undefined) t.warn = flags.warn;
  if (flags.compact !== undefined) t.compact = flags.compact;
  if (flags.block !== undefined) t.block = flags.block;
  if (flags.target !== undefined) t.target = flags.target;
  if (Object.keys(t).length > 0) o.thresholds = t;
  return o;
}
