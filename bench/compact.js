#!/usr/bin/env node
/**
 * Compaction benchmark (`npm run bench:compact`, which builds first; this file only uses dist/).
 *
 *   node bench/compact.js [--json] [--runs 3] [--random 10000] [--seed 1] [--no-random] [--no-rss] [--no-scaling]
 *                         [--file f.jsonl] [--cut 0.3]
 *
 * 1. Every corpus transcript (pi, claude-code, codex, swe-agent in ../shared/corpus or $ABRIDGE_CORPUS) at three
 *    budgets: target = prefix + 50% / 25% / 10% of its conversation (contextBreakdown's components: prefix = unrecorded
 *    — the system prompt and tools the provider billed that the transcript does not hold — plus the tool definitions it
 *    does hold, plus system and memory — recorded system messages and the project memory a harness injects, e.g.
 *    Codex's developer message and AGENTS.md;
 *    conversation = used − prefix), with the default chain, with the extractive summarizer alone
 *    (strategies ['summarize', 'truncate'], so that clearing does not hide tool results), and with three reference
 *    policies (bench/policies.js: tail truncation, pi-like, Claude-Code-like). Columns besides retention: reached,
 *    over budget (the larger of abridge's afterTokens and the bench's own count of the final view, scaled to the
 *    session's provider tokens, above the target), latest human instruction byte-identical in the view, and the recent
 *    tail (share of the lines of the last 10% of the conversation, by characters, kept byte-identical: of the message
 *    that crosses the 10% mark only its lines inside that 10%; the reference policies keep the prefix's recorded
 *    messages too). Per budget: the median over
 *    files of each file's median-of-`--runs` compaction time, invariant violations (reported by compact() plus any the
 *    resulting view has anew), archive violations (an original entry changed or gone), reached-target rate, and the
 *    RETENTION of the archived part measured by bench/retention.js (independent of abridge's extractor).
 * 2. The 2.4 MB pi-mono transcript: compaction time, and the peak RSS of a child process that reads and compacts it,
 *    beside one that only reads it (and one that only loads abridge), from /usr/bin/time -v when present, else the
 *    child's own process.resourceUsage().maxRSS.
 * 3. `--random` random sessions from test/support/random-session.ts (the property test's generator, transpiled
 *    with TypeScript on the fly) checked with its checkCompactionCase against dist/: cases with violations.
 *
 * `--cut f` measures each corpus session cut short instead: its entries up to the first answer without a tool call
 * (the end of a turn) at or after the fraction f of them — sessions of other sizes and shapes than the corpus holds,
 * a check that the figures are not the corpus's own.
 *
 * Prints tables; `--json` prints the figures as JSON. Exits 1 only if something fails to run, not when a target is
 * missed (targets are for people to read).
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generatePiSession } from './generate.js';
import { internal } from './internals.js';
import { claudeLikePolicy, piPolicy, tailPolicy } from './policies.js';
import {
  KINDS,
  latestInstruction,
  latestInstructionVerbatim,
  measureRetention,
  recentTailCeiling,
  recentTailVerbatim,
  recentTailExact,
} from './retention.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const INDEX = join(ROOT, 'dist', 'index.js');
const CORPUS = process.env.ABRIDGE_CORPUS ?? resolve(ROOT, '..', 'shared', 'corpus');
// Every folder: a transcript in a format abridge names but cannot read would be listed as refused (none is, since the
// Aider and DeepSeek harness readers).
const FOLDERS = ['pi', 'claude-code', 'codex', 'swe-agent', 'openhands', 'other'];
const FRACTIONS = [0.5, 0.25, 0.1];
const CHAINS = [
  { id: 'default', label: 'abridge: default chain', strategies: undefined },
  { id: 'extractive', label: 'abridge: summarize, truncate', strategies: ['summarize', 'truncate'] },
  { id: 'tail', label: 'reference: tail truncation', reference: 'tail' },
  { id: 'pi', label: 'reference: pi-like (20K + summary)', reference: 'pi' },
  { id: 'claude', label: 'reference: Claude-Code-like', reference: 'claude' },
];
const BIG = 'badlogic__pi-mono__before-compaction.jsonl';
const MB = 1024 * 1024;

function parseArgs(argv) {
  const opts = {
    json: false,
    runs: 3,
    random: 10_000,
    seed: 1,
    rss: true,
    scaling: true,
    file: join(CORPUS, 'pi', BIG),
    child: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--json') opts.json = true;
    else if (a === '--runs') opts.runs = int(a, value(), 1);
    else if (a === '--random') opts.random = int(a, value(), 0);
    else if (a === '--no-random') opts.random = 0;
    else if (a === '--seed') opts.seed = int(a, value(), -(2 ** 31));
    else if (a === '--no-rss') opts.rss = false;
    else if (a === '--no-scaling') opts.scaling = false;
    else if (a === '--file') opts.file = resolve(value());
    else if (a === '--cut') {
      opts.cut = Number(value());
      if (!(opts.cut > 0 && opts.cut < 1)) usage('--cut needs a fraction between 0 and 1');
    } else if (a === '--child')
      opts.child = value(); // internal: baseline | read | compact | compact-default
    else if (a === '--target')
      opts.target = int(a, value(), 1); // internal: the child's target
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument: ${a}`);
  }
  return opts;
}

function int(name, v, min) {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) usage(`${name}: expected an integer ≥ ${min}, got ${v}`);
  return n;
}

function usage(error) {
  const text =
    'usage: node bench/compact.js [--json] [--runs 3] [--random 10000] [--seed 1] [--no-random] [--no-rss] [--no-scaling] [--file transcript.jsonl] [--cut fraction]';
  if (error) {
    console.error(`${error}\n${text}`);
    process.exit(2);
  }
  console.log(text);
  process.exit(0);
}

const median = (xs) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const pct = (n, d) => (d === 0 ? null : (100 * n) / d);
const fmtPct = (x) => (x === null || x === undefined ? '—' : `${x.toFixed(1)}%`);
const fmtMs = (x) => (x === undefined || Number.isNaN(x) ? '—' : x < 10 ? x.toFixed(2) : x.toFixed(1));
const fmtMb = (b) => (b === undefined ? '—' : `${(b / MB).toFixed(1)} MB`);

/** abridge's public API from dist/, plus the internals the checks use, from src/ (bench/internals.js). */
async function loadLib(cut) {
  const [root, invariants, turns, family] = await Promise.all([
    import(pathToFileURL(INDEX).href),
    internal('compaction/invariants.ts'),
    internal('compaction/turns.ts'),
    internal('tokens/family.ts'),
  ]);
  return {
    ...root,
    // The corpus's sessions, cut short with --cut (generated sessions and the RSS children read whole files).
    readCorpusSession: cut
      ? async (path, options) => cutShort(await root.readSession(path, options), cut)
      : root.readSession,
    introducedViolations: invariants.introducedViolations,
    isHumanUser: turns.isHumanUser,
    unitsOf: turns.unitsOf,
    familyOf: family.familyOf,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Child processes (peak RSS)

async function child(opts) {
  const lib = await import(pathToFileURL(INDEX).href);
  const out = { mode: opts.child };
  if (opts.child !== 'baseline') {
    const session = await lib.readSession(opts.file);
    out.entries = session.entries.length;
    if (opts.child === 'compact' || opts.child === 'compact-default') {
      let target = opts.target;
      if (target === undefined) {
        const snap = lib.contextBreakdown(session);
        const { prefix, conversation } = budgetBase(snap);
        target = prefix + Math.round(conversation * 0.25);
      }
      const t0 = performance.now();
      const r = await lib.compact(session, {
        target,
        ...(opts.child === 'compact' ? { strategies: ['summarize', 'truncate'] } : {}),
      });
      out.ms = performance.now() - t0;
      out.reached = r.reachedTarget;
      out.strategies = r.strategiesRun.map((x) => x.name);
      out.afterTokens = r.afterTokens;
      out.beforeTokens = r.beforeTokens;
    }
  }
  out.maxRssBytes = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(JSON.stringify(out));
}

const TIME_BIN = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

function runChild(mode, file, target) {
  const args = [
    fileURLToPath(import.meta.url),
    '--child',
    mode,
    '--file',
    file,
    ...(target === undefined ? [] : ['--target', String(target)]),
  ];
  const r = TIME_BIN
    ? spawnSync(TIME_BIN, ['-v', process.execPath, ...args], { encoding: 'utf8' })
    : spawnSync(process.execPath, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`child ${mode} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  const res = JSON.parse(r.stdout);
  const kb = TIME_BIN ? /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr) : null;
  res.peakRssBytes = kb ? Number(kb[1]) * 1024 : res.maxRssBytes;
  res.rssSource = kb ? '/usr/bin/time -v' : 'process.resourceUsage().maxRSS';
  return res;
}

/**
 * A session cut at the end of a turn: its entries up to the first answer that calls no tool (with its usage, so that
 * the snapshot is anchored) at or after `fraction` of them. The whole session when there is none.
 */
function cutShort(session, fraction) {
  const n = session.entries.length;
  for (let k = Math.max(1, Math.ceil(n * fraction)); k < n; k++) {
    const m = session.entries[k - 1].message;
    if (m?.role === 'assistant' && m.usage && !m.parts.some((p) => p.type === 'tool-call')) {
      session.entries = session.entries.slice(0, k);
      break;
    }
  }
  return session;
}

// ---------------------------------------------------------------------------------------------------------------------
// Corpus

function corpusFiles() {
  const out = [];
  for (const folder of FOLDERS) {
    const dir = join(CORPUS, folder);
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)
      .filter((f) => !f.startsWith('.'))
      .sort())
      out.push({ folder, path: join(dir, f), name: `${folder}/${f}`, bytes: statSync(join(dir, f)).size });
  }
  return out;
}

function emptyRetention() {
  return Object.fromEntries([...KINDS, 'instructionsWhole'].map((k) => [k, { total: 0, retained: 0 }]));
}

function addRetention(into, r) {
  for (const k of Object.keys(into)) {
    into[k].total += r[k].total;
    into[k].retained += r[k].retained;
  }
}

/** Counted size of a view with the bench's own counter, and provider tokens per counted token of this session. */
function measurer(lib, view0, recorded) {
  // The session's provider family, as abridge counts it, so that both measure content alike.
  const first = view0.find((v) => v.message.role === 'assistant' && v.message.model)?.message;
  const counter = new lib.TokenCounter({ family: lib.familyOf(first?.model, first?.provider) });
  const size = (view) => view.reduce((n, v) => n + counter.message(v.message), 0);
  const counted0 = size(view0);
  return { counter, size, scale: counted0 > 0 ? recorded / counted0 : 1 };
}

/**
 * What a budget is made of: the prefix — what the provider billed that the transcript does not hold (the inferred
 * system prompt and tools), the tool definitions it does hold (a request body's `tools`, OpenHands' and the DeepSeek
 * harness's recorded tools), and the standing instructions it holds (recorded system messages and the project memory a
 * harness injects, e.g. Codex's developer message and AGENTS.md, Claude Code's CLAUDE.md) — and the conversation, the
 * rest of what the model sees. contextBreakdown's components name both. `outside` is what is sent besides the
 * messages (the unrecorded prefix and the recorded tools): the bench adds it to its count of a view's messages.
 */
function budgetBase(snap) {
  const c = snap.components;
  const standing = c.system + c.memory;
  const outside = c.unrecorded + c.tools;
  return {
    outside,
    standing,
    prefix: outside + standing,
    conversation: snap.used - outside - standing,
  };
}

/** The standing instructions of a view, as budgetBase counts them. */
const isStanding = (componentOf, v) => {
  const c = componentOf(v.message);
  return c === 'system' || c === 'memory';
};

/**
 * Whether the latest human instruction alone fits the room the budget leaves beside the prefix (`tokens` of a message,
 * in the session's provider tokens): where it does not, no policy can keep it verbatim, and the figure leaves it out.
 */
function latestFits(lib, view0, target, base, m) {
  const latest = latestInstruction(view0);
  return !latest || m.scale * m.counter.message(latest.message) <= target - base.prefix;
}

function outcome(view0, view, target, tokens, conversation0, fits = true) {
  return {
    target,
    after: tokens,
    over: tokens > target,
    retention: measureRetention(view0, view),
    latestVerbatim: latestInstructionVerbatim(view0, view),
    latestFits: fits,
    tail: recentTailExact(conversation0, view),
    tailWholeMessage: recentTailVerbatim(conversation0, view),
  };
}

async function runAbridge(lib, file, chain, target, base, opts) {
  const times = [];
  let rec;
  for (let run = 0; run < opts.runs; run++) {
    const session = await lib.readCorpusSession(file.path, file.read);
    const originals = run === 0 ? session.entries.map((e) => JSON.stringify(e)) : undefined;
    const view0 = lib.activeView(session);
    const options = { target };
    if (chain.strategies) options.strategies = chain.strategies;
    const t0 = performance.now();
    const r = await lib.compact(session, options);
    times.push(performance.now() - t0);
    if (run > 0) continue;
    const view = lib.activeView(session);
    const introduced = lib.introducedViolations(lib.checkInvariants(view0), lib.checkInvariants(view));
    let archive = 0;
    if (session.entries.length < originals.length) archive++;
    for (let i = 0; i < originals.length; i++) if (JSON.stringify(session.entries[i]) !== originals[i]) archive++;
    // Over budget by abridge's own figure or by the bench's count of the final view, whichever is larger.
    const m = measurer(lib, view0, base.recorded);
    const tokens = Math.max(r.afterTokens, Math.round(base.outside + m.scale * m.size(view)));
    rec = {
      ...outcome(view0, view, target, tokens, base.conversationOf(view0), latestFits(lib, view0, target, base, m)),
      before: r.beforeTokens,
      reported: r.afterTokens,
      reached: r.reachedTarget,
      honest: !r.reachedTarget || tokens <= target,
      // Over although what must stay verbatim fits (the prefix, system messages, the first request, the latest
      // instruction, another agent's summary, the thinking a tool loop under way needs — not the last step, which
      // may be cut short): a miss the compaction could have avoided.
      avoidable:
        tokens > target &&
        r.protectedParts.filter((p) => !/^the last (step|\d+ steps)$/.test(p.what)).reduce((n, p) => n + p.tokens, 0) <=
          target,
      violations: r.violations.length + introduced.length,
      violationKinds: [...r.violations, ...introduced].map((v) => v.kind),
      archiveViolations: archive,
      strategies: r.strategiesRun.map((s) => s.name),
      // What stays verbatim whatever the budget, besides the recent tail: the prefix, system messages, the first
      // request, the latest instruction, another agent's summary.
      headTokens: r.protectedParts
        .filter((p) => !/^the last|latest thinking|^the note/.test(p.what))
        .reduce((n, p) => n + p.tokens, 0),
    };
  }
  rec.ms = median(times);
  return rec;
}

async function runReference(lib, file, chain, target, base) {
  const session = await lib.readCorpusSession(file.path, file.read);
  const view0 = lib.activeView(session);
  const m = measurer(lib, view0, base.recorded);
  // The policies act on the conversation; the standing instructions stay, as they do for abridge.
  const conversation0 = base.conversationOf(view0);
  const inConversation = new Set(conversation0);
  const standing = view0.filter((v) => !inConversation.has(v));
  const budget = (target - base.outside) / m.scale - m.size(standing);
  const t0 = performance.now();
  const kept =
    chain.reference === 'tail'
      ? tailPolicy(conversation0, budget, m.size)
      : chain.reference === 'pi'
        ? await piPolicy(lib, m.counter, conversation0, m.size, m.scale)
        : await claudeLikePolicy(lib, m.counter, conversation0, m.size, m.scale);
  const view = [...standing, ...kept];
  const ms = performance.now() - t0;
  const tokens = Math.round(base.outside + m.scale * m.size(view));
  return {
    ...outcome(view0, view, target, tokens, conversation0, latestFits(lib, view0, target, base, m)),
    reached: tokens <= target,
    honest: true,
    violations: 0,
    violationKinds: [],
    archiveViolations: 0,
    strategies: [chain.reference],
    ms,
  };
}

async function benchCorpus(lib, opts, log) {
  const files = corpusFiles();
  const { componentOf } = await internal('budget/components.ts');
  const perFile = [];
  const refused = [];
  for (const [n, file] of files.entries()) {
    log(`  [${n + 1}/${files.length}] ${file.name}`);
    let first;
    try {
      first = await lib.readCorpusSession(file.path, file.read);
    } catch (e) {
      if (e?.code !== 'UNSUPPORTED_FORMAT') throw e;
      refused.push({ file: file.name, reason: e.message.replace(/^.*: recognized as /, '') });
      continue;
    }
    // A file of several sessions (OpenHands: one per benchmark instance): each is measured, after the first.
    const instances = !file.read && Array.isArray(first.extra?.instances) ? first.extra.instances.slice(1) : [];
    files.splice(
      n + 1,
      0,
      ...instances.map((instance) => ({ ...file, name: `${file.name}#${instance}`, read: { instance } })),
    );
    const snap = lib.contextBreakdown(first);
    const { outside, standing, prefix, conversation } = budgetBase(snap);
    const base = {
      outside,
      prefix,
      // What the messages of the view are in provider tokens (the scale of the bench's counts).
      recorded: snap.used - outside,
      conversationOf: (view) => view.filter((v) => !isStanding(componentOf, v)),
    };
    const row = {
      file: file.name,
      format: first.format,
      bytes: file.bytes,
      fixed: prefix,
      standing,
      conversation,
      runs: {},
      tailCeiling: {},
    };
    {
      const view0 = lib.activeView(first);
      const m = measurer(lib, view0, base.recorded);
      for (const fraction of FRACTIONS)
        row.tailCeiling[fraction] = recentTailCeiling(
          base.conversationOf(view0),
          Math.round(conversation * fraction),
          (message) => m.scale * m.counter.message(message),
        );
    }
    for (const chain of CHAINS) {
      for (const fraction of FRACTIONS) {
        const target = prefix + Math.round(conversation * fraction);
        row.runs[`${chain.id}@${fraction}`] = chain.reference
          ? await runReference(lib, file, chain, target, base)
          : await runAbridge(lib, file, chain, target, base, opts);
      }
    }
    {
      const view0 = lib.activeView(first);
      const m = measurer(lib, view0, base.recorded);
      row.tailCeilingProtected = {};
      for (const fraction of FRACTIONS) {
        const rec = row.runs[`default@${fraction}`];
        row.tailCeilingProtected[fraction] = recentTailCeiling(
          base.conversationOf(view0),
          rec.target - rec.headTokens,
          (message) => m.scale * m.counter.message(message),
        );
      }
    }
    perFile.push(row);
  }
  const budgets = [];
  for (const fraction of FRACTIONS) {
    for (const chain of CHAINS) {
      const recs = perFile.map((f) => f.runs[`${chain.id}@${fraction}`]);
      const retention = emptyRetention();
      for (const r of recs) addRetention(retention, r.retention);
      budgets.push({
        fraction,
        chain: chain.id,
        files: recs.length,
        medianMs: median(recs.map((r) => r.ms)),
        p90Ms: quantile(
          recs.map((r) => r.ms),
          0.9,
        ),
        maxMs: Math.max(...recs.map((r) => r.ms)),
        violations: recs.reduce((n, r) => n + r.violations, 0),
        filesWithViolations: recs.filter((r) => r.violations > 0).length,
        archiveViolations: recs.reduce((n, r) => n + r.archiveViolations, 0),
        filesWithArchiveViolations: recs.filter((r) => r.archiveViolations > 0).length,
        reached: recs.filter((r) => r.reached).length,
        over: recs.filter((r) => r.over).length,
        avoidable: recs.filter((r) => r.avoidable).length,
        dishonest: recs.filter((r) => !r.honest).length,
        latestVerbatimPct: pct(
          recs.filter((r) => r.latestFits && r.latestVerbatim).length,
          recs.filter((r) => r.latestFits).length,
        ),
        tailPct: pct(
          recs.reduce((n, r) => n + r.tail.retained, 0),
          recs.reduce((n, r) => n + r.tail.total, 0),
        ),
        tailWholeMessagePct: pct(
          recs.reduce((n, r) => n + r.tailWholeMessage.retained, 0),
          recs.reduce((n, r) => n + r.tailWholeMessage.total, 0),
        ),
        reachedPct: pct(recs.filter((r) => r.reached).length, recs.length),
        retention: Object.fromEntries(
          Object.entries(retention).map(([k, v]) => [k, { ...v, pct: pct(v.retained, v.total) }]),
        ),
      });
    }
  }
  const ceilingOf = (key) =>
    FRACTIONS.map((fraction) => {
      const retained = perFile.reduce((n, f) => n + f[key][fraction].retained, 0);
      const total = perFile.reduce((n, f) => n + f[key][fraction].total, 0);
      return { fraction, retained, total, pct: pct(retained, total) };
    });
  const tailCeiling = ceilingOf('tailCeiling');
  const tailCeilingProtected = ceilingOf('tailCeilingProtected');
  return { files: perFile, refused, budgets, tailCeiling, tailCeilingProtected };
}

// ---------------------------------------------------------------------------------------------------------------------
// Random sessions (the property test's generator)

async function loadGenerator() {
  let ts;
  try {
    ts = (await import('typescript')).default;
  } catch {
    return undefined;
  }
  const src = join(ROOT, 'test', 'support', 'random-session.ts');
  const out = ts.transpileModule(readFileSync(src, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    fileName: src,
  });
  // Inside node_modules so that its `fast-check` import resolves to the project's.
  const dir = join(ROOT, 'node_modules', '.cache', 'abridge-bench');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'random-session.mjs');
  writeFileSync(file, out.outputText);
  const gen = await import(`${pathToFileURL(file).href}?t=${Date.now()}`);
  const fc = (await import('fast-check')).default;
  return { gen, fc };
}

async function benchRandom(lib, opts, log) {
  const loaded = await loadGenerator();
  if (!loaded) return { skipped: 'typescript or fast-check not installed (devDependencies)' };
  const { gen, fc } = loaded;
  const out = {
    cases: 0,
    casesWithViolations: 0,
    violations: 0,
    casesWithProblems: 0,
    compactions: 0,
    reached: 0,
    problemKinds: {},
    examples: [],
    ms: 0,
  };
  const t0 = performance.now();
  const batch = 500;
  for (let done = 0; done < opts.random; done += batch) {
    const n = Math.min(batch, opts.random - done);
    const cases = fc.sample(gen.randomCase, { numRuns: n, seed: opts.seed + done });
    for (const c of cases) {
      const o = await gen.checkCompactionCase(lib, c);
      out.cases++;
      out.compactions += o.results.length;
      out.reached += o.results.filter((r) => r.reachedTarget).length;
      out.violations += o.violations;
      if (o.violations > 0) out.casesWithViolations++;
      if (o.problems.length > 0) {
        out.casesWithProblems++;
        for (const p of o.problems) {
          const kind = p
            .replace(/^compaction \d+: /, '')
            .replace(/\d+/g, 'N')
            .replace(/\s*[{[(][\s\S]*$/, '')
            .slice(0, 80);
          out.problemKinds[kind] = (out.problemKinds[kind] ?? 0) + 1;
        }
        if (out.examples.length < 3)
          out.examples.push({
            problems: o.problems.slice(0, 3).map((p) => p.slice(0, 400)),
            case: JSON.stringify(c).slice(0, 2000),
          });
      }
    }
    log(`  random: ${done + n}/${opts.random} (${out.casesWithProblems} with problems)`);
  }
  out.ms = performance.now() - t0;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------

/** The runs of one chain and budget summed per transcript format. */
function byFormatRows(files, key) {
  const rows = new Map();
  const pct = (r, t) => (t > 0 ? (100 * r) / t : 100);
  for (const f of files) {
    const run = f.runs[key];
    if (!run) continue;
    const row = rows.get(f.format) ?? { files: 0, over: 0, avoidable: 0, sums: {} };
    row.files++;
    if (run.over) row.over++;
    if (run.avoidable) row.avoidable++;
    for (const [k, v] of [['tail', run.tail], ...['paths', 'commands', 'errors'].map((k) => [k, run.retention[k]])]) {
      const sum = (row.sums[k] ??= { retained: 0, total: 0 });
      sum.retained += v.retained;
      sum.total += v.total;
    }
    rows.set(f.format, row);
  }
  return [...rows].map(([format, row]) => [
    format,
    { ...row, ...Object.fromEntries(Object.entries(row.sums).map(([k, v]) => [k, pct(v.retained, v.total)])) },
  ]);
}

function printReport(report) {
  const lines = [];
  const { corpus, big, random } = report;
  if (corpus.skipped) lines.push(`corpus: skipped (${corpus.skipped})`);
  else {
    const byFormat = new Map();
    for (const f of corpus.files) byFormat.set(f.format, (byFormat.get(f.format) ?? 0) + 1);
    lines.push(
      `Corpus: ${corpus.files.length} sessions read from ${new Set(corpus.files.map((f) => f.file.replace(/#.*$/, ''))).size} transcripts (${[...byFormat].map(([k, n]) => `${k} ${n}`).join(', ')})` +
        (corpus.refused.length
          ? `; ${corpus.refused.length} refused (${corpus.refused.map((r) => `${r.file}: ${r.reason}`).join('; ')})`
          : '') +
        (report.options.cut
          ? `; each cut short at the first turn end after ${report.options.cut * 100}% of its entries (--cut)`
          : ''),
    );
    const head = [
      'policy',
      'files',
      'med ms',
      'violations',
      'archive',
      'reached',
      'over',
      'paths',
      'cmds',
      'instr',
      'errors',
      'numbers',
      'instr(whole)',
      'latest',
      'tail',
    ];
    const widths = [38, 5, 7, 10, 7, 8, 6, 7, 7, 7, 7, 8, 12, 7, 7];
    const fmtRow = (cells) =>
      cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' ');
    for (const fraction of FRACTIONS) {
      lines.push(
        '',
        `Budget ${fraction * 100}%: target = prefix (system prompt and tools, recorded system messages, project memory) + ${fraction * 100}% of the conversation`,
        fmtRow(head),
      );
      for (const b of corpus.budgets.filter((x) => x.fraction === fraction)) {
        const chain = CHAINS.find((c) => c.id === b.chain).label;
        const r = b.retention;
        lines.push(
          fmtRow([
            chain,
            b.files,
            fmtMs(b.medianMs),
            `${b.violations} (${b.filesWithViolations}f)`,
            b.archiveViolations,
            fmtPct(b.reachedPct),
            CHAINS.find((c) => c.id === b.chain).reference ? b.over : `${b.over}/${b.avoidable}`,
            fmtPct(r.paths.pct),
            fmtPct(r.commands.pct),
            fmtPct(r.instructions.pct),
            fmtPct(r.errors.pct),
            fmtPct(r.numbers.pct),
            fmtPct(r.instructionsWhole.pct),
            fmtPct(b.latestVerbatimPct),
            fmtPct(b.tailPct),
          ]),
        );
      }
    }
    const ext25 = corpus.budgets.find((b) => b.fraction === 0.25 && b.chain === 'extractive').retention;
    lines.push(
      '',
      `Recent tail ceiling — the most any policy keeps when it spends the whole budget after the prefix on the last 10% and keeps nothing else (no first request, no summary): ${corpus.tailCeiling.map((c) => `${fmtPct(c.pct)} at ${c.fraction * 100}%`).join(', ')}`,
      `  … and when it also keeps what stays verbatim (system messages, first request, latest instruction, another agent's summary), still no summary: ${corpus.tailCeilingProtected.map((c) => `${fmtPct(c.pct)} at ${c.fraction * 100}%`).join(', ')}`,
      `Recent tail counting every line of the message that crosses the 10% mark (the measure of earlier waves): ${FRACTIONS.map(
        (f) => {
          const b = corpus.budgets.find((x) => x.fraction === f && x.chain === 'default');
          return `default ${fmtPct(b.tailWholeMessagePct)} at ${f * 100}%`;
        },
      ).join(', ')}`,
      `Archived items (extractive, 25%): ${KINDS.map((k) => `${k} ${ext25[k].retained}/${ext25[k].total}`).join(', ')}`,
      '',
      'Default chain by format (over budget/avoidable; recent tail, paths, commands, error lines kept):',
    );
    for (const fraction of FRACTIONS)
      for (const [format, row] of byFormatRows(corpus.files, `default@${fraction}`))
        lines.push(
          `  ${`${fraction * 100}%`.padStart(4)} ${format.padEnd(12)} ${String(row.files).padStart(3)} files  over ${row.over}/${row.avoidable}  tail ${fmtPct(row.tail)}  paths ${fmtPct(row.paths)}  cmds ${fmtPct(row.commands)}  errors ${fmtPct(row.errors)}`,
        );
  }
  if (big) {
    lines.push('', `${BIG} (${fmtMb(big.bytes)}):`);
    for (const [k, v] of Object.entries(big.times ?? {}))
      lines.push(
        `  compact ${k}: ${fmtMs(v.ms)} ms (median of ${report.options.runs}), ${v.reached ? 'reached' : 'missed'} target ${v.target} (after ${v.after})`,
      );
    if (big.rss) {
      const { baseline, read } = big.rss;
      lines.push(
        `  peak RSS (${read.rssSource}): node+abridge only ${fmtMb(baseline.peakRssBytes)}, read only ${fmtMb(read.peakRssBytes)} (+${fmtMb(read.peakRssBytes - baseline.peakRssBytes)})`,
      );
      for (const [label, c] of [
        ['extractive', big.rss.compact],
        ['default', big.rss.compactDefault],
      ]) {
        lines.push(
          `  read+compact (${label}, 25%): ${fmtMb(c.peakRssBytes)}; over read only +${fmtMb(c.peakRssBytes - read.peakRssBytes)}, over node+abridge +${fmtMb(c.peakRssBytes - baseline.peakRssBytes)} (${((c.peakRssBytes - baseline.peakRssBytes) / big.bytes).toFixed(1)}× the file); compact() ${fmtMs(c.ms)} ms cold, ran [${c.strategies.join(', ')}], ${c.beforeTokens} → ${c.afterTokens} tokens`,
        );
      }
    }
    const slow = [...(report.corpus.files ?? [])]
      .sort((a, b) => b.runs['extractive@0.25'].ms - a.runs['extractive@0.25'].ms)
      .slice(0, 3);
    if (slow.length)
      lines.push(
        `  slowest extractive @25%: ${slow.map((f) => `${f.file} (${fmtMb(f.bytes)}) ${fmtMs(f.runs['extractive@0.25'].ms)} ms [${f.runs['extractive@0.25'].strategies.join(', ') || 'nothing ran'}]`).join('; ')}`,
      );
    else if (big.rssSkipped) lines.push(`  peak RSS: skipped (${big.rssSkipped})`);
  }
  if (random.skipped) lines.push('', `random sessions: skipped (${random.skipped})`);
  else {
    lines.push(
      '',
      `Random sessions: ${random.cases.toLocaleString('en-US')} (${random.compactions.toLocaleString('en-US')} compactions, ${fmtPct(pct(random.reached, random.compactions))} reached their target) in ${(random.ms / 1000).toFixed(1)} s`,
    );
    lines.push(
      `  cases with invariant violations: ${random.casesWithViolations} / ${random.cases} (${random.violations} violations); cases with any problem: ${random.casesWithProblems}`,
    );
    for (const [k, n] of Object.entries(random.problemKinds)) lines.push(`    ${n}× ${k}`);
  }
  if (report.scaling?.sizes) {
    lines.push(
      '',
      'Compaction time against session size (generated pi sessions, default chain, 25% of the conversation):',
    );
    for (const x of report.scaling.sizes)
      lines.push(
        `  ${fmtMb(x.bytes).padStart(8)} ${String(x.entries).padStart(6)} entries: ${fmtMs(x.ms).padStart(7)} ms (median of ${x.runs}), ${fmtMs(x.ms / (x.bytes / MB))} ms/MB, ${x.before} → ${x.after} tokens (target ${x.target})`,
      );
  }
  lines.push('', 'Targets:');
  for (const t of report.targets) lines.push(`  ${t.ok === undefined ? '·' : t.ok ? '✓' : '✗'} ${t.what}: ${t.value}`);
  console.log(lines.join('\n'));
}

function targets(report) {
  const out = [];
  const { corpus, big, random } = report;
  if (!corpus.skipped) {
    const v = corpus.budgets.reduce((n, b) => n + b.violations, 0);
    const a = corpus.budgets.reduce((n, b) => n + b.archiveViolations, 0);
    out.push({ what: 'corpus invariant violations = 0', value: v, ok: v === 0 });
    out.push({ what: 'corpus archive violations (original entry changed) = 0', value: a, ok: a === 0 });
    const d25 = corpus.budgets.find((b) => b.fraction === 0.25 && b.chain === 'default');
    const d10 = corpus.budgets.find((b) => b.fraction === 0.1 && b.chain === 'default');
    const e = d25.retention;
    const dishonest = corpus.budgets
      .filter((b) => !CHAINS.find((c) => c.id === b.chain).reference)
      .reduce((n, b) => n + b.dishonest, 0);
    out.push({
      what: 'abridge: reachedTarget only when the final view fits (all budgets)',
      value: dishonest,
      ok: dishonest === 0,
    });
    out.push({
      what: 'default @25%: over budget = 0 (over / over although the protected content fits)',
      value: `${d25.over} / ${d25.avoidable}`,
      ok: d25.over === 0,
    });
    out.push({ what: 'default @25%: paths ≥ 97%', value: fmtPct(e.paths.pct), ok: e.paths.pct >= 97 });
    out.push({ what: 'default @25%: commands ≥ 95%', value: fmtPct(e.commands.pct), ok: e.commands.pct >= 95 });
    out.push({
      what: 'default @25%: user instructions ≥ 99%',
      value: fmtPct(e.instructions.pct),
      ok: e.instructions.pct >= 99,
    });
    // Withdrawn (issue 32): retention.js counts any line with an error word of any result that "reports an error" — file
    // reads and search hits included — which is what a truthful summary must not call an error.
    out.push({
      what: 'default @25%: error lines (withdrawn: counts lines a summary must not call errors)',
      value: fmtPct(e.errors.pct),
      ok: undefined,
    });
    out.push({
      what: 'default @25%: latest instruction verbatim 100% (where it fits the room)',
      value: fmtPct(d25.latestVerbatimPct),
      ok: d25.latestVerbatimPct === 100,
    });
    // The recent-tail targets are withdrawn (issue 32: a verbatim tail competes with the hand-off); shown for reading.
    out.push({
      what: 'default @25%: recent tail (withdrawn target, was ≥ 95%)',
      value: fmtPct(d25.tailPct),
      ok: undefined,
    });
    out.push({
      what: 'default @10%: latest instruction verbatim 100% (where it fits the room)',
      value: fmtPct(d10.latestVerbatimPct),
      ok: d10.latestVerbatimPct === 100,
    });
    out.push({
      what: 'default @10%: recent tail (withdrawn target, was ≥ 85%)',
      value: fmtPct(d10.tailPct),
      ok: undefined,
    });
    out.push({
      what: 'default @10%: over budget only where the protected content alone exceeds it',
      value: `${d10.over} over, ${d10.avoidable} of them avoidable`,
      ok: d10.avoidable === 0,
    });
  }
  if (!random.skipped)
    out.push({
      what: `random sessions with violations = 0 (of ${random.cases})`,
      value: random.casesWithViolations,
      ok: random.casesWithViolations === 0,
    });
  const e25 = big?.times?.['extractive@25%'];
  if (e25) {
    // A compaction in which no strategy could act times nothing worth a target: say so instead of passing it.
    const acted = e25.strategies.length > 0;
    out.push({
      what: `${BIG}: extractive compaction < 200 ms`,
      value: `${fmtMs(e25.ms)} ms${acted ? '' : ' (no strategy could act on it: nothing was compacted)'}`,
      ok: acted ? e25.ms < 200 : undefined,
    });
  }
  const ran = (report.corpus.files ?? [])
    .filter((f) => f.runs['extractive@0.25'].strategies.includes('summarize'))
    .sort((a, b) => b.bytes - a.bytes)[0];
  if (ran)
    out.push({
      what: 'largest transcript the extractive summarizer compacted (25%) < 200 ms',
      value: `${ran.file} (${fmtMb(ran.bytes)}): ${fmtMs(ran.runs['extractive@0.25'].ms)} ms`,
      ok: ran.runs['extractive@0.25'].ms < 200,
    });
  const sizes = report.scaling?.sizes;
  if (sizes?.length >= 2) {
    const [small, large] = [sizes[0], sizes[sizes.length - 1]];
    const perMb = (x) => x.ms / (x.bytes / MB);
    const ratio = perMb(large) / perMb(small);
    out.push({
      what: `compaction time grows with the session, not faster: ms per MB at ${fmtMb(large.bytes)} ≤ 2× that at ${fmtMb(small.bytes)}`,
      value: `${fmtMs(perMb(large))} vs ${fmtMs(perMb(small))} ms/MB (${ratio.toFixed(2)}×)`,
      ok: ratio <= 2,
    });
  }
  if (big?.rss) {
    for (const [label, c] of [
      ['extractive', big.rss.compact],
      ['default', big.rss.compactDefault],
    ]) {
      const inc = c.peakRssBytes - big.rss.baseline.peakRssBytes;
      out.push({
        what: `${BIG}: peak RSS (${label}) < 10× file (${fmtMb(10 * big.bytes)}) over node+abridge`,
        value: `${fmtMb(c.peakRssBytes)} total, +${fmtMb(inc)} over node+abridge, +${fmtMb(c.peakRssBytes - big.rss.read.peakRssBytes)} over read only`,
        ok: inc < 10 * big.bytes,
      });
    }
  }
  return out;
}

/**
 * Compaction time on generated pi sessions of growing size (bench/generate.js: the same bytes every run), the default
 * chain at 25% of the conversation: a step that is quadratic in the session (a search per item per rendering of the
 * summary once took 96 s at 32 MB) shows here as time per MB that grows with the size.
 */
async function benchScaling(lib, opts, log) {
  const dir = mkdtempSync(join(tmpdir(), 'abridge-bench-scaling-'));
  const sizes = [];
  try {
    for (const mb of [2, 8, 32]) {
      const path = join(dir, `pi-${mb}mb.jsonl`);
      const generated = await generatePiSession(path, mb * MB);
      const snap = lib.contextBreakdown(await lib.readSession(path));
      const { prefix, conversation } = budgetBase(snap);
      const target = prefix + Math.round(conversation * 0.25);
      const times = [];
      let r;
      const runs = Math.min(opts.runs, 3);
      for (let i = 0; i < runs; i++) {
        const session = await lib.readSession(path);
        const t0 = performance.now();
        r = await lib.compact(session, { target });
        times.push(performance.now() - t0);
      }
      log(`  ${mb} MB: ${fmtMs(median(times))} ms`);
      sizes.push({
        bytes: generated.bytes,
        entries: generated.entries,
        target,
        before: r.beforeTokens,
        after: r.afterTokens,
        runs,
        ms: median(times),
      });
      rmSync(path, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { sizes };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.child) return child(opts);
  if (!existsSync(INDEX)) {
    console.error(`${INDEX} not found: run \`npm run build\` first (npm run bench:compact does).`);
    process.exit(1);
  }
  const lib = await loadLib(opts.cut);
  const log = opts.json ? () => {} : (s) => process.stderr.write(`${s}\n`);
  const report = {
    options: { runs: opts.runs, random: opts.random, seed: opts.seed, ...(opts.cut ? { cut: opts.cut } : {}) },
    corpus: {},
    big: undefined,
    random: {},
  };
  const started = performance.now();

  if (!existsSync(CORPUS)) report.corpus = { skipped: `${CORPUS} not found (set ABRIDGE_CORPUS)` };
  else {
    log('corpus:');
    report.corpus = await benchCorpus(lib, opts, log);
    const bigRow = report.corpus.files.find((f) => basename(f.file) === basename(opts.file));
    if (bigRow) {
      report.big = { file: bigRow.file, bytes: bigRow.bytes, times: {} };
      for (const [k, v] of Object.entries(bigRow.runs)) {
        const [chain, fraction] = k.split('@');
        report.big.times[`${chain}@${Number(fraction) * 100}%`] = {
          ms: v.ms,
          reached: v.reached,
          target: v.target,
          after: v.after,
          strategies: v.strategies,
        };
      }
    }
  }
  if (existsSync(opts.file)) {
    report.big ??= { file: opts.file, bytes: statSync(opts.file).size };
    if (opts.rss) {
      log('peak RSS (child processes)…');
      // The target (25%) from the corpus run when there was one, so that the child does not also take a snapshot.
      const target = report.big.times?.['extractive@25%']?.target;
      report.big.rss = {
        baseline: runChild('baseline', opts.file),
        read: runChild('read', opts.file),
        compact: runChild('compact', opts.file, target),
        compactDefault: runChild('compact-default', opts.file, target),
      };
    } else report.big.rssSkipped = '--no-rss';
  }
  if (opts.scaling) {
    log('time against session size (generated pi sessions)…');
    report.scaling = await benchScaling(lib, opts, log);
  } else report.scaling = { skipped: '--no-scaling' };
  if (opts.random > 0) {
    log(`random sessions (${opts.random})…`);
    report.random = await benchRandom(lib, opts, log);
  } else report.random = { skipped: '--no-random' };
  report.totalSeconds = (performance.now() - started) / 1000;
  report.targets = targets(report);
  if (opts.json) console.log(JSON.stringify(report, null, 2));
  else {
    printReport(report);
    console.log(`\n(${report.totalSeconds.toFixed(1)} s)`);
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
