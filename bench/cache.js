// npm run bench:cache — how much of each prompt a provider's prefix cache can serve, with and without abridge's
// compaction, beside what the providers actually reported.
//
// For every ../shared/corpus transcript with usage (one row per file, then totals):
// - requests: provider requests with usage (as replaySession finds them);
// - none: no compaction by abridge (the transcript as recorded, the agent's own compactions included): the share of
//   prompt tokens byte-identical to the previous request's prefix, the prompt cost with caching at catalog prices
//   (cache read for the stable prefix, cache write for the rest) and without caching (all at the input price);
// - abridge: the same with abridge's default compaction in place of the agent's own (compact() whenever the predicted
//   prompt crosses the compact level, aiming at the target);
// - compactions: abridge compactions and what they cost in cache writes (the request after each re-writes everything
//   from the earliest changed message);
// - reported: the cache-read share the provider reported (Σ cacheRead / Σ prompt) and what that usage cost.
//
// `--json` prints the per-file figures and totals as JSON.
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prefixStability } from '../dist/analysis/index.js';
import { readSession } from '../dist/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const corpus = process.env.ABRIDGE_CORPUS ?? resolve(root, '../shared/corpus');
const json = process.argv.includes('--json');

if (!existsSync(corpus)) {
  console.error(`bench:cache needs the corpus at ${corpus} (set ABRIDGE_CORPUS)`);
  process.exit(2);
}

const files = [];
for (const folder of readdirSync(corpus, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort()) {
  for (const f of readdirSync(join(corpus, folder))
    .filter((x) => !x.startsWith('.'))
    .sort())
    files.push({ folder, path: join(corpus, folder, f) });
}

const results = [];
const skipped = [];
const t0 = performance.now();
for (const { folder, path } of files) {
  let session;
  try {
    session = await readSession(path);
  } catch (err) {
    skipped.push({
      file: `${folder}/${basename(path)}`,
      reason: (err.message ?? String(err)).split('\n')[0].replace(`${path}: `, '').slice(0, 80),
    });
    continue;
  }
  const report = await prefixStability(session);
  if (report.rows.length === 0) {
    skipped.push({ file: `${folder}/${basename(path)}`, reason: 'no usage reported' });
    continue;
  }
  const models = [...new Set(report.rows.map((r) => r.model))];
  results.push({
    file: `${folder}/${basename(path)}`,
    format: report.format,
    models,
    agentCompactions: report.agentCompactions,
    totals: report.totals,
    compactions: report.compactions,
  });
}
const seconds = (performance.now() - t0) / 1000;

// Totals over all files: token-weighted shares, summed costs.
const sum = (pick) => results.reduce((n, r) => n + (pick(r) ?? 0), 0);
const scenario = (k) => {
  const prompt = sum((r) => r.totals[k].prompt);
  const stable = sum((r) => r.totals[k].stable);
  return {
    requests: sum((r) => r.totals[k].requests),
    prompt,
    stable,
    stableShare: prompt ? stable / prompt : 0,
    cost: { cached: sum((r) => r.totals[k].cost?.cached), uncached: sum((r) => r.totals[k].cost?.uncached) },
  };
};
const reportedPrompt = sum((r) => r.totals.reported.prompt);
const reportedRead = sum((r) => r.totals.reported.cacheRead);
const totals = {
  files: results.length,
  requests: sum((r) => r.totals.none.requests),
  none: scenario('none'),
  compacted: scenario('compacted'),
  compactions: {
    count: sum((r) => r.totals.compactions.count),
    rewrittenTokens: sum((r) => r.totals.compactions.rewrittenTokens),
    writeCost: sum((r) => r.totals.compactions.writeCost),
    extraCost: sum((r) => r.totals.compactions.extraCost),
  },
  agentCompactions: sum((r) => r.agentCompactions),
  reported: {
    prompt: reportedPrompt,
    cacheRead: reportedRead,
    cacheReadShare: reportedPrompt ? reportedRead / reportedPrompt : 0,
    cost: sum((r) => r.totals.reported.cost),
  },
  unpriced: sum((r) => r.totals.unpriced),
};

// Printed without process.exit: a pipe would lose what is not flushed yet.
if (json) console.log(JSON.stringify({ corpus, seconds, files: results, skipped, totals }, null, 2));
else printText();

function printText() {
  const pct = (x) => `${(x * 100).toFixed(1)}%`;
  const usd = (x) => (x === undefined ? '—' : `$${x.toFixed(2)}`);
  const short = (f) => (f.length > 52 ? `${f.slice(0, 34)}…${f.slice(-17)}` : f);
  function printTable(head, rows, right = () => true) {
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
    const line = (r) =>
      `| ${r.map((c, i) => String(c)[i > 0 && right(i) ? 'padStart' : 'padEnd'](w[i])).join(' | ')} |`;
    console.log(line(head));
    console.log(`|${w.map((n, i) => (i > 0 && right(i) ? `${'-'.repeat(n + 1)}:` : '-'.repeat(n + 2))).join('|')}|`);
    for (const r of rows) console.log(line(r));
  }

  console.log(
    `\n## Prompt-cache prefix stability over ${results.length} corpus transcripts with usage (${seconds.toFixed(1)} s)\n`,
  );
  const head = [
    'file',
    'requests',
    'model',
    'cached (none)',
    'cost cached',
    'cost uncached',
    'cached (abridge)',
    'cost cached',
    'cost uncached',
    'compactions',
    'compaction cost',
    'agent compactions',
    'reported cache-read',
    'reported cost',
  ];
  const rows = results.map((r) => [
    short(r.file),
    r.totals.none.requests,
    r.models.length > 1 ? `${r.models[0]} +${r.models.length - 1}` : r.models[0],
    pct(r.totals.none.stableShare),
    usd(r.totals.none.cost?.cached),
    usd(r.totals.none.cost?.uncached),
    pct(r.totals.compacted.stableShare),
    usd(r.totals.compacted.cost?.cached),
    usd(r.totals.compacted.cost?.uncached),
    r.totals.compactions.count,
    r.totals.compactions.count ? usd(r.totals.compactions.writeCost) : '—',
    r.agentCompactions,
    pct(r.totals.reported.cacheReadShare),
    usd(r.totals.reported.cost),
  ]);
  rows.push([
    '**total**',
    totals.requests,
    '',
    pct(totals.none.stableShare),
    usd(totals.none.cost.cached),
    usd(totals.none.cost.uncached),
    pct(totals.compacted.stableShare),
    usd(totals.compacted.cost.cached),
    usd(totals.compacted.cost.uncached),
    totals.compactions.count,
    usd(totals.compactions.writeCost),
    totals.agentCompactions,
    pct(totals.reported.cacheReadShare),
    usd(totals.reported.cost),
  ]);
  printTable(head, rows, (i) => i !== 2);

  const all = results.flatMap((r) => r.compactions.map((c) => ({ file: r.file, ...c })));
  if (all.length) {
    console.log('\n### abridge compactions and their cache cost\n');
    printTable(
      [
        'file',
        'before request',
        'tokens before → after',
        'strategies',
        'prefix breaks at',
        'kept cached',
        'rewritten',
        'write cost',
        'extra vs none',
      ],
      all.map((c) => [
        short(c.file),
        `#${c.request} (entry ${c.entry})`,
        `${c.before.toLocaleString('en-US')} → ${c.after.toLocaleString('en-US')}`,
        c.strategies.join(','),
        c.breakAt
          ? `message ${c.breakAt.position}${c.breakAt.entry !== undefined ? ` (entry ${c.breakAt.entry})` : c.breakAt.summary ? ' (a summary)' : ''}`
          : '—',
        c.keptTokens.toLocaleString('en-US'),
        c.rewrittenTokens.toLocaleString('en-US'),
        usd(c.writeCost),
        usd(c.extraCost),
      ]),
      (i) => i !== 3 && i !== 4,
    );
  }
  if (skipped.length)
    console.log(`\nskipped ${skipped.length} files: ${skipped.map((s) => `${s.file} (${s.reason})`).join('; ')}`);
  console.log(
    '\ncached = tokens byte-identical to the previous request\'s prompt prefix (harness prefix counted as stable), at catalog prices: cache read for them, cache write for the rest; uncached = every prompt token at the input price. "none" keeps the agent\'s own compactions (what the provider received); "abridge" replaces them with abridge\'s default compaction. Not modelled: cache expiry after 5 idle minutes, breakpoint granularity, minimum cacheable length — the reported share is lower for those reasons.',
  );
  if (totals.unpriced)
    console.log(`${totals.unpriced} requests of models the catalog does not price are left out of the costs.`);
}
