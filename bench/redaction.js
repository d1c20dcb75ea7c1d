#!/usr/bin/env node
/**
 * The secret detector over the shared corpus of real transcripts (../shared/corpus, or $ABRIDGE_CORPUS): matches per
 * rule, each judged against the reviewed list (bench/redaction-reviewed.json: a person read every match and said
 * whether it is a real credential or a false positive — a type name, a placeholder, a shell expansion, a commit hash,
 * a UUID…), the false-positive rate, the matches nobody reviewed yet (shown masked: the first 6 and last 3 characters,
 * and the 50 characters before), and the throughput. Run through `npm run bench:redaction` (builds first).
 *
 * The list holds no secret: a match is named by the SHA-256 of its text (16 hex digits), its kind and its file.
 *
 *   node bench/redaction.js [--json] [--write-unreviewed]
 *
 * --write-unreviewed adds the unreviewed matches to the list with verdict "unreviewed", to be judged by hand.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { findSecrets } from '../dist/index.js';

const args = process.argv.slice(2);
const here = fileURLToPath(new URL('.', import.meta.url));
const corpus = process.env.ABRIDGE_CORPUS ?? resolve(here, '../../shared/corpus');
const reviewedFile = join(here, 'redaction-reviewed.json');
const reviewed = JSON.parse(readFileSync(reviewedFile, 'utf8'));
const verdicts = new Map(reviewed.matches.map((m) => [m.hash, m]));

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

const hash = (s) => createHash('sha256').update(s).digest('hex').slice(0, 16);

const perKind = new Map();
const unreviewed = [];
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
    const h = hash(s);
    const v = verdicts.get(h);
    const verdict = v?.verdict === 'secret' || v?.verdict === 'false' ? v.verdict : 'unreviewed';
    const e = perKind.get(m.kind) ?? { matches: 0, secret: 0, false: 0, unreviewed: 0, files: new Set() };
    e.matches++;
    e[verdict]++;
    e.files.add(f);
    perKind.set(m.kind, e);
    if (verdict === 'unreviewed')
      unreviewed.push({
        hash: h,
        kind: m.kind,
        file: relative(corpus, f),
        before: text.slice(Math.max(0, m.start - 50), m.start).replace(/\s+/g, ' '),
        masked: `${s.slice(0, 6)}…${s.slice(-3)} (${s.length} chars)`,
      });
  }
}

const rows = [...perKind].map(([kind, e]) => ({
  kind,
  matches: e.matches,
  files: e.files.size,
  secret: e.secret,
  false: e.false,
  unreviewed: e.unreviewed,
}));
const total = rows.reduce(
  (a, r) => ({
    matches: a.matches + r.matches,
    secret: a.secret + r.secret,
    false: a.false + r.false,
    unreviewed: a.unreviewed + r.unreviewed,
  }),
  { matches: 0, secret: 0, false: 0, unreviewed: 0 },
);
const judged = total.secret + total.false;
const fpRate = judged === 0 ? 0 : total.false / judged;

if (args.includes('--write-unreviewed') && unreviewed.length > 0) {
  const seen = new Set(reviewed.matches.map((m) => m.hash));
  for (const u of unreviewed)
    if (!seen.has(u.hash)) {
      seen.add(u.hash);
      reviewed.matches.push({ hash: u.hash, kind: u.kind, file: u.file, verdict: 'unreviewed', why: '' });
    }
  writeFileSync(reviewedFile, `${JSON.stringify(reviewed, null, 2)}\n`);
}

if (args.includes('--json')) {
  console.log(JSON.stringify({ files: all.length, bytes, ms, rows, total, fpRate, unreviewed }, null, 2));
} else {
  console.log(
    `${all.length} files, ${(bytes / 1e6).toFixed(1)} MB, findSecrets ${(bytes / 1e6 / (ms / 1000)).toFixed(1)} MB/s`,
  );
  console.log('\nkind                       matches  files  real secret  false  unreviewed');
  for (const r of rows.sort((a, b) => b.matches - a.matches))
    console.log(
      `${r.kind.padEnd(26)} ${String(r.matches).padStart(7)} ${String(r.files).padStart(6)} ${String(r.secret).padStart(12)} ${String(r.false).padStart(6)} ${String(r.unreviewed).padStart(11)}`,
    );
  console.log(
    `${'total'.padEnd(26)} ${String(total.matches).padStart(7)} ${''.padStart(6)} ${String(total.secret).padStart(12)} ${String(total.false).padStart(6)} ${String(total.unreviewed).padStart(11)}`,
  );
  console.log(
    `\nfalse-positive rate: ${total.false} of ${judged} reviewed matches (${(fpRate * 100).toFixed(1)}%); ${total.unreviewed} not reviewed yet`,
  );
  for (const u of unreviewed) console.log(`  unreviewed ${u.kind} ${u.hash} ${u.file}: …${u.before}[${u.masked}]`);
}
