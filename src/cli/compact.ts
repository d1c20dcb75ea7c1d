import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Command } from 'commander';
import pc from 'picocolors';
import { contextBreakdown } from '../budget/breakdown.js';
import { compact, type CompactionResult } from '../compaction/compact.js';
import { STRATEGY_NAMES, type StrategyName } from '../compaction/strategies/strategy.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import type { Summarizer } from '../compaction/summarizers/summarizer.js';
import { activeView } from '../model/view.js';
import { AbridgeError } from '../errors.js';
import { readSession } from '../formats/read.js';
import { inputOptions, isStdinPath, INSTANCE_OPTION, sourceOptions } from './input.js';
import { getFormat } from '../formats/registry.js';
import { isRecord } from '../formats/format.js';
import { requestModel, sessionModel } from '../formats/request-body.js';
import { writeSession, writeSessionChunks } from '../formats/write.js';
import type { FormatId, Message, Session } from '../model/types.js';
import {
  parsePins,
  pinMatch,
  pinnedLines,
  pinnedOf,
  previewOf,
  readSummaryFile,
  renderPreview,
} from './compact-preview.js';
import { FileResultStore } from '../store/file-result-store.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import type { ResultStore } from '../compaction/result-store.js';
import { writeFileAtomic } from '../atomic-write.js';
import { refuseOutOverInput, withFileLock } from './output.js';
import { createRedactor, redactSerialized } from '../redact/redact.js';
import { addConfigOptions, resolveConfig, type ConfigFlags } from './config-options.js';
import { progressReporter, statusLine } from './progress.js';
import { fmtInt, table } from './render.js';
import { escapeControls, escapeControlsDeep, jsonForTerminal } from './terminal.js';
import { tokenCounterFor } from './tokens.js';
import { llmSummarizerFromEnv } from './llm.js';

const EMIT_FORMATS = ['anthropic', 'openai-chat', 'openai-responses', 'ai-sdk'] as const;
const OUT_FORMATS: readonly FormatId[] = ['pi', 'claude-code', 'codex'];

interface CompactFlags extends ConfigFlags {
  budget?: string;
  instructions?: string;
  keepProtected?: boolean;
  strategies?: string;
  summarizer?: string;
  json?: boolean;
  emit?: string;
  out?: string;
  inPlace?: boolean;
  format?: string;
  resultsDir?: string;
  keepLastSteps?: string;
  exact?: boolean;
  preview?: boolean;
  summaryFile?: string;
  pin?: string;
  pinMatch?: string;
}

export function registerCompact(program: Command): void {
  const cmd = program
    .command('compact')
    .description(
      'Compact a transcript to a token budget (clear and offload old tool output, summarize, truncate) without deleting anything; what must stay verbatim gives way last, and is named (exits 3 only when the system messages and project memory alone exceed the budget, or a latest instruction too short to cut beside them, or with --keep-protected)',
    )
    .argument('<file>', 'transcript file')
    .option(
      '-b, --budget <tokens>',
      "tokens the compacted context must fit (default: the model's compaction target, 60% of the usable window)",
    )
    .option('-s, --strategies <list>', `comma-separated, cheapest first (default: ${STRATEGY_NAMES.join(',')})`)
    .option(
      '--summarizer <kind>',
      'extractive (no LLM, default) or llm (needs ABRIDGE_LLM_PROVIDER, ABRIDGE_LLM_MODEL and the provider API key)',
      'extractive',
    )
    .option(
      '--instructions <text>',
      'what the summary must keep or focus on (the extractive summary puts what matches first; an LLM summarizer is told)',
    )
    .option(
      '--keep-protected',
      "never shrink the first request, the last step or another agent's summary: exit 3 instead when the budget needs it",
    )
    .option(
      '--keep-last-steps <n>',
      'agent steps at the end always kept verbatim (default 1; the recent tail is sized in tokens)',
    )
    .option(
      '--results-dir <dir>',
      'where offloaded tool results are stored (default: in memory; with --out: <out>.results/)',
    )
    .option('-f, --format <id>', 'read as this format instead of detecting it')
    .option(...INSTANCE_OPTION)
    .option('--exact', 'count tokens with the o200k_base tokenizer')
    .option(
      '--json',
      'print the result as JSON: {beforeTokens, afterTokens, beforeMessages, afterMessages, strategiesRun, skipped, …}',
    )
    .option('--emit <format>', `print the request body the model would receive instead (${EMIT_FORMATS.join(', ')})`)
    .option(
      '-o, --out <file>',
      'write the transcript back in its own format (pi, claude-code) with a native compaction record (written atomically; never the input itself)',
    )
    .option(
      '--in-place',
      'replace the transcript itself with its compacted version: atomically, under a lock (<file>.lock) so that two runs never interleave',
    )
    .option(
      '--preview',
      'print what the compaction would archive, shorten and keep, and its summary, and write nothing (with --json: as JSON)',
    )
    .option(
      '--summary-file <file>',
      "use this text (a person's edit of the summary; - reads standard input) instead of the generated summary; exit 3, writing nothing, when it does not fit the budget",
    )
    .option(
      '--pin <entries>',
      'comma-separated entry numbers (as inspect and view show them) or ids: these messages stay verbatim whatever the budget',
    )
    .option('--pin-match <regex>', 'every message whose text matches stays verbatim whatever the budget');
  addConfigOptions(cmd).action(async (file: string, opts: CompactFlags) => {
    if (opts.inPlace && opts.out !== undefined)
      throw new AbridgeError(
        'INVALID_INPUT',
        '--in-place and --out: choose one (--in-place replaces the input file itself)',
      );
    refuseOutOverInput(file, opts.out);
    if (opts.inPlace && isStdinPath(file))
      throw new AbridgeError(
        'INVALID_INPUT',
        '--in-place: the input is standard input, which cannot be replaced; use --out <file>',
      );
    if (opts.preview && (opts.inPlace || opts.out !== undefined || opts.emit !== undefined))
      throw new AbridgeError(
        'INVALID_INPUT',
        `--preview writes nothing and prints the preview: drop ${opts.inPlace ? '--in-place' : opts.out !== undefined ? '--out' : '--emit'}`,
      );
    if (opts.summaryFile === '-' && isStdinPath(file))
      throw new AbridgeError(
        'INVALID_INPUT',
        '--summary-file -: the transcript is read from standard input already; give the summary as a file',
      );
    if (!opts.inPlace) return compactFile(file, opts, undefined);
    return withFileLock(file, (assertHeld) => compactFile(file, { ...opts, out: file }, assertHeld));
  });
}

/** Reads, compacts and writes or prints one transcript; with --in-place it runs under the file's lock. */
async function compactFile(file: string, opts: CompactFlags, assertHeld: (() => void) | undefined): Promise<void> {
  // The former action body, block and indentation kept so that concurrent edits of this file merge cleanly.
  {
    if (opts.format) getFormat(opts.format);
    const strategies = parseStrategies(opts.strategies);
    if (opts.emit && !(EMIT_FORMATS as readonly string[]).includes(opts.emit))
      throw new AbridgeError('INVALID_INPUT', `--emit: expected one of ${EMIT_FORMATS.join(', ')}, got "${opts.emit}"`);
    const keepLastSteps =
      opts.keepLastSteps === undefined ? undefined : positiveInt('--keep-last-steps', opts.keepLastSteps, true);
    const pinMatcher = opts.pinMatch === undefined ? undefined : pinMatch(opts.pinMatch);
    const editedSummary = opts.summaryFile === undefined ? undefined : await readSummaryFile(opts.summaryFile);
    const config = await resolveConfig(opts);
    const { exact } = await tokenCounterFor(opts.exact === true);
    const progress = progressReporter(file);
    let bytes = 0;
    const session = await readSession(file, {
      ...sourceOptions(opts),
      ...inputOptions(),
      onProgress: (read, total) => {
        bytes = total;
        progress.update(read, total);
      },
    }).finally(() => progress.stop());
    if (opts.out && !OUT_FORMATS.includes(session.format)) {
      throw new AbridgeError(
        'NOT_WRITABLE_FORMAT',
        `--out: ${file} is ${session.format}; abridge writes compaction records into pi, claude-code and codex transcripts only (use --emit for a request body)`,
      );
    }
    const notUtf8 = session.problems.find((p) => p.kind === 'invalid-utf8');
    if (opts.out && notUtf8) {
      // A JavaScript string cannot hold those bytes: written back, they would silently become U+FFFD.
      throw new AbridgeError(
        'INVALID_INPUT',
        `${file}: line ${notUtf8.line} is not valid UTF-8, and writing the transcript back would replace those bytes with U+FFFD; repair the line first (abridge inspect lists every such line); nothing was written`,
      );
    }
    const shared = opts.out && session.format === 'pi' ? session.entries.find((e) => e.sameLineAsPrevious) : undefined;
    if (shared)
      // pi reads one record a line (its own files hold such lines, from concurrent appends): the compacted copy puts
      // each record of that line on a line of its own, which pi needs — said, since those bytes change.
      process.stderr.write(
        escapeControls(
          `abridge compact: ${file}: line ${shared.line ?? '?'} holds more than one JSON record; ${opts.out} has them on separate lines, as pi reads them (every other line of the transcript is written as it was)\n`,
        ),
      );
    const pinnedEntries = opts.pin === undefined ? undefined : parsePins(opts.pin, session);
    const pinned =
      pinnedEntries || pinMatcher
        ? (m: Message, entry: number) => pinnedEntries?.includes(entry) === true || pinMatcher?.(m) === true
        : undefined;
    if (pinMatcher && !session.entries.some((e) => e.message && pinMatcher(e.message)))
      process.stderr.write(
        escapeControls(`abridge compact: --pin-match: no message of ${file} matches ${opts.pinMatch}\n`),
      );
    // The breakdown is measured only for the default target: a budget given needs no measuring of the whole view here.
    const target =
      opts.budget === undefined
        ? contextBreakdown(session, { settings: config.budget, ...(exact ? { exact } : {}) }).marks.target
        : positiveInt('--budget', opts.budget, false);
    const summarizer: Summarizer =
      opts.summarizer === 'llm'
        ? llmSummarizerFromEnv()
        : opts.summarizer === 'extractive' || opts.summarizer === undefined
          ? new ExtractiveSummarizer()
          : badSummarizer(opts.summarizer);
    const redact = createRedactor(config.redaction);
    // The results this run stores: removed again (and the folder, when this run made it) if the run fails, so that a
    // failed compaction leaves no result behind that no transcript refers to.
    const created = new Set<string>();
    // A preview stores nothing: its results stay in memory.
    const resultsDir = opts.preview ? undefined : (opts.resultsDir ?? (opts.out ? `${opts.out}.results` : undefined));
    const dirExisted = resultsDir !== undefined && existsSync(resultsDir);
    const fileStore =
      resultsDir === undefined ? undefined : new FileResultStore(resultsDir, { onCreating: (ref) => created.add(ref) });
    const store: ResultStore = fileStore ?? new MemoryResultStore();
    const undoStore = async () => {
      if (!fileStore) return;
      await fileStore.remove(created).catch(() => undefined);
      if (!dirExisted) await rm(fileStore.dir, { recursive: true, force: true }).catch(() => undefined);
    };
    // A large session takes seconds after the reading (offloaded results are written one by one): say what runs.
    const status = statusLine(bytes);
    let result: CompactionResult;
    const before = opts.preview ? activeView(session) : [];
    try {
      result = await compact(session, {
        target,
        force: true,
        summarizer,
        store,
        redact,
        onStrategy: (name) => status.update(`compacting ${file}: ${name}…`),
        ...(strategies ? { strategies } : {}),
        ...(opts.instructions?.trim() ? { instructions: opts.instructions.trim() } : {}),
        ...(opts.keepProtected ? { shrinkProtected: false } : {}),
        ...(keepLastSteps !== undefined ? { keepLastSteps } : {}),
        ...(config.budget.prefixTokens !== undefined ? { prefixTokens: config.budget.prefixTokens } : {}),
        ...(exact ? { exact } : {}),
        ...(pinned ? { pinned } : {}),
        ...(editedSummary !== undefined ? { summary: editedSummary } : {}),
      }).finally(() => status.stop());
      // A person's summary that does not fit is not written: the budget is what they asked for.
      if (editedSummary !== undefined && !result.reachedTarget && !opts.preview) {
        await undoStore();
        exitIfOverBudget(result, target, opts.summaryFile, true);
        return;
      }
      // --out: the user's own records as they were, abridge's compaction record redacted (see writeSession).
      if (opts.out) {
        status.update(`writing ${opts.out}…`);
        try {
          // Written as it is serialized, a piece at a time: a 100 MB transcript is never one string in memory.
          const chunks = writeSessionChunks(session, session.format, { redact });
          await writeFileAtomic(opts.out, async (write) => {
            for (const chunk of chunks) await write(chunk);
            assertHeld?.();
          });
        } finally {
          status.stop();
        }
      }
    } catch (err) {
      await undoStore();
      if (err instanceof AbridgeError && err.code === 'STORE_ERROR')
        throw new AbridgeError(
          'STORE_ERROR',
          `${err.message}; nothing was written${created.size ? `, and the results this run had begun to store (${created.size}) were removed` : ''}`,
        );
      throw err;
    }
    if (opts.preview) {
      const preview = previewOf(session, before, activeView(session), result, target);
      const text = opts.json
        ? `${JSON.stringify({ file, format: session.format, ...preview }, null, 2)}\n`
        : renderPreview(escapeControls(file), escapeControlsDeep(preview));
      process.stdout.write(opts.json ? jsonForTerminal(redactSerialized(text, redact)) : redact(text));
      exitIfOverBudget(result, target, opts.summaryFile);
      return;
    }
    if (opts.emit) {
      // A body over the budget is not printed: a script piping it to the provider gets exit 3, not a request that
      // may be refused.
      if (result.reachedTarget) process.stdout.write(`${writeSession(viewSession(session), opts.emit, { redact })}\n`);
      exitIfOverBudget(result, target);
      return;
    }
    if (opts.json) {
      const { entry: _entry, marker, ...rest } = result;
      process.stdout.write(
        jsonForTerminal(
          redactSerialized(
            `${JSON.stringify({ file, format: session.format, target, ...rest, summaryChars: marker?.summary.length ?? 0, archived: marker?.archived, edits: marker?.edits?.length ?? 0, out: opts.out }, null, 2)}\n`,
            redact,
          ),
        ),
      );
      exitIfOverBudget(result, target);
      return;
    }
    // What it names from the transcript (skipped strategies' reasons, notes, protected parts) with controls shown.
    const { entry: _e, marker: _m, ...named } = result;
    const shown = { ...result, ...escapeControlsDeep(named) };
    process.stdout.write(
      redact(
        render(escapeControls(file), target, shown, opts.out === undefined ? undefined : escapeControls(opts.out)),
      ),
    );
    exitIfOverBudget(result, target);
  }
}

/** The compacted context as a session of its own: what request-body writers turn into a request. */
export function viewSession(session: Session): Session {
  const entries = activeView(session).map((v, index) => ({ index, kind: 'message' as const, message: v.message }));
  const s: Session = { format: session.format, info: session.info, entries, problems: [] };
  if (session.extra) s.extra = session.extra;
  // The model the session was using, though compaction may have archived every message that named it.
  const model = requestModel(session) === undefined ? sessionModel(session) : undefined;
  if (model !== undefined)
    s.extra = {
      ...session.extra,
      request: { ...(isRecord(session.extra?.request) ? session.extra.request : {}), model },
    };
  return s;
}

/**
 * Exit status 3 when the budget could not be met: what must stay verbatim (the prefix, the first request, the latest
 * instruction, the last step) is named on stderr with its size.
 */
function exitIfOverBudget(r: CompactionResult, target: number, summaryFile?: string, unwritten = false): void {
  if (r.reachedTarget) return;
  if (r.editedSummary && r.editedSummary.tokens > r.editedSummary.room) {
    process.stderr.write(
      escapeControls(
        `abridge compact: budget not reached: the summary given (${summaryFile ?? 'summary'}) is ${fmtInt(r.editedSummary.tokens)} tokens, and the rest of the compacted context leaves it ${fmtInt(Math.max(0, r.editedSummary.room))} of the budget of ${fmtInt(target)} (${fmtInt(r.afterTokens)} tokens in all); shorten it by ${fmtInt(r.editedSummary.tokens - Math.max(0, r.editedSummary.room))} tokens${unwritten ? '; nothing was written' : ''}\n`,
      ),
    );
    process.exitCode = 3;
    return;
  }
  const pinned = pinnedOf(r.protectedParts);
  const parts = [
    ...r.protectedParts
      .filter((p) => !p.what.startsWith('pinned message'))
      .map((p) => `${p.what}: ${fmtInt(p.tokens)} tokens`),
    ...pinnedLines(pinned),
  ]
    .map((line) => `  ${line}`)
    .join('\n');
  const why =
    r.protectedTokens > target
      ? `even what must stay verbatim comes to ${fmtInt(r.protectedTokens)} tokens, over the budget of ${fmtInt(target)}`
      : `the context is ${fmtInt(r.afterTokens)} tokens after ${r.strategiesRun.length ? r.strategiesRun.map((s) => s.name).join(', ') : 'every strategy was skipped'}, over the budget of ${fmtInt(target)}: what must stay verbatim (${fmtInt(r.protectedTokens)} tokens)${r.marker?.summary ? ` plus the summary of what was archived (${fmtInt(r.marker.summary.length)} characters)` : ''}${r.skipped.length ? `; skipped: ${r.skipped.map((s) => `${s.name} (${s.reason})`).join(', ')}` : ''}`;
  process.stderr.write(escapeControls(`abridge compact: budget not reached: ${why}:\n${parts}\n`));
  process.exitCode = 3;
}

function parseStrategies(v: string | undefined): StrategyName[] | undefined {
  if (v === undefined) return undefined;
  const names = v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  for (const n of names) {
    if (!(STRATEGY_NAMES as readonly string[]).includes(n))
      throw new AbridgeError(
        'INVALID_INPUT',
        `--strategies: unknown strategy "${n}"; expected some of ${STRATEGY_NAMES.join(', ')}`,
      );
  }
  if (names.length === 0)
    throw new AbridgeError('INVALID_INPUT', `--strategies: expected at least one of ${STRATEGY_NAMES.join(', ')}`);
  return names as StrategyName[];
}

/** A whole-number option (≥ 1, or ≥ 0 when `zeroOk`), or INVALID_INPUT naming the flag and the value. */
export function positiveInt(flag: string, v: string, zeroOk: boolean): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1))
    throw new AbridgeError('INVALID_INPUT', `${flag}: expected a whole number ${zeroOk ? '≥ 0' : '≥ 1'}, got "${v}"`);
  return n;
}

function badSummarizer(v: string): never {
  throw new AbridgeError('INVALID_INPUT', `--summarizer: expected extractive or llm, got "${v}"`);
}

function render(file: string, target: number, r: CompactionResult, out: string | undefined): string {
  const lines: string[] = [pc.bold(file)];
  const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`;
  lines.push(
    `${fmtInt(r.beforeTokens)} → ${pc.bold(fmtInt(r.afterTokens))} tokens (${pct(r.afterTokens, r.beforeTokens)}), target ${fmtInt(target)}${r.reachedTarget ? pc.green(' ✓') : pc.yellow(' — not reached: the rest is protected (see below)')}`,
  );
  lines.push(
    `${fmtInt(r.beforeMessages)} → ${fmtInt(r.afterMessages)} messages the model sees; ${
      out
        ? 'every entry stays in the transcript (archived, not deleted)'
        : 'nothing written (--out FILE or --in-place writes the compacted transcript, every entry kept)'
    }`,
  );
  if (r.strategiesRun.length) {
    lines.push('');
    lines.push(
      table(
        ['pass', 'before', 'after', 'saved'],
        r.strategiesRun.map((s) => [
          s.name,
          fmtInt(s.beforeTokens),
          fmtInt(s.afterTokens),
          fmtInt(s.beforeTokens - s.afterTokens),
        ]),
      ),
    );
  }
  for (const s of r.skipped) lines.push(pc.dim(`skipped ${s.name}: ${s.reason}`));
  // How the summary was made and what else gave way to fit (the last step cut short, the summary squeezed).
  for (const n of r.summaryNotes) lines.push(pc.dim(`note: ${n}`));
  if (r.violations.length) for (const v of r.violations) lines.push(pc.red(`invariant: ${v.message}`));
  // The table's figures are each pass's own: a later pass may archive what an earlier one shrank, so what the view keeps
  // is said here, of the view itself.
  const edited = r.marker?.edits?.length ?? 0;
  const kept = `${fmtInt(edited)} of the ${fmtInt(r.afterMessages)} messages kept ${edited === 1 ? 'is' : 'are'} shortened (results cleared, offloaded or cut to head and tail; inputs stubbed)`;
  if (r.marker?.archived)
    lines.push(
      pc.dim(
        `entries ${r.marker.archived.fromEntry}–${r.marker.archived.toEntry} archived behind a ${fmtInt(r.marker.summary.length)}-character summary; ${kept}`,
      ),
    );
  else if (r.marker) lines.push(pc.dim(kept));
  if (out) lines.push(`written to ${out} with a native compaction record`);
  return `${lines.join('\n')}\n`;
}
