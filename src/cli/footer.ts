import type { Command } from 'commander';
import { markdownFooter } from '../budget/report.js';
import { contextBreakdown } from '../budget/breakdown.js';
import { readSession } from '../formats/read.js';
import { addConfigOptions, resolveConfig, type ConfigFlags } from './config-options.js';
import { tokenCounterFor } from './tokens.js';
import { INSTANCE_OPTION, sourceOptions } from './input.js';

/**
 * `abridge footer <transcript>`: the Markdown footer an agent appends to its issue or PR reply — the pressure line and,
 * from 60% of the window, advice. Prints nothing (and exits 0) below 30%, so a script can append the output as it is.
 */
export function registerFooter(program: Command): void {
  const cmd = program
    .command('footer')
    .description(
      "Print the Markdown footer for an agent's reply (context pressure and advice); nothing below 30% of the window",
    )
    .argument('<file>', 'transcript file (pi, Claude Code, Codex, …)')
    .option('-f, --format <id>', 'read as this format instead of detecting it')
    .option(...INSTANCE_OPTION)
    .option('--exact', 'count tokens with the o200k_base tokenizer');
  addConfigOptions(cmd).action(async (file: string, opts: ConfigFlags & { format?: string; exact?: boolean }) => {
    const config = await resolveConfig(opts);
    const { exact } = await tokenCounterFor(opts.exact === true);
    const session = await readSession(file, sourceOptions(opts));
    const footer = markdownFooter(contextBreakdown(session, { settings: config.budget, ...(exact ? { exact } : {}) }));
    if (footer) process.stdout.write(`${footer}\n`);
  });
}
