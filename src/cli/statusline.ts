import type { Command } from 'commander';
import { contextBreakdown, type ContextBreakdown } from '../budget/breakdown.js';
import { compactNumber } from '../budget/report.js';
import type { BudgetSettings } from '../budget/types.js';
import { AbridgeError } from '../errors.js';
import { readSession } from '../formats/read.js';
import { isRecord } from '../formats/format.js';
import { redactForMessage } from '../redact/connection.js';
import { addConfigOptions, resolveConfig, type ConfigFlags } from './config-options.js';
import { escapeControls, jsonForTerminal } from './terminal.js';

/** How long `statusline` waits for its JSON on standard input (Claude Code writes it at once, then closes). */
const STDIN_TIMEOUT_MS = 2_000;
/** Claude Code's statusline input is a small object; anything larger is not it. */
const MAX_INPUT_BYTES = 1024 * 1024;

/** What `abridge statusline --json` prints. */
export interface StatuslineReport {
  /** Predicted prompt tokens of the next request (inspect's `context.used`). */
  used: number;
  window: number;
  /** used / window, 0…1 (what the line shows as a percentage). */
  share: number;
  level: ContextBreakdown['level'];
  /** Where compaction triggers, as a share of the whole window (the line's "compact at"). */
  compactAt: number;
  /** Whether `used` builds on the provider's last reported usage. */
  anchored: boolean;
  model: string;
  transcript: string;
}

/**
 * The figures for one Claude Code statusline input: its transcript read, and measured as `abridge inspect` measures
 * the session's context (contextBreakdown). `input` is the JSON Claude Code writes on standard input: `transcript_path`
 * is required; `model.id` stands for the model when the transcript names none yet (a new session).
 */
export async function statuslineReport(input: string, settings: BudgetSettings): Promise<StatuslineReport> {
  let doc: unknown;
  try {
    doc = JSON.parse(input);
  } catch {
    throw new AbridgeError(
      'INVALID_INPUT',
      input.trim() === ''
        ? 'statusline: no JSON on standard input (Claude Code writes it; see docs/claude-code.md)'
        : 'statusline: standard input is not JSON (Claude Code writes an object with "transcript_path")',
    );
  }
  if (!isRecord(doc))
    throw new AbridgeError('INVALID_INPUT', 'statusline: expected a JSON object on standard input (Claude Code’s)');
  const path = doc.transcript_path;
  if (typeof path !== 'string' || path === '')
    throw new AbridgeError('INVALID_INPUT', 'statusline: the input has no "transcript_path" string');
  const model = isRecord(doc.model) && typeof doc.model.id === 'string' ? doc.model.id : undefined;
  const session = await readSession(path, { keepSourceText: false });
  const c = contextBreakdown(session, {
    settings: settings.model === undefined && model !== undefined ? { ...settings, model } : settings,
  });
  return {
    used: c.used,
    window: c.window,
    share: c.used / c.window,
    level: c.level,
    compactAt: c.marks.compact / c.window,
    anchored: c.anchored,
    model: c.model.id,
    transcript: path,
  };
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** `ctx 62% · 124K/200K · compact at 76%`, coloured by level unless `color` is false; the level named from warn on. */
export function statuslineText(r: StatuslineReport, color: boolean): string {
  // Plain SGR codes: Claude Code reads the line from a pipe, where styleText (which checks the stream) would not colour.
  const code = r.level === 'ok' ? 32 : r.level === 'warn' ? 33 : 31;
  const paint = (s: string) => (color ? `\x1b[${code}m${s}\x1b[39m` : s);
  const level = r.level === 'ok' ? '' : ` · ${paint(r.level)}`;
  const estimate = r.anchored ? '' : '~';
  return `ctx ${paint(`${estimate}${pct(r.share)}`)} · ${compactNumber(r.used)}/${compactNumber(r.window)} · compact at ${pct(r.compactAt)}${level}`;
}

/** Whether to colour: never with NO_COLOR set (https://no-color.org) or `--no-color`. */
export function wantsColor(env: NodeJS.ProcessEnv, flag: boolean | undefined): boolean {
  if (flag === false) return false;
  return env.NO_COLOR === undefined || env.NO_COLOR === '';
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY)
    throw new AbridgeError(
      'INVALID_INPUT',
      'statusline: reads Claude Code’s JSON on standard input (set it as "statusLine" in settings.json)',
    );
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.stdin.destroy();
      reject(new AbridgeError('INPUT_TIMEOUT', `statusline: no input on standard input within ${STDIN_TIMEOUT_MS} ms`));
    }, STDIN_TIMEOUT_MS);
    process.stdin.on('data', (b: Buffer) => {
      size += b.length;
      if (size > MAX_INPUT_BYTES) {
        clearTimeout(timer);
        process.stdin.destroy();
        reject(new AbridgeError('INVALID_INPUT', 'statusline: standard input is over 1 MB; not Claude Code’s JSON'));
        return;
      }
      chunks.push(b);
    });
    process.stdin.on('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    process.stdin.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * `abridge statusline`: the command Claude Code's `statusLine` setting runs. Reads Claude Code's JSON on standard input,
 * measures the transcript it names, prints one line. Problems are printed as that line too, and the exit code is 0:
 * Claude Code shows the first line of standard output and nothing of standard error, so a status line that fails
 * silently would show nothing at all.
 */
export function registerStatusline(program: Command): void {
  const cmd = program
    .command('statusline')
    .description(
      "One line of context pressure for Claude Code's status line: reads its JSON on stdin (transcript_path, model), prints e.g. `ctx 62% · 124K/200K · compact at 76%`",
    )
    .option('--json', 'print one JSON object instead of the line')
    .option('--no-color', 'no colours (also with NO_COLOR set)');
  addConfigOptions(cmd).action(async (opts: ConfigFlags & { json?: boolean; color?: boolean }) => {
    try {
      const config = await resolveConfig(opts);
      const report = await statuslineReport(await readStdin(), config.budget);
      if (opts.json) process.stdout.write(jsonForTerminal(`${JSON.stringify(report)}\n`));
      // Numbers and level names only: nothing from the transcript reaches the line.
      else process.stdout.write(`${statuslineText(report, wantsColor(process.env, opts.color))}\n`);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const line = escapeControls(redactForMessage(message.split('\n')[0] ?? '')).replace(/^statusline: /, '');
      if (opts.json) process.stdout.write(`${JSON.stringify({ error: line })}\n`);
      else process.stdout.write(`abridge: ${line}\n`);
      if (!(err instanceof AbridgeError) && !(err as NodeJS.ErrnoException | null)?.code && process.env.ABRIDGE_DEBUG)
        process.stderr.write(`${(err as Error).stack ?? ''}\n`);
    }
  });
}
