import type { Command } from 'commander';
import pc from 'picocolors';
import { once } from 'node:events';
import { type AtomicProducer, writeFileAtomic } from '../atomic-write.js';
import { AbridgeError, redactConnectionStrings } from '../errors.js';
import { readSession } from '../formats/read.js';
import { inputOptions, INSTANCE_OPTION, sourceOptions } from './input.js';
import { getFormat } from '../formats/registry.js';
import { writeSession } from '../formats/write.js';
import type { BudgetSettings } from '../budget/types.js';
import type { FormatId, Message, Session } from '../model/types.js';
import { importSession, loadSession, type SessionStore, type StoredSession } from '../store/session-store.js';
import { isModuleNotFound } from '../store/sqlite/driver.js';
import { openSqliteStore } from '../store/sqlite/session-store.js';
import { TranscriptLines } from './export-stream.js';
import { importStreamed } from './import-stream.js';
import { progressReporter } from './progress.js';
import { outputRedactor } from './redaction.js';
import { fmtInt, table } from './render.js';
import { escapeControls, escapeControlsDeep, jsonForTerminal } from './terminal.js';

/** Formats `abridge export` writes. Transcripts (pi, claude-code) get the whole history; request bodies the context. */
const EXPORT_FORMATS: readonly FormatId[] = ['pi', 'claude-code', 'anthropic', 'openai-chat', 'openai-responses'];
const TRANSCRIPT_FORMATS: readonly FormatId[] = ['pi', 'claude-code'];
/** Characters of an export gathered before one write. */
const EXPORT_CHUNK = 1 << 16;
/** Entries an export reads at a time (each decoded whole: its record and its message). */
const EXPORT_PAGE = 32;
const DB_HELP = 'the store: a SQLite file path, or a postgres:// (postgresql://) connection URL';

/** True when `db` names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** A connection string (any form: URL credentials, ?password=, key=value) with its passwords hidden, for messages. */
export function redactDb(db: string): string {
  return redactConnectionStrings(db);
}

/**
 * Opens the store `--db` names: a postgres:// or postgresql:// URL loads the PostgreSQL store (abridge-context/postgres, which
 * needs the pg package); anything else is a SQLite file (needs better-sqlite3), created unless `mustExist`.
 */
export async function openStore(
  db: string,
  options: { mustExist?: boolean; readonly?: boolean } = {},
): Promise<SessionStore> {
  if (!db) throw new AbridgeError('INVALID_INPUT', `--db: expected ${DB_HELP}`);
  if (!isPostgresUrl(db))
    return openSqliteStore(db, { mustExist: options.mustExist ?? false, readonly: options.readonly ?? false });
  const spec = new URL('../store/postgres/index.js', import.meta.url).href;
  let mod: { openPostgresStore?: (url: string, options?: { migrate?: boolean }) => Promise<SessionStore> };
  try {
    mod = (await import(spec)) as typeof mod;
  } catch (err) {
    if (err instanceof AbridgeError) throw err;
    if (isModuleNotFound(err)) {
      const message = err instanceof Error ? err.message : String(err);
      if (message.includes('store/postgres/index.js')) {
        throw new AbridgeError(
          'MISSING_DEPENDENCY',
          'the PostgreSQL store (abridge-context/postgres) is not part of this build of abridge',
        );
      }
      throw new AbridgeError(
        'MISSING_DEPENDENCY',
        `install pg to use the PostgreSQL store (npm install pg): ${message.split('\n')[0]}`,
      );
    }
    throw err;
  }
  if (typeof mod.openPostgresStore !== 'function')
    throw new AbridgeError(
      'MISSING_DEPENDENCY',
      'the PostgreSQL store in this build of abridge has no openPostgresStore',
    );
  return mod.openPostgresStore(db, options.readonly ? { migrate: false } : {});
}

/**
 * A stored session, for the commands that read one (`view --db`, `inspect --db`): the whole session, where it came
 * from (the store's address with its password hidden), and a name for the files made of it.
 */
export async function readStoredSession(
  db: string | undefined,
  sessionId: string | undefined,
): Promise<{ session: Session; source: string; name: string }> {
  if (!db || !sessionId)
    throw new AbridgeError(
      'INVALID_INPUT',
      '--db and --session go together: the store, and the id of the session in it (see abridge sessions --db …)',
    );
  const session = await withStore(db, true, (store) => loadSession(store, sessionId), true);
  return {
    session,
    source: `${redactDb(db)} · session ${sessionId}`,
    name: sessionId.replace(/[^A-Za-z0-9._-]/g, '_'),
  };
}

/**
 * The budget a stored session is measured against: what the command line or configuration says, else what the
 * session ran with (its window and reserve, as the ContextManager that kept it recorded) — a 40,000-token agent is
 * drawn against 40,000, not the catalog's window for its model.
 */
export function budgetOfStored(budget: BudgetSettings, session: Session): BudgetSettings {
  const ran = session.info.settings;
  if (!ran) return budget;
  const out = { ...budget };
  if (out.contextWindow === undefined && ran.contextWindow !== undefined) out.contextWindow = ran.contextWindow;
  if (out.reserveTokens === undefined && ran.reserveTokens !== undefined) out.reserveTokens = ran.reserveTokens;
  if (out.model === undefined && ran.model !== undefined) out.model = ran.model;
  return out;
}

/** `readonly` (sessions, export): nothing is written or migrated, so a store this user may only read still works. */
async function withStore<T>(
  db: string,
  mustExist: boolean,
  fn: (store: SessionStore) => Promise<T>,
  readonly = false,
): Promise<T> {
  const store = await openStore(db, { mustExist, readonly });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * Import keeps a transcript to write it back byte for byte, as text: bytes that are not UTF-8 would come back changed
 * (as U+FFFD). Such a file is refused, naming where, rather than stored as something export cannot give back.
 *
 * A JSONL reader checks every line's bytes and reports an 'invalid-utf8' problem; the file is then scanned again only
 * to say where. A JSON document is decoded whole without that check, so its file is always scanned.
 */
async function refuseInvalidUtf8(file: string, session: Pick<Session, 'format' | 'problems'>): Promise<void> {
  const problem = session.problems.find((p) => p.kind === 'invalid-utf8');
  if (!problem && getFormat(session.format).container === 'jsonl') return;
  const { statSync } = await import('node:fs');
  let regular = false;
  try {
    regular = file !== '-' && statSync(file).isFile();
  } catch {
    regular = false;
  }
  const { firstInvalidUtf8 } = await import('../formats/utf8.js');
  const at = regular ? await firstInvalidUtf8(file) : undefined;
  if (!at && !problem) return;
  const where = at
    ? `line ${fmtInt(at.line)}, byte ${fmtInt(at.column)} of the line (byte offset ${fmtInt(at.offset)} in the file)`
    : `line ${fmtInt(problem!.line)}`;
  throw new AbridgeError(
    'INVALID_INPUT',
    `${file === '-' ? '<stdin>' : file}: not valid UTF-8 at ${where}; abridge stores transcripts as text and export could not give these bytes back, so nothing was imported (repair the file, e.g. iconv -f utf-8 -t utf-8 -c, and import it again)`,
  );
}

export function registerStoreCommands(program: Command): void {
  program
    .command('import')
    .description(
      'Store a transcript in a session store (SQLite or PostgreSQL): a new session with all its entries, written back byte for byte by export',
    )
    .argument('<transcript>', 'transcript file')
    .requiredOption('--db <path|url>', DB_HELP)
    .option('--id <id>', "the stored session's id (default: the transcript's own session id, else a new UUID)")
    .option('-f, --format <id>', 'read as this format instead of detecting it')
    .option(...INSTANCE_OPTION)
    .option('--json', 'print {sessionId, entries}')
    .action(async (file: string, opts: { db: string; id?: string; format?: string; json?: boolean }) => {
      if (opts.format) getFormat(opts.format);
      const read = { ...sourceOptions(opts), ...inputOptions() };
      const sessionExists = (err: unknown) => {
        if (err instanceof AbridgeError && err.code === 'SESSION_EXISTS')
          throw new AbridgeError(
            'SESSION_EXISTS',
            `${err.message.replace(/ \(choose another id\)$/, '')}: import it under another id with --id`,
          );
        throw err;
      };
      const stored = await withStore(opts.db, false, async (store) => {
        // Read as a stream into one transaction (memory bounded by a batch of entries) when the transcript allows it;
        // else read whole, then stored in one transaction, as before.
        const progress = progressReporter(file);
        const streamed = await importStreamed(store, file, {
          ...(opts.id !== undefined ? { id: opts.id } : {}),
          read: { ...read, onProgress: progress.update },
          check: (result) => refuseInvalidUtf8(file, result),
        })
          .catch(sessionExists)
          .finally(() => progress.stop());
        if (streamed) return streamed;
        const whole = progressReporter(file);
        const session = await readSession(file, { ...read, onProgress: whole.update }).finally(() => whole.stop());
        await refuseInvalidUtf8(file, session);
        return importSession(store, session, opts.id).catch(sessionExists);
      });
      if (opts.json) {
        process.stdout.write(jsonForTerminal(`${JSON.stringify({ sessionId: stored.id, entries: stored.version })}\n`));
        return;
      }
      process.stdout.write(
        `imported ${escapeControls(file)} (${stored.format}, ${fmtInt(stored.version)} entries) as session ${pc.bold(escapeControls(stored.id))} into ${escapeControls(redactDb(opts.db))}\n`,
      );
    });

  program
    .command('export')
    .description(
      'Write a stored session out: pi and claude-code transcripts hold the whole history (byte-identical for imported ones); request bodies hold the context the model sees now',
    )
    .argument('<sessionId>', 'the stored session')
    .requiredOption('--db <path|url>', DB_HELP)
    .option('-f, --format <id>', `${EXPORT_FORMATS.join(', ')} (default: the session's own format)`)
    .option('-o, --out <file>', 'write to this file instead of standard output')
    .action(async (sessionId: string, opts: { db: string; format?: string; out?: string }) => {
      if (opts.format !== undefined && !(EXPORT_FORMATS as readonly string[]).includes(opts.format)) {
        throw new AbridgeError(
          'INVALID_INPUT',
          `--format: expected one of ${EXPORT_FORMATS.join(', ')}, got "${opts.format}"`,
        );
      }
      const redact = await outputRedactor();
      const notFound = (err: unknown): never => {
        if (err instanceof AbridgeError && err.code === 'SESSION_NOT_FOUND') {
          throw new AbridgeError(
            'SESSION_NOT_FOUND',
            `no session "${sessionId}" in ${redactDb(opts.db)} (abridge sessions --db ${redactDb(opts.db)} lists them); nothing was written`,
          );
        }
        throw err;
      };
      /** Writes the export as it is made: to --out (atomically: whole or absent) or to standard output. */
      const emit = (produce: AtomicProducer) => (opts.out ? writeFileAtomic(opts.out, produce) : produce(toStdout));
      const { entries, format } = await withStore(
        opts.db,
        true,
        async (store) => {
          const stored = (await store.getSession(sessionId)) ?? notFound(new AbridgeError('SESSION_NOT_FOUND', ''));
          const format = (opts.format ?? stored.format) as FormatId;
          if (!EXPORT_FORMATS.includes(format)) {
            throw new AbridgeError(
              'NOT_WRITABLE_FORMAT',
              `session "${sessionId}" is ${stored.format}, which abridge cannot write; choose --format ${EXPORT_FORMATS.join(', ')}`,
            );
          }
          // An export leaves the store: every record is redacted, the session's own ones too (writeSession, the one
          // point), and a transcript stays one the agent resumes.
          const write = { redact, redactOriginal: true };
          if (
            format === stored.format &&
            TRANSCRIPT_FORMATS.includes(format) &&
            stored.version > 0 &&
            stored.layout?.asRead === stored.version
          ) {
            // An imported transcript nothing was appended to: written back record by record as the entries are read a
            // page at a time (one read transaction), never the whole session in memory.
            let count = 0;
            await emit(async (out) => {
              const lines = new TranscriptLines(redact, stored.layout);
              let chunk = '';
              for await (const page of store.entryPages(sessionId, { pageSize: EXPORT_PAGE })) {
                for (const e of page) chunk += lines.add(e);
                count += page.length;
                if (chunk.length >= EXPORT_CHUNK) {
                  await out(chunk);
                  chunk = '';
                }
              }
              await out(chunk + lines.end());
            });
            return { entries: count, format };
          }
          // Anything else is written whole (a conversion, a session appended to since, a request body: one JSON
          // document; each needs the whole session).
          const session = await loadSession(store, sessionId).catch(notFound);
          let text: string;
          if (TRANSCRIPT_FORMATS.includes(format) || !session.entries.some((e) => e.compaction))
            text = writeSession(session, format, write);
          else {
            // A compacted session as a request body: what the model sees now (the latest snapshot and what followed it).
            const resumed = await store.resume(sessionId);
            text = writeSession(contextSession(session, resumed.messages), format, write);
          }
          await emit((out) => out(text));
          return { entries: session.entries.length, format };
        },
        true,
      );
      if (opts.out)
        process.stdout.write(
          escapeControls(`exported session ${sessionId} (${fmtInt(entries)} entries) as ${format} to ${opts.out}\n`),
        );
    });

  program
    .command('sessions')
    .description('List the sessions in a store')
    .requiredOption('--db <path|url>', DB_HELP)
    .option('--json', 'print a JSON array of {id, format, entries, createdAt, updatedAt, info, settings}')
    .action(async (opts: { db: string; json?: boolean }) => {
      const sessions = await withStore(opts.db, true, (store) => store.listSessions(), true);
      if (opts.json) {
        process.stdout.write(jsonForTerminal(`${JSON.stringify(sessions.map(listed), null, 2)}\n`));
        return;
      }
      if (sessions.length === 0) {
        process.stdout.write(`no sessions in ${redactDb(opts.db)}\n`);
        return;
      }
      const rows = escapeControlsDeep(sessions).map((s) => {
        const ran = s.info.settings;
        return [
          s.id,
          // A ContextManager's session is kept in pi's layout, but it is no pi session: say who wrote it, and its wire.
          ran?.writer === 'context-manager' ? `context-manager (${ran.provider ?? '?'})` : s.format,
          ran?.model ?? '',
          ran?.contextWindow !== undefined ? fmtInt(ran.contextWindow) : '',
          ran?.reserveTokens !== undefined ? fmtInt(ran.reserveTokens) : '',
          fmtInt(s.version),
          s.updatedAt.slice(0, 19).replace('T', ' '),
          s.info.title ?? s.info.cwd ?? '',
        ];
      });
      process.stdout.write(
        `${table(['session', 'written by', 'model', 'window', 'reserve', 'entries', 'updated (UTC)', 'title / cwd'], rows)}\n`,
      );
    });
}

function listed(s: StoredSession) {
  return {
    id: s.id,
    format: s.format,
    entries: s.version,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    info: s.info,
    // What the session ran with (model, provider, window, reserve), when its writer recorded it; else null.
    settings: s.info.settings ?? null,
  };
}

/** Writes to standard output, waiting for it to drain when its buffer is full (memory stays bounded). */
async function toStdout(chunk: string | Uint8Array): Promise<void> {
  if (chunk.length === 0) return;
  if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
}

/** The context as a session of its own (what request-body writers turn into a request), keeping the request fields. */
function contextSession(session: Session, messages: readonly Message[]): Session {
  const entries = messages.map((message, index) => ({ index, kind: 'message' as const, message }));
  const s: Session = { format: session.format, info: session.info, entries, problems: [] };
  if (session.extra) s.extra = session.extra;
  return s;
}
