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
  return { html: [...pagePieces(frame, data, [blob])].join(''), headerPolicy: frame.headerPolicy };
}

/**
 * Writes the page piece by piece through `write` (writeFileAtomic's producer): the page data (its records a few
 * hundred at a time), the scripts, then the texts already compressed (`GzipTexts`), in base64 a piece at a time — no
 * piece large, none of them kept. The same bytes as `renderViewPageWithPolicy`. Returns the policy (for a response
 * header) and the bytes written.
 */
export async function writeViewPage(
  data: ViewData,
  texts: CompressedTexts,
  write: (chunk: string) => Promise<void>,
): Promise<{ headerPolicy: string; bytes: number }> {
  const frame = pageFrame(data);
  let bytes = 0;
  for (const piece of pagePieces(frame, data, base64Pieces(texts.chunks))) {
    bytes += Buffer.byteLength(piece);
    await write(piece);
  }
  return { headerPolicy: frame.headerPolicy, bytes };
}

/** Bytes of the texts' gzip encoded in one piece of base64: a multiple of 3, so that the pieces join into one. */
const BASE64_PIECE = 3 * (1 << 14);

/** Base64 of the chunks as one text, a piece at a time: every piece but the last encodes a multiple of 3 bytes. */
function* base64Pieces(chunks: readonly Buffer[]): Generator<string> {
  let carry: Buffer = Buffer.alloc(0);
  for (const chunk of chunks) {
    let buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    while (buf.length >= BASE64_PIECE) {
      yield buf.subarray(0, BASE64_PIECE).toString('base64');
      buf = buf.subarray(BASE64_PIECE);
    }
    carry = Buffer.from(buf);
  }
  if (carry.length > 0) yield carry.toString('base64');
}

/** Records of the page data in one piece of its JSON. */
const RECORDS_PIECE = 256;

/**
 * `JSON.stringify(data)` in pieces, `<` escaped (the data sits in a script element): the records, most of it, a few
 * hundred at a time.
 */
function* dataJson(data: ViewData): Generator<string> {
  const scriptSafe = (json: string) => json.replace(/</g, '\\u003c');
  const keys = Object.keys(data);
  if (keys[keys.length - 1] !== 'records' || !Array.isArray(data.records)) {
    yield scriptSafe(JSON.stringify(data));
    return;
  }
  const { records, ...rest } = data;
  const head = JSON.stringify(rest);
  yield `${scriptSafe(head.slice(0, -1))}${head === '{}' ? '' : ','}"records":[`;
  for (let i = 0; i < records.length; i += RECORDS_PIECE)
    yield `${i === 0 ? '' : ','}${scriptSafe(
      records
        .slice(i, i + RECORDS_PIECE)
        .map((r) => JSON.stringify(r))
        .join(','),
    )}`;
  yield ']}';
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
const BATCH = 1 << 18;

interface PageFrame {
  /** The template cut at its places: text at even indices, a place (the data, the title…) at odd ones. */
  segments: string[];
  /** What fills each place but the data's and the texts'. */
  fills: Record<string, string>;
  headerPolicy: string;
}

const PLACES = /(\/\*(?:CSP|TITLE|UPLOT_CSS|PAGE_CSS|DATA|TEXTS|UPLOT_JS|PAGE_JS)\*\/)/;

/** The page's template, and what fills its places. */
function pageFrame(data: ViewData): PageFrame {
  const a = loadAssets();
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
  const fills: Record<string, string> = {
    '/*CSP*/': policy,
    '/*TITLE*/': title,
    '/*UPLOT_CSS*/': uplotCss,
    '/*PAGE_CSS*/': pageCss,
    '/*UPLOT_JS*/': uplotJs,
    '/*PAGE_JS*/': pageJs,
  };
  const segments = a.html.split(PLACES);
  if (segments.filter((s, i) => i % 2 === 1 && s === '/*TEXTS*/').length !== 1)
    throw new AbridgeError('MISSING_DEPENDENCY', "abridge view: the page template must hold the texts' place once");
  return { segments, fills, headerPolicy: `${policy}; frame-ancestors 'none'` };
}

/**
 * The page in order: the template's text, and what fills each place (inserted text is never searched for places).
 * The texts' blob (the last element of the page) comes from `blob`.
 */
function* pagePieces(frame: PageFrame, data: ViewData, blob: Iterable<string>): Generator<string> {
  for (let i = 0; i < frame.segments.length; i++) {
    const s = frame.segments[i]!;
    if (i % 2 === 0) {
      if (s !== '') yield s;
    } else if (s === '/*DATA*/') yield* dataJson(data);
    else if (s === '/*TEXTS*/') yield* blob;
    else yield frame.fills[s]!;
  }
}
