#!/usr/bin/env node
/**
 * Writes schema/abridge.config.schema.json, the JSON Schema of abridge.config.json, from the zod schema in the
 * build (the `abridge-context/config` entry, dist/config.js; run `npm run build` first).
 *
 *   node scripts/config-schema.js           (re)write schema/abridge.config.schema.json
 *   node scripts/config-schema.js --check   exit 1 if the committed file differs from what the build generates
 *
 * The same comparison runs in the tests (src/manager/config.test.ts), against the sources.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(ROOT, 'schema', 'abridge.config.schema.json');
const BUILT = join(ROOT, 'dist', 'config.js');
const shown = relative(process.cwd(), OUT_FILE) || OUT_FILE;

const args = process.argv.slice(2);
const check = args.includes('--check');
const unknown = args.filter((a) => a !== '--check');
if (unknown.length) {
  console.error(
    `scripts/config-schema.js: unknown argument ${unknown[0]} (usage: node scripts/config-schema.js [--check])`,
  );
  process.exit(2);
}
if (!existsSync(BUILT)) {
  console.error(`scripts/config-schema.js: ${relative(process.cwd(), BUILT)} not found; run \`npm run build\` first`);
  process.exit(2);
}

const { configJsonSchema } = await import(pathToFileURL(BUILT).href);
// Written like every file abridge produces: a temp file, fsync, rename (a committed file, so readable by all: 0644).
const writeFileAtomic = (file, data) => {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
};
const text = `${JSON.stringify(configJsonSchema(), null, 2)}\n`;

if (check) {
  const current = existsSync(OUT_FILE) ? readFileSync(OUT_FILE, 'utf8') : undefined;
  if (current === text) {
    console.log(`${shown} is up to date`);
  } else {
    console.error(
      `${shown} is ${current === undefined ? 'missing' : 'stale'}: run \`npm run schema\` and commit the result`,
    );
    process.exit(1);
  }
} else {
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  await writeFileAtomic(OUT_FILE, text, { mode: 0o644 });
  console.log(`wrote ${shown}`);
}
