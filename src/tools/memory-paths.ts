import { AbridgeError } from '../errors.js';

/** The virtual directory the memory tool shows the model; it maps to one real directory. */
export const MEMORY_ROOT = '/memories';
/** At most this many UTF-8 bytes in one path segment (the common file-name limit). */
export const MAX_SEGMENT_BYTES = 255;
/** At most this many UTF-8 bytes in a whole path. */
export const MAX_PATH_BYTES = 1024;
/** At most this many segments below /memories. */
export const MAX_DEPTH = 16;

/** The punctuation a segment may use besides letters, digits and combining marks. */
export const SEGMENT_PUNCTUATION = ' . _ - + @ , = ( ) # ~';
const SAFE_SEGMENT = /^[\p{L}\p{N}\p{M} ._+@,=()#~-]+$/u;
const SAFE_CHAR = /^[\p{L}\p{N}\p{M} ._+@,=()#~-]$/u;

/** A checked memory path: `virtual` is its canonical form (no trailing slash), `segments` the names below /memories. */
export interface MemoryPath {
  virtual: string;
  segments: string[];
}

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');
const fmt = (x: number) => x.toLocaleString('en-US');

/** A path as error messages show it: JSON-quoted (so control characters are visible), cut to 80 characters. */
export function showPath(p: string): string {
  const chars = [...p];
  return JSON.stringify(chars.length > 80 ? `${chars.slice(0, 80).join('')}…` : p);
}

const codePoint = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

function invalid(p: string, reason: string): AbridgeError {
  return new AbridgeError('INVALID_INPUT', `Invalid path ${showPath(p)}: ${reason}.`);
}

/**
 * Checks a path the model gave and returns its segments below /memories, or throws AbridgeError('INVALID_INPUT')
 * saying what is wrong. A path must be `/memories` or start with `/memories/`; segments are taken literally (nothing is
 * decoded) and may use only letters, digits, combining marks, spaces and `. _ - + @ , = ( ) # ~`, must be in Unicode
 * NFKC form (so nothing can alias "." or ".." or another name after normalization), may not start with "." (no ".",
 * "..", hidden names) nor end with "." or a space, and are at most 255 bytes; at most 16 of them and 1,024 bytes in all.
 * One trailing "/" is allowed. Symlinks and other filesystem checks are the caller's: this is the textual gate.
 */
export function parseMemoryPath(p: unknown): MemoryPath {
  if (typeof p !== 'string')
    throw new AbridgeError(
      'INVALID_INPUT',
      `Invalid path ${JSON.stringify(p) ?? String(p)}: expected a string such as /memories/notes.md.`,
    );
  if (p === '') throw invalid(p, 'it is empty; memory paths look like /memories/notes.md');
  if (p.includes('\0')) throw invalid(p, 'it contains a NUL byte');
  const control = /\p{Cc}/u.exec(p);
  if (control) throw invalid(p, `it contains the control character ${codePoint(control[0])}`);
  const bytes = utf8(p);
  if (bytes > MAX_PATH_BYTES) throw invalid(p, `it is ${fmt(bytes)} bytes long; the limit is ${fmt(MAX_PATH_BYTES)}`);
  if (p.includes('\\')) throw invalid(p, 'it contains a backslash; separate segments with "/"');
  if (p.includes('%'))
    throw invalid(
      p,
      'it contains "%"; paths are taken literally (percent-encoding such as %2e is not decoded) and "%" is not allowed',
    );
  if (!p.startsWith('/'))
    throw invalid(p, `it is not absolute; memory paths start with ${MEMORY_ROOT}, e.g. ${MEMORY_ROOT}/notes.md`);
  const q = p.endsWith('/') ? p.slice(0, -1) : p;
  if (q !== MEMORY_ROOT && !q.startsWith(`${MEMORY_ROOT}/`)) {
    throw invalid(p, `it is outside ${MEMORY_ROOT}; the memory tool only reaches paths under ${MEMORY_ROOT}/`);
  }
  const segments = q === MEMORY_ROOT ? [] : q.slice(MEMORY_ROOT.length + 1).split('/');
  for (const seg of segments) {
    if (seg === '') throw invalid(p, 'it contains an empty segment ("//")');
    if (seg === '..') throw invalid(p, `it contains a ".." segment; paths may not leave ${MEMORY_ROOT}`);
    if (seg === '.') throw invalid(p, 'it contains a "." segment; write the path without it');
    const nfkc = seg.normalize('NFKC');
    if (nfkc !== seg) {
      throw invalid(
        p,
        `the segment ${showPath(seg)} changes under Unicode normalization (NFKC: ${showPath(nfkc)}); fullwidth, ligature and other compatibility characters, and decomposed accents, are not allowed`,
      );
    }
    if (seg.startsWith('.'))
      throw invalid(p, `the segment ${showPath(seg)} starts with "."; hidden names are reserved`);
    if (seg.endsWith('.') || seg.endsWith(' ') || seg.startsWith(' '))
      throw invalid(p, `the segment ${showPath(seg)} starts or ends with a space or ends with "."`);
    if (!SAFE_SEGMENT.test(seg)) {
      const bad = [...seg].find((ch) => !SAFE_CHAR.test(ch))!;
      throw invalid(
        p,
        `the segment ${showPath(seg)} contains ${showPath(bad)} (${codePoint(bad)}); names may use letters, digits, spaces and ${SEGMENT_PUNCTUATION}`,
      );
    }
    const segBytes = utf8(seg);
    if (segBytes > MAX_SEGMENT_BYTES)
      throw invalid(p, `a segment is ${fmt(segBytes)} bytes long; the limit is ${MAX_SEGMENT_BYTES}`);
  }
  if (segments.length > MAX_DEPTH) throw invalid(p, `it is ${segments.length} levels deep; the limit is ${MAX_DEPTH}`);
  return { virtual: segments.length === 0 ? MEMORY_ROOT : `${MEMORY_ROOT}/${segments.join('/')}`, segments };
}

/** Whether `name` (one directory entry) could be addressed by a memory path. */
export function isAddressableName(name: string): boolean {
  try {
    return parseMemoryPath(`${MEMORY_ROOT}/${name}`).segments.length === 1;
  } catch {
    return false;
  }
}
