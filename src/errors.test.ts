import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AbridgeError } from './errors.js';
import { MemorySessionStore } from './store/memory-session-store.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

describe('AbridgeError', () => {
  it('carries its cause, and its code on the line Node prints (as Node’s own errors do)', () => {
    const cause = new Error('EACCES: permission denied');
    const err = new AbridgeError('FILE_UNREADABLE', 'cannot read s.jsonl: permission denied', { cause });
    expect(err.cause).toBe(cause);
    expect(err.stack!.split('\n')[0]).toBe('AbridgeError [FILE_UNREADABLE]: cannot read s.jsonl: permission denied');
    expect(err.message).toBe('cannot read s.jsonl: permission denied');
    expect(Object.keys(err)).not.toContain('details');
  });

  it.skipIf(!existsSync(join(ROOT, 'dist/index.js')))(
    'uncaught in a program, prints the error line, not pages of bundled source (the built package)',
    () => {
      const code = `import { parseSession } from ${JSON.stringify(join(ROOT, 'dist/index.js'))}; parseSession('x', { format: 'nope' });`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
        encoding: 'utf8',
        env: { ...process.env, ABRIDGE_DEBUG: '' },
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^AbridgeError \[UNKNOWN_FORMAT_ID\]: unknown format "nope"; expected one of: pi, /m);
      // Node shows the line the error was thrown from: the bundle keeps its lines short (scripts/build.js lineLimit).
      expect(r.stderr.length).toBeLessThan(1_500);
    },
  );

  it('CONFLICT carries the versions as fields', async () => {
    const store = new MemorySessionStore();
    await store.createSession({ id: 's', format: 'pi', info: {} });
    await store.append('s', [{ kind: 'message', message: { role: 'user', parts: [{ type: 'text', text: 'a' }] } }]);
    const err = await store
      .append('s', [{ kind: 'message', message: { role: 'user', parts: [{ type: 'text', text: 'b' }] } }], {
        expectedVersion: 0,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbridgeError);
    expect((err as AbridgeError).code).toBe('CONFLICT');
    expect((err as AbridgeError).details).toEqual({ sessionId: 's', expected: 0, actual: 1 });
  });
});
