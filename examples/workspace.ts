/**
 * A simulated workspace for the example coding agent: `readFile(path)` and `bash(command)` return deterministic,
 * realistic outputs of 20–40 KB (TypeScript sources, tests, Markdown, a lock file, test logs with failures, `git log`,
 * diffs, compiler errors, directory listings), seeded by the argument, so they are identical across runs, processes
 * and machines (no clock, no Math.random). Unknown paths and commands get the error a real shell or file system gives.
 *
 * All content is invented: a small HTTP service ("orders-api") with a router, middleware, a database layer and tests.
 */

export interface ToolOutput {
  /** What the tool prints (stdout and stderr interleaved, as an agent's shell tool returns them). */
  output: string;
  /** True when the command failed or the file could not be read. */
  isError: boolean;
  /** Shell exit status (0 for a successful read; 1 for a missing file). */
  exitCode: number;
}

export const WORKSPACE_ROOT = '/workspace/orders-api';

/** Every file the workspace has (readFile of anything else fails with ENOENT). */
export const WORKSPACE_FILES: readonly string[] = [
  'README.md',
  'CHANGELOG.md',
  'package-lock.json',
  'docs/architecture.md',
  'docs/operations.md',
  'src/index.ts',
  'src/server/router.ts',
  'src/server/app.ts',
  'src/server/errors.ts',
  'src/server/middleware/rate-limit.ts',
  'src/server/middleware/auth.ts',
  'src/server/middleware/logging.ts',
  'src/auth/session.ts',
  'src/auth/tokens.ts',
  'src/db/migrations.ts',
  'src/db/pool.ts',
  'src/db/orders.ts',
  'src/db/customers.ts',
  'src/config/load.ts',
  'src/config/schema.ts',
  'src/util/cache.ts',
  'src/util/retry.ts',
  'src/util/time.ts',
  'src/orders/service.ts',
  'src/orders/pricing.ts',
  'src/orders/validation.ts',
  'test/router.test.ts',
  'test/orders.test.ts',
  'test/pricing.test.ts',
  'test/session.test.ts',
  'test/cache.test.ts',
  'test/rate-limit.test.ts',
];

// ---------------------------------------------------------------------------------------------------------------
// Deterministic randomness: FNV-1a of the argument seeds a mulberry32 generator.

function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

class Rng {
  private state: number;
  constructor(seed: string) {
    this.state = hash(seed) || 1;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  hex(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[this.int(0, 15)];
    return s;
  }
  /** A target size: outputs end up between 20 and 40 KB. */
  size(): number {
    return this.int(20_000, 37_000); // generators stop after the block that crosses it: at most ~40 KB
  }
}

const VERBS = [
  'load',
  'parse',
  'build',
  'resolve',
  'validate',
  'apply',
  'compute',
  'format',
  'fetch',
  'store',
  'refresh',
  'normalize',
  'merge',
  'emit',
  'schedule',
  'retry',
  'encode',
  'decode',
  'register',
  'release',
];
const NOUNS = [
  'Order',
  'Customer',
  'Session',
  'Route',
  'Token',
  'Price',
  'Discount',
  'Invoice',
  'Migration',
  'Config',
  'Cache',
  'Window',
  'Handler',
  'Request',
  'Payload',
  'Cursor',
  'Batch',
  'Ledger',
  'Quota',
  'Shipment',
];
const FIELDS = [
  'id',
  'customerId',
  'createdAt',
  'updatedAt',
  'status',
  'total',
  'currency',
  'items',
  'expiresAt',
  'attempts',
  'region',
  'limit',
  'offset',
  'version',
  'checksum',
  'email',
  'taxRate',
  'notes',
];
const TYPES = [
  'string',
  'number',
  'boolean',
  'Date',
  'string[]',
  'Record<string, number>',
  'OrderItem[]',
  'Money',
  'SessionState',
];
const WORDS =
  'the order service router middleware request session token cache database migration retry window limit customer pricing discount invoice handler payload config schema error timeout connection pool query index transaction rollback commit deploy release metric log trace latency budget queue worker batch'.split(
    ' ',
  );
const AUTHORS = [
  ['Maya Lindqvist', 'maya@orders.example'],
  ['Tomás Ferreira', 'tomas@orders.example'],
  ['Priya Raman', 'priya@orders.example'],
  ['Jonas Weber', 'jonas@orders.example'],
  ['Aiko Tanaka', 'aiko@orders.example'],
] as const;

function sentence(r: Rng, words = r.int(8, 18)): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(r.pick(WORDS));
  const s = out.join(' ');
  return s[0]!.toUpperCase() + s.slice(1) + '.';
}

function ident(r: Rng): string {
  return r.pick(VERBS) + r.pick(NOUNS);
}

// ---------------------------------------------------------------------------------------------------------------
// File contents

function typescriptSource(path: string, r: Rng): string {
  const target = r.size();
  const module = path.replace(/^src\//, '').replace(/\.ts$/, '');
  const lines: string[] = [
    `/**`,
    ` * ${module}: ${sentence(r)}`,
    ` * ${sentence(r)}`,
    ` */`,
    `import { z } from 'zod';`,
    `import type { Pool, PoolClient } from 'pg';`,
    `import { logger } from '../util/logging.js';`,
    `import { ${ident(r)}, ${ident(r)} } from '../orders/service.js';`,
    `import { AppError, NotFoundError } from '../server/errors.js';`,
    '',
  ];
  let size = lines.join('\n').length;
  let n = 0;
  while (size < target) {
    const block: string[] = [];
    const name = ident(r) + (n++ > 0 ? String(n) : '');
    if (r.next() < 0.3) {
      const iface = r.pick(NOUNS) + r.pick(['Record', 'Options', 'State', 'Result', 'Row']) + n;
      block.push(`export interface ${iface} {`);
      for (let i = r.int(3, 8); i > 0; i--)
        block.push(`  ${r.pick(FIELDS)}${r.next() < 0.3 ? '?' : ''}: ${r.pick(TYPES)};`);
      block.push('}', '');
    }
    block.push(`/** ${sentence(r)} */`);
    block.push(
      `export async function ${name}(input: ${r.pick(NOUNS)}Input, options: { signal?: AbortSignal; retries?: number } = {}): Promise<${r.pick(NOUNS)}> {`,
    );
    block.push(`  const started = performance.now();`);
    for (let i = r.int(4, 14); i > 0; i--) {
      const f = r.pick(FIELDS);
      switch (r.int(0, 6)) {
        case 0:
          block.push(
            `  if (!input.${f}) {`,
            `    throw new AppError('${f.toUpperCase()}_MISSING', \`${r.pick(NOUNS).toLowerCase()} \${input.id} has no ${f}\`);`,
            `  }`,
          );
          break;
        case 1:
          block.push(
            `  for (const item of input.items ?? []) {`,
            `    total += item.quantity * item.unitPrice;`,
            `    if (total > MAX_${r.pick(NOUNS).toUpperCase()}_TOTAL) break;`,
            `  }`,
          );
          break;
        case 2:
          block.push(
            `  const ${f}Row = await pool.query('SELECT ${f}, status FROM ${r.pick(NOUNS).toLowerCase()}s WHERE id = $1 FOR UPDATE', [input.id]);`,
          );
          break;
        case 3:
          block.push(
            `  // ${sentence(r)}`,
            `  logger.debug({ ${f}: input.${f}, elapsedMs: performance.now() - started }, '${name} ${r.pick(VERBS)}');`,
          );
          break;
        case 4:
          block.push(
            `  const ${f} = ${ident(r)}(input.${r.pick(FIELDS)}, { retries: options.retries ?? ${r.int(1, 5)} });`,
          );
          break;
        case 5:
          block.push(`  if (options.signal?.aborted) return Promise.reject(options.signal.reason);`);
          break;
        default:
          block.push(
            `  const schema = z.object({ ${f}: z.${r.pick(['string()', 'number().int()', 'boolean()'])}, ${r.pick(FIELDS)}: z.string().optional() });`,
            `  const parsed = schema.parse(input);`,
          );
      }
    }
    block.push(
      `  return { ...input, ${r.pick(FIELDS)}: ${r.pick(['total', 'parsed', 'undefined', 'Date.now()', `'${r.pick(WORDS)}'`])} } as ${r.pick(NOUNS)};`,
      `}`,
      '',
    );
    const text = block.join('\n');
    lines.push(text);
    size += text.length + 1;
  }
  return lines.join('\n');
}

function testSource(path: string, r: Rng): string {
  const target = r.size();
  const subject = path.replace(/^test\//, '').replace(/\.test\.ts$/, '');
  const lines = [
    `import { describe, expect, it, beforeEach, vi } from 'vitest';`,
    `import { ${ident(r)}, ${ident(r)} } from '../src/${subject}.js';`,
    '',
  ];
  let size = lines.join('\n').length;
  while (size < target) {
    const block = [
      `describe('${r.pick(VERBS)} ${r.pick(NOUNS).toLowerCase()}', () => {`,
      `  beforeEach(() => {`,
      `    vi.useFakeTimers({ now: new Date('2026-03-0${r.int(1, 9)}T10:00:00Z') });`,
      `  });`,
      '',
    ];
    for (let i = r.int(3, 7); i > 0; i--) {
      const f = r.pick(FIELDS);
      block.push(
        `  it('${sentence(r, r.int(5, 9)).toLowerCase().replace(/\.$/, '')}', async () => {`,
        `    const ${f} = await ${ident(r)}({ id: 'ord_${r.hex(8)}', ${r.pick(FIELDS)}: ${r.int(1, 900)} });`,
        `    expect(${f}.${r.pick(FIELDS)}).toBe(${r.pick(["'pending'", "'paid'", String(r.int(0, 500)), 'true', 'undefined'])});`,
        `    expect(${f}).toMatchObject({ status: '${r.pick(['pending', 'paid', 'shipped', 'refunded'])}' });`,
        `  });`,
        '',
      );
    }
    block.push('});', '');
    const text = block.join('\n');
    lines.push(text);
    size += text.length + 1;
  }
  return lines.join('\n');
}

function markdown(path: string, r: Rng): string {
  const target = r.size();
  const title = path === 'CHANGELOG.md' ? 'Changelog' : path.replace(/^docs\//, '').replace(/\.md$/, '');
  const lines = [`# ${title === 'README' ? 'orders-api' : title}`, '', sentence(r, 24), ''];
  let size = lines.join('\n').length;
  let version = 40;
  while (size < target) {
    const block: string[] = [];
    if (path === 'CHANGELOG.md') {
      block.push(
        `## 2.${version--}.${r.int(0, 4)} (2026-${String(r.int(1, 12)).padStart(2, '0')}-${String(r.int(1, 28)).padStart(2, '0')})`,
        '',
      );
      for (let i = r.int(3, 8); i > 0; i--)
        block.push(
          `- ${r.pick(['Fix', 'Add', 'Change', 'Remove', 'Speed up'])} ${sentence(r).toLowerCase()} (#${r.int(100, 2400)})`,
        );
    } else {
      block.push(
        `## ${r.pick(VERBS)[0]!.toUpperCase()}${r.pick(VERBS).slice(1)} ${r.pick(NOUNS).toLowerCase()}s`,
        '',
        sentence(r, 30),
        sentence(r, 20),
        '',
      );
      block.push(
        '```ts',
        `const ${r.pick(FIELDS)} = await ${ident(r)}({ region: '${r.pick(['eu-west-1', 'us-east-2', 'ap-south-1'])}' });`,
        '```',
        '',
      );
      for (let i = r.int(2, 5); i > 0; i--) block.push(`- \`${r.pick(FIELDS)}\`: ${sentence(r, 10)}`);
    }
    block.push('');
    const text = block.join('\n');
    lines.push(text);
    size += text.length + 1;
  }
  return lines.join('\n');
}

function lockFile(r: Rng): string {
  const target = r.size();
  const packages: Record<string, unknown> = {
    '': { name: 'orders-api', version: '2.40.1', dependencies: { pg: '^8.13.0', zod: '^3.24.1', fastify: '^5.2.0' } },
  };
  let size = 200;
  const names = [
    'fastify',
    'pg',
    'zod',
    'pino',
    'avvio',
    'light-my-request',
    'fast-json-stringify',
    'ajv',
    'fast-uri',
    'secure-json-parse',
    'pg-protocol',
    'pg-pool',
    'split2',
    'thread-stream',
    'sonic-boom',
    'on-exit-leak-free',
    'process-warning',
    'rfdc',
    'toad-cache',
    'semver',
  ];
  let i = 0;
  while (size < target) {
    const name = `${r.pick(names)}${i++ > names.length ? '-' + r.pick(WORDS) : ''}`;
    const version = `${r.int(0, 9)}.${r.int(0, 30)}.${r.int(0, 20)}`;
    const entry = {
      version,
      resolved: `https://registry.npmjs.org/${name}/-/${name}-${version}.tgz`,
      integrity: `sha512-${Buffer.from(r.hex(64), 'hex').toString('base64')}${Buffer.from(r.hex(32), 'hex').toString('base64')}`,
      license: r.pick(['MIT', 'ISC', 'BSD-3-Clause', 'Apache-2.0']),
      ...(r.next() < 0.5 ? { dependencies: { [r.pick(names)]: `^${r.int(1, 9)}.${r.int(0, 9)}.0` } } : {}),
      engines: { node: `>=${r.pick([14, 16, 18, 20])}` },
    };
    packages[`node_modules/${name}`] = entry;
    size += JSON.stringify(entry).length + name.length + 40;
  }
  return JSON.stringify(
    { name: 'orders-api', version: '2.40.1', lockfileVersion: 3, requires: true, packages },
    null,
    2,
  );
}

function fileContent(path: string): string {
  const r = new Rng('file:' + path);
  if (path === 'package-lock.json') return lockFile(r);
  if (path.endsWith('.md')) return markdown(path, r);
  if (path.endsWith('.test.ts')) return testSource(path, r);
  return typescriptSource(path, r);
}

function normalizePath(path: string): string {
  let p = path.trim();
  if (p.startsWith(WORKSPACE_ROOT + '/')) p = p.slice(WORKSPACE_ROOT.length + 1);
  while (p.startsWith('./')) p = p.slice(2);
  return p;
}

/** Read a workspace file: its deterministic content, or the ENOENT error Node's fs gives. */
export function readFile(path: string): ToolOutput {
  const p = normalizePath(path);
  if (!WORKSPACE_FILES.includes(p)) {
    return { output: `ENOENT: no such file or directory, open '${WORKSPACE_ROOT}/${p}'`, isError: true, exitCode: 1 };
  }
  return { output: fileContent(p), isError: false, exitCode: 0 };
}

// ---------------------------------------------------------------------------------------------------------------
// Commands

function testLog(r: Rng): ToolOutput {
  const target = r.size();
  const tests = WORKSPACE_FILES.filter((f) => f.startsWith('test/'));
  const failing = new Set(tests.filter(() => r.next() < 0.6));
  if (failing.size === 0) failing.add(tests[0]!);
  const failureBlocks: string[] = [];
  let passed = 0;
  // The verbose reporter's per-test lines fill the log; the failure details and the summary follow.
  const budget = target - failing.size * 2 * 760 - 400;
  const perFile = Math.floor(budget / tests.length);
  const body: string[] = [];
  for (const file of tests) {
    const lines: string[] = [];
    let size = 0;
    let failedHere = 0;
    while (size < perFile) {
      const name = `${r.pick(VERBS)} ${r.pick(NOUNS).toLowerCase()} > ${sentence(r, r.int(4, 8)).toLowerCase().replace(/\.$/, '')}`;
      const fail = failing.has(file) && failedHere < 2 && r.next() < 0.08;
      const line = `   ${fail ? '×' : '✓'} ${file} > ${name} ${r.int(1, 120)}ms`;
      if (fail) {
        failedHere++;
        const received = r.pick(['pending', 'paid', 'shipped']);
        const expected = r.pick(['refunded', 'cancelled', 'on_hold']);
        failureBlocks.push(
          [
            ` FAIL  ${file} > ${name}`,
            `AssertionError: expected '${received}' to be '${expected}' // Object.is equality`,
            '',
            `- Expected`,
            `+ Received`,
            '',
            `- "${expected}"`,
            `+ "${received}"`,
            '',
            ` ❯ ${file}:${r.int(10, 400)}:${r.int(5, 40)}`,
            `    ${r.int(10, 400)}|     const order = await ${ident(r)}({ id: 'ord_${r.hex(8)}' });`,
            `       |                                ^`,
            ` ❯ src/orders/service.ts:${r.int(10, 600)}:${r.int(3, 30)}`,
            ` ❯ src/server/router.ts:${r.int(10, 600)}:${r.int(3, 30)}`,
            ` ❯ node_modules/fastify/lib/route.js:${r.int(100, 700)}:${r.int(3, 30)}`,
            '',
            `⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[${failureBlocks.length + 1}]⎯`,
            '',
          ].join('\n'),
        );
      } else passed++;
      lines.push(line);
      size += line.length + 1;
    }
    const n = lines.length;
    body.push(
      ` ${failedHere ? '❯' : '✓'} ${file} (${n} tests${failedHere ? ` | ${failedHere} failed` : ''}) ${r.int(40, 900)}ms`,
      ...lines,
    );
  }
  const failed = failureBlocks.length;
  const failedFiles = new Set(failureBlocks.map((b) => b.split(' > ')[0])).size;
  const out = [
    '',
    '> orders-api@2.40.1 test',
    '> vitest run',
    '',
    ` RUN  v3.2.4 ${WORKSPACE_ROOT}`,
    '',
    ...body,
    '',
    `⎯⎯⎯⎯⎯⎯⎯ Failed Tests ${failed} ⎯⎯⎯⎯⎯⎯⎯`,
    '',
    ...failureBlocks,
    ` Test Files  ${failedFiles} failed | ${tests.length - failedFiles} passed (${tests.length})`,
    `      Tests  ${failed} failed | ${passed} passed (${failed + passed})`,
    `   Start at  10:${r.int(10, 59)}:${r.int(10, 59)}`,
    `   Duration  ${r.int(4, 30)}.${r.int(10, 99)}s (transform ${r.int(100, 900)}ms, setup 0ms, collect ${r.int(1, 4)}.${r.int(10, 99)}s, tests ${r.int(2, 9)}.${r.int(10, 99)}s)`,
    '',
  ].join('\n');
  return { output: out, isError: failed > 0, exitCode: failed > 0 ? 1 : 0 };
}

function gitLog(r: Rng, stat: boolean): string {
  const target = r.size();
  let out = '';
  let day = 28;
  let month = 10;
  while (out.length < target) {
    const [name, email] = r.pick(AUTHORS);
    const subject = `${r.pick(['fix', 'feat', 'refactor', 'test', 'chore', 'perf'])}(${r.pick(['router', 'orders', 'db', 'auth', 'cache', 'config'])}): ${sentence(r, r.int(4, 9)).toLowerCase().replace(/\.$/, '')}`;
    if (--day < 1) {
      day = 28;
      month--;
    }
    out += `commit ${r.hex(40)}\nAuthor: ${name} <${email}>\nDate:   ${r.pick(['Mon', 'Tue', 'Wed', 'Thu', 'Fri'])} ${['', 'Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][Math.max(1, month)]} ${day} ${r.int(8, 19)}:${String(r.int(0, 59)).padStart(2, '0')}:${String(r.int(0, 59)).padStart(2, '0')} 2026 +0100\n\n    ${subject}\n\n    ${sentence(r, 20)}\n\n`;
    if (stat) {
      const files = r.int(1, 6);
      let ins = 0;
      let del = 0;
      for (let i = 0; i < files; i++) {
        const a = r.int(0, 120);
        const d = r.int(0, 60);
        ins += a;
        del += d;
        out += ` ${r.pick(WORKSPACE_FILES).padEnd(40)} | ${String(a + d).padStart(4)} ${'+'.repeat(Math.min(30, Math.ceil(a / 4)))}${'-'.repeat(Math.min(20, Math.ceil(d / 4)))}\n`;
      }
      out += ` ${files} file${files > 1 ? 's' : ''} changed, ${ins} insertions(+), ${del} deletions(-)\n\n`;
    }
  }
  return out;
}

function listing(r: Rng, dir: string): string {
  // Listings are dense in tokens (~2.2 characters each): kept at the low end of the size range.
  const target = r.int(20_000, 24_000);
  let out = '';
  let k = 0;
  while (out.length < target) {
    const sub =
      k === 0
        ? dir
        : `${dir}/${r.pick(['server', 'orders', 'db', 'auth', 'util', 'config', 'generated', 'fixtures'])}${k > 8 ? '/' + r.pick(NOUNS).toLowerCase() + k : ''}`;
    k++;
    const n = r.int(6, 24);
    out += `${sub}:\ntotal ${r.int(40, 400)}\ndrwxr-xr-x  ${r.int(2, 9)} dev dev  4096 Nov ${r.int(1, 23)} ${r.int(8, 19)}:${String(r.int(0, 59)).padStart(2, '0')} .\ndrwxr-xr-x  ${r.int(2, 9)} dev dev  4096 Nov ${r.int(1, 23)} 09:12 ..\n`;
    for (let i = 0; i < n; i++) {
      const isDir = r.next() < 0.15;
      const name = isDir
        ? r.pick(NOUNS).toLowerCase() + 's'
        : `${r.pick(VERBS)}-${r.pick(NOUNS).toLowerCase()}${r.pick(['.ts', '.ts', '.test.ts', '.json', '.sql'])}`;
      out += `${isDir ? 'drwxr-xr-x' : '-rw-r--r--'}  1 dev dev ${String(isDir ? 4096 : r.int(200, 48_000)).padStart(6)} Nov ${String(r.int(1, 23)).padStart(2)} ${r.int(8, 19)}:${String(r.int(0, 59)).padStart(2, '0')} ${name}\n`;
    }
    out += '\n';
  }
  return out;
}

function grepOutput(r: Rng, pattern: string): string {
  const target = r.size();
  let out = '';
  const sources = WORKSPACE_FILES.filter((f) => f.startsWith('src/'));
  const marks = pattern.match(/[A-Z]{3,}/g) ?? ['TODO'];
  while (out.length < target) {
    out += `${r.pick(sources)}:${r.int(1, 900)}:  // ${r.pick(marks)}: ${sentence(r, r.int(6, 16))}\n`;
    if (r.next() < 0.3)
      out += `${r.pick(sources)}:${r.int(1, 900)}:    ${ident(r)}(input.${r.pick(FIELDS)}); // ${r.pick(marks)} ${sentence(r, 5)}\n`;
  }
  return out;
}

function diffOutput(r: Rng): string {
  const target = r.size();
  let out = '';
  while (out.length < target) {
    const file = r.pick(WORKSPACE_FILES.filter((f) => f.endsWith('.ts')));
    out += `diff --git a/${file} b/${file}\nindex ${r.hex(7)}..${r.hex(7)} 100644\n--- a/${file}\n+++ b/${file}\n`;
    for (let h = r.int(1, 4); h > 0; h--) {
      const start = r.int(1, 800);
      out += `@@ -${start},${12} +${start},${13} @@ export async function ${ident(r)}(\n`;
      for (let i = 0; i < 12; i++) {
        const f = r.pick(FIELDS);
        const kind = r.next();
        if (kind < 0.15)
          out += `-  const ${f} = ${ident(r)}(input.${f});\n+  const ${f} = await ${ident(r)}(input.${f}, { retries: ${r.int(1, 5)} });\n`;
        else
          out += `   ${r.pick([`if (!input.${f}) return undefined;`, `logger.info({ ${f} }, '${r.pick(VERBS)}');`, `// ${sentence(r, 8)}`, `total += item.${f};`])}\n`;
      }
    }
  }
  return out;
}

function tscOutput(r: Rng): string {
  const target = r.size();
  let out = '';
  const messages = [
    () =>
      `error TS2345: Argument of type '${r.pick(TYPES)}' is not assignable to parameter of type '${r.pick(TYPES)}'.`,
    () => `error TS2339: Property '${r.pick(FIELDS)}' does not exist on type '${r.pick(NOUNS)}Record'.`,
    () =>
      `error TS2322: Type '${r.pick(TYPES)} | undefined' is not assignable to type '${r.pick(TYPES)}'.\n  Type 'undefined' is not assignable to type '${r.pick(TYPES)}'.`,
    () => `error TS7006: Parameter '${r.pick(FIELDS)}' implicitly has an 'any' type.`,
    () => `error TS2304: Cannot find name '${ident(r)}'.`,
  ];
  let n = 0;
  while (out.length < target) {
    out += `${r.pick(WORKSPACE_FILES.filter((f) => f.endsWith('.ts')))}(${r.int(1, 900)},${r.int(1, 60)}): ${r.pick(messages)()}\n`;
    n++;
  }
  return out + `\nFound ${n} errors in ${Math.min(n, r.int(5, 20))} files.\n`;
}

function statusOutput(r: Rng): string {
  const target = r.size();
  let out = `On branch fix/router-middleware-order\nYour branch is ahead of 'origin/main' by ${r.int(1, 9)} commits.\n  (use "git push" to publish your local commits)\n\nChanges not staged for commit:\n  (use "git add <file>..." to update what will be committed)\n  (use "git restore <file>..." to discard changes in working directory)\n`;
  for (const f of WORKSPACE_FILES) if (r.next() < 0.3) out += `\tmodified:   ${f}\n`;
  out += `\nUntracked files:\n  (use "git add <file>..." to include in what will be committed)\n`;
  while (out.length < target)
    out += `\tcoverage/lcov-report/src/${r.pick(['orders', 'db', 'server', 'auth'])}/${r.pick(VERBS)}-${r.pick(NOUNS).toLowerCase()}-${r.hex(6)}.ts.html\n`;
  return out + '\nno changes added to commit (use "git add" and/or "git commit -a")\n';
}

function findOutput(r: Rng): string {
  const target = r.size();
  let out =
    WORKSPACE_FILES.filter((f) => f.endsWith('.ts'))
      .map((f) => `./${f}`)
      .join('\n') + '\n';
  while (out.length < target)
    out += `./src/generated/${r.pick(NOUNS).toLowerCase()}/${r.pick(VERBS)}-${r.pick(NOUNS).toLowerCase()}-${r.hex(4)}.ts\n`;
  return out;
}

/** Run a shell command in the simulated workspace. */
export function bash(command: string): ToolOutput {
  const cmd = command.trim();
  const r = new Rng('bash:' + cmd);
  const word = cmd.split(/\s+/)[0] ?? '';
  if (/^(npm (run )?test|npx vitest|pnpm test|yarn test)\b/.test(cmd)) return testLog(r);
  if (/^git log\b/.test(cmd)) return { output: gitLog(r, /--stat/.test(cmd)), isError: false, exitCode: 0 };
  if (/^git diff\b/.test(cmd)) return { output: diffOutput(r), isError: false, exitCode: 0 };
  if (/^git status\b/.test(cmd)) return { output: statusOutput(r), isError: false, exitCode: 0 };
  if (/^ls\b/.test(cmd)) {
    const dir =
      cmd
        .split(/\s+/)
        .filter((a) => !a.startsWith('-'))
        .slice(1)[0] ?? '.';
    return { output: listing(r, dir), isError: false, exitCode: 0 };
  }
  if (/^(grep|rg)\b/.test(cmd)) return { output: grepOutput(r, cmd), isError: false, exitCode: 0 };
  if (/^npx tsc\b|^tsc\b/.test(cmd)) return { output: tscOutput(r), isError: true, exitCode: 2 };
  if (/^find\b/.test(cmd)) return { output: findOutput(r), isError: false, exitCode: 0 };
  if (/^cat\b/.test(cmd)) {
    const paths = cmd
      .split(/\s+/)
      .slice(1)
      .filter((a) => !a.startsWith('-'));
    const outputs = paths.map((p) => {
      const res = readFile(p);
      return res.isError ? { ...res, output: `cat: ${p}: No such file or directory` } : res;
    });
    const failed = outputs.some((o) => o.isError);
    return { output: outputs.map((o) => o.output).join('\n'), isError: failed, exitCode: failed ? 1 : 0 };
  }
  if (/^(pwd)$/.test(cmd)) return { output: WORKSPACE_ROOT + '\n', isError: false, exitCode: 0 };
  if (/^echo\b/.test(cmd))
    return { output: cmd.slice(5).replace(/^["']|["']$/g, '') + '\n', isError: false, exitCode: 0 };
  return { output: `bash: ${word}: command not found\n`, isError: true, exitCode: 127 };
}
