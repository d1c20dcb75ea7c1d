#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { AbridgeError } from '../errors.js';
import { registerInspect } from './inspect.js';
import { registerReplay } from './replay.js';
import { registerCompact } from './compact.js';
import { registerView } from './view.js';
import { VERSION } from './version.js';

/** Exit codes: 0 done, 1 unexpected failure, 2 bad input (missing file, unknown format, bad option). */
async function main(argv: string[]): Promise<number> {
  const program = new Command('abridge')
    .description('See and shrink the context of LLM agent sessions (pi, Claude Code, Codex, SWE-agent, API requests).')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  registerInspect(program);
  registerReplay(program);
  registerCompact(program);
  registerView(program);
  (await import('./store-commands.js')).registerStoreCommands(program);
  try {
    await program.parseAsync(argv);
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, with code 0.
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof AbridgeError) {
      process.stderr.write(`abridge: ${err.message}\n`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`abridge: internal error: ${message}${process.env.ABRIDGE_DEBUG ? `\n${(err as Error).stack ?? ''}` : ' (set ABRIDGE_DEBUG=1 for details)'}\n`);
    return 1;
  }
}

// `abridge … | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`abridge: internal error: ${String(err)}\n`);
    process.exitCode = 1;
  },
);
