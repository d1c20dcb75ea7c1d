#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { isWriteErrorCode, writeError } from '../atomic-write.js';
import { AbridgeError } from '../errors.js';
import { redactForMessage } from '../redact/connection.js';
import { registerInspect } from './inspect.js';
import { registerReplay } from './replay.js';
import { registerCompact } from './compact.js';
import { registerConvert } from './convert.js';
import { registerModels } from './models.js';
import { registerFooter } from './footer.js';
import { registerView } from './view.js';
import { registerStatusline } from './statusline.js';
import { registerUncompact } from './uncompact.js';
import { escapeControls } from './terminal.js';
import { VERSION } from './version.js';

/**
 * Exit codes: 0 done, 2 bad input or an environment that refuses (missing or unreadable file, unknown format, bad
 * option, a file that cannot be written: EACCES, ENOSPC, EISDIR, EROFS, EFBIG…), 1 only for an unexpected failure
 * (a bug).
 */
async function main(argv: string[]): Promise<number> {
  const program = new Command('abridge')
    .description(
      'See and shrink the context of LLM agent sessions (pi, Claude Code, Codex, Copilot CLI, Droid, SWE-agent, OpenHands, API requests).',
    )
    .version(VERSION)
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  registerInspect(program);
  registerReplay(program);
  registerCompact(program);
  registerConvert(program);
  registerModels(program);
  registerFooter(program);
  registerView(program);
  registerStatusline(program);
  registerUncompact(program);
  // The store commands (import, export, sessions…) load their module only when they may run: a command line whose
  // first word is one of the commands above cannot reach them (~4 ms of every `abridge inspect`). Anything else (a
  // store command, help, no command, an option before the command) registers them as before.
  const first = argv.slice(2).find((a) => !a.startsWith('-'));
  if (first === undefined || !program.commands.some((c) => c.name() === first || c.aliases().includes(first)))
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
      process.stderr.write(`abridge: ${escapeControls(redactForMessage(err.message))}\n`);
      return 2;
    }
    const sys = err as NodeJS.ErrnoException | null;
    if (isWriteErrorCode(sys?.code) && (typeof sys?.path === 'string' || sys?.syscall === 'write')) {
      // A file system refusal that escaped a command's own handling is still the environment, not a bug.
      process.stderr.write(
        `abridge: ${escapeControls(writeError(sys.path ?? 'standard output', err, false).message)}\n`,
      );
      return 2;
    }
    const message = redactForMessage(err instanceof Error ? err.message : String(err));
    process.stderr.write(
      `abridge: internal error: ${escapeControls(message)}${process.env.ABRIDGE_DEBUG ? `\n${redactForMessage((err as Error).stack ?? '')}` : ' (set ABRIDGE_DEBUG=1 for details)'}\n`,
    );
    return 1;
  }
}

// Past the file size limit (ulimit -f) the kernel sends SIGXFSZ, whose default kills the process mid-write; ignored,
// the write fails with EFBIG instead, and abridge can remove its temp file and say which file could not be written.
process.on('SIGXFSZ', () => {});

// `abridge … | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  // Standard output redirected to a full disk, a file over the size limit…: the environment, exit 2 in one line.
  if (isWriteErrorCode(err.code)) {
    process.stderr.write(`abridge: ${writeError('standard output', err, false).message}\n`);
    process.exit(2);
  }
  throw err;
});

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`abridge: internal error: ${redactForMessage(String(err))}\n`);
    process.exitCode = 1;
  },
);
