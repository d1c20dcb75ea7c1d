/**
 * A session a ContextManager resumed from the store's snapshot, then appended to and compacted, as the commands read it
 * back (the built CLI; SQLite, and PostgreSQL with ABRIDGE_PG_URL): the resumed manager's first entry names the
 * snapshot's last message as its parent, which the store's log does not hold — read as it is, the branch would start
 * there, without the history before it.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import type { ContextManager } from '../manager/context-manager.js';
import type { Message } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import type { SessionStore } from '../store/session-store.js';
import { runCli } from '../../test/support/cli.js';
import { firstDifference, piResume } from '../../test/support/pi-loader.js';

const dir = mkdtempSync(join(tmpdir(), 'abridge-store-resumed-'));
const LAST = 'Which of the modules is the largest?';

/** One step of an agent: it reads module i, 300 lines. */
async function readStep(cm: ContextManager, i: number): Promise<void> {
  await cm.recordResponse({
    role: 'assistant',
    parts: [{ type: 'tool-call', id: `c${i}`, name: 'read', arguments: { path: `m${i}.ts` } }],
  });
  await cm.append({
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: `c${i}`,
        toolName: 'read',
        isError: false,
        content: [{ type: 'text', text: `export const v${i} = 1;\n`.repeat(300) }],
      },
    ],
  });
}

const textOf = (m: Message | undefined) => m?.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');

/**
 * Compacted by one manager, resumed from the store by another, which appends, compacts and appends again: the resumed
 * manager's view, and how many messages the log holds.
 */
async function resumedSession(
  open: () => Promise<SessionStore>,
  id: string,
): Promise<{ view: Message[]; logMessages: number }> {
  const { ContextManager } = await import('../manager/context-manager.js');
  const first = await open();
  const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', store: first, sessionId: id });
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Read the modules.' }] });
  for (let i = 0; i < 6; i++) await readStep(cm, i);
  expect((await cm.compactNow({ target: 2000 })).marker?.number).toBe(1);
  await first.close();

  const store = await open();
  try {
    const resumed = await ContextManager.resume(store, id, {});
    await resumed.append({ role: 'user', parts: [{ type: 'text', text: 'Now read the tests.' }] });
    for (let i = 6; i < 9; i++) await readStep(resumed, i);
    expect((await resumed.compactNow({ target: 2000 })).marker?.number).toBe(2);
    await resumed.append({ role: 'user', parts: [{ type: 'text', text: LAST }] });

    const log = await store.entries(id);
    const ids = new Set(log.map((e) => e.id));
    // The case at hand: one entry names a parent the log does not hold.
    expect(log.filter((e) => typeof e.parentId === 'string' && !ids.has(e.parentId))).toHaveLength(1);
    return { view: activeMessages(resumed.session), logMessages: log.filter((e) => e.message).length };
  } finally {
    await store.close();
  }
}

function exported(db: string, id: string, format: 'pi' | 'claude-code'): Message[] {
  const r = runCli(['export', id, '--db', db, '--format', format]);
  expect(r.code, r.stderr).toBe(0);
  return activeMessages(parseSession(r.stdout));
}

const pgUrl = process.env.ABRIDGE_PG_URL || undefined;
const storeCases = [
  {
    name: 'SQLite',
    skip: false,
    db: (id: string) => join(dir, `${id}.db`),
    open: async (db: string) => (await import('../store/sqlite/index.js')).openSqliteStore(db),
  },
  {
    // The PostgreSQL store's default schema, as the commands open it; each run's session ids are its own.
    name: `PostgreSQL${pgUrl ? '' : ' (skipped: set ABRIDGE_PG_URL)'}`,
    skip: !pgUrl,
    db: () => pgUrl!,
    open: async (db: string) => (await import('../store/postgres/index.js')).openPostgresStore(db),
  },
];

for (const sc of storeCases)
  describe.skipIf(sc.skip)(`a session resumed from the store, read back on ${sc.name}`, () => {
    it('export --db to claude-code and view --db show every message of the resumed manager’s view', async () => {
      const id = `resumed-${process.pid}-${Date.now()}`;
      const db = sc.db(id);
      const { view, logMessages } = await resumedSession(() => sc.open(db), id);
      // The compactions shortened results and archived nothing: the view holds every message of the log.
      expect(view).toHaveLength(logMessages);
      expect(textOf(view.at(-1))).toBe(LAST);

      const cc = exported(db, id, 'claude-code');
      expect(cc).toHaveLength(view.length);
      expect(textOf(cc.at(-1))).toBe(LAST);

      const out = join(dir, `${id}.html`);
      const r = runCli(['view', '--db', db, '--session', id, '--out', out]);
      expect(r.code, r.stderr).toBe(0);
      const data = JSON.parse(
        /<script type="application\/json" id="data">(.*?)<\/script>/s.exec(readFileSync(out, 'utf8'))![1]!,
      );
      const messages = (data.records as { r: string; p: string }[]).filter((rec) => rec.r !== 'compaction');
      expect(messages).toHaveLength(view.length);
      expect(messages.at(-1)!.p).toBe(LAST);
      expect(messages[0]!.p).toBe('Read the modules.');
    });

    // A ContextManager's compaction is a checkpoint whose view names no entry of the log: the pi writer restates it
    // (it used to stop on it: "Cannot read properties of undefined (reading 'index')").
    it('export --db to pi shows every message of the resumed manager’s view', async () => {
      const id = `resumed-pi-${process.pid}-${Date.now()}`;
      const db = sc.db(id);
      const { view } = await resumedSession(() => sc.open(db), id);
      const pi = exported(db, id, 'pi');
      expect(pi).toHaveLength(view.length);
      expect(textOf(pi.at(-1))).toBe(LAST);
      // pi's own loader resumes the exported file as abridge reads it.
      const text = runCli(['export', id, '--db', db, '--format', 'pi']).stdout;
      const at = firstDifference(piResume(text).sent, activeMessages(parseSession(text)));
      expect(at).toBe(-1);
    });
  });
