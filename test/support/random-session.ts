/**
 * Synthetic pi sessions for the compaction tests and `bench/compact.js`: a small builder of pi JSONL transcripts, a
 * fast-check generator of random sessions and compaction settings, and `checkCompactionCase`, the checks every random
 * compaction must pass.
 *
 * Only `fast-check` is imported at run time (everything from abridge comes in through the `lib` argument), so that the
 * bench can transpile this one file with TypeScript and run it against the built `dist/`.
 */
import fc from 'fast-check';
import type * as Abridge from '../../src/index.js';
import type * as Invariants from '../../src/compaction/invariants.js';
import type * as Turns from '../../src/compaction/turns.js';

export const TIMESTAMP = '2026-01-01T00:00:00.000Z';
export const MODEL = 'claude-sonnet-4-5';

export interface CallSpec {
  name: string;
  args: unknown;
  id?: string;
}

export interface StepSpec {
  text?: string;
  thinking?: string;
  calls?: (CallSpec & { result?: string | null; isError?: boolean })[];
  /** Results in this order of the calls (indexes); default: call order. */
  resultOrder?: number[];
  /** Each call in an assistant message of its own, the results after them all (how Codex records parallel calls). */
  split?: boolean;
  usage?: { input: number; output: number; cacheRead: number; cacheWrite: number };
}

/** Builds a pi v3 transcript (a tree-shaped, linear branch) record by record. */
export class PiTranscript {
  readonly records: Record<string, unknown>[];
  private last: string | null = null;
  private n = 0;
  private calls = 0;

  constructor(readonly sessionId = 'sess-test') {
    this.records = [{ type: 'session', version: 3, id: sessionId, timestamp: TIMESTAMP, cwd: '/repo' }];
  }

  private add(r: Record<string, unknown>): this {
    const id = `e${String(this.n++).padStart(4, '0')}`;
    this.records.push({ ...r, id, parentId: this.last, timestamp: TIMESTAMP });
    this.last = id;
    return this;
  }

  user(text: string): this {
    return this.add({ type: 'message', message: { role: 'user', content: text, timestamp: this.n } });
  }

  /** A command a person ran with `!` (pi `bashExecution`): shown to the model as a user message with its output. */
  bash(command: string, output: string, exitCode = 0): this {
    return this.add({
      type: 'message',
      message: {
        role: 'bashExecution',
        command,
        output,
        exitCode,
        cancelled: false,
        truncated: false,
        timestamp: this.n,
      },
    });
  }

  /** A message the harness injected (pi `custom_message`): a synthetic user message. */
  synthetic(text: string): this {
    return this.add({ type: 'custom_message', customType: 'reminder', content: text, display: false });
  }

  /** An assistant message; returns the ids of its tool calls. */
  assistant(step: Omit<StepSpec, 'resultOrder'>): string[] {
    const content: unknown[] = [];
    if (step.thinking !== undefined)
      content.push({ type: 'thinking', thinking: step.thinking, thinkingSignature: `sig-${this.n}` });
    if (step.text !== undefined) content.push({ type: 'text', text: step.text });
    const ids: string[] = [];
    for (const c of step.calls ?? []) {
      const id = c.id ?? `call_${this.calls++}`;
      ids.push(id);
      content.push({ type: 'toolCall', id, name: c.name, arguments: c.args });
    }
    const message: Record<string, unknown> = {
      role: 'assistant',
      content,
      api: 'anthropic-messages',
      provider: 'anthropic',
      model: MODEL,
      stopReason: ids.length ? 'toolUse' : 'stop',
      timestamp: this.n,
    };
    if (step.usage)
      message.usage = {
        ...step.usage,
        totalTokens: step.usage.input + step.usage.output + step.usage.cacheRead + step.usage.cacheWrite,
      };
    this.add({ type: 'message', message });
    return ids;
  }

  result(callId: string, toolName: string, text: string, isError = false): this {
    return this.add({
      type: 'message',
      message: {
        role: 'toolResult',
        toolCallId: callId,
        toolName,
        content: [{ type: 'text', text }],
        isError,
        timestamp: this.n,
      },
    });
  }

  /** An assistant message and the results of its calls (a call whose result is null gets none). */
  step(step: StepSpec): string[] {
    const calls = step.calls ?? [];
    const ids =
      step.split && calls.length > 1
        ? calls.flatMap((c, i) =>
            this.assistant(
              i === 0 ? { ...step, calls: [c] } : { calls: [c], ...(step.usage ? { usage: step.usage } : {}) },
            ),
          )
        : this.assistant(step);
    const order = step.resultOrder ?? calls.map((_, i) => i);
    for (const i of order) {
      const c = calls[i];
      if (!c || c.result === null) continue;
      this.result(ids[i]!, c.name, c.result ?? 'ok', c.isError ?? false);
    }
    return ids;
  }

  jsonl(): string {
    return `${this.records.map((r) => JSON.stringify(r)).join('\n')}\n`;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Deterministic text

/** mulberry32: a tiny seeded PRNG, so that large texts come from a seed instead of from fast-check. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'the',
  'parser',
  'returns',
  'null',
  'when',
  'config',
  'is',
  'missing',
  'cache',
  'token',
  'budget',
  'handler',
  'request',
  'fails',
  'retry',
  'value',
  'index',
  'module',
  'export',
  'default',
  'async',
  'await',
  'result',
  'stream',
  'buffer',
  'offset',
  'length',
  'session',
  'entry',
  'branch',
];
const DIRS = ['src', 'src/lib', 'src/core', 'test', 'packages/cli/src', 'docs'];
const NAMES = ['index', 'parser', 'config', 'server', 'utils', 'cache', 'budget', 'store', 'main', 'reader'];
const EXTS = ['ts', 'js', 'py', 'md', 'json', 'rs'];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

export function randomPath(r: () => number): string {
  return `${pick(r, DIRS)}/${pick(r, NAMES)}${Math.floor(r() * 20)}.${pick(r, EXTS)}`;
}

export function randomSentence(r: () => number, words = 6 + Math.floor(r() * 10)): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    const x = r();
    out.push(x < 0.08 ? randomPath(r) : x < 0.14 ? String(Math.floor(r() * 5000)) : pick(r, WORDS));
  }
  return `${out.join(' ')}.`;
}

/** About `chars` characters of tool output: lines of code-ish text, or one long minified line. */
export function randomOutput(seed: number, chars: number, oneLine = false): string {
  const r = prng(seed);
  const lines: string[] = [];
  let n = 0;
  while (n < chars) {
    const line =
      r() < 0.05
        ? `Error: ${pick(r, WORDS)} ${pick(r, WORDS)} failed at ${randomPath(r)}:${Math.floor(r() * 400)}`
        : randomSentence(r, 3 + Math.floor(r() * 12));
    lines.push(line);
    n += line.length + 1;
  }
  const text = lines.join(oneLine ? ' ' : '\n');
  return text.slice(0, Math.max(chars, 0));
}

// ---------------------------------------------------------------------------------------------------------------------
// Random sessions

export type ResultSpec = { seed: number; chars: number; oneLine: boolean; isError: boolean } | null;

export interface CallGen {
  tool: 'read' | 'bash' | 'edit' | 'write' | 'grep' | 'ls';
  seed: number;
  result: ResultSpec;
}

export type EventSpec =
  | { kind: 'user'; seed: number; instruction: boolean }
  | { kind: 'synthetic'; seed: number }
  /** A command the person ran through the agent (pi's `!cmd`): its output shown as a user message. */
  | { kind: 'bash'; seed: number; chars: number }
  | {
      kind: 'step';
      seed: number;
      text: boolean;
      /** Characters of a long answer instead of a sentence (0: a sentence). */
      textChars: number;
      thinking: boolean;
      calls: CallGen[];
      shuffleResults: boolean;
      /** Parallel calls recorded one assistant message each (Codex), their results after them all. */
      split: boolean;
      usage: number | null;
    };

export interface SessionSpec {
  leadingSynthetic: boolean;
  taskSeed: number;
  events: EventSpec[];
}

const size = fc.oneof(
  { weight: 10, arbitrary: fc.integer({ min: 0, max: 400 }) },
  { weight: 6, arbitrary: fc.integer({ min: 400, max: 6000 }) },
  { weight: 2, arbitrary: fc.integer({ min: 6000, max: 40_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 100_000, max: 300_000 }) },
);

const resultSpec: fc.Arbitrary<ResultSpec> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.record({
      seed: fc.integer(),
      chars: size,
      oneLine: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      isError: fc.constant(false),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      seed: fc.integer(),
      chars: fc.integer({ min: 20, max: 3000 }),
      oneLine: fc.constant(false),
      isError: fc.constant(true),
    }),
  },
  { weight: 1, arbitrary: fc.constant(null) }, // an orphan call: no result in the input
);

const callGen: fc.Arbitrary<CallGen> = fc.record({
  tool: fc.constantFrom('read', 'bash', 'edit', 'write', 'grep', 'ls'),
  seed: fc.integer(),
  result: resultSpec,
});

const event: fc.Arbitrary<EventSpec> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('user' as const), seed: fc.integer(), instruction: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('synthetic' as const), seed: fc.integer() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('bash' as const), seed: fc.integer(), chars: size }),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('step' as const),
      seed: fc.integer(),
      text: fc.boolean(),
      textChars: fc.oneof(
        { weight: 8, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 500, max: 20_000 }) },
      ),
      thinking: fc.boolean(),
      calls: fc.oneof(
        { weight: 1, arbitrary: fc.constant([] as CallGen[]) },
        { weight: 5, arbitrary: fc.array(callGen, { minLength: 1, maxLength: 1 }) },
        { weight: 2, arbitrary: fc.array(callGen, { minLength: 2, maxLength: 3 }) },
      ),
      shuffleResults: fc.boolean(),
      split: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      // Now and then a provider usage report (any size: the prediction anchors on it, however far from the content).
      usage: fc.oneof(
        { weight: 15, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.integer({ min: 1000, max: 200_000 }) },
      ),
    }),
  },
);

export const sessionSpec: fc.Arbitrary<SessionSpec> = fc.record({
  leadingSynthetic: fc.boolean(),
  taskSeed: fc.integer(),
  events: fc.array(event, { minLength: 0, maxLength: 40 }),
});

function callArgs(tool: CallGen['tool'], r: () => number): unknown {
  switch (tool) {
    case 'read':
      return { path: randomPath(r) };
    case 'bash':
      return {
        command: `${pick(r, ['npm test --', 'grep -rn', 'cat', 'node scripts/run.js', 'git diff --stat', 'ls -la'])} ${randomPath(r)}${r() < 0.3 ? ` && echo ${Math.floor(r() * 100)}` : ''}`,
      };
    case 'edit':
      return { path: randomPath(r), oldText: randomSentence(r), newText: randomSentence(r) };
    case 'write':
      return { path: randomPath(r), content: randomOutput(Math.floor(r() * 1e9), Math.floor(r() * 2000)) };
    case 'grep':
      return { pattern: pick(r, WORDS), path: pick(r, DIRS) };
    case 'ls':
      return { path: pick(r, DIRS) };
  }
}

/** The pi JSONL of a random session. */
export function sessionJsonl(spec: SessionSpec): string {
  const t = new PiTranscript(`sess-${spec.taskSeed >>> 0}`);
  if (spec.leadingSynthetic) t.synthetic('<system-reminder>The repository uses pnpm.</system-reminder>');
  const rt = prng(spec.taskSeed);
  t.user(
    `Task: fix the failing ${pick(rt, WORDS)} in ${randomPath(rt)}. Never change the public API. ${randomSentence(rt)}`,
  );
  for (const e of spec.events) {
    const r = prng(e.seed);
    if (e.kind === 'user')
      t.user(
        e.instruction ? `Please make sure to ${randomSentence(r)} Do not edit ${randomPath(r)}.` : randomSentence(r),
      );
    else if (e.kind === 'synthetic') t.synthetic(`[hook] ${randomSentence(r)}`);
    else if (e.kind === 'bash') t.bash(`ls ${randomPath(r)}`, randomOutput(e.seed, e.chars));
    else {
      const calls = e.calls.map((c) => {
        const cr = prng(c.seed);
        const result =
          c.result === null
            ? null
            : c.result.isError
              ? `Error: ${randomOutput(c.result.seed, c.result.chars)}`
              : randomOutput(c.result.seed, c.result.chars, c.result.oneLine);
        return { name: c.tool, args: callArgs(c.tool, cr), result, isError: c.result?.isError ?? false };
      });
      const order = calls.map((_, i) => i);
      if (e.shuffleResults) order.reverse();
      const step: StepSpec = { calls, resultOrder: order, split: e.split };
      if (e.thinking) step.thinking = randomSentence(r);
      if (e.textChars > 0) step.text = randomOutput(e.seed, e.textChars);
      else if (e.text || calls.length === 0) step.text = randomSentence(r);
      if (e.usage !== null) step.usage = { input: 10, output: 200, cacheRead: e.usage, cacheWrite: 100 };
      t.step(step);
    }
  }
  return t.jsonl();
}

// ---------------------------------------------------------------------------------------------------------------------
// Random compactions

type StrategyName = Abridge.StrategyName;
const ALL_STRATEGIES: StrategyName[] = [
  'clear-tool-results',
  'offload',
  'head-tail',
  'stub-inputs',
  'drop-thinking',
  'summarize',
  'truncate',
];

export interface CompactionSpec {
  /** Target as a percentage of the context before (5–100). */
  targetPercent: number;
  strategies: StrategyName[] | undefined;
  keepLastSteps: number | undefined;
  minKeepLastSteps: number | undefined;
  prefixTokens: number | undefined;
  summarizer: 'extractive' | 'throws' | 'empty';
  clearing: { keep: number; clearAtLeast: number; excludeTools: string[]; clearToolInputs: boolean } | undefined;
  offload: { thresholdBytes: number; previewChars: number } | undefined;
  headTail: { thresholdTokens: number; keepTokens: number } | undefined;
  summarize: { maxSummaryTokens: number; minSummaryTokens: number; ratio: number; maxRoomShare: number } | undefined;
  stubInputs: { thresholdBytes: number } | undefined;
  keepRecentTokens: number | undefined;
  restoreRecent: boolean | undefined;
}

export const compactionSpec: fc.Arbitrary<CompactionSpec> = fc.record({
  targetPercent: fc.integer({ min: 5, max: 100 }),
  strategies: fc.option(fc.oneof(fc.subarray(ALL_STRATEGIES), fc.shuffledSubarray(ALL_STRATEGIES, { minLength: 1 })), {
    nil: undefined,
    freq: 2,
  }),
  keepLastSteps: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
  minKeepLastSteps: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
  // Mostly none: a pi session's default prefix (2,500) would make most targets of these small sessions unreachable.
  prefixTokens: fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 5000 }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  ),
  summarizer: fc.oneof(
    { weight: 8, arbitrary: fc.constant('extractive' as const) },
    { weight: 1, arbitrary: fc.constantFrom('throws' as const, 'empty' as const) },
  ),
  clearing: fc.option(
    fc.record({
      keep: fc.integer({ min: 0, max: 6 }),
      clearAtLeast: fc.integer({ min: 0, max: 5000 }),
      excludeTools: fc.subarray(['read', 'bash', 'edit', 'write', 'grep', 'ls']),
      clearToolInputs: fc.boolean(),
    }),
    { nil: undefined },
  ),
  offload: fc.option(
    fc.record({ thresholdBytes: fc.integer({ min: 64, max: 8192 }), previewChars: fc.integer({ min: 0, max: 400 }) }),
    { nil: undefined },
  ),
  headTail: fc.option(
    fc.record({ thresholdTokens: fc.integer({ min: 20, max: 3000 }), keepTokens: fc.integer({ min: 10, max: 1000 }) }),
    { nil: undefined },
  ),
  summarize: fc.option(
    fc.record({
      maxSummaryTokens: fc.integer({ min: 50, max: 8000 }),
      minSummaryTokens: fc.integer({ min: 0, max: 800 }),
      ratio: fc.double({ min: 0, max: 1, noNaN: true }),
      maxRoomShare: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
    { nil: undefined },
  ),
  stubInputs: fc.option(fc.record({ thresholdBytes: fc.integer({ min: 16, max: 8192 }) }), { nil: undefined }),
  keepRecentTokens: fc.option(fc.integer({ min: 0, max: 30_000 }), { nil: undefined }),
  restoreRecent: fc.option(fc.boolean(), { nil: undefined }),
});

export interface RandomCase {
  session: SessionSpec;
  /** One or two compactions in a row on the same session. */
  compactions: CompactionSpec[];
}

export const randomCase: fc.Arbitrary<RandomCase> = fc.record({
  session: sessionSpec,
  compactions: fc.array(compactionSpec, { minLength: 1, maxLength: 2 }),
});

// ---------------------------------------------------------------------------------------------------------------------
// The checks

/** What `checkCompactionCase` needs of abridge (the sources in tests, `dist/` in the bench). */
/** The public API the checks use, plus three internals (imported by path: they are not public). */
export type CompactionLib = Pick<
  typeof Abridge,
  'parseSession' | 'compact' | 'activeView' | 'checkInvariants' | 'ExtractiveSummarizer' | 'MemoryResultStore'
> & {
  introducedViolations: typeof Invariants.introducedViolations;
  unitsOf: typeof Turns.unitsOf;
  isHumanUser: typeof Turns.isHumanUser;
};

export interface CaseOutcome {
  /** Everything that went wrong, one line each; empty when every check passed. */
  problems: string[];
  /** Violations the compactions reported or the final view shows anew. */
  violations: number;
  results: Abridge.CompactionResult[];
}

function summarizerFor(lib: CompactionLib, kind: CompactionSpec['summarizer']): Abridge.Summarizer {
  if (kind === 'throws') return { name: 'broken', summarize: async () => Promise.reject(new Error('summarizer down')) };
  if (kind === 'empty') return { name: 'empty', summarize: async () => '  ' };
  return new lib.ExtractiveSummarizer();
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null)
    return Number.isNaN(a) && Number.isNaN(b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  for (const k of ka)
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  return true;
}

/**
 * Runs the compactions of a random case and checks what must hold whatever the input and settings: no violation
 * reported, none introduced in the view the session now shows, the first human message and the last `keptLastSteps`
 * steps verbatim (the first human message may give way only in a view that reaches its target, and named in `gaveWay`;
 * the latest never), entries only appended (the originals deep-equal), and a reached target really reached.
 */
export async function checkCompactionCase(lib: CompactionLib, c: RandomCase): Promise<CaseOutcome> {
  const session = lib.parseSession(sessionJsonl(c.session));
  const problems: string[] = [];
  const results: Abridge.CompactionResult[] = [];
  let violations = 0;
  const store = new lib.MemoryResultStore();
  for (const [round, spec] of c.compactions.entries()) {
    const where = `compaction ${round + 1}`;
    const original = structuredClone(session.entries);
    const view0 = lib.activeView(session);
    const probe = await lib.compact(session, {
      target: Number.MAX_SAFE_INTEGER,
      strategies: [],
      ...(spec.prefixTokens !== undefined ? { prefixTokens: spec.prefixTokens } : {}),
    });
    const target = Math.max(1, Math.round((probe.beforeTokens * spec.targetPercent) / 100));
    const options: Abridge.CompactOptions = {
      target,
      store,
      summarizer: summarizerFor(lib, spec.summarizer),
      now: () => new Date(Date.UTC(2026, 0, 2)),
    };
    if (spec.strategies) options.strategies = spec.strategies;
    if (spec.keepLastSteps !== undefined) options.keepLastSteps = spec.keepLastSteps;
    if (spec.minKeepLastSteps !== undefined) options.minKeepLastSteps = spec.minKeepLastSteps;
    if (spec.prefixTokens !== undefined) options.prefixTokens = spec.prefixTokens;
    const o: NonNullable<Abridge.CompactOptions['options']> = {};
    if (spec.clearing) o.clearing = spec.clearing;
    if (spec.offload) o.offload = spec.offload;
    if (spec.headTail) o.headTail = spec.headTail;
    if (spec.summarize) o.summarize = spec.summarize;
    if (spec.stubInputs) o.stubInputs = spec.stubInputs;
    if (spec.keepRecentTokens !== undefined) options.keepRecentTokens = spec.keepRecentTokens;
    if (spec.restoreRecent !== undefined) options.restoreRecent = spec.restoreRecent;
    options.options = o;
    let result: Abridge.CompactionResult;
    try {
      result = await lib.compact(session, options);
    } catch (err) {
      problems.push(`${where}: threw ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      violations++;
      break;
    }
    results.push(result);
    if (result.violations.length > 0) {
      violations += result.violations.length;
      problems.push(`${where}: reported violations ${JSON.stringify(result.violations)}`);
    }
    const view = lib.activeView(session);
    const introduced = lib.introducedViolations(lib.checkInvariants(view0), lib.checkInvariants(view));
    if (introduced.length > 0) {
      violations += introduced.length;
      problems.push(`${where}: the view has new violations ${JSON.stringify(introduced)}`);
    }
    // Verbatim: the first human user message, and the last keptLastSteps steps.
    const byEntry = new Map(view.filter((v) => v.entry !== undefined).map((v) => [v.entry!, v]));
    const verbatim = (it: Abridge.ViewItem, what: string) => {
      const now = it.entry === undefined ? undefined : byEntry.get(it.entry);
      if (!now) problems.push(`${where}: ${what} (entry ${it.entry}) is gone from the view`);
      else if (now.message !== it.message && !deepEqual(now.message, it.message))
        problems.push(`${where}: ${what} (entry ${it.entry}) was changed`);
      else if (now.edit !== it.edit)
        problems.push(`${where}: ${what} (entry ${it.entry}) is marked ${String(now.edit)}`);
    };
    // …unless it gave way to reach the target (shrinkProtected): then only in a view that reaches it, and named.
    const gaveWay = (it: Abridge.ViewItem) =>
      result.reachedTarget &&
      spec.minKeepLastSteps === undefined &&
      result.gaveWay.some((w) => w.endsWith(`(entry ${it.entry})`));
    const task = view0.find((v) => lib.isHumanUser(v.message));
    if (task && !gaveWay(task)) verbatim(task, 'the first human user message');
    // The latest gives way last of all, and only in place (it is what the next step answers): named, in a view that
    // reaches the target, still there, cut to its first and last lines with a reference to the whole.
    const latest = [...view0].reverse().find((v) => lib.isHumanUser(v.message));
    if (latest) {
      const named = result.reachedTarget && result.gaveWay.includes(`latest instruction (entry ${latest.entry})`);
      const now = byEntry.get(latest.entry!);
      if (!named) verbatim(latest, 'the latest human user message');
      else if (!now) problems.push(`${where}: the latest human user message (entry ${latest.entry}) was archived`);
      else if (
        !/read_result \{"ref_id": "r_[0-9a-f]+"/.test(
          now.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n'),
        )
      )
        problems.push(`${where}: the latest human user message (entry ${latest.entry}) was cut with no reference`);
    }
    const steps = lib.unitsOf(view0).filter((u) => u.kind === 'step');
    for (const u of steps.slice(Math.max(0, steps.length - result.keptLastSteps)))
      for (let i = u.start; i < u.end; i++)
        verbatim(view0[i]!, `message ${i} of the last ${result.keptLastSteps} steps`);
    // Archive, never delete.
    if (session.entries.length < original.length)
      problems.push(`${where}: entries went from ${original.length} to ${session.entries.length}`);
    for (let i = 0; i < original.length; i++) {
      if (!deepEqual(session.entries[i], original[i])) {
        problems.push(`${where}: entry ${i} changed`);
        break;
      }
    }
    // The last step is archived (keepLastSteps: 0 aside) only as the last resort: never when minKeepLastSteps keeps
    // it, and only for a view that then reaches the target, with a note saying so.
    const lastStep = steps.at(-1);
    if (lastStep && (spec.keepLastSteps ?? 1) > 0) {
      const asst = view0.slice(lastStep.start, lastStep.end).find((v) => v.message.role === 'assistant');
      const gone = asst?.entry !== undefined && !byEntry.has(asst.entry);
      const noted = result.summaryNotes.some((n) => /^the last step \(entr(y|ies) [\d–]+\) was archived/.test(n));
      if (gone && ((spec.minKeepLastSteps ?? 0) > 0 || !result.reachedTarget || !noted))
        problems.push(
          `${where}: the last step's assistant message (entry ${asst.entry}) is gone from the view (minKeepLastSteps ${spec.minKeepLastSteps}, reached ${result.reachedTarget}, noted ${noted})`,
        );
      if (noted && !gone) problems.push(`${where}: a note says the last step was archived, but it is in view`);
    }
    // Every reference the view names can be read back.
    for (const v of view)
      for (const m of JSON.stringify(v.message).matchAll(/read_result \{\\"ref_id\\": \\"(r_[0-9a-f]{16})/g))
        if (!(await store.stat(m[1]!))) problems.push(`${where}: entry ${v.entry} names ${m[1]}, which is not stored`);
    if (result.reachedTarget && result.afterTokens > target)
      problems.push(`${where}: reachedTarget but ${result.afterTokens} > target ${target}`);
    if (result.afterTokens < 0 || result.beforeTokens < 0)
      problems.push(`${where}: a negative figure (${result.beforeTokens} → ${result.afterTokens})`);
    if (result.afterTokens > result.beforeTokens)
      problems.push(
        `${where}: the context grew from ${result.beforeTokens} to ${result.afterTokens} tokens (${result.strategiesRun.map((s) => s.name).join(', ')})`,
      );
    if (!result.reachedTarget && result.afterTokens <= target)
      problems.push(`${where}: afterTokens ${result.afterTokens} ≤ target ${target} but reachedTarget is false`);
  }
  return { problems, violations, results };
}
