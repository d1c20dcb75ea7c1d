import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import { readSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import type { Session } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { importSession } from '../store/session-store.js';
import { runCli } from '../../test/support/cli.js';
import { builtDist, EXAMPLE_TRANSCRIPT } from '../../test/support/session-store-suite.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { corpusAvailable, corpusFile, corpusFiles } from '../../test/support/corpus.js';

// The commands as a user runs them: the built binary (dist/, or a private build when dist/ is older than the sources).
const DIST = builtDist();
const BIN = join(DIST.dir, 'cli', 'main.js');
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-store-cli-')));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  DIST.cleanup();
});

let n = 0;
const tempDb = () => join(dir, `cli-${n++}.db`);

function abridge(...args: string[]) {
  return runCli(args, { bin: BIN });
}

function importJson(file: string, db: string, ...more: string[]): { sessionId: string; entries: number } {
  const r = abridge('import', file, '--db', db, '--json', ...more);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as { sessionId: string; entries: number };
}

describe('abridge import / export / sessions (SQLite)', () => {
  it('import --json prints {sessionId, entries}; export writes the transcript back byte for byte, to stdout or --out', async () => {
    const db = tempDb();
    const original = readFileSync(EXAMPLE_TRANSCRIPT, 'utf8');
    const session = await readSession(EXAMPLE_TRANSCRIPT);
    const imported = importJson(EXAMPLE_TRANSCRIPT, db);
    expect(imported).toEqual({ sessionId: session.info.id, entries: session.entries.length });

    const out = abridge('export', imported.sessionId, '--db', db);
    expect(out.code).toBe(0);
    expect(out.stdout === original).toBe(true);

    const file = join(dir, 'exported.jsonl');
    const toFile = abridge('export', imported.sessionId, '--db', db, '--format', 'pi', '--out', file);
    expect(toFile.code).toBe(0);
    expect(toFile.stdout).toBe(
      `exported session ${imported.sessionId} (${session.entries.length.toLocaleString('en-US')} entries) as pi to ${file}\n`,
    );
    expect(readFileSync(file, 'utf8') === original).toBe(true);
  });

  it('import without --json says what it stored; --id names the session; importing the same id again is exit 2 pointing at --id', () => {
    const db = tempDb();
    const r = abridge('import', EXAMPLE_TRANSCRIPT, '--db', db, '--id', 'mine');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^imported .*refactor-session\.jsonl \(pi, [\d,]+ entries\) as session mine into .*cli-\d+\.db\n$/,
    );
    const again = abridge('import', EXAMPLE_TRANSCRIPT, '--db', db, '--id', 'mine');
    expect(again.code).toBe(2);
    expect(again.stderr).toBe(
      'abridge: a session "mine" already exists in this store: import it under another id with --id\n',
    );
  });

  it('an import that fails part way leaves nothing: exit 2, no session listed, export of it exit 2, and the retry succeeds', async () => {
    const db = tempDb();
    const store = await openSqliteStore(db);
    store.db.exec(
      "CREATE TRIGGER fail_tenth BEFORE INSERT ON entries WHEN NEW.seq = 9 BEGIN SELECT RAISE(ABORT, 'disk full (simulated)'); END",
    );
    await store.close();
    const failed = abridge('import', EXAMPLE_TRANSCRIPT, '--db', db, '--id', 'x');
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain('disk full (simulated)');
    expect(abridge('sessions', '--db', db).stdout).toBe(`no sessions in ${db}\n`);
    const exported = abridge('export', 'x', '--db', db, '--out', join(dir, 'never.jsonl'));
    expect(exported.code).toBe(2);
    expect(exported.stderr).toBe(
      `abridge: no session "x" in ${db} (abridge sessions --db ${db} lists them); nothing was written\n`,
    );
    expect(() => readFileSync(join(dir, 'never.jsonl'))).toThrow(/ENOENT/);
    const again = await openSqliteStore(db);
    again.db.exec('DROP TRIGGER fail_tenth');
    await again.close();
    expect(abridge('import', EXAMPLE_TRANSCRIPT, '--db', db, '--id', 'x').code).toBe(0);
    expect(abridge('export', 'x', '--db', db).stdout === readFileSync(EXAMPLE_TRANSCRIPT, 'utf8')).toBe(true);
  });

  it('sessions lists the stored sessions, oldest first (--json: id, format, entries, createdAt, updatedAt, info)', () => {
    const db = tempDb();
    importJson(EXAMPLE_TRANSCRIPT, db, '--id', 'first');
    importJson(EXAMPLE_TRANSCRIPT, db, '--id', 'second');
    const json = abridge('sessions', '--db', db, '--json');
    expect(json.code).toBe(0);
    const list = JSON.parse(json.stdout) as {
      id: string;
      format: string;
      entries: number;
      createdAt: string;
      updatedAt: string;
      info: { cwd?: string };
    }[];
    expect(list.map((s) => s.id)).toEqual(['first', 'second']);
    expect(list[0]).toMatchObject({
      format: 'pi',
      entries: expect.any(Number) as number,
      info: { cwd: expect.any(String) as string },
    });
    expect(Object.keys(list[0]!).sort()).toEqual([
      'createdAt',
      'entries',
      'format',
      'id',
      'info',
      'settings',
      'updatedAt',
    ]);
    const text = abridge('sessions', '--db', db);
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^session\s+written by\s+model\s+window\s+reserve\s+entries/);
    // An imported transcript says nothing of what it ran with: its format, and empty settings columns.
    expect(lines[1]).toMatch(/^first\s+pi\s+[\d,]+\s/);
    expect(lines[2]).toMatch(/^second\s/);
  });

  it('export --format anthropic / openai-chat writes a request body of the session', async () => {
    const db = tempDb();
    const { sessionId } = importJson(EXAMPLE_TRANSCRIPT, db);
    const session = await readSession(EXAMPLE_TRANSCRIPT);
    for (const format of ['anthropic', 'openai-chat'] as const) {
      const r = abridge('export', sessionId, '--db', db, '--format', format);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(writeSession(session, format));
      expect(Array.isArray((JSON.parse(r.stdout) as { messages: unknown[] }).messages)).toBe(true);
    }
  });

  it('a compacted session exports as a request body of the context the model sees now (the snapshot and what followed)', async () => {
    const db = tempDb();
    const store = await openSqliteStore(db);
    const session = await readSession(EXAMPLE_TRANSCRIPT);
    const stored = await importSession(store, session, 'compacted');
    const uncompacted = writeSession(session, 'anthropic');
    const result = await compact(session, { target: 60_000 });
    const messages = activeMessages(session);
    await store.recordCompaction(
      stored.id,
      [result.entry!],
      { messages, marker: result.marker! },
      { expectedVersion: stored.version },
    );
    await store.close();

    const context: Session = {
      format: session.format,
      info: session.info,
      entries: messages.map((message, index) => ({ index, kind: 'message', message })),
      problems: [],
    };
    const r = abridge('export', 'compacted', '--db', db, '--format', 'anthropic');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(writeSession(context, 'anthropic'));
    expect(r.stdout.length).toBeLessThan(uncompacted.length / 2);
    // The writer given the compacted session writes the same: its compacted view.
    expect(writeSession(session, 'anthropic')).toBe(r.stdout);
    // As a transcript it is the whole history, the compaction marker included.
    const pi = abridge('export', 'compacted', '--db', db);
    expect(pi.stdout).toBe(writeSession(session, 'pi'));
  });

  it('errors are exit 2 with a message: unknown session, missing database, bad --format, missing --db, an unreachable PostgreSQL (password hidden)', () => {
    const db = tempDb();
    importJson(EXAMPLE_TRANSCRIPT, db, '--id', 'x');
    const unknown = abridge('export', 'nope', '--db', db);
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      `abridge: no session "nope" in ${db} (abridge sessions --db ${db} lists them); nothing was written\n`,
    ]);
    const missing = join(dir, 'missing.db');
    for (const args of [
      ['sessions', '--db', missing],
      ['export', 'x', '--db', missing],
    ]) {
      const r = abridge(...args);
      expect([r.code, r.stderr]).toEqual([2, `abridge: ${missing}: no such SQLite database\n`]);
    }
    const badFormat = abridge('export', 'x', '--db', db, '--format', 'codex');
    expect(badFormat.code).toBe(2);
    expect(badFormat.stderr).toMatch(/--format: expected one of pi, claude-code, anthropic, openai-chat/);
    const noDb = abridge('sessions');
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toMatch(/--db/);
    const pg = abridge('sessions', '--db', 'postgresql://user:s3cret@127.0.0.1:1/abridge');
    expect(pg.code).toBe(2);
    expect(pg.stderr).toMatch(/^abridge: /);
    expect(pg.stderr).not.toContain('s3cret');
  });

  // Through the PostgreSQL store when a server is given (the sessions stay in its default schema "abridge").
  const pgUrl = process.env.ABRIDGE_PG_URL;
  it.skipIf(!pgUrl)(
    'with a postgres:// URL: import, sessions and a byte-identical export through the PostgreSQL store',
    () => {
      const id = `cli-test-${process.pid}-${Date.now()}`;
      const { sessionId, entries } = importJson(EXAMPLE_TRANSCRIPT, pgUrl!, '--id', id);
      expect(sessionId).toBe(id);
      expect(entries).toBeGreaterThan(100);
      const list = JSON.parse(abridge('sessions', '--db', pgUrl!, '--json').stdout) as {
        id: string;
        entries: number;
      }[];
      expect(list.find((s) => s.id === id)?.entries).toBe(entries);
      const r = abridge('export', id, '--db', pgUrl!);
      expect(r.code).toBe(0);
      expect(r.stdout === readFileSync(EXAMPLE_TRANSCRIPT, 'utf8')).toBe(true);
    },
  );

  const run = corpusAvailable() ? describe : describe.skip;
  run('real transcripts', () => {
    it.each([
      ['pi', 'badlogic__pi-mono__compact.jsonl'],
      ['claude-code', 'marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl'],
      ['claude-code', 'marot__spotter__subagent.jsonl'],
    ])('%s/%s: import then export is the same bytes', (folder, name) => {
      const file = corpusFile(folder, name);
      const db = tempDb();
      const { sessionId } = importJson(file, db, '--id', basename(file));
      const r = abridge('export', sessionId, '--db', db);
      expect(r.code).toBe(0);
      expect(r.stdout === readFileSync(file, 'utf8')).toBe(true);
    });

    it('a session in a format abridge cannot write exports only with --format', () => {
      const file = corpusFiles('codex')[0]!;
      const db = tempDb();
      importJson(file, db, '--id', 'codex');
      const r = abridge('export', 'codex', '--db', db);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/session "codex" is codex, which abridge cannot write; choose --format/);
      const chat = abridge('export', 'codex', '--db', db, '--format', 'openai-chat');
      expect(chat.code).toBe(0);
      expect(JSON.parse(chat.stdout)).toHaveProperty('messages');
    });
  });
});
