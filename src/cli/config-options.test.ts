import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../manager/config-file.js';
import { DEFAULT_CONFIG } from '../manager/config.js';
import { defaultConfig, resolveConfig } from './config-options.js';

describe('resolveConfig', () => {
  const cwd = process.cwd();
  const dirs: string[] = [];
  const scratch = () => {
    const d = mkdtempSync(join(tmpdir(), 'abridge-config-options-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    process.chdir(cwd);
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('without a file or a flag gives what loadConfig gives (the defaults), as a copy', async () => {
    expect(defaultConfig()).toEqual(structuredClone(DEFAULT_CONFIG));
    process.chdir(scratch());
    const config = await resolveConfig({});
    expect(config).toEqual(await loadConfig());
    config.budget.thresholds.warn = 0.5;
    expect(DEFAULT_CONFIG.budget.thresholds.warn).toBe(0.8);
  });

  it('reads the file it finds, and applies flags over it', async () => {
    const dir = scratch();
    writeFileSync(
      join(dir, 'abridge.config.json'),
      JSON.stringify({ model: 'from-file', thresholds: { warn: '70%' } }),
    );
    process.chdir(dir);
    expect((await resolveConfig({})).budget.model).toBe('from-file');
    const flagged = await resolveConfig({ warn: '75%', model: 'from-flag' });
    expect(flagged.budget.model).toBe('from-flag');
    expect(flagged.budget.thresholds.warn).toBe(0.75);
  });

  it('validates flags with no file too', async () => {
    process.chdir(scratch());
    await expect(resolveConfig({ warn: 'lots' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});
