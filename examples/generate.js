#!/usr/bin/env node
/**
 * Writes examples/refactor-session.jsonl: a long, realistic pi (session format v3) coding-agent transcript in which
 * a user asks an agent to refactor a small invented TypeScript project ("invoice-service"), changes the plan midway
 * and ends with a summary. It is the example that `npm run demo` inspects, and a fixture for trying abridge on a
 * session that is close to a full context window.
 *
 *   node examples/generate.js           (re)write examples/refactor-session.jsonl
 *   node examples/generate.js --check   exit 1 if the file on disk differs from what this script generates
 *                                       (writes it, and says so, if it is missing)
 *
 * Everything is deterministic: seeded PRNGs, a fixed start time, no Date.now() or Math.random(), so the output is
 * the same bytes on every run and machine. Plain ESM JavaScript without dependencies, so it runs before a build.
 *
 * All content (code, command output, conversation) is invented for this example.
 *
 * How it works: the invented project lives in an in-memory file system. The story below is a list of user
 * messages and assistant turns; each tool call runs against that file system when its turn is played, so reads
 * show earlier edits, edits must match the file exactly (the script throws otherwise), and compiler errors, test
 * failures and the final `git diff` point at real lines. Usage figures are derived from the conversation so far,
 * counted by a small tokenizer stand-in (textTokens: BPE-style pieces, priced as Claude's tokenizer would roughly
 * price them) rather than by characters, because code, JSON, CSV and logs run at 2–3.5 characters a token.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT_FILE = join(HERE, 'refactor-session.jsonl');

const START = Date.parse('2025-10-14T08:41:12.306Z');
const CWD = '/home/dev/src/invoice-service';
/**
 * System prompt + tool definitions, in tokens: the part of every prompt that is not in the session file. pi's is
 * small: its own system prompt and the schemas of its four tools, Anthropic's tool-use preamble, and the project's
 * AGENTS.md, which pi appends to the system prompt.
 */
const SYSTEM_PREFIX_TOKENS = 2_630;
const MODEL = { api: 'anthropic-messages', provider: 'anthropic', model: 'claude-sonnet-4-5' };
/** USD per million tokens for claude-sonnet-4-5 (5-minute cache writes). */
const PRICE = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

// ---------------------------------------------------------------------------------------------------------------------
// Deterministic randomness

function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Separate streams, so that changing the story does not reshuffle the invented history (and the other way round).
 * The invented invoice data comes from a mirror of the invented seed script's own generator (seedInvoices).
 */
const rnd = { ids: prng(0x1d5e55), time: prng(0x7113e), git: prng(0x617), tmp: prng(0x7e3b) };

const int = (r, lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
const pick = (r, list) => list[Math.floor(r() * list.length)];

const HEX = '0123456789abcdef';
const B62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const B64 = B62 + '+/';

function chars(r, alphabet, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)];
  return s;
}

const usedIds = new Set();
function entryId() {
  for (;;) {
    const id = chars(rnd.ids, HEX, 8);
    if (!usedIds.has(id)) {
      usedIds.add(id);
      return id;
    }
  }
}

const toolCallId = () => 'toolu_01' + chars(rnd.ids, B62, 22);

function uuid(r) {
  const h = chars(r, HEX, 32).split('');
  h[12] = '4';
  h[16] = '89ab'[Math.floor(r() * 4)];
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

/**
 * An opaque thinking signature. Real ones carry the thinking encrypted, so their base64 grows with it: about
 * 230 characters plus 4/3 of the thinking's length.
 */
function thinkingSignature(thinkingLength) {
  const n = 4 * Math.round((230 + (thinkingLength * 4) / 3 + int(rnd.ids, 0, 40)) / 4);
  const pad = int(rnd.ids, 0, 2);
  return 'Eq' + chars(rnd.ids, B64, n - 2 - pad) + '='.repeat(pad);
}

const sha = (r) => chars(r, HEX, 40);

/** A stable 7-hex blob id for `git diff` index lines. */
function blobId(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0').slice(0, 7);
}

// ---------------------------------------------------------------------------------------------------------------------
// Token counts for the usage figures: a small stand-in for a real tokenizer, so that this script needs no dependency

/**
 * How BPE tokenizers pre-split text before merging, each piece being priced on its own: a word (upper-case letters
 * then lower-case ones, so camelCase splits) with at most one leading space or symbol joined to it, a group of up to
 * three digits, a run of punctuation with one leading space and the line breaks after it, a whitespace run.
 */
const PIECE =
  /[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;
/** Claude's tokenizer cuts code, JSON and logs into ~15% more tokens than o200k-like vocabularies do. */
const CLAUDE_TOKENS_PER_PIECE_TOKEN = 1.15;
/** Role markers around every message, in tokens. */
const MESSAGE_FRAMING = 4;
/** The envelope of a tool_use or tool_result block (type, name and id keys, braces), besides the id itself. */
const TOOL_BLOCK_FRAMING = 10;

const isAscii = (c) => c.charCodeAt(0) < 0x80;

/** Tokens of one pre-split piece: a word of up to ~8 letters is one token, digit groups one, punctuation ~2 per token. */
function pieceTokens(piece) {
  const c = piece.codePointAt(0);
  if (c >= 0x30 && c <= 0x39) return 1;
  if (/^\s+$/.test(piece)) return 1; // a space run, or line breaks with the next line's indent
  const letters = piece.match(/[\p{L}\p{M}]/gu);
  if (letters) {
    let n = letters.length <= 8 ? 1 : 1 + (letters.length - 8) / 4;
    // A symbol glued to a word (`.ts`, `,Acme`, `/src`) often stays a token of its own; accented letters cost extra.
    if (!/[\p{L}\p{M} ]/u.test(piece[0])) n += 0.5;
    for (const l of letters) if (!isAscii(l)) n += 0.5;
    return n;
  }
  // Punctuation: about two characters a token; characters outside ASCII fall back to their UTF-8 bytes.
  let ascii = 0;
  let extra = 0;
  for (const ch of piece.replace(/^ /, '').replace(/[\r\n]+$/, '')) {
    if (isAscii(ch)) ascii++;
    else extra += Buffer.byteLength(ch) - 1;
  }
  return Math.max(1, (ascii - 0.6) / 2) + extra;
}

/** Claude tokens of a text (fractional: summed over a message, rounded when reported). */
function textTokens(text) {
  let n = 0;
  for (const [piece] of text.matchAll(PIECE)) n += pieceTokens(piece);
  return n * CLAUDE_TOKENS_PER_PIECE_TOKEN;
}

/** The id of a tool_use block, repeated in its tool_result: random base62, about two characters a token. */
const toolBlockTokens = (id) => TOOL_BLOCK_FRAMING + id.length / 2;

// ---------------------------------------------------------------------------------------------------------------------
// Text helpers: line splitting, locating snippets, line diffs (for edit results, `git diff` and `git diff --stat`)

function splitLines(text) {
  const lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** 1-based line and column of `snippet` in `text`, searching from the first occurrence of `anchor` if given. */
function locate(text, snippet, anchor, what = 'file') {
  let from = 0;
  if (anchor !== undefined) {
    from = text.indexOf(anchor);
    if (from < 0) throw new Error(`anchor not found in ${what}: ${anchor}`);
  }
  const i = text.indexOf(snippet, from);
  if (i < 0) throw new Error(`snippet not found in ${what}: ${snippet}`);
  const before = text.slice(0, i);
  return { line: before.split('\n').length, col: i - before.lastIndexOf('\n') };
}

/** Line diff by longest common subsequence: [{ t: ' ' | '-' | '+', line, o, n }] with 1-based old/new numbers. */
function diffLines(a, b) {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const A = a.slice(pre, a.length - suf);
  const B = b.slice(pre, b.length - suf);
  const dp = Array.from({ length: A.length + 1 }, () => new Uint32Array(B.length + 1));
  for (let i = A.length - 1; i >= 0; i--) {
    for (let j = B.length - 1; j >= 0; j--) {
      dp[i][j] = A[i] === B[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    }
  }
  const ops = a.slice(0, pre).map((line) => ({ t: ' ', line }));
  let i = 0;
  let j = 0;
  while (i < A.length || j < B.length) {
    if (i < A.length && j < B.length && A[i] === B[j]) {
      ops.push({ t: ' ', line: A[i] });
      i++;
      j++;
    } else if (i < A.length && (j === B.length || dp[i + 1][j] >= dp[i][j + 1])) {
      ops.push({ t: '-', line: A[i++] });
    } else {
      ops.push({ t: '+', line: B[j++] });
    }
  }
  for (const line of a.slice(a.length - suf)) ops.push({ t: ' ', line });
  let o = 1;
  let n = 1;
  for (const op of ops) {
    op.o = o;
    op.n = n;
    if (op.t !== '+') o++;
    if (op.t !== '-') n++;
  }
  return ops;
}

/** Groups of op indexes around changes, `context` lines either side, overlapping groups merged. */
function changeGroups(ops, context) {
  const groups = [];
  for (let k = 0; k < ops.length; k++) {
    if (ops[k].t === ' ') continue;
    const from = Math.max(0, k - context);
    const to = Math.min(ops.length - 1, k + context);
    const last = groups[groups.length - 1];
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else groups.push([from, to]);
  }
  return groups;
}

/** The `diff` that pi's edit tool reports: numbered lines, "..." where unchanged lines are skipped. */
function piEditDiff(before, after) {
  const ops = diffLines(splitLines(before), splitLines(after));
  const width = String(
    Math.max(ops.length ? ops[ops.length - 1].o : 1, ops.length ? ops[ops.length - 1].n : 1) + 1,
  ).length;
  const out = [];
  const groups = changeGroups(ops, 4);
  const skip = ' '.repeat(width + 1) + '...';
  groups.forEach(([from, to], g) => {
    if (from > 0 || g > 0) out.push(skip);
    for (let k = from; k <= to; k++) {
      const op = ops[k];
      const no = op.t === '-' ? op.o : op.n;
      out.push(`${op.t}${String(no).padStart(width)} ${op.line}`);
    }
  });
  if (groups.length && groups[groups.length - 1][1] < ops.length - 1) out.push(skip);
  const first = ops.find((op) => op.t !== ' ');
  return { diff: out.join('\n'), firstChangedLine: first ? first.n : undefined };
}

/** A `git diff` section for one file (`before` undefined for a new file). */
function gitFileDiff(path, before, after) {
  const a = before === undefined ? [] : splitLines(before);
  const b = splitLines(after);
  const ops = diffLines(a, b);
  const head = [`diff --git a/${path} b/${path}`];
  if (before === undefined) head.push('new file mode 100644', `index 0000000..${blobId(after)}`, '--- /dev/null');
  else head.push(`index ${blobId(before)}..${blobId(after)} 100644`, `--- a/${path}`);
  head.push(`+++ b/${path}`);
  const out = [...head];
  for (const [from, to] of changeGroups(ops, 3)) {
    const slice = ops.slice(from, to + 1);
    const oldCount = slice.filter((op) => op.t !== '+').length;
    const newCount = slice.filter((op) => op.t !== '-').length;
    const oldStart = oldCount ? slice.find((op) => op.t !== '+').o : slice[0].o - 1;
    const newStart = newCount ? slice.find((op) => op.t !== '-').n : slice[0].n - 1;
    const range = (start, count) => (count === 1 ? `${start}` : `${start},${count}`);
    // git shows the nearest preceding line that starts with a letter, `_` or `$` as the hunk's context.
    let fn = '';
    for (let k = from - 1; k >= 0; k--) {
      if (ops[k].t !== '+' && /^[A-Za-z_$]/.test(ops[k].line)) {
        fn = ' ' + ops[k].line.slice(0, 80).trimEnd();
        break;
      }
    }
    out.push(`@@ -${range(oldStart, oldCount)} +${range(newStart, newCount)} @@${fn}`);
    for (const op of slice) out.push(op.t + op.line);
  }
  const added = ops.filter((op) => op.t === '+').length;
  const removed = ops.filter((op) => op.t === '-').length;
  return { text: out.join('\n'), added, removed };
}

/** `git diff --stat` lines, scaled the way git does for an 80-column terminal. */
function gitStat(files) {
  const nameWidth = Math.max(...files.map((f) => f.path.length));
  const maxChanges = Math.max(...files.map((f) => f.added + f.removed));
  const countWidth = String(maxChanges).length;
  const graphWidth = Math.max(80 - nameWidth - countWidth - 6, 10);
  const scale = (x) =>
    maxChanges <= graphWidth ? x : Math.max(x > 0 ? 1 : 0, Math.round((x * graphWidth) / maxChanges));
  const lines = files.map(
    (f) =>
      ` ${f.path.padEnd(nameWidth)} | ${String(f.added + f.removed).padStart(countWidth)} ${'+'.repeat(scale(f.added))}${'-'.repeat(scale(f.removed))}`,
  );
  const ins = files.reduce((s, f) => s + f.added, 0);
  const del = files.reduce((s, f) => s + f.removed, 0);
  lines.push(` ${files.length} files changed, ${ins} insertions(+), ${del} deletions(-)`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------------
// The invented project, as it is when the session starts. Template literals: \` and \${ are the project's own.

const PROJECT = {};

PROJECT['package.json'] = `{
  "name": "invoice-service",
  "version": "1.4.2",
  "private": true,
  "type": "module",
  "engines": {
    "node": ">=20"
  },
  "scripts": {
    "build": "tsc -p tsconfig.build.json",
    "dev": "tsx watch src/server.ts",
    "start": "node dist/server.js",
    "test": "vitest run",
    "lint": "eslint 'src/**/*.ts' 'test/**/*.ts' 'scripts/**/*.ts'",
    "seed": "tsx scripts/seed.ts",
    "migrate": "tsx scripts/migrate.ts"
  },
  "dependencies": {
    "better-sqlite3": "^9.4.3",
    "express": "^4.19.2",
    "pino": "^8.19.0",
    "zod": "^3.22.4"
  },
  "devDependencies": {
    "@types/better-sqlite3": "^7.6.9",
    "@types/express": "^4.17.21",
    "@types/node": "^20.11.30",
    "@types/supertest": "^6.0.2",
    "@typescript-eslint/eslint-plugin": "^7.3.1",
    "@typescript-eslint/parser": "^7.3.1",
    "eslint": "^8.57.0",
    "supertest": "^6.3.4",
    "tsx": "^4.7.1",
    "typescript": "^5.4.3",
    "vitest": "^1.6.0"
  }
}
`;

PROJECT['tsconfig.json'] = `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "noUncheckedIndexedAccess": true,
    "noUnusedLocals": true,
    "noImplicitOverride": true,
    "esModuleInterop": true,
    "skipLibCheck": true,
    "outDir": "dist",
    "rootDir": ".",
    "sourceMap": true
  },
  "include": ["src", "test", "scripts"]
}
`;

PROJECT['.eslintrc.cjs'] = `/** @type {import('eslint').Linter.Config} */
module.exports = {
  root: true,
  parser: '@typescript-eslint/parser',
  plugins: ['@typescript-eslint'],
  extends: ['eslint:recommended', 'plugin:@typescript-eslint/recommended'],
  env: { node: true, es2022: true },
  rules: {
    '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    '@typescript-eslint/no-non-null-assertion': 'warn',
    eqeqeq: 'error',
  },
  ignorePatterns: ['dist/', 'data/'],
};
`;

PROJECT['vitest.config.ts'] = `import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 5_000,
  },
});
`;

PROJECT['migrations/001_init.sql'] = `-- 001_init.sql: customers, invoices, line items, payments.
-- Applied by the deploy pipeline (ops/migrate.sh) before the service starts. Never edit a released migration:
-- production has already run it. Add a new numbered file instead.

CREATE TABLE customers (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT    NOT NULL,
  email         TEXT    NOT NULL,
  country       TEXT    NOT NULL DEFAULT 'US',
  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE invoices (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  number        TEXT    NOT NULL UNIQUE,
  customer_id   INTEGER NOT NULL REFERENCES customers(id),
  currency      TEXT    NOT NULL CHECK (length(currency) = 3),
  status        TEXT    NOT NULL DEFAULT 'draft'
                CHECK (status IN ('draft', 'issued', 'paid', 'void')),
  issued_at     TEXT,                         -- YYYY-MM-DD, set when issued
  due_at        TEXT,                         -- YYYY-MM-DD
  subtotal      INTEGER NOT NULL DEFAULT 0,   -- minor units
  tax           INTEGER NOT NULL DEFAULT 0,   -- minor units
  total         INTEGER NOT NULL DEFAULT 0,   -- minor units
  notes         TEXT,
  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE line_items (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  invoice_id    INTEGER NOT NULL REFERENCES invoices(id) ON DELETE CASCADE,
  position      INTEGER NOT NULL,
  description   TEXT    NOT NULL,
  quantity      REAL    NOT NULL CHECK (quantity > 0),
  unit_price    INTEGER NOT NULL,             -- minor units
  tax_rate_bp   INTEGER NOT NULL DEFAULT 0,   -- basis points, 750 = 7.5%
  UNIQUE (invoice_id, position)
);

CREATE TABLE payments (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  invoice_id    INTEGER NOT NULL REFERENCES invoices(id),
  amount        INTEGER NOT NULL CHECK (amount > 0),
  method        TEXT    NOT NULL CHECK (method IN ('card', 'bank_transfer', 'cash', 'other')),
  received_at   TEXT    NOT NULL,
  reference     TEXT
);

CREATE INDEX idx_invoices_customer ON invoices(customer_id);
CREATE INDEX idx_line_items_invoice ON line_items(invoice_id);
CREATE INDEX idx_payments_invoice ON payments(invoice_id);
`;

PROJECT['migrations/002_tax_rates.sql'] =
  `-- 002_tax_rates.sql: default tax rate per country, used to prefill new line items in the dashboard.

CREATE TABLE tax_rates (
  country       TEXT    NOT NULL,
  rate_bp       INTEGER NOT NULL CHECK (rate_bp BETWEEN 0 AND 10000),
  valid_from    TEXT    NOT NULL,
  PRIMARY KEY (country, valid_from)
);

INSERT INTO tax_rates (country, rate_bp, valid_from) VALUES
  ('US', 0,    '2020-01-01'),
  ('DE', 1900, '2020-01-01'),
  ('GB', 2000, '2020-01-01'),
  ('FR', 2000, '2020-01-01'),
  ('NL', 2100, '2020-01-01'),
  ('SE', 2500, '2020-01-01'),
  ('JP', 1000, '2020-01-01');
`;

PROJECT['migrations/003_invoice_status_index.sql'] =
  `-- 003: the dashboard's overdue list filters on status and due date.
CREATE INDEX idx_invoices_status_due ON invoices(status, due_at);
`;

PROJECT['migrations/004_customers_email_unique.sql'] =
  `-- 004: one customer record per billing email (duplicates were merged by ops/scripts/merge-customers.sql).
CREATE UNIQUE INDEX idx_customers_email ON customers(lower(email));
`;

PROJECT['src/index.ts'] =
  `// Public API of the invoice-service package (used by billing-worker and dunning-cron). Keep it stable.
export { createApp, type AppOptions } from './app.js';
export { openDatabase, runMigrations, type Db, type OpenOptions } from './db.js';
export { InvoiceService, type ListFilter, type Payment } from './services/invoiceService.js';
export { computeTotals, lineNet, lineTax, type Totals } from './services/taxService.js';
export { allocate, formatMoney, money, roundHalfEven, type Money } from './money.js';
export type {
  CreateInvoiceInput,
  Invoice,
  InvoiceFilterStatus,
  InvoiceStatus,
  LineItem,
  RecordPaymentInput,
} from './models/invoice.js';
`;

PROJECT['src/config.ts'] = `import { z } from 'zod';

const schema = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  DB_FILE: z.string().default('data/dev.db'),
  MIGRATIONS_DIR: z.string().default('migrations'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
});

export type Config = z.infer<typeof schema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => \`\${i.path.join('.')}: \${i.message}\`).join('; ');
    throw new Error(\`invalid configuration: \${issues}\`);
  }
  return parsed.data;
}
`;

PROJECT['src/logger.ts'] = `import pino from 'pino';

export const logger = pino({
  level: process.env.LOG_LEVEL ?? 'info',
  base: { service: 'invoice-service' },
  redact: ['req.headers.authorization', 'email'],
});
`;

PROJECT['src/db.ts'] = `import Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { logger } from './logger.js';

export type Db = Database.Database;

export interface OpenOptions {
  /** Path to the SQLite file, or ':memory:' for tests. */
  filename: string;
  /** Directory holding NNN_name.sql files; each is applied once, in order. */
  migrationsDir?: string;
  readonly?: boolean;
}

export function openDatabase(options: OpenOptions): Db {
  const db = new Database(options.filename, { readonly: options.readonly ?? false });
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  if (options.migrationsDir && !options.readonly) runMigrations(db, options.migrationsDir);
  return db;
}

/** Applies pending migrations in a transaction each. Returns the names applied. */
export function runMigrations(db: Db, dir: string): string[] {
  db.exec(\`CREATE TABLE IF NOT EXISTS schema_migrations (
    name TEXT PRIMARY KEY,
    applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  )\`);
  const applied = new Set(
    (db.prepare('SELECT name FROM schema_migrations').all() as { name: string }[]).map((r) => r.name),
  );
  const pending = readdirSync(dir)
    .filter((f) => /^\\d{3}_.+\\.sql$/.test(f))
    .sort()
    .filter((f) => !applied.has(f));
  const record = db.prepare('INSERT INTO schema_migrations (name) VALUES (?)');
  for (const file of pending) {
    const sql = readFileSync(join(dir, file), 'utf8');
    db.transaction(() => {
      db.exec(sql);
      record.run(file);
    })();
    logger.info({ migration: file }, 'applied migration');
  }
  return pending;
}
`;

PROJECT['src/errors.ts'] = `import type { NextFunction, Request, Response } from 'express';
import { ZodError } from 'zod';
import { logger } from './logger.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class NotFoundError extends HttpError {
  constructor(message: string) {
    super(404, message, 'not_found');
  }
}

export class ConflictError extends HttpError {
  constructor(message: string) {
    super(409, message, 'conflict');
  }
}

export class ValidationError extends HttpError {
  constructor(message: string) {
    super(400, message, 'invalid_request');
  }
}

export function errorHandler(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  if (err instanceof ZodError) {
    res.status(400).json({ error: 'invalid_request', message: 'request validation failed', issues: err.issues });
    return;
  }
  if (err instanceof HttpError) {
    res.status(err.status).json({ error: err.code, message: err.message });
    return;
  }
  logger.error({ err, method: req.method, url: req.originalUrl }, 'unhandled error');
  res.status(500).json({ error: 'internal', message: 'internal server error' });
}
`;

PROJECT['src/money.ts'] = `/**
 * Money is always an integer number of minor units (cents, pence, yen) plus an ISO 4217 currency code.
 * Never use floating point for stored amounts; floats appear here only transiently, while rounding.
 */

export type CurrencyCode = string;

export interface Money {
  amount: number; // minor units, integer
  currency: CurrencyCode;
}

/** Digits after the decimal point, per ISO 4217. Currencies not listed have 2. */
const MINOR_UNITS: Record<string, number> = {
  BHD: 3,
  CHF: 2,
  CLP: 0,
  EUR: 2,
  GBP: 2,
  ISK: 0,
  JPY: 0,
  KRW: 0,
  KWD: 3,
  SEK: 2,
  USD: 2,
};

export function minorUnits(currency: CurrencyCode): number {
  return MINOR_UNITS[currency.toUpperCase()] ?? 2;
}

export function money(amount: number, currency: CurrencyCode): Money {
  if (!Number.isSafeInteger(amount)) {
    throw new RangeError(\`money amount must be a safe integer of minor units, got \${amount}\`);
  }
  return { amount, currency: currency.toUpperCase() };
}

/**
 * Rounds half to even ("banker's rounding"). Used for tax so that systematic .5 cases do not drift upwards
 * across thousands of line items. \`value\` is in minor units and may be fractional.
 */
export function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const diff = value - floor;
  const EPSILON = 1e-9;
  if (diff > 0.5 + EPSILON) return floor + 1;
  if (diff < 0.5 - EPSILON) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

export function add(a: Money, b: Money): Money {
  assertSameCurrency(a, b);
  return money(a.amount + b.amount, a.currency);
}

export function subtract(a: Money, b: Money): Money {
  assertSameCurrency(a, b);
  return money(a.amount - b.amount, a.currency);
}

export function sum(items: Money[], currency: CurrencyCode): Money {
  return items.reduce((acc, m) => add(acc, m), money(0, currency));
}

/** Splits \`total\` into parts proportional to \`weights\`, handing out the remainder one minor unit at a time. */
export function allocate(total: Money, weights: number[]): Money[] {
  if (weights.length === 0) throw new RangeError('allocate needs at least one weight');
  const totalWeight = weights.reduce((a, w) => a + w, 0);
  if (totalWeight <= 0) throw new RangeError('allocate weights must sum to a positive number');
  const shares = weights.map((w) => Math.floor((total.amount * w) / totalWeight));
  let remainder = total.amount - shares.reduce((a, s) => a + s, 0);
  for (let i = 0; remainder > 0; i = (i + 1) % shares.length, remainder--) shares[i]! += 1;
  return shares.map((s) => money(s, total.currency));
}

/** Formats for people, e.g. "$1,234.50" or "¥1,200". Not for files or APIs. */
export function formatMoney(m: Money, locale = 'en-US'): string {
  const digits = minorUnits(m.currency);
  return new Intl.NumberFormat(locale, {
    style: 'currency',
    currency: m.currency,
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  }).format(m.amount / 10 ** digits);
}

function assertSameCurrency(a: Money, b: Money): void {
  if (a.currency !== b.currency) {
    throw new TypeError(\`currency mismatch: \${a.currency} vs \${b.currency}\`);
  }
}
`;

PROJECT['src/models/invoice.ts'] = `import { z } from 'zod';

export const INVOICE_STATUSES = ['draft', 'issued', 'paid', 'void'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];
/** \`overdue\` is not stored: it is an issued invoice whose due date has passed. */
export type InvoiceFilterStatus = InvoiceStatus | 'overdue';

export interface LineItem {
  id: number;
  position: number;
  description: string;
  quantity: number;
  unitPrice: number; // minor units
  taxRateBp: number; // basis points: 750 = 7.5%
}

export interface Invoice {
  id: number;
  number: string;
  customerId: number;
  currency: string;
  status: InvoiceStatus;
  issuedAt: string | null;
  dueAt: string | null;
  subtotal: number;
  tax: number;
  total: number;
  notes: string | null;
  lines: LineItem[];
  createdAt: string;
  updatedAt: string;
}

export interface InvoiceRow {
  id: number;
  number: string;
  customer_id: number;
  currency: string;
  status: InvoiceStatus;
  issued_at: string | null;
  due_at: string | null;
  subtotal: number;
  tax: number;
  total: number;
  notes: string | null;
  created_at: string;
  updated_at: string;
}

export interface LineItemRow {
  id: number;
  invoice_id: number;
  position: number;
  description: string;
  quantity: number;
  unit_price: number;
  tax_rate_bp: number;
}

export const lineItemInput = z.object({
  description: z.string().min(1).max(500),
  quantity: z.number().positive().max(1_000_000),
  unitPrice: z.number().int(),
  taxRateBp: z.number().int().min(0).max(10_000).default(0),
});

export const createInvoiceInput = z.object({
  customerId: z.number().int().positive(),
  currency: z
    .string()
    .length(3)
    .transform((c) => c.toUpperCase()),
  notes: z.string().max(2000).optional(),
  lines: z.array(lineItemInput).min(1).max(500),
});
export type CreateInvoiceInput = z.infer<typeof createInvoiceInput>;

export const recordPaymentInput = z.object({
  amount: z.number().int().positive(),
  method: z.enum(['card', 'bank_transfer', 'cash', 'other']),
  receivedAt: z.string().datetime().optional(),
  reference: z.string().max(200).optional(),
});
export type RecordPaymentInput = z.infer<typeof recordPaymentInput>;

export function rowToLineItem(row: LineItemRow): LineItem {
  return {
    id: row.id,
    position: row.position,
    description: row.description,
    quantity: row.quantity,
    unitPrice: row.unit_price,
    taxRateBp: row.tax_rate_bp,
  };
}

export function rowToInvoice(row: InvoiceRow, lines: LineItemRow[]): Invoice {
  return {
    id: row.id,
    number: row.number,
    customerId: row.customer_id,
    currency: row.currency,
    status: row.status,
    issuedAt: row.issued_at,
    dueAt: row.due_at,
    subtotal: row.subtotal,
    tax: row.tax,
    total: row.total,
    notes: row.notes,
    lines: lines.map(rowToLineItem),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
`;

PROJECT['src/models/customer.ts'] = `import { z } from 'zod';

export interface Customer {
  id: number;
  name: string;
  email: string;
  country: string;
  createdAt: string;
}

export const createCustomerInput = z.object({
  name: z.string().min(1).max(200),
  email: z.string().email().max(320),
  country: z
    .string()
    .length(2)
    .transform((c) => c.toUpperCase())
    .default('US'),
});
export type CreateCustomerInput = z.infer<typeof createCustomerInput>;
`;

PROJECT['src/services/taxService.ts'] = `import { roundHalfEven } from '../money.js';
import type { LineItem } from '../models/invoice.js';

export interface Totals {
  subtotal: number;
  tax: number;
  total: number;
}

type PricedLine = Pick<LineItem, 'quantity' | 'unitPrice' | 'taxRateBp'>;

/** Net amount of one line in minor units: quantity × unit price, rounded half-even (quantities can be hours). */
export function lineNet(line: Pick<LineItem, 'quantity' | 'unitPrice'>): number {
  return roundHalfEven(line.quantity * line.unitPrice);
}

/** Tax of one line, rounded half-even on its own. */
export function lineTax(line: PricedLine): number {
  return roundHalfEven((lineNet(line) * line.taxRateBp) / 10_000);
}

/** Totals as printed on the invoice PDF: tax rounded per line, then summed. */
export function computeTotals(lines: PricedLine[]): Totals {
  let subtotal = 0;
  let tax = 0;
  for (const line of lines) {
    subtotal += lineNet(line);
    tax += lineTax(line);
  }
  return { subtotal, tax, total: subtotal + tax };
}
`;

PROJECT['src/services/invoiceService.ts'] = `import type { Db } from '../db.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { logger } from '../logger.js';
import { roundHalfEven } from '../money.js';
import {
  createInvoiceInput,
  recordPaymentInput,
  rowToInvoice,
  type CreateInvoiceInput,
  type Invoice,
  type InvoiceFilterStatus,
  type InvoiceRow,
  type LineItemRow,
  type RecordPaymentInput,
} from '../models/invoice.js';
import { lineNet } from './taxService.js';

export interface ListFilter {
  customerId?: number;
  status?: InvoiceFilterStatus;
  limit?: number;
  offset?: number;
}

export interface Payment {
  id: number;
  invoiceId: number;
  amount: number;
  method: 'card' | 'bank_transfer' | 'cash' | 'other';
  receivedAt: string;
  reference: string | null;
}

interface PaymentRow {
  id: number;
  invoice_id: number;
  amount: number;
  method: Payment['method'];
  received_at: string;
  reference: string | null;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_PAGE = 200;
const PAYMENT_TERMS_DAYS = 30;

/**
 * Invoice lifecycle: draft → issued → paid, or → void from draft/issued.
 * Amounts are stored in minor units; totals are computed once, when the invoice is created.
 */
export class InvoiceService {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  createInvoice(raw: unknown): Invoice {
    const input: CreateInvoiceInput = createInvoiceInput.parse(raw);
    const customer = this.db.prepare('SELECT id FROM customers WHERE id = ?').get(input.customerId);
    if (!customer) throw new ValidationError(\`customer \${input.customerId} does not exist\`);

    // Tax per rate on the summed net amounts (v1 rule, INV-188). Stored totals depend on it.
    const netByRate = new Map<number, number>();
    for (const l of input.lines) netByRate.set(l.taxRateBp, (netByRate.get(l.taxRateBp) ?? 0) + lineNet(l));
    const subtotal = [...netByRate.values()].reduce((a, n) => a + n, 0);
    let tax = 0;
    for (const [rateBp, net] of netByRate) tax += roundHalfEven((net * rateBp) / 10_000);
    const now = this.clock().toISOString();

    const insert = this.db.transaction(() => {
      const number = this.nextInvoiceNumber(this.clock().getUTCFullYear());
      const result = this.db
        .prepare(
          \`INSERT INTO invoices (number, customer_id, currency, status, subtotal, tax, total, notes, created_at, updated_at)
           VALUES (?, ?, ?, 'draft', ?, ?, ?, ?, ?, ?)\`,
        )
        .run(number, input.customerId, input.currency, subtotal, tax, subtotal + tax, input.notes ?? null, now, now);
      const invoiceId = Number(result.lastInsertRowid);
      const insertLine = this.db.prepare(
        \`INSERT INTO line_items (invoice_id, position, description, quantity, unit_price, tax_rate_bp)
         VALUES (?, ?, ?, ?, ?, ?)\`,
      );
      input.lines.forEach((l, i) => insertLine.run(invoiceId, i + 1, l.description, l.quantity, l.unitPrice, l.taxRateBp));
      return invoiceId;
    });
    const id = insert();
    logger.info({ invoiceId: id, customerId: input.customerId }, 'invoice created');
    return this.getInvoice(id);
  }

  getInvoice(id: number): Invoice {
    const row = this.db.prepare('SELECT * FROM invoices WHERE id = ?').get(id) as InvoiceRow | undefined;
    if (!row) throw new NotFoundError(\`invoice \${id} not found\`);
    return rowToInvoice(row, this.loadLines([id]).get(id) ?? []);
  }

  getByNumber(number: string): Invoice {
    const row = this.db.prepare('SELECT * FROM invoices WHERE number = ?').get(number) as InvoiceRow | undefined;
    if (!row) throw new NotFoundError(\`invoice \${number} not found\`);
    return rowToInvoice(row, this.loadLines([row.id]).get(row.id) ?? []);
  }

  listInvoices(filter: ListFilter = {}): Invoice[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.customerId !== undefined) {
      where.push('customer_id = ?');
      params.push(filter.customerId);
    }
    if (filter.status === 'overdue') {
      where.push("status = 'issued' AND due_at < ?");
      params.push(this.clock().toISOString().slice(0, 10));
    } else if (filter.status !== undefined) {
      where.push('status = ?');
      params.push(filter.status);
    }
    const limit = Math.min(filter.limit ?? 50, MAX_PAGE);
    const offset = filter.offset ?? 0;
    const sql = \`SELECT * FROM invoices \${where.length ? \`WHERE \${where.join(' AND ')}\` : ''}
      ORDER BY issued_at DESC, id DESC LIMIT ? OFFSET ?\`;
    const rows = this.db.prepare(sql).all(...params, limit, offset) as InvoiceRow[];
    const lines = this.loadLines(rows.map((r) => r.id));
    return rows.map((r) => rowToInvoice(r, lines.get(r.id) ?? []));
  }

  issueInvoice(id: number): Invoice {
    const invoice = this.getInvoice(id);
    if (invoice.status !== 'draft') {
      throw new ConflictError(\`invoice \${invoice.number} is \${invoice.status}, not draft\`);
    }
    const now = this.clock();
    const issuedAt = now.toISOString().slice(0, 10);
    const dueAt = new Date(now.getTime() + PAYMENT_TERMS_DAYS * DAY_MS).toISOString().slice(0, 10);
    this.db
      .prepare("UPDATE invoices SET status = 'issued', issued_at = ?, due_at = ?, updated_at = ? WHERE id = ?")
      .run(issuedAt, dueAt, now.toISOString(), id);
    logger.info({ invoiceId: id, dueAt }, 'invoice issued');
    return this.getInvoice(id);
  }

  voidInvoice(id: number, reason: string): Invoice {
    const invoice = this.getInvoice(id);
    if (invoice.status === 'paid') throw new ConflictError(\`invoice \${invoice.number} is paid and cannot be voided\`);
    if (invoice.status === 'void') return invoice;
    if (!reason.trim()) throw new ValidationError('a reason is required to void an invoice');
    const notes = [invoice.notes, \`Voided: \${reason.trim()}\`].filter(Boolean).join('\\n');
    this.db
      .prepare("UPDATE invoices SET status = 'void', notes = ?, updated_at = ? WHERE id = ?")
      .run(notes, this.clock().toISOString(), id);
    logger.warn({ invoiceId: id, reason }, 'invoice voided');
    return this.getInvoice(id);
  }

  recordPayment(id: number, raw: unknown): { invoice: Invoice; payment: Payment } {
    const input: RecordPaymentInput = recordPaymentInput.parse(raw);
    const apply = this.db.transaction(() => {
      const invoice = this.getInvoice(id);
      if (invoice.status !== 'issued') {
        throw new ConflictError(\`cannot record a payment on a \${invoice.status} invoice (\${invoice.number})\`);
      }
      const paid = this.paidAmount(id);
      if (paid + input.amount > invoice.total) {
        throw new ValidationError(
          \`payment of \${input.amount} exceeds the balance due of \${invoice.total - paid} on \${invoice.number}\`,
        );
      }
      const receivedAt = input.receivedAt ?? this.clock().toISOString();
      const result = this.db
        .prepare('INSERT INTO payments (invoice_id, amount, method, received_at, reference) VALUES (?, ?, ?, ?, ?)')
        .run(id, input.amount, input.method, receivedAt, input.reference ?? null);
      if (paid + input.amount === invoice.total) {
        this.db
          .prepare("UPDATE invoices SET status = 'paid', updated_at = ? WHERE id = ?")
          .run(this.clock().toISOString(), id);
      }
      return Number(result.lastInsertRowid);
    });
    const paymentId = apply();
    const payment = this.db.prepare('SELECT * FROM payments WHERE id = ?').get(paymentId) as PaymentRow;
    return { invoice: this.getInvoice(id), payment: rowToPayment(payment) };
  }

  balanceDue(id: number): number {
    const invoice = this.getInvoice(id);
    if (invoice.status === 'void') return 0;
    return invoice.total - this.paidAmount(id);
  }

  private paidAmount(id: number): number {
    const row = this.db
      .prepare('SELECT COALESCE(SUM(amount), 0) AS paid FROM payments WHERE invoice_id = ?')
      .get(id) as { paid: number };
    return row.paid;
  }

  /** INV-<year>-<5 digits>, sequential per year. Must run inside the insert transaction. */
  private nextInvoiceNumber(year: number): string {
    const prefix = \`INV-\${year}-\`;
    const row = this.db
      .prepare('SELECT number FROM invoices WHERE number LIKE ? ORDER BY number DESC LIMIT 1')
      .get(\`\${prefix}%\`) as { number: string } | undefined;
    const next = row ? Number(row.number.slice(prefix.length)) + 1 : 1;
    return \`\${prefix}\${String(next).padStart(5, '0')}\`;
  }

  private loadLines(invoiceIds: number[]): Map<number, LineItemRow[]> {
    const byInvoice = new Map<number, LineItemRow[]>();
    if (invoiceIds.length === 0) return byInvoice;
    const placeholders = invoiceIds.map(() => '?').join(', ');
    const rows = this.db
      .prepare(\`SELECT * FROM line_items WHERE invoice_id IN (\${placeholders}) ORDER BY invoice_id, position\`)
      .all(...invoiceIds) as LineItemRow[];
    for (const row of rows) {
      const list = byInvoice.get(row.invoice_id) ?? [];
      list.push(row);
      byInvoice.set(row.invoice_id, list);
    }
    return byInvoice;
  }
}

function rowToPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    invoiceId: row.invoice_id,
    amount: row.amount,
    method: row.method,
    receivedAt: row.received_at,
    reference: row.reference,
  };
}
`;

PROJECT['src/routes/invoices.ts'] = `import { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Db } from '../db.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { InvoiceService } from '../services/invoiceService.js';

const listQuery = z.object({
  customerId: z.coerce.number().int().positive().optional(),
  status: z.enum(['draft', 'issued', 'paid', 'void', 'overdue']).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

const voidBody = z.object({ reason: z.string().min(1).max(500) });

type Handler = (req: Request, res: Response) => unknown;

/** Wraps a handler so that thrown errors (sync or async) reach the error middleware. */
function route(handler: Handler) {
  return (req: Request, res: Response, next: NextFunction) => {
    try {
      const result = handler(req, res);
      if (result instanceof Promise) result.catch(next);
    } catch (err) {
      next(err);
    }
  };
}

function idParam(req: Request, name = 'invoice'): number {
  const id = Number(req.params.id);
  if (!Number.isInteger(id) || id <= 0) throw new ValidationError(\`invalid \${name} id: \${req.params.id}\`);
  return id;
}

export function invoicesRouter(db: Db, service: InvoiceService): Router {
  const router = Router();

  router.get(
    '/invoices',
    route((req, res) => {
      const query = listQuery.parse(req.query);
      res.json(service.listInvoices(query));
    }),
  );

  router.get(
    '/invoices/by-number/:number',
    route((req, res) => {
      res.json(service.getByNumber(String(req.params.number)));
    }),
  );

  router.get(
    '/invoices/:id',
    route((req, res) => {
      res.json(service.getInvoice(idParam(req)));
    }),
  );

  router.post(
    '/invoices',
    route((req, res) => {
      const invoice = service.createInvoice(req.body);
      res.status(201).location(\`/invoices/\${invoice.id}\`).json(invoice);
    }),
  );

  router.post(
    '/invoices/:id/issue',
    route((req, res) => {
      res.json(service.issueInvoice(idParam(req)));
    }),
  );

  router.post(
    '/invoices/:id/void',
    route((req, res) => {
      const body = voidBody.parse(req.body);
      res.json(service.voidInvoice(idParam(req), body.reason));
    }),
  );

  router.post(
    '/invoices/:id/payments',
    route((req, res) => {
      const { invoice, payment } = service.recordPayment(idParam(req), req.body);
      res.status(201).json({ invoice, payment });
    }),
  );

  // TODO(INV-140): move to InvoiceService.
  router.get(
    '/invoices/:id/payments',
    route((req, res) => {
      const id = idParam(req);
      const exists = db.prepare('SELECT 1 FROM invoices WHERE id = ?').get(id);
      if (!exists) throw new NotFoundError(\`invoice \${id} not found\`);
      const rows = db
        .prepare(
          'SELECT id, amount, method, received_at, reference FROM payments WHERE invoice_id = ? ORDER BY received_at, id',
        )
        .all(id);
      res.json(rows);
    }),
  );

  // TODO(INV-140): move to InvoiceService.
  router.get(
    '/customers/:id/invoices/summary',
    route((req, res) => {
      const customerId = idParam(req, 'customer');
      const rows = db
        .prepare(
          \`SELECT currency,
                  COUNT(*) AS count,
                  SUM(CASE WHEN status = 'paid' THEN total ELSE 0 END) AS paid,
                  SUM(CASE WHEN status = 'issued' THEN total ELSE 0 END) AS outstanding
             FROM invoices
            WHERE customer_id = ? AND status != 'void'
            GROUP BY currency
            ORDER BY currency\`,
        )
        .all(customerId);
      res.json({ customerId, byCurrency: rows });
    }),
  );

  return router;
}
`;

PROJECT['src/routes/customers.ts'] = `import { Router } from 'express';
import { z } from 'zod';
import type { Db } from '../db.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { createCustomerInput, type Customer } from '../models/customer.js';

interface CustomerRow {
  id: number;
  name: string;
  email: string;
  country: string;
  created_at: string;
}

const toCustomer = (r: CustomerRow): Customer => ({
  id: r.id,
  name: r.name,
  email: r.email,
  country: r.country,
  createdAt: r.created_at,
});

const searchQuery = z.object({
  q: z.string().max(100).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
});

export function customersRouter(db: Db): Router {
  const router = Router();

  router.get('/customers', (req, res) => {
    const { q, limit } = searchQuery.parse(req.query);
    const rows = q
      ? db
          .prepare('SELECT * FROM customers WHERE name LIKE ? OR email LIKE ? ORDER BY name LIMIT ?')
          .all(\`%\${q}%\`, \`%\${q}%\`, limit)
      : db.prepare('SELECT * FROM customers ORDER BY name LIMIT ?').all(limit);
    res.json((rows as CustomerRow[]).map(toCustomer));
  });

  router.get('/customers/:id', (req, res) => {
    const id = Number(req.params.id);
    if (!Number.isInteger(id) || id <= 0) throw new ValidationError(\`invalid customer id: \${req.params.id}\`);
    const row = db.prepare('SELECT * FROM customers WHERE id = ?').get(id) as CustomerRow | undefined;
    if (!row) throw new NotFoundError(\`customer \${id} not found\`);
    res.json(toCustomer(row));
  });

  router.post('/customers', (req, res) => {
    const input = createCustomerInput.parse(req.body);
    try {
      const result = db
        .prepare('INSERT INTO customers (name, email, country) VALUES (?, ?, ?)')
        .run(input.name, input.email, input.country);
      const row = db.prepare('SELECT * FROM customers WHERE id = ?').get(result.lastInsertRowid) as CustomerRow;
      res.status(201).json(toCustomer(row));
    } catch (err) {
      if (err instanceof Error && /UNIQUE constraint failed/.test(err.message)) {
        throw new ConflictError(\`a customer with email \${input.email} already exists\`);
      }
      throw err;
    }
  });

  return router;
}
`;

PROJECT['src/routes/health.ts'] = `import { Router } from 'express';
import type { Db } from '../db.js';

export function healthRouter(db: Db): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    const row = db.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get() as { n: number };
    res.json({ ok: true, migrations: row.n });
  });
  return router;
}
`;

PROJECT['src/app.ts'] = `import express from 'express';
import type { Db } from './db.js';
import { errorHandler } from './errors.js';
import { logger } from './logger.js';
import { customersRouter } from './routes/customers.js';
import { healthRouter } from './routes/health.js';
import { invoicesRouter } from './routes/invoices.js';
import { InvoiceService } from './services/invoiceService.js';

export interface AppOptions {
  /** Injected in tests so that due dates and "overdue" are deterministic. */
  clock?: () => Date;
}

export function createApp(db: Db, options: AppOptions = {}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '1mb' }));
  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.debug({ method: req.method, url: req.originalUrl, status: res.statusCode, ms }, 'request');
    });
    next();
  });

  const invoices = new InvoiceService(db, options.clock);
  app.use(healthRouter(db));
  app.use(customersRouter(db));
  app.use(invoicesRouter(db, invoices));
  app.use(errorHandler);
  return app;
}
`;

PROJECT['src/server.ts'] = `import { createApp } from './app.js';
import { loadConfig } from './config.js';
import { openDatabase } from './db.js';
import { logger } from './logger.js';

const config = loadConfig();
const db = openDatabase({ filename: config.DB_FILE, migrationsDir: config.MIGRATIONS_DIR });
const app = createApp(db);

const server = app.listen(config.PORT, () => {
  logger.info({ port: config.PORT, db: config.DB_FILE }, 'invoice-service listening');
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    logger.info({ signal }, 'shutting down');
    server.close(() => {
      db.close();
      process.exit(0);
    });
  });
}
`;

PROJECT['src/pdf/renderInvoice.ts'] = `/**
 * Builds the printable invoice. The PDF service (pdf-renderer, owned by the platform team) turns this HTML into
 * the PDF that customers receive, 1:1, so every amount a customer sees comes from here.
 *
 * Tax is computed and rounded per line (half-even), then summed — see computeTotals. Do not print the stored
 * invoice totals: for some older invoices they were computed with the v1 rule and can differ by a minor unit.
 */
import { formatMoney, money } from '../money.js';
import type { Customer } from '../models/customer.js';
import type { Invoice } from '../models/invoice.js';
import { computeTotals, lineNet, lineTax } from '../services/taxService.js';

export interface RenderOptions {
  locale?: string;
  /** Shown in the footer, e.g. "Pay by bank transfer to DE89 3704 0044 0532 0130 00". */
  paymentInstructions?: string;
}

const LABELS: Record<string, Record<string, string>> = {
  'en-US': { invoice: 'Invoice', issued: 'Issued', due: 'Due', subtotal: 'Subtotal', tax: 'Tax', total: 'Total' },
  'en-GB': { invoice: 'Invoice', issued: 'Issued', due: 'Due', subtotal: 'Subtotal', tax: 'VAT', total: 'Total' },
  'de-DE': { invoice: 'Rechnung', issued: 'Datum', due: 'Fällig', subtotal: 'Netto', tax: 'USt.', total: 'Gesamt' },
  'ja-JP': { invoice: '請求書', issued: '発行日', due: '支払期限', subtotal: '小計', tax: '消費税', total: '合計' },
};

function labels(locale: string): Record<string, string> {
  return LABELS[locale] ?? LABELS['en-US']!;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => \`&#\${c.charCodeAt(0)};\`);
}

export interface RenderedLine {
  description: string;
  quantity: number;
  unitPrice: string;
  net: string;
  taxRate: string;
  tax: string;
}

export function renderLines(invoice: Invoice, locale = 'en-US'): RenderedLine[] {
  const fmt = (amount: number) => formatMoney(money(amount, invoice.currency), locale);
  return invoice.lines.map((line) => ({
    description: line.description,
    quantity: line.quantity,
    unitPrice: fmt(line.unitPrice),
    net: fmt(lineNet(line)),
    taxRate: \`\${(line.taxRateBp / 100).toFixed(line.taxRateBp % 100 === 0 ? 0 : 2)}%\`,
    tax: fmt(lineTax(line)),
  }));
}

/** Plain-text rendering, used for e-mails and in tests. */
export function renderInvoiceText(invoice: Invoice, customer: Customer, options: RenderOptions = {}): string {
  const locale = options.locale ?? 'en-US';
  const l = labels(locale);
  const totals = computeTotals(invoice.lines);
  const fmt = (amount: number) => formatMoney(money(amount, invoice.currency), locale);
  const out = [
    \`\${l.invoice} \${invoice.number}\`,
    customer.name,
    \`\${l.issued}: \${invoice.issuedAt ?? '—'}   \${l.due}: \${invoice.dueAt ?? '—'}\`,
    '',
  ];
  for (const line of renderLines(invoice, locale)) {
    out.push(\`\${line.description}  \${line.quantity} × \${line.unitPrice} = \${line.net}  (\${line.taxRate}: \${line.tax})\`);
  }
  out.push('', \`\${l.subtotal}: \${fmt(totals.subtotal)}\`, \`\${l.tax}: \${fmt(totals.tax)}\`, \`\${l.total}: \${fmt(totals.total)}\`);
  if (options.paymentInstructions) out.push('', options.paymentInstructions);
  return out.join('\\n');
}

export function renderInvoiceHtml(invoice: Invoice, customer: Customer, options: RenderOptions = {}): string {
  const locale = options.locale ?? 'en-US';
  const l = labels(locale);
  const totals = computeTotals(invoice.lines);
  const fmt = (amount: number) => escapeHtml(formatMoney(money(amount, invoice.currency), locale));
  const rows = renderLines(invoice, locale)
    .map(
      (line) =>
        \`<tr><td>\${escapeHtml(line.description)}</td><td class="num">\${line.quantity}</td>\` +
        \`<td class="num">\${escapeHtml(line.unitPrice)}</td><td class="num">\${escapeHtml(line.net)}</td>\` +
        \`<td class="num">\${line.taxRate}</td><td class="num">\${escapeHtml(line.tax)}</td></tr>\`,
    )
    .join('\\n');
  return \`<!doctype html>
<html lang="\${locale}">
<head><meta charset="utf-8"><title>\${l.invoice} \${escapeHtml(invoice.number)}</title></head>
<body>
<h1>\${l.invoice} \${escapeHtml(invoice.number)}</h1>
<p class="customer">\${escapeHtml(customer.name)}</p>
<p class="dates">\${l.issued}: \${invoice.issuedAt ?? '—'} · \${l.due}: \${invoice.dueAt ?? '—'}</p>
<table class="lines">
\${rows}
</table>
<table class="totals">
<tr><th>\${l.subtotal}</th><td class="num">\${fmt(totals.subtotal)}</td></tr>
<tr><th>\${l.tax}</th><td class="num">\${fmt(totals.tax)}</td></tr>
<tr><th>\${l.total}</th><td class="num">\${fmt(totals.total)}</td></tr>
</table>
\${options.paymentInstructions ? \`<p class="footer">\${escapeHtml(options.paymentInstructions)}</p>\` : ''}
</body>
</html>
\`;
}
`;

PROJECT['scripts/migrate.ts'] = `import { loadConfig } from '../src/config.js';
import { openDatabase, runMigrations } from '../src/db.js';

const config = loadConfig();
const db = openDatabase({ filename: config.DB_FILE });
const applied = runMigrations(db, config.MIGRATIONS_DIR);
console.log(applied.length ? \`applied: \${applied.join(', ')}\` : 'up to date');
db.close();
`;

PROJECT['scripts/seed.ts'] = `/**
 * Fills a database with plausible fake customers and invoices for local development.
 *
 *   npm run seed -- [--db data/dev.db] [--customers 40] [--invoices 2000] [--year 2024] [--reset]
 *                   [--hot-customer ID --hot-share 0.9]   (give one customer most of the invoices)
 *
 * Deterministic: the same arguments give the same data. Invoices are spread evenly over the year, numbered in
 * date order; about 5% stay drafts.
 */
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db.js';
import { roundHalfEven } from '../src/money.js';
import { lineNet } from '../src/services/taxService.js';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'data/dev.db' },
    customers: { type: 'string', default: '40' },
    invoices: { type: 'string', default: '2000' },
    year: { type: 'string', default: '2024' },
    reset: { type: 'boolean', default: false },
    'hot-customer': { type: 'string' },
    'hot-share': { type: 'string', default: '0' },
    help: { type: 'boolean', default: false },
  },
});

if (args.help) {
  console.log('usage: npm run seed -- [--db FILE] [--customers N] [--invoices N] [--year YYYY] [--reset]');
  console.log('                       [--hot-customer ID --hot-share 0..1]');
  process.exit(0);
}

let state = 0x2f6e2b1;
const rand = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

const CUSTOMERS = [
  { name: 'Acme Corporation', country: 'US', currency: 'USD', rateBp: 0 },
  { name: 'Bäckerei Müller GmbH', country: 'DE', currency: 'EUR', rateBp: 1900 },
  { name: 'Smith, Jones & Partners LLP', country: 'GB', currency: 'GBP', rateBp: 2000 },
  { name: 'Minato Trading K.K.', country: 'JP', currency: 'JPY', rateBp: 1000 },
  { name: 'Nordlicht AB', country: 'SE', currency: 'SEK', rateBp: 2500 },
  { name: 'The "Blue Door" Café', country: 'US', currency: 'USD', rateBp: 750 },
  { name: 'Hollis & Vane Architects', country: 'GB', currency: 'GBP', rateBp: 2000 },
  { name: 'Keller Haustechnik GmbH & Co. KG', country: 'DE', currency: 'EUR', rateBp: 1900 },
  { name: 'Atelier Rousseau SARL', country: 'FR', currency: 'EUR', rateBp: 2000 },
  { name: 'Pinecrest Dental Group', country: 'US', currency: 'USD', rateBp: 0 },
  { name: 'Orbital Freight Ltd', country: 'GB', currency: 'GBP', rateBp: 2000 },
  { name: 'Tanaka Seisakusho', country: 'JP', currency: 'JPY', rateBp: 1000 },
  { name: 'Brightwater Yoga, Inc.', country: 'US', currency: 'USD', rateBp: 750 },
  { name: 'Fjällstugan Uthyrning AB', country: 'SE', currency: 'SEK', rateBp: 2500 },
  { name: 'Quarry Lane Bakery', country: 'US', currency: 'USD', rateBp: 750 },
  { name: 'Meridian Health Partners', country: 'US', currency: 'USD', rateBp: 0 },
  { name: 'Kowalski Plumbing & Heating', country: 'US', currency: 'USD', rateBp: 750 },
  { name: 'Harbor Point Marina', country: 'US', currency: 'USD', rateBp: 750 },
  { name: 'Lindqvist Konsult', country: 'SE', currency: 'SEK', rateBp: 2500 },
  { name: 'Greenfield Analytics', country: 'US', currency: 'USD', rateBp: 0 },
  { name: "O'Malley's Pub & Kitchen", country: 'US', currency: 'USD', rateBp: 750 },
  { name: 'Van der Berg Logistiek B.V.', country: 'NL', currency: 'EUR', rateBp: 2100 },
  { name: 'Sunrise Pediatrics, P.C.', country: 'US', currency: 'USD', rateBp: 0 },
  { name: 'Studio Nakamura', country: 'JP', currency: 'JPY', rateBp: 1000 },
  { name: 'Halvorsen Marine AS', country: 'NO', currency: 'NOK', rateBp: 2500 },
] as const;
const WORDS = ['Consulting', 'Support retainer', 'Hosting', 'Licence', 'Training day', 'Migration work', 'Audit'];

const profileOf = (id: number) => CUSTOMERS[(id - 1) % CUSTOMERS.length]!;
const nameOf = (id: number) =>
  profileOf(id).name + (id > CUSTOMERS.length ? \` (\${Math.ceil(id / CUSTOMERS.length)})\` : '');

if (args.reset) rmSync(args.db, { force: true });
const db = openDatabase({ filename: args.db, migrationsDir: 'migrations' });
const year = Number(args.year);
const customerCount = Number(args.customers);
const invoiceCount = Number(args.invoices);
const hot = args['hot-customer'] ? Number(args['hot-customer']) : undefined;
const hotShare = Number(args['hot-share']);
const daysInYear = (Date.UTC(year + 1, 0, 1) - Date.UTC(year, 0, 1)) / 86_400_000;

const insertCustomer = db.prepare('INSERT INTO customers (id, name, email, country) VALUES (?, ?, ?, ?)');
const insertInvoice = db.prepare(
  \`INSERT INTO invoices (number, customer_id, currency, status, issued_at, due_at, subtotal, tax, total)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)\`,
);
const insertLine = db.prepare(
  'INSERT INTO line_items (invoice_id, position, description, quantity, unit_price, tax_rate_bp) VALUES (?, ?, ?, ?, ?, ?)',
);

const started = Date.now();
db.transaction(() => {
  for (let id = 1; id <= customerCount; id++) {
    insertCustomer.run(id, nameOf(id), \`billing+\${id}@example.test\`, profileOf(id).country);
  }
})();
console.log(\`customers: \${customerCount}\`);

const BATCH = 10_000;
for (let done = 0; done < invoiceCount; done += BATCH) {
  db.transaction(() => {
    for (let i = done; i < Math.min(done + BATCH, invoiceCount); i++) {
      const customerId = hot !== undefined && rand() < hotShare ? hot : 1 + Math.floor(rand() * customerCount);
      const profile = profileOf(customerId);
      const day = Math.floor((i / invoiceCount) * daysInYear);
      const issued = new Date(Date.UTC(year, 0, 1 + day)).toISOString().slice(0, 10);
      const due = new Date(Date.UTC(year, 0, 31 + day)).toISOString().slice(0, 10);
      const lines = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => ({
        description: pick(WORDS),
        quantity: 1 + Math.floor(rand() * 8),
        unitPrice: profile.currency === 'JPY' ? 5_000 + Math.floor(rand() * 95_000) : 2_500 + Math.floor(rand() * 60_000),
      }));
      // Stored totals use the v1 rule (tax on the subtotal), like invoices created before INV-188.
      const subtotal = lines.reduce((a, l) => a + lineNet(l), 0);
      const tax = roundHalfEven((subtotal * profile.rateBp) / 10_000);
      const status = rand() < 0.05 ? 'draft' : rand() < 0.8 ? 'paid' : rand() < 0.9 ? 'issued' : 'void';
      const result = insertInvoice.run(
        \`INV-\${year}-\${String(i + 1).padStart(5, '0')}\`,
        customerId,
        profile.currency,
        status,
        status === 'draft' ? null : issued,
        status === 'draft' ? null : due,
        subtotal,
        tax,
        subtotal + tax,
      );
      lines.forEach((l, p) =>
        insertLine.run(result.lastInsertRowid, p + 1, l.description, l.quantity, l.unitPrice, profile.rateBp),
      );
    }
  })();
  console.log(\`invoices: \${Math.min(done + BATCH, invoiceCount)}/\${invoiceCount}\`);
}
console.log(\`done in \${((Date.now() - started) / 1000).toFixed(1)}s -> \${args.db}\`);
db.close();
`;

PROJECT['test/helpers/testDb.ts'] = `import { fileURLToPath } from 'node:url';
import { createApp } from '../../src/app.js';
import { openDatabase, type Db } from '../../src/db.js';

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

/** Every test runs on 2025-03-01 at noon UTC. */
export const FIXED_NOW = new Date('2025-03-01T12:00:00.000Z');
export const fixedClock = () => new Date(FIXED_NOW);

export function testDb(): Db {
  const db = openDatabase({ filename: ':memory:', migrationsDir: MIGRATIONS });
  const insert = db.prepare('INSERT INTO customers (id, name, email, country) VALUES (?, ?, ?, ?)');
  insert.run(1, 'Acme Corporation', 'ap@acme.test', 'US');
  insert.run(2, 'Bäckerei Müller GmbH', 'buchhaltung@mueller.test', 'DE');
  insert.run(3, 'Smith, Jones & Partners LLP', 'accounts@sjp.test', 'GB');
  insert.run(4, 'Minato Trading K.K.', 'keiri@minato.test', 'JP');
  return db;
}

export function testApp(db: Db = testDb(), clock: () => Date = fixedClock) {
  return { db, app: createApp(db, { clock }) };
}

export interface InvoiceRowInput {
  number: string;
  customerId: number;
  status: 'draft' | 'issued' | 'paid' | 'void';
  currency?: string;
  issuedAt?: string;
  dueAt?: string;
  subtotal?: number;
  tax?: number;
  total: number;
}

/** Inserts an invoice row directly, bypassing the service (for list and filter tests). */
export function insertInvoiceRow(db: Db, row: InvoiceRowInput): number {
  const result = db
    .prepare(
      \`INSERT INTO invoices (number, customer_id, currency, status, issued_at, due_at, subtotal, tax, total)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)\`,
    )
    .run(
      row.number,
      row.customerId,
      row.currency ?? 'USD',
      row.status,
      row.issuedAt ?? null,
      row.dueAt ?? null,
      row.subtotal ?? row.total,
      row.tax ?? 0,
      row.total,
    );
  return Number(result.lastInsertRowid);
}
`;

PROJECT['test/money.test.ts'] = `import { describe, expect, it } from 'vitest';
import { allocate, formatMoney, minorUnits, money, roundHalfEven, sum } from '../src/money.js';

describe('roundHalfEven', () => {
  it('rounds exact halves to the even neighbour', () => {
    expect([0.5, 1.5, 2.5, 3.5, -0.5, -1.5].map(roundHalfEven)).toEqual([0, 2, 2, 4, -0, -2]);
  });

  it('rounds everything else to the nearest integer', () => {
    expect([1.49, 1.51, 2.4999, 10.0001].map(roundHalfEven)).toEqual([1, 2, 2, 10]);
  });

  it('treats float noise around .5 as a half', () => {
    expect(roundHalfEven(0.1 * 3 * 10 + 0.5 - 3)).toBe(0);
    expect(roundHalfEven(1234.5000000001)).toBe(1234);
  });
});

describe('money', () => {
  it('rejects fractional minor units', () => {
    expect(() => money(10.5, 'USD')).toThrow(RangeError);
  });

  it('upper-cases the currency', () => {
    expect(money(100, 'eur')).toEqual({ amount: 100, currency: 'EUR' });
  });

  it('knows zero- and three-decimal currencies', () => {
    expect(minorUnits('JPY')).toBe(0);
    expect(minorUnits('KWD')).toBe(3);
    expect(minorUnits('XYZ')).toBe(2);
  });

  it('sums in one currency and refuses to mix', () => {
    expect(sum([money(150, 'USD'), money(275, 'USD')], 'USD').amount).toBe(425);
    expect(() => sum([money(1, 'USD'), money(1, 'EUR')], 'USD')).toThrow(/currency mismatch/);
  });
});

describe('allocate', () => {
  it('splits evenly and hands out the remainder from the first share', () => {
    expect(allocate(money(1000, 'USD'), [1, 1, 1]).map((m) => m.amount)).toEqual([334, 333, 333]);
  });

  it('keeps the total for uneven weights', () => {
    const parts = allocate(money(99_999, 'EUR'), [70, 20, 10]);
    expect(parts.reduce((a, m) => a + m.amount, 0)).toBe(99_999);
  });

  it('rejects empty or zero weights', () => {
    expect(() => allocate(money(1, 'USD'), [])).toThrow(RangeError);
    expect(() => allocate(money(1, 'USD'), [0, 0])).toThrow(RangeError);
  });
});

describe('formatMoney', () => {
  it('formats US dollars', () => {
    expect(formatMoney(money(123_450, 'USD'))).toBe('$1,234.50');
  });

  it('formats yen without decimals', () => {
    expect(formatMoney(money(1_200, 'JPY'), 'en-US')).toBe('¥1,200');
  });
});
`;

PROJECT['test/taxService.test.ts'] = `import { describe, expect, it } from 'vitest';
import { computeTotals, lineNet, lineTax } from '../src/services/taxService.js';

describe('lineNet', () => {
  it('multiplies quantity by unit price', () => {
    expect(lineNet({ quantity: 3, unitPrice: 1_250 })).toBe(3_750);
  });

  it('rounds fractional hours half-even', () => {
    expect(lineNet({ quantity: 1.5, unitPrice: 3 })).toBe(4); // 4.5 -> 4
    expect(lineNet({ quantity: 2.5, unitPrice: 3 })).toBe(8); // 7.5 -> 8
  });
});

describe('lineTax', () => {
  it('applies the rate in basis points', () => {
    expect(lineTax({ quantity: 1, unitPrice: 10_000, taxRateBp: 1900 })).toBe(1_900);
  });

  it('rounds each line on its own', () => {
    expect(lineTax({ quantity: 1, unitPrice: 70, taxRateBp: 750 })).toBe(5); // 5.25
    expect(lineTax({ quantity: 1, unitPrice: 30, taxRateBp: 2500 })).toBe(8); // 7.5 -> 8
  });

  it('is zero for a zero rate', () => {
    expect(lineTax({ quantity: 4, unitPrice: 99_999, taxRateBp: 0 })).toBe(0);
  });
});

describe('computeTotals', () => {
  it('sums per-line tax (the PDF rule)', () => {
    const lines = [70, 70, 70].map((unitPrice) => ({ quantity: 1, unitPrice, taxRateBp: 750 }));
    // per line: 5.25 -> 5, three times = 15; on the sum it would be 15.75 -> 16
    expect(computeTotals(lines)).toEqual({ subtotal: 210, tax: 15, total: 225 });
  });

  it('handles mixed rates', () => {
    const totals = computeTotals([
      { quantity: 2, unitPrice: 60_000, taxRateBp: 750 },
      { quantity: 1, unitPrice: 12_500, taxRateBp: 0 },
    ]);
    expect(totals).toEqual({ subtotal: 132_500, tax: 9_000, total: 141_500 });
  });

  it('returns zeros for no lines', () => {
    expect(computeTotals([])).toEqual({ subtotal: 0, tax: 0, total: 0 });
  });
});
`;

PROJECT['test/invoiceService.test.ts'] = `import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/db.js';
import { ConflictError, NotFoundError, ValidationError } from '../src/errors.js';
import { InvoiceService } from '../src/services/invoiceService.js';
import { fixedClock, testDb } from './helpers/testDb.js';

const consulting = {
  customerId: 1,
  currency: 'usd',
  lines: [
    { description: 'Architecture review', quantity: 6.5, unitPrice: 18_000, taxRateBp: 750 },
    { description: 'Load test report', quantity: 1, unitPrice: 45_000, taxRateBp: 750 },
  ],
};

describe('InvoiceService', () => {
  let db: Db;
  let service: InvoiceService;

  beforeEach(() => {
    db = testDb();
    service = new InvoiceService(db, fixedClock);
  });

  describe('createInvoice', () => {
    it('stores a draft with totals in minor units', () => {
      const invoice = service.createInvoice(consulting);
      expect(invoice).toMatchObject({
        number: 'INV-2025-00001',
        status: 'draft',
        currency: 'USD',
        subtotal: 162_000,
        tax: 12_150,
        total: 174_150,
      });
    });

    it('numbers invoices sequentially per year', () => {
      const numbers = [1, 2, 3].map(() => service.createInvoice(consulting).number);
      expect(numbers).toEqual(['INV-2025-00001', 'INV-2025-00002', 'INV-2025-00003']);
    });

    it('keeps line order', () => {
      const invoice = service.createInvoice(consulting);
      expect(invoice.lines.map((l) => [l.position, l.description])).toEqual([
        [1, 'Architecture review'],
        [2, 'Load test report'],
      ]);
    });

    it('rejects a customer that does not exist', () => {
      expect(() => service.createInvoice({ ...consulting, customerId: 99 })).toThrow(ValidationError);
    });
  });

  describe('issueInvoice', () => {
    it('sets issued and due dates from the clock', () => {
      const { id } = service.createInvoice(consulting);
      expect(service.issueInvoice(id)).toMatchObject({ status: 'issued', issuedAt: '2025-03-01', dueAt: '2025-03-31' });
    });

    it('refuses to issue twice', () => {
      const { id } = service.createInvoice(consulting);
      service.issueInvoice(id);
      expect(() => service.issueInvoice(id)).toThrow(ConflictError);
    });
  });

  describe('voidInvoice', () => {
    it('appends the reason to the notes', () => {
      const { id } = service.createInvoice({ ...consulting, notes: 'PO 4471-B' });
      expect(service.voidInvoice(id, 'duplicate of INV-2025-00002').notes).toBe(
        'PO 4471-B\\nVoided: duplicate of INV-2025-00002',
      );
    });

    it('cannot void a paid invoice', () => {
      const { id, total } = service.createInvoice(consulting);
      service.issueInvoice(id);
      service.recordPayment(id, { amount: total, method: 'bank_transfer' });
      expect(() => service.voidInvoice(id, 'customer asked')).toThrow(ConflictError);
    });

    it('requires a reason', () => {
      const { id } = service.createInvoice(consulting);
      expect(() => service.voidInvoice(id, '   ')).toThrow(ValidationError);
    });
  });

  describe('recordPayment', () => {
    it('marks the invoice paid when the balance reaches zero', () => {
      const { id } = service.createInvoice(consulting);
      service.issueInvoice(id);
      service.recordPayment(id, { amount: 100_000, method: 'card' });
      const { invoice } = service.recordPayment(id, { amount: 74_150, method: 'card' });
      expect(invoice.status).toBe('paid');
    });

    it('rejects an overpayment without writing a payment row', () => {
      const { id } = service.createInvoice(consulting);
      service.issueInvoice(id);
      expect(() => service.recordPayment(id, { amount: 174_151, method: 'card' })).toThrow(ValidationError);
      expect(db.prepare('SELECT COUNT(*) AS n FROM payments').get()).toEqual({ n: 0 });
    });

    it('rejects payments on drafts', () => {
      const { id } = service.createInvoice(consulting);
      expect(() => service.recordPayment(id, { amount: 1, method: 'cash' })).toThrow(ConflictError);
    });
  });

  describe('balanceDue', () => {
    it('subtracts partial payments', () => {
      const { id } = service.createInvoice(consulting);
      service.issueInvoice(id);
      service.recordPayment(id, { amount: 50_000, method: 'card' });
      expect(service.balanceDue(id)).toBe(124_150);
    });

    it('is zero for a void invoice', () => {
      const { id } = service.createInvoice(consulting);
      service.voidInvoice(id, 'test');
      expect(service.balanceDue(id)).toBe(0);
    });
  });

  it('throws NotFoundError for an unknown id', () => {
    expect(() => service.getInvoice(404)).toThrow(NotFoundError);
  });
});
`;

PROJECT['test/routes.invoices.test.ts'] = `import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/db.js';
import { insertInvoiceRow, testApp } from './helpers/testDb.js';

const draft = {
  customerId: 1,
  currency: 'USD',
  lines: [
    { description: 'Discovery workshop', quantity: 2, unitPrice: 60_000, taxRateBp: 750 },
    { description: 'Travel (flat fee)', quantity: 1, unitPrice: 12_500, taxRateBp: 0 },
  ],
};

describe('invoice routes', () => {
  let db: Db;
  let app: ReturnType<typeof testApp>['app'];

  beforeEach(() => {
    ({ db, app } = testApp());
  });

  describe('POST /invoices', () => {
    it('creates a draft and returns 201 with a Location header', async () => {
      const res = await request(app).post('/invoices').send(draft);
      expect(res.status).toBe(201);
      expect(res.headers.location).toBe(\`/invoices/\${res.body.id}\`);
      expect(res.body).toMatchObject({ number: 'INV-2025-00001', status: 'draft', subtotal: 132_500, tax: 9_000 });
    });

    it('rejects an unknown customer with 400', async () => {
      const res = await request(app)
        .post('/invoices')
        .send({ ...draft, customerId: 99 });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('customer 99 does not exist');
    });

    it('validates line items', async () => {
      const res = await request(app)
        .post('/invoices')
        .send({ ...draft, lines: [{ description: '', quantity: 0, unitPrice: 1.5 }] });
      expect(res.status).toBe(400);
      expect(res.body.issues).toHaveLength(3);
    });
  });

  describe('GET /invoices', () => {
    beforeEach(() => {
      insertInvoiceRow(db, { number: 'INV-2025-00001', customerId: 1, status: 'paid', issuedAt: '2025-01-10', dueAt: '2025-02-09', total: 50_000 });
      insertInvoiceRow(db, { number: 'INV-2025-00002', customerId: 1, status: 'issued', issuedAt: '2025-01-20', dueAt: '2025-02-19', total: 80_000 });
      insertInvoiceRow(db, { number: 'INV-2025-00003', customerId: 2, status: 'issued', issuedAt: '2025-02-14', dueAt: '2025-03-16', currency: 'EUR', total: 148_750 });
      insertInvoiceRow(db, { number: 'INV-2025-00004', customerId: 3, status: 'draft', currency: 'GBP', total: 12_000 });
    });

    const numbers = (body: { number: string }[]) => body.map((i) => i.number);

    it('lists newest first, drafts last', async () => {
      const res = await request(app).get('/invoices');
      expect(res.status).toBe(200);
      expect(numbers(res.body)).toEqual(['INV-2025-00003', 'INV-2025-00002', 'INV-2025-00001', 'INV-2025-00004']);
    });

    it('filters by customer', async () => {
      const res = await request(app).get('/invoices?customerId=1');
      expect(numbers(res.body)).toEqual(['INV-2025-00002', 'INV-2025-00001']);
    });

    it('filters overdue invoices relative to the injected clock', async () => {
      const res = await request(app).get('/invoices?status=overdue');
      expect(res.status).toBe(200);
      expect(numbers(res.body)).toEqual(['INV-2025-00002']);
    });

    it('caps the page size at 200', async () => {
      const res = await request(app).get('/invoices?limit=500');
      expect(res.status).toBe(400);
    });
  });

  describe('GET /invoices/:id', () => {
    it('returns 404 for a missing invoice', async () => {
      const res = await request(app).get('/invoices/12345');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: 'invoice 12345 not found' });
    });

    it('returns 400 for a non-numeric id', async () => {
      const res = await request(app).get('/invoices/abc');
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('invalid invoice id: abc');
    });
  });

  describe('payments', () => {
    it('records a partial payment and lists it', async () => {
      const created = await request(app).post('/invoices').send(draft);
      await request(app).post(\`/invoices/\${created.body.id}/issue\`).expect(200);
      await request(app)
        .post(\`/invoices/\${created.body.id}/payments\`)
        .send({ amount: 50_000, method: 'card', receivedAt: '2025-03-02T10:00:00.000Z', reference: 'ch_3PqK' })
        .expect(201);
      const res = await request(app).get(\`/invoices/\${created.body.id}/payments\`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        { id: 1, amount: 50_000, method: 'card', received_at: '2025-03-02T10:00:00.000Z', reference: 'ch_3PqK' },
      ]);
    });

    it('rejects an overpayment with 400', async () => {
      const created = await request(app).post('/invoices').send(draft);
      await request(app).post(\`/invoices/\${created.body.id}/issue\`).expect(200);
      const res = await request(app).post(\`/invoices/\${created.body.id}/payments\`).send({ amount: 141_501, method: 'card' });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('payment of 141501 exceeds the balance due of 141500 on INV-2025-00001');
    });

    it('returns 404 when listing payments of a missing invoice', async () => {
      const res = await request(app).get('/invoices/777/payments');
      expect(res.status).toBe(404);
    });
  });

  describe('GET /customers/:id/invoices/summary', () => {
    it('groups totals by currency and skips void invoices', async () => {
      insertInvoiceRow(db, { number: 'INV-2025-00010', customerId: 2, status: 'paid', issuedAt: '2025-01-02', currency: 'EUR', total: 10_000 });
      insertInvoiceRow(db, { number: 'INV-2025-00011', customerId: 2, status: 'issued', issuedAt: '2025-01-03', currency: 'EUR', total: 2_500 });
      insertInvoiceRow(db, { number: 'INV-2025-00012', customerId: 2, status: 'void', issuedAt: '2025-01-04', currency: 'EUR', total: 99_999 });
      insertInvoiceRow(db, { number: 'INV-2025-00013', customerId: 2, status: 'paid', issuedAt: '2025-01-05', currency: 'USD', total: 700 });
      const res = await request(app).get('/customers/2/invoices/summary');
      expect(res.body).toEqual({
        customerId: 2,
        byCurrency: [
          { currency: 'EUR', count: 2, paid: 10_000, outstanding: 2_500 },
          { currency: 'USD', count: 1, paid: 700, outstanding: 0 },
        ],
      });
    });
  });
});
`;

PROJECT['test/routes.customers.test.ts'] = `import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { testApp } from './helpers/testDb.js';

describe('customer routes', () => {
  it('lists customers by name', async () => {
    const { app } = testApp();
    const res = await request(app).get('/customers');
    expect(res.body.map((c: { name: string }) => c.name)).toEqual([
      'Acme Corporation',
      'Bäckerei Müller GmbH',
      'Minato Trading K.K.',
      'Smith, Jones & Partners LLP',
    ]);
  });

  it('searches by name or email', async () => {
    const { app } = testApp();
    const res = await request(app).get('/customers?q=mueller');
    expect(res.body).toHaveLength(1);
    expect(res.body[0].country).toBe('DE');
  });

  it('creates a customer', async () => {
    const { app } = testApp();
    const res = await request(app).post('/customers').send({ name: 'Nordlicht AB', email: 'faktura@nordlicht.test', country: 'se' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: 5, country: 'SE' });
  });

  it('rejects a duplicate email regardless of case', async () => {
    const { app } = testApp();
    const res = await request(app).post('/customers').send({ name: 'Acme again', email: 'AP@acme.test' });
    expect(res.status).toBe(409);
  });

  it('returns 404 for an unknown customer', async () => {
    const { app } = testApp();
    expect((await request(app).get('/customers/999')).status).toBe(404);
  });

  it('reports health with the number of applied migrations', async () => {
    const { app } = testApp();
    const res = await request(app).get('/healthz');
    expect(res.body).toEqual({ ok: true, migrations: 4 });
  });
});
`;

PROJECT['test/pdf.test.ts'] = `import { describe, expect, it } from 'vitest';
import type { Customer } from '../src/models/customer.js';
import type { Invoice } from '../src/models/invoice.js';
import { renderInvoiceHtml, renderInvoiceText, renderLines } from '../src/pdf/renderInvoice.js';

const customer: Customer = { id: 2, name: 'Bäckerei Müller GmbH', email: 'b@mueller.test', country: 'DE', createdAt: '' };

const invoice: Invoice = {
  id: 7,
  number: 'INV-2025-00007',
  customerId: 2,
  currency: 'EUR',
  status: 'issued',
  issuedAt: '2025-02-03',
  dueAt: '2025-03-05',
  subtotal: 125_000,
  tax: 23_750,
  total: 148_750,
  notes: null,
  createdAt: '2025-02-03T09:00:00.000Z',
  updatedAt: '2025-02-03T09:00:00.000Z',
  lines: [
    { id: 1, position: 1, description: 'Ofenwartung', quantity: 1, unitPrice: 95_000, taxRateBp: 1900 },
    { id: 2, position: 2, description: 'Ersatzteile', quantity: 3, unitPrice: 10_000, taxRateBp: 1900 },
  ],
};

describe('renderInvoice', () => {
  it('renders one row per line with per-line tax', () => {
    expect(renderLines(invoice).map((l) => l.tax)).toEqual(['€180.50', '€57.00']);
  });

  it('formats EUR amounts for de-DE customers', () => {
    const text = renderInvoiceText(invoice, customer, { locale: 'de-DE' });
    const total = text.split('\\n').find((l) => l.startsWith('Gesamt:'));
    expect(total).toBe('Gesamt: 1.487,50 €');
  });

  it('uses English labels for unknown locales', () => {
    expect(renderInvoiceText(invoice, customer, { locale: 'pt-BR' })).toContain('Subtotal:');
  });

  it('prints payment instructions when given', () => {
    const text = renderInvoiceText(invoice, customer, { paymentInstructions: 'IBAN DE89 3704 0044 0532 0130 00' });
    expect(text.endsWith('IBAN DE89 3704 0044 0532 0130 00')).toBe(true);
  });

  it('escapes HTML in descriptions and customer names', () => {
    const html = renderInvoiceHtml({ ...invoice, lines: [{ ...invoice.lines[0]!, description: '<b>oven</b> & co' }] }, customer);
    expect(html).toContain('&#60;b&#62;oven&#60;/b&#62; &#38; co');
  });

  it('prints totals computed from the lines, not the stored ones', () => {
    const html = renderInvoiceHtml({ ...invoice, tax: 1, total: 125_001 }, customer);
    expect(html).toContain('€1,487.50');
  });
});
`;

// ---------------------------------------------------------------------------------------------------------------------
// In-memory work tree and the tools that act on it

const fs = new Map(Object.entries(PROJECT));
const original = new Map(fs);

function file(path) {
  const text = fs.get(path);
  if (text === undefined) throw new Error(`no such file in the invented project: ${path}`);
  return text;
}

const abs = (path) => (path.startsWith('/') ? path : `${CWD}/${path}`);

/** pi's `read` tool: the file's text, or a window of it with a hint to continue. */
function read(path, opts) {
  const args = { path };
  if (opts?.offset !== undefined) args.offset = opts.offset;
  if (opts?.limit !== undefined) args.limit = opts.limit;
  return {
    name: 'read',
    args,
    ms: int(rnd.time, 3, 24),
    run() {
      const text = fs.get(path);
      if (text === undefined)
        return { text: `ENOENT: no such file or directory, access '${abs(path)}'`, isError: true };
      if (!opts) return { text };
      const lines = splitLines(text);
      const start = (opts.offset ?? 1) - 1;
      const end = opts.limit !== undefined ? Math.min(lines.length, start + opts.limit) : lines.length;
      let out = lines.slice(start, end).join('\n');
      if (end < lines.length)
        out += `\n\n[${lines.length - end} more lines in file. Use offset=${end + 1} to continue.]`;
      return { text: out };
    },
  };
}

/** pi's `edit` tool: exact, unique replacement. A mismatch is reported as pi does (used once on purpose). */
function edit(path, oldText, newText, { expectFailure = false } = {}) {
  return {
    name: 'edit',
    args: { path, oldText, newText },
    ms: int(rnd.time, 6, 30),
    run() {
      const before = file(path);
      const at = before.indexOf(oldText);
      if (expectFailure !== at < 0)
        throw new Error(
          `edit of ${path}: oldText ${at < 0 ? 'not found' : 'unexpectedly found'}: ${oldText.slice(0, 80)}`,
        );
      if (at < 0) {
        return {
          text: `Could not find the exact text in ${path}. The old text must match exactly including all whitespace and newlines.`,
          isError: true,
        };
      }
      if (before.indexOf(oldText, at + 1) >= 0)
        throw new Error(`edit of ${path}: oldText is not unique: ${oldText.slice(0, 60)}`);
      const after = before.slice(0, at) + newText + before.slice(at + oldText.length);
      fs.set(path, after);
      const details = piEditDiff(before, after);
      return { text: `Successfully replaced text in ${path}.`, details };
    },
  };
}

function write(path, content) {
  return {
    name: 'write',
    args: { path, content },
    ms: int(rnd.time, 4, 16),
    run() {
      fs.set(path, content);
      return { text: `Successfully wrote ${Buffer.byteLength(content)} bytes to ${path}` };
    },
  };
}

/** pi's limits on what a tool returns to the model: whichever is hit first. */
const OUTPUT_MAX_LINES = 2000;
const OUTPUT_MAX_BYTES = 50 * 1024;

/**
 * pi's truncation of long command output: keep the last whole lines that fit both limits, say so at the end and where
 * the full output went (a temp file), and put the numbers in the result's details. Undefined if the output fits.
 */
function truncateTail(text) {
  const all = text.split('\n');
  const totalBytes = Buffer.byteLength(text);
  if (all.length <= OUTPUT_MAX_LINES && totalBytes <= OUTPUT_MAX_BYTES) return undefined;
  let outputBytes = 0;
  let from = all.length;
  let truncatedBy = 'lines';
  while (from > 0 && all.length - from < OUTPUT_MAX_LINES) {
    const bytes = Buffer.byteLength(all[from - 1]) + (from < all.length ? 1 : 0);
    if (outputBytes + bytes > OUTPUT_MAX_BYTES) {
      truncatedBy = 'bytes';
      break;
    }
    outputBytes += bytes;
    from--;
  }
  if (from === all.length) throw new Error('truncateTail: a last line over the byte limit is not modelled');
  const content = all.slice(from).join('\n');
  const fullOutputPath = `/tmp/pi-bash-${chars(rnd.tmp, HEX, 16)}.log`;
  const shown = `Showing lines ${from + 1}-${all.length} of ${all.length}`;
  const limit = truncatedBy === 'bytes' ? ` (${(OUTPUT_MAX_BYTES / 1024).toFixed(1)}KB limit)` : '';
  return {
    text: `${content}\n\n[${shown}${limit}. Full output: ${fullOutputPath}]`,
    details: {
      truncation: {
        content,
        truncated: true,
        truncatedBy,
        totalLines: all.length,
        totalBytes,
        outputLines: all.length - from,
        outputBytes,
        lastLinePartial: false,
        firstLineExceedsLimit: false,
        maxLines: OUTPUT_MAX_LINES,
        maxBytes: OUTPUT_MAX_BYTES,
      },
      fullOutputPath,
    },
  };
}

/**
 * pi's `bash` tool. `output` is the command's combined output, or a function computing it when the call runs
 * (so it can look at the work tree as it is then); output over pi's limits keeps its tail (truncateTail); a non-zero
 * exit is appended as pi does and marks an error.
 */
function bash(command, output, { exit = 0, ms, timeout, effect } = {}) {
  const args = timeout ? { command, timeout } : { command };
  return {
    name: 'bash',
    args,
    ms: ms ?? int(rnd.time, 40, 900),
    run() {
      effect?.();
      let out = typeof output === 'function' ? output() : output;
      let code = exit;
      if (typeof out === 'object') {
        // vitest() and friends return { text, exit }; the declared exit code must agree.
        if (out.exit !== exit) throw new Error(`bash ${command}: declared exit ${exit}, output says ${out.exit}`);
        ({ text: out, exit: code } = out);
      }
      if (typeof out !== 'string') throw new Error(`bash ${command}: output is not text`);
      const truncated = truncateTail(out);
      const details = truncated?.details;
      const text = truncated ? truncated.text : out === '' ? (code ? '' : '(no output)') : out;
      if (code) return { text: `${text}\n\nCommand exited with code ${code}`, isError: true, details };
      return { text, details };
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Tool output the invented project would print

const NPM_BANNER = (script, cmd) => `\n> invoice-service@1.4.2 ${script}\n> ${cmd}\n`;

const testFiles = () => [...fs.keys()].filter((p) => p.startsWith('test/') && p.endsWith('.test.ts')).sort();
const countTests = (path) => (file(path).match(/^\s*it\(/gm) ?? []).length;

/** A vitest code frame pointing at `snippet` (searched after `anchor`). */
function codeFrame(path, snippet, anchor, pointAt = snippet) {
  const text = file(path);
  const { line, col } = locate(text, snippet, anchor, path);
  const caretCol = col + snippet.indexOf(pointAt);
  const lines = text.split('\n');
  const width = String(line + 2).length;
  const out = [` ❯ ${path}:${line}:${caretCol}`];
  for (let l = line - 2; l <= line + 2; l++) {
    if (l < 1 || l > lines.length) continue;
    out.push(`    ${String(l).padStart(width)}| ${lines[l - 1]}`.trimEnd());
    if (l === line) out.push(`    ${' '.repeat(width)}| ${' '.repeat(caretCol - 1)}^`);
  }
  return out.join('\n');
}

/**
 * `npm test` (vitest run) output. failures: [{ file, title, summary, body }] where body is the error, diff and
 * frames. Test counts come from the test files in the work tree.
 */
/** describe/it structure of a test file: [{ depth, kind, name, count }] in source order. */
function testTree(path) {
  const stack = [];
  const nodes = [];
  for (const line of splitLines(file(path))) {
    const m = line.match(/^(\s*)(describe|it)\((['"`])(.*?)\3,/);
    if (!m) continue;
    const indent = m[1].length;
    while (stack.length && stack[stack.length - 1].indent >= indent) stack.pop();
    const node = {
      depth: stack.length,
      kind: m[2],
      name: m[4],
      count: 0,
      path: [...stack.map((s) => s.node.name), m[4]].join(' > '),
    };
    nodes.push(node);
    if (m[2] === 'describe') stack.push({ indent, node });
    else for (const s of stack) s.node.count++;
  }
  return nodes;
}

function vitest({ failures = [], only, clockAt, script = true, stdout = [], verbose = false, slowMs = 0 } = {}) {
  const files = only ? [only].flat() : testFiles();
  const out = [];
  const args = [only ? ` ${[only].flat().join(' ')}` : '', verbose ? ' --reporter=verbose' : ''].join('');
  if (script) out.push(NPM_BANNER('test', 'vitest run' + args), '');
  out.push(` RUN  v1.6.0 ${CWD}`, '');
  for (const s of stdout) out.push(`stdout | ${s.test}`, s.text, '');
  let failedTests = 0;
  let totalTests = 0;
  let failedFiles = 0;
  let testsMs = 0;
  for (const x of failures) {
    if (!testTree(x.file).some((node) => node.kind === 'it' && node.path === x.title))
      throw new Error(`no such test: ${x.file} > ${x.title}`);
  }
  for (const f of files) {
    const n = countTests(f);
    const fails = failures.filter((x) => x.file === f);
    const ms = int(rnd.time, 5, f.includes('routes') || f.includes('export') ? 260 : 110);
    testsMs += ms;
    totalTests += n;
    failedTests += fails.length;
    if (verbose) {
      if (fails.length) failedFiles++;
      out.push(` ${fails.length ? '❯' : '✓'} ${f} (${n}) ${ms}ms`);
      for (const node of testTree(f)) {
        const failed = fails.some(
          (x) => x.title === node.path || (node.kind === 'describe' && x.title.startsWith(node.path + ' > ')),
        );
        const pad = '   ' + '  '.repeat(node.depth);
        if (node.kind === 'describe') out.push(`${pad}${failed ? '❯' : '✓'} ${node.name} (${node.count})`);
        else out.push(`${pad}${failed ? '×' : '✓'} ${node.name}${failed ? '' : ` ${int(rnd.time, 0, 40)}ms`}`);
      }
    } else if (fails.length) {
      failedFiles++;
      out.push(` ❯ ${f}  (${n} tests | ${fails.length} failed) ${ms}ms`);
      for (const x of fails) out.push(`   ❯ ${f} > ${x.title}`, `     → ${x.summary}`);
    } else {
      out.push(` ✓ ${f}  (${n} tests) ${ms}ms`);
    }
  }
  if (failures.length) {
    const bar = '⎯'.repeat(7);
    out.push('', `${bar} Failed Tests ${failures.length} ${bar}`, '');
    failures.forEach((x, i) => {
      out.push(` FAIL  ${x.file} > ${x.title}`, x.body, '', `${'⎯'.repeat(51)}[${i + 1}/${failures.length}]⎯`, '');
    });
  } else out.push('');
  const passedFiles = files.length - failedFiles;
  testsMs += slowMs;
  const tally = (failed, passed, all) =>
    [failed ? `${failed} failed` : '', passed ? `${passed} passed` : ''].filter(Boolean).join(' | ') + ` (${all})`;
  out.push(
    ` Test Files  ${tally(failedFiles, passedFiles, files.length)}`,
    `      Tests  ${tally(failedTests, totalTests - failedTests, totalTests)}`,
    `   Start at  ${clockAt}`,
    `   Duration  ${((testsMs + 900 + int(rnd.time, 0, 700)) / 1000).toFixed(2)}s (transform ${int(rnd.time, 280, 520)}ms, setup 0ms, collect ${int(rnd.time, 700, 1400)}ms, tests ${testsMs}ms, environment ${int(rnd.time, 1, 3)}ms, prepare ${int(rnd.time, 500, 1100)}ms)`,
    '',
  );
  return { text: out.join('\n'), exit: failures.length ? 1 : 0 };
}

/** `tsc --noEmit` output for errors [{ path, snippet, anchor, pointAt, code, message }]. */
function tsc(errors) {
  if (errors.length === 0) return '';
  const out = [];
  const perFile = new Map();
  for (const e of errors) {
    const { line, col } = locate(file(e.path), e.snippet, e.anchor, e.path);
    const c = col + (e.pointAt ? e.snippet.indexOf(e.pointAt) : 0);
    out.push(`${e.path}(${line},${c}): error TS${e.code}: ${e.message}`);
    if (!perFile.has(e.path)) perFile.set(e.path, { count: 0, line });
    perFile.get(e.path).count++;
  }
  out.push('');
  if (perFile.size === 1) {
    const [[path, { line }]] = perFile;
    out.push(`Found ${errors.length} error${errors.length > 1 ? 's' : ''} in ${path}:${line}`, '');
  } else {
    out.push(`Found ${errors.length} errors in ${perFile.size} files.`, '', 'Errors  Files');
    for (const [path, { count, line }] of perFile) out.push(`${String(count).padStart(6)}  ${path}:${line}`);
  }
  return out.join('\n');
}

/** `npm run lint` output for problems [{ path, snippet, anchor, severity, message, rule }]. */
function eslint(problems) {
  const out = [NPM_BANNER('lint', "eslint 'src/**/*.ts' 'test/**/*.ts' 'scripts/**/*.ts'"), ''];
  if (problems.length === 0) return out.join('\n');
  const byFile = new Map();
  for (const p of problems) {
    const { line, col } = locate(file(p.path), p.snippet, p.anchor, p.path);
    if (!byFile.has(p.path)) byFile.set(p.path, []);
    byFile.get(p.path).push(`  ${line}:${col}  ${p.severity.padEnd(7)}  ${p.message}  ${p.rule}`);
  }
  for (const [path, lines] of byFile) out.push(`${CWD}/${path}`, ...lines, '');
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.length - errors;
  out.push(
    `✖ ${problems.length} problem${problems.length > 1 ? 's' : ''} (${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'})`,
    '',
  );
  return out.join('\n');
}

function wcLines(paths) {
  const rows = paths.map((p) => [splitLines(file(p)).length, p]).sort((a, b) => a[0] - b[0]);
  const total = rows.reduce((s, r) => s + r[0], 0);
  const w = String(total).length + 1;
  return [...rows.map(([n, p]) => `${String(n).padStart(w)} ${p}`), `${String(total).padStart(w)} total`].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------------
// The session file

const lines = [];
const session = {
  id: uuid(rnd.ids),
  clock: START,
  parentId: null,
  /** Tokens of the conversation so far (what the model sees besides the system prefix), unrounded. */
  contextTokens: 0,
  previousPrompt: 0,
  messages: 0,
};

const iso = (ms) => new Date(ms).toISOString();
const hhmmss = (ms) => iso(ms).slice(11, 19);

function entry(type, timestamp, fields) {
  const id = entryId();
  lines.push(JSON.stringify({ type, id, parentId: session.parentId, timestamp: iso(timestamp), ...fields }));
  session.parentId = id;
}

function header() {
  lines.push(JSON.stringify({ type: 'session', version: 3, id: session.id, timestamp: iso(session.clock), cwd: CWD }));
  session.clock += int(rnd.time, 4, 9);
  entry('model_change', session.clock, { provider: MODEL.provider, modelId: MODEL.model });
  session.clock += 1;
  entry('thinking_level_change', session.clock, { thinkingLevel: 'medium' });
}

/** A user message after `pause` (how long the user took to read and type). */
function user(text, pause = 20_000) {
  session.clock += pause + int(rnd.time, 0, 4_000);
  const ts = session.clock;
  session.clock += int(rnd.time, 3, 9);
  entry('message', session.clock, { message: { role: 'user', content: [{ type: 'text', text }], timestamp: ts } });
  session.contextTokens += MESSAGE_FRAMING + textTokens(text);
  session.messages++;
}

const round6 = (x) => Math.round(x * 1e6) / 1e6;

/**
 * An assistant turn: optional thinking and text, then tool calls, each run in order with its result appended.
 * Usage follows the conversation: the prompt is the system prefix plus everything so far, counted with textTokens()
 * and the framing constants; the previous request's prompt is read from the cache (pi marks the end of the
 * conversation as a cache breakpoint on every request) and the rest written to it, leaving a token or two uncached.
 * The output is what the turn adds (thinking, text, tool calls) plus a few tokens of stop and framing.
 */
function turn({ thinking, text, calls = [] }) {
  const content = [];
  let outTokens = 0;
  if (thinking) {
    content.push({ type: 'thinking', thinking, thinkingSignature: thinkingSignature(thinking.length) });
    outTokens += textTokens(thinking);
  }
  if (text) {
    content.push({ type: 'text', text });
    outTokens += textTokens(text);
  }
  const withIds = calls.map((c) => ({ ...c, id: toolCallId() }));
  for (const c of withIds) {
    content.push({ type: 'toolCall', id: c.id, name: c.name, arguments: c.args });
    outTokens += toolBlockTokens(c.id) + textTokens(c.name + JSON.stringify(c.args));
  }

  const prompt = SYSTEM_PREFIX_TOKENS + Math.round(session.contextTokens);
  const input = pick(rnd.time, [1, 1, 1, 2, 3]);
  const cacheRead = session.previousPrompt;
  const cacheWrite = prompt - input - cacheRead;
  if (cacheWrite <= 0) throw new Error('prompt did not grow');
  const output = Math.max(12, Math.round(outTokens) + int(rnd.time, 0, 9));
  const cost = {
    input: round6((input * PRICE.input) / 1e6),
    output: round6((output * PRICE.output) / 1e6),
    cacheRead: round6((cacheRead * PRICE.cacheRead) / 1e6),
    cacheWrite: round6((cacheWrite * PRICE.cacheWrite) / 1e6),
  };
  cost.total = round6(cost.input + cost.output + cost.cacheRead + cost.cacheWrite);
  const usage = { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };

  const requestAt = session.clock + int(rnd.time, 2, 12);
  // Time to first token grows with the prompt; then ~60 tokens/s.
  const latency = 800 + Math.round(prompt / 90) + int(rnd.time, 0, 1200) + Math.round((output * 1000) / 60);
  session.clock = requestAt + latency;
  const stopReason = withIds.length ? 'toolUse' : 'stop';
  entry('message', session.clock, {
    message: {
      role: 'assistant',
      content,
      api: MODEL.api,
      provider: MODEL.provider,
      model: MODEL.model,
      usage,
      stopReason,
      timestamp: requestAt,
    },
  });
  session.contextTokens += MESSAGE_FRAMING + outTokens;
  session.previousPrompt = prompt;
  session.messages++;

  for (const c of withIds) {
    session.clock += c.ms;
    const result = c.run();
    const message = {
      role: 'toolResult',
      toolCallId: c.id,
      toolName: c.name,
      content: [{ type: 'text', text: result.text }],
    };
    if (result.details) message.details = result.details;
    message.isError = result.isError === true;
    message.timestamp = session.clock;
    entry('message', session.clock, { message });
    session.contextTokens += MESSAGE_FRAMING + toolBlockTokens(c.id) + textTokens(result.text);
    session.messages++;
    session.clock += int(rnd.time, 0, 2);
  }
}

/** Wall-clock time, for outputs that print it (vitest "Start at", timings). */
const now = () => hhmmss(session.clock + 400);

// ---------------------------------------------------------------------------------------------------------------------
// Invented data: a mirror of the invented scripts/seed.ts (same generator, same arithmetic), so that the rows the
// session shows are exactly what that script would have inserted.

const SEED_CUSTOMERS = [
  ['Acme Corporation', 'USD', 0],
  ['Bäckerei Müller GmbH', 'EUR', 1900],
  ['Smith, Jones & Partners LLP', 'GBP', 2000],
  ['Minato Trading K.K.', 'JPY', 1000],
  ['Nordlicht AB', 'SEK', 2500],
  ['The "Blue Door" Café', 'USD', 750],
  ['Hollis & Vane Architects', 'GBP', 2000],
  ['Keller Haustechnik GmbH & Co. KG', 'EUR', 1900],
  ['Atelier Rousseau SARL', 'EUR', 2000],
  ['Pinecrest Dental Group', 'USD', 0],
  ['Orbital Freight Ltd', 'GBP', 2000],
  ['Tanaka Seisakusho', 'JPY', 1000],
  ['Brightwater Yoga, Inc.', 'USD', 750],
  ['Fjällstugan Uthyrning AB', 'SEK', 2500],
  ['Quarry Lane Bakery', 'USD', 750],
  ['Meridian Health Partners', 'USD', 0],
  ['Kowalski Plumbing & Heating', 'USD', 750],
  ['Harbor Point Marina', 'USD', 750],
  ['Lindqvist Konsult', 'SEK', 2500],
  ['Greenfield Analytics', 'USD', 0],
  ["O'Malley's Pub & Kitchen", 'USD', 750],
  ['Van der Berg Logistiek B.V.', 'EUR', 2100],
  ['Sunrise Pediatrics, P.C.', 'USD', 0],
  ['Studio Nakamura', 'JPY', 1000],
  ['Halvorsen Marine AS', 'NOK', 2500],
].map(([name, currency, rateBp]) => ({ name, currency, rateBp }));
const SEED_WORDS = ['Consulting', 'Support retainer', 'Hosting', 'Licence', 'Training day', 'Migration work', 'Audit'];

function roundHalfEven(value) {
  const floor = Math.floor(value);
  const diff = value - floor;
  const EPSILON = 1e-9;
  if (diff > 0.5 + EPSILON) return floor + 1;
  if (diff < 0.5 - EPSILON) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Calls `each(invoice)` for every invoice the seed script inserts with these arguments. */
function seedInvoices({ customers, invoices, year, hot, hotShare = 0 }, each) {
  let state = 0x2f6e2b1;
  const rand = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const profileOf = (id) => SEED_CUSTOMERS[(id - 1) % SEED_CUSTOMERS.length];
  const nameOf = (id) =>
    profileOf(id).name + (id > SEED_CUSTOMERS.length ? ` (${Math.ceil(id / SEED_CUSTOMERS.length)})` : '');
  const daysInYear = (Date.UTC(year + 1, 0, 1) - Date.UTC(year, 0, 1)) / 86_400_000;
  for (let i = 0; i < invoices; i++) {
    const customerId = hot !== undefined && rand() < hotShare ? hot : 1 + Math.floor(rand() * customers);
    const profile = profileOf(customerId);
    const day = Math.floor((i / invoices) * daysInYear);
    const issued = new Date(Date.UTC(year, 0, 1 + day)).toISOString().slice(0, 10);
    const due = new Date(Date.UTC(year, 0, 31 + day)).toISOString().slice(0, 10);
    const lineCount = 1 + Math.floor(rand() * 4);
    const lines = [];
    for (let k = 0; k < lineCount; k++) {
      const description = SEED_WORDS[Math.floor(rand() * SEED_WORDS.length)];
      const quantity = 1 + Math.floor(rand() * 8);
      const unitPrice =
        profile.currency === 'JPY' ? 5_000 + Math.floor(rand() * 95_000) : 2_500 + Math.floor(rand() * 60_000);
      lines.push({ description, quantity, unitPrice, taxRateBp: profile.rateBp });
    }
    const subtotal = lines.reduce((a, l) => a + roundHalfEven(l.quantity * l.unitPrice), 0);
    const tax = roundHalfEven((subtotal * profile.rateBp) / 10_000);
    const status = rand() < 0.05 ? 'draft' : rand() < 0.8 ? 'paid' : rand() < 0.9 ? 'issued' : 'void';
    each({
      id: i + 1,
      number: `INV-${year}-${String(i + 1).padStart(5, '0')}`,
      customerId,
      customerName: nameOf(customerId),
      currency: profile.currency,
      status,
      issuedAt: status === 'draft' ? null : issued,
      dueAt: status === 'draft' ? null : due,
      subtotal,
      tax,
      total: subtotal + tax,
      lines,
    });
  }
}

/** Per-line ("PDF") totals. */
function pdfTotals(lines) {
  let subtotal = 0;
  let tax = 0;
  for (const l of lines) {
    const net = roundHalfEven(l.quantity * l.unitPrice);
    subtotal += net;
    tax += roundHalfEven((net * l.taxRateBp) / 10_000);
  }
  return { subtotal, tax, total: subtotal + tax };
}

const ZERO_DECIMALS = new Set(['JPY', 'CLP', 'ISK', 'KRW']);
function decimal(amount, currency) {
  const digits = ZERO_DECIMALS.has(currency) ? 0 : 2;
  const abs = Math.abs(amount);
  const sign = amount < 0 ? '-' : '';
  if (digits === 0) return `${sign}${abs}`;
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

const csvField = (v) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
const csvRow = (inv, totals = inv) =>
  [
    inv.number,
    inv.customerName,
    inv.issuedAt,
    inv.dueAt ?? '',
    inv.currency,
    decimal(totals.subtotal, inv.currency),
    decimal(totals.tax, inv.currency),
    decimal(totals.total, inv.currency),
    inv.status,
  ]
    .map(csvField)
    .join(',');
const CSV_HEADER = 'number,customer,issued_at,due_at,currency,subtotal,tax,total,status';

const DEV_SEED = { customers: 40, invoices: 3600, year: 2024 };
const devInvoices = [];
seedInvoices(DEV_SEED, (inv) => devInvoices.push(inv));
const issuedIn = (inv, from, to) => inv.issuedAt !== null && inv.issuedAt >= from && inv.issuedAt <= to;

const BIG_SEED = { customers: 5000, invoices: 200_000, year: 2024, hot: 4417, hotShare: 0.9 };
const big = { rows: 0, bytes: 0, pdfBytes: 0, pdfChanged: 0 };
seedInvoices(BIG_SEED, (inv) => {
  if (inv.customerId !== BIG_SEED.hot || inv.issuedAt === null) return;
  big.rows++;
  big.bytes += Buffer.byteLength(csvRow(inv)) + 2;
  const pdfRow = csvRow(inv, pdfTotals(inv.lines));
  big.pdfBytes += Buffer.byteLength(pdfRow) + 2;
  if (pdfRow !== csvRow(inv)) big.pdfChanged++;
});
big.bytes += 3 + CSV_HEADER.length + 2;
big.pdfBytes += 3 + CSV_HEADER.length + 2;

// ---------------------------------------------------------------------------------------------------------------------
// Invented history: git log of the project

const AUTHORS = [
  'Priya Raman <priya@ledgerline.dev>',
  'Tomasz Wójcik <tomasz@ledgerline.dev>',
  'Dana Okafor <dana@ledgerline.dev>',
  'Marco Bellini <marco@ledgerline.dev>',
];
const COMMITS = [
  ['chore(deps): bump express from 4.19.1 to 4.19.2', ['package.json', 'package-lock.json']],
  [
    'fix(pdf): escape customer names in the HTML template',
    ['src/pdf/renderInvoice.ts', 'test/pdf.test.ts'],
    'A customer named "<Smith & Co>" broke the PDF layout. Descriptions were escaped, names were not.',
  ],
  [
    'feat(customers): case-insensitive email uniqueness (migration 004)',
    ['migrations/004_customers_email_unique.sql', 'src/routes/customers.ts', 'test/routes.customers.test.ts'],
    'Ops merged the 31 duplicate customers beforehand (ops/scripts/merge-customers.sql).',
  ],
  [
    'test: pin the clock in route tests (INV-201)',
    ['test/helpers/testDb.ts', 'test/routes.invoices.test.ts', 'src/app.ts'],
    'The overdue test failed every month after the fixture dates went stale. createApp takes an\noptional clock now; production passes nothing.',
  ],
  [
    'fix(invoices): 404 instead of 500 when listing payments of a missing invoice',
    ['src/routes/invoices.ts', 'test/routes.invoices.test.ts'],
  ],
  [
    'refactor(money): move formatMoney out of the PDF module',
    ['src/money.ts', 'src/pdf/renderInvoice.ts', 'test/money.test.ts'],
  ],
  [
    'feat(invoices): GET /invoices/by-number/:number for the support tool',
    ['src/routes/invoices.ts', 'src/services/invoiceService.ts'],
  ],
  ['chore: eslint 8.57, typescript-eslint 7', ['package.json', 'package-lock.json', '.eslintrc.cjs']],
  [
    'fix(payments): reject payments on void invoices with 409, not 400',
    ['src/services/invoiceService.ts', 'test/invoiceService.test.ts'],
  ],
  ['docs: README section on local seeding', ['README.md']],
  [
    'feat(seed): --hot-customer to reproduce the Northwind load profile',
    ['scripts/seed.ts'],
    'Northwind has ~90% of the 2024 invoices in prod; the dashboard timeouts only reproduce with that skew.',
  ],
  [
    'perf(invoices): load line items for a whole page in one query (INV-176)',
    ['src/services/invoiceService.ts'],
    'GET /invoices?limit=200 ran 201 queries. Now 2.',
  ],
  [
    'fix(invoices): overdue filter compared timestamps with dates',
    ['src/services/invoiceService.ts', 'test/routes.invoices.test.ts'],
  ],
  [
    'feat(customers): invoice summary per currency for the dashboard',
    ['src/routes/invoices.ts', 'test/routes.invoices.test.ts'],
  ],
  ['chore(ci): run tests on Node 20.11', ['.github/workflows/ci.yml']],
  [
    'feat(tax): per-line tax rounding in the PDF (INV-188)',
    ['src/services/taxService.ts', 'src/pdf/renderInvoice.ts', 'test/taxService.test.ts'],
    'Finance wants what the customer sees to follow the per-line rule. Stored totals are unchanged for\nnow: changing them needs a data migration and sign-off (see INV-188 comments).',
  ],
  ['fix(money): roundHalfEven tolerates float noise around .5', ['src/money.ts', 'test/money.test.ts']],
  [
    'feat(invoices): void with a reason, kept in notes',
    ['src/services/invoiceService.ts', 'src/routes/invoices.ts', 'test/invoiceService.test.ts'],
  ],
  ['feat(payments): list payments of an invoice', ['src/routes/invoices.ts']],
  [
    'refactor: zod schemas for request bodies',
    ['src/models/invoice.ts', 'src/routes/invoices.ts', 'src/routes/customers.ts'],
  ],
  [
    'feat(invoices): sequential numbers per year (INV-YYYY-NNNNN)',
    ['src/services/invoiceService.ts', 'test/invoiceService.test.ts'],
  ],
  ["fix(db): busy_timeout 5s for the cron's concurrent writes", ['src/db.ts']],
  [
    'feat(payments): mark the invoice paid when the balance reaches zero',
    ['src/services/invoiceService.ts', 'test/invoiceService.test.ts'],
  ],
  ['feat: partial payments', ['src/services/invoiceService.ts', 'src/routes/invoices.ts', 'src/models/invoice.ts']],
  ['feat(tax): tax rates table (migration 002)', ['migrations/002_tax_rates.sql']],
  [
    'refactor(invoices): extract InvoiceService from the route handlers',
    ['src/services/invoiceService.ts', 'src/routes/invoices.ts', 'src/app.ts'],
    'First step. The payments list still queries the table from the route; INV-140 tracks the rest.',
  ],
  ['feat(invoices): issue and due dates (30-day terms)', ['src/routes/invoices.ts']],
  ['feat: create and list invoices', ['src/routes/invoices.ts', 'src/db.ts', 'migrations/001_init.sql']],
  ['feat: customers CRUD', ['src/routes/customers.ts']],
  [
    'chore: initial commit (express + better-sqlite3 skeleton)',
    ['package.json', 'tsconfig.json', 'src/server.ts', 'src/app.ts'],
  ],
];

const history = (() => {
  let t = Date.parse('2025-10-09T15:12:40Z');
  return COMMITS.map(([subject, files, body], i) => {
    const commit = {
      hash: sha(rnd.git),
      author: pick(rnd.git, AUTHORS),
      time: t,
      subject,
      body,
      stats: files.map((f) => ({ path: f, added: int(rnd.git, 1, 60), removed: int(rnd.git, 0, 25) })),
    };
    t -= (i < 15 ? int(rnd.git, 1, 6) : int(rnd.git, 6, 24)) * 86_400_000 + int(rnd.git, 0, 30_000_000);
    return commit;
  });
})();

function gitDate(ms) {
  const d = new Date(ms);
  const month = d.getUTCMonth();
  const offset = month >= 3 && month <= 9 ? 2 : 1;
  const local = new Date(ms + offset * 3_600_000);
  const [wd, day, mon, yr] = local
    .toUTCString()
    .split(' ')
    .filter(Boolean)
    .map((s) => s.replace(',', ''));
  return `${wd} ${mon} ${String(Number(day))} ${local.toISOString().slice(11, 19)} ${yr} +0${offset}00`;
}

function gitLogOneline(n) {
  return history
    .slice(0, n)
    .map((c) => `${c.hash.slice(0, 7)} ${c.subject}`)
    .join('\n');
}

function gitLogStat(n, paths) {
  const out = [];
  for (const c of history.filter((c) => c.stats.some((s) => paths.includes(s.path))).slice(0, n)) {
    const stats = c.stats.filter((s) => paths.includes(s.path));
    out.push(`commit ${c.hash}`, `Author: ${c.author}`, `Date:   ${gitDate(c.time)}`, '', `    ${c.subject}`);
    if (c.body) out.push('', ...c.body.split('\n').map((l) => `    ${l}`));
    out.push('');
    const stat = gitStat(stats).split('\n');
    const summary = stat
      .pop()
      .replace(/ 1 files/, ' 1 file')
      .replace(/, 0 deletions\(-\)/, '')
      .replace(/ 0 insertions\(\+\), /, ' ');
    out.push(...stat, summary.replace(/\b1 insertions/, '1 insertion').replace(/\b1 deletions/, '1 deletion'), '');
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------------
// Searching the work tree

const allFiles = (...dirs) => [...fs.keys()].filter((p) => dirs.some((d) => p.startsWith(d))).sort();

function grep(pattern, paths) {
  const out = [];
  for (const p of paths) {
    splitLines(file(p)).forEach((l, i) => {
      if (pattern.test(l)) out.push(`${p}:${i + 1}:${l}`);
    });
  }
  return out.join('\n');
}

/** `git diff` (or `--cached`) of the work tree against the start of the session. */
function workTreeDiff(paths) {
  const changed = [];
  const keys = [...(paths ?? new Set([...original.keys(), ...fs.keys()]))].sort();
  for (const p of keys) {
    const before = original.get(p);
    const after = fs.get(p);
    if (before === after || after === undefined) continue;
    changed.push({ path: p, ...gitFileDiff(p, before, after) });
  }
  return changed;
}

/** `git status --short` (unstaged): modified tracked files, then untracked files or wholly new directories. */
function gitStatusShort() {
  const modified = workTreeDiff([...original.keys()]).map((d) => ` M ${d.path}`);
  const untracked = new Set();
  for (const p of [...fs.keys()].filter((k) => !original.has(k)).sort()) {
    // git collapses a directory that holds no tracked file into "dir/".
    const parts = p.split('/');
    let shown = p;
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/') + '/';
      if (![...original.keys()].some((k) => k.startsWith(dir))) {
        shown = dir;
        break;
      }
    }
    untracked.add(`?? ${shown}`);
  }
  return [...modified, ...untracked].join('\n');
}

const diffText = (paths) =>
  workTreeDiff(paths)
    .map((d) => d.text)
    .join('\n');
const diffStat = (paths) => gitStat(workTreeDiff(paths));

// =====================================================================================================================
// The story
// =====================================================================================================================

const fail = (file, title, summary, body) => ({ file, title, summary, body });

const PDF_NBSP_FAILURE = () =>
  fail(
    'test/pdf.test.ts',
    'renderInvoice > formats EUR amounts for de-DE customers',
    "expected 'Gesamt: 1.487,50\u00a0€' to be 'Gesamt: 1.487,50 €' // Object.is equality",
    [
      "AssertionError: expected 'Gesamt: 1.487,50\u00a0€' to be 'Gesamt: 1.487,50 €' // Object.is equality",
      '',
      '- Expected',
      '+ Received',
      '',
      '- Gesamt: 1.487,50 €',
      '+ Gesamt: 1.487,50\u00a0€',
      '',
      codeFrame('test/pdf.test.ts', "expect(total).toBe('Gesamt: 1.487,50 €');", undefined, 'toBe'),
    ].join('\n'),
  );

const LS_LA = () => `total 236
drwxr-xr-x  10 dev dev   4096 Oct 14 10:38 .
drwxr-xr-x  14 dev dev   4096 Oct  2 09:12 ..
-rw-r--r--   1 dev dev    ${String(Buffer.byteLength(file('.eslintrc.cjs'))).padStart(3)} Mar 18  2025 .eslintrc.cjs
drwxr-xr-x   8 dev dev   4096 Oct 14 10:40 .git
drwxr-xr-x   3 dev dev   4096 Jan 22  2025 .github
-rw-r--r--   1 dev dev     58 Jan 22  2025 .gitignore
-rw-r--r--   1 dev dev   2231 Sep 30 16:20 README.md
drwxr-xr-x   2 dev dev   4096 Oct 13 17:55 data
drwxr-xr-x   2 dev dev   4096 Sep 11 11:03 migrations
drwxr-xr-x 318 dev dev  12288 Oct  6 09:47 node_modules
-rw-r--r--   1 dev dev 148213 Oct  6 09:47 package-lock.json
-rw-r--r--   1 dev dev   ${String(Buffer.byteLength(file('package.json'))).padStart(4)} Oct  6 09:47 package.json
drwxr-xr-x   2 dev dev   4096 Sep 19 15:30 scripts
drwxr-xr-x   7 dev dev   4096 Oct  1 10:02 src
drwxr-xr-x   3 dev dev   4096 Sep 25 14:02 test
-rw-r--r--   1 dev dev     96 Jan 22  2025 tsconfig.build.json
-rw-r--r--   1 dev dev    ${String(Buffer.byteLength(file('tsconfig.json'))).padStart(3)} Jan 22  2025 tsconfig.json
-rw-r--r--   1 dev dev    ${String(Buffer.byteLength(file('vitest.config.ts'))).padStart(3)} Jan 22  2025 vitest.config.ts`;

function story() {
  header();

  // ----------------------------------------------------------------------------------------------- 1. Look around
  user(
    `I want to refactor invoice-service (this repo) before we start on the multi-region work. Right now the SQL is smeared across src/services/invoiceService.ts and src/routes/invoices.ts — the payments and customer-summary routes even call db.prepare directly.

Plan:
1. Introduce a repository layer (src/repositories/) so that InvoiceService and the routes never touch better-sqlite3 directly.
2. Then add a Postgres implementation of that repository (pg), so we can move to the shared Postgres cluster in Q1.

Constraints:
- Never touch migrations/. Those files are applied by the deploy pipeline and prod has already run them. If you think the schema needs a change, tell me and I'll write the migration myself.
- Keep the public API: everything exported from src/index.ts keeps its signature (billing-worker and dunning-cron import it), and the HTTP routes keep their paths and response shapes.
- No new runtime dependencies except pg.
- Node 20, TypeScript strict, tests with vitest (npm test). Keep the diff reviewable, ideally under ~800 changed lines.

Start by looking around and tell me your plan before you change anything big.`,
    0,
  );

  turn({
    thinking: `The user wants two things: (1) a repository layer under src/repositories/ so InvoiceService and the invoice routes stop calling better-sqlite3 directly, (2) a Postgres implementation of it. Constraints to keep in mind the whole way:
- migrations/ is off limits (read-only for me).
- Public API = exports of src/index.ts + HTTP paths and response shapes. Unchanged.
- No new runtime deps except pg.
- Diff under ~800 lines.
They want a plan first. Let me get the lay of the land: layout, git state, recent history.`,
    calls: [
      bash(
        'ls -la && git status -sb && git log --oneline -n 15',
        () => `${LS_LA()}\n## main...origin/main\n${gitLogOneline(15)}`,
        { ms: 140 },
      ),
    ],
  });

  turn({
    calls: [
      bash(
        "find src test scripts -name '*.ts' | xargs wc -l | sort -n",
        () => wcLines(allFiles('src/', 'test/', 'scripts/').filter((p) => p.endsWith('.ts'))),
        { ms: 35 },
      ),
    ],
  });

  const tsLines = allFiles('src/', 'test/', 'scripts/')
    .filter((p) => p.endsWith('.ts'))
    .reduce((s, p) => s + splitLines(file(p)).length, 0);
  turn({
    thinking: `About ${(Math.round(tsLines / 100) * 100).toLocaleString('en-US')} lines of TypeScript in total; invoiceService.ts and routes/invoices.ts are the two big ones besides the tests. Start with the package manifest, the compiler settings and the public surface (src/index.ts).`,
    calls: [
      read('package.json'),
      read('tsconfig.json'),
      read('src/index.ts'),
      bash('npm ls --depth=0', NPM_LS, { ms: 700 }),
    ],
  });

  turn({
    thinking: `Lint and test configuration too, so that new code follows the same rules from the start.`,
    calls: [read('.eslintrc.cjs'), read('vitest.config.ts')],
  });

  turn({
    thinking: `Public API from src/index.ts: createApp(db, options), openDatabase, runMigrations, Db type, InvoiceService (+ ListFilter, Payment), the tax helpers, money helpers and model types. So InvoiceService's constructor and method signatures are public: \`new InvoiceService(db, clock?)\` must keep working.

tsconfig has noUnusedLocals and noUncheckedIndexedAccess, good to know for later. Now the two files with the SQL.`,
    calls: [read('src/services/invoiceService.ts'), read('src/routes/invoices.ts')],
  });

  turn({
    thinking: `The service has ~15 prepare() calls spread over every method; createInvoice and recordPayment use db.transaction. The router takes (db, service) and two handlers query the tables directly: GET /invoices/:id/payments (returns raw snake_case rows) and GET /customers/:id/invoices/summary. Both are marked TODO(INV-140).

Let me list every direct database use across src/ to be sure I know the full surface.`,
    calls: [
      bash(
        `grep -rn "db\\.\\(prepare\\|exec\\|transaction\\|pragma\\)" src --include=*.ts`,
        () => grep(/db\.(prepare|exec|transaction|pragma)/, allFiles('src/')),
        { ms: 30 },
      ),
    ],
  });

  turn({
    thinking: `Direct DB access outside the service: routes/invoices.ts (payments list, summary), routes/customers.ts and routes/health.ts. The user scoped this to invoices; let me check the other two only touch their own tables.`,
    calls: [read('src/routes/customers.ts'), read('src/routes/health.ts')],
  });

  turn({
    thinking: `customers.ts is self-contained customer CRUD with its own SQL; health.ts only counts applied migrations. Neither touches invoices, payments or line items, so they stay as they are (I'll mention it). Now the wiring and the models.`,
    calls: [read('src/app.ts'), read('src/db.ts'), read('src/models/invoice.ts')],
  });

  turn({
    calls: [read('src/services/taxService.ts'), read('src/money.ts'), read('src/errors.ts')],
  });

  turn({
    thinking: `Interesting: there are two tax rules. taxService.computeTotals rounds per line (that's what the PDF prints, per its doc comment), while createInvoice stores totals with the "v1 rule" — tax per rate on the summed net amounts (INV-188). So stored totals and printed totals can differ by rounding. Not my task right now, but worth remembering.

Let me look at the schema. I'm only reading migrations/, never editing.`,
    calls: [
      bash(
        'ls -l migrations/ && cat migrations/001_init.sql',
        () =>
          `total 16\n-rw-r--r-- 1 dev dev ${Buffer.byteLength(file('migrations/001_init.sql'))} Jan 22  2025 001_init.sql\n-rw-r--r-- 1 dev dev  ${Buffer.byteLength(file('migrations/002_tax_rates.sql'))} Apr  3  2025 002_tax_rates.sql\n-rw-r--r-- 1 dev dev  ${Buffer.byteLength(file('migrations/003_invoice_status_index.sql'))} Jun 12  2025 003_invoice_status_index.sql\n-rw-r--r-- 1 dev dev  ${Buffer.byteLength(file('migrations/004_customers_email_unique.sql'))} Sep 11 11:03 004_customers_email_unique.sql\n${file('migrations/001_init.sql')}`,
        { ms: 25 },
      ),
    ],
  });

  turn({
    thinking: `The schema is SQLite-flavoured: INTEGER PRIMARY KEY AUTOINCREMENT, strftime() defaults, dates as TEXT. That matters for Postgres later: these files cannot be run on Postgres as they are, and I must not touch them. The other three migrations, to know every index:`,
    calls: [
      bash(
        'tail -n +1 migrations/002_tax_rates.sql migrations/003_invoice_status_index.sql migrations/004_customers_email_unique.sql',
        () =>
          ['002_tax_rates.sql', '003_invoice_status_index.sql', '004_customers_email_unique.sql']
            .map((f) => `==> migrations/${f} <==\n${file(`migrations/${f}`)}`)
            .join('\n'),
        { ms: 20 },
      ),
    ],
  });

  turn({
    thinking: `Indexes: invoices(customer_id), invoices(status, due_at), line_items(invoice_id), payments(invoice_id), customers(lower(email)). Nothing on issued_at.

Now the tests, to see how the service and app are constructed.`,
    calls: [read('test/helpers/testDb.ts'), read('test/invoiceService.test.ts'), read('test/taxService.test.ts')],
  });

  turn({
    calls: [read('test/routes.invoices.test.ts'), read('test/routes.customers.test.ts'), read('test/pdf.test.ts')],
  });

  turn({
    thinking: `The route tests pin the clock (FIXED_NOW = 2025-03-01) through createApp(db, { clock }). The payments test asserts the exact snake_case response shape — good, that protects the public HTTP shape.

Baseline test run before I change anything.`,
    calls: [bash('npm test', () => vitest({ failures: [PDF_NBSP_FAILURE()], clockAt: now() }), { exit: 1, ms: 3_900 })],
  });

  turn({
    thinking: `One failure, and it's not in code I'm touching: the de-DE total. The two strings look identical, so it's almost certainly a different space character (ICU uses a no-break space before the € sign). Let me confirm rather than guess.`,
    calls: [
      bash(
        `node -p "encodeURIComponent(new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(1487.5))" && node -p "process.versions.icu + ' ' + process.version"`,
        '1.487%2C50%C2%A0%E2%82%AC\n74.1 v20.18.0',
        { ms: 160 },
      ),
    ],
  });

  turn({
    thinking: `%C2%A0 = U+00A0 NO-BREAK SPACE before €. So the expectation in test/pdf.test.ts uses a plain space and fails on this ICU. Pre-existing, unrelated to the refactor; I'll report it and not touch it unless asked.

History of the two files I'm going to restructure, to understand why the routes query the DB themselves.`,
    calls: [
      bash(
        'git log --stat -n 20 -- src/services/invoiceService.ts src/routes/invoices.ts',
        () => gitLogStat(20, ['src/services/invoiceService.ts', 'src/routes/invoices.ts']),
        { ms: 60 },
      ),
    ],
  });

  turn({
    thinking: `"First step. The payments list still queries the table from the route; INV-140 tracks the rest." So the direct queries are known debt. The user said billing-worker and dunning-cron import this package. Let me check how they use it, since that defines what "public API" really means in practice.`,
    calls: [
      bash(
        `grep -rn "invoice-service" ~/src/*/package.json; grep -rnE "invoice-service'|InvoiceService|service\\.[a-zA-Z]+\\(" ~/src/billing-worker/src ~/src/dunning-cron/src`,
        () =>
          [
            '/home/dev/src/billing-worker/package.json:17:    "invoice-service": "file:../invoice-service",',
            '/home/dev/src/dunning-cron/package.json:12:    "invoice-service": "file:../invoice-service",',
            `${CWD}/package.json:2:  "name": "invoice-service",`,
            ...Object.entries(CONSUMERS).flatMap(([path, text]) =>
              splitLines(text).flatMap((l, i) =>
                /invoice-service'|InvoiceService|service\.[a-zA-Z]+\(/.test(l) ? [`${path}:${i + 1}:${l}`] : [],
              ),
            ),
          ].join('\n'),
        { ms: 90 },
      ),
    ],
  });

  turn({
    thinking: `Both consumers construct \`new InvoiceService(db)\` themselves and call methods synchronously (balanceDue, recordPayment, listInvoices in a for..of). So:
- the constructor must still accept a better-sqlite3 Database;
- methods must stay synchronous.

The second point is a problem for step 2: node-postgres is async-only. A Postgres repository can't satisfy a synchronous interface, so InvoiceService would have to become async, which breaks the public API for both consumers. I should flag that now, in the plan, rather than discover it halfway.

Plan:
1. src/repositories/types.ts — InvoiceRepository interface (rows in table shape), plus small input types.
2. src/repositories/sqliteInvoiceRepository.ts — all invoice/line/payment SQL moves here.
3. InvoiceService takes \`Db | InvoiceRepository\`; a Db is wrapped in SqliteInvoiceRepository, so \`new InvoiceService(db)\` keeps working. Methods stay synchronous.
4. Routes get only the service; the two TODO(INV-140) handlers go through new service methods listPayments and customerSummary, keeping the snake_case payments response.
5. app.ts wiring.
Then Postgres — with the sync/async question answered first.`,
    text: `Here's what I found and what I propose.

**Current state**
- SQL lives in \`InvoiceService\` (about 15 \`prepare()\` calls, two \`db.transaction\`s) and in two route handlers (\`GET /invoices/:id/payments\`, \`GET /customers/:id/invoices/summary\`, both \`TODO(INV-140)\`). \`routes/customers.ts\` and \`routes/health.ts\` also use the db directly. They're outside the invoice scope, so I'd leave them alone.
- \`billing-worker\` and \`dunning-cron\` both do \`new InvoiceService(db)\` and call its methods **synchronously** (\`balanceDue\`, \`recordPayment\`, \`listInvoices\` in a \`for…of\`).
- Baseline: \`npm test\` has 1 failure, \`test/pdf.test.ts > formats EUR amounts for de-DE customers\`. It's pre-existing and unrelated: ICU puts a NO-BREAK SPACE (U+00A0) before "€" and the test expects a plain space.

**Step 1: repository layer (no behaviour change)**
1. \`src/repositories/types.ts\`: an \`InvoiceRepository\` interface (invoices, line items, payments, per-currency summary, \`transaction()\`).
2. \`src/repositories/sqliteInvoiceRepository.ts\`: all invoice SQL moves here.
3. \`InvoiceService\` constructor accepts \`Db | InvoiceRepository\`. A \`Db\` gets wrapped, so \`new InvoiceService(db)\` keeps working for both consumers. All methods stay synchronous.
4. Routes only get the service. The two INV-140 handlers call new \`listPayments()\` / \`customerSummary()\` service methods, and the payments response keeps its snake_case shape.
5. \`app.ts\` wiring. No changes to \`src/index.ts\` exports, routes or \`migrations/\`.

**Step 2: Postgres, one thing to decide first**
\`pg\` is async-only. A Postgres repository can't implement a synchronous interface, so the service would have to return Promises, and that breaks the public API for both consumers. Also, \`migrations/\` is SQLite-specific (AUTOINCREMENT, \`strftime\` defaults), so Postgres would need a separate schema, and I won't touch \`migrations/\`. I'll do step 1 now and prototype the pg side, so we can look at the async question with real code.

Estimated diff for step 1: roughly 450–550 lines, including tests. OK to go ahead?`,
  });

  // ------------------------------------------------------------------------------------------------- 2. Repository
  user(
    `Plan looks right. Go ahead with 1, then start on 2 and we'll see how bad the async part gets. The pdf.test.ts failure is known (ICU changed the space before € in Node 20.11; tracked in INV-212), ignore it and don't touch that test.`,
    210_000,
  );

  turn({
    thinking: `Start with the interface. Rows in table shape (InvoiceRow/LineItemRow already exist in models), mapping stays in models/ (rowToInvoice). For updates I'll use one updateStatus(id, change) instead of one method per transition — issue/void/paid all set status + updated_at plus optional fields.`,
    calls: [write('src/repositories/types.ts', REPO_TYPES)],
  });

  turn({
    thinking: `Now the SQLite implementation. Mostly moving SQL out of the service. transaction() wraps better-sqlite3's db.transaction(fn)() — nested calls become savepoints, which is what insertInvoice inside createInvoice's transaction needs.`,
    calls: [write('src/repositories/sqliteInvoiceRepository.ts', SQLITE_REPO_V1)],
  });

  turn({
    thinking: `The service: nearly every method changes, so rewriting the file is cleaner than a dozen edits (and easier to review as a whole). Keep every public signature identical: constructor(db, clock?) still works via the Db | InvoiceRepository union; createInvoice, getInvoice, getByNumber, listInvoices, issueInvoice, voidInvoice, recordPayment, balanceDue unchanged. New: listPayments, customerSummary (for the routes). Keep the legacy totals rule exactly as it is (stored totals depend on it).`,
    calls: [write('src/services/invoiceService.ts', SERVICE_V1)],
  });

  turn({
    thinking: `Review the rewrite as a diff: every public signature and the legacy totals rule must be unchanged.`,
    calls: [
      bash(
        'git diff --stat src/services/invoiceService.ts && git diff src/services/invoiceService.ts | head -150',
        () => {
          const d = workTreeDiff(['src/services/invoiceService.ts']);
          return `${gitStat(d).replace(/ 1 files/, ' 1 file')}\n${d[0].text.split('\n').slice(0, 150).join('\n')}`;
        },
        { ms: 40 },
      ),
    ],
  });

  turn({
    thinking: `Signatures are the same; the SQL is gone from the service and the legacy rule moved into legacyTotals() unchanged. Before touching the routes, run the service tests on their own: they exercise every method through the new repository.`,
    calls: [
      bash(
        'npm test -- test/invoiceService.test.ts',
        () => vitest({ clockAt: now(), only: 'test/invoiceService.test.ts', failures: positionFailures() }),
        { exit: 1, ms: 2_400 },
      ),
    ],
  });

  turn({
    thinking: `NOT NULL constraint failed: line_items.position — the old code numbered lines with forEach((l, i) => … i + 1); in the rewrite I pass input.lines straight to insertInvoice, which reads l.position (undefined → NULL). The two passing tests are exactly the ones that never create an invoice. Number the lines in the service, where the order of the input is known.`,
    calls: [
      edit(
        'src/services/invoiceService.ts',
        `        input.lines,\n      ),`,
        `        input.lines.map((l, i) => ({ ...l, position: i + 1 })),\n      ),`,
      ),
    ],
  });

  turn({
    calls: [
      bash(
        'npm test -- test/invoiceService.test.ts',
        () => vitest({ clockAt: now(), only: 'test/invoiceService.test.ts' }),
        { ms: 2_300 },
      ),
    ],
  });

  turn({
    thinking: `Routes next: the router takes only the service, and the two direct-SQL handlers call the service.`,
    calls: [
      edit(
        'src/routes/invoices.ts',
        `import { NotFoundError, ValidationError } from '../errors.js';`,
        `import { ValidationError } from '../errors.js';`,
      ),
      edit(
        'src/routes/invoices.ts',
        `export function invoicesRouter(db: Db, service: InvoiceService): Router {`,
        `export function invoicesRouter(service: InvoiceService): Router {`,
      ),
    ],
  });

  turn({
    calls: [
      edit(
        'src/routes/invoices.ts',
        `  // TODO(INV-140): move to InvoiceService.
  router.get(
    '/invoices/:id/payments',
    route((req, res) => {
        const id = idParam(req);
        const exists = db.prepare('SELECT 1 FROM invoices WHERE id = ?').get(id);`,
        `  router.get(
    '/invoices/:id/payments',
    route((req, res) => {
      res.json(service.listPayments(idParam(req)));`,
        { expectFailure: true },
      ),
    ],
  });

  turn({
    thinking: `Indentation mismatch in my oldText (I had 8 spaces inside the handler). Let me look at the exact text.`,
    calls: [
      read('src/routes/invoices.ts', {
        offset: locate(
          file('src/routes/invoices.ts'),
          "  // TODO(INV-140): move to InvoiceService.\n  router.get(\n    '/invoices/:id/payments'",
        ).line,
        limit: 40,
      }),
    ],
  });

  turn({
    calls: [
      edit(
        'src/routes/invoices.ts',
        `  // TODO(INV-140): move to InvoiceService.
  router.get(
    '/invoices/:id/payments',
    route((req, res) => {
      const id = idParam(req);
      const exists = db.prepare('SELECT 1 FROM invoices WHERE id = ?').get(id);
      if (!exists) throw new NotFoundError(\`invoice \${id} not found\`);
      const rows = db
        .prepare(
          'SELECT id, amount, method, received_at, reference FROM payments WHERE invoice_id = ? ORDER BY received_at, id',
        )
        .all(id);
      res.json(rows);
    }),
  );`,
        `  router.get(
    '/invoices/:id/payments',
    route((req, res) => {
      res.json(service.listPayments(idParam(req)));
    }),
  );`,
      ),
      edit(
        'src/routes/invoices.ts',
        `  // TODO(INV-140): move to InvoiceService.
  router.get(
    '/customers/:id/invoices/summary',
    route((req, res) => {
      const customerId = idParam(req, 'customer');
      const rows = db
        .prepare(
          \`SELECT currency,
                  COUNT(*) AS count,
                  SUM(CASE WHEN status = 'paid' THEN total ELSE 0 END) AS paid,
                  SUM(CASE WHEN status = 'issued' THEN total ELSE 0 END) AS outstanding
             FROM invoices
            WHERE customer_id = ? AND status != 'void'
            GROUP BY currency
            ORDER BY currency\`,
        )
        .all(customerId);
      res.json({ customerId, byCurrency: rows });
    }),
  );`,
        `  router.get(
    '/customers/:id/invoices/summary',
    route((req, res) => {
      const customerId = idParam(req, 'customer');
      res.json({ customerId, byCurrency: service.customerSummary(customerId) });
    }),
  );`,
      ),
    ],
  });

  turn({
    thinking: `Typecheck before touching app.ts, to see everything that's still off.`,
    calls: [
      bash(
        'npx tsc --noEmit',
        () =>
          tsc([
            {
              path: 'src/app.ts',
              snippet: 'app.use(invoicesRouter(db, invoices));',
              pointAt: 'invoices));',
              code: 2554,
              message: 'Expected 1 arguments, but got 2.',
            },
            {
              path: 'src/repositories/sqliteInvoiceRepository.ts',
              snippet: 'return this.db.prepare(sql).all(...params, query.limit, query.offset);',
              code: 2322,
              message:
                "Type 'unknown[]' is not assignable to type 'InvoiceRow[]'.\n  Type 'unknown' is not assignable to type 'InvoiceRow'.",
            },
            {
              path: 'src/routes/invoices.ts',
              snippet: "import type { Db } from '../db.js';",
              code: 6133,
              message: "'Db' is declared but its value is never read.",
            },
          ]),
        { exit: 2, ms: 4_300 },
      ),
    ],
  });

  turn({
    thinking: `Three errors, all expected or trivial:
1. app.ts still passes db to the router.
2. .all() returns unknown[] with the better-sqlite3 typings; cast like the other methods.
3. Unused Db import in routes.
(Typechecking first would also have caught the missing positions: NewLineItem requires them.)`,
    calls: [
      edit('src/app.ts', `  app.use(invoicesRouter(db, invoices));`, `  app.use(invoicesRouter(invoices));`),
      edit('src/routes/invoices.ts', `import type { Db } from '../db.js';\n`, ``),
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `return this.db.prepare(sql).all(...params, query.limit, query.offset);`,
        `return this.db.prepare(sql).all(...params, query.limit, query.offset) as InvoiceRow[];`,
      ),
    ],
  });

  turn({
    calls: [bash('npx tsc --noEmit', '', { ms: 4_100 })],
  });

  turn({
    calls: [
      bash(
        'npm test',
        () =>
          vitest({
            clockAt: now(),
            failures: [
              PDF_NBSP_FAILURE(),
              fail(
                'test/routes.invoices.test.ts',
                'invoice routes > GET /invoices > filters overdue invoices relative to the injected clock',
                "expected [ 'INV-2025-00003', …(1) ] to deeply equal [ 'INV-2025-00002' ]",
                [
                  "AssertionError: expected [ 'INV-2025-00003', …(1) ] to deeply equal [ 'INV-2025-00002' ]",
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '  Array [',
                  '+   "INV-2025-00003",',
                  '    "INV-2025-00002",',
                  '  ]',
                  '',
                  codeFrame(
                    'test/routes.invoices.test.ts',
                    "expect(numbers(res.body)).toEqual(['INV-2025-00002']);",
                    'filters overdue invoices',
                    'toEqual',
                  ),
                ].join('\n'),
              ),
              fail(
                'test/routes.invoices.test.ts',
                'invoice routes > payments > records a partial payment and lists it',
                'expected [ { id: 1, invoiceId: 1, …(4) } ] to deeply equal [ { id: 1, amount: 50000, …(3) } ]',
                [
                  'AssertionError: expected [ { id: 1, invoiceId: 1, …(4) } ] to deeply equal [ { id: 1, amount: 50000, …(3) } ]',
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '  Array [',
                  '    Object {',
                  '      "amount": 50000,',
                  '      "id": 1,',
                  '+     "invoiceId": 1,',
                  '      "method": "card",',
                  '-     "received_at": "2025-03-02T10:00:00.000Z",',
                  '+     "receivedAt": "2025-03-02T10:00:00.000Z",',
                  '      "reference": "ch_3PqK",',
                  '    },',
                  '  ]',
                  '',
                  codeFrame(
                    'test/routes.invoices.test.ts',
                    'expect(res.body).toEqual([',
                    'records a partial payment',
                    'toEqual',
                  ),
                ].join('\n'),
              ),
            ],
          }),
        { exit: 1, ms: 4_400 },
      ),
    ],
  });

  turn({
    thinking: `Two real regressions, both mine:

1. Overdue: the repository's list() compares due_at with date('now') — the real date — instead of the service's clock. I added \`today\` to ListQuery precisely for this and then didn't use it. With the real date (October 2025) both issued invoices are overdue.

2. Payments list: the old handler returned raw rows: { id, amount, method, received_at, reference }. Now it returns the Payment type (camelCase + invoiceId). That's a change in the HTTP response shape — exactly what the user said must not change, and the consumers read received_at. The route has to map back to the original shape. The service method can keep returning Payment (a public type).`,
    calls: [
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `      where.push("status = 'issued' AND due_at < date('now')");`,
        `      where.push("status = 'issued' AND due_at < ?");\n      params.push(query.today);`,
      ),
      edit(
        'src/routes/invoices.ts',
        `  router.get(
    '/invoices/:id/payments',
    route((req, res) => {
      res.json(service.listPayments(idParam(req)));
    }),
  );`,
        `  // Keeps the response's original (snake_case, no invoice id) shape: billing-worker and the dashboard read it.
  router.get(
    '/invoices/:id/payments',
    route((req, res) => {
      res.json(
        service.listPayments(idParam(req)).map((p) => ({
          id: p.id,
          amount: p.amount,
          method: p.method,
          received_at: p.receivedAt,
          reference: p.reference,
        })),
      );
    }),
  );`,
      ),
    ],
  });

  turn({
    calls: [bash('npm test', () => vitest({ clockAt: now(), failures: [PDF_NBSP_FAILURE()] }), { exit: 1, ms: 4_200 })],
  });

  turn({
    thinking: `Only the known pdf failure left. Double-check that no invoice code outside the repository talks to the database any more.`,
    calls: [
      bash(
        `grep -rn "db\\.\\(prepare\\|exec\\|transaction\\)\\|this\\.db" src --include=*.ts | grep -v "^src/repositories/"`,
        () =>
          grep(
            /db\.(prepare|exec|transaction)|this\.db/,
            allFiles('src/').filter((p) => !p.startsWith('src/repositories/')),
          ),
        { ms: 30 },
      ),
    ],
  });

  turn({
    thinking: `Remaining: db.ts (migrations), customers.ts and health.ts — out of scope as agreed. Let me look at the diff of the tracked files so far to keep an eye on size.`,
    calls: [
      bash('git diff --stat && git status --short', () => `${diffStat([...original.keys()])}\n${gitStatusShort()}`, {
        ms: 45,
      }),
    ],
  });

  turn({
    calls: [
      bash('git diff src/routes/invoices.ts src/app.ts', () => diffText(['src/app.ts', 'src/routes/invoices.ts']), {
        ms: 40,
      }),
    ],
  });

  turn({
    thinking: `The routes diff is what I intended. The overdue bug got past me because the repository has no tests of its own; the route test only caught it by luck of its fixture dates. Add a small test file for the repository: transaction rollback, overdue uses the given day, updateStatus leaves notes alone unless given, numbering prefix lookup.`,
    calls: [write('test/sqliteInvoiceRepository.test.ts', REPO_TEST)],
  });

  turn({
    calls: [
      bash(
        'npm test -- test/sqliteInvoiceRepository.test.ts && npm run lint',
        () => `${vitest({ clockAt: now(), only: 'test/sqliteInvoiceRepository.test.ts' }).text}${eslint([])}`,
        { ms: 7_900 },
      ),
    ],
  });

  user(
    `Quick one while you're in there: dunning-cron opens the database read-only (openDatabase({ readonly: true })). Make sure nothing in the new code writes or runs pragmas when the service is constructed.`,
    40_000,
  );

  turn({
    thinking: `Check two things: no exec/pragma/DDL anywhere in the new code, and an actual read-only run: construct the service over a read-only handle and call the read paths dunning-cron uses (listInvoices overdue, balanceDue via getInvoice).`,
    calls: [
      bash(
        `grep -rn "exec(\\|pragma\\|CREATE \\|ALTER \\|INSERT \\|UPDATE " src/repositories src/services; echo "---"; rm -f /tmp/ro-check.db && npx tsx -e "
import { openDatabase, InvoiceService } from './src/index.ts';
openDatabase({ filename: '/tmp/ro-check.db', migrationsDir: 'migrations' }).close();
const service = new InvoiceService(openDatabase({ filename: '/tmp/ro-check.db', readonly: true }));
console.log('overdue:', service.listInvoices({ status: 'overdue' }).length, 'summary:', JSON.stringify(service.customerSummary(1)));
try { service.createInvoice({ customerId: 1, currency: 'USD', lines: [{ description: 'x', quantity: 1, unitPrice: 1 }] }); } catch (e) { console.log('write refused:', (e as Error).message); }
"`,
        () =>
          `${grep(/exec\(|pragma|CREATE |ALTER |INSERT |UPDATE /, allFiles('src/repositories/', 'src/services/'))}\n---\n${migrationLogs(session.clock)}\noverdue: 0 summary: []\nwrite refused: customer 1 does not exist`,
        { ms: 1_900 },
      ),
    ],
  });

  turn({
    thinking: `The only writes are the INSERT/UPDATE statements inside repository methods that are called by write operations; nothing runs on construction. Statements are prepared per call, lazily. The read-only run works. The "write refused" line is only the validation (no customers in the empty db), not the read-only guard, so it proves nothing about writes; I won't cite it. On a read-only handle, better-sqlite3 would throw SQLITE_READONLY on an actual INSERT, which is the behaviour dunning-cron already gets today.`,
    text: `Checked. Nothing in the new code writes or runs pragmas when the service is constructed:
- \`new InvoiceService(db)\` only wraps the handle in \`SqliteInvoiceRepository\`. No statement is prepared until a method is called.
- The only \`INSERT\`/\`UPDATE\` statements are inside \`insertInvoice\`, \`updateStatus\` and \`insertPayment\`, which only the write methods reach. There's no \`exec\`, \`pragma\` or DDL in \`src/repositories/\` or \`src/services/\`. \`openDatabase\` itself is unchanged and already skips migrations for \`readonly\`.
- I also did a real run: \`listInvoices({ status: 'overdue' })\` and \`customerSummary\` work on a read-only handle.

Continuing with the Postgres sketch now.`,
    calls: [
      bash(
        'npm install pg@^8.13.0 && npm install -D @types/pg@^8.11.10',
        `
added 14 packages, and audited 426 packages in 3s

73 packages are looking for funding
  run \`npm fund\` for details

found 0 vulnerabilities

added 3 packages, and audited 429 packages in 1s

73 packages are looking for funding
  run \`npm fund\` for details

found 0 vulnerabilities`,
        { ms: 6_800 },
      ),
    ],
  });

  // -------------------------------------------------------------------------------------------------- 3. Postgres

  turn({
    thinking: `Write the Postgres repository for the read paths and insertInvoice first; that's enough to see the typing problem. node-postgres returns int8 (BIGINT) as strings by default, so set a type parser; amounts are far below 2^53 minor units.`,
    calls: [write('src/repositories/pgInvoiceRepository.ts', PG_REPO)],
  });

  turn({
    calls: [
      bash(
        'npx tsc --noEmit',
        () => {
          const P = 'src/repositories/pgInvoiceRepository.ts';
          const mismatch = (name, sig, sync) => ({
            path: P,
            snippet: `async ${name}(`,
            pointAt: name,
            code: 2416,
            message: `Property '${name}' in type 'PgInvoiceRepository' is not assignable to the same property in base type 'InvoiceRepository'.\n  Type '${sig}' is not assignable to type '${sync}'.\n    Type 'Promise<${sync.split('=> ')[1]}>' is not assignable to type '${sync.split('=> ')[1]}'.`,
          });
          return tsc([
            {
              path: P,
              snippet: 'export class PgInvoiceRepository implements InvoiceRepository {',
              pointAt: 'PgInvoiceRepository',
              code: 2420,
              message:
                "Class 'PgInvoiceRepository' incorrectly implements interface 'InvoiceRepository'.\n  Type 'PgInvoiceRepository' is missing the following properties from type 'InvoiceRepository': updateStatus, lastNumberWithPrefix, insertPayment, findPayment, and 3 more.",
            },
            {
              path: P,
              snippet: 'async transaction<T>(',
              pointAt: 'transaction',
              code: 2416,
              message:
                "Property 'transaction' in type 'PgInvoiceRepository' is not assignable to the same property in base type 'InvoiceRepository'.\n  Type '<T>(fn: () => Promise<T>) => Promise<T>' is not assignable to type '<T>(fn: () => T) => T'.\n    Type 'Promise<unknown>' is not assignable to type 'T'.\n      'T' could be instantiated with an arbitrary type which could be unrelated to 'Promise<unknown>'.",
            },
            mismatch('customerExists', '(id: number) => Promise<boolean>', '(id: number) => boolean'),
            mismatch(
              'insertInvoice',
              '(invoice: NewInvoice, lines: NewLineItem[]) => Promise<number>',
              '(invoice: NewInvoice, lines: NewLineItem[]) => number',
            ),
            mismatch(
              'findById',
              '(id: number) => Promise<InvoiceRow | undefined>',
              '(id: number) => InvoiceRow | undefined',
            ),
            mismatch(
              'findByNumber',
              '(number: string) => Promise<InvoiceRow | undefined>',
              '(number: string) => InvoiceRow | undefined',
            ),
            mismatch('list', '(query: ListQuery) => Promise<InvoiceRow[]>', '(query: ListQuery) => InvoiceRow[]'),
            mismatch(
              'linesFor',
              '(invoiceIds: number[]) => Promise<Map<number, LineItemRow[]>>',
              '(invoiceIds: number[]) => Map<number, LineItemRow[]>',
            ),
          ]);
        },
        { exit: 2, ms: 4_600 },
      ),
    ],
  });

  turn({
    thinking: `Every method mismatches: Promise<T> vs T. Before deciding anything, where does the service depend on transactions? Those are the places an async version would have to thread a client through.`,
    calls: [
      bash(
        'grep -n "transaction(" src/services/invoiceService.ts src/repositories/*.ts',
        () =>
          grep(/transaction\(/, [
            'src/services/invoiceService.ts',
            'src/repositories/pgInvoiceRepository.ts',
            'src/repositories/sqliteInvoiceRepository.ts',
            'src/repositories/types.ts',
          ]),
        { ms: 20 },
      ),
    ],
  });

  turn({
    thinking: `Both transaction sites matter: createInvoice (number allocation + insert) and recordPayment (read balance, insert payment, mark paid). How does billing-worker use them? That's the consumer that would feel an async change most.`,
    calls: [
      bash(
        'cat ~/src/billing-worker/src/jobs/chargeDueInvoices.ts',
        () => CONSUMERS['/home/dev/src/billing-worker/src/jobs/chargeDueInvoices.ts'],
        { ms: 15 },
      ),
    ],
  });

  turn({
    thinking: `As expected, every method mismatches: Promise<T> vs T. There is no way around it inside the repository — you can't turn an async driver call into a synchronous result in Node without blocking tricks (Atomics.wait on a worker, or a synchronous native driver), and neither is something to ship in a billing service.

There's a second, subtler problem in what I wrote: transaction() takes a client from the pool and runs BEGIN on it, but fn() issues its queries through this.pool, i.e. on other connections — outside the transaction. A correct version needs the client passed down (or AsyncLocalStorage to find it). Every call path becomes async.

So the real options are:
(a) Make InvoiceService async. Breaking change for billing-worker (chargeDueInvoices, reconcile) and dunning-cron — a semver-major, and coordinated changes in both consumers.
(b) Keep InvoiceService sync over SQLite and add a separate AsyncInvoiceService over an AsyncInvoiceRepository used only by the Postgres deployment; consumers migrate when they move. Duplicated service logic for a while.
(c) Keep SQLite.

Also needed for Postgres regardless: a schema (migrations/ is SQLite-only and off limits) and somewhere to run tests. Let me check whether Postgres or Docker is available locally for an integration test.`,
    calls: [
      bash(
        'docker compose version || docker --version',
        '/bin/bash: line 1: docker: command not found\n/bin/bash: line 1: docker: command not found',
        { exit: 127, ms: 30 },
      ),
    ],
  });

  turn({
    calls: [
      bash(
        'which psql pg_ctl postgres; ls /usr/lib/postgresql 2>&1; brew --prefix postgresql@16 2>&1 | tail -1',
        "ls: cannot access '/usr/lib/postgresql': No such file or directory\n/bin/bash: line 1: brew: command not found",
        { ms: 45 },
      ),
    ],
  });

  turn({
    thinking: `No Postgres, no Docker, so no integration tests for the pg side on this machine either. I'll stop here and let the user decide. Summary of the decision with concrete options and costs.`,
    text: `Step 1 is done: \`npm test\` passes apart from the known pdf failure, and \`tsc\` is clean. Step 2 is where it gets hard, and I'd like a decision before going further.

**Step 1 (done)**
- \`src/repositories/types.ts\` and \`src/repositories/sqliteInvoiceRepository.ts\` hold all invoice, line and payment SQL.
- \`InvoiceService\` takes \`Db | InvoiceRepository\`, so \`new InvoiceService(db)\` still works and every method is still synchronous.
- The routes only get the service. The payments list keeps its exact snake_case response. A test caught me changing it to camelCase, and that's fixed.
- One bug caught by the tests and fixed: "overdue" was using the real date instead of the injected clock.

**Step 2 (Postgres): the blocker**
I sketched \`src/repositories/pgInvoiceRepository.ts\` and \`tsc\` rejects it, with 8 errors, all of the same kind: \`pg\` is async, so every method returns \`Promise<…>\`, while \`InvoiceRepository\` and \`InvoiceService\` are synchronous. That's more than typing. Transactions also need the client threaded through every call, which again makes every call path async. There's no honest way to make an async driver look synchronous in Node.

Options:
1. **Make \`InvoiceService\` async.** A breaking change to the public API: \`billing-worker\` (\`chargeDueInvoices.ts\`, \`reconcile.ts\`) and \`dunning-cron\` (\`main.ts\`) need coordinated changes, and it's a major version.
2. **Add a parallel \`AsyncInvoiceService\` + \`AsyncInvoiceRepository\`** for the Postgres deployment only, and keep the sync one over SQLite until the consumers move. No breakage, but the service logic is duplicated for a while.
3. **Stay on SQLite for now.** Keep step 1, which is useful on its own, and revisit Postgres with the consumer teams.

Other things Postgres would need either way:
- A Postgres schema. \`migrations/\` is SQLite-specific and off limits, so you'd have to write it.
- A database to test against. There's no Postgres or Docker on this machine.

I've installed \`pg\` and \`@types/pg\`, and the sketch is uncommitted. Which way do you want to go?`,
  });

  // --------------------------------------------------------------------------------------- 4. New plan: CSV export
  user(
    `OK, stop migrating to Postgres and keep SQLite. The async problem is exactly why we can't do it this quarter; I'll take it to the platform sync. Keep the repository refactor though, that part is good.

Remove pg and everything you added for it. Instead, add a CSV export:

GET /invoices/export.csv?from=YYYY-MM-DD&to=YYYY-MM-DD[&status=issued|paid|void][&customerId=N]

- columns, in this order: number, customer, issued_at, due_at, currency, subtotal, tax, total, status
- from/to are inclusive, on issued_at; drafts never appear; max range 366 days, otherwise 400
- amounts as plain decimals with the currency's number of decimals (12.05 for USD, 1200 for JPY), no thousands separators, no currency symbols
- RFC 4180: comma separator, CRLF, quote when needed. UTF-8 with BOM, finance opens these in Excel
- it must stream. Our biggest customer, Northwind (customer 4417 in prod), has ~180,000 invoices in 2024 and the service runs with a 512 MB memory limit
- same constraints as before: migrations/ is off limits and the public API doesn't change.`,
    380_000,
  );

  turn({
    thinking: `Plan change: drop Postgres entirely, keep the repository layer, add a streaming CSV export. First, clean up the pg bits: uninstall both packages (restores package.json and the lockfile), delete the sketch.`,
    calls: [
      bash(
        'npm uninstall pg @types/pg',
        `
removed 17 packages, and audited 412 packages in 1s

71 packages are looking for funding
  run \`npm fund\` for details

found 0 vulnerabilities`,
        { ms: 2_900 },
      ),
    ],
  });

  turn({
    calls: [
      bash(
        'rm src/repositories/pgInvoiceRepository.ts && git status --short && git diff --stat -- package.json package-lock.json',
        () => gitStatusShort(),
        { effect: () => fs.delete('src/repositories/pgInvoiceRepository.ts'), ms: 60 },
      ),
    ],
  });

  turn({
    thinking: `package.json and package-lock.json have no diff, so the uninstall restored them exactly. The pg file is gone.

Design for the export:
- Repository: exportRows(query) returning an iterator over better-sqlite3's stmt.iterate(): rows come one at a time from SQLite, never the whole result in memory. Joins customers for the name. WHERE issued_at >= from AND issued_at <= to (inclusive). Drafts have issued_at NULL, so the range excludes them by itself.
- Service: validates the range (dates, from <= to, max 366 days) eagerly, before anything is sent, so errors become a normal 400 JSON response.
- src/export/csv.ts: RFC 4180 field quoting, CRLF, BOM + header, rows batched into ~64 KB chunks (one write per row would be slow for 180k rows).
- Route: Readable.from(generator).pipe(res). Readable.from respects backpressure, so a slow client doesn't make us buffer.
- money.ts: toDecimalString() — integer arithmetic, currency decimals from the existing MINOR_UNITS table. Not exported from index.ts (public API unchanged; additions there aren't needed).

Is there an index on issued_at? That decides whether a range query scans the table.`,
    calls: [
      bash(
        'grep -rn "issued_at\\|CREATE INDEX" migrations/',
        () => grep(/issued_at|CREATE INDEX/, allFiles('migrations/')),
        { ms: 25 },
      ),
    ],
  });

  turn({
    thinking: `No index on issued_at: a range query will scan invoices. I can't add one (migrations/ is off limits), so I'll measure with realistic volume later and tell the user what migration I'd suggest.

Start with money.toDecimalString plus its tests; let me see how the money tests are laid out.`,
    calls: [read('test/money.test.ts')],
  });

  turn({
    calls: [
      edit(
        'src/money.ts',
        `function assertSameCurrency(a: Money, b: Money): void {`,
        `/**
 * Plain decimal for files and APIs: "1234.50", "1200" (JPY), "1.234" (KWD), "-0.05". No grouping, no symbol,
 * always exactly the currency's number of decimals. Integer arithmetic only.
 */
export function toDecimalString(m: Money): string {
  const digits = minorUnits(m.currency);
  const abs = Math.abs(m.amount);
  const sign = m.amount < 0 ? '-' : '';
  if (digits === 0) return \`\${sign}\${abs}\`;
  const unit = 10 ** digits;
  return \`\${sign}\${Math.floor(abs / unit)}.\${abs % unit}\`;
}

function assertSameCurrency(a: Money, b: Money): void {`,
      ),
      edit(
        'test/money.test.ts',
        `import { allocate, formatMoney, minorUnits, money, roundHalfEven, sum } from '../src/money.js';`,
        `import { allocate, formatMoney, minorUnits, money, roundHalfEven, sum, toDecimalString } from '../src/money.js';`,
      ),
      edit(
        'test/money.test.ts',
        `  it('formats yen without decimals', () => {
    expect(formatMoney(money(1_200, 'JPY'), 'en-US')).toBe('¥1,200');
  });
});
`,
        `  it('formats yen without decimals', () => {
    expect(formatMoney(money(1_200, 'JPY'), 'en-US')).toBe('¥1,200');
  });
});

describe('toDecimalString', () => {
  it("uses the currency's decimals, without grouping", () => {
    expect(toDecimalString(money(123_450, 'USD'))).toBe('1234.50');
    expect(toDecimalString(money(1_200, 'JPY'))).toBe('1200');
    expect(toDecimalString(money(1_234, 'KWD'))).toBe('1.234');
  });

  it('pads the fraction', () => {
    expect(toDecimalString(money(1_205, 'USD'))).toBe('12.05');
    expect(toDecimalString(money(7, 'EUR'))).toBe('0.07');
  });

  it('keeps the sign of negative amounts', () => {
    expect(toDecimalString(money(-5, 'USD'))).toBe('-0.05');
  });
});
`,
      ),
    ],
  });

  turn({
    calls: [
      edit(
        'src/repositories/types.ts',
        `export interface CurrencySummaryRow {`,
        `export interface ExportQuery {
  /** YYYY-MM-DD, inclusive. */
  from: string;
  /** YYYY-MM-DD, inclusive. */
  to: string;
  status?: Exclude<InvoiceStatus, 'draft'>;
  customerId?: number;
}

/** One CSV line's worth of data: an invoice with its customer's name. */
export interface ExportRow {
  number: string;
  customerName: string;
  issuedAt: string | null;
  dueAt: string | null;
  currency: string;
  subtotal: number;
  tax: number;
  total: number;
  status: InvoiceStatus;
}

export interface CurrencySummaryRow {`,
      ),
      edit(
        'src/repositories/types.ts',
        `  summaryByCurrency(customerId: number): CurrencySummaryRow[];
}`,
        `  summaryByCurrency(customerId: number): CurrencySummaryRow[];
  /**
   * Invoices issued in the range (drafts never), oldest first, pulled one at a time from the database: the
   * result is never held in memory as a whole.
   */
  exportRows(query: ExportQuery): IterableIterator<ExportRow>;
}`,
      ),
    ],
  });

  turn({
    calls: [
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `import type {
  CurrencySummaryRow,
  InvoiceRepository,`,
        `import type {
  CurrencySummaryRow,
  ExportQuery,
  ExportRow,
  InvoiceRepository,`,
      ),
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `      .all(customerId) as CurrencySummaryRow[];
  }
}`,
        `      .all(customerId) as CurrencySummaryRow[];
  }

  *exportRows(query: ExportQuery): IterableIterator<ExportRow> {
    const where = ['i.issued_at >= ?', 'i.issued_at < ?'];
    const params: unknown[] = [query.from, query.to];
    if (query.status !== undefined) {
      where.push('i.status = ?');
      params.push(query.status);
    }
    if (query.customerId !== undefined) {
      where.push('i.customer_id = ?');
      params.push(query.customerId);
    }
    const stmt = this.db.prepare(
      \`SELECT i.number, c.name AS customerName, i.issued_at AS issuedAt, i.due_at AS dueAt, i.currency,
              i.subtotal, i.tax, i.total, i.status
         FROM invoices i
         JOIN customers c ON c.id = i.customer_id
        WHERE \${where.join(' AND ')}
        ORDER BY i.issued_at, i.id\`,
    );
    yield* stmt.iterate(...params) as IterableIterator<ExportRow>;
  }
}`,
      ),
    ],
  });

  turn({
    thinking: `Now the CSV module. Quoting per RFC 4180: quote if the field has a comma, a double quote or a line break; double embedded quotes. BOM once at the start, CRLF after every record including the last.`,
    calls: [write('src/export/csv.ts', CSV_V1)],
  });

  turn({
    calls: [
      edit(
        'src/services/invoiceService.ts',
        `import type { CurrencySummaryRow, InvoiceRepository, PaymentRow } from '../repositories/types.js';`,
        `import type { CurrencySummaryRow, ExportQuery, ExportRow, InvoiceRepository, PaymentRow } from '../repositories/types.js';`,
      ),
      edit(
        'src/services/invoiceService.ts',
        `const PAYMENT_TERMS_DAYS = 30;`,
        `const PAYMENT_TERMS_DAYS = 30;\nconst MAX_EXPORT_DAYS = 366;`,
      ),
      edit(
        'src/services/invoiceService.ts',
        `  balanceDue(id: number): number {`,
        `  /**
   * Invoices issued between \`from\` and \`to\` (inclusive) for the CSV export, streamed from storage. The range is
   * checked here, before anything is sent (at most MAX_EXPORT_DAYS days).
   */
  exportRows(query: ExportQuery): IterableIterator<ExportRow> {
    const from = Date.parse(\`\${query.from}T00:00:00Z\`);
    const to = Date.parse(\`\${query.to}T00:00:00Z\`);
    if (Number.isNaN(from) || Number.isNaN(to)) throw new ValidationError('from and to must be dates (YYYY-MM-DD)');
    if (to < from) throw new ValidationError('to must not be before from');
    if ((to - from) / DAY_MS >= MAX_EXPORT_DAYS) {
      throw new ValidationError(\`the export range is limited to \${MAX_EXPORT_DAYS} days\`);
    }
    return this.repo.exportRows(query);
  }

  balanceDue(id: number): number {`,
      ),
    ],
  });

  turn({
    thinking: `The router has changed since I last read it in full; re-read before editing.`,
    calls: [read('src/routes/invoices.ts')],
  });

  turn({
    thinking: `Route: query schema with strict YYYY-MM-DD dates, headers (Content-Type with charset, Content-Disposition with a filename from the range), then stream. If the iterator throws mid-stream the headers are already sent, so the only honest thing is to log and destroy the response (the client sees a truncated download instead of a silently short file).`,
    calls: [
      edit(
        'src/routes/invoices.ts',
        `import { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { ValidationError } from '../errors.js';`,
        `import { Readable } from 'node:stream';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { invoiceCsv } from '../export/csv.js';
import { logger } from '../logger.js';`,
      ),
      edit(
        'src/routes/invoices.ts',
        `const voidBody = z.object({ reason: z.string().min(1).max(500) });`,
        `const voidBody = z.object({ reason: z.string().min(1).max(500) });

const isoDate = z.string().regex(/^\\d{4}-\\d{2}-\\d{2}$/, 'expected YYYY-MM-DD');
const exportQuery = z.object({
  from: isoDate,
  to: isoDate,
  status: z.enum(['issued', 'paid', 'void']).optional(),
  customerId: z.coerce.number().int().positive().optional(),
});`,
      ),
      edit(
        'src/routes/invoices.ts',
        `  // Keeps the response's original (snake_case, no invoice id) shape`,
        `  router.get(
    '/invoices/export.csv',
    route((req, res) => {
      const query = exportQuery.parse(req.query);
      const rows = service.exportRows(query);
      res.status(200);
      res.setHeader('Content-Type', 'text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', \`attachment; filename="invoices_\${query.from}_\${query.to}.csv"\`);
      const body = Readable.from(invoiceCsv(rows));
      body.on('error', (err) => {
        logger.error({ err, query }, 'CSV export failed mid-stream');
        res.destroy(err);
      });
      body.pipe(res);
    }),
  );

  // Keeps the response's original (snake_case, no invoice id) shape`,
      ),
    ],
  });

  turn({
    thinking: `Tests for the export: unit tests for quoting and chunking, route tests through supertest with fixture rows that cover the awkward cases — a customer name with a comma (customer 3, Smith, Jones & Partners), JPY without decimals (customer 4), a USD amount needing a padded fraction (1205 → 12.05), a void invoice, a draft that must not appear.`,
    calls: [write('test/export.csv.test.ts', EXPORT_TEST_V1)],
  });

  turn({
    calls: [
      bash(
        'npm test',
        () => {
          const E = 'test/export.csv.test.ts';
          return vitest({
            clockAt: now(),
            failures: [
              fail(
                E,
                'csvField > quotes fields containing line breaks',
                "expected 'Unit 4\\nHarbour Road' to be '\"Unit 4\\nHarbour Road\"' // Object.is equality",
                [
                  "AssertionError: expected 'Unit 4\\nHarbour Road' to be '\"Unit 4\\nHarbour Road\"' // Object.is equality",
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- "Unit 4',
                  '- Harbour Road"',
                  '+ Unit 4',
                  '+ Harbour Road',
                  '',
                  codeFrame(
                    E,
                    `expect(csvField('Unit 4\\nHarbour Road')).toBe('"Unit 4\\nHarbour Road"');`,
                    undefined,
                    'toBe',
                  ),
                ].join('\n'),
              ),
              fail(
                E,
                'GET /invoices/export.csv > exports issued invoices in the range with decimal amounts',
                'expected 400 to be 200 // Object.is equality',
                [
                  'AssertionError: expected 400 to be 200 // Object.is equality',
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- 200',
                  '+ 400',
                  '',
                  codeFrame(E, 'expect(res.status).toBe(200);', 'exports issued invoices in the range', 'toBe'),
                ].join('\n'),
              ),
              fail(
                E,
                'GET /invoices/export.csv > filters by status',
                "expected [] to deeply equal [ 'INV-2025-00002', …(1) ]",
                [
                  "AssertionError: expected [] to deeply equal [ 'INV-2025-00002', …(1) ]",
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- Array [',
                  '-   "INV-2025-00002",',
                  '-   "INV-2025-00005",',
                  '- ]',
                  '+ Array []',
                  '',
                  codeFrame(E, ".toEqual(['INV-2025-00002', 'INV-2025-00005']);", 'filters by status', 'toEqual'),
                ].join('\n'),
              ),
              fail(
                E,
                'GET /invoices/export.csv > rejects a range longer than 366 days',
                "expected 'invalid invoice id: export.csv' to be 'the export range is limited to 366 days' // Object.is equality",
                [
                  "AssertionError: expected 'invalid invoice id: export.csv' to be 'the export range is limited to 366 days' // Object.is equality",
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- the export range is limited to 366 days',
                  '+ invalid invoice id: export.csv',
                  '',
                  codeFrame(
                    E,
                    "expect(res.body.message).toBe('the export range is limited to 366 days');",
                    undefined,
                    'toBe',
                  ),
                ].join('\n'),
              ),
              fail(
                E,
                'GET /invoices/export.csv > returns only the header for an empty range',
                'expected 400 to be 200 // Object.is equality',
                [
                  'AssertionError: expected 400 to be 200 // Object.is equality',
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- 200',
                  '+ 400',
                  '',
                  codeFrame(E, 'expect(res.status).toBe(200);', 'returns only the header', 'toBe'),
                ].join('\n'),
              ),
              PDF_NBSP_FAILURE(),
              fail(
                'test/money.test.ts',
                'toDecimalString > pads the fraction',
                "expected '12.5' to be '12.05' // Object.is equality",
                [
                  "AssertionError: expected '12.5' to be '12.05' // Object.is equality",
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- 12.05',
                  '+ 12.5',
                  '',
                  codeFrame(
                    'test/money.test.ts',
                    "expect(toDecimalString(money(1_205, 'USD'))).toBe('12.05');",
                    undefined,
                    'toBe',
                  ),
                ].join('\n'),
              ),
              fail(
                'test/money.test.ts',
                'toDecimalString > keeps the sign of negative amounts',
                "expected '-0.5' to be '-0.05' // Object.is equality",
                [
                  "AssertionError: expected '-0.5' to be '-0.05' // Object.is equality",
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- -0.05',
                  '+ -0.5',
                  '',
                  codeFrame(
                    'test/money.test.ts',
                    "expect(toDecimalString(money(-5, 'USD'))).toBe('-0.05');",
                    undefined,
                    'toBe',
                  ),
                ].join('\n'),
              ),
            ],
          });
        },
        { exit: 1, ms: 4_700 },
      ),
    ],
  });

  turn({
    thinking: `Three separate bugs, all mine:

1. Route order. Every route test gets 400 "invalid invoice id: export.csv": Express matches routes in registration order, and I registered /invoices/export.csv after /invoices/:id, so ":id" captures "export.csv". ("rejects malformed dates" passed only by accident — it got the same 400 from the wrong handler.) Fix: register the export route before /invoices/:id.

2. csvField's regex is /[",]/ — I forgot CR and LF. A line break inside an unquoted field would split the record.

3. toDecimalString doesn't pad the fraction: 1205 → "12." + "5". Needs padStart(digits, '0'). The negative case is the same bug (5 → "0.5").`,
    calls: [
      edit(
        'src/routes/invoices.ts',
        `  router.get(
    '/invoices/export.csv',
    route((req, res) => {
      const query = exportQuery.parse(req.query);
      const rows = service.exportRows(query);
      res.status(200);
      res.setHeader('Content-Type', 'text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', \`attachment; filename="invoices_\${query.from}_\${query.to}.csv"\`);
      const body = Readable.from(invoiceCsv(rows));
      body.on('error', (err) => {
        logger.error({ err, query }, 'CSV export failed mid-stream');
        res.destroy(err);
      });
      body.pipe(res);
    }),
  );

`,
        ``,
      ),
      edit(
        'src/routes/invoices.ts',
        `  router.get(
    '/invoices/by-number/:number',`,
        `  // Must be registered before /invoices/:id, which would otherwise take "export.csv" as an id.
  router.get(
    '/invoices/export.csv',
    route((req, res) => {
      const query = exportQuery.parse(req.query);
      const rows = service.exportRows(query);
      res.status(200);
      res.setHeader('Content-Type', 'text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', \`attachment; filename="invoices_\${query.from}_\${query.to}.csv"\`);
      const body = Readable.from(invoiceCsv(rows));
      body.on('error', (err) => {
        logger.error({ err, query }, 'CSV export failed mid-stream');
        res.destroy(err);
      });
      body.pipe(res);
    }),
  );

  router.get(
    '/invoices/by-number/:number',`,
      ),
    ],
  });

  turn({
    calls: [
      edit('src/export/csv.ts', `return /[",]/.test(value)`, `return /[",\\r\\n]/.test(value)`),
      edit(
        'src/money.ts',
        'return `${sign}${Math.floor(abs / unit)}.${abs % unit}`;',
        "return `${sign}${Math.floor(abs / unit)}.${String(abs % unit).padStart(digits, '0')}`;",
      ),
    ],
  });

  turn({
    thinking: `Check the move in the diff: the export route must now sit before /invoices/by-number/:number and /invoices/:id.`,
    calls: [bash('git diff src/routes/invoices.ts', () => diffText(['src/routes/invoices.ts']), { ms: 35 })],
  });

  turn({
    calls: [
      bash(
        'npm test -- test/export.csv.test.ts test/money.test.ts',
        () => vitest({ clockAt: now(), only: ['test/export.csv.test.ts', 'test/money.test.ts'] }),
        { ms: 2_500 },
      ),
    ],
  });

  turn({
    calls: [bash('npm test', () => vitest({ clockAt: now(), failures: [PDF_NBSP_FAILURE()] }), { exit: 1, ms: 4_500 })],
  });

  turn({
    thinking: `Green apart from the known one. vitest doesn't typecheck, so run tsc too.`,
    calls: [
      bash(
        'npx tsc --noEmit',
        () =>
          tsc([
            {
              path: 'src/export/csv.ts',
              snippet: '    row.issuedAt,',
              pointAt: 'row.issuedAt',
              code: 2322,
              message:
                "Type 'string | null' is not assignable to type 'string'.\n  Type 'null' is not assignable to type 'string'.",
            },
          ]),
        { exit: 2, ms: 4_200 },
      ),
    ],
  });

  turn({
    thinking: `issuedAt is nullable in ExportRow because the column is nullable, even though the range condition excludes NULLs. Handle it like dueAt rather than asserting.`,
    calls: [edit('src/export/csv.ts', `    row.issuedAt,`, `    row.issuedAt ?? '',`)],
  });

  turn({
    calls: [bash('npx tsc --noEmit && echo typecheck ok', 'typecheck ok', { ms: 4_100 })],
  });

  // Run it for real against a seeded database (a throwaway file in /tmp, not the developer's data/dev.db).
  const devSeedArgs = `--db /tmp/invoices-2024.db --customers ${DEV_SEED.customers} --invoices ${DEV_SEED.invoices} --year ${DEV_SEED.year} --reset`;
  turn({
    thinking: `Tests and types pass; now try it end to end on realistic data. How does the seed script work, and how does the server pick its database and port?`,
    calls: [read('scripts/seed.ts'), read('src/server.ts'), read('src/config.ts')],
  });

  turn({
    thinking: `The seed script takes --db, so I'll seed a throwaway database in /tmp rather than touching data/dev.db. The server reads DB_FILE and PORT from the environment.`,
    calls: [
      bash(
        `npm run seed -- ${devSeedArgs}`,
        () =>
          `${NPM_BANNER('seed', `tsx scripts/seed.ts ${devSeedArgs}`)}\n${migrationLogs(session.clock)}\ncustomers: ${DEV_SEED.customers}\ninvoices: ${DEV_SEED.invoices}/${DEV_SEED.invoices}\ndone in 0.4s -> /tmp/invoices-2024.db`,
        { ms: 2_300 },
      ),
    ],
  });

  turn({
    calls: [
      bash(
        'sqlite3 /tmp/invoices-2024.db "SELECT status, COUNT(*) FROM invoices GROUP BY status; SELECT currency, COUNT(*) FROM invoices GROUP BY currency;"',
        () => {
          const count = (key) => {
            const m = new Map();
            for (const inv of devInvoices) m.set(inv[key], (m.get(inv[key]) ?? 0) + 1);
            return [...m].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([k, n]) => `${k}|${n}`);
          };
          return [...count('status'), ...count('currency')].join('\n');
        },
        { ms: 40 },
      ),
    ],
  });

  const startServer = (db) =>
    `DB_FILE=${db} PORT=3107 node --import tsx src/server.ts > /tmp/invoice-server.log 2>&1 & SERVER=$!; sleep 2`;
  turn({
    calls: [
      bash(
        `${startServer('/tmp/invoices-2024.db')}\ncurl -sS 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2024-12-31' | tr -d '\\r'\nkill $SERVER`,
        () =>
          [
            '\ufeff' + CSV_HEADER,
            ...devInvoices
              .filter((inv) => inv.issuedAt !== null && inv.issuedAt >= '2024-01-01' && inv.issuedAt < '2024-12-31')
              .map((inv) => csvRow(inv)),
          ].join('\n'),
        { ms: 3_100 },
      ),
    ],
  });

  const devExclusive = devInvoices.filter(
    (inv) => inv.issuedAt !== null && inv.issuedAt >= '2024-01-01' && inv.issuedAt < '2024-12-31',
  ).length;
  const devInclusive = devInvoices.filter((inv) => issuedIn(inv, '2024-01-01', '2024-12-31')).length;
  turn({
    thinking: `Only the tail came back (the bash tool keeps the last 50 KB and put the rest in a temp file), which is enough for a look. It looks right at a glance: names with commas and quotes are quoted ("Smith, Jones & Partners LLP", "The ""Blue Door"" Café"), JPY rows have no decimals, other currencies have two, drafts are absent, numbering has gaps exactly where drafts are.

But the last rows are dated 2024-12-30, and the range was to=2024-12-31. The seed spreads invoices evenly over the year, so there should be some on the 31st. Compare the row count with the database.`,
    calls: [
      bash(
        `${startServer('/tmp/invoices-2024.db')}\ncurl -sS 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2024-12-31' | tail -n +2 | wc -l\nkill $SERVER\nsqlite3 /tmp/invoices-2024.db "SELECT COUNT(*) FROM invoices WHERE status != 'draft' AND issued_at BETWEEN '2024-01-01' AND '2024-12-31'"\nsqlite3 /tmp/invoices-2024.db "SELECT issued_at, COUNT(*) FROM invoices WHERE status != 'draft' AND issued_at >= '2024-12-28' GROUP BY issued_at"`,
        () => {
          const tail = ['2024-12-28', '2024-12-29', '2024-12-30', '2024-12-31'].map(
            (d) => `${d}|${devInvoices.filter((inv) => inv.status !== 'draft' && inv.issuedAt === d).length}`,
          );
          return [String(devExclusive), String(devInclusive), ...tail].join('\n');
        },
        { ms: 2_700 },
      ),
    ],
  });

  turn({
    thinking: `${devInclusive - devExclusive} rows missing, exactly the ones issued on 2024-12-31: the repository uses \`i.issued_at < ?\` for \`to\`, so the end is exclusive, while the requirement (and my own doc comment on ExportQuery) says inclusive. issued_at is a plain YYYY-MM-DD string, so \`<= ?\` is correct; no time-of-day component to worry about.

The route tests didn't catch it because no fixture sits on the last day of a range. Add one.`,
    calls: [
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `const where = ['i.issued_at >= ?', 'i.issued_at < ?'];`,
        `const where = ['i.issued_at >= ?', 'i.issued_at <= ?'];`,
      ),
      edit(
        'test/export.csv.test.ts',
        `  it('rejects a range longer than 366 days', async () => {`,
        `  it('includes invoices issued on the last day of the range', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2025-01-02&to=2025-01-31');
    expect(numbers(res.text)).toEqual(['INV-2025-00001', 'INV-2025-00002', 'INV-2025-00003']);
  });

  it('rejects a range longer than 366 days', async () => {`,
      ),
    ],
  });

  turn({
    calls: [
      bash('npm test -- test/export.csv.test.ts', () => vitest({ clockAt: now(), only: 'test/export.csv.test.ts' }), {
        ms: 2_600,
      }),
    ],
  });

  turn({
    thinking: `Re-check the counts, and look at the raw bytes of the start of the file: BOM, header, CRLF.`,
    calls: [
      bash(
        `${startServer('/tmp/invoices-2024.db')}\ncurl -sS 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2024-12-31' > /tmp/export-2024.csv\nkill $SERVER\ntail -n +2 /tmp/export-2024.csv | wc -l; head -c 112 /tmp/export-2024.csv | od -c`,
        () => {
          const first = devInvoices.find((inv) => issuedIn(inv, '2024-01-01', '2024-12-31'));
          const bytes = Buffer.concat([
            Buffer.from([0xef, 0xbb, 0xbf]),
            Buffer.from(`${CSV_HEADER}\r\n${csvRow(first)}\r\n`),
          ]).subarray(0, 112);
          return `${devInclusive}\n${odC(bytes)}`;
        },
        { ms: 2_600 },
      ),
    ],
  });

  turn({
    thinking: `${devInclusive} rows now, matching the database. od shows 357 273 277 (the UTF-8 BOM) and \\r \\n line ends. Now the response headers and the error paths over real HTTP.`,
    calls: [
      bash(
        `${startServer('/tmp/invoices-2024.db')}
curl -sS -D - -o /dev/null 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2024-01-31'
curl -sS -w ' -> %{http_code}\\n' 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2025-06-30'
curl -sS -o /dev/null -w 'from=2024-02-30 -> %{http_code}\\n' 'http://localhost:3107/invoices/export.csv?from=2024-02-30&to=2024-03-31'
curl -sS -w ' -> %{http_code}\\n' 'http://localhost:3107/invoices/export.csv?from=2024-01-01'
kill $SERVER`,
        () => `HTTP/1.1 200 OK
Content-Type: text/csv; charset=utf-8
Content-Disposition: attachment; filename="invoices_2024-01-01_2024-01-31.csv"
Date: ${new Date(session.clock + 2_300).toUTCString()}
Connection: keep-alive
Keep-Alive: timeout=5
Transfer-Encoding: chunked

{"error":"invalid_request","message":"the export range is limited to 366 days"} -> 400
from=2024-02-30 -> 200
{"error":"invalid_request","message":"request validation failed","issues":[{"code":"invalid_type","expected":"string","received":"undefined","path":["to"],"message":"Required"}]} -> 400`,
        { ms: 2_900 },
      ),
    ],
  });

  turn({
    thinking: `Headers are right, and the range and missing-parameter errors are proper 400s. But from=2024-02-30 was accepted: the regex only checks the shape, and Date.parse('2024-02-30T00:00:00Z') silently rolls over to March 1st in V8. Finance would get a file for a different range than they typed. Validate that the date round-trips.`,
    calls: [
      edit(
        'src/services/invoiceService.ts',
        `    const from = Date.parse(\`\${query.from}T00:00:00Z\`);
    const to = Date.parse(\`\${query.to}T00:00:00Z\`);`,
        `    const from = parseDay(query.from);
    const to = parseDay(query.to);`,
      ),
      edit(
        'src/services/invoiceService.ts',
        `function isRepository(storage: Db | InvoiceRepository): storage is InvoiceRepository {`,
        `/** Milliseconds of a YYYY-MM-DD day (UTC), or NaN. Rejects days that do not exist, which Date.parse rolls over. */
function parseDay(day: string): number {
  const ms = Date.parse(\`\${day}T00:00:00Z\`);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === day ? ms : NaN;
}

function isRepository(storage: Db | InvoiceRepository): storage is InvoiceRepository {`,
      ),
      edit(
        'test/export.csv.test.ts',
        `  it('returns only the header for an empty range', async () => {`,
        `  it('rejects days that do not exist instead of rolling them over', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2024-02-30&to=2024-03-31');
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('from and to must be dates (YYYY-MM-DD)');
  });

  it('returns only the header for an empty range', async () => {`,
      ),
    ],
  });

  turn({
    calls: [
      bash('npm test -- test/export.csv.test.ts', () => vitest({ clockAt: now(), only: 'test/export.csv.test.ts' }), {
        ms: 2_400,
      }),
    ],
  });

  turn({
    thinking: `Now the part that matters for Northwind: memory and time with ~180k invoices for one customer. First, what does SQLite do with the range query? No index on issued_at, as seen in the migrations.`,
    calls: [
      bash(
        `sqlite3 /tmp/invoices-2024.db "EXPLAIN QUERY PLAN SELECT i.number FROM invoices i JOIN customers c ON c.id = i.customer_id WHERE i.issued_at >= '2024-01-01' AND i.issued_at <= '2024-12-31' ORDER BY i.issued_at, i.id"; echo ---; sqlite3 /tmp/invoices-2024.db "EXPLAIN QUERY PLAN SELECT i.number FROM invoices i JOIN customers c ON c.id = i.customer_id WHERE i.issued_at >= '2024-01-01' AND i.issued_at <= '2024-12-31' AND i.customer_id = 4417 ORDER BY i.issued_at, i.id"`,
        `QUERY PLAN
|--SCAN i
|--SEARCH c USING INTEGER PRIMARY KEY (rowid=?)
\`--USE TEMP B-TREE FOR ORDER BY
---
QUERY PLAN
|--SEARCH i USING INDEX idx_invoices_customer (customer_id=?)
|--SEARCH c USING INTEGER PRIMARY KEY (rowid=?)
\`--USE TEMP B-TREE FOR ORDER BY`,
        { ms: 70 },
      ),
    ],
  });

  const bigSeedArgs = `--db /tmp/invoices-big.db --customers ${BIG_SEED.customers} --invoices ${BIG_SEED.invoices} --year ${BIG_SEED.year} --hot-customer ${BIG_SEED.hot} --hot-share ${BIG_SEED.hotShare} --reset`;
  turn({
    thinking: `Full scan for the unfiltered range, and a temp B-tree sort in both cases: SQLite sorts the matching rows before returning the first one. The sort lives in SQLite's temp storage (it spills to a temp file beyond the page cache), not in JS objects, so it shouldn't blow the heap, but the first byte comes only after the sort. An index on (issued_at) — or (customer_id, issued_at) for the per-customer case — would remove both. I can't add it (migrations/), so measure and report.

The seed script has --hot-customer for exactly this profile (its commit message mentions Northwind). 200k invoices, 90% for customer 4417.`,
    calls: [
      bash(
        `npm run seed -- ${bigSeedArgs}`,
        () => {
          const progress = [];
          for (let n = 10_000; n <= BIG_SEED.invoices; n += 10_000)
            progress.push(`invoices: ${n}/${BIG_SEED.invoices}`);
          bigSeededAt = session.clock + 900;
          return `${NPM_BANNER('seed', `tsx scripts/seed.ts ${bigSeedArgs}`)}\n${migrationLogs(session.clock)}\ncustomers: ${BIG_SEED.customers}\n${progress.join('\n')}\ndone in 9.6s -> /tmp/invoices-big.db`;
        },
        { ms: 11_400, timeout: 120 },
      ),
    ],
  });

  const bigCount = (() => {
    let n = 0;
    seedInvoices(BIG_SEED, (inv) => (n += inv.customerId === BIG_SEED.hot ? 1 : 0));
    return n;
  })();
  turn({
    calls: [
      bash(
        `ls -lh /tmp/invoices-big.db; sqlite3 /tmp/invoices-big.db "SELECT COUNT(*) FROM invoices WHERE customer_id = 4417"`,
        () =>
          `-rw-r--r-- 1 dev dev 47M Oct 14 ${hhmmss(session.clock + 7_200_000).slice(0, 5)} /tmp/invoices-big.db\n${bigCount}`,
        { ms: 120 },
      ),
    ],
  });

  user(
    `FYI: in prod the export will run against the read replica, not the primary, so locking isn't a concern. Memory is.`,
    5_000,
  );

  const measureCmd = (file) => `${startServer('/tmp/invoices-big.db')}
echo "server idle RSS: $(( $(ps -o rss= -p $SERVER) / 1024 )) MB"
( while kill -0 $SERVER 2>/dev/null; do ps -o rss= -p $SERVER; sleep 0.1; done | sort -n | tail -1 > /tmp/peak-rss ) &
/usr/bin/time -f 'curl: %e s wall' curl -sS -o ${file} 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2024-12-31&customerId=4417'
kill $SERVER; sleep 0.5
echo "server peak RSS: $(( $(cat /tmp/peak-rss) / 1024 )) MB"
wc -l -c ${file}`;
  turn({
    thinking: `Noted: replica, so only memory and time matter. (WAL mode would keep a long read from blocking writers anyway.) ${bigCount.toLocaleString('en-US')} invoices for 4417 in the seeded copy, close to the ~180k in prod. Measure the server's RSS while it streams that customer's year.`,
    calls: [
      bash(
        measureCmd('/tmp/northwind.csv'),
        () =>
          `server idle RSS: 71 MB\ncurl: 3.62 s wall\nserver peak RSS: 109 MB\n ${big.rows + 1} ${big.bytes} /tmp/northwind.csv`,
        { ms: 6_900, timeout: 120 },
      ),
    ],
  });

  const abortCmd = `${startServer('/tmp/invoices-big.db')}
curl -sS 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2024-12-31&customerId=4417' | head -c 2000 > /dev/null
sleep 0.5; curl -sS -w ' -> %{http_code}\\n' 'http://localhost:3107/invoices/1'
kill $SERVER; grep -c '"level":50' /tmp/invoice-server.log; tail -n 1 /tmp/invoice-server.log`;
  turn({
    thinking: `${big.rows.toLocaleString('en-US')} rows, ${(big.bytes / 1e6).toFixed(1)} MB of CSV in 3.6 s, with the server going from 71 to 109 MB: flat. One more streaming case before reporting: a client that gives up halfway (closed browser tab, curl | head). The server must clean up and keep serving.`,
    calls: [
      bash(
        abortCmd,
        () => {
          const stack = [
            'TypeError: This database connection is busy executing a query',
            `    at Database.prepare (${CWD}/node_modules/better-sqlite3/lib/methods/wrappers.js:5:21)`,
            `    at SqliteInvoiceRepository.findById (${CWD}/${at('src/repositories/sqliteInvoiceRepository.ts', "return this.db.prepare('SELECT * FROM invoices WHERE id = ?')", 'prepare')})`,
            `    at InvoiceService.getInvoice (${CWD}/${at('src/services/invoiceService.ts', 'const row = this.repo.findById(id);', 'findById')})`,
            `    at <anonymous> (${CWD}/${at('src/routes/invoices.ts', 'res.json(service.getInvoice(idParam(req)));', 'getInvoice')})`,
            `    at ${CWD}/${at('src/routes/invoices.ts', 'const result = handler(req, res);', 'handler')}`,
            `    at Layer.handle [as handle_request] (${CWD}/node_modules/express/lib/router/layer.js:95:5)`,
          ].join('\n');
          const log = JSON.stringify({
            level: 50,
            time: session.clock + 2_600,
            pid: 63120,
            hostname: 'dev-laptop',
            service: 'invoice-service',
            err: { type: 'TypeError', message: 'This database connection is busy executing a query', stack },
            method: 'GET',
            url: '/invoices/1',
            msg: 'unhandled error',
          });
          return `{"error":"internal","message":"internal server error"} -> 500\n1\n${log}`;
        },
        { ms: 3_600 },
      ),
    ],
  });

  turn({
    thinking: `A real bug, and a nasty one: after one aborted download, GET /invoices/1 fails with "This database connection is busy executing a query". pipe() does not destroy the source when the destination closes early: the Readable.from stream just stays paused, with the generator suspended inside the for..of over stmt.iterate(). The SQLite cursor stays open, and better-sqlite3 refuses every other statement on the connection — every request fails until a restart. In production one cancelled download would take the service down.

Fix: stream.pipeline(). When the response closes early it destroys the source; destroying a Readable.from stream calls the generator's return(), which exits the for..of and closes the statement iterator. First a test that reproduces it: enough rows that the response can't fit in the socket buffers, abort after the first chunk, then make a normal request.`,
    calls: [
      edit(
        'test/export.csv.test.ts',
        `import request from 'supertest';`,
        `import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';`,
      ),
      edit(
        'test/export.csv.test.ts',
        `  it('returns only the header for an empty range', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2023-01-01&to=2023-12-31');
    expect(res.status).toBe(200);
    expect(body(res.text)).toEqual([HEADER]);
  });
`,
        `  it('returns only the header for an empty range', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2023-01-01&to=2023-12-31');
    expect(res.status).toBe(200);
    expect(body(res.text)).toEqual([HEADER]);
  });

  it('releases the database when the client disconnects mid-download', async () => {
    const insert = db.prepare(
      "INSERT INTO invoices (number, customer_id, currency, status, issued_at, due_at) VALUES (?, 1, 'USD', 'paid', '2025-01-20', '2025-02-19')",
    );
    db.transaction(() => {
      for (let i = 0; i < 20_000; i++) insert.run(\`INV-2025-\${String(10_000 + i).padStart(5, '0')}\`);
    })();
    const server = app.listen(0);
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => {
      const req = get(\`http://127.0.0.1:\${port}/invoices/export.csv?from=2025-01-01&to=2025-12-31\`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
    });
    await new Promise((r) => setTimeout(r, 50));
    const res = await request(server).get('/invoices/1');
    server.close();
    expect(res.status).toBe(200);
  });
`,
      ),
    ],
  });

  turn({
    calls: [
      bash(
        'npm test -- test/export.csv.test.ts',
        () =>
          vitest({
            clockAt: now(),
            only: 'test/export.csv.test.ts',
            failures: [
              fail(
                'test/export.csv.test.ts',
                'GET /invoices/export.csv > releases the database when the client disconnects mid-download',
                'expected 500 to be 200 // Object.is equality',
                [
                  'AssertionError: expected 500 to be 200 // Object.is equality',
                  '',
                  '- Expected',
                  '+ Received',
                  '',
                  '- 200',
                  '+ 500',
                  '',
                  codeFrame(
                    'test/export.csv.test.ts',
                    'expect(res.status).toBe(200);',
                    'releases the database',
                    'toBe',
                  ),
                ].join('\n'),
              ),
            ],
          }),
        { exit: 1, ms: 3_100 },
      ),
    ],
  });

  turn({
    thinking: `Reproduced: 500 after the aborted download. Now the fix.`,
    calls: [
      edit(
        'src/routes/invoices.ts',
        `import { Readable } from 'node:stream';`,
        `import { pipeline, Readable } from 'node:stream';`,
      ),
      edit(
        'src/routes/invoices.ts',
        `      const body = Readable.from(invoiceCsv(rows));
      body.on('error', (err) => {
        logger.error({ err, query }, 'CSV export failed mid-stream');
        res.destroy(err);
      });
      body.pipe(res);`,
        `      // pipeline, not pipe: when the client goes away mid-download, pipeline destroys the source, which ends the
      // generator and closes the SQLite cursor. With pipe the cursor stayed open and every later query on the
      // connection failed with "This database connection is busy executing a query".
      pipeline(Readable.from(invoiceCsv(rows)), res, (err) => {
        if (err && err.code !== 'ERR_STREAM_PREMATURE_CLOSE') logger.error({ err, query }, 'CSV export failed mid-stream');
      });`,
      ),
    ],
  });

  turn({
    calls: [
      bash(
        'npm test -- test/export.csv.test.ts && npx tsc --noEmit && echo typecheck ok',
        () => `${vitest({ clockAt: now(), only: 'test/export.csv.test.ts' }).text}typecheck ok`,
        { ms: 6_900 },
      ),
    ],
  });

  turn({
    calls: [bash('npm test', () => vitest({ clockAt: now(), failures: [PDF_NBSP_FAILURE()] }), { exit: 1, ms: 5_300 })],
  });

  turn({
    calls: [
      bash(
        abortCmd,
        () => `${JSON.stringify(bigFirstInvoiceJson())} -> 200\n0\n${serverListeningLog('/tmp/invoices-big.db')}`,
        { ms: 3_500 },
      ),
    ],
  });

  turn({
    thinking: `The server answers normally after an aborted download now, and nothing was logged at error level (the premature close is expected and deliberately not logged). Streaming works and cleans up. Report back, including the index recommendation and the things I noticed but didn't change.`,
    text: `The CSV export is in and working: \`GET /invoices/export.csv?from=…&to=…[&status=…][&customerId=…]\`.

**What it does**
- Columns \`number, customer, issued_at, due_at, currency, subtotal, tax, total, status\`. \`from\`/\`to\` are inclusive on \`issued_at\`, drafts never appear, and more than 366 days returns 400, as do malformed dates.
- Amounts use the new \`toDecimalString()\` in \`src/money.ts\`, with integer math and ISO 4217 decimals: \`12.05\` USD, \`1200\` JPY. RFC 4180 quoting, CRLF, UTF-8 BOM.
- Streaming all the way: \`stmt.iterate()\` in the repository → generator in \`src/export/csv.ts\` (≈64 KB chunks) → \`pipeline(Readable.from(...), res)\`, which respects backpressure. Range validation happens before the first byte, so bad input gets a normal JSON 400. An error mid-stream is logged and the response is aborted rather than silently cut short.

**Bugs found and fixed along the way**
1. The route was registered after \`/invoices/:id\`, so \`export.csv\` was parsed as an id (400). Now registered first, with a comment.
2. Line breaks inside fields weren't quoted.
3. \`toDecimalString\` didn't pad the fraction (\`12.5\` instead of \`12.05\`).
4. The end date was exclusive. A real run on seeded data had ${devInclusive - devExclusive} invoices from 2024-12-31 missing. Fixed, with a test for the last day.
5. Impossible dates like \`2024-02-30\` were accepted (\`Date.parse\` rolls them over to March 1st). They're now a 400.
6. **A client aborting a download mid-stream broke the server.** With \`.pipe()\` the SQLite cursor stayed open, and every later request failed with 500 ("This database connection is busy executing a query") until a restart. Fixed with \`stream.pipeline()\`, which closes the cursor, plus a test that aborts a download and then makes a normal request.

**Measured** (seeded copy of the Northwind profile: 200,000 invoices, 90% for customer 4417, 2024)
- ${big.rows.toLocaleString('en-US')} rows, ${(big.bytes / 1e6).toFixed(1)} MB, **3.6 s**; server RSS **71 → 109 MB** peak, well under the 512 MB limit.

**For you: an index (I haven't touched migrations/)**
\`EXPLAIN QUERY PLAN\` shows a full scan of \`invoices\` for a date range, plus a temp B-tree sort for \`ORDER BY issued_at, id\` (also with \`customerId\`, via \`idx_invoices_customer\`). Memory is fine because SQLite sorts in its own temp storage, but the first byte waits for the sort. I'd suggest a migration like:
\`\`\`sql
-- 005_invoices_issued_at_index.sql
CREATE INDEX idx_invoices_customer_issued ON invoices(customer_id, issued_at, id);
CREATE INDEX idx_invoices_issued ON invoices(issued_at, id);
\`\`\`

\`npm test\` passes apart from the known pdf test, and \`tsc\` is clean.`,
  });

  user(
    `Side question: the auditors want 2023 and 2024 in one file. Can finance just ask for from=2023-01-01&to=2024-12-31?`,
    65_000,
  );

  turn({
    thinking: `2023-01-01..2024-12-31 is 731 days, over the 366-day cap the user asked for, so that request gets a 400. Workable without code changes: two requests, concatenated, dropping the second file's first line (BOM + header). Both files are sorted by issue date and the ranges don't overlap, so the result stays sorted.`,
    text: `Not in one request: that range is 731 days, so it gets a 400 ("the export range is limited to 366 days"). That's the cap you asked for.

Without any code change, finance can make two requests and concatenate them, dropping the second file's first line (the BOM and the header):

\`\`\`sh
(cat invoices_2023-01-01_2023-12-31.csv; tail -n +2 invoices_2024-01-01_2024-12-31.csv) > invoices_2023-2024.csv
\`\`\`

Both files are sorted by issue date and the ranges don't overlap, so the combined file is still in order. If multi-year exports become routine, raising the cap is a one-line change in \`InvoiceService\` (\`MAX_EXPORT_DAYS\`). At that point the index I suggested matters more, because a longer range means a bigger sort before the first byte.`,
  });

  // --------------------------------------------------------------------------------------------- 5. PDF totals
  user(
    `Nice. One more thing from finance: subtotal/tax/total in the CSV must match what's printed on the PDF, to the cent. The PDF rounds tax per line (half-even) and then sums. I'm not sure the stored columns do. And no new dependencies, please.`,
    290_000,
  );

  turn({
    thinking: `I noticed this during exploration: createInvoice stores totals with the v1 rule (tax per rate on summed net amounts, INV-188), while computeTotals — used by the PDF — rounds per line. The export currently prints the stored columns. Let me confirm what the PDF module does exactly.`,
    calls: [read('src/pdf/renderInvoice.ts')],
  });

  const checkScript = (groupBy) => `cat > /tmp/check-totals.ts <<'EOF'
import { openDatabase } from '${CWD}/src/db.js';
import { rowToLineItem, type LineItemRow } from '${CWD}/src/models/invoice.js';
import { computeTotals } from '${CWD}/src/services/taxService.js';

const db = openDatabase({ filename: '/tmp/invoices-2024.db', readonly: true });
const lines = db.prepare('SELECT * FROM line_items ORDER BY invoice_id, position').all() as LineItemRow[];
${groupBy}
let checked = 0, differ = 0, higher = 0, maxDiff = 0;
type Stored = { id: number; total: number };
for (const inv of db.prepare("SELECT id, total FROM invoices WHERE status != 'draft'").all() as Stored[]) {
  const pdf = computeTotals((byInvoice.get(inv.id) ?? []).map(rowToLineItem));
  checked++;
  if (pdf.total === inv.total) continue;
  differ++;
  if (inv.total > pdf.total) higher++;
  maxDiff = Math.max(maxDiff, Math.abs(inv.total - pdf.total));
}
console.log(\`checked \${checked} invoices: \${differ} differ from the PDF totals (max \${maxDiff} minor unit(s)), stored higher in \${higher}, lower in \${differ - higher}\`);
EOF
npx tsx /tmp/check-totals.ts`;
  turn({
    thinking: `The PDF renders totals with computeTotals(invoice.lines) and its header comment says stored totals "can differ by a minor unit" for older invoices. How many differ in the seeded data? The seed stores totals with the v1 rule, like production did before INV-188. Quick script.`,
    calls: [
      bash(
        checkScript('const byInvoice = Map.groupBy(lines, (l) => l.invoice_id);'),
        `/tmp/check-totals.ts:7
const byInvoice = Map.groupBy(lines, (l) => l.invoice_id);
                      ^

TypeError: Map.groupBy is not a function
    at <anonymous> (/tmp/check-totals.ts:7:23)
    at ModuleJob.run (node:internal/modules/esm/module_job:234:25)
    at async ModuleLoader.import (node:internal/modules/esm/loader:473:24)
    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:123:5)

Node.js v20.18.0`,
        { exit: 1, ms: 1_300 },
      ),
    ],
  });

  const mismatch = (() => {
    let checked = 0;
    let differ = 0;
    let higher = 0;
    let maxDiff = 0;
    for (const inv of devInvoices) {
      if (inv.status === 'draft') continue;
      checked++;
      const pdf = pdfTotals(inv.lines);
      if (pdf.total === inv.total) continue;
      differ++;
      if (inv.total > pdf.total) higher++;
      maxDiff = Math.max(maxDiff, Math.abs(inv.total - pdf.total));
    }
    return { checked, differ, higher, maxDiff };
  })();
  turn({
    thinking: `Map.groupBy is Node 21+; this is Node 20. Plain loop instead.`,
    calls: [
      bash(
        checkScript(
          'const byInvoice = new Map<number, LineItemRow[]>();\nfor (const l of lines) byInvoice.set(l.invoice_id, [...(byInvoice.get(l.invoice_id) ?? []), l]);',
        ),
        `checked ${mismatch.checked} invoices: ${mismatch.differ} differ from the PDF totals (max ${mismatch.maxDiff} minor unit(s)), stored higher in ${mismatch.higher}, lower in ${mismatch.differ - mismatch.higher}`,
        { ms: 1_500 },
      ),
    ],
  });

  const examples = devInvoices
    .filter((inv) => inv.status !== 'draft' && pdfTotals(inv.lines).total !== inv.total)
    .slice(0, 2);
  turn({
    thinking: `Let me look at two of them to be sure it is the rounding and nothing else.`,
    calls: [
      bash(
        `sqlite3 -header -column /tmp/invoices-2024.db "SELECT i.number, i.currency, i.subtotal, i.tax AS stored_tax, li.quantity, li.unit_price, li.tax_rate_bp FROM invoices i JOIN line_items li ON li.invoice_id = i.id WHERE i.number IN (${examples.map((e) => `'${e.number}'`).join(', ')}) ORDER BY i.id, li.position"`,
        () =>
          sqliteColumns(
            ['number', 'currency', 'subtotal', 'stored_tax', 'quantity', 'unit_price', 'tax_rate_bp'],
            examples.flatMap((e) =>
              e.lines.map((l) => [
                e.number,
                e.currency,
                e.subtotal,
                e.tax,
                `${l.quantity}.0`,
                l.unitPrice,
                l.taxRateBp,
              ]),
            ),
          ),
        { ms: 45 },
      ),
    ],
  });

  turn({
    thinking: `${examples
      .map((e) => {
        const per = e.lines.map((l) => ((l.quantity * l.unitPrice * l.taxRateBp) / 10_000).toFixed(2));
        return `${e.number}: tax on the subtotal is ${e.subtotal} × ${e.lines[0].taxRateBp / 100}% = ${((e.subtotal * e.lines[0].taxRateBp) / 10_000).toFixed(2)} → ${e.tax} stored; per line ${per.join(' + ')} → ${pdfTotals(e.lines).tax} on the PDF.`;
      })
      .join('\n')}

So it is purely the rounding rule: each line's tax is rounded on its own, so with several lines the per-line sum drifts from the rounded total by up to one minor unit per line or so. ${mismatch.differ} of ${mismatch.checked} (${((100 * mismatch.differ) / mismatch.checked).toFixed(1)}%) differ, by at most ${mismatch.maxDiff}. So the CSV must compute totals from the line items with computeTotals, exactly like the PDF — not print the stored columns. Changing the stored totals (or createInvoice's rule) is a data/behaviour change beyond this task; I'll flag it.

Simplest approach: ExportRow carries the invoice id; the service wraps the repository iterator and, per row, loads the lines and replaces the totals with computeTotals(lines).`,
    calls: [
      edit(
        'src/repositories/types.ts',
        `export interface ExportRow {\n  number: string;`,
        `export interface ExportRow {\n  id: number;\n  number: string;`,
      ),
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        '`SELECT i.number, c.name AS customerName,',
        '`SELECT i.id, i.number, c.name AS customerName,',
      ),
      edit(
        'src/services/invoiceService.ts',
        `  rowToInvoice,
  type CreateInvoiceInput,`,
        `  rowToInvoice,
  rowToLineItem,
  type CreateInvoiceInput,`,
      ),
      edit(
        'src/services/invoiceService.ts',
        `import { lineNet } from './taxService.js';`,
        `import { computeTotals, lineNet } from './taxService.js';`,
      ),
      edit(
        'src/services/invoiceService.ts',
        `    return this.repo.exportRows(query);
  }`,
        `    return this.withPdfTotals(this.repo.exportRows(query));
  }

  /** Totals as printed on the PDF: recomputed from the lines (tax per line), not the stored columns. */
  private *withPdfTotals(rows: IterableIterator<ExportRow>): IterableIterator<ExportRow> {
    for (const row of rows) {
      const lines = (this.repo.linesFor([row.id]).get(row.id) ?? []).map(rowToLineItem);
      yield { ...row, ...computeTotals(lines) };
    }
  }`,
      ),
    ],
  });

  turn({
    calls: [
      read('test/export.csv.test.ts', {
        offset: locate(file('test/export.csv.test.ts'), "describe('GET /invoices/export.csv'").line,
        limit: 24,
      }),
    ],
  });

  turn({
    thinking: `The route fixtures insert invoices without line items; with totals computed from lines they'd all export as zero. Give each fixture invoice lines that reproduce its stored totals, and add an invoice where the two rules disagree: three lines of 0.70 USD at 7.5% — per line 5.25 → 5 cents each, 15 in total; on the sum 15.75 → 16. Stored (v1) tax 16, PDF 15.`,
    calls: [
      edit(
        'test/export.csv.test.ts',
        `  beforeEach(() => {
    ({ db, app } = testApp());
    insertInvoiceRow(db, { number: 'INV-2025-00001', customerId: 3, status: 'paid', issuedAt: '2025-01-02', dueAt: '2025-02-01', currency: 'GBP', subtotal: 120_000, tax: 24_000, total: 144_000 });
    insertInvoiceRow(db, { number: 'INV-2025-00002', customerId: 4, status: 'issued', issuedAt: '2025-01-15', dueAt: '2025-02-14', currency: 'JPY', subtotal: 120_000, tax: 12_000, total: 132_000 });
    insertInvoiceRow(db, { number: 'INV-2025-00003', customerId: 1, status: 'void', issuedAt: '2025-01-31', dueAt: '2025-03-02', subtotal: 1_205, tax: 0, total: 1_205 });
    insertInvoiceRow(db, { number: 'INV-2025-00004', customerId: 1, status: 'draft', total: 5_000 });
    insertInvoiceRow(db, { number: 'INV-2025-00005', customerId: 2, status: 'issued', issuedAt: '2025-02-01', dueAt: '2025-03-03', currency: 'EUR', subtotal: 10_000, tax: 1_900, total: 11_900 });
  });`,
        `  /** An invoice row plus line items [quantity, unitPrice, taxRateBp] (the export computes totals from lines). */
  function invoice(row: InvoiceRowInput, lines: [number, number, number][]): void {
    const id = insertInvoiceRow(db, row);
    const insert = db.prepare(
      'INSERT INTO line_items (invoice_id, position, description, quantity, unit_price, tax_rate_bp) VALUES (?, ?, ?, ?, ?, ?)',
    );
    lines.forEach(([quantity, unitPrice, rateBp], i) => insert.run(id, i + 1, \`line \${i + 1}\`, quantity, unitPrice, rateBp));
  }

  beforeEach(() => {
    ({ db, app } = testApp());
    invoice({ number: 'INV-2025-00001', customerId: 3, status: 'paid', issuedAt: '2025-01-02', dueAt: '2025-02-01', currency: 'GBP', subtotal: 120_000, tax: 24_000, total: 144_000 }, [[1, 120_000, 2000]]);
    invoice({ number: 'INV-2025-00002', customerId: 4, status: 'issued', issuedAt: '2025-01-15', dueAt: '2025-02-14', currency: 'JPY', subtotal: 120_000, tax: 12_000, total: 132_000 }, [[3, 40_000, 1000]]);
    invoice({ number: 'INV-2025-00003', customerId: 1, status: 'void', issuedAt: '2025-01-31', dueAt: '2025-03-02', subtotal: 1_205, tax: 0, total: 1_205 }, [[1, 1_205, 0]]);
    invoice({ number: 'INV-2025-00004', customerId: 1, status: 'draft', total: 5_000 }, [[1, 5_000, 0]]);
    invoice({ number: 'INV-2025-00005', customerId: 2, status: 'issued', issuedAt: '2025-02-01', dueAt: '2025-03-03', currency: 'EUR', subtotal: 10_000, tax: 1_900, total: 11_900 }, [[2, 5_000, 1900]]);
  });

  it('prints the per-line (PDF) totals, not the stored ones', async () => {
    // Stored with the v1 rule: tax on 2.10 at 7.5% = 15.75 -> 16. The PDF: 5.25 -> 5 per line, 15 in total.
    invoice({ number: 'INV-2025-00006', customerId: 1, status: 'paid', issuedAt: '2025-02-10', dueAt: '2025-03-12', subtotal: 210, tax: 16, total: 226 }, [[1, 70, 750], [1, 70, 750], [1, 70, 750]]);
    const res = await request(app).get('/invoices/export.csv?from=2025-02-10&to=2025-02-10');
    expect(body(res.text)[1]).toBe('INV-2025-00006,Acme Corporation,2025-02-10,2025-03-12,USD,2.10,0.15,2.25,paid');
  });`,
      ),
      edit(
        'test/export.csv.test.ts',
        `import { insertInvoiceRow, testApp } from './helpers/testDb.js';`,
        `import { insertInvoiceRow, testApp, type InvoiceRowInput } from './helpers/testDb.js';`,
      ),
    ],
  });

  const busyFailures = () => {
    const E = 'test/export.csv.test.ts';
    const titles = [
      'GET /invoices/export.csv > prints the per-line (PDF) totals, not the stored ones',
      'GET /invoices/export.csv > exports issued invoices in the range with decimal amounts',
      'GET /invoices/export.csv > filters by status',
      'GET /invoices/export.csv > includes invoices issued on the last day of the range',
    ];
    const hangUp = [
      'Error: socket hang up',
      ' ❯ Socket.socketOnEnd node:_http_client:524:23',
      ' ❯ Socket.emit node:events:531:35',
      ' ❯ endReadableNT node:internal/streams/readable:1696:12',
      ' ❯ processTicksAndRejections node:internal/process/task_queues:82:21',
      '',
      '⎯'.repeat(51),
      "Serialized Error: { code: 'ECONNRESET' }",
    ].join('\n');
    return [
      ...titles.map((t) => fail(E, t, 'socket hang up', hangUp)),
      fail(
        E,
        'GET /invoices/export.csv > releases the database when the client disconnects mid-download',
        'Test timed out in 5000ms.',
        'Error: Test timed out in 5000ms.\nIf this is a long-running test, pass a timeout value as the last argument or configure it globally with "testTimeout".',
      ),
    ];
  };
  const busyLog = (test, query) => {
    const at = (path, snippet, anchor) => {
      const { line, col } = locate(file(path), snippet, anchor, path);
      return `${CWD}/${path}:${line}:${col}`;
    };
    const stack = [
      'TypeError: This database connection is busy executing a query',
      `    at Statement.all (${CWD}/node_modules/better-sqlite3/lib/methods/wrappers.js:9:14)`,
      `    at SqliteInvoiceRepository.linesFor (${at('src/repositories/sqliteInvoiceRepository.ts', '.all(...invoiceIds)')})`,
      `    at InvoiceService.withPdfTotals (${at('src/services/invoiceService.ts', 'this.repo.linesFor([row.id])')})`,
      '    at withPdfTotals.next (<anonymous>)',
      `    at invoiceCsv (${at('src/export/csv.ts', 'for (const row of rows)')})`,
      '    at invoiceCsv.next (<anonymous>)',
      '    at Readable.next (node:internal/streams/from:98:31)',
      '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
    ].join('\n');
    return {
      test: `test/export.csv.test.ts > ${test}`,
      text: JSON.stringify({
        level: 50,
        time: session.clock + 2_000,
        pid: 61873,
        hostname: 'dev-laptop',
        service: 'invoice-service',
        err: { type: 'TypeError', message: 'This database connection is busy executing a query', stack },
        query,
        msg: 'CSV export failed mid-stream',
      }),
    };
  };
  turn({
    calls: [
      bash(
        'npm test -- test/export.csv.test.ts',
        () =>
          vitest({
            clockAt: now(),
            only: 'test/export.csv.test.ts',
            stdout: [
              busyLog('GET /invoices/export.csv > prints the per-line (PDF) totals, not the stored ones', {
                from: '2025-02-10',
                to: '2025-02-10',
              }),
              busyLog('GET /invoices/export.csv > exports issued invoices in the range with decimal amounts', {
                from: '2025-01-01',
                to: '2025-02-28',
              }),
            ],
            failures: busyFailures(),
            slowMs: 5_000,
          }),
        { exit: 1, ms: 8_200 },
      ),
    ],
  });

  turn({
    thinking: `Every export test that produces at least one row fails. The stdout shows why.`,
    calls: [
      read('src/repositories/sqliteInvoiceRepository.ts', {
        offset: locate(file('src/repositories/sqliteInvoiceRepository.ts'), '*exportRows(').line,
        limit: 25,
      }),
    ],
  });

  turn({
    thinking: `"This database connection is busy executing a query": better-sqlite3 allows no other statement on the connection while an iterate() cursor is open, and withPdfTotals calls linesFor() for each row while the export cursor is still open. (Every test that exports at least one row dies; the server destroys the socket, hence "socket hang up".)

Options: a second connection for the line lookups (more moving parts, and N+1 queries — 180k extra queries for Northwind), or fetch the lines in the same query. Do the latter: LEFT JOIN line_items, ORDER BY i.issued_at, i.id, li.position, and group consecutive rows by invoice in the repository. Still one cursor, still streaming: at most one invoice's lines are held at a time. Then the CSV module computes totals with computeTotals(row.lines), the same function the PDF uses, and ExportRow drops the stored totals entirely, so nobody can print them by accident.`,
    calls: [
      edit(
        'src/repositories/types.ts',
        `/** One CSV line's worth of data: an invoice with its customer's name. */
export interface ExportRow {
  id: number;
  number: string;
  customerName: string;
  issuedAt: string | null;
  dueAt: string | null;
  currency: string;
  subtotal: number;
  tax: number;
  total: number;
  status: InvoiceStatus;
}`,
        `export interface ExportLine {
  quantity: number;
  unitPrice: number;
  taxRateBp: number;
}

/**
 * An invoice for the CSV export, with its lines rather than the stored totals: the export prints totals computed
 * like the PDF (tax per line), which can differ from the stored columns by a minor unit (INV-188).
 */
export interface ExportRow {
  number: string;
  customerName: string;
  issuedAt: string | null;
  dueAt: string | null;
  currency: string;
  status: InvoiceStatus;
  lines: ExportLine[];
}`,
      ),
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `    const stmt = this.db.prepare(
      \`SELECT i.id, i.number, c.name AS customerName, i.issued_at AS issuedAt, i.due_at AS dueAt, i.currency,
              i.subtotal, i.tax, i.total, i.status
         FROM invoices i
         JOIN customers c ON c.id = i.customer_id
        WHERE \${where.join(' AND ')}
        ORDER BY i.issued_at, i.id\`,
    );
    yield* stmt.iterate(...params) as IterableIterator<ExportRow>;
  }`,
        `    const stmt = this.db.prepare(
      \`SELECT i.id, i.number, c.name AS customerName, i.issued_at AS issuedAt, i.due_at AS dueAt, i.currency,
              i.status, li.quantity, li.unit_price AS unitPrice, li.tax_rate_bp AS taxRateBp
         FROM invoices i
         JOIN customers c ON c.id = i.customer_id
         LEFT JOIN line_items li ON li.invoice_id = i.id
        WHERE \${where.join(' AND ')}
        ORDER BY i.issued_at, i.id, li.position\`,
    );
    // One cursor over invoice × line rows, grouped here. A second query while it is open would fail: better-sqlite3
    // allows no other statement on the connection during iterate(). Holds one invoice's lines at a time.
    let current: ExportRow | undefined;
    let currentId = -1;
    for (const r of stmt.iterate(...params) as IterableIterator<ExportJoinRow>) {
      if (r.id !== currentId) {
        if (current) yield current;
        currentId = r.id;
        current = {
          number: r.number,
          customerName: r.customerName,
          issuedAt: r.issuedAt,
          dueAt: r.dueAt,
          currency: r.currency,
          status: r.status,
          lines: [],
        };
      }
      if (r.quantity !== null) current!.lines.push({ quantity: r.quantity, unitPrice: r.unitPrice!, taxRateBp: r.taxRateBp! });
    }
    if (current) yield current;
  }
}

interface ExportJoinRow {
  id: number;
  number: string;
  customerName: string;
  issuedAt: string | null;
  dueAt: string | null;
  currency: string;
  status: InvoiceStatus;
  quantity: number | null;
  unitPrice: number | null;
  taxRateBp: number | null;
}`,
      ),
    ],
  });

  turn({
    calls: [
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `import type { InvoiceRow, LineItemRow } from '../models/invoice.js';`,
        `import type { InvoiceRow, InvoiceStatus, LineItemRow } from '../models/invoice.js';`,
      ),
      edit(
        'src/services/invoiceService.ts',
        `    return this.withPdfTotals(this.repo.exportRows(query));
  }

  /** Totals as printed on the PDF: recomputed from the lines (tax per line), not the stored columns. */
  private *withPdfTotals(rows: IterableIterator<ExportRow>): IterableIterator<ExportRow> {
    for (const row of rows) {
      const lines = (this.repo.linesFor([row.id]).get(row.id) ?? []).map(rowToLineItem);
      yield { ...row, ...computeTotals(lines) };
    }
  }`,
        `    return this.repo.exportRows(query);
  }`,
      ),
      edit(
        'src/export/csv.ts',
        `export function toCsvFields(row: ExportRow): string[] {
  const amount = (minor: number) => toDecimalString(money(minor, row.currency));
  return [`,
        `/** Totals are computed from the lines exactly as the PDF does (computeTotals: tax rounded per line). */
export function toCsvFields(row: ExportRow): string[] {
  const amount = (minor: number) => toDecimalString(money(minor, row.currency));
  const totals = computeTotals(row.lines);
  return [`,
      ),
      edit(
        'src/export/csv.ts',
        `    amount(row.subtotal),\n    amount(row.tax),\n    amount(row.total),`,
        `    amount(totals.subtotal),\n    amount(totals.tax),\n    amount(totals.total),`,
      ),
      edit(
        'src/export/csv.ts',
        `import type { ExportRow } from '../repositories/types.js';`,
        `import type { ExportRow } from '../repositories/types.js';\nimport { computeTotals } from '../services/taxService.js';`,
      ),
    ],
  });

  turn({
    thinking: `The chunking unit test builds ExportRow objects by hand with subtotal/tax/total; update it to the new shape.`,
    calls: [
      edit(
        'test/export.csv.test.ts',
        `    const row = { number: 'INV-2025-00001', customerName: 'Acme Corporation', issuedAt: '2025-01-02', dueAt: '2025-02-01', currency: 'USD', subtotal: 100, tax: 0, total: 100, status: 'paid' as const };`,
        `    const row = { number: 'INV-2025-00001', customerName: 'Acme Corporation', issuedAt: '2025-01-02', dueAt: '2025-02-01', currency: 'USD', status: 'paid' as const, lines: [{ quantity: 1, unitPrice: 100, taxRateBp: 0 }] };`,
      ),
    ],
  });

  turn({
    calls: [bash('npm test', () => vitest({ clockAt: now(), failures: [PDF_NBSP_FAILURE()] }), { exit: 1, ms: 4_600 })],
  });

  turn({
    thinking: `All green except the known one. Does the join use the line_items index, or does it scan line_items for every invoice?`,
    calls: [
      bash(
        `sqlite3 /tmp/invoices-big.db "EXPLAIN QUERY PLAN SELECT i.id, li.quantity FROM invoices i JOIN customers c ON c.id = i.customer_id LEFT JOIN line_items li ON li.invoice_id = i.id WHERE i.issued_at >= '2024-01-01' AND i.issued_at <= '2024-12-31' AND i.customer_id = 4417 ORDER BY i.issued_at, i.id, li.position"`,
        `QUERY PLAN
|--SEARCH i USING INDEX idx_invoices_customer (customer_id=?)
|--SEARCH c USING INTEGER PRIMARY KEY (rowid=?)
|--SEARCH li USING INDEX idx_line_items_invoice (invoice_id=?) LEFT-JOIN
\`--USE TEMP B-TREE FOR ORDER BY`,
        { ms: 60 },
      ),
    ],
  });

  turn({
    thinking: `Index lookup per invoice for its lines; fine. Re-measure on the big database: the join returns more rows (one per line item), so check time and memory again.`,
    calls: [
      bash(
        measureCmd('/tmp/northwind-pdf.csv'),
        () =>
          `server idle RSS: 72 MB\ncurl: 4.41 s wall\nserver peak RSS: 116 MB\n ${big.rows + 1} ${big.pdfBytes} /tmp/northwind-pdf.csv`,
        { ms: 7_600, timeout: 120 },
      ),
    ],
  });

  turn({
    thinking: `4.4 s and 116 MB peak; fine. ${big.pdfBytes === big.bytes ? 'But exactly the same byte count as before, which is suspicious: did the change take effect? Same length is possible (a cent or two rarely changes the number of digits), so compare contents, on these files and on the dev export, where I know which rows should change.' : 'The size changed a little, as expected; compare contents to be sure, on these files and on the dev export.'}`,
    calls: [
      bash(
        `echo "northwind rows changed: $(diff /tmp/northwind.csv /tmp/northwind-pdf.csv | grep -c '^>')"\n${startServer('/tmp/invoices-2024.db')}\ncurl -sS 'http://localhost:3107/invoices/export.csv?from=2024-01-01&to=2024-12-31' | tr -d '\\r' > /tmp/export-pdf.csv\nkill $SERVER\ndiff <(tail -n +2 /tmp/export-2024.csv | tr -d '\\r') <(tail -n +2 /tmp/export-pdf.csv) | head -12; diff <(tail -n +2 /tmp/export-2024.csv | tr -d '\\r') <(tail -n +2 /tmp/export-pdf.csv) | grep -c '^>'`,
        () => {
          const rows = devInvoices.filter((inv) => issuedIn(inv, '2024-01-01', '2024-12-31'));
          const out = [];
          let changed = 0;
          rows.forEach((inv, k) => {
            const before = csvRow(inv);
            const after = csvRow(inv, pdfTotals(inv.lines));
            if (before === after) return;
            changed++;
            out.push(`${k + 1}c${k + 1}`, `< ${before}`, '---', `> ${after}`);
          });
          return `northwind rows changed: ${big.pdfChanged}\n${out.slice(0, 12).join('\n')}\n${changed}`;
        },
        { ms: 3_300, exit: 0 },
      ),
    ],
  });

  turn({
    thinking: `${big.pdfChanged.toLocaleString('en-US')} Northwind rows changed (same length, different cents), and on the dev data ${mismatch.differ} rows changed, matching the ${mismatch.differ} mismatches the script found; tax and total move by ${mismatch.maxDiff > 1 ? `one or ${mismatch.maxDiff} minor units` : 'one minor unit'}, subtotals are unchanged. Report back.`,
    text: `Done. The CSV now prints exactly the PDF's numbers.

**What changed**
- The export no longer reads the stored \`subtotal/tax/total\` columns at all. The repository streams each invoice with its line items (one \`LEFT JOIN\` cursor, grouped per invoice), and \`src/export/csv.ts\` computes the totals with \`computeTotals()\` from \`taxService\`, the same function \`src/pdf/renderInvoice.ts\` uses (tax rounded half-even per line, then summed).
- My first attempt looked up each invoice's lines while the export cursor was open. better-sqlite3 refuses that ("This database connection is busy executing a query"). The single-cursor join avoids it and also avoids 180k extra queries.
- New test: three lines of 0.70 USD at 7.5% must export as \`2.10,0.15,2.25\` (the stored v1 total would be 2.26).
- No new dependencies.

**What I found in the data** (seeded, same rules as production before INV-188)
- ${mismatch.differ} of ${mismatch.checked} invoices (${((100 * mismatch.differ) / mismatch.checked).toFixed(1)}%) have stored totals that differ from the PDF, by up to ${mismatch.maxDiff} minor units (stored higher in ${mismatch.higher}, lower in ${mismatch.differ - mismatch.higher}). The export now shows the PDF value for all of them.
- \`createInvoice\` still **stores** totals with the v1 rule, so new invoices keep getting stored totals that can disagree with their PDF. Changing that is a behaviour change to a public method and probably needs a data fix for existing rows, so I left it alone. It might be worth a ticket next to INV-188.

**Re-measured** (Northwind profile): ${big.rows.toLocaleString('en-US')} rows in **4.4 s**, server peak RSS **116 MB**.`,
  });

  // --------------------------------------------------------------------------------------------- 6. Wrap up
  user(
    `Good. Wrap up: run lint, the typecheck, the full test suite and the build, show me the diff stat, then give me a summary I can paste into the PR description, including anything you think I need to do (migrations etc.).`,
    240_000,
  );

  turn({
    calls: [
      bash(
        'npm run lint',
        () =>
          eslint([
            {
              path: 'src/repositories/sqliteInvoiceRepository.ts',
              snippet: 'current!.lines.push',
              severity: 'warning',
              message: 'Forbidden non-null assertion',
              rule: '@typescript-eslint/no-non-null-assertion',
            },
            {
              path: 'src/services/invoiceService.ts',
              snippet: 'rowToLineItem,',
              severity: 'error',
              message: "'rowToLineItem' is defined but never used",
              rule: '@typescript-eslint/no-unused-vars',
            },
            {
              path: 'src/services/invoiceService.ts',
              snippet: 'computeTotals',
              anchor: 'import { computeTotals',
              severity: 'error',
              message: "'computeTotals' is defined but never used",
              rule: '@typescript-eslint/no-unused-vars',
            },
          ]),
        { exit: 1, ms: 5_200 },
      ),
    ],
  });

  turn({
    calls: [
      read('src/repositories/sqliteInvoiceRepository.ts', {
        offset: locate(file('src/repositories/sqliteInvoiceRepository.ts'), 'let current: ExportRow').line - 2,
        limit: 26,
      }),
    ],
  });

  turn({
    thinking: `Leftovers from the first PDF-totals attempt: the service no longer needs rowToLineItem or computeTotals. And the non-null assertion in the grouping loop is avoidable: build the lines array as a local and push to it directly.`,
    calls: [
      edit(
        'src/services/invoiceService.ts',
        `  rowToInvoice,
  rowToLineItem,
  type CreateInvoiceInput,`,
        `  rowToInvoice,
  type CreateInvoiceInput,`,
      ),
      edit(
        'src/services/invoiceService.ts',
        `import { computeTotals, lineNet } from './taxService.js';`,
        `import { lineNet } from './taxService.js';`,
      ),
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `    let current: ExportRow | undefined;
    let currentId = -1;
    for (const r of stmt.iterate(...params) as IterableIterator<ExportJoinRow>) {
      if (r.id !== currentId) {
        if (current) yield current;
        currentId = r.id;
        current = {`,
        `    let current: ExportRow | undefined;
    let lines: ExportRow['lines'] = [];
    let currentId = -1;
    for (const r of stmt.iterate(...params) as IterableIterator<ExportJoinRow>) {
      if (r.id !== currentId) {
        if (current) yield current;
        currentId = r.id;
        lines = [];
        current = {`,
      ),
      edit(
        'src/repositories/sqliteInvoiceRepository.ts',
        `          status: r.status,
          lines: [],
        };
      }
      if (r.quantity !== null) current!.lines.push({ quantity: r.quantity, unitPrice: r.unitPrice!, taxRateBp: r.taxRateBp! });`,
        `          status: r.status,
          lines,
        };
      }
      if (r.quantity !== null && r.unitPrice !== null && r.taxRateBp !== null) {
        lines.push({ quantity: r.quantity, unitPrice: r.unitPrice, taxRateBp: r.taxRateBp });
      }`,
      ),
    ],
  });

  turn({
    thinking: `Now everything the user asked for: lint, typecheck, the full suite (verbose, so the PR reviewer can see every test name) and the build.`,
    calls: [
      bash('npm run lint', () => eslint([]), { ms: 5_100 }),
      bash('npx tsc --noEmit && echo "typecheck ok"', 'typecheck ok', { ms: 4_300 }),
      bash(
        'npm test -- --reporter=verbose',
        () => vitest({ clockAt: now(), failures: [PDF_NBSP_FAILURE()], verbose: true }),
        { exit: 1, ms: 4_900 },
      ),
      bash(
        'npm run build && ls dist/src/export dist/src/repositories',
        () =>
          `${NPM_BANNER('build', 'tsc -p tsconfig.build.json')}\ndist/src/export:\ncsv.d.ts\ncsv.js\ncsv.js.map\n\ndist/src/repositories:\nsqliteInvoiceRepository.d.ts\nsqliteInvoiceRepository.js\nsqliteInvoiceRepository.js.map\ntypes.d.ts\ntypes.js\ntypes.js.map`,
        { ms: 5_600 },
      ),
    ],
  });

  turn({
    thinking: `Everything passes except the known INV-212 pdf test; the build works. Stage everything (new files included) so the stat covers them — no commit, the user reviews first.`,
    calls: [
      bash(
        'git add -A && git status --short && git diff --cached --stat',
        () =>
          `${workTreeDiff()
            .map((d) => `${original.has(d.path) ? 'M ' : 'A '} ${d.path}`)
            .join('\n')}\n${diffStat()}`,
        { ms: 120 },
      ),
    ],
  });

  turn({
    thinking: `Let me read through the full staged diff once before summarising, to make sure nothing unintended is in it (no migrations/, no package.json change, no leftover pg code).`,
    calls: [bash('git diff --cached', () => diffText(), { ms: 90 })],
  });

  turn({
    calls: [
      bash(
        'git diff --cached --quiet -- migrations/ src/index.ts package.json package-lock.json && echo "unchanged: migrations/ src/index.ts package.json package-lock.json"; git diff --cached | grep -ci "pg\\b\\|postgres" || true',
        () => {
          const n = splitLines(diffText()).filter((l) => /pg\b|postgres/i.test(l)).length;
          return `unchanged: migrations/ src/index.ts package.json package-lock.json\n${n}`;
        },
        { ms: 70 },
      ),
    ],
  });

  const finalDiff = workTreeDiff();
  const ins = finalDiff.reduce((s, d) => s + d.added, 0);
  const del = finalDiff.reduce((s, d) => s + d.removed, 0);
  const totalTests = testFiles().reduce((s, f) => s + countTests(f), 0);
  const testLines = finalDiff.filter((d) => d.path.startsWith('test/')).reduce((s, d) => s + d.added + d.removed, 0);
  const changed = ins + del;
  const budget =
    changed <= 800
      ? `${changed} changed lines, within the ~800 budget`
      : `${changed} changed lines: over the ~800 I was given, though ${testLines} of them are tests; the non-test code is ${changed - testLines}`;
  turn({
    thinking: `The diff is clean: nothing under migrations/, no package.json/package-lock.json change, no pg leftovers. ${finalDiff.length} files, +${ins}/−${del} (${budget}). src/index.ts is untouched, so the public exports are identical; the InvoiceService constructor still accepts a Db; the HTTP response shapes are unchanged (payments stays snake_case). Write the PR summary.`,
    text: `Everything's green except the known pdf test: lint ✓, \`tsc --noEmit\` ✓, build ✓, tests ${totalTests - 1}/${totalTests} passing. The failing one is \`test/pdf.test.ts > formats EUR amounts for de-DE customers\` (INV-212, left untouched as you asked). Changes are staged, not committed.

\`\`\`
${diffStat()}
\`\`\`

${changed <= 800 ? `That's ${changed} changed lines, within the ~800 you asked for.` : `That's ${changed} changed lines, over the ~800 you asked for. ${testLines} of them are tests, so the non-test code is ${changed - testLines} lines. If that's too much for one review, the repository refactor and the CSV export split cleanly into two PRs.`}

---

## Repository layer for invoices + CSV export

### Why
Invoice SQL was spread across \`InvoiceService\` and two route handlers (INV-140). Finance also needs a CSV export of invoices that matches the PDFs to the cent.

### What
**Repository layer (no behaviour change)**
- \`src/repositories/types.ts\`: \`InvoiceRepository\` interface; \`src/repositories/sqliteInvoiceRepository.ts\` holds all invoice, line-item and payment SQL.
- \`InvoiceService\` now works against the repository. Its constructor accepts \`Db | InvoiceRepository\`, so \`new InvoiceService(db)\` (billing-worker, dunning-cron) keeps working, and all methods stay synchronous. New methods: \`listPayments\`, \`customerSummary\`, \`exportRows\`.
- \`invoicesRouter\` only receives the service (internal signature; not exported). \`GET /invoices/:id/payments\` keeps its snake_case response shape.
- Closes INV-140 for invoices. \`routes/customers.ts\` and \`routes/health.ts\` still use the db directly (out of scope).

**CSV export: \`GET /invoices/export.csv?from&to[&status][&customerId]\`**
- Columns: \`number, customer, issued_at, due_at, currency, subtotal, tax, total, status\`. \`from\`/\`to\` inclusive on \`issued_at\`, no drafts, range ≤ 366 days (else 400).
- Amounts use \`toDecimalString()\` (new in \`src/money.ts\`, integer math, ISO 4217 decimals: \`12.05\` USD, \`1200\` JPY). RFC 4180, CRLF, UTF-8 BOM.
- **Totals are computed from line items with \`computeTotals()\`**, the same per-line half-even rule as the PDF, not read from the stored columns.
- Streams end to end: one SQLite cursor (\`iterate()\`) → generator (≈64 KB chunks) → \`pipeline(Readable.from(…), res)\` with backpressure. If the client disconnects, \`pipeline\` closes the cursor; with \`.pipe()\` an aborted download left the connection busy and every later request failed.

### Tests
- New \`test/sqliteInvoiceRepository.test.ts\`: transaction rollback, overdue relative to the given day, notes handling, numbering.
- New \`test/export.csv.test.ts\`: quoting, BOM/CRLF, chunking, range validation (incl. impossible dates), inclusive end date, status filter, per-line vs stored totals, and a client disconnecting mid-download. \`toDecimalString\` tests are in \`test/money.test.ts\`.
- Measured on a seeded copy of the Northwind profile (200k invoices, 90% one customer): ${big.rows.toLocaleString('en-US')} rows in 4.4 s, server peak RSS 116 MB (limit 512 MB).

### Not changed
- \`migrations/\`, \`src/index.ts\` exports, \`package.json\` / lockfile (pg was tried and removed).

### Follow-ups for you
1. **Index migration** (I didn't touch \`migrations/\`): date-range exports currently scan \`invoices\` and sort in a temp B-tree. Suggested \`005\`:
   \`CREATE INDEX idx_invoices_customer_issued ON invoices(customer_id, issued_at, id);\`
   \`CREATE INDEX idx_invoices_issued ON invoices(issued_at, id);\`
2. **Stored totals vs PDF (INV-188):** \`createInvoice\` still stores totals with the v1 rule. In the seeded data ${mismatch.differ} of ${mismatch.checked} invoices differ from their PDF, by up to ${mismatch.maxDiff} minor units. The export is correct regardless, but anything else reading \`invoices.total\` (dunning amounts, \`balanceDue\`, the summary endpoint) still sees the stored value.
3. **Postgres:** blocked on the sync API. Options are in my earlier message (async service as a major version, or a parallel async service).
4. **INV-212:** the de-DE test expects a plain space where ICU now emits U+00A0.`,
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Files the agent writes during the session

const REPO_TYPES = `import type { InvoiceFilterStatus, InvoiceRow, InvoiceStatus, LineItemRow } from '../models/invoice.js';

/** A payments row as stored (snake_case, like the table). */
export interface PaymentRow {
  id: number;
  invoice_id: number;
  amount: number;
  method: 'card' | 'bank_transfer' | 'cash' | 'other';
  received_at: string;
  reference: string | null;
}

export interface NewInvoice {
  number: string;
  customerId: number;
  currency: string;
  subtotal: number;
  tax: number;
  total: number;
  notes: string | null;
  createdAt: string;
}

export interface NewLineItem {
  position: number;
  description: string;
  quantity: number;
  unitPrice: number;
  taxRateBp: number;
}

export interface NewPayment {
  invoiceId: number;
  amount: number;
  method: PaymentRow['method'];
  receivedAt: string;
  reference: string | null;
}

export interface ListQuery {
  customerId?: number;
  status?: InvoiceFilterStatus;
  /** YYYY-MM-DD: issued invoices due before this day are overdue. */
  today: string;
  limit: number;
  offset: number;
}

export interface StatusChange {
  status: InvoiceStatus;
  updatedAt: string;
  issuedAt?: string;
  dueAt?: string;
  /** Replaces the notes when given (null clears them). */
  notes?: string | null;
}

export interface CurrencySummaryRow {
  currency: string;
  count: number;
  paid: number;
  outstanding: number;
}

/**
 * Storage of invoices, their line items and payments. InvoiceService is the only caller; the routes go through
 * the service. Rows come back in table shape (snake_case); mapping to the API types stays in src/models.
 */
export interface InvoiceRepository {
  /** Runs \`fn\` atomically. Nested calls join the outer transaction. */
  transaction<T>(fn: () => T): T;
  customerExists(id: number): boolean;
  insertInvoice(invoice: NewInvoice, lines: NewLineItem[]): number;
  findById(id: number): InvoiceRow | undefined;
  findByNumber(number: string): InvoiceRow | undefined;
  /** Newest first by issue date, drafts last. */
  list(query: ListQuery): InvoiceRow[];
  linesFor(invoiceIds: number[]): Map<number, LineItemRow[]>;
  updateStatus(id: number, change: StatusChange): void;
  /** The highest invoice number starting with \`prefix\`, e.g. "INV-2025-". */
  lastNumberWithPrefix(prefix: string): string | undefined;
  insertPayment(payment: NewPayment): number;
  findPayment(id: number): PaymentRow | undefined;
  /** Oldest first. */
  paymentsFor(invoiceId: number): PaymentRow[];
  paidAmount(invoiceId: number): number;
  summaryByCurrency(customerId: number): CurrencySummaryRow[];
}
`;

const SQLITE_REPO_V1 = `import type { Db } from '../db.js';
import type { InvoiceRow, LineItemRow } from '../models/invoice.js';
import type {
  CurrencySummaryRow,
  InvoiceRepository,
  ListQuery,
  NewInvoice,
  NewLineItem,
  NewPayment,
  PaymentRow,
  StatusChange,
} from './types.js';

/** InvoiceRepository on better-sqlite3: all SQL for invoices, line items and payments lives here. */
export class SqliteInvoiceRepository implements InvoiceRepository {
  constructor(private readonly db: Db) {}

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  customerExists(id: number): boolean {
    return this.db.prepare('SELECT 1 FROM customers WHERE id = ?').get(id) !== undefined;
  }

  insertInvoice(invoice: NewInvoice, lines: NewLineItem[]): number {
    return this.transaction(() => {
      const result = this.db
        .prepare(
          \`INSERT INTO invoices (number, customer_id, currency, status, subtotal, tax, total, notes, created_at, updated_at)
           VALUES (?, ?, ?, 'draft', ?, ?, ?, ?, ?, ?)\`,
        )
        .run(
          invoice.number,
          invoice.customerId,
          invoice.currency,
          invoice.subtotal,
          invoice.tax,
          invoice.total,
          invoice.notes,
          invoice.createdAt,
          invoice.createdAt,
        );
      const invoiceId = Number(result.lastInsertRowid);
      const insertLine = this.db.prepare(
        \`INSERT INTO line_items (invoice_id, position, description, quantity, unit_price, tax_rate_bp)
         VALUES (?, ?, ?, ?, ?, ?)\`,
      );
      for (const l of lines) insertLine.run(invoiceId, l.position, l.description, l.quantity, l.unitPrice, l.taxRateBp);
      return invoiceId;
    });
  }

  findById(id: number): InvoiceRow | undefined {
    return this.db.prepare('SELECT * FROM invoices WHERE id = ?').get(id) as InvoiceRow | undefined;
  }

  findByNumber(number: string): InvoiceRow | undefined {
    return this.db.prepare('SELECT * FROM invoices WHERE number = ?').get(number) as InvoiceRow | undefined;
  }

  list(query: ListQuery): InvoiceRow[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.customerId !== undefined) {
      where.push('customer_id = ?');
      params.push(query.customerId);
    }
    if (query.status === 'overdue') {
      where.push("status = 'issued' AND due_at < date('now')");
    } else if (query.status !== undefined) {
      where.push('status = ?');
      params.push(query.status);
    }
    const sql = \`SELECT * FROM invoices \${where.length ? \`WHERE \${where.join(' AND ')}\` : ''}
      ORDER BY issued_at DESC, id DESC LIMIT ? OFFSET ?\`;
    return this.db.prepare(sql).all(...params, query.limit, query.offset);
  }

  linesFor(invoiceIds: number[]): Map<number, LineItemRow[]> {
    const byInvoice = new Map<number, LineItemRow[]>();
    if (invoiceIds.length === 0) return byInvoice;
    const placeholders = invoiceIds.map(() => '?').join(', ');
    const rows = this.db
      .prepare(\`SELECT * FROM line_items WHERE invoice_id IN (\${placeholders}) ORDER BY invoice_id, position\`)
      .all(...invoiceIds) as LineItemRow[];
    for (const row of rows) {
      const list = byInvoice.get(row.invoice_id) ?? [];
      list.push(row);
      byInvoice.set(row.invoice_id, list);
    }
    return byInvoice;
  }

  updateStatus(id: number, change: StatusChange): void {
    const sets = ['status = ?', 'updated_at = ?'];
    const params: unknown[] = [change.status, change.updatedAt];
    if (change.issuedAt !== undefined) {
      sets.push('issued_at = ?');
      params.push(change.issuedAt);
    }
    if (change.dueAt !== undefined) {
      sets.push('due_at = ?');
      params.push(change.dueAt);
    }
    if (change.notes !== undefined) {
      sets.push('notes = ?');
      params.push(change.notes);
    }
    this.db.prepare(\`UPDATE invoices SET \${sets.join(', ')} WHERE id = ?\`).run(...params, id);
  }

  lastNumberWithPrefix(prefix: string): string | undefined {
    const row = this.db
      .prepare('SELECT number FROM invoices WHERE number LIKE ? ORDER BY number DESC LIMIT 1')
      .get(\`\${prefix}%\`) as { number: string } | undefined;
    return row?.number;
  }

  insertPayment(payment: NewPayment): number {
    const result = this.db
      .prepare('INSERT INTO payments (invoice_id, amount, method, received_at, reference) VALUES (?, ?, ?, ?, ?)')
      .run(payment.invoiceId, payment.amount, payment.method, payment.receivedAt, payment.reference);
    return Number(result.lastInsertRowid);
  }

  findPayment(id: number): PaymentRow | undefined {
    return this.db.prepare('SELECT * FROM payments WHERE id = ?').get(id) as PaymentRow | undefined;
  }

  paymentsFor(invoiceId: number): PaymentRow[] {
    return this.db
      .prepare('SELECT * FROM payments WHERE invoice_id = ? ORDER BY received_at, id')
      .all(invoiceId) as PaymentRow[];
  }

  paidAmount(invoiceId: number): number {
    const row = this.db
      .prepare('SELECT COALESCE(SUM(amount), 0) AS paid FROM payments WHERE invoice_id = ?')
      .get(invoiceId) as { paid: number };
    return row.paid;
  }

  summaryByCurrency(customerId: number): CurrencySummaryRow[] {
    return this.db
      .prepare(
        \`SELECT currency,
                COUNT(*) AS count,
                SUM(CASE WHEN status = 'paid' THEN total ELSE 0 END) AS paid,
                SUM(CASE WHEN status = 'issued' THEN total ELSE 0 END) AS outstanding
           FROM invoices
          WHERE customer_id = ? AND status != 'void'
          GROUP BY currency
          ORDER BY currency\`,
      )
      .all(customerId) as CurrencySummaryRow[];
  }
}
`;

const SERVICE_V1 = `import type { Db } from '../db.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { logger } from '../logger.js';
import { roundHalfEven } from '../money.js';
import {
  createInvoiceInput,
  recordPaymentInput,
  rowToInvoice,
  type CreateInvoiceInput,
  type Invoice,
  type InvoiceFilterStatus,
  type InvoiceRow,
  type RecordPaymentInput,
} from '../models/invoice.js';
import { SqliteInvoiceRepository } from '../repositories/sqliteInvoiceRepository.js';
import type { CurrencySummaryRow, InvoiceRepository, PaymentRow } from '../repositories/types.js';
import { lineNet } from './taxService.js';

export interface ListFilter {
  customerId?: number;
  status?: InvoiceFilterStatus;
  limit?: number;
  offset?: number;
}

export interface Payment {
  id: number;
  invoiceId: number;
  amount: number;
  method: 'card' | 'bank_transfer' | 'cash' | 'other';
  receivedAt: string;
  reference: string | null;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_PAGE = 200;
const PAYMENT_TERMS_DAYS = 30;

/**
 * Invoice lifecycle: draft → issued → paid, or → void from draft/issued.
 * Amounts are stored in minor units; totals are computed once, when the invoice is created.
 *
 * Storage goes through an InvoiceRepository. Passing a better-sqlite3 database — the original constructor, used
 * by billing-worker and dunning-cron — wraps it in a SqliteInvoiceRepository. All methods are synchronous.
 */
export class InvoiceService {
  private readonly repo: InvoiceRepository;

  constructor(
    storage: Db | InvoiceRepository,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.repo = isRepository(storage) ? storage : new SqliteInvoiceRepository(storage);
  }

  createInvoice(raw: unknown): Invoice {
    const input: CreateInvoiceInput = createInvoiceInput.parse(raw);
    if (!this.repo.customerExists(input.customerId)) {
      throw new ValidationError(\`customer \${input.customerId} does not exist\`);
    }
    const { subtotal, tax } = legacyTotals(input.lines);
    const now = this.clock();
    const id = this.repo.transaction(() =>
      this.repo.insertInvoice(
        {
          number: this.nextInvoiceNumber(now.getUTCFullYear()),
          customerId: input.customerId,
          currency: input.currency,
          subtotal,
          tax,
          total: subtotal + tax,
          notes: input.notes ?? null,
          createdAt: now.toISOString(),
        },
        input.lines,
      ),
    );
    logger.info({ invoiceId: id, customerId: input.customerId }, 'invoice created');
    return this.getInvoice(id);
  }

  getInvoice(id: number): Invoice {
    const row = this.repo.findById(id);
    if (!row) throw new NotFoundError(\`invoice \${id} not found\`);
    return this.withLines([row])[0]!;
  }

  getByNumber(number: string): Invoice {
    const row = this.repo.findByNumber(number);
    if (!row) throw new NotFoundError(\`invoice \${number} not found\`);
    return this.withLines([row])[0]!;
  }

  listInvoices(filter: ListFilter = {}): Invoice[] {
    const rows = this.repo.list({
      customerId: filter.customerId,
      status: filter.status,
      today: this.today(),
      limit: Math.min(filter.limit ?? 50, MAX_PAGE),
      offset: filter.offset ?? 0,
    });
    return this.withLines(rows);
  }

  issueInvoice(id: number): Invoice {
    const invoice = this.getInvoice(id);
    if (invoice.status !== 'draft') {
      throw new ConflictError(\`invoice \${invoice.number} is \${invoice.status}, not draft\`);
    }
    const now = this.clock();
    const dueAt = new Date(now.getTime() + PAYMENT_TERMS_DAYS * DAY_MS).toISOString().slice(0, 10);
    this.repo.updateStatus(id, { status: 'issued', issuedAt: this.today(), dueAt, updatedAt: now.toISOString() });
    logger.info({ invoiceId: id, dueAt }, 'invoice issued');
    return this.getInvoice(id);
  }

  voidInvoice(id: number, reason: string): Invoice {
    const invoice = this.getInvoice(id);
    if (invoice.status === 'paid') throw new ConflictError(\`invoice \${invoice.number} is paid and cannot be voided\`);
    if (invoice.status === 'void') return invoice;
    if (!reason.trim()) throw new ValidationError('a reason is required to void an invoice');
    const notes = [invoice.notes, \`Voided: \${reason.trim()}\`].filter(Boolean).join('\\n');
    this.repo.updateStatus(id, { status: 'void', notes, updatedAt: this.clock().toISOString() });
    logger.warn({ invoiceId: id, reason }, 'invoice voided');
    return this.getInvoice(id);
  }

  recordPayment(id: number, raw: unknown): { invoice: Invoice; payment: Payment } {
    const input: RecordPaymentInput = recordPaymentInput.parse(raw);
    const paymentId = this.repo.transaction(() => {
      const invoice = this.getInvoice(id);
      if (invoice.status !== 'issued') {
        throw new ConflictError(\`cannot record a payment on a \${invoice.status} invoice (\${invoice.number})\`);
      }
      const paid = this.repo.paidAmount(id);
      if (paid + input.amount > invoice.total) {
        throw new ValidationError(
          \`payment of \${input.amount} exceeds the balance due of \${invoice.total - paid} on \${invoice.number}\`,
        );
      }
      const newId = this.repo.insertPayment({
        invoiceId: id,
        amount: input.amount,
        method: input.method,
        receivedAt: input.receivedAt ?? this.clock().toISOString(),
        reference: input.reference ?? null,
      });
      if (paid + input.amount === invoice.total) {
        this.repo.updateStatus(id, { status: 'paid', updatedAt: this.clock().toISOString() });
      }
      return newId;
    });
    const payment = this.repo.findPayment(paymentId)!;
    return { invoice: this.getInvoice(id), payment: rowToPayment(payment) };
  }

  /** Payments of an invoice, oldest first. */
  listPayments(id: number): Payment[] {
    if (!this.repo.findById(id)) throw new NotFoundError(\`invoice \${id} not found\`);
    return this.repo.paymentsFor(id).map(rowToPayment);
  }

  /** Paid and outstanding totals per currency for one customer, void invoices excluded. */
  customerSummary(customerId: number): CurrencySummaryRow[] {
    return this.repo.summaryByCurrency(customerId);
  }

  balanceDue(id: number): number {
    const invoice = this.getInvoice(id);
    if (invoice.status === 'void') return 0;
    return invoice.total - this.repo.paidAmount(id);
  }

  private today(): string {
    return this.clock().toISOString().slice(0, 10);
  }

  /** INV-<year>-<5 digits>, sequential per year. Must run inside the insert transaction. */
  private nextInvoiceNumber(year: number): string {
    const prefix = \`INV-\${year}-\`;
    const last = this.repo.lastNumberWithPrefix(prefix);
    const next = last ? Number(last.slice(prefix.length)) + 1 : 1;
    return \`\${prefix}\${String(next).padStart(5, '0')}\`;
  }

  private withLines(rows: InvoiceRow[]): Invoice[] {
    const lines = this.repo.linesFor(rows.map((r) => r.id));
    return rows.map((r) => rowToInvoice(r, lines.get(r.id) ?? []));
  }
}

function isRepository(storage: Db | InvoiceRepository): storage is InvoiceRepository {
  return typeof (storage as Partial<InvoiceRepository>).findById === 'function';
}

/** Tax per rate on the summed net amounts (v1 rule, INV-188). Stored totals depend on it: do not change here. */
function legacyTotals(lines: CreateInvoiceInput['lines']): { subtotal: number; tax: number } {
  const netByRate = new Map<number, number>();
  for (const l of lines) netByRate.set(l.taxRateBp, (netByRate.get(l.taxRateBp) ?? 0) + lineNet(l));
  const subtotal = [...netByRate.values()].reduce((a, n) => a + n, 0);
  let tax = 0;
  for (const [rateBp, net] of netByRate) tax += roundHalfEven((net * rateBp) / 10_000);
  return { subtotal, tax };
}

function rowToPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    invoiceId: row.invoice_id,
    amount: row.amount,
    method: row.method,
    receivedAt: row.received_at,
    reference: row.reference,
  };
}
`;

const PG_REPO = `import pg from 'pg';
import type { InvoiceRow, LineItemRow } from '../models/invoice.js';
import type { InvoiceRepository, ListQuery, NewInvoice, NewLineItem } from './types.js';

// Amounts are BIGINT in the Postgres schema; node-postgres returns int8 as strings unless told otherwise.
// Safe as numbers: amounts stay far below 2^53 minor units.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * InvoiceRepository on Postgres (node-postgres). Same tables as migrations/001–004, with BIGINT amounts and DATE
 * columns. WIP: read paths and insertInvoice only.
 */
export class PgInvoiceRepository implements InvoiceRepository {
  constructor(private readonly pool: pg.Pool) {}

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn();
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    } finally {
      client.release();
    }
  }

  async customerExists(id: number): Promise<boolean> {
    const { rowCount } = await this.pool.query('SELECT 1 FROM customers WHERE id = $1', [id]);
    return (rowCount ?? 0) > 0;
  }

  async insertInvoice(invoice: NewInvoice, lines: NewLineItem[]): Promise<number> {
    const { rows } = await this.pool.query<{ id: number }>(
      \`INSERT INTO invoices (number, customer_id, currency, status, subtotal, tax, total, notes, created_at, updated_at)
       VALUES ($1, $2, $3, 'draft', $4, $5, $6, $7, $8, $8) RETURNING id\`,
      [invoice.number, invoice.customerId, invoice.currency, invoice.subtotal, invoice.tax, invoice.total, invoice.notes, invoice.createdAt],
    );
    const id = rows[0]!.id;
    for (const l of lines) {
      await this.pool.query(
        \`INSERT INTO line_items (invoice_id, position, description, quantity, unit_price, tax_rate_bp)
         VALUES ($1, $2, $3, $4, $5, $6)\`,
        [id, l.position, l.description, l.quantity, l.unitPrice, l.taxRateBp],
      );
    }
    return id;
  }

  async findById(id: number): Promise<InvoiceRow | undefined> {
    const { rows } = await this.pool.query<InvoiceRow>('SELECT * FROM invoices WHERE id = $1', [id]);
    return rows[0];
  }

  async findByNumber(number: string): Promise<InvoiceRow | undefined> {
    const { rows } = await this.pool.query<InvoiceRow>('SELECT * FROM invoices WHERE number = $1', [number]);
    return rows[0];
  }

  async list(query: ListQuery): Promise<InvoiceRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.customerId !== undefined) {
      params.push(query.customerId);
      where.push(\`customer_id = $\${params.length}\`);
    }
    if (query.status === 'overdue') {
      params.push(query.today);
      where.push(\`status = 'issued' AND due_at < $\${params.length}\`);
    } else if (query.status !== undefined) {
      params.push(query.status);
      where.push(\`status = $\${params.length}\`);
    }
    params.push(query.limit, query.offset);
    const { rows } = await this.pool.query<InvoiceRow>(
      \`SELECT * FROM invoices \${where.length ? \`WHERE \${where.join(' AND ')}\` : ''}
        ORDER BY issued_at DESC NULLS LAST, id DESC LIMIT $\${params.length - 1} OFFSET $\${params.length}\`,
      params,
    );
    return rows;
  }

  async linesFor(invoiceIds: number[]): Promise<Map<number, LineItemRow[]>> {
    const byInvoice = new Map<number, LineItemRow[]>();
    if (invoiceIds.length === 0) return byInvoice;
    const { rows } = await this.pool.query<LineItemRow>(
      'SELECT * FROM line_items WHERE invoice_id = ANY($1) ORDER BY invoice_id, position',
      [invoiceIds],
    );
    for (const row of rows) {
      const list = byInvoice.get(row.invoice_id) ?? [];
      list.push(row);
      byInvoice.set(row.invoice_id, list);
    }
    return byInvoice;
  }
}
`;

const CSV_V1 = `/**
 * CSV export of invoices, RFC 4180: comma separator, CRLF after every record, fields quoted when they contain a
 * comma, a double quote or a line break, embedded quotes doubled. Starts with a UTF-8 byte-order mark so that
 * Excel detects the encoding.
 */
import { money, toDecimalString } from '../money.js';
import type { ExportRow } from '../repositories/types.js';

export const CSV_COLUMNS = ['number', 'customer', 'issued_at', 'due_at', 'currency', 'subtotal', 'tax', 'total', 'status'] as const;

const BOM = '\\uFEFF';
/** Records are batched into chunks of about this many characters: one write per record is slow for 180k rows. */
const CHUNK_CHARS = 64 * 1024;

export function csvField(value: string): string {
  return /[",]/.test(value) ? \`"\${value.replace(/"/g, '""')}"\` : value;
}

export function csvRecord(fields: readonly string[]): string {
  return fields.map(csvField).join(',') + '\\r\\n';
}

export function toCsvFields(row: ExportRow): string[] {
  const amount = (minor: number) => toDecimalString(money(minor, row.currency));
  return [
    row.number,
    row.customerName,
    row.issuedAt,
    row.dueAt ?? '',
    row.currency,
    amount(row.subtotal),
    amount(row.tax),
    amount(row.total),
    row.status,
  ];
}

/** The export as string chunks, BOM and header first. Pulls rows lazily, so memory stays flat. */
export function* invoiceCsv(rows: Iterable<ExportRow>): Generator<string> {
  let chunk = BOM + csvRecord(CSV_COLUMNS);
  for (const row of rows) {
    chunk += csvRecord(toCsvFields(row));
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}
`;

const EXPORT_TEST_V1 = `import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/db.js';
import { csvField, invoiceCsv } from '../src/export/csv.js';
import { insertInvoiceRow, testApp } from './helpers/testDb.js';

const BOM = '\\uFEFF';
const HEADER = 'number,customer,issued_at,due_at,currency,subtotal,tax,total,status';

/** The records of a CSV response, without BOM and final line break. */
const body = (text: string) => text.replace(BOM, '').trimEnd().split('\\r\\n');
/** The invoice numbers in a CSV response. */
const numbers = (text: string) => body(text).slice(1).map((line) => line.split(',')[0]);

describe('csvField', () => {
  it('leaves plain values alone', () => {
    expect(csvField('INV-2025-00001')).toBe('INV-2025-00001');
  });

  it('quotes commas and doubles embedded quotes', () => {
    expect(csvField('Smith, Jones & Partners LLP')).toBe('"Smith, Jones & Partners LLP"');
    expect(csvField('The "Blue Door" Café')).toBe('"The ""Blue Door"" Café"');
  });

  it('quotes fields containing line breaks', () => {
    expect(csvField('Unit 4\\nHarbour Road')).toBe('"Unit 4\\nHarbour Road"');
    expect(csvField('a\\r\\nb')).toBe('"a\\r\\nb"');
  });
});

describe('invoiceCsv', () => {
  it('starts with a BOM and the header, CRLF line ends', () => {
    expect([...invoiceCsv([])].join('')).toBe(\`\${BOM}\${HEADER}\\r\\n\`);
  });

  it('batches records into large chunks', () => {
    const row = { number: 'INV-2025-00001', customerName: 'Acme Corporation', issuedAt: '2025-01-02', dueAt: '2025-02-01', currency: 'USD', subtotal: 100, tax: 0, total: 100, status: 'paid' as const };
    const chunks = [...invoiceCsv(Array.from({ length: 5_000 }, () => row))];
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.length).toBeLessThan(10);
  });
});

describe('GET /invoices/export.csv', () => {
  let db: Db;
  let app: ReturnType<typeof testApp>['app'];

  beforeEach(() => {
    ({ db, app } = testApp());
    insertInvoiceRow(db, { number: 'INV-2025-00001', customerId: 3, status: 'paid', issuedAt: '2025-01-02', dueAt: '2025-02-01', currency: 'GBP', subtotal: 120_000, tax: 24_000, total: 144_000 });
    insertInvoiceRow(db, { number: 'INV-2025-00002', customerId: 4, status: 'issued', issuedAt: '2025-01-15', dueAt: '2025-02-14', currency: 'JPY', subtotal: 120_000, tax: 12_000, total: 132_000 });
    insertInvoiceRow(db, { number: 'INV-2025-00003', customerId: 1, status: 'void', issuedAt: '2025-01-31', dueAt: '2025-03-02', subtotal: 1_205, tax: 0, total: 1_205 });
    insertInvoiceRow(db, { number: 'INV-2025-00004', customerId: 1, status: 'draft', total: 5_000 });
    insertInvoiceRow(db, { number: 'INV-2025-00005', customerId: 2, status: 'issued', issuedAt: '2025-02-01', dueAt: '2025-03-03', currency: 'EUR', subtotal: 10_000, tax: 1_900, total: 11_900 });
  });

  it('exports issued invoices in the range with decimal amounts', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2025-01-01&to=2025-02-28');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="invoices_2025-01-01_2025-02-28.csv"');
    expect(res.text.startsWith(BOM)).toBe(true);
    expect(body(res.text)).toEqual([
      HEADER,
      'INV-2025-00001,"Smith, Jones & Partners LLP",2025-01-02,2025-02-01,GBP,1200.00,240.00,1440.00,paid',
      'INV-2025-00002,Minato Trading K.K.,2025-01-15,2025-02-14,JPY,120000,12000,132000,issued',
      'INV-2025-00003,Acme Corporation,2025-01-31,2025-03-02,USD,12.05,0.00,12.05,void',
      'INV-2025-00005,Bäckerei Müller GmbH,2025-02-01,2025-03-03,EUR,100.00,19.00,119.00,issued',
    ]);
  });

  it('filters by status', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2025-01-01&to=2025-12-31&status=issued');
    expect(numbers(res.text)).toEqual(['INV-2025-00002', 'INV-2025-00005']);
  });

  it('rejects a range longer than 366 days', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2024-01-01&to=2025-01-01');
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('the export range is limited to 366 days');
  });

  it('rejects malformed dates', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2025-1-1&to=2025-01-31');
    expect(res.status).toBe(400);
  });

  it('returns only the header for an empty range', async () => {
    const res = await request(app).get('/invoices/export.csv?from=2023-01-01&to=2023-12-31');
    expect(res.status).toBe(200);
    expect(body(res.text)).toEqual([HEADER]);
  });
});
`;

const REPO_TEST = `import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/db.js';
import { SqliteInvoiceRepository } from '../src/repositories/sqliteInvoiceRepository.js';
import { insertInvoiceRow, testDb } from './helpers/testDb.js';

describe('SqliteInvoiceRepository', () => {
  let db: Db;
  let repo: SqliteInvoiceRepository;

  beforeEach(() => {
    db = testDb();
    repo = new SqliteInvoiceRepository(db);
  });

  it('rolls back everything when a transaction throws', () => {
    expect(() =>
      repo.transaction(() => {
        repo.insertInvoice(
          { number: 'INV-2025-00001', customerId: 1, currency: 'USD', subtotal: 100, tax: 0, total: 100, notes: null, createdAt: '2025-03-01T12:00:00.000Z' },
          [{ position: 1, description: 'x', quantity: 1, unitPrice: 100, taxRateBp: 0 }],
        );
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(db.prepare('SELECT COUNT(*) AS n FROM invoices').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT COUNT(*) AS n FROM line_items').get()).toEqual({ n: 0 });
  });

  it('uses the given day for overdue, not the real date', () => {
    insertInvoiceRow(db, { number: 'INV-2025-00001', customerId: 1, status: 'issued', issuedAt: '2025-01-01', dueAt: '2025-01-31', total: 1 });
    const overdue = (today: string) => repo.list({ status: 'overdue', today, limit: 50, offset: 0 }).map((r) => r.number);
    expect(overdue('2025-01-31')).toEqual([]);
    expect(overdue('2025-02-01')).toEqual(['INV-2025-00001']);
  });

  it('keeps the notes unless a change sets them', () => {
    const id = insertInvoiceRow(db, { number: 'INV-2025-00001', customerId: 1, status: 'draft', total: 1 });
    repo.updateStatus(id, { status: 'void', notes: 'Voided: test', updatedAt: '2025-03-01T12:00:00.000Z' });
    repo.updateStatus(id, { status: 'void', updatedAt: '2025-03-02T12:00:00.000Z' });
    expect(repo.findById(id)).toMatchObject({ status: 'void', notes: 'Voided: test', updated_at: '2025-03-02T12:00:00.000Z' });
  });

  it('finds the highest number for a year prefix', () => {
    insertInvoiceRow(db, { number: 'INV-2024-00412', customerId: 1, status: 'paid', total: 1 });
    insertInvoiceRow(db, { number: 'INV-2025-00007', customerId: 1, status: 'draft', total: 1 });
    insertInvoiceRow(db, { number: 'INV-2025-00012', customerId: 1, status: 'draft', total: 1 });
    expect(repo.lastNumberWithPrefix('INV-2025-')).toBe('INV-2025-00012');
    expect(repo.lastNumberWithPrefix('INV-2026-')).toBeUndefined();
  });
});
`;

const NPM_LS = `invoice-service@1.4.2 ${CWD}
├── @types/better-sqlite3@7.6.11
├── @types/express@4.17.21
├── @types/node@20.14.10
├── @types/supertest@6.0.2
├── @typescript-eslint/eslint-plugin@7.16.1
├── @typescript-eslint/parser@7.16.1
├── better-sqlite3@9.6.0
├── eslint@8.57.0
├── express@4.19.2
├── pino@8.21.0
├── supertest@6.3.4
├── tsx@4.16.2
├── typescript@5.5.3
├── vitest@1.6.0
└── zod@3.23.8`;

/** Code of the two packages that import invoice-service (other repositories on the developer's machine). */
const CONSUMERS = {
  '/home/dev/src/billing-worker/src/jobs/chargeDueInvoices.ts': `import { setTimeout as sleep } from 'node:timers/promises';
import { chargeCard, type ChargeResult } from '../psp/client.js';
import { InvoiceService, openDatabase, type Invoice } from 'invoice-service';
import { log } from '../log.js';

const BATCH = 200;
const PSP_DELAY_MS = 40; // the PSP allows 25 requests per second

export interface ChargeRun {
  charged: number;
  failed: number;
  skipped: number;
}

/**
 * Charges the saved card of every overdue invoice. Runs every 15 minutes (cron: charge-due). Sequential on purpose:
 * the PSP rate-limits, and each recordPayment must see the payments recorded before it.
 */
export async function chargeDueInvoices(dbFile: string): Promise<ChargeRun> {
  const db = openDatabase({ filename: dbFile });
  const service = new InvoiceService(db);
  const run: ChargeRun = { charged: 0, failed: 0, skipped: 0 };
  try {
    for (let offset = 0; ; offset += BATCH) {
      const page: Invoice[] = service.listInvoices({ status: 'overdue', limit: BATCH, offset });
      if (page.length === 0) break;
      for (const invoice of page) {
        if (invoice.currency === 'JPY' && invoice.total < 50) {
          run.skipped++; // below the PSP's minimum charge
          continue;
        }
        // Read and write are synchronous: nothing else in this process can touch the invoice in between.
        const balance = service.balanceDue(invoice.id);
        if (balance <= 0) continue;
        const charge: ChargeResult = await chargeCard({ invoiceNumber: invoice.number, amount: balance, currency: invoice.currency });
        await sleep(PSP_DELAY_MS);
        if (charge.ok) {
          const { invoice: updated } = service.recordPayment(invoice.id, { amount: balance, method: 'card', reference: charge.id });
          log.info({ invoice: updated.number, status: updated.status, amount: balance }, 'charged');
          run.charged++;
        } else {
          log.warn({ invoice: invoice.number, code: charge.code }, 'charge failed');
          run.failed++;
        }
      }
    }
  } finally {
    db.close();
  }
  return run;
}
`,
  '/home/dev/src/billing-worker/src/jobs/reconcile.ts': `import { InvoiceService, type Invoice } from 'invoice-service';
import type { Payout } from '../psp/types.js';

export interface Mismatch {
  payout: Payout;
  invoice?: Invoice;
  reason: 'unknown-invoice' | 'amount' | 'balance-open';
}

/** Matches the PSP's payout report against invoices. Runs nightly. */
export function reconcile(service: InvoiceService, payouts: Payout[]): Mismatch[] {
  const out: Mismatch[] = [];
  for (const payout of payouts) {
    let invoice: Invoice;
    try {
      invoice = service.getByNumber(payout.invoiceNumber);
    } catch {
      out.push({ payout, reason: 'unknown-invoice' });
      continue;
    }
    const open = service.balanceDue(invoice.id);
    if (invoice.total - open !== payout.amount) out.push({ payout, invoice, reason: 'amount' });
    else if (open !== 0) out.push({ payout, invoice, reason: 'balance-open' });
  }
  return out;
}
`,
  '/home/dev/src/dunning-cron/src/main.ts': `import { formatMoney, InvoiceService, money, openDatabase } from 'invoice-service';
import { sendMail } from './mail.js';
import { renderReminder } from './templates.js';

const REMINDER_DAYS = [7, 14, 30];

const db = openDatabase({ filename: process.env.DB_FILE!, readonly: true });
const service = new InvoiceService(db);
const today = Date.now();
let sent = 0;

for (const invoice of service.listInvoices({ status: 'overdue', limit: 200 })) {
  const due = service.balanceDue(invoice.id);
  if (due <= 0 || !invoice.dueAt) continue;
  const daysLate = Math.floor((today - Date.parse(invoice.dueAt)) / 86_400_000);
  if (!REMINDER_DAYS.includes(daysLate)) continue;
  await sendMail(renderReminder({ invoice, amount: formatMoney(money(due, invoice.currency)), daysLate }));
  sent++;
}

console.log(\`dunning: \${sent} reminders sent\`);
db.close();
`,
};

/** sqlite3 -header -column output. */
function sqliteColumns(header, rows) {
  const cells = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, c) => Math.max(...cells.map((r) => r[c].length)));
  const fmt = (r) => r.map((v, c) => (c === r.length - 1 ? v : v.padEnd(widths[c]))).join('  ');
  return [fmt(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(fmt)].join('\n');
}

/** When the big database was seeded (its rows' created_at), set by the seed step. */
let bigSeededAt = START;

/** GET /invoices/1 on the big seeded database. */
function bigFirstInvoiceJson() {
  let first;
  seedInvoices({ ...BIG_SEED, invoices: 1 }, (inv) => (first = first ?? inv));
  // The first invoice draws the same random numbers whatever the count; its day is index 0 either way.
  const created = new Date(bigSeededAt).toISOString();
  return {
    id: 1,
    number: first.number,
    customerId: first.customerId,
    currency: first.currency,
    status: first.status,
    issuedAt: first.status === 'draft' ? null : '2024-01-01',
    dueAt: first.status === 'draft' ? null : '2024-01-31',
    subtotal: first.subtotal,
    tax: first.tax,
    total: first.total,
    notes: null,
    lines: first.lines.map((l, i) => ({
      id: i + 1,
      position: i + 1,
      description: l.description,
      quantity: l.quantity,
      unitPrice: l.unitPrice,
      taxRateBp: l.taxRateBp,
    })),
    createdAt: created,
    updatedAt: created,
  };
}

function serverListeningLog(db) {
  return JSON.stringify({
    level: 30,
    time: session.clock + 2_010,
    pid: 63388,
    hostname: 'dev-laptop',
    service: 'invoice-service',
    port: 3107,
    db,
    msg: 'invoice-service listening',
  });
}

/** `path:line:col` of `pointAt` within `snippet` in a work-tree file. */
function at(path, snippet, pointAt = snippet, anchor) {
  const { line, col } = locate(file(path), snippet, anchor, path);
  return `${path}:${line}:${col + snippet.indexOf(pointAt)}`;
}

/** The service tests right after the rewrite: every test that creates an invoice hits NOT NULL on position. */
function positionFailures() {
  const T = 'test/invoiceService.test.ts';
  const R = 'src/repositories/sqliteInvoiceRepository.ts';
  const S = 'src/services/invoiceService.ts';
  const sqliteTx = ' ❯ sqliteTransaction node_modules/better-sqlite3/lib/methods/transaction.js:65:24';
  const repoTx = ` ❯ SqliteInvoiceRepository.transaction ${at(R, 'return this.db.transaction(fn)();', '();')}`;
  return testTree(T)
    .filter((n) => n.kind === 'it' && !/does not exist|unknown id/.test(n.name))
    .map((n) =>
      fail(
        T,
        n.path,
        'NOT NULL constraint failed: line_items.position',
        [
          'SqliteError: NOT NULL constraint failed: line_items.position',
          codeFrame(R, 'for (const l of lines) insertLine.run(', undefined, 'run('),
          sqliteTx,
          repoTx,
          ` ❯ SqliteInvoiceRepository.insertInvoice ${at(R, 'return this.transaction(() => {', 'transaction')}`,
          ` ❯ ${at(S, 'this.repo.insertInvoice(', 'insertInvoice')}`,
          sqliteTx,
          repoTx,
          ` ❯ InvoiceService.createInvoice ${at(S, 'const id = this.repo.transaction(', 'transaction')}`,
          ` ❯ ${at(T, 'service.createInvoice(', 'createInvoice', `it('${n.name}'`)}`,
          '',
          '⎯'.repeat(51),
          "Serialized Error: { code: 'SQLITE_CONSTRAINT_NOTNULL' }",
        ].join('\n'),
      ),
    );
}

// ---------------------------------------------------------------------------------------------------------------------
// Small output helpers used by the story

/** pino's JSON lines for the four migrations a fresh database gets. */
function migrationLogs(at) {
  return ['001_init.sql', '002_tax_rates.sql', '003_invoice_status_index.sql', '004_customers_email_unique.sql']
    .map((migration, i) =>
      JSON.stringify({
        level: 30,
        time: at + 310 + i * 4,
        pid: 58211 + (Math.floor(at / 1000) % 7000),
        hostname: 'dev-laptop',
        service: 'invoice-service',
        migration,
        msg: 'applied migration',
      }),
    )
    .join('\n');
}

/** `od -c` of some bytes. */
function odC(bytes) {
  const cell = (b) => {
    if (b === 0x0a) return '\\n';
    if (b === 0x0d) return '\\r';
    if (b === 0x09) return '\\t';
    if (b >= 0x20 && b < 0x7f) return String.fromCharCode(b);
    return b.toString(8).padStart(3, '0');
  };
  const out = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const row = [...bytes.subarray(i, i + 16)].map((b) => cell(b).padStart(4)).join('');
    out.push(i.toString(8).padStart(7, '0') + row);
  }
  out.push(bytes.length.toString(8).padStart(7, '0'));
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------------
// Main

function generate() {
  story();
  return lines.join('\n') + '\n';
}

function main() {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  if (args.some((a) => a !== '--check')) {
    console.error('usage: node examples/generate.js [--check]');
    process.exit(2);
  }
  const text = generate();
  const bytes = Buffer.from(text);
  const rel = relative(process.cwd(), OUT_FILE);
  const name = rel && !rel.startsWith('..') ? rel : OUT_FILE;
  const what = `${(bytes.length / 1e6).toFixed(2)} MB, ${lines.length} lines, ${session.messages} messages`;
  if (!check) {
    writeFileSync(OUT_FILE, bytes);
    console.log(`wrote ${name} (${what})`);
    return;
  }
  if (!existsSync(OUT_FILE)) {
    writeFileSync(OUT_FILE, bytes);
    console.log(`${name} was missing: wrote it (${what})`);
    return;
  }
  const onDisk = readFileSync(OUT_FILE);
  if (onDisk.equals(bytes)) {
    console.log(`${name} is up to date (${what})`);
    return;
  }
  const a = onDisk.toString('utf8').split('\n');
  const b = text.split('\n');
  let line = 0;
  while (line < a.length && line < b.length && a[line] === b[line]) line++;
  console.error(
    `${name} is stale: it differs from what examples/generate.js produces, first at line ${line + 1} ` +
      `(on disk ${onDisk.length} bytes, generated ${bytes.length}). Regenerate it with: node examples/generate.js`,
  );
  process.exit(1);
}

main();
