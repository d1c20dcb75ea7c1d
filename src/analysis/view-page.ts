import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { createGzip, type Gzip, gzipSync } from 'node:zlib';
import { AbridgeError } from '../errors.js';
import { packageFile } from '../package-file.js';
import type { ViewData } from './view-data.js';

/** The files the page is made of: the template, its style and script (in analysis/view/ of the package), and uPlot. */
interface PageAssets {
  html: string;
  css: string;
  js: string;
  uplotJs: string;
  uplotCss: string;
}

let cached: PageAssets | undefined;

function asset(path: URL | string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new AbridgeError(
      'MISSING_DEPENDENCY',
      `abridge view: cannot read ${what} (${String(path)}): ${err instanceof Error ? err.message : String(err)}; reinstall abridge${what === 'uPlot' ? ' (its dependency uplot)' : ''}`,
    );
  }
}

function loadAssets(): PageAssets {
  if (cached) return cached;
  // The page files sit in analysis/view/ of src/ and of dist/ (copied by the build).
  const template = packageFile('analysis/view/page.html');
  const dir = template ? pathToFileURL(template) : new URL('./view/', import.meta.url);
  const require = createRequire(import.meta.url);
  let uplotDir: string;
  try {
    uplotDir = require.resolve('uplot/dist/uPlot.iife.min.js').replace(/uPlot\.iife\.min\.js$/, '');
  } catch {
    throw new AbridgeError(
      'MISSING_DEPENDENCY',
      'abridge view needs the uplot package (a dependency of abridge): reinstall abridge, or npm install uplot',
    );
  }
  cached = {
    html: asset(new URL('page.html', dir), 'the page template'),
    css: asset(new URL('page.css', dir), 'the page style'),
    js: asset(new URL('page.js', dir), 'the page script'),
    uplotJs: asset(`${uplotDir}uPlot.iife.min.js`, 'uPlot'),
    uplotCss: asset(`${uplotDir}uPlot.min.css`, 'uPlot'),
  };
  return cached;
}

/** Text safe inside a <script> or <style> element. */
function inert(text: string): string {
  return text.replace(/<\/(script|style)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

/** A CSP source for an inline element's text: the base64 SHA-256 of its UTF-8 bytes. */
function hashSource(text: string): string {
  return `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
}

/** The page and its Content-Security-Policy (the same policy the page's meta element carries). */
export interface RenderedViewPage {
  html: string;
  /** For a response header: the meta policy plus what only a header can say (frame-ancestors). */
  headerPolicy: string;
}

/**
 * The viewer as one self-contained HTML document: every asset inlined, no network access when opened. The page data is
 * inlined as JSON; the full texts of the messages as one gzip blob (base64) the page decompresses on first use.
 */
export function renderViewPage(data: ViewData, texts: readonly string[]): string {
  return renderViewPageWithPolicy(data, texts).html;
}

/**
 * The page, and the policy it runs under: no 'unsafe-inline' — its two scripts and two styles are allowed by their
 * hashes, nothing else runs (no inline handler, no style attribute: the page script styles through the CSSOM), and
 * it loads nothing (default-src 'none'; images only as data: URLs).
 */
export function renderViewPageWithPolicy(data: ViewData, texts: readonly string[]): RenderedViewPage {
  const frame = pageFrame(data);
  // The same bytes GzipTexts gives, the texts compressed in one piece (deflate's output does not depend on how its
  // input is cut).
  const blob = gzipSync(Buffer.from(JSON.stringify(texts)), { level: GZIP_LEVEL }).toString('base64');
  return { html: frame.head + blob + frame.tail, headerPolicy: frame.headerPolicy };
}

/**
 * Writes the page piece by piece through `write` (writeFileAtomic's producer): the page data, the scripts, then the
 * texts already compressed (`GzipTexts`), in base64 a piece at a time. The same bytes as `renderViewPageWithPolicy`.
 * Returns the policy (for a response header) and the bytes written.
 */
export async function writeViewPage(
  data: ViewData,
  texts: CompressedTexts,
  write: (chunk: string) => Promise<void>,
): Promise<{ headerPolicy: string; bytes: number }> {
  const frame = pageFrame(data);
  let bytes = 0;
  const put = async (s: string) => {
    bytes += Buffer.byteLength(s);
    await write(s);
  };
  await put(frame.head);
  for (const piece of base64Pieces(texts.chunks)) await put(piece);
  await put(frame.tail);
  return { headerPolicy: frame.headerPolicy, bytes };
}

/** Base64 of the chunks as one text, a piece per ~1 MB: every piece but the last encodes a multiple of 3 bytes. */
function* base64Pieces(chunks: readonly Buffer[]): Generator<string> {
  const PIECE = 3 << 18;
  let carry: Buffer = Buffer.alloc(0);
  for (const chunk of chunks) {
    let buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    while (buf.length >= PIECE) {
      yield buf.subarray(0, PIECE).toString('base64');
      buf = buf.subarray(PIECE);
    }
    const whole = buf.length - (buf.length % 3);
    if (whole > 0) yield buf.subarray(0, whole).toString('base64');
    carry = Buffer.from(buf.subarray(whole));
  }
  if (carry.length > 0) yield carry.toString('base64');
}

const GZIP_LEVEL = 1;

/** The full texts of the page, gzipped: `JSON.stringify(texts)` compressed as a whole. */
export interface CompressedTexts {
  chunks: Buffer[];
  /** Number of texts. */
  count: number;
}

/**
 * The texts of the page gzipped as they come (a ViewTextSink): `JSON.stringify` of the array of texts, compressed a
 * batch at a time, so that only the compressed bytes are held (a fifth to a tenth of the texts). `finish` gives the
 * same bytes `gzipSync(JSON.stringify(texts), level 1)` does.
 */
export class GzipTexts {
  private readonly gzip: Gzip = createGzip({ level: GZIP_LEVEL, chunkSize: BATCH });
  private readonly chunks: Buffer[] = [];
  private readonly ended: Promise<void>;
  /**
   * Batches are encoded into buffers the stream gives back once it has compressed them (its write callback): the
   * texts of a large session then cost a few batches of memory, not a trail of buffers waiting to be collected.
   */
  private readonly free: Buffer[] = [];
  private batch: Buffer;
  private used = 0;
  private count = 0;
  /** Batches given to the stream and not yet compressed, and who waits for them (`drained`). */
  private waiting = 0;
  private readonly waiters: (() => void)[] = [];

  constructor() {
    this.batch = Buffer.allocUnsafeSlow(BATCH);
    this.gzip.on('data', (c: Buffer) => this.chunks.push(c));
    this.ended = new Promise((done, fail) => {
      this.gzip.once('end', done);
      this.gzip.once('error', fail);
    });
  }

  add(text: string): void {
    const json = `${this.count++ === 0 ? '[' : ','}${JSON.stringify(text)}`;
    // (At most 3 bytes a UTF-16 unit.)
    if (this.used + json.length * 3 > BATCH) {
      this.flush();
      if (json.length * 3 > BATCH) {
        this.gzip.write(Buffer.from(json));
        return;
      }
    }
    this.used += this.batch.write(json, this.used);
  }

  private flush(): void {
    if (this.used === 0) return;
    const batch = this.batch;
    this.waiting++;
    this.gzip.write(batch.subarray(0, this.used), () => {
      this.free.push(batch);
      this.waiting--;
      if (this.waiting <= 1) for (const go of this.waiters.splice(0)) go();
    });
    this.batch = this.free.pop() ?? Buffer.allocUnsafeSlow(BATCH);
    this.used = 0;
  }

  /**
   * Settles once the stream has caught up (a batch at most still to compress), for a reader to await before it reads
   * on (`ReadOptions.pace`): the stream compresses in the background, and a reader faster than it would otherwise
   * leave the texts of a large session waiting in memory uncompressed.
   */
  drained(): Promise<void> | undefined {
    if (this.waiting <= 2) return undefined;
    return new Promise((go) => this.waiters.push(go));
  }

  async finish(): Promise<CompressedTexts> {
    const close = this.count === 0 ? '[]' : ']';
    if (this.used + close.length > BATCH) this.flush();
    this.used += this.batch.write(close, this.used);
    this.flush();
    this.gzip.end();
    await this.ended;
    return { chunks: this.chunks, count: this.count };
  }

  /** Lets go of the stream, when the texts will not be used (the stream reader's first pass gave way to a second). */
  discard(): void {
    this.chunks.length = 0;
    this.free.length = 0;
    this.gzip.destroy();
    for (const go of this.waiters.splice(0)) go();
  }
}

/** Bytes of a batch of texts given to gzip at once. */
const BATCH = 1 << 20;

interface PageFrame {
  /** The page up to the texts' blob. */
  head: string;
  /** The page after it. */
  tail: string;
  headerPolicy: string;
}

/** The page around the texts' blob (the last element of the page). */
function pageFrame(data: ViewData): PageFrame {
  const a = loadAssets();
  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  const title = `abridge view · ${data.meta.title}`.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!,
  );
  const uplotCss = inert(a.uplotCss);
  const pageCss = inert(a.css);
  const uplotJs = inert(a.uplotJs);
  const pageJs = inert(a.js);
  const policy = [
    "default-src 'none'",
    `script-src ${hashSource(uplotJs)} ${hashSource(pageJs)}`,
    `style-src ${hashSource(uplotCss)} ${hashSource(pageCss)}`,
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  const parts: Record<string, string> = {
    '/*CSP*/': policy,
    '/*TITLE*/': title,
    '/*UPLOT_CSS*/': uplotCss,
    '/*PAGE_CSS*/': pageCss,
    '/*DATA*/': json,
    '/*UPLOT_JS*/': uplotJs,
    '/*PAGE_JS*/': pageJs,
  };
  // One pass over each side of the template, so that no inserted text is searched for placeholders.
  const fill = (text: string) =>
    text.replace(/\/\*(CSP|TITLE|UPLOT_CSS|PAGE_CSS|DATA|UPLOT_JS|PAGE_JS)\*\//g, (m) => parts[m]!);
  const [before, after, ...more] = a.html.split('/*TEXTS*/');
  if (after === undefined || more.length > 0)
    throw new AbridgeError('MISSING_DEPENDENCY', "abridge view: the page template must hold the texts' place once");
  return { head: fill(before!), tail: fill(after), headerPolicy: `${policy}; frame-ancestors 'none'` };
}
