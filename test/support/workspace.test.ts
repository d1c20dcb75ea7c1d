/** The example agent's simulated workspace: deterministic, realistic, 20–40 KB, real errors for what does not exist. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bash, readFile, WORKSPACE_FILES, WORKSPACE_ROOT } from '../../examples/workspace.js';
import { SCRIPT_COMMANDS, SCRIPT_PATHS } from './fake-provider.js';

const digest = (s: string) => createHash('sha256').update(s).digest('hex');

describe('examples/workspace', () => {
  it('every file and every scripted command gives 20–40 KB, and the same bytes twice', () => {
    for (const path of WORKSPACE_FILES) {
      const r = readFile(path);
      expect(r.isError, path).toBe(false);
      expect(r.output.length, path).toBeGreaterThanOrEqual(20_000);
      expect(r.output.length, path).toBeLessThanOrEqual(40_000);
      expect(readFile(path).output).toBe(r.output);
    }
    for (const command of SCRIPT_COMMANDS) {
      const r = bash(command);
      expect(r.output.length, command).toBeGreaterThanOrEqual(20_000);
      expect(r.output.length, command).toBeLessThanOrEqual(40_000);
      expect(bash(command)).toEqual(r);
    }
  });

  it('different arguments give different content', () => {
    const outputs = new Set([
      ...WORKSPACE_FILES.map((p) => digest(readFile(p).output)),
      ...SCRIPT_COMMANDS.map((c) => digest(bash(c).output)),
    ]);
    // `cat src/server/router.ts` is the same file as readFile('src/server/router.ts').
    expect(outputs.size).toBe(WORKSPACE_FILES.length + SCRIPT_COMMANDS.length - 1);
  });

  it('the scripted model reads files that exist, except one that does not', () => {
    const missing = SCRIPT_PATHS.filter((p) => readFile(p).isError);
    expect(missing).toEqual(['src/legacy/old-handler.ts']);
  });

  it('looks like what it imitates', () => {
    const test = bash('npm test');
    expect(test.exitCode).toBe(1);
    expect(test.output).toMatch(/ FAIL {2}test\/\S+\.test\.ts > /);
    expect(test.output).toMatch(/Tests {2}\d+ failed \| \d+ passed/);
    expect(bash('git log --stat -n 40').output).toMatch(/^commit [0-9a-f]{40}\nAuthor: .+ <.+>\nDate: /);
    expect(bash('npx tsc --noEmit')).toMatchObject({ exitCode: 2, isError: true });
    expect(bash('npx tsc --noEmit').output).toMatch(/^src\/\S+\.ts\(\d+,\d+\): error TS\d{4}: /);
    expect(readFile('src/server/router.ts').output).toMatch(/^\/\*\*[\s\S]*export async function /);
    expect(JSON.parse(readFile('package-lock.json').output)).toMatchObject({ name: 'orders-api', lockfileVersion: 3 });
    expect(readFile(`${WORKSPACE_ROOT}/README.md`).output).toBe(readFile('./README.md').output);
  });

  it('gives the errors a real file system and shell give', () => {
    expect(readFile('src/nope.ts')).toEqual({
      output: `ENOENT: no such file or directory, open '${WORKSPACE_ROOT}/src/nope.ts'`,
      isError: true,
      exitCode: 1,
    });
    expect(bash('cat src/nope.ts')).toEqual({
      output: 'cat: src/nope.ts: No such file or directory',
      isError: true,
      exitCode: 1,
    });
    expect(bash('frobnicate --all')).toEqual({
      output: 'bash: frobnicate: command not found\n',
      isError: true,
      exitCode: 127,
    });
  });

  it('is identical in another process', () => {
    const here = digest(readFile('src/db/migrations.ts').output + bash('npm test').output + bash('ls -laR src').output);
    const script = `import { readFile, bash } from './examples/workspace.ts';
import { createHash } from 'node:crypto';
process.stdout.write(createHash('sha256').update(readFile('src/db/migrations.ts').output + bash('npm test').output + bash('ls -laR src').output).digest('hex'));`;
    const there = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
    });
    expect(there).toBe(here);
  });
});
