/**
 * Every TypeScript block of the README type-checks against the built package (`import … from 'abridge'` resolves
 * through package.json `exports` to dist/, as it does for a user): nothing documented is unimportable or misnamed.
 * Run after `npm run build` (`npm test` builds first).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The ```ts blocks of a Markdown text, with the line each starts on. */
function typescriptBlocks(markdown: string): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i]!)) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !lines[end]!.startsWith('```')) end++;
    out.push({ line: start + 1, code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return out;
}

describe('README', () => {
  const blocks = typescriptBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));

  it('has TypeScript blocks to check', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
  });

  it.skipIf(!existsSync(join(ROOT, 'dist', 'index.d.ts')))(
    'every TypeScript block type-checks against the built package',
    async () => {
      // Inside the package folder, so that `abridge` resolves to this package (self-reference through its exports) and the
      // SDKs to its node_modules.
      const dir = join(ROOT, '.readme-check');
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir);
      blocks.forEach((b, i) => writeFileSync(join(dir, `readme-line-${b.line}.ts`), `${b.code}\nexport {};\n`));
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: ['node'],
          },
          include: ['*.ts'],
        }),
      );
      const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      const result = await new Promise<{ code: number; out: string }>((done) =>
        execFile(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: ROOT }, (err, stdout, stderr) =>
          done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
        ),
      );
      rmSync(dir, { recursive: true, force: true });
      // Errors name the README line of the block (readme-line-N.ts).
      expect(result.out).toBe('');
      expect(result.code).toBe(0);
    },
    180_000,
  );
});
