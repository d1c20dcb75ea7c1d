#!/usr/bin/env node
/**
 * The secret detector over the shared corpus of real transcripts (../shared/corpus, or $ABRIDGE_CORPUS): how many
 * matches per kind, a sample of each kind to inspect by hand (shown masked: kind, file, the first 4 and last 2
 * characters and the 30 characters before), and the throughput. Run through `npm run bench:redaction` (builds first).
 *
 *   node bench/redaction.js [--samples 10] [--json]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { findSecrets } from '../dist/index.js';

const args = process.argv.slice(2);
const samples = Number(args[args.indexOf('--samples') + 1] ?? 10) || 10;
const here = fileURLToPath(new URL('.', import.meta.url));
const corpus = process.env.ABRIDGE_CORPUS ?? resolve(here, '../../shared/corpus');

function files(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (/\.(jsonl|json|traj|txt)$/.test(name)) out.push(p);
  }
  return out.sort();
}

const perKind = new Map();
let bytes = 0;
let ms = 0;
const all = files(corpus);
for (const f of all) {
  const text = readFileSync(f, 'utf8');
  bytes += Buffer.byteLength(text);
  const t0 = performance.now();
  const found = findSecrets(text);
  ms += performance.now() - t0;
  for (const m of found) {
    const s = text.slice(m.start, m.end);
    const e = perKind.get(m.kind) ?? { count: 0, files: new Set(), samples: [] };
    e.count++;
    e.files.add(f);
    if (e.samples.length < samples)
      e.samples.push({
        file: relative(corpus, f),
        before: text.slice(Math.max(0, m.start - 30), m.start).replace(/\s+/g, ' '),
        masked: `${s.slice(0, 4)}…${s.slice(-2)} (${s.length} chars)`,
      });
    perKind.set(m.kind, e);
  }
}
const rows = [...perKind].map(([kind, e]) => ({ kind, matches: e.count, files: e.files.size, samples: e.samples }));
if (args.includes('--json')) {
  console.log(JSON.stringify({ files: all.length, bytes, ms, rows }, null, 2));
} else {
  console.log(
    `${all.length} files, ${(bytes / 1e6).toFixed(1)} MB, findSecrets ${(bytes / 1e6 / (ms / 1000)).toFixed(1)} MB/s`,
  );
  for (const r of rows) {
    console.log(`\n${r.kind}: ${r.matches} matches in ${r.files} files`);
    for (const s of r.samples) console.log(`  ${s.file}: …${s.before}[${s.masked}]`);
  }
}
