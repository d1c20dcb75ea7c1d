/**
 * Every TypeScript block of the README type-checks against the built package (`import … from 'abridge-context'` resolves
 * through package.json `exports` to dist/, as it does for a user): nothing documented is unimportable or misnamed.
 * Run after `npm run build` (`npm test` builds first).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** README.md and every docs/*.md, each block named after its file and line (`docs-agent-loop-line-12.ts`). */
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('README and docs/', () => {
  const blocks = DOCS.flatMap((doc) =>
    typescriptBlocks(readFileSync(join(ROOT, doc), 'utf8')).map((b) => ({
      ...b,
      name: `${doc.replace(/\.md$/, '').replace(/\//g, '-')}-line-${b.line}`,
    })),
  );

  it('has TypeScript blocks to check, the README its agent loop', () => {
    expect(blocks.filter((b) => b.name.startsWith('README-')).length).toBeGreaterThanOrEqual(1);
    expect(blocks.length).toBeGreaterThanOrEqual(6);
  });

  it.skipIf(!existsSync(join(ROOT, 'dist', 'index.d.ts')))(
    'every TypeScript block type-checks against the built package',
    async () => {
      // Inside the package folder, so that `abridge` resolves to this package (self-reference through its exports) and the
      // SDKs to its node_modules.
      const dir = join(ROOT, '.readme-check');
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir);
      for (const b of blocks) writeFileSync(join(dir, `${b.name}.ts`), `${b.code}\nexport {};\n`);
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
      // Errors name the file and line of the block (docs-cli-line-N.ts).
      expect(result.out).toBe('');
      expect(result.code).toBe(0);
    },
    180_000,
  );
});
