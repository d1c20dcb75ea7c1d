/**
 * Seeded mutations of transcripts for the fuzz test: what crashed writers, bad copies and hostile users leave behind.
 * Every mutation is deterministic given the seed, so a failing case can be replayed from its name.
 */

export type MutationKind =
  | 'byte-flip'
  | 'truncate'
  | 'duplicate-line'
  | 'remove-line'
  | 'swap-lines'
  | 'join-lines'
  | 'respace-line'
  | 'type-change'
  | 'delete-key'
  | 'huge-value'
  | 'invalid-utf8';
export const MUTATION_KINDS: readonly MutationKind[] = [
  'byte-flip',
  'truncate',
  'duplicate-line',
  'remove-line',
  'swap-lines',
  'join-lines',
  'respace-line',
  'type-change',
  'delete-key',
  'huge-value',
  'invalid-utf8',
];

/** Keys readers depend on: deleting one of them is the likeliest way to find a reader that does not check. */
const STRUCTURAL_KEYS = new Set([
  'value',
  'output',
  'content',
  'message',
  'messages',
  'role',
  'type',
  'parts',
  'text',
  'input',
  'arguments',
  'id',
  'toolCallId',
  'tool_use_id',
  'payload',
  'history',
  'usage',
  'parentId',
  'parentUuid',
]);

import { prng } from './random-session.js';

export { prng };

const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

function lines(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (;;) {
    const nl = buf.indexOf(0x0a, start);
    if (nl === -1) break;
    out.push(buf.subarray(start, nl + 1));
    start = nl + 1;
  }
  if (start < buf.length) out.push(buf.subarray(start));
  return out;
}

/** Every value in a JSON tree with a way to replace or delete it. */
function nodes(root: unknown): { key: string | number; value: unknown; set: (v: unknown) => void; del?: () => void }[] {
  const out: { key: string | number; value: unknown; set: (v: unknown) => void; del?: () => void }[] = [];
  const walk = (v: unknown, depth: number) => {
    if (depth > 12 || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        out.push({ key: i, value: x, set: (n) => (v[i] = n), del: () => v.splice(i, 1) });
        walk(x, depth + 1);
      });
    } else {
      const o = v as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        out.push({ key: k, value: o[k], set: (n) => (o[k] = n), del: () => delete o[k] });
        walk(o[k], depth + 1);
      }
    }
  };
  walk(root, 0);
  return out;
}

function otherType(rand: () => number, v: unknown): unknown {
  const choices: unknown[] = [null, 0, -1, 1e308, 'text', '', true, [], {}, [1, 'x'], { type: 'x' }];
  for (;;) {
    const c = pick(rand, choices);
    if (typeof c !== typeof v || Array.isArray(c) !== Array.isArray(v) || (c === null) !== (v === null)) return c;
  }
}

/**
 * Changes a JSON value of the input: one JSONL line (re-serialized compactly), or the whole document when the input
 * is one JSON document (re-serialized as it was indented, roughly).
 */
function mutateJson(
  rand: () => number,
  input: Buffer,
  change: (rand: () => number, root: unknown) => boolean,
): Buffer | undefined {
  const ls = lines(input);
  const text = input.toString('utf8');
  const asDocument = (() => {
    try {
      return { doc: JSON.parse(text) as unknown };
    } catch {
      return undefined;
    }
  })();
  if (asDocument && ls.length > 0 && !(ls.length > 1 && ls.every((l) => l.toString().trim().startsWith('{')))) {
    if (!change(rand, asDocument.doc)) return undefined;
    return Buffer.from(JSON.stringify(asDocument.doc, null, text.includes('\n  ') ? 2 : undefined));
  }
  for (let tries = 0; tries < 8; tries++) {
    const i = Math.floor(rand() * ls.length);
    const raw = ls[i]!.toString('utf8');
    const nl = raw.endsWith('\n') ? '\n' : '';
    let rec: unknown;
    try {
      rec = JSON.parse(raw);
    } catch {
      continue;
    }
    if (!change(rand, rec)) continue;
    const out = [...ls];
    out[i] = Buffer.from(JSON.stringify(rec) + nl);
    return Buffer.concat(out);
  }
  return undefined;
}

/** One mutation of `input`. Returns undefined when this kind does not apply (e.g. no JSON to change). */
export function mutate(input: Buffer, kind: MutationKind, seed: number): Buffer | undefined {
  const rand = prng(seed);
  const ls = lines(input);
  switch (kind) {
    case 'byte-flip': {
      const out = Buffer.from(input);
      const n = 1 + Math.floor(rand() * 8);
      for (let i = 0; i < n && out.length; i++) out[Math.floor(rand() * out.length)] = Math.floor(rand() * 256);
      return out;
    }
    case 'truncate':
      return input.subarray(0, Math.floor(rand() * input.length));
    case 'duplicate-line': {
      if (!ls.length) return undefined;
      const i = Math.floor(rand() * ls.length);
      const at = Math.floor(rand() * (ls.length + 1));
      const copy = ls[i]!.at(-1) === 0x0a ? ls[i]! : Buffer.concat([ls[i]!, Buffer.from('\n')]);
      return Buffer.concat([...ls.slice(0, at), copy, ...ls.slice(at)]);
    }
    case 'remove-line': {
      if (ls.length < 2) return undefined;
      const i = Math.floor(rand() * ls.length);
      return Buffer.concat([...ls.slice(0, i), ...ls.slice(i + 1)]);
    }
    case 'swap-lines': {
      if (ls.length < 3) return undefined;
      const out = [...ls];
      // The last line may lack its newline: swap among the others.
      const i = Math.floor(rand() * (ls.length - 1));
      const j = Math.floor(rand() * (ls.length - 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
      return Buffer.concat(out);
    }
    case 'join-lines': {
      // Two records on one line, as a crashed or racing writer leaves them: back to back, or with text between/after.
      if (ls.length < 2) return undefined;
      const i = Math.floor(rand() * (ls.length - 1));
      const sep = pick(rand, ['', ' ', '  ', ',', ' , ', 'x']);
      const tail = pick(rand, ['', '', ' ', ' trailing', '[1]']);
      const first = ls[i]!.subarray(0, ls[i]!.length - 1);
      const second = ls[i + 1]!.at(-1) === 0x0a ? ls[i + 1]!.subarray(0, ls[i + 1]!.length - 1) : ls[i + 1]!;
      const nl = ls[i + 1]!.at(-1) === 0x0a ? '\n' : '';
      return Buffer.concat([
        ...ls.slice(0, i),
        first,
        Buffer.from(sep),
        second,
        Buffer.from(tail + nl),
        ...ls.slice(i + 2),
      ]);
    }
    case 'respace-line': {
      // The same record written by another serializer: spaces after separators, CRLF.
      if (!ls.length) return undefined;
      const i = Math.floor(rand() * ls.length);
      const text = ls[i]!.toString('utf8');
      const nl = text.endsWith('\n') ? (rand() < 0.5 ? '\r\n' : '\n') : '';
      const out = [...ls];
      out[i] = Buffer.from(text.replace(/\n$/, '').replace(/,"/g, ', "').replace(/":/g, '": ') + nl);
      return Buffer.concat(out);
    }
    case 'type-change':
      return mutateJson(rand, input, (r, root) => {
        const ns = nodes(root);
        if (!ns.length) return false;
        const n = pick(r, ns);
        n.set(otherType(r, n.value));
        return true;
      });
    case 'delete-key':
      return mutateJson(rand, input, (r, root) => {
        const ns = nodes(root).filter((n) => n.del);
        if (!ns.length) return false;
        const structural = ns.filter((n) => typeof n.key === 'string' && STRUCTURAL_KEYS.has(n.key));
        pick(r, structural.length && r() < 0.7 ? structural : ns).del!();
        return true;
      });
    case 'huge-value':
      return mutateJson(rand, input, (r, root) => {
        const ns = nodes(root).filter((n) => typeof n.value === 'string');
        if (!ns.length) return false;
        pick(r, ns).set(`${'x'.repeat(100_000)}\n${'y '.repeat(50_000)}`);
        return true;
      });
    case 'invalid-utf8': {
      const bad = pick(rand, [
        Buffer.from([0xff]),
        Buffer.from([0xc3, 0x28]),
        Buffer.from([0xe2, 0x82]),
        Buffer.from([0xf0, 0x9f, 0x98]),
        Buffer.from([0xed, 0xa0, 0x80]),
      ]);
      const at = Math.floor(rand() * input.length);
      return Buffer.concat([input.subarray(0, at), bad, input.subarray(at)]);
    }
  }
}
