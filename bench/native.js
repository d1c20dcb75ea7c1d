#!/usr/bin/env node
/**
 * What client-side, provider-native and mixed context management cost, and what they keep (`npm run bench:native`,
 * which builds first; this file runs with tsx because it starts the TypeScript loopback fake provider of
 * test/support/fake-provider.ts; abridge itself is imported from dist/).
 *
 *   tsx bench/native.js [--json] [--only substring] [--windows 64000,128000] [--max-output 8192]
 *
 * Sessions: every corpus session (../shared/corpus or $ABRIDGE_CORPUS; the claude-code, codex and pi folders) whose
 * model — the one most of its assistant messages name — is a Claude model (replayed on the Anthropic Messages path) or a
 * GPT model (replayed on the OpenAI Responses path), with at least 20 tool results in its active view; a session is run
 * at a bench window when its peak recorded prompt is above that window and its unmanaged replay (`none`) has a request
 * whose prompt + max output exceeds it (the recorded prompts also held the harness's system prompt and tools, which the
 * replay does not have).
 *
 * Replay: the session's active view is turned into its person's messages, its assistant steps (consecutive assistant
 * messages: their text and tool calls) and the recorded results of those calls. Each step is one request, sent through
 * the ContextManager and the official SDK (@anthropic-ai/sdk, openai) to the fake, whose `answer` hook returns the
 * step's recorded text and calls (a counter the bench keeps: the prompt abridge sends differs from the recorded one, so
 * the answer never depends on it); the bench then appends the recorded results of those calls (text content only).
 *
 * Policies, per session, path and window:
 *   - none:   no management (autoCompact false, no offloading, the fake's window large enough for everything): the
 *             baseline of cost; requests whose prompt + max output would have exceeded the bench window are counted;
 *   - client: native 'never' — abridge's client-side compaction (extractive summarizer: no model call, no cost);
 *   - mixed:  native 'prefer' — the provider's edits first, abridge's compaction when they are not enough;
 *   - native: native 'only' — never abridge's compaction; a ContextOverflowError or a refusal is a failure (the replay
 *             stops there: its steps not run are counted).
 * A refusal the manager can recover from (`recoverFromOverflow`, one retry) is counted as a refusal, not a failure.
 *
 * Billed: the fake's own bill of each request (its tokenizer, its simulated prompt cache); on Anthropic a compaction
 * pass (`usage.iterations`) is billed as well, at the model's input and output prices; the Responses compaction pass is
 * recorded but not billed (OpenAI does not document its billing). Cost: catalog prices with cache writes at 1.25× the
 * input price (5-minute TTL) and at 2× (1-hour TTL).
 *
 * Prediction error: |turn.pressure.predicted − billed prompt| / billed prompt (the prompt the server compacted, on a
 * request it compacted), on requests sent after an edit applied or a compaction (abridge's or the provider's).
 *
 * Retention: before the steps at 25%, 50% and 75% of the session's steps and before its last step, the prompt the model
 * actually reads (the fake's parsed request, after the provider's edits) is scored on the facts of the recorded
 * continuation from that step (bench/continuation-facts.js: the facts the next steps up to the next person's message
 * used, that were visible in the uncompacted prefix). A cut after a provider compaction is n/a: the OpenAI compaction
 * item is opaque, and the fake's Anthropic compaction summary is a scripted stub, not Anthropic's.
 */
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startFakeProvider } from '../test/support/fake-provider.ts';
import { continuationFacts, haystackOf, isPerson, messageText, present } from './continuation-facts.js';
import { corpusFiles } from './corpus-files.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CORPUS = process.env.ABRIDGE_CORPUS ?? resolve(ROOT, '..', 'shared', 'corpus');
const FOLDERS = ['claude-code', 'codex', 'pi'];
const POLICIES = ['none', 'client', 'mixed', 'native'];
const NATIVE = { client: 'never', mixed: 'prefer', native: 'only' };
const MIN_TOOL_RESULTS = 20;
const CUTS = [0.25, 0.5, 0.75];
const BIG_WINDOW = 10_000_000;

const lib = await import(pathToFileURL(join(ROOT, 'dist', 'index.js')).href);
const { anthropicParams, anthropicBetaParams } = await import(
  pathToFileURL(join(ROOT, 'dist', 'adapters', 'anthropic.js')).href
);
const { responsesParams } = await import(pathToFileURL(join(ROOT, 'dist', 'adapters', 'openai.js')).href);

function parseArgs(argv) {
  const o = { json: false, only: undefined, windows: [64_000, 128_000], maxOutput: 8192 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--json') o.json = true;
    else if (a === '--only') o.only = value();
    else if (a === '--windows') {
      o.windows = value().split(',').map(Number);
      if (o.windows.some((w) => !Number.isSafeInteger(w) || w < 16_000)) usage('--windows: integers ≥ 16000');
    } else if (a === '--max-output') {
      o.maxOutput = Number(value());
      if (!Number.isSafeInteger(o.maxOutput) || o.maxOutput < 256) usage('--max-output: an integer ≥ 256');
    } else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument: ${a}`);
  }
  return o;
}

function usage(error) {
  const text = 'usage: tsx bench/native.js [--json] [--only substring] [--windows 64000,128000] [--max-output 8192]';
  if (error) {
    console.error(`${error}\n${text}`);
    process.exit(2);
  }
  console.log(text);
  process.exit(0);
}

const opts = parseArgs(process.argv.slice(2));
// The Anthropic SDK warns on every request to a deprecated model (the corpus's claude-sonnet-4-5): once is enough.
const warn = console.warn;
const warned = new Set();
console.warn = (...args) => {
  const m = /^The model '([^']+)' is deprecated/.exec(String(args[0]));
  if (m && warned.has(m[1])) return;
  if (m) warned.add(m[1]);
  warn(...args);
};
const tty = process.stderr.isTTY;
const progress = (s) => {
  if (tty) process.stderr.write(`\r\u001b[K${s}`);
};

// ---------------------------------------------------------------------------------------------------------------------
// Sessions

const toolName = (name) =>
  String(name)
    .replace(/[^A-Za-z0-9_-]/g, '_')
    .slice(0, 64) || 'tool';

function callInput(args) {
  if (args && typeof args === 'object' && !Array.isArray(args)) return args;
  if (typeof args === 'string') {
    try {
      const v = JSON.parse(args);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v;
    } catch {}
    return { input: args };
  }
  return args === undefined || args === null ? {} : { input: args };
}

function resultText(p) {
  const text = (p.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
  return text.trim() ? text : '(no output)';
}

function userText(m) {
  const out = [];
  for (const p of m.parts) {
    if (p.type === 'text') out.push(p.text);
    else if (p.type === 'compaction' && p.marker?.summary) out.push(p.marker.summary);
  }
  return out.join('\n').trim();
}

/**
 * The replay of a session: its system text, and events in order — a person's (or harness's) message, or an assistant
 * step with its calls and their recorded results. `at` is the step's index in the view (for its continuation).
 */
function replayOf(view) {
  let k = 0;
  const system = [];
  while (k < view.length && view[k].message.role === 'system') system.push(userText(view[k++].message));
  const events = [];
  const results = new Map();
  for (const v of view)
    if (v.message.role === 'tool')
      for (const p of v.message.parts) if (p.type === 'tool-result') results.set(p.callId, p);
  for (let i = k; i < view.length; i++) {
    const m = view[i].message;
    if (m.role === 'user') {
      const text = userText(m);
      if (text) events.push({ kind: 'user', text });
    } else if (m.role === 'assistant') {
      const at = i;
      const texts = [];
      const calls = [];
      for (; i < view.length && view[i].message.role === 'assistant'; i++)
        for (const p of view[i].message.parts) {
          if (p.type === 'text' && p.text.trim()) texts.push(p.text);
          else if (p.type === 'tool-call') calls.push(p);
        }
      i--;
      if (texts.length === 0 && calls.length === 0) continue;
      events.push({
        kind: 'step',
        at,
        text: texts.join('\n\n'),
        calls: calls.map((c) => ({
          name: toolName(c.name),
          input: callInput(c.arguments),
          result: results.has(c.id) ? resultText(results.get(c.id)) : '(no result recorded)',
          isError: results.get(c.id)?.isError === true,
        })),
      });
    }
  }
  if (events[0]?.kind !== 'user') events.unshift({ kind: 'user', text: 'Continue the work.' });
  const tools = new Set();
  for (const e of events) if (e.kind === 'step') for (const c of e.calls) tools.add(c.name);
  return {
    system: system.join('\n\n').trim() || 'You are a coding agent working in a repository.',
    events,
    tools: [...tools].map((name) => ({
      name,
      description: `The ${name} tool of the recorded session.`,
      inputSchema: { type: 'object', properties: {}, additionalProperties: true },
    })),
  };
}

function sessionInfo(session, view) {
  const models = new Map();
  let peak = 0;
  let toolResults = 0;
  for (const { message: m } of view) {
    if (m.role === 'assistant') {
      if (m.model) models.set(m.model, (models.get(m.model) ?? 0) + 1);
      if (m.usage) peak = Math.max(peak, lib.promptTokens(m.usage));
    }
    for (const p of m.parts) if (p.type === 'tool-result') toolResults++;
  }
  const model = [...models].sort((a, b) => b[1] - a[1])[0]?.[0];
  const path = !model
    ? undefined
    : /claude/i.test(model)
      ? 'anthropic'
      : /gpt/i.test(model)
        ? 'openai-responses'
        : undefined;
  return { model, path, peak, toolResults, format: session.format };
}

/** Cut steps (indices among the replay's steps) and the facts of their recorded continuations. */
function cutsOf(view, replay) {
  const steps = replay.events.filter((e) => e.kind === 'step');
  if (steps.length < 4) return [];
  const idx = [...new Set([...CUTS.map((f) => Math.floor(f * steps.length)), steps.length - 1])];
  const out = [];
  for (const s of idx) {
    const at = steps[s].at;
    const continuation = [];
    for (let i = at; i < view.length; i++) {
      const m = view[i].message;
      if (isPerson(m)) break;
      if (m.role === 'assistant') continuation.push(m);
    }
    const hay = haystackOf(view.slice(0, at).map((v) => messageText(v.message)));
    const facts = continuationFacts(continuation).filter((f) => present(f, hay));
    out.push({ step: s, label: s === steps.length - 1 ? 'last' : `${Math.round((s / steps.length) * 100)}%`, facts });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// One replay

/** The text of the prompt the fake's "model" reads (after the provider's edits), as bench:continuation reads a view. */
function promptHaystack(ctx) {
  const texts = [ctx.system];
  for (const m of ctx.messages)
    for (const p of m.parts) {
      if (p.kind === 'text') texts.push(p.text);
      else if (p.kind === 'tool_call') texts.push(`${p.name} ${JSON.stringify(p.input)}`);
      else if (p.kind === 'tool_result') texts.push(p.text);
    }
  return haystackOf(texts);
}

function pausesAfterCompaction(body) {
  const edits = body?.context_management?.edits;
  return Array.isArray(edits) && edits.some((e) => e?.type === 'compact_20260112' && e.pause_after_compaction === true);
}

async function replay({ file, info, rep, cuts, policy, window, pricing }) {
  const maxOut = opts.maxOutput;
  const fakeWindow = policy === 'none' ? BIG_WINDOW : window;
  const steps = rep.events.filter((e) => e.kind === 'step');
  const cutAt = new Map(cuts.map((c) => [c.step, c]));
  let current;
  let nativeCompacted = false;
  const retention = [];
  const fake = await startFakeProvider({
    window: fakeWindow,
    maxOutputTokens: 128_000,
    script: {
      answer(ctx) {
        if (!current) return { text: 'Done.' };
        const cut = cutAt.get(current.index);
        if (cut && !current.scored) {
          current.scored = true;
          if (
            nativeCompacted ||
            ctx.messages.some((m) => m.parts.some((p) => p.kind === 'text' && /^<summary>Conversation of/.test(p.text)))
          )
            retention.push({ label: cut.label, na: true, total: cut.facts.length, kept: 0 });
          else {
            const hay = promptHaystack(ctx);
            retention.push({
              label: cut.label,
              total: cut.facts.length,
              kept: cut.facts.filter((f) => present(f, hay)).length,
            });
          }
        }
        const s = current.step;
        return {
          ...(s.text ? { text: s.text } : {}),
          ...(s.calls.length ? { toolCalls: s.calls.map((c) => ({ name: c.name, input: c.input })) } : {}),
          ...(!s.text && !s.calls.length ? { text: '…' } : {}),
        };
      },
    },
  });
  const anthropic = new Anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant-bench', maxRetries: 0 });
  const openai = new OpenAI({ baseURL: fake.v1URL, apiKey: 'sk-bench', maxRetries: 0 });
  const send = (turn) => {
    if (info.path === 'anthropic')
      return turn.betas?.length
        ? anthropic.beta.messages.create(anthropicBetaParams(turn.request, turn.betas))
        : anthropic.messages.create(anthropicParams(turn.request));
    return openai.responses.create(responsesParams(turn.request));
  };
  const cm = new lib.ContextManager({
    model: info.model,
    provider: info.path,
    contextWindow: policy === 'none' ? BIG_WINDOW : window,
    maxOutputTokens: maxOut,
    system: rep.system,
    tools: rep.tools,
    summarizer: 'extractive',
    ...(policy === 'none'
      ? { autoCompact: false, offloadResultsOver: Number.MAX_SAFE_INTEGER }
      : { native: NATIVE[policy] }),
  });
  const out = {
    file: basename(file),
    model: info.model,
    path: info.path,
    window,
    policy,
    steps: steps.length,
    stepsDone: 0,
    failures: [],
    turns: [],
    clientCompactions: 0,
    nativeCompactions: 0,
    retention,
  };
  let managed = false; // an edit applied or a compaction happened before this request
  let index = 0;
  try {
    for (const e of rep.events) {
      if (e.kind === 'user') {
        await cm.append({ role: 'user', parts: [{ type: 'text', text: e.text }] });
        continue;
      }
      current = { index, step: e };
      progress(`${out.file.slice(0, 40)} ${policy} ${window}: step ${index + 1}/${steps.length}`);
      let turn;
      let response;
      const attempt = async () => {
        turn = await cm.prepare({ maxOutputTokens: maxOut });
        if (turn.compaction) managed = true;
        const before = fake.requests.length;
        try {
          return await send(turn);
        } finally {
          const r = fake.requests[before];
          if (r) out.turns.push(turnRecord(turn, r, managed, index));
        }
      };
      try {
        response = await attempt();
      } catch (err) {
        const overflow = lib.contextOverflow(err);
        if (overflow && (await cm.recoverFromOverflow(overflow))) response = await attempt();
        else throw err;
      }
      const { message } = await cm.record(response);
      const last = out.turns[out.turns.length - 1];
      if (last.compacted) {
        nativeCompacted = true;
        out.nativeCompactions++;
      }
      if (last.applied || last.compacted) managed = true;
      const calls = message.parts.filter((p) => p.type === 'tool-call');
      if (calls.length > 0) {
        const parts = calls.map((c, k) => {
          const rec = e.calls[k];
          return {
            type: 'tool-result',
            callId: c.id,
            toolName: c.name,
            content: [{ type: 'text', text: rec ? rec.result : '(no result recorded)' }],
            isError: rec?.isError ?? false,
          };
        });
        await cm.append({ role: 'tool', parts });
      }
      out.stepsDone++;
      index++;
    }
  } catch (err) {
    const last = fake.requests[fake.requests.length - 1];
    out.failures.push({
      step: index,
      error: `${err?.constructor?.name ?? 'Error'}: ${String(err?.message ?? err).slice(0, 300)}`,
      contextManagement: last?.body?.context_management,
      promptTokens: last?.promptTokens,
      originalPromptTokens: last?.originalPromptTokens,
    });
  } finally {
    await fake.close();
  }
  out.clientCompactions = out.turns.filter((t) => t.clientCompacted).length;
  out.bill = bill(out.turns, pricing, window, maxOut);
  return out;
}

function turnRecord(turn, r, managed, step) {
  const u = r.usage;
  const paused = pausesAfterCompaction(r.body);
  const t = {
    step,
    refused: r.refused ? `${r.refused.status} ${r.refused.message.slice(0, 160)}` : undefined,
    predicted: turn.pressure.predicted,
    sentPredicted: turn.pressure.sent,
    sent: r.originalPromptTokens ?? r.promptTokens ?? 0,
    billedPrompt: u?.promptTokens ?? 0,
    input: u?.uncachedInputTokens ?? 0,
    cacheRead: u?.cacheReadTokens ?? 0,
    cacheWrite: u?.cacheWriteTokens ?? 0,
    output: u?.outputTokens ?? 0,
    applied: (r.appliedEdits?.length ?? 0) > 0,
    compacted: r.compacted === true,
    clientCompacted: turn.compaction !== undefined,
    managed,
  };
  if (r.compaction) {
    t.compactionPass = { ...r.compaction, billed: r.wire === 'anthropic' && !paused };
    // The prediction is of the prompt the provider compacts.
    t.predictedAgainst = r.compaction.inputTokens;
  } else t.predictedAgainst = t.billedPrompt;
  if (turn.native?.edits?.length) t.contextManagement = turn.native.edits;
  return t;
}

/** What a request's bill adds up, for one run (`bill`) and for runs pooled (`pool`). */
function billTotals() {
  return {
    refused: 0,
    sent: 0,
    input: 0,
    cacheRead: 0,
    cacheWrite: 0,
    output: 0,
    passIn: 0,
    passOut: 0,
    cost5m: 0,
    cost1h: 0,
    overWindow: 0,
    errors: [],
  };
}

function bill(turns, pricing, window, maxOut) {
  const b = { requests: turns.length, ...billTotals() };
  for (const t of turns) {
    if (t.refused) {
      b.refused++;
      continue;
    }
    b.sent += t.sent;
    b.input += t.input;
    b.cacheRead += t.cacheRead;
    b.cacheWrite += t.cacheWrite;
    b.output += t.output;
    if (t.billedPrompt + maxOut > window) b.overWindow++;
    const usage = { input: t.input, cacheRead: t.cacheRead, cacheWrite: t.cacheWrite, output: t.output };
    if (pricing) {
      b.cost5m += lib.usageCost(usage, pricing, { cacheTtl: '5m' });
      b.cost1h += lib.usageCost(usage, pricing, { cacheTtl: '1h' });
    }
    if (t.compactionPass) {
      b.passIn += t.compactionPass.inputTokens;
      b.passOut += t.compactionPass.outputTokens;
      if (t.compactionPass.billed && pricing) {
        const pass = {
          input: t.compactionPass.inputTokens,
          cacheRead: 0,
          cacheWrite: 0,
          output: t.compactionPass.outputTokens,
        };
        b.cost5m += lib.usageCost(pass, pricing, { cacheTtl: '5m' });
        b.cost1h += lib.usageCost(pass, pricing, { cacheTtl: '1h' });
        b.input += pass.input;
        b.output += pass.output;
      }
    }
    if (t.managed && !t.refused && t.predictedAgainst > 0)
      b.errors.push(Math.abs(t.predicted - t.predictedAgainst) / t.predictedAgainst);
  }
  return b;
}

// ---------------------------------------------------------------------------------------------------------------------
// Tables

const quantile = (xs, q) => {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * (s.length - 1) + 0.5))];
};
const int = (n) => Math.round(n).toLocaleString('en-US');
const pct = (x, d = 1) => (x === undefined ? '–' : `${(x * 100).toFixed(d)}%`);
const usd = (x) => `$${x.toFixed(2)}`;

function pool(runs) {
  const p = {
    sessions: runs.length,
    steps: 0,
    stepsDone: 0,
    failures: 0,
    requests: 0,
    ...billTotals(),
    clientCompactions: 0,
    nativeCompactions: 0,
    cleared: 0,
    ret: { cuts: 0, na: 0, total: 0, kept: 0 },
  };
  for (const r of runs) {
    p.steps += r.steps;
    p.stepsDone += r.stepsDone;
    p.failures += r.failures.length;
    p.clientCompactions += r.clientCompactions;
    p.nativeCompactions += r.nativeCompactions;
    p.cleared += r.turns.filter((t) => t.applied).length;
    for (const k of ['requests', 'refused', 'sent', 'input', 'cacheRead', 'cacheWrite', 'output', 'passIn', 'passOut'])
      p[k] += r.bill[k];
    for (const k of ['cost5m', 'cost1h', 'overWindow']) p[k] += r.bill[k];
    p.errors.push(...r.bill.errors);
    for (const c of r.retention) {
      p.ret.cuts++;
      if (c.na) p.ret.na++;
      else {
        p.ret.total += c.total;
        p.ret.kept += c.kept;
      }
    }
  }
  return p;
}

function table(title, groups) {
  const lines = [`\n## ${title}\n`];
  lines.push(
    '| window | policy | sessions | steps run | requests | refused | failures | prompt sent | input | cache read | cache write | output | compaction pass in/out | cost (5m cache) | cost (1h cache) | compactions client / provider; requests cleared | pred. error median / p90 (n) | facts kept (of; cuts; n/a) |',
  );
  lines.push('|--:|--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const [window, policy, p] of groups) {
    const note = policy === 'none' ? ` (${int(p.overWindow)} over ${int(window / 1000)}K)` : '';
    lines.push(
      `| ${int(window / 1000)}K | ${policy} | ${p.sessions} | ${int(p.stepsDone)}/${int(p.steps)} | ${int(p.requests)}${note} | ${p.refused} | ${p.failures} | ${int(p.sent)} | ${int(p.input)} | ${int(p.cacheRead)} | ${int(p.cacheWrite)} | ${int(p.output)} | ${int(p.passIn)}/${int(p.passOut)} | ${usd(p.cost5m)} | ${usd(p.cost1h)} | ${p.clientCompactions} / ${p.nativeCompactions}; ${p.cleared} | ${pct(quantile(p.errors, 0.5), 2)} / ${pct(quantile(p.errors, 0.9), 2)} (${p.errors.length}) | ${p.ret.total ? pct(p.ret.kept / p.ret.total) : '–'} (${p.ret.total}; ${p.ret.cuts}; ${p.ret.na}) |`,
    );
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------------

const catalog = new lib.ModelCatalog();
const files = corpusFiles(CORPUS, FOLDERS, opts.only);
const selected = [];
for (const file of files) {
  let session;
  try {
    session = await lib.readSession(file);
  } catch (err) {
    console.error(`skip ${basename(file)}: ${err.message}`);
    continue;
  }
  const view = lib.activeView(session);
  const info = sessionInfo(session, view);
  if (!info.path || info.toolResults < MIN_TOOL_RESULTS) continue;
  const windows = opts.windows.filter((w) => info.peak > w);
  if (windows.length === 0) continue;
  const rep = replayOf(view);
  selected.push({ file, info, rep, cuts: cutsOf(view, rep), windows, pricing: catalog.lookup(info.model)?.pricing });
}

const runs = [];
for (const s of selected) {
  // No management does not depend on the window: one run, counted against each window. A window is run when the
  // unmanaged replay exceeds it (the recorded prompts also held the harness's own system prompt and tools).
  const none = await replay({ ...s, policy: 'none', window: BIG_WINDOW });
  s.windows = s.windows.filter((w) => bill(none.turns, s.pricing, w, opts.maxOutput).overWindow > 0);
  for (const window of s.windows) {
    runs.push({ ...none, window, bill: bill(none.turns, s.pricing, window, opts.maxOutput) });
    for (const policy of POLICIES.slice(1)) runs.push(await replay({ ...s, policy, window }));
  }
}
progress('');

const groups = (filter) => {
  const out = [];
  for (const window of opts.windows)
    for (const policy of POLICIES) {
      const rs = runs.filter((r) => r.window === window && r.policy === policy && filter(r));
      if (rs.length) out.push([window, policy, pool(rs)]);
    }
  return out;
};

if (opts.json) {
  const slim = runs.map(({ turns, ...r }) => ({
    ...r,
    bill: { ...r.bill, errors: undefined },
    predictionError: {
      median: quantile(r.bill.errors, 0.5),
      p90: quantile(r.bill.errors, 0.9),
      n: r.bill.errors.length,
    },
    worstPredictions: turns
      .filter((t) => t.managed && !t.refused && t.predictedAgainst > 0)
      .map((t) => ({ ...t, error: Math.abs(t.predicted - t.predictedAgainst) / t.predictedAgainst }))
      .sort((a, b) => b.error - a.error)
      .slice(0, 3),
  }));
  console.log(
    JSON.stringify(
      {
        sessions: selected.map((s) => ({ file: basename(s.file), ...s.info, windows: s.windows })),
        maxOutput: opts.maxOutput,
        runs: slim,
      },
      null,
      1,
    ),
  );
} else {
  console.log(
    `# bench:native — ${selected.length} sessions (model Claude or GPT, ≥ ${MIN_TOOL_RESULTS} tool results; run at a window when its recorded peak prompt and its unmanaged replay, prompt + max output, exceed it), max output ${int(opts.maxOutput)}`,
  );
  for (const s of selected)
    console.log(
      `- ${basename(s.file)}: ${s.info.model} on ${s.info.path}, ${s.rep.events.filter((e) => e.kind === 'step').length} steps, ${s.info.toolResults} tool results, recorded peak ${int(s.info.peak)}; ${s.windows.length ? `windows ${s.windows.map((w) => `${w / 1000}K`).join(', ')}` : 'its replay fits every window: not run'}`,
    );
  for (const path of ['anthropic', 'openai-responses']) {
    const g = groups((r) => r.path === path);
    if (g.length) console.log(table(`${path === 'anthropic' ? 'Anthropic Messages' : 'OpenAI Responses'}`, g));
  }
  console.log(
    table(
      'Overall',
      groups(() => true),
    ),
  );
  console.log(
    '\nBilled tokens are the fake provider’s (its own tokenizer and simulated prompt cache); abridge’s summaries use the extractive summarizer (no model call, no cost). Anthropic’s compaction pass is billed (input and output at the model’s prices); the Responses compaction pass is shown, not billed. "facts kept": facts of the recorded continuation visible in the prompt the model reads, pooled over cuts (25/50/75%/last step); n/a after a provider compaction (opaque item, or the fake’s stub summary). Prediction error on requests after an edit or a compaction.',
  );
  const failures = runs.filter((r) => r.failures.length);
  if (failures.length) {
    console.log('\n## Failures\n');
    for (const r of failures)
      for (const f of r.failures)
        console.log(
          `- ${r.file} ${r.policy} ${r.window / 1000}K, step ${f.step + 1}/${r.steps}: ${f.error}; prompt ${f.promptTokens} (before edits ${f.originalPromptTokens ?? '–'}); context_management ${JSON.stringify(f.contextManagement)}`,
        );
  }
}
