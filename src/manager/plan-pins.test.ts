/**
 * The ContextManager's planCompaction / applyCompaction and pin / unpin, on a MemorySessionStore, SQLite and (with
 * ABRIDGE_PG_URL) PostgreSQL: a plan is inspected and applied exactly, a stale plan refused, an edited summary checked,
 * pins kept verbatim through compactions and kept by a resumed manager.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkInvariants } from '../compaction/invariants.js';
import type { Message } from '../model/types.js';
import { activeView } from '../model/view.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import type { SessionStore } from '../store/session-store.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { grepOutput, grepSteps } from '../../test/support/agent-loop.js';
import { ContextManager } from './context-manager.js';

const PG_URL = process.env.ABRIDGE_PG_URL || undefined;
const TASK = 'Find every use of value in src/ and list the modules. Never edit tests.';

const resultOf = (i: number) => (m: Message) =>
  m.role === 'tool' && m.parts.some((p) => p.type === 'tool-result' && p.callId === `call_${i}`);

interface StoreCase {
  name: string;
  open: () => Promise<{ store: SessionStore; reopen: () => Promise<SessionStore>; close: () => Promise<void> }>;
  skip?: boolean;
}

const stores: StoreCase[] = [
  {
    name: 'MemorySessionStore',
    open: async () => {
      const store = new MemorySessionStore();
      return { store, reopen: async () => store, close: async () => undefined };
    },
  },
  {
    name: 'SQLite',
    open: async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'abridge-plan-pins-')), 's.db');
      const store = await openSqliteStore(file);
      const opened: SessionStore[] = [store];
      return {
        store,
        reopen: async () => {
          const again = await openSqliteStore(file);
          opened.push(again);
          return again;
        },
        close: async () => {
          for (const s of opened) await s.close();
        },
      };
    },
  },
  {
    name: 'PostgreSQL',
    skip: !PG_URL,
    open: async () => {
      const { openPostgresStore } = await import('../store/postgres/index.js');
      const schema = `abridge_plan_pins_${process.pid}_${Date.now()}`;
      const store = await openPostgresStore(PG_URL!, { schema });
      const opened: SessionStore[] = [store];
      return {
        store,
        reopen: async () => {
          const again = await openPostgresStore(PG_URL!, { schema });
          opened.push(again);
          return again;
        },
        close: async () => {
          const pg = (await import('pg')).default;
          for (const s of opened) await s.close();
          const c = new pg.Client({ connectionString: PG_URL });
          await c.connect();
          await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await c.end();
        },
      };
    },
  },
];

for (const sc of stores) {
  describe.skipIf(sc.skip === true)(
    `ContextManager plan, apply and pins on ${sc.name}${sc.skip ? ' (skipped: set ABRIDGE_PG_URL)' : ''}`,
    () => {
      const manager = (store: SessionStore, sessionId: string) =>
        new ContextManager({
          model: 'claude-sonnet-4-5',
          provider: 'anthropic',
          store,
          sessionId,
          system: 'You are a coding agent.',
          now: () => new Date(0),
        });

      it('planCompaction changes nothing; applyCompaction records exactly that plan', async () => {
        const { store, close } = await sc.open();
        try {
          const cm = manager(store, 'plan-1');
          await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
          await grepSteps(cm, 0, 10);
          const entries = cm.session.entries.length;
          const stored = (await store.entries('plan-1')).length;
          const plan = await cm.planCompaction({ target: 700 });
          expect(cm.session.entries.length).toBe(entries);
          expect((await store.entries('plan-1')).length).toBe(stored);
          expect(await store.latestSnapshot('plan-1')).toBeUndefined();
          expect(plan.archived.length).toBeGreaterThan(0);
          expect(plan.summary.length).toBeGreaterThan(0);
          expect(plan.kept.length + plan.edited.length).toBeLessThan(plan.archived.length + plan.kept.length);
          expect(plan.afterTokens).toBeLessThanOrEqual(700);
          const result = await cm.applyCompaction(plan);
          expect(result.marker!.summary).toBe(plan.summary);
          expect(result.marker!.archived).toEqual(plan.result.marker!.archived);
          const view = activeView(cm.session).map((v) => v.message);
          expect(view.map((m) => JSON.stringify(m.parts))).toEqual(plan.view.map((m) => JSON.stringify(m.parts)));
          const snapshot = await store.latestSnapshot('plan-1');
          expect(snapshot?.marker?.summary).toBe(plan.summary);
          // Applied: the plan is stale now.
          await expect(cm.applyCompaction(plan)).rejects.toThrow(/plan is stale/);
        } finally {
          await close();
        }
      });

      it('a stale plan is refused; an edited summary is used, and checked', async () => {
        const { store, close } = await sc.open();
        try {
          const cm = manager(store, 'plan-2');
          await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
          await grepSteps(cm, 0, 10);
          const stale = await cm.planCompaction({ target: 4000 });
          await grepSteps(cm, 10, 1);
          const err = await cm.applyCompaction(stale).catch((e: unknown) => e as Error & { code?: string });
          expect(err).toMatchObject({ code: 'CONFLICT' });
          expect((err as Error).message).toMatch(/the session changed since it was made \(entries were appended/);
          const plan = await cm.planCompaction({ target: 4000 });
          const long = grepOutput(99, 400);
          await expect(cm.applyCompaction(plan, { summary: long })).rejects.toThrow(
            /the summary given is \d+ tokens, and the rest of the view leaves it \d+ of the target of 4000/,
          );
          // Refused: nothing recorded, and the plan still applies.
          expect(await store.latestSnapshot('plan-2')).toBeUndefined();
          const mine = 'Read modules 0 to 6 with grep; every use of value is a compute() call. (edited)';
          const result = await cm.applyCompaction(plan, { summary: mine });
          expect(result.marker!.summary).toBe(mine);
          expect(result.reachedTarget).toBe(true);
          expect((await store.latestSnapshot('plan-2'))?.marker?.summary).toBe(mine);
          expect(checkInvariants(activeView(cm.session))).toEqual([]);
          const resumed = await ContextManager.resume(store, 'plan-2', { model: 'claude-sonnet-4-5' });
          expect(JSON.stringify(activeView(resumed.session)[1]?.message)).toContain(mine);
        } finally {
          await close();
        }
      });

      it('pins stay verbatim through every compaction, and a resumed manager keeps them', async () => {
        const { store, reopen, close } = await sc.open();
        try {
          const cm = manager(store, 'pins-1');
          await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
          await grepSteps(cm, 0, 8);
          // A host's field on the message it appends, a test of each message, a message appended.
          const note: Message = {
            role: 'user',
            parts: [{ type: 'text', text: 'Keep: the API is frozen.' }],
            pinned: true,
          };
          await cm.append(note);
          expect(await cm.pin(resultOf(1))).toBe(1);
          await grepSteps(cm, 8, 4);
          const fifth = cm.session.entries.find((e) => e.message && resultOf(5)(e.message))!;
          expect(await cm.pin(fifth.id!)).toBe(1);
          expect(await cm.pin(fifth.id!)).toBe(0);
          const pinnedParts = [resultOf(1), resultOf(5)].map((f) =>
            JSON.stringify(cm.session.entries.find((e) => e.message && f(e.message))!.message!.parts),
          );
          const plan = await cm.planCompaction({ target: 6000 });
          expect(plan.pinned.map((m) => JSON.stringify(m.parts))).toEqual(
            expect.arrayContaining([...pinnedParts, JSON.stringify(note.parts)]),
          );
          await cm.applyCompaction(plan);
          const shown = () => activeView(cm.session).map((v) => JSON.stringify(v.message.parts));
          for (const p of [...pinnedParts, JSON.stringify(note.parts)]) expect(shown()).toContain(p);
          expect(shown()).not.toContain(
            JSON.stringify(cm.session.entries.find((e) => e.message && resultOf(3)(e.message))?.message?.parts),
          );
          // A second compaction, after more work, from a resumed manager on a reopened store.
          const again = await ContextManager.resume(await reopen(), 'pins-1', { model: 'claude-sonnet-4-5' });
          await grepSteps(again, 12, 4);
          const r = await again.compactNow({ target: 5000 });
          expect(r.protectedParts.filter((p) => p.what.startsWith('pinned message'))).toHaveLength(3);
          const view = activeView(again.session).map((v) => JSON.stringify(v.message.parts));
          for (const p of [...pinnedParts, JSON.stringify(note.parts)]) expect(view).toContain(p);
          // Unpinned, the result may go at the next compaction.
          expect(await again.unpin(resultOf(5))).toBe(1);
          await grepSteps(again, 16, 2);
          const r2 = await again.compactNow({ target: 3000 });
          expect(r2.protectedParts.filter((p) => p.what.startsWith('pinned message'))).toHaveLength(2);
          expect(activeView(again.session).map((v) => JSON.stringify(v.message.parts))).not.toContain(pinnedParts[1]);
        } finally {
          await close();
        }
      });

      it('names pins that make the target unreachable; refuses what is not a pin', async () => {
        const { store, close } = await sc.open();
        try {
          const cm = manager(store, 'pins-2');
          await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
          await grepSteps(cm, 0, 8);
          await cm.pin((m) => m.role === 'tool');
          const plan = await cm.planCompaction({ target: 2000 });
          expect(plan.reachedTarget).toBe(false);
          const pins = plan.result.protectedParts.filter((p) => p.what.startsWith('pinned message'));
          expect(pins).toHaveLength(8);
          expect(pins.reduce((n, p) => n + p.tokens, 0)).toBeGreaterThan(2000);
          await expect(cm.pin('no-such-id')).rejects.toThrow(/pin: no message with entry id "no-such-id"/);
          await expect(cm.unpin(42 as never)).rejects.toThrow(/unpin: expected an entry id, a message or a test/);
          await expect(cm.applyCompaction({ ...plan })).rejects.toThrow(/not a plan of this manager/);
        } finally {
          await close();
        }
      });
    },
  );
}
