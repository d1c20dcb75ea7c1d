/**
 * Finding and reading `abridge.config.json`: an explicit path (`--config FILE`) wins; otherwise the nearest
 * `abridge.config.json` or `.abridge/abridge.config.json` from the working directory up to the filesystem root.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { AbridgeError } from '../errors.js';
import { findConfigFile } from './config-find.js';
import { DEFAULT_CONFIG, parseConfig, type AbridgeConfig } from './config.js';

export { CONFIG_DIR_NAME, CONFIG_FILE_NAME, findConfigFile } from './config-find.js';

/**
 * The configuration: from `path` when given (relative to `cwd`; a missing file is an error), else from the nearest
 * file found from `cwd` (default: the process's), else the defaults (`source` undefined). Throws `INVALID_CONFIG`
 * for invalid JSON (file:line:column) or invalid settings (every problem, one per line).
 */
export async function loadConfig(options: { path?: string; cwd?: string } = {}): Promise<AbridgeConfig> {
  const cwd = resolve(options.cwd ?? process.cwd());
  const file = options.path !== undefined ? resolve(cwd, options.path) : findConfigFile(cwd);
  if (file === undefined) return structuredClone(DEFAULT_CONFIG);
  const source = options.path ?? file;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new AbridgeError('FILE_NOT_FOUND', `${source}: no such configuration file`);
    if (code === 'EISDIR')
      throw new AbridgeError('FILE_UNREADABLE', `${source}: is a directory, expected a configuration file`);
    throw new AbridgeError('FILE_UNREADABLE', `${source}: cannot read the configuration file (${code ?? String(err)})`);
  }
  const config = parseConfigText(text, source);
  // A catalog file named in the configuration is found beside it, wherever abridge runs from.
  const catalog = config.budget.catalog;
  if (catalog !== undefined && !isAbsolute(catalog)) config.budget.catalog = resolve(dirname(file), catalog);
  return config;
}

/** Parses the text of a configuration file (JSON) and validates it; `source` names it in messages. */
export function parseConfigText(text: string, source: string): AbridgeConfig {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const m = /at position (\d+)/.exec(message);
    const offset = m ? Number(m[1]) : jsonErrorOffset(text);
    const { line, column } = lineColumn(text, offset);
    const reason = message
      .replace(/ (?:in JSON )?at position \d+.*$/s, '')
      .replace(/, ".*" is not valid JSON$/s, '')
      .replace(/ \(line \d+ column \d+\)$/, '');
    throw new AbridgeError('INVALID_CONFIG', `${source}:${line}:${column}: invalid JSON: ${reason}`);
  }
  return parseConfig(value, source);
}

/** 1-based line and column of a character offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lastBreak = before.lastIndexOf('\n');
  return { line: before.split('\n').length, column: before.length - lastBreak };
}

/**
 * Where JSON text first goes wrong (for engines whose JSON.parse message gives no position, as V8's "Unexpected
 * token 'x', "…" is not valid JSON" does); -1 if it is valid.
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const word = (w: string) => {
    for (const ch of w)
      if (text[i] === ch) i++;
      else fail(); // prettier-ignore
  };
  const string = () => {
    i++;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail();
      if (c !== 0x5c) i++;
      else if (text[i + 1] === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
      else if ('"\\/bfnrt'.includes(text[i + 1] ?? 'x')) i += 2;
      else i++, fail();
    }
    fail();
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      ws();
      if (text[i] === close) return void i++;
      for (;;) {
        ws();
        if (c === '{') {
          if (text[i] !== '"') fail();
          string();
          ws();
          if (text[i] !== ':') fail();
          i++;
        }
        value();
        ws();
        if (text[i] === close) return void i++;
        if (text[i] !== ',') fail();
        i++;
      }
    }
    if (c === '"') {
      string();
      return;
    }
    if (c === 't' || c === 'f' || c === 'n') {
      word(c === 't' ? 'true' : c === 'f' ? 'false' : 'null');
      return;
    }
    const number = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    number.lastIndex = i;
    if (!number.test(text)) fail();
    i = number.lastIndex;
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
    return -1;
  } catch (at) {
    if (typeof at === 'number') return at;
    throw at;
  }
}
