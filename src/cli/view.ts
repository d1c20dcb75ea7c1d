import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { writeFileAtomic } from '../atomic-write.js';
import { AbridgeError } from '../errors.js';
import { readSession } from '../formats/read.js';
import { getFormat } from '../formats/registry.js';
import type { ViewData } from '../analysis/view-data.js';
import type { CompressedTexts } from '../analysis/view-page.js';
import { isStdinPath } from '../formats/stream-input.js';
import type { Session } from '../model/types.js';
import { createRedactor } from '../redact/redact.js';
import { addConfigOptions, resolveConfig, type ConfigFlags } from './config-options.js';
import { progressReporter } from './progress.js';
import { tokenCounterFor } from './tokens.js';
import { INSTANCE_OPTION, sourceOptions } from './input.js';

interface ViewFlags extends ConfigFlags {
  db?: string;
  session?: string;
  out?: string;
  serve?: boolean;
  port?: string;
  format?: string;
  exact?: boolean;
}

export function registerView(program: Command): void {
  const cmd = program
    .command('view')
    .description(
      'One self-contained HTML page of a session: usage per request against the window, the /context breakdown as of any request (per tool and MCP server), every compaction, and the conversation (searchable)',
    )
    .argument(
      '[transcript]',
      'transcript file (pi, Claude Code, Codex, Copilot CLI, SWE-agent, OpenHands, an API request body)',
    )
    .option(
      '--db <path|url>',
      'read the session from a store instead: a SQLite file path, or a postgres:// connection URL',
    )
    .option('--session <id>', 'the stored session (with --db)')
    .option(
      '-o, --out <file>',
      'write the page to this file (default: <transcript name>.view.html in the current directory)',
    )
    .option('--serve', 'serve the page on 127.0.0.1 until Ctrl-C instead of writing a file')
    .option('--port <n>', 'port for --serve (default: any free port)')
    .option('-f, --format <id>', 'read as this format instead of detecting it')
    .option(...INSTANCE_OPTION)
    .option('--exact', 'count tokens with the o200k_base tokenizer instead of the estimator');
  addConfigOptions(cmd).action(async (file: string | undefined, opts: ViewFlags) => {
    if (opts.format) getFormat(opts.format);
    if (opts.out !== undefined && opts.serve)
      throw new AbridgeError('INVALID_INPUT', '--out and --serve: choose one (a file, or a page served on 127.0.0.1)');
    const port = opts.port === undefined ? 0 : Number(opts.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new AbridgeError('INVALID_INPUT', `--port: expected a port number from 0 to 65535, got "${opts.port}"`);
    if (opts.port !== undefined && !opts.serve) throw new AbridgeError('INVALID_INPUT', '--port goes with --serve');
    const config = await resolveConfig(opts);
    const { exact } = await tokenCounterFor(opts.exact === true);
    // The page's builder (and node:zlib, node:http) are loaded by this command only, not at every start of the CLI.
    const [{ buildViewData }, { GzipTexts, writeViewPage }, { buildViewDataStreamed }] = await Promise.all([
      import('../analysis/view-data.js'),
      import('../analysis/view-page.js'),
      import('../analysis/view-stream.js'),
    ]);
    // The page leaves the process: its texts are redacted as the configuration says (view-data.ts, the one point).
    const redact = createRedactor(config.redaction);
    const options = { redact, ...(exact ? { exact } : {}) };
    /** A file is read as a stream; a stored session or standard input whole, first. */
    const streamed =
      file !== undefined && opts.db === undefined && opts.session === undefined && !(await wholeInput(file));
    const whole = streamed ? undefined : await sessionFrom(file, opts);
    /** The page's data and its texts, compressed. */
    const build = async (): Promise<{ data: ViewData; texts: CompressedTexts }> => {
      if (!whole) {
        const progress = progressReporter(file!);
        try {
          return await buildViewDataStreamed(
            file!,
            { ...options, settings: config.budget, source: file! },
            { ...sourceOptions(opts), onProgress: progress.update },
          );
        } finally {
          progress.stop();
        }
      }
      const { session, source } = whole;
      const { data, texts: all } = buildViewData(session, {
        ...options,
        // A stored session is drawn against the window it ran in (unless the command line says otherwise).
        settings: opts.db
          ? (await import('./store-commands.js')).budgetOfStored(config.budget, session)
          : config.budget,
        source,
      });
      const texts = new GzipTexts();
      for (const t of all) texts.add(t);
      return { data, texts: await texts.finish() };
    };
    if (opts.serve) {
      const { data, texts } = await build();
      const pieces: Buffer[] = [];
      const { headerPolicy } = await writeViewPage(data, texts, async (s) => {
        pieces.push(Buffer.from(s));
      });
      await serve(Buffer.concat(pieces), headerPolicy, port);
      return;
    }
    const out = resolve(opts.out ?? `${whole?.name ?? nameOf(file!)}.view.html`);
    // The page is written as it is made, into a temp file renamed over `out` once whole: killed midway, no page.
    let failure: unknown;
    let written: { data: ViewData; bytes: number } | undefined;
    await writeFileAtomic(out, async (write) => {
      try {
        const { data, texts } = await build();
        const { bytes } = await writeViewPage(data, texts, write);
        written = { data, bytes };
      } catch (err) {
        failure = err;
        throw err;
      }
    }).catch((err: unknown) => {
      // (writeFileAtomic names a write error; an error of reading the session is the session's.)
      throw failure ?? err;
    });
    const { data, bytes } = written!;
    process.stdout.write(
      `wrote ${out} (${(bytes / 1048576).toFixed(1)} MB: ${plural(data.points.entry.length, 'request')}, ${plural(data.compactions.length, 'compaction')}, ${plural(data.records.length, 'message')}); open it in a browser: ${pathToFileURL(out).href}\n`,
    );
  });
}

/** The page's default name, of a transcript's. */
function nameOf(file: string): string {
  return basename(file).replace(/\.(jsonl|json|traj)$/i, '');
}

/** Standard input and FIFOs are read whole (once): a file is read as a stream, twice at most. */
async function wholeInput(file: string): Promise<boolean> {
  if (isStdinPath(file)) return true;
  return (await stat(file).catch(() => undefined))?.isFIFO() === true;
}

async function sessionFrom(
  file: string | undefined,
  opts: ViewFlags,
): Promise<{ session: Session; source: string; name: string }> {
  if (opts.db !== undefined || opts.session !== undefined) {
    if (file !== undefined)
      throw new AbridgeError('INVALID_INPUT', `give either a transcript (${file}) or --db with --session, not both`);
    if (!opts.db || !opts.session)
      throw new AbridgeError(
        'INVALID_INPUT',
        '--db and --session go together: the store, and the id of the session in it (see abridge sessions --db …)',
      );
    // Loaded only for --db, like the store commands (the SQLite and PostgreSQL drivers are optional).
    const { readStoredSession } = await import('./store-commands.js');
    return readStoredSession(opts.db, opts.session);
  }
  if (file === undefined)
    throw new AbridgeError('INVALID_INPUT', 'abridge view: give a transcript file, or --db <store> --session <id>');
  const progress = progressReporter(file);
  const session = await readSession(file, {
    ...sourceOptions(opts),
    onProgress: progress.update,
  }).finally(() => progress.stop());
  return { session, source: file, name: nameOf(file) };
}

/**
 * Whether a request's Host header names the address the server bound: 127.0.0.1 or localhost, with its port. Any other
 * name is a page that had a name of its own resolve to 127.0.0.1 (DNS rebinding): to the browser that page and this
 * server are one origin, so it must not be given the page (the transcript it holds).
 */
export function isOwnHost(host: string | undefined, port: number): boolean {
  if (host === undefined) return false;
  const h = host.toLowerCase();
  return h === `127.0.0.1:${port}` || h === `localhost:${port}`;
}

/** Serves the page on 127.0.0.1 only, prints its URL, and runs until the process is interrupted. */
async function serve(body: Buffer, policy: string, port: number): Promise<void> {
  const { createServer } = await import('node:http');
  let bound = port;
  const server = createServer((req, res) => {
    if (req.headers.host === undefined) {
      res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' }).end('a Host header is required\n');
      return;
    }
    if (!isOwnHost(req.headers.host, bound)) {
      res
        .writeHead(421, { 'content-type': 'text/plain', connection: 'close' })
        .end(
          `misdirected request: this server answers only http://127.0.0.1:${bound}/ and http://localhost:${bound}/\n`,
        );
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (req.url !== '/' && req.url !== '/index.html') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the page is at /\n');
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-length': body.length,
      'cache-control': 'no-store',
      'content-security-policy': policy,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cross-origin-resource-policy': 'same-origin',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((done, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      fail(
        new AbridgeError('INVALID_INPUT', `--serve: cannot listen on 127.0.0.1:${port} (${err.code ?? err.message})`),
      ),
    );
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      bound = typeof address === 'object' && address ? address.port : port;
      process.stdout.write(`serving http://127.0.0.1:${bound}/ (Ctrl-C to stop)\n`);
    });
    // A browser keeps its connections open (and opens spare ones): close them too, or Ctrl-C waits for their timeouts.
    const stop = () => {
      server.close(() => done());
      server.closeAllConnections();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

function plural(n: number, what: string): string {
  return `${n.toLocaleString('en-US')} ${what}${n === 1 ? '' : 's'}`;
}
