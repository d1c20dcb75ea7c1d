#!/usr/bin/env node
/**
 * What the agent can do next after compaction (`npm run bench:continuation`, which builds first; this file uses dist/
 * for abridge and bench/continuation-facts.js, which imports nothing of abridge, for the measure).
 *
 *   node bench/continuation.js [--json] [--only substring] [--fractions 0.25,0.1] [--cuts 0.5,0.75] [--by-file]
 *                              [--no-anchor] [--show file-substring:cut:fraction:policy]
 *
 * Every corpus session (../shared/corpus or $ABRIDGE_CORPUS) is cut just before a real assistant step (an assistant
 * message after a person's or a tool's) near 50% and 75% of its messages and before its last step. The prefix is
 * compacted by each policy to the same budget — the prefix's system messages plus 25% (or 10%) of the rest, in o200k
 * tokens of the messages as the Anthropic Messages encoder writes them — and each resulting view is scored on the facts
 * the recorded continuation used (bench/continuation-facts.js) and on the state probes. Policies:
 *   - abridge:     `compact()` with its default chain and the extractive summarizer, its target set so that the view
 *                  fits the bench's budget (measured again; a refusal — no view within budget — scores as empty);
 *   - tail:        the newest messages that fit (starting at a message that is not a tool result);
 *   - first+tail:  the first person's message, then the newest messages that fit;
 *   - inventory:   every path, command, person's message opening and failure line listed (at most half the budget,
 *                  the newest first), then the newest messages that fit — a list of names, which must not win.
 * The anchor: at every point where Claude Code compacted (a compact_boundary and its summary), abridge is given the
 * room Claude Code's summary takes, and both are scored on the facts of the steps after the summary (pi's own
 * compactions are scored the same way, with pi's summary and the entries pi kept).
 *
 * Prints tables (pooled over cut points, per format and overall); `--json` prints every figure.
 */
import { basename, dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import {
  CONTENT_KINDS,
  KINDS,
  continuationFacts,
  haystackOf,
  inventoryLines,
  isPerson,
  messageText,
  present,
  probesKept,
  stateProbes,
} from './continuation-facts.js';
import { corpusFiles } from './corpus-files.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CORPUS = process.env.ABRIDGE_CORPUS ?? resolve(ROOT, '..', 'shared', 'corpus');
const FOLDERS = ['pi', 'claude-code', 'codex', 'swe-agent', 'openhands', 'other'];
const POLICIES = ['abridge', 'tail', 'first+tail', 'inventory'];

function parseArgs(argv) {
  const o = { json: false, only: undefined, fractions: [0.25, 0.1], show: undefined, anchor: true, cuts: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--json') o.json = true;
    else if (a === '--only') o.only = value();
    else if (a === '--fractions') {
      o.fractions = value()
        .split(',')
        .map(Number)
        .filter((x) => x > 0 && x < 1);
      if (o.fractions.length === 0) usage('--fractions: expected fractions between 0 and 1, e.g. 0.25,0.1');
    } else if (a === '--show') o.show = value();
    else if (a === '--no-anchor') o.anchor = false;
    else if (a === '--cuts') {
      CUTS = value()
        .split(',')
        .map(Number)
        .filter((x) => x > 0 && x < 1);
      if (CUTS.length === 0) usage('--cuts: expected fractions between 0 and 1, e.g. 0.3,0.6');
    } else if (a === '--by-file') o.byFile = true;
    else if (a === '--anchor-only') o.cuts = false;
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument: ${a}`);
  }
  return o;
}

function usage(error) {
  const text =
    'usage: node bench/continuation.js [--json] [--only substring] [--fractions 0.25,0.1] [--cuts 0.5,0.75] [--no-anchor] [--anchor-only] [--by-file] [--show file:cut:fraction:policy]';
  if (error) {
    console.error(`${error}\n${text}`);
    process.exit(2);
  }
  console.log(text);
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------------------------------
// The one measure of size: o200k tokens of each message as the Anthropic encoder writes it (a view's size is the sum),
// thinking signatures aside and media at a fixed price.

const sizeCache = new WeakMap();
function messageTokens(lib, m) {
  let n = sizeCache.get(m);
  if (n !== undefined) return n;
  let body;
  try {
    body = lib.toRequest([m], 'anthropic', { model: 'bench', maxOutputTokens: 1 });
  } catch {
    body = { messages: [{ role: m.role, content: messageText(m) }] };
  }
  // Media are priced by size, not by their base64 text: a fixed 1,600 tokens each (a ~1,200×1,200 image).
  let media = 0;
  const json = JSON.stringify(body.messages, (k, v) => {
    // A thinking block's signature is opaque provider data, not prompt text.
    if (k === 'signature') return undefined;
    if (k === 'data' && typeof v === 'string' && v.length > 200) {
      media++;
      return '';
    }
    return v;
  });
  n = countTokens(JSON.stringify(body.system ?? '') + json) + 1600 * media;
  sizeCache.set(m, n);
  return n;
}
const viewTokens = (lib, view) => view.reduce((n, v) => n + messageTokens(lib, v.message), 0);

// ---------------------------------------------------------------------------------------------------------------------
// Cut points

/** A real assistant step starts here: an assistant message with text or a call, after a message that is not one. */
function stepStarts(view) {
  const out = [];
  for (let i = 1; i < view.length; i++) {
    const m = view[i].message;
    if (m.role !== 'assistant' || view[i - 1].message.role === 'assistant') continue;
    if (!m.parts.some((p) => p.type === 'text' || p.type === 'tool-call')) {
      // A response recorded block by block (Claude Code): its thinking first, then its text and calls.
      const next = view[i + 1]?.message;
      if (!(next?.role === 'assistant' && next.parts.some((p) => p.type === 'text' || p.type === 'tool-call')))
        continue;
    }
    if (view[i].entry === undefined) continue;
    out.push(i);
  }
  return out;
}

function cutPoints(view, at = CUTS) {
  const steps = stepStarts(view);
  if (steps.length === 0) return [];
  const near = (f) => steps.find((i) => i >= f * view.length) ?? steps[steps.length - 1];
  const chosen = new Map();
  for (const [label, i] of [...at.map((f) => [`${Math.round(f * 100)}%`, near(f)]), ['last', steps[steps.length - 1]]])
    if (!chosen.has(i)) chosen.set(i, label);
  return [...chosen].map(([at, label]) => ({ at, label }));
}

/** Where sessions are cut (fractions of their messages; the last step is always a cut too). */
let CUTS = [0.5, 0.75];

/** The assistant messages from `at` up to the next person's message. */
function continuation(view, at) {
  const out = [];
  for (let i = at; i < view.length; i++) {
    const m = view[i].message;
    if (isPerson(m)) break;
    if (m.role === 'assistant') out.push(m);
  }
  return out;
}

function prefixSession(session, entryIndex) {
  return { ...session, entries: session.entries.slice(0, entryIndex) };
}

// ---------------------------------------------------------------------------------------------------------------------
// Policies

/**
 * What stands before the conversation: the system messages and what the harness injected (project memory such as
 * AGENTS.md, environment context) before the first person's message. Every policy keeps it; the budget is this plus a
 * share of the rest.
 */
function leadingSystem(view) {
  let k = 0;
  while (
    k < view.length &&
    (view[k].message.role === 'system' ||
      (view[k].message.role === 'user' &&
        !isPerson(view[k].message) &&
        !view[k].message.parts.some((p) => p.type === 'compaction')))
  )
    k++;
  return view.slice(0, k);
}

/**
 * What every policy keeps: what stands before the conversation, and every system message after it — Codex restates its
 * developer instructions inside the history its compaction leaves, and sends them there.
 */
function standing(view) {
  const lead = leadingSystem(view);
  return [...lead, ...view.slice(lead.length).filter((v) => v.message.role === 'system')];
}

/** The view without what stands (kept by every policy on its own). */
function conversationOf(view, sys) {
  const kept = new Set(sys);
  return view.filter((v) => !kept.has(v));
}

/** The newest messages, from a message that is not a tool result, within `room`. */
function tailWithin(lib, view, room, from = 0) {
  let acc = 0;
  let start = view.length;
  for (let i = view.length - 1; i >= from; i--) {
    acc += messageTokens(lib, view[i].message);
    if (acc > room) break;
    if (view[i].message.role !== 'tool') start = i;
  }
  return view.slice(start);
}

function synthetic(text) {
  return { message: { role: 'user', synthetic: true, parts: [{ type: 'text', text }] } };
}

function tailPolicy(lib, view0, budget) {
  const sys = standing(view0);
  return [...sys, ...tailWithin(lib, conversationOf(view0, sys), budget - viewTokens(lib, sys))];
}

function firstTailPolicy(lib, view0, budget) {
  const sys = standing(view0);
  const rest = conversationOf(view0, sys);
  const firstAt = rest.findIndex((v) => isPerson(v.message));
  if (firstAt === -1) return tailPolicy(lib, view0, budget);
  const head = [...sys, rest[firstAt]];
  const room = budget - viewTokens(lib, head);
  if (room < 0) return tailPolicy(lib, view0, budget);
  return [...head, ...tailWithin(lib, rest, room, firstAt + 1)];
}

function inventoryPolicy(lib, view0, budget) {
  const sys = standing(view0);
  const room = budget - viewTokens(lib, sys);
  const lines = inventoryLines(view0);
  // The newest lines while the list takes at most half the room.
  let kept = lines;
  const listOf = (xs) => synthetic(`Inventory of the earlier conversation:\n${xs.map((x) => `- ${x}`).join('\n')}`);
  if (messageTokens(lib, listOf(kept).message) > room / 2) {
    let lo = 0;
    let hi = lines.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (messageTokens(lib, listOf(lines.slice(lines.length - mid)).message) <= room / 2) lo = mid;
      else hi = mid - 1;
    }
    kept = lines.slice(lines.length - lo);
  }
  const list = kept.length > 0 ? [listOf(kept)] : [];
  return [...sys, ...list, ...tailWithin(lib, conversationOf(view0, sys), room - viewTokens(lib, list))];
}

/**
 * abridge's compact() given the bench's budget. Its own counts are anchored on the provider's usage, the bench's are
 * o200k: the target in abridge's units is searched for (the largest whose view abridge says reaches it and the bench
 * measures within the budget), starting from the proportional conversion. No such target: a refusal.
 */
async function abridgePolicy(lib, session, view0, budget) {
  const clone = () => ({ ...session, entries: session.entries.slice() });
  const probe = await lib.compact(clone(), { target: Number.MAX_SAFE_INTEGER, strategies: [] });
  const fixed = probe.protectedParts.find((p) => p.what.startsWith('system prompt and tools'))?.tokens ?? 0;
  const benchTotal = viewTokens(lib, view0);
  const scale = Math.max(1e-6, (probe.beforeTokens - fixed) / Math.max(1, benchTotal));
  const t0 = performance.now();
  const run = async (target) => {
    const s = clone();
    const result = await lib.compact(s, { target });
    const view = lib.activeView(s);
    return { result, view, size: viewTokens(lib, view), target };
  };
  // Targets in abridge's units: `unreached` (abridge could not get down to it) < feasible < `over` (its view is over
  // the bench's budget). Bisect between the bounds known, from the proportional guess; keep the largest view within.
  let best;
  let last;
  let unreached = 0;
  let over = Number.POSITIVE_INFINITY;
  let target = Math.floor(fixed + budget * scale);
  let climb = 0;
  for (let attempt = 0; attempt < 12 && target > unreached && target < over; attempt++) {
    last = await run(target);
    if (process.env.CONT_DEBUG)
      console.error('attempt', target, last.result.reachedTarget, last.size, budget, last.result.gaveWay);
    if (!last.result.reachedTarget) unreached = target;
    else if (last.size > budget) over = target;
    else {
      if (!best || last.size > best.size) best = last;
      if (last.size >= budget * 0.995) break;
      unreached = target; // a larger target may keep more within the budget
    }
    const step = Math.max(1, Math.round(target * 0.005));
    // Below what abridge can reach with no bound above yet: the step doubles each time.
    if (!last.result.reachedTarget && over === Number.POSITIVE_INFINITY) climb = Math.max(climb * 2, step * 2);
    const next =
      over === Number.POSITIVE_INFINITY
        ? target + Math.max(step, climb, (budget - last.size) * scale)
        : unreached === 0
          ? target - Math.max(step, (last.size - budget) * scale * 1.1)
          : (unreached + over) / 2;
    if (over - unreached <= step) break;
    target = Math.floor(next);
  }
  const ms = performance.now() - t0;
  const chosen = best ?? last;
  return { view: best ? best.view : [], refused: !best, ms, result: chosen.result, size: chosen.size };
}

// ---------------------------------------------------------------------------------------------------------------------
// Scoring

function emptyScore() {
  const by = Object.fromEntries(KINDS.map((k) => [k, { total: 0, kept: 0 }]));
  return {
    cuts: 0,
    refused: 0,
    all: { total: 0, kept: 0 },
    content: { total: 0, kept: 0 },
    long: { total: 0, kept: 0 },
    longContent: { total: 0, kept: 0 },
    by,
    lastWrite: { total: 0, kept: 0 },
    lastFailure: { total: 0, kept: 0 },
    latest: { total: 0, kept: 0 },
    overBudget: 0,
  };
}

function addScore(into, s) {
  into.cuts += s.cuts;
  into.refused += s.refused;
  into.overBudget += s.overBudget;
  for (const k of ['all', 'content', 'long', 'longContent', 'lastWrite', 'lastFailure', 'latest']) {
    into[k].total += s[k].total;
    into[k].kept += s[k].kept;
  }
  for (const k of KINDS) {
    into.by[k].total += s.by[k].total;
    into.by[k].kept += s.by[k].kept;
  }
}

function score(facts, probes, view, extra = {}) {
  const s = emptyScore();
  s.cuts = 1;
  if (extra.refused) s.refused = 1;
  const hay = haystackOf(view.map((v) => messageText(v.message)));
  for (const f of facts) {
    const kept = present(f, hay) ? 1 : 0;
    s.all.total++;
    s.all.kept += kept;
    s.by[f.kind].total++;
    s.by[f.kind].kept += kept;
    if (CONTENT_KINDS.has(f.kind)) {
      s.content.total++;
      s.content.kept += kept;
    }
    if (f.long) {
      s.long.total++;
      s.long.kept += kept;
      if (CONTENT_KINDS.has(f.kind)) {
        s.longContent.total++;
        s.longContent.kept += kept;
      }
    }
  }
  const p = probesKept(probes, hay);
  for (const k of ['lastWrite', 'lastFailure', 'latest'])
    if (p[k] !== undefined) {
      s[k].total++;
      s[k].kept += p[k] ? 1 : 0;
    }
  return s;
}

/** The facts of a continuation visible in the uncompacted prefix, each marked long-range when not in its newest 10%. */
function visibleFacts(messages, view0) {
  const texts = view0.map((v) => messageText(v.message));
  const hay = haystackOf(texts);
  const total = texts.reduce((n, t) => n + t.length, 0);
  let acc = 0;
  const recent = [];
  for (let i = texts.length - 1; i >= 0 && acc < total * 0.1; i--) {
    const t = texts[i];
    const left = total * 0.1 - acc;
    recent.unshift(t.length > left ? t.slice(t.length - Math.ceil(left)) : t);
    acc += t.length;
  }
  const recentHay = haystackOf(recent);
  return continuationFacts(messages)
    .filter((f) => present(f, hay))
    .map((f) => ({ ...f, long: !present(f, recentHay) }));
}

// ---------------------------------------------------------------------------------------------------------------------

/** The least room (bench tokens besides the prefix) a cut is compacted into. */
const MIN_ROOM = 200;

async function runCuts(lib, files, opts, log, skipped) {
  const rows = [];
  for (const file of files) {
    let session;
    try {
      session = await lib.readSession(file);
    } catch (err) {
      log(`skip ${basename(file)}: ${err.message}`);
      continue;
    }
    const view = lib.activeView(session);
    for (const cut of cutPoints(view)) {
      const entry = view[cut.at].entry;
      const prefix = prefixSession(session, entry);
      const view0 = lib.activeView(prefix);
      if (view0.length < 2) continue;
      const facts = visibleFacts(continuation(view, cut.at), view0);
      const probes = stateProbes(view0);
      const total = viewTokens(lib, view0);
      const sys = viewTokens(lib, standing(view0));
      for (const f of opts.fractions) {
        const budget = Math.floor(sys + f * (total - sys));
        // A room that holds no step and no summary is not a compaction anyone asks for: counted apart, not scored.
        if (f * (total - sys) < MIN_ROOM) {
          skipped.push({ file: basename(file), cut: cut.label, fraction: f, room: Math.floor(f * (total - sys)) });
          continue;
        }
        const row = { file: basename(file), format: session.format, cut: cut.label, fraction: f, budget, scores: {} };
        // The latest instruction as a probe only where it fits the room at all — with a tenth to spare: a policy that
        // counts with the provider's tokenizer may find one message that much larger than o200k does.
        const latestMessage = [...view0].reverse().find((v) => isPerson(v.message));
        const probesHere =
          latestMessage && messageTokens(lib, latestMessage.message) > 0.9 * (budget - sys)
            ? { ...probes, latest: undefined }
            : probes;
        if (probesHere !== probes) row.latestTooLarge = true;
        for (const policy of POLICIES) {
          let view1;
          let extra = {};
          if (policy === 'abridge') {
            const r = await abridgePolicy(lib, prefix, view0, budget);
            view1 = r.view;
            extra = { refused: r.refused };
            row.abridgeMs = r.ms;
            row.abridgeSize = r.size;
            row.strategies = r.result.strategiesRun.map((x) => x.name);
          } else if (policy === 'tail') view1 = tailPolicy(lib, view0, budget);
          else if (policy === 'first+tail') view1 = firstTailPolicy(lib, view0, budget);
          else view1 = inventoryPolicy(lib, view0, budget);
          const s = score(facts, probesHere, view1, extra);
          if (!extra.refused && viewTokens(lib, view1) > budget) s.overBudget = 1;
          row.scores[policy] = s;
          if (opts.show && matchesShow(opts.show, row, policy)) show(view1, facts, probes, row, policy);
        }
        rows.push(row);
        log(
          `${basename(file).slice(0, 48).padEnd(48)} ${cut.label.padEnd(4)} ${String(f).padEnd(4)} facts ${String(facts.length).padStart(3)}  ${POLICIES.map((p) => `${p} ${pctOf(row.scores[p].all)}`).join('  ')}`,
        );
      }
    }
  }
  return rows;
}

function matchesShow(spec, row, policy) {
  const [file, cut, fraction, pol] = spec.split(':');
  return (
    row.file.includes(file) &&
    (!cut || cut === row.cut) &&
    (!fraction || Number(fraction) === row.fraction) &&
    (!pol || pol === policy)
  );
}

function show(view, facts, probes, row, policy) {
  const hay = haystackOf(view.map((v) => messageText(v.message)));
  console.log(`\n===== ${row.file} ${row.cut} ${row.fraction} ${policy} (budget ${row.budget}) =====`);
  for (const v of view) {
    const t = messageText(v.message);
    console.log(`--- ${v.message.role}${v.message.synthetic ? ' (synthetic)' : ''}: ${t.length} chars`);
    console.log(t.length > 6000 ? `${t.slice(0, 3000)}\n[…]\n${t.slice(-2000)}` : t);
  }
  console.log('--- facts (+ kept, - lost; L long-range)');
  for (const f of facts) console.log(`${present(f, hay) ? '+' : '-'}${f.long ? 'L' : ' '} ${f.kind}: ${f.value}`);
  console.log('--- probes', JSON.stringify(probes), JSON.stringify(probesKept(probes, hay)));
}

/** Claude Code's (and pi's) own compactions: the same room for abridge, scored on the steps after the summary. */
async function runAnchors(lib, files, log) {
  const rows = [];
  for (const file of files) {
    let session;
    try {
      session = await lib.readSession(file);
    } catch {
      continue;
    }
    for (const e of session.entries) {
      const marker = e.compaction;
      if (!marker || (marker.source !== 'claude-code' && marker.source !== 'pi')) continue;
      const upTo = (n) => lib.activeView({ ...session, entries: session.entries.slice(0, n) });
      // Claude Code: the boundary, then the summary message; pi: the compaction entry is the summary.
      let summaryIndex = e.index;
      if (marker.source === 'claude-code') {
        const next = session.entries.find(
          (x) => x.index > e.index && x.message?.parts.some((p) => p.type === 'compaction' && p.marker === marker),
        );
        if (!next) continue;
        summaryIndex = next.index;
      }
      const agentView = upTo(summaryIndex + 1);
      const prefix = prefixSession(session, e.index);
      const view0 = lib.activeView(prefix);
      // What follows the summary in the whole session, up to the next person's message.
      const full = lib.activeView(session);
      const at = full.findIndex((v) => v.entry !== undefined && v.entry > summaryIndex);
      if (at === -1) continue;
      const facts = visibleFacts(continuation(full, at), view0);
      const probes = stateProbes(view0);
      const sys = viewTokens(lib, standing(view0));
      const room = viewTokens(lib, agentView) - viewTokens(lib, standing(agentView));
      const budget = sys + room;
      const r = await abridgePolicy(lib, prefix, view0, budget);
      const row = {
        file: basename(file),
        agent: marker.source,
        entry: e.index,
        room,
        facts: facts.length,
        agentScore: score(facts, probes, agentView),
        abridgeScore: score(facts, probes, r.view, { refused: r.refused }),
        tailScore: score(facts, probes, tailPolicy(lib, view0, budget)),
      };
      rows.push(row);
      log(
        `anchor ${row.file.slice(0, 48)} ${row.agent} entry ${row.entry}: room ${room}, facts ${facts.length}: ${row.agent} ${row.agentScore.all.kept}, abridge ${row.abridgeScore.all.kept}${r.refused ? ' (refused)' : ''}, tail ${row.tailScore.all.kept}`,
      );
    }
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------------------------
// Report

const pct = (x) => (x.total === 0 ? null : (100 * x.kept) / x.total);
const pctOf = (x) => (x.total === 0 ? '  —  ' : `${pct(x).toFixed(1)}%`.padStart(6));
const ratioOf = (x) => `${x.kept}/${x.total}`;

function pooled(rows, fraction, filter = () => true) {
  const out = Object.fromEntries(POLICIES.map((p) => [p, emptyScore()]));
  for (const r of rows) {
    if (r.fraction !== fraction || !filter(r)) continue;
    for (const p of POLICIES) addScore(out[p], r.scores[p]);
  }
  return out;
}

function table(title, groups) {
  const cols = [
    ['facts', (s) => pctOf(s.all)],
    ['content', (s) => pctOf(s.content)],
    ['long', (s) => pctOf(s.long)],
    ['long content', (s) => pctOf(s.longContent)],
    ['paths', (s) => pctOf(s.by.path)],
    ['commands', (s) => pctOf(s.by.command)],
    ['last edit line', (s) => ratioOf(s.lastWrite)],
    ['last failure', (s) => ratioOf(s.lastFailure)],
    ['latest instr.', (s) => ratioOf(s.latest)],
    ['refused', (s) => `${s.refused}/${s.cuts}`],
  ];
  console.log(`\n${title}`);
  console.log(`${'group'.padEnd(14)} ${'policy'.padEnd(11)} ${cols.map(([h]) => h.padStart(9)).join(' ')}`);
  for (const [name, byPolicy] of groups) {
    for (const p of POLICIES) {
      const s = byPolicy[p];
      if (s.cuts === 0) continue;
      console.log(`${name.padEnd(14)} ${p.padEnd(11)} ${cols.map(([, f]) => String(f(s)).padStart(9)).join(' ')}`);
    }
  }
}

function report(rows, anchors, opts, skipped) {
  const formats = [...new Set(rows.map((r) => r.format))].sort();
  for (const f of opts.fractions) {
    const groups = [['all', pooled(rows, f)], ...formats.map((fmt) => [fmt, pooled(rows, f, (r) => r.format === fmt)])];
    const cuts = rows.filter((r) => r.fraction === f);
    table(
      `Continuation at ${f * 100}% of the conversation — ${cuts.length} cut points of ${new Set(cuts.map((r) => r.file)).size} sessions (facts the next steps used, pooled; probes kept/total; a refusal scores as an empty view)`,
      groups,
    );
    const produced = (r) => r.scores.abridge.refused === 0;
    table(`The same, on the ${cuts.filter(produced).length} cut points where abridge produced a view`, [
      ['all', pooled(rows, f, produced)],
    ]);
    if (opts.byFile) {
      const files = [...new Set(cuts.map((r) => r.file))];
      table(
        'By session',
        files.map((file) => [file.slice(0, 14), pooled(rows, f, (r) => r.file === file)]),
      );
    }
    const tooSmall = skipped.filter((x) => x.fraction === f).length;
    const tooLarge = cuts.filter((r) => r.latestTooLarge).length;
    console.log(
      `not scored: ${tooSmall} cut points whose room is under ${MIN_ROOM} tokens; the latest-instruction probe left out at ${tooLarge} where that message alone takes more than 90% of the room`,
    );
    const ms = cuts.map((r) => r.abridgeMs).sort((a, b) => a - b);
    if (ms.length)
      console.log(
        `abridge compaction time per cut (all attempts): median ${ms[Math.floor(ms.length / 2)].toFixed(0)} ms`,
      );
  }
  if (anchors.length > 0) {
    console.log("\nAnchor: the agent's own summary against abridge at the same room (facts of the steps after it)");
    console.log(
      `${'session'.padEnd(50)} ${'agent'.padEnd(12)} ${'room'.padStart(6)} ${'facts'.padStart(5)} ${'agent'.padStart(6)} ${'abridge'.padStart(7)} ${'tail'.padStart(5)}`,
    );
    const sum = { agent: 0, abridge: 0, tail: 0, facts: 0 };
    for (const a of anchors) {
      console.log(
        `${a.file.slice(0, 50).padEnd(50)} ${a.agent.padEnd(12)} ${String(a.room).padStart(6)} ${String(a.facts).padStart(5)} ${String(a.agentScore.all.kept).padStart(6)} ${String(a.abridgeScore.all.kept).padStart(7)} ${String(a.tailScore.all.kept).padStart(5)}`,
      );
      sum.agent += a.agentScore.all.kept;
      sum.abridge += a.abridgeScore.all.kept;
      sum.tail += a.tailScore.all.kept;
      sum.facts += a.facts;
    }
    console.log(
      `${'all'.padEnd(50)} ${''.padEnd(12)} ${''.padStart(6)} ${String(sum.facts).padStart(5)} ${String(sum.agent).padStart(6)} ${String(sum.abridge).padStart(7)} ${String(sum.tail).padStart(5)}   abridge/agent ${sum.agent ? ((100 * sum.abridge) / sum.agent).toFixed(0) : '—'}%`,
    );
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const lib = await import(pathToFileURL(join(ROOT, 'dist', 'index.js')).href);
  const files = corpusFiles(CORPUS, FOLDERS, opts.only);
  if (files.length === 0) {
    console.error(`no corpus transcripts under ${CORPUS} (set ABRIDGE_CORPUS)`);
    process.exit(1);
  }
  const log = opts.json || opts.show ? () => {} : (s) => process.stderr.write(`${s}\n`);
  const skipped = [];
  const rows = opts.cuts ? await runCuts(lib, files, opts, log, skipped) : [];
  const anchors = opts.anchor ? await runAnchors(lib, files, log) : [];
  if (opts.show) return;
  if (opts.json) {
    console.log(JSON.stringify({ rows, anchors, skipped }, null, 1));
    return;
  }
  report(rows, anchors, opts, skipped);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
