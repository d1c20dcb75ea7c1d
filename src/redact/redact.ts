import { AbridgeError } from '../errors.js';
import type { CompactionMarker, Message, Part, ResultContentPart } from '../model/types.js';
import { boundaryOk, SECRET_KINDS, SECRET_RULES, type SecretRule } from './rules.js';
import { LiteralScanner } from './literals.js';

/**
 * Secret redaction: what abridge applies before text leaves the process's memory for a summary, an LLM summarizer, a
 * result store, an export or a report. A recognized secret is replaced by `[REDACTED:<kind>]` (e.g.
 * `[REDACTED:anthropic-api-key]`); everything else is left exactly as it was.
 */

/** Settings of the redaction (config key `redaction`). */
export interface RedactionSettings {
  /** Redact at all (default true). */
  enabled: boolean;
  /** Built-in rules to leave out, by kind (e.g. `["jwt"]`). */
  disable: readonly string[];
  /** Extra patterns of your own: `{ id, pattern }`, the pattern a regular expression (source text, flags `g` added). */
  patterns: readonly { id: string; pattern: string; flags?: string }[];
}

export const DEFAULT_REDACTION: RedactionSettings = Object.freeze({
  enabled: true,
  disable: Object.freeze([]) as readonly string[],
  patterns: Object.freeze([]) as RedactionSettings['patterns'],
});

/** Text in, text with the recognized secrets replaced out. */
export type Redactor = (text: string) => string;

/** One recognized secret: where it is in the text and which kind. */
export interface SecretMatch {
  kind: string;
  start: number;
  end: number;
}

export const redactionMarker = (kind: string): string => `[REDACTED:${kind}]`;

/** The rules `settings` ask for; throws on an unknown kind or a bad pattern (messages name the key). */
export function redactionRules(settings: Partial<RedactionSettings> = {}): SecretRule[] {
  const disable = new Set(settings.disable ?? []);
  for (const k of disable) {
    if (!SECRET_KINDS.includes(k))
      throw new AbridgeError(
        'INVALID_CONFIG',
        `redaction.disable: unknown kind ${JSON.stringify(k)}; expected some of ${SECRET_KINDS.join(', ')}`,
      );
  }
  const out = SECRET_RULES.filter((r) => !disable.has(r.id));
  for (const [i, p] of (settings.patterns ?? []).entries()) {
    let pattern: RegExp;
    try {
      pattern = new RegExp(p.pattern, `${(p.flags ?? '').replace(/g/g, '')}g`);
    } catch (err) {
      throw new AbridgeError(
        'INVALID_CONFIG',
        `redaction.patterns[${i}].pattern: not a valid regular expression (${(err as Error).message})`,
      );
    }
    if (!/^[a-z0-9][a-z0-9-]*$/.test(p.id))
      throw new AbridgeError(
        'INVALID_CONFIG',
        `redaction.patterns[${i}].id: expected lowercase letters, digits and "-", got ${JSON.stringify(p.id)}`,
      );
    out.push({ id: p.id, description: `custom pattern ${p.pattern}`, pattern });
  }
  return out;
}

/** One scanner per rule set, for its heads and hints together (src/redact/literals.ts). */
const scanners = new WeakMap<readonly SecretRule[], LiteralScanner>();

/**
 * The rules' heads and hints that occur in `text`, found in one pass: a rule whose head is absent, or all of whose
 * hints are, cannot match, so it need not scan the text itself.
 */
function literalsIn(text: string, rules: readonly SecretRule[]): Set<string> {
  let scanner = scanners.get(rules);
  if (scanner === undefined) {
    scanner = new LiteralScanner(rules.flatMap((r) => [...(r.head ? [r.head] : []), ...(r.hints ?? [])]));
    scanners.set(rules, scanner);
  }
  return scanner.present(text);
}

/** Every secret the rules recognize in `text`, in order, without overlaps (the earlier rule wins). */
export function findSecrets(text: string, rules: readonly SecretRule[] = SECRET_RULES): SecretMatch[] {
  // Sorted by start and never overlapping, so a new match is checked against its two neighbours only.
  const found: SecretMatch[] = [];
  const present = literalsIn(text, rules);
  for (const rule of rules) {
    if (rule.head !== undefined && !present.has(rule.head)) continue;
    if (rule.hints !== undefined && !rule.hints.some((h) => present.has(h))) continue;
    const re = rule.pattern;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      // An empty match must not stall the loop.
      if (m[0].length === 0) re.lastIndex++;
      if (!boundaryOk(text, m.index, rule.notAfter)) continue;
      const matchEnd = m.index + m[0].length;
      const group = rule.group === undefined ? undefined : m[rule.group];
      const range: readonly [number, number] | undefined =
        rule.group === undefined
          ? [m.index - (rule.back ?? 0), matchEnd]
          : m.indices
            ? m.indices[rule.group]
            : group === undefined
              ? undefined
              : [matchEnd - group.length, matchEnd];
      if (!range || range[1] <= range[0]) continue;
      let [start, end] = range;
      if (rule.extend) {
        while (end < text.length && rule.extend.test(text[end]!)) end++;
        // The search goes on after the value, so that a long run is read once per rule however many names it holds;
        // a short value may itself be the name of the next assignment (`credentials: accessToken: "…"`), and the
        // search goes on from it if this match is rejected.
        re.lastIndex = Math.max(re.lastIndex, end);
      }
      const retryFrom = rule.extend && end - start <= 64 ? start : -1;
      // Never start inside a JSON escape (`\u0041…`, `\/`): the marker would follow a lone backslash.
      start = afterEscape(text, start);
      if (end <= start) continue;
      if (rule.accept) {
        const ok = rule.accept(text.slice(start, end), m);
        if (ok === false || ok === 0) {
          if (retryFrom > m.index) re.lastIndex = retryFrom;
          continue;
        }
        if (typeof ok === 'number') end = start + ok;
      }
      insertMatch(found, { kind: rule.id, start, end });
    }
  }
  return found;
}

/** Adds `match` to `found` (sorted, without overlaps) unless it overlaps a match already there. */
function insertMatch(found: SecretMatch[], match: SecretMatch): void {
  let lo = 0;
  let hi = found.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (found[mid]!.start < match.start) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && found[lo - 1]!.end > match.start) return;
  if (lo < found.length && found[lo]!.start < match.end) return;
  if (lo === found.length) found.push(match);
  else found.splice(lo, 0, match);
}

/** `start`, moved past a JSON escape it would otherwise split (an odd run of backslashes right before it). */
function afterEscape(text: string, start: number): number {
  let n = 0;
  while (start - n - 1 >= 0 && text[start - n - 1] === '\\') n++;
  if (n % 2 === 0) return start;
  return start + (text[start] === 'u' ? 5 : 1);
}

/** `text` with every recognized secret replaced by `[REDACTED:<kind>]`. Idempotent: markers are never matched again. */
export function redactSecrets(text: string, rules: readonly SecretRule[] = SECRET_RULES): string {
  if (text.length < 8) return text;
  const found = findSecrets(text, rules);
  if (found.length === 0) return text;
  let out = '';
  let at = 0;
  for (const f of found) {
    out += text.slice(at, f.start) + redactionMarker(f.kind);
    at = f.end;
  }
  return out + text.slice(at);
}

/** A redactor for `settings` (the identity when redaction is disabled). */
export function createRedactor(settings: Partial<RedactionSettings> = {}): Redactor {
  if (settings.enabled === false) return noRedaction;
  const rules = redactionRules(settings);
  return (text) => redactSecrets(text, rules);
}

/** The redactor that changes nothing (redaction turned off). */
export const noRedaction: Redactor = (text) => text;

/** Whether `text` parses as JSON. */
function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Serialized JSON or JSONL (a transcript, a request body) with every recognized secret redacted, and still valid: the
 * rules never match a quote or a backslash, so a replacement inside a string keeps its line valid; a line (or a
 * document) that would not parse after replacement is redacted value by value instead (and re-serialized). Lines
 * without a secret stay byte for byte as they were.
 */
export function redactSerialized(text: string, redact: Redactor): string {
  if (redact === noRedaction) return text;
  const whole = redact(text);
  if (whole === text) return text;
  if (!text.includes('\n') || text.indexOf('\n') === text.length - 1) return redactDocument(text, whole, redact);
  const lines = text.split('\n');
  const out = lines.map((line) => {
    const r = redact(line);
    return r === line ? line : redactDocument(line, r, redact);
  });
  const joined = out.join('\n');
  // A pretty-printed document (its lines are not JSON one by one): judged whole.
  return lines.some((l, i) => out[i] !== l && !parses(out[i]!) && !parses(l))
    ? redactDocument(text, whole, redact)
    : joined;
}

/** `redacted` (the redaction of `original`) if it still parses whenever `original` did; else value by value. */
function redactDocument(original: string, redacted: string, redact: Redactor): string {
  if (parses(redacted)) return redacted;
  let value: unknown;
  try {
    value = JSON.parse(original);
  } catch {
    return redacted; // not JSON to begin with: text
  }
  const indent = /^[[{]\r?\n( +)/.exec(original)?.[1]?.length ?? 0;
  const trailing = /\s*$/.exec(original)![0];
  return `${JSON.stringify(redactValue(value, redact), null, indent || undefined)}${trailing}`;
}

/** Every string inside a JSON-like value, redacted (objects and arrays copied only where something changed). */
export function redactValue<T>(value: T, redact: Redactor): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v) => {
      const r = redactValue(v, redact);
      if (r !== v) changed = true;
      return r;
    });
    return (changed ? out : value) as T;
  }
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const r = redactValue(v, redact);
      if (r !== v) changed = true;
      out[k] = r;
    }
    return (changed ? out : value) as T;
  }
  return value;
}

function redactContent(c: ResultContentPart, redact: Redactor): ResultContentPart {
  if (c.type !== 'text') return c;
  const text = redact(c.text);
  return text === c.text ? c : { ...c, text };
}

/** A compaction marker with its summary redacted (and the messages of abridge's edits, when it has them). */
export function redactMarker<M extends CompactionMarker>(marker: M, redact: Redactor): M {
  const summary = redact(marker.summary);
  const edits = (marker as { edits?: { message: Message }[] }).edits;
  const newEdits = edits?.map((e) => {
    const message = redactMessage(e.message, redact);
    return message === e.message ? e : { ...e, message };
  });
  const editsChanged = newEdits !== undefined && newEdits.some((e, i) => e !== edits![i]);
  if (summary === marker.summary && !editsChanged) return marker;
  return { ...marker, summary, ...(editsChanged ? { edits: newEdits } : {}) };
}

/** One part with its text redacted: text, thinking (not its signature), tool-call arguments, tool-result text, a marker's summary. Media is left alone. */
export function redactPart(p: Part, redact: Redactor): Part {
  switch (p.type) {
    case 'text':
    case 'thinking': {
      if (p.type === 'thinking' && p.redacted) return p;
      const text = redact(p.text);
      return text === p.text ? p : { ...p, text };
    }
    case 'tool-call': {
      const args = redactValue(p.arguments, redact);
      return args === p.arguments ? p : { ...p, arguments: args };
    }
    case 'tool-result': {
      const content = p.content.map((c) => redactContent(c, redact));
      return content.every((c, i) => c === p.content[i]) ? p : { ...p, content };
    }
    case 'compaction': {
      const marker = redactMarker(p.marker, redact);
      return marker === p.marker ? p : { ...p, marker };
    }
    default:
      return p;
  }
}

/** A message with every part's text redacted; the same object when nothing was found. */
export function redactMessage(m: Message, redact: Redactor): Message {
  const parts = m.parts.map((p) => redactPart(p, redact));
  return parts.every((p, i) => p === m.parts[i]) ? m : { ...m, parts };
}
