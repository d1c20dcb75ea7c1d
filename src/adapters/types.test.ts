/**
 * The typed entry points at run time, as a consumer of the built package (`dist/`, installed as npm would lay it out)
 * loads them. Their types against the official SDKs (a consumer passing `toAnthropicRequest(...)` straight to
 * `client.messages.create(...)` must compile; one mixing the providers up must be refused line by line) are checked by
 * the type checker's own pass, not here: scripts/typecheck-consumers.js (`npm run typecheck:consumers`, a step of
 * `npm test`).
 *
 * dist/ is built by vitest's global setup (test/global-setup.ts) when it is missing or stale.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

let dir = '';

describe('the typed entry points of the built package, loaded by a consumer', () => {
  beforeAll(() => {
    if (!existsSync(join(root, 'dist/adapters/anthropic.js')) || !existsSync(join(root, 'dist/adapters/openai.js'))) {
      throw new Error('dist/adapters/*.js not found: vitest builds dist/ in test/global-setup.ts');
    }
    // A consumer project beside nothing of ours: abridge and the SDKs installed as links, as npm would lay them out.
    dir = mkdtempSync(join(tmpdir(), 'abridge-types-'));
    mkdirSync(join(dir, 'node_modules/@anthropic-ai'), { recursive: true });
    symlinkSync(root, join(dir, 'node_modules/abridge-context'), 'dir');
    symlinkSync(join(root, 'node_modules/@anthropic-ai/sdk'), join(dir, 'node_modules/@anthropic-ai/sdk'), 'dir');
    symlinkSync(join(root, 'node_modules/openai'), join(dir, 'node_modules/openai'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('at run time the subpaths load, the 0.1 alias subpaths are gone, and no SDK is imported statically', async () => {
    const script = [
      "const a = await import('abridge-context/anthropic');",
      "const o = await import('abridge-context/openai');",
      "const gone = await Promise.all(['abridge-context/providers/anthropic', 'abridge-context/providers/openai'].map((p) => import(p).then(() => 'loaded', (e) => e.code)));",
      "const core = await import('abridge-context');",
      'console.log(JSON.stringify([...gone, typeof a.anthropicClient, typeof o.openaiClient, a.contextOverflow === undefined && typeof core.contextOverflow === "function", typeof a.toAnthropicRequest, typeof o.toOpenAIResponsesRequest, typeof core.toRequest]));',
    ].join('\n');
    writeFileSync(join(dir, 'load.mjs'), script);
    const out = await new Promise<string>((done, fail) =>
      execFile(process.execPath, ['load.mjs'], { cwd: dir }, (err, stdout, stderr) =>
        err ? fail(new Error(stderr)) : done(stdout),
      ),
    );
    expect(JSON.parse(out)).toEqual([
      'ERR_PACKAGE_PATH_NOT_EXPORTED',
      'ERR_PACKAGE_PATH_NOT_EXPORTED',
      'function',
      'function',
      true,
      'function',
      'function',
      'function',
    ]);
    // The SDK types are type-only imports: the built modules (entry files and the chunks they share) load an SDK only
    // where a client is created (import()).
    const built = readdirSync(join(root, 'dist'), { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.js') && !f.startsWith('analysis/view/'),
    );
    expect(built).toContain('adapters/anthropic.js');
    for (const f of built) {
      const js = readFileSync(join(root, 'dist', f), 'utf8');
      expect(js, f).not.toMatch(/^import[^;]*from ['"](@anthropic-ai\/sdk|openai)['"]/m);
    }
  }, 300_000);
});
