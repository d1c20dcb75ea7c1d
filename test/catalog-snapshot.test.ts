import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelsDevCatalog } from '../src/budget/catalog.js';

const SCRIPT = resolve(import.meta.dirname, '../scripts/catalog-snapshot.js');
const TIERS = resolve(import.meta.dirname, '../scripts/catalog-tiers.js');
const SNAPSHOT = resolve(import.meta.dirname, '../data/catalog-snapshot.json');

// The registry is not asked (--offline): the release installed as a dev dependency is the source.
describe('scripts/catalog-snapshot.js', () => {
  it('--offline writes a models.dev-shaped snapshot abridge reads, saying where it came from; --api-json goes over it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-snapshot-'));
    const api = join(dir, 'api.json');
    writeFileSync(
      api,
      JSON.stringify({
        anthropic: {
          models: {
            'claude-test-9': {
              id: 'claude-test-9',
              limit: { context: 9_000_000, output: 9_000 },
              cost: { input: 9, output: 90, cache_read: 0.9 },
            },
          },
        },
      }),
    );
    const out = join(dir, 'snapshot.json');
    const r = spawnSync(process.execPath, [SCRIPT, '--offline', '--api-json', api, '--out', out], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^wrote .*snapshot\.json: \d+ models of \d+ providers from @mariozechner\/pi-ai@[\d.]+ \+ /,
    );
    const snapshot = JSON.parse(readFileSync(out, 'utf8'));
    expect(snapshot.$source.from[0]).toMatchObject({ package: '@mariozechner/pi-ai', how: 'installed' });
    expect(snapshot.$source.from[1]).toMatchObject({ how: 'models.dev api.json', models: 1 });
    for (const p of ['anthropic', 'openai', 'google', 'deepseek', 'mistral', 'xai'])
      expect(Object.keys(snapshot[p].models).length, p).toBeGreaterThan(0);
    expect(snapshot.anthropic.models['claude-test-9']).toEqual({
      id: 'claude-test-9',
      limit: { context: 9_000_000, output: 9_000 },
      cost: { input: 9, output: 90, cache_read: 0.9 },
    });
    // pi-ai's cache prices of 0 ("none") are left out, so that abridge charges the input price for them.
    expect(snapshot.openai.models['gpt-4o'].cost).toEqual({ input: 2.5, output: 10, cache_read: 1.25 });
    // Long-context tiers from scripts/catalog-tiers.js, in models.dev's spelling.
    expect(snapshot.$source.longContextTiers).toBeGreaterThan(0);
    expect(snapshot.anthropic.models['claude-sonnet-4-20250514'].cost.tiers).toEqual([
      { input: 6, output: 22.5, tier: { type: 'context', size: 200_000 } },
    ]);
    const entries = parseModelsDevCatalog(snapshot, out).flat();
    expect(entries.length).toBe(snapshot.$source.models);
  });

  it('the committed snapshot carries every tier of scripts/catalog-tiers.js: applying the table again changes nothing', () => {
    const copy = join(mkdtempSync(join(tmpdir(), 'abridge-tiers-')), 'snapshot.json');
    const before = readFileSync(SNAPSHOT, 'utf8');
    writeFileSync(copy, before);
    const r = spawnSync(process.execPath, [TIERS, copy], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/long-context tiers on 4 models/);
    expect(readFileSync(copy, 'utf8')).toBe(before);
  });

  it('rejects an unknown argument with its usage, exit 2', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '--bogus'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown argument --bogus');
    expect(r.stderr).toContain('usage: node scripts/catalog-snapshot.js');
  });
});
