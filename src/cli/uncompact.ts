/**
 * `abridge uncompact <transcript> [--marker N | --all] [--out FILE | --in-place]`: the view as it was before a
 * compaction, in pi and Claude Code transcripts — records appended after the file's last line that make the agent resume
 * that view (and what was added since); nothing removed: the compaction's records stay, and the undo names them. With
 * `--db … --session …`, the same in a session store (ContextManager.undoCompaction).
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { writeFileAtomic } from '../atomic-write.js';
import { AbridgeError } from '../errors.js';
import { parseSession } from '../formats/read.js';
import { uncompactText } from '../formats/uncompact.js';
import type { Message } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { TokenCounter } from '../tokens/counter.js';
import { isStdinPath } from './input.js';
import { refuseOutOverInput, withFileLock } from './output.js';
import { fmtInt } from './render.js';
import { escapeControls, jsonForTerminal } from './terminal.js';

interface UncompactFlags {
  db?: string;
  session?: string;
  marker?: string;
  all?: boolean;
  out?: string;
  inPlace?: boolean;
  json?: boolean;
}

export function registerUncompact(program: Command): void {
  program
    .command('uncompact')
    .description(
      'Undo a compaction in a pi or Claude Code transcript: the agent resumes the view as it was before it (and what was added since); nothing is removed, the compaction stays in the file, marked undone',
    )
    .argument('[transcript]', 'pi or Claude Code transcript file')
    .option('--db <path|url>', "a session store (SQLite file or postgres:// URL): undo its session's compaction")
    .option('--session <id>', 'with --db: the session (abridge sessions --db … lists them)')
    .option('-m, --marker <n>', 'the compaction to undo, numbered as `abridge inspect` lists them (default: the last)')
    .option('--all', 'undo every compaction in view: the view as before the first')
    .option('-o, --out <file>', 'write the transcript with the undo here (atomically)')
    .option('--in-place', 'append the undo to the transcript itself (atomically, under a lock)')
    .option(
      '--json',
      'print {file, format, undone, before, after, out} (with --db: {db, session, undone, before, after}) instead of a sentence',
    )
    .action((file: string | undefined, opts: UncompactFlags) => {
      if (opts.db !== undefined || opts.session !== undefined) return uncompactStored(file, opts);
      if (file === undefined)
        throw new AbridgeError(
          'INVALID_INPUT',
          'uncompact: name a transcript file, or a store with --db and --session',
        );
      if (opts.marker !== undefined && opts.all)
        throw new AbridgeError('INVALID_INPUT', '--marker and --all: choose one (--all undoes every compaction)');
      if (opts.inPlace && opts.out !== undefined)
        throw new AbridgeError(
          'INVALID_INPUT',
          '--in-place and --out: choose one (--in-place replaces the input file itself)',
        );
      if (opts.inPlace && isStdinPath(file))
        throw new AbridgeError(
          'INVALID_INPUT',
          '--in-place: the input is standard input, which cannot be replaced; use --out <file>',
        );
      refuseOutOverInput(file, opts.out);
      if (!opts.inPlace) return uncompactFile(file, opts, undefined);
      return withFileLock(file, (assertHeld) => uncompactFile(file, { ...opts, out: file }, assertHeld));
    });
}

function markerNumber(v: string): number {
  if (!/^\d+$/.test(v.trim()) || Number(v) < 1)
    throw new AbridgeError('INVALID_INPUT', `--marker: expected a compaction number (1, 2, …), got "${v}"`);
  return Number(v);
}

async function uncompactFile(file: string, opts: UncompactFlags, assertHeld: (() => void) | undefined): Promise<void> {
  const marker = opts.marker === undefined ? undefined : markerNumber(opts.marker);
  const bytes = await readFile(isStdinPath(file) ? '/dev/stdin' : file).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw new AbridgeError('FILE_NOT_FOUND', `${file}: no such file`);
    throw new AbridgeError('INVALID_INPUT', `${file}: cannot read it (${err.code ?? err.message})`);
  });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // A JavaScript string cannot hold those bytes: written back, they would silently become U+FFFD.
    throw new AbridgeError(
      'INVALID_INPUT',
      `${file}: not valid UTF-8, and writing the transcript back would replace those bytes with U+FFFD; repair it first (abridge inspect lists every such line); nothing was written`,
    );
  }
  const before = activeMessages(parseSession(text, { source: file }));
  const counter = new TokenCounter();
  const r = uncompactText(text, {
    source: file,
    countTokens: (m) => counter.message(m),
    ...(marker !== undefined ? { marker } : {}),
    ...(opts.all ? { all: true } : {}),
  });
  const after = activeMessages(parseSession(r.text, { source: file }));
  if (opts.out)
    await writeFileAtomic(opts.out, async (write) => {
      await write(r.text);
      assertHeld?.();
    });
  const measure = (ms: readonly Message[]) => ({
    messages: ms.length,
    tokens: ms.reduce((n, m) => n + counter.message(m), 0),
  });
  const summary = {
    file,
    format: r.format,
    undone: r.undone.map((m) => m.number),
    before: measure(before),
    after: measure(after),
    ...(r.migrated ? { migrated: true } : {}),
    ...(opts.out ? { out: opts.out } : {}),
  };
  if (opts.json) {
    process.stdout.write(jsonForTerminal(`${JSON.stringify(summary, null, 2)}\n`));
    return;
  }
  const numbers = summary.undone
    .slice()
    .reverse()
    .map((n) => `#${n}`)
    .join(', ');
  const b = summary.before;
  const a = summary.after;
  process.stdout.write(
    escapeControls(
      `${file} (${r.format}): compaction${summary.undone.length === 1 ? '' : 's'} ${numbers} undone — ${fmtInt(b.messages)} messages, ${fmtInt(b.tokens)} tokens (est.) → ${fmtInt(a.messages)} messages, ${fmtInt(a.tokens)} tokens; ${
        opts.out === undefined
          ? 'nothing written (--out FILE or --in-place appends the undo; nothing is removed)'
          : `${r.migrated ? 'records given ids as pi migrates them, ' : ''}undo appended, written to ${opts.out}`
      }\n`,
    ),
  );
}

/**
 * `--db … --session …`: the stored session's compactions undone as `ContextManager.undoCompaction` undoes them (the
 * store keeps them and records the undo, which a resumed manager continues from); `--marker` and `--all` as for a file.
 */
async function uncompactStored(file: string | undefined, opts: UncompactFlags): Promise<void> {
  const extra = [
    file !== undefined && 'a transcript file',
    opts.out !== undefined && '--out',
    opts.inPlace && '--in-place',
  ].filter(Boolean);
  if (opts.db === undefined || opts.session === undefined)
    throw new AbridgeError(
      'INVALID_INPUT',
      '--db and --session go together: the store, and the id of the session in it (see abridge sessions --db …)',
    );
  if (extra.length > 0)
    throw new AbridgeError(
      'INVALID_INPUT',
      `--db --session undoes the session's compaction in the store itself: drop ${extra.join(', ')}`,
    );
  if (opts.marker !== undefined && opts.all)
    throw new AbridgeError('INVALID_INPUT', '--marker and --all: choose one (--all undoes every compaction)');
  const marker = opts.marker === undefined ? undefined : markerNumber(opts.marker);
  // Loaded only here: the store and the manager are not part of what a transcript's undo needs.
  const { openStore, redactDb } = await import('./store-commands.js');
  const { ContextManager } = await import('../manager/context-manager.js');
  const store = await openStore(opts.db, { mustExist: true });
  try {
    const cm = await ContextManager.resume(store, opts.session, {});
    const r = await cm.undoCompaction({
      ...(marker !== undefined ? { marker } : {}),
      ...(opts.all ? { all: true } : {}),
    });
    const summary = {
      db: redactDb(opts.db),
      session: opts.session,
      undone: r.undone,
      before: { messages: r.beforeMessages, tokens: r.beforeTokens },
      after: { messages: r.afterMessages, tokens: r.afterTokens },
    };
    const numbers = r.undone
      .slice()
      .reverse()
      .map((n) => `#${n}`)
      .join(', ');
    process.stdout.write(
      opts.json
        ? jsonForTerminal(`${JSON.stringify(summary, null, 2)}\n`)
        : escapeControls(
            `${opts.session} in ${summary.db}: compaction${r.undone.length === 1 ? '' : 's'} ${numbers} undone — ${fmtInt(r.beforeMessages)} messages, ${fmtInt(r.beforeTokens)} tokens → ${fmtInt(r.afterMessages)} messages, ${fmtInt(r.afterTokens)} tokens (the manager's count); recorded in the store, which keeps the compaction${r.undone.length === 1 ? '' : 's'}\n`,
          ),
    );
  } finally {
    await store.close();
  }
}
