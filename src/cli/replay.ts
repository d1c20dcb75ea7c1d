import type { Command } from 'commander';
import pc from 'picocolors';
import { readSession } from '../formats/read.js';
import { inputOptions, INSTANCE_OPTION, sourceOptions } from './input.js';
import { getFormat } from '../formats/registry.js';
import { replaySession, summarizeReplay } from '../analysis/replay.js';
import type { ReplayRequest } from '../tokens/replay.js';
import { loadExactTokenizer } from '../tokens/exact.js';
import { progressReporter } from './progress.js';
import { fmtInt, table } from './render.js';
import { redactSerialized } from '../redact/redact.js';
import { outputRedactor } from './redaction.js';
import { escapeControls, escapeControlsDeep, jsonForTerminal } from './terminal.js';
import { AbridgeError } from '../errors.js';

export function registerReplay(program: Command): void {
  program
    .command('replay')
    .description(
      "Replay a transcript request by request: abridge's prompt-size prediction beside what the provider billed",
    )
    .argument('<file>', 'transcript with provider-reported usage (pi, Claude Code, Codex, OpenHands)')
    .option('-f, --format <id>', 'read as this format instead of detecting it')
    .option(...INSTANCE_OPTION)
    .option('--exact', 'count content with the o200k_base tokenizer instead of the estimator')
    .option(
      '--prefix-tokens <n>',
      "tokens of the agent's system prompt and tools, not in the transcript (default: per agent)",
    )
    .option(
      '--json',
      'print one JSON object: {file, format, requests: [{index, model, reported, predicted, estimateOnly}], summary}',
    )
    .action(async (file: string, opts: { format?: string; json?: boolean; exact?: boolean; prefixTokens?: string }) => {
      if (opts.format) getFormat(opts.format);
      let prefixTokens: number | undefined;
      if (opts.prefixTokens !== undefined) {
        prefixTokens = Number(opts.prefixTokens);
        if (!Number.isInteger(prefixTokens) || prefixTokens < 0)
          throw new AbridgeError(
            'INVALID_INPUT',
            `--prefix-tokens: expected a whole number ≥ 0, got "${opts.prefixTokens}"`,
          );
      }
      const progress = progressReporter(file);
      const session = await readSession(file, {
        ...sourceOptions(opts),
        ...inputOptions(),
        onProgress: progress.update,
      }).finally(() => progress.stop());
      const exact = opts.exact ? await loadExactTokenizer('o200k_base') : undefined;
      const requests = replaySession(session, {
        ...(exact ? { exact } : {}),
        ...(prefixTokens !== undefined ? { prefixTokens } : {}),
      });
      const summary = summarizeReplay(requests);
      // A report leaves the process: names and paths in it are redacted like any other output.
      const redact = await outputRedactor();
      if (opts.json) {
        process.stdout.write(
          jsonForTerminal(
            redactSerialized(
              `${JSON.stringify({ file, format: session.format, counting: exact ? exact.encoding : 'estimate', requests, summary }, null, 2)}\n`,
              redact,
            ),
          ),
        );
        return;
      }
      // Model ids and the file's name come from outside: control characters shown, not obeyed; secrets redacted.
      process.stdout.write(redact(renderReplay(escapeControls(file), escapeControlsDeep(requests), summary)));
    });
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

function signed(pred: number, reported: number): string {
  const e = (pred - reported) / reported;
  const s = `${e >= 0 ? '+' : ''}${(e * 100).toFixed(1)}%`;
  return Math.abs(e) > 0.05 ? pc.yellow(s) : s;
}

function renderReplay(file: string, requests: ReplayRequest[], summary: ReturnType<typeof summarizeReplay>): string {
  const out: string[] = [pc.bold(file)];
  if (requests.length === 0) {
    out.push(pc.dim('no provider-reported usage in this transcript: nothing to compare'));
    return `${out.join('\n')}\n`;
  }
  const shown = requests.length > 40 ? [...requests.slice(0, 20), undefined, ...requests.slice(-20)] : requests;
  out.push(
    table(
      ['entry', 'model', 'reported', 'predicted', 'error', 'estimate only', 'error'],
      shown.map((r) =>
        r
          ? [
              String(r.index),
              r.model,
              fmtInt(r.reported),
              fmtInt(r.predicted) + (r.anchored ? '' : pc.dim('*')),
              signed(r.predicted, r.reported),
              fmtInt(r.estimateOnly),
              signed(r.estimateOnly, r.reported),
            ]
          : ['…', pc.dim(`${requests.length - 40} more`), '', '', '', '', ''],
      ),
    ),
  );
  out.push(
    pc.dim('* no usable earlier report (first request, or after a compaction or model change): counted, not anchored'),
  );
  out.push('');
  const rows: string[][] = [];
  for (const [k, s] of Object.entries(summary))
    if (s)
      rows.push([
        k,
        fmtInt(s.requests),
        pct(s.predicted.median),
        pct(s.predicted.p90),
        pct(s.estimateOnly.median),
        pct(s.estimateOnly.p90),
      ]);
  out.push(table(['family', 'requests', 'predicted median', 'p90', 'estimate-only median', 'p90'], rows));
  return `${out.join('\n')}\n`;
}
