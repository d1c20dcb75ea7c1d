import type { Command } from 'commander';
import pc from 'picocolors';
import { stat } from 'node:fs/promises';
import { contextBreakdown, type ContextBreakdown } from '../budget/breakdown.js';
import { markdownFooter, renderBreakdownMarkdown, renderBreakdownText } from '../budget/report.js';
import { AbridgeError } from '../errors.js';
import {
  compactionsInViewAt,
  inspectSession,
  inspectTranscript,
  type InspectCompaction,
  type InspectReport,
} from '../formats/inspect.js';
import type { Session } from '../model/types.js';
import { readSession } from '../formats/read.js';
import { inputOptions, INSTANCE_OPTION, sourceOptions } from './input.js';
import { createRedactor, redactSerialized } from '../redact/redact.js';
import { addConfigOptions, resolveConfig, type ConfigFlags } from './config-options.js';
import { getFormat } from '../formats/registry.js';
import { FORMAT_IDS } from '../model/types.js';
import { TokenBreakdown, type TokenBreakdownResult } from '../tokens/breakdown.js';
import { warmEstimator } from '../tokens/estimate.js';
import { tokenCounterFor } from './tokens.js';
import { progressReporter } from './progress.js';
import { fmtInt, table } from './render.js';
import { escapeControlsDeep, jsonForTerminal } from './terminal.js';

const count = (n: number, noun: string) => `${fmtInt(n)} ${noun}${n === 1 ? '' : 's'}`;

/** Above this size, inspect streams and skips the context breakdown (it needs the whole session in memory). */
const BREAKDOWN_LIMIT_BYTES = 64 * 1024 * 1024;
/** From this size on, inspect warms the estimator up before reading (see warmEstimator). */
const WARM_ESTIMATOR_BYTES = 256 * 1024;

type FullReport = InspectReport & { tokens: TokenBreakdownResult; context?: ContextBreakdown; contextNote?: string };

export function registerInspect(program: Command): void {
  const cmd = program
    .command('inspect')
    .description(
      'Summarize a transcript: format, models, messages, parts and tokens, last usage, compactions, problems, and the /context breakdown',
    )
    .argument(
      '[file]',
      'transcript file (pi, Claude Code, Codex, SWE-agent .traj, GitHub Copilot CLI events, OpenHands output, or an API request body)',
    )
    .option(
      '--db <path|url>',
      'a session in a store instead of a file: a SQLite file path or a postgres:// URL (with --session)',
    )
    .option('--session <id>', 'the stored session (with --db)')
    .option('-f, --format <id>', `read as this format instead of detecting it (${FORMAT_IDS.join(', ')})`)
    .option(...INSTANCE_OPTION)
    .option('--at <entry>', 'show the context as of this entry index')
    .option('--exact', 'count tokens with the o200k_base tokenizer instead of the estimator')
    .option('--markdown', 'print the /context breakdown as Markdown (with the footer an agent adds to its comments)')
    .option('--json', 'print one JSON object (schema in docs/cli.md)');
  addConfigOptions(cmd).action(
    async (
      fileArg: string | undefined,
      opts: ConfigFlags & {
        format?: string;
        json?: boolean;
        exact?: boolean;
        at?: string;
        markdown?: boolean;
        db?: string;
        session?: string;
      },
    ) => {
      if (opts.format) getFormat(opts.format); // a bad id is an error before any reading
      const stored = opts.db !== undefined || opts.session !== undefined;
      if (stored && fileArg !== undefined)
        throw new AbridgeError(
          'INVALID_INPUT',
          `give either a transcript (${fileArg}) or --db with --session, not both`,
        );
      if (!stored && fileArg === undefined)
        throw new AbridgeError(
          'INVALID_INPUT',
          'abridge inspect: give a transcript file, or --db <store> --session <id>',
        );
      const at = opts.at === undefined ? undefined : parseEntryIndex(opts.at);
      const config = await resolveConfig(opts);
      const { counter, method, exact } = await tokenCounterFor(opts.exact === true);
      const breakdown = new TokenBreakdown(counter, method);
      // inspect never writes the session back: it need not keep the source text of records for that.
      const readOptions = {
        ...sourceOptions(opts),
        ...inputOptions(),
        keepSourceText: false,
      };
      let report: FullReport;
      if (stored) {
        // Loaded only for --db (the SQLite and PostgreSQL drivers are optional), and measured against what it ran with.
        const { readStoredSession, budgetOfStored } = await import('./store-commands.js');
        const { session, source } = await readStoredSession(opts.db, opts.session);
        for (const e of session.entries) breakdown.add(e);
        report = { ...inspectSession(session, source, 0), tokens: breakdown.result() };
        report.context = contextBreakdown(session, {
          settings: budgetOfStored(config.budget, session),
          ...(at !== undefined ? { at } : {}),
          ...(exact ? { exact } : {}),
        });
        countInView(report, session);
        noteIgnoredUsage(report);
        printReport(report, opts, config);
        return;
      }
      const file = fileArg!;
      const progress = progressReporter(file);
      try {
        const size = await fileSize(file);
        // Every text gets estimated below: warmed now, the estimator compiles on a background thread while the file
        // is read. Below a few hundred KB the warm-up (a few ms) would cost more than it saves.
        if (!exact && size >= WARM_ESTIMATOR_BYTES) warmEstimator();
        if (size <= BREAKDOWN_LIMIT_BYTES) {
          let total = size;
          const session = await readSession(file, {
            ...readOptions,
            onProgress: (read, of) => {
              total = of; // standard input and FIFOs have no size until they are read
              progress.update(read, of);
            },
          });
          progress.stop();
          for (const e of session.entries) breakdown.add(e);
          report = { ...inspectSession(session, file, total), tokens: breakdown.result() };
          report.context = contextBreakdown(session, {
            settings: config.budget,
            ...(at !== undefined ? { at } : {}),
            ...(exact ? { exact } : {}),
          });
          countInView(report, session);
          noteIgnoredUsage(report);
        } else {
          if (at !== undefined)
            throw new AbridgeError(
              'INVALID_INPUT',
              `--at: ${file} is over ${BREAKDOWN_LIMIT_BYTES / 1048576} MB; the context breakdown needs the whole session in memory`,
            );
          const base = await inspectTranscript(file, {
            ...readOptions,
            onProgress: progress.update,
            onEntry: (e) => breakdown.add(e),
          });
          report = {
            ...base,
            tokens: breakdown.result(),
            contextNote: `no /context breakdown: the file is over ${BREAKDOWN_LIMIT_BYTES / 1048576} MB (summary read as a stream)`,
          };
        }
      } finally {
        progress.stop();
      }
      printReport(report, opts, config);
    },
  );
}

/**
 * The breakdown leaves out a ContextManager's undo checkpoints and what they took back (model/undo.ts), but not the
 * boundary `abridge uncompact` writes into a Claude Code transcript, which only formats/ knows (budget/ may not import
 * it): for such a transcript, the count of compactions in view is the report's.
 */
function countInView(report: FullReport, session: Session): void {
  if (session.format !== 'claude-code' || !report.context) return;
  if (!report.compactions.some((c) => c.undone !== undefined || c.undoneBy !== undefined)) return;
  report.context.counts.compactions = compactionsInViewAt(session, report.compactions, report.context.asOf.entry);
}

/** A bill the count did not believe is a problem of the transcript: shown with the others. */
function noteIgnoredUsage(report: FullReport): void {
  for (const u of report.context?.ignoredUsage ?? []) {
    report.problems.push({
      line: u.entry + 1,
      kind: 'implausible-usage',
      message: `entry ${u.entry}: ${u.reason}; not used`,
    });
    report.problemCounts['implausible-usage'] = (report.problemCounts['implausible-usage'] ?? 0) + 1;
  }
}

function printReport(
  report: FullReport,
  opts: { json?: boolean; markdown?: boolean },
  config: Awaited<ReturnType<typeof resolveConfig>>,
): void {
  // A report leaves the process: recognized secrets (e.g. in a problem's quoted line) are redacted from all of it.
  const redact = createRedactor(config.redaction);
  // Its text from the transcript (tool names, titles, problems) reaches a terminal with control characters shown.
  if (opts.json)
    process.stdout.write(jsonForTerminal(redactSerialized(`${JSON.stringify(report, null, 2)}\n`, redact)));
  else {
    const shown = escapeControlsDeep(report);
    if (opts.markdown && shown.context)
      process.stdout.write(redact(`${renderBreakdownMarkdown(shown.context)}${markdownFooter(shown.context)}\n`));
    else process.stdout.write(redact(renderInspect(shown)));
  }
}

function parseEntryIndex(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new AbridgeError('INVALID_INPUT', `--at: expected an entry index (a whole number ≥ 0), got "${v}"`);
  return n;
}

async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0; // readSession reports a missing or unreadable file with the right message
  }
}

export function renderInspect(
  r: InspectReport & { tokens?: TokenBreakdownResult; context?: ContextBreakdown; contextNote?: string },
): string {
  const out: string[] = [];
  const label = (s: string) => pc.bold(s.padEnd(12));
  out.push(pc.bold(r.file));
  const version = r.session.version !== undefined ? ` v${r.session.version}` : '';
  out.push(`${label('format')}${r.format}${pc.dim(` (${r.formatLabel}${version})`)} · ${fmtBytes(r.bytes)}`);
  if (r.session.id || r.session.cwd)
    out.push(`${label('session')}${[r.session.id, r.session.cwd].filter(Boolean).join(' · ')}`);
  if (r.session.title) out.push(`${label('title')}${r.session.title}`);
  if (r.session.startedAt)
    out.push(`${label('time')}${r.session.startedAt}${r.session.endedAt ? ` → ${r.session.endedAt}` : ''}`);
  out.push(
    `${label('models')}${r.models.length ? r.models.map((m) => `${m.id} ${pc.dim(`(${m.messages})`)}`).join(', ') : pc.dim('none reported')}`,
  );
  const kinds = Object.entries(r.entries.byKind)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${fmtInt(n)}`)
    .join(', ');
  out.push(`${label('entries')}${fmtInt(r.entries.total)} ${pc.dim(`(${kinds})`)}`);
  const extra = [
    r.messages.sidechain ? `${fmtInt(r.messages.sidechain)} on sidechains` : '',
    r.messages.synthetic ? `${fmtInt(r.messages.synthetic)} injected by the harness` : '',
  ]
    .filter(Boolean)
    .join(', ');
  out.push(`${label('messages')}${fmtInt(r.messages.total)}${extra ? pc.dim(` (${extra})`) : ''}`);
  out.push('');

  const tk = r.tokens;
  const tokenLabel = tk ? (tk.method === 'estimate' ? 'tokens (est.)' : `tokens (${tk.method})`) : undefined;
  const totalTokens = tk?.total || 1;
  const roleTokens = tk?.byRole as Record<string, number> | undefined;
  const partTokens = tk?.byPartType as Record<string, number> | undefined;
  const head = (first: string) => [first, 'count', 'chars', ...(tk ? [tokenLabel!, 'share'] : [])];
  out.push(
    table(
      head('role'),
      Object.entries(r.messages.byRole).map(([role, x]) => [
        role,
        fmtInt(x.count),
        fmtInt(x.chars),
        ...(tk ? [fmtInt(roleTokens?.[role] ?? 0), pct((roleTokens?.[role] ?? 0) / totalTokens)] : []),
      ]),
    ),
  );
  out.push('');
  const partRows = Object.entries(r.parts.byType)
    .sort((a, b) => (partTokens?.[b[0]] ?? b[1].chars) - (partTokens?.[a[0]] ?? a[1].chars))
    .map(([t, x]) => [
      t,
      fmtInt(x.count),
      fmtInt(x.chars),
      ...(tk ? [fmtInt(partTokens?.[t] ?? 0), pct((partTokens?.[t] ?? 0) / totalTokens)] : []),
    ]);
  if (tk)
    partRows.push(['framing', '', '', fmtInt(partTokens?.framing ?? 0), pct((partTokens?.framing ?? 0) / totalTokens)]);
  out.push(table(head('part'), partRows));
  if (tk) {
    out.push(
      `${label('tokens')}${pc.bold(fmtInt(tk.total))} ${tk.method === 'estimate' ? 'estimated' : `counted exactly (${tk.method})`} in all messages${tk.sidechain ? `, plus ${fmtInt(tk.sidechain)} on sidechains` : ''}${pc.dim(
        r.context
          ? ` — the shares above, by a generic tokenizer over every message the file holds; what the model's window holds now, in its provider's tokens, is the context below (${fmtInt(r.context.used)})`
          : ' — by a generic tokenizer over every message the file holds, not one request (see last usage and `abridge replay`)',
      )}`,
    );
  }
  out.push(
    pc.dim(
      'chars: text a model reads; images and files count 0 chars (priced by size); thinking signatures are not prompt text',
    ),
  );
  out.push('');
  const topTools = Object.entries(r.tools.byName)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([n, c]) => `${n} ${c}`)
    .join(', ');
  out.push(
    `${label('tools')}${count(r.tools.calls, 'call')}, ${count(r.tools.results, 'result')}, ${count(r.tools.errors, 'error')}${topTools ? pc.dim(` (${topTools})`) : ''}`,
  );
  if (r.media.images || r.media.files)
    out.push(`${label('media')}${r.media.images} images, ${r.media.files} files, ${fmtBytes(r.media.bytes)}`);
  if (r.signatureChars) out.push(`${label('signatures')}${fmtInt(r.signatureChars)} chars of thinking signatures`);
  if (r.lastUsage) {
    const u = r.lastUsage;
    out.push(
      `${label('last usage')}prompt ${pc.bold(fmtInt(u.prompt))} tokens ${pc.dim(`(input ${fmtInt(u.input)} · cache read ${fmtInt(u.cacheRead)} · cache write ${fmtInt(u.cacheWrite)})`)} · output ${fmtInt(u.output)}${u.model ? ` · ${u.model}` : ''}${u.line !== undefined ? pc.dim(` · line ${u.line}`) : pc.dim(` · entry ${u.entry}`)}`,
    );
  } else out.push(`${label('last usage')}${pc.dim('no provider-reported usage in this transcript')}`);
  if (r.compactions.length === 0) out.push(`${label('compactions')}${pc.dim('none')}`);
  r.compactions.forEach((c, i) => {
    out.push(`${label(i === 0 ? 'compactions' : '')}${renderCompaction(c).join(' · ')}`);
  });
  if (r.problems.length === 0) out.push(`${label('problems')}${pc.dim('none')}`);
  else {
    out.push(
      `${label('problems')}${pc.yellow(`${r.problems.length}`)} ${pc.dim(
        `(${Object.entries(r.problemCounts)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')})`,
      )}`,
    );
    for (const p of r.problems.slice(0, 10)) out.push(`${' '.repeat(12)}${pc.yellow(p.kind)} ${p.message}`);
    if (r.problems.length > 10) out.push(`${' '.repeat(12)}${pc.dim(`… ${r.problems.length - 10} more (see --json)`)}`);
  }
  if (r.context) {
    out.push('');
    out.push(pc.bold('context'));
    out.push(renderBreakdownText(r.context, { color: pc.isColorSupported }).trimEnd());
    const byTool = renderToolCosts(r.context);
    if (byTool) out.push('', byTool);
  } else if (r.contextNote) out.push(`${label('context')}${pc.dim(r.contextNote)}`);
  return `${out.join('\n')}\n`;
}

function renderCompaction(c: InspectCompaction): string[] {
  const where = c.line !== undefined ? `line ${c.line}` : `entry ${c.entry}`;
  if (c.undone !== undefined) {
    // An undo's record: no summary, nothing archived; it names what it took back.
    const of =
      c.undone.length > 0
        ? c.undone
            .slice()
            .reverse()
            .map((n) => `#${n}`)
            .join(', ')
        : 'nothing in view';
    const parts = [`#${c.number} undo of ${of}`, where];
    if (c.tokensBefore !== undefined)
      parts.push(
        c.tokensAfter !== undefined
          ? `${fmtInt(c.tokensBefore)} → ${fmtInt(c.tokensAfter)} tokens`
          : `${fmtInt(c.tokensBefore)} tokens before`,
      );
    return parts;
  }
  const parts = [`#${c.number} by ${c.native ? `${c.native.provider} (on its side)` : c.source}`, where];
  if (c.tokensBefore !== undefined) parts.push(`${fmtInt(c.tokensBefore)} tokens before`);
  if (c.trigger) parts.push(c.trigger);
  parts.push(
    c.native && c.summaryChars === 0
      ? 'summary opaque (encrypted by the provider)'
      : `summary ${fmtInt(c.summaryChars)} chars`,
  );
  if (c.archived) parts.push(`archived entries ${c.archived.fromEntry}–${c.archived.toEntry}`);
  const by = c.undoneBy;
  if (by)
    parts.push(
      by.number !== undefined
        ? `undone by #${by.number}`
        : `undone (the undo at ${by.line !== undefined ? `line ${by.line}` : `entry ${by.entry}`})`,
    );
  else if (c.inView === false) parts.push('not in view (on a branch left behind)');
  return parts;
}

/** Which tools' calls and results fill the context (top 12), then the same per MCP server. */
function renderToolCosts(c: ContextBreakdown): string {
  const tools = Object.entries(c.byTool ?? {});
  if (tools.length === 0) return '';
  const row = (name: string, x: { calls: number; results: number; tokens: number; callTokens: number }) => [
    name,
    fmtInt(x.calls),
    fmtInt(x.results),
    fmtInt(x.tokens),
    fmtInt(x.callTokens),
    pct((x.tokens + x.callTokens) / c.window),
  ];
  const head = ['tool', 'calls', 'results', 'result tokens', 'call tokens', 'of window'];
  const rows = tools.slice(0, 12).map(([n, x]) => row(n, x));
  if (tools.length > 12) rows.push([pc.dim(`… ${tools.length - 12} more (see --json)`), '', '', '', '', '']);
  const out = [pc.bold('context by tool'), table(head, rows)];
  const servers = Object.entries(c.byMcpServer ?? {});
  if (servers.length > 0)
    out.push(
      '',
      pc.bold('context by MCP server'),
      table(
        ['server', ...head.slice(1)],
        servers.map(([n, x]) => row(n, x)),
      ),
    );
  return out.join('\n');
}

function pct(x: number): string {
  return `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`;
}

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
