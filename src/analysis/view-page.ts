import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
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
  const a = loadAssets();
  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  const blob = gzipSync(Buffer.from(JSON.stringify(texts)), { level: 1 }).toString('base64');
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
    '/*TEXTS*/': blob,
    '/*UPLOT_JS*/': uplotJs,
    '/*PAGE_JS*/': pageJs,
  };
  // One pass over the template, so that no inserted text is searched for placeholders.
  const html = a.html.replace(/\/\*(CSP|TITLE|UPLOT_CSS|PAGE_CSS|DATA|TEXTS|UPLOT_JS|PAGE_JS)\*\//g, (m) => parts[m]!);
  return { html, headerPolicy: `${policy}; frame-ancestors 'none'` };
}
