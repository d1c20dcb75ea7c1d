// Hostile inputs of issue 34 (item 5): each case is what an attacker's file or call did before — a hang, a crash
// (exit 1 "internal error"), bytes changed on the way back, a terminal obeying a transcript's escape sequences, two
// sessions sharing a stored result, leftovers of a failed run — and must now end in a clear refusal or a correct
// result. The CLI cases run the built CLI (npm run build first); the generated cases scale with ABRIDGE_FUZZ_CASES
// (default 300 here; `npm run fuzz` sets 4,000).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contextBreakdown } from '../src/budget/breakdown.js';
import { compact, planCompaction } from '../src/compaction/compact.js';
import { sessionRefIdFor } from '../src/compaction/result-store.js';
import { escapeControls, escapeControlsDeep, jsonForTerminal } from '../src/cli/terminal.js';
import { AbridgeError } from '../src/errors.js';
import { inspectSession } from '../src/formats/inspect.js';
import { MAX_JSON_DEPTH, readJsonlBuffer } from '../src/formats/jsonl.js';
import { parseSession } from '../src/formats/read.js';
import type { Problem } from '../src/model/types.js';
import { CLI, runCli, SMALL_PI_SESSION } from './support/cli.js';

const CASES = Number(process.env.ABRIDGE_FUZZ_CASES ?? 300);
const dir = mkdtempSync(join(tmpdir(), 'abridge-attack-'));
const write = (name: string, data: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, data);
  return path;
};
const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
const small = () => parseSession(SMALL_PI_SESSION, { format: 'pi' });

/** A pi session of `n` steps, each a bash call and a long result (what compaction offloads). */
function piSession(n: number, tools: (i: number) => string = () => 'bash', id = 's1'): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [
    { type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/w' },
  ];
  let parent: string | null = null;
  for (let i = 0; i < n; i++) {
    const name = tools(i);
    out.push(
      {
        type: 'message',
        id: `u${i}`,
        parentId: parent,
        timestamp: '2026-01-01T00:00:01.000Z',
        message: { role: 'user', content: [{ type: 'text', text: `do step ${i}` }] },
      },
      {
        type: 'message',
        id: `a${i}`,
        parentId: `u${i}`,
        timestamp: '2026-01-01T00:00:02.000Z',
        message: {
          role: 'assistant',
          content: [{ type: 'toolCall', id: `c${i}`, name, arguments: { command: `cat f${i}` } }],
          provider: 'anthropic',
          model: 'claude-sonnet-4-5',
          usage: { input: 100 + i * 1500, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 105 + i * 1500 },
          stopReason: 'toolUse',
        },
      },
      {
        type: 'message',
        id: `r${i}`,
        parentId: `a${i}`,
        timestamp: '2026-01-01T00:00:03.000Z',
        message: {
          role: 'toolResult',
          toolCallId: `c${i}`,
          toolName: name,
          content: [{ type: 'text', text: `line ${i} of output\n`.repeat(200) }],
          isError: false,
        },
      },
    );
    parent = `r${i}`;
  }
  return out;
}

describe('compact() with a target no compaction can follow', () => {
  // Before: `compact(session, { target: NaN })` never returned (2.5 GB after 10 minutes), so this runs in a child
  // process with a deadline: a hang fails the test instead of hanging the suite.
  it('rejects at once with AbridgeError INVALID_INPUT naming "target" (undefined, NaN, ±Infinity, negative)', () => {
    const script = `
      import { compact, parseSession } from ${JSON.stringify(resolve('dist/index.js'))};
      const s = parseSession(${JSON.stringify(SMALL_PI_SESSION)}, { format: 'pi' });
      const out = [];
      for (const target of [undefined, NaN, Infinity, -Infinity, -1]) {
        try { await compact(s, target === undefined ? {} : { target }); out.push('resolved'); }
        catch (e) { out.push(e.name + ':' + e.code + ':' + /"target"/.test(e.message)); }
      }
      console.log(JSON.stringify(out));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.signal, 'compact() did not return within 20 s').toBeNull();
    expect(JSON.parse(r.stdout)).toEqual(Array(5).fill('AbridgeError:INVALID_INPUT:true'));
  }, 30_000);

  it('rejects any non-finite or negative target, and any bad tail size (generated)', async () => {
    const session = small();
    const bad = fc.oneof(
      fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, undefined, null, '100', {}),
      fc.double({ max: -Number.MIN_VALUE, noNaN: true }),
    );
    await fc.assert(
      fc.asyncProperty(bad, fc.constantFrom('target', 'keepRecentTokens', 'keepLastSteps'), async (v, name) => {
        const options = { target: 1000, [name]: v } as never;
        if (name !== 'target' && v === undefined) return; // an optional option left out is fine
        const err = await compact(session, options).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(AbridgeError);
        expect((err as AbridgeError).code).toBe('INVALID_INPUT');
        expect((err as AbridgeError).message).toContain(`"${name}"`);
        expect(() => planCompaction(session, options)).toThrow(AbridgeError);
      }),
      { numRuns: Math.max(20, Math.round(CASES / 10)) },
    );
  });
});

describe('DeepSeek-harness timestamps no date can hold', () => {
  const T0 = 1_900_000_000_000;
  const log = (times: { header: number; user: number; header2: number }) => {
    let seq = 0;
    const ev = (type: string, data: Record<string, unknown>, time: number, extra: Record<string, unknown> = {}) => ({
      type,
      seq: seq++,
      time,
      data,
      ...extra,
    });
    return jsonl([
      { type: 'session', version: 0, id: 'ds-1', createdAt: times.header, cwd: '/w' },
      ev('turn/start', { turn: 1 }, T0),
      ev('user/message', { content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }, times.user, {
        surfaceOp: 'append',
      }),
      ev(
        'request/header',
        { header: { config: { model: 'deepseek-test' }, system: 'sys' }, reason: 'initial' },
        times.header2,
      ),
    ]);
  };
  const badTime = fc.oneof(
    fc.constantFrom(8.64e15 + 1, -8.64e15 - 1, 1e20, -1e20, Number.MAX_VALUE, -Number.MAX_VALUE, 8.64e15 * 2),
    fc.double({ min: 8.64e15 + 1, noNaN: true, noDefaultInfinity: true }),
    fc.double({ max: -8.64e15 - 1, noNaN: true, noDefaultInfinity: true }),
  );

  it('are problems (bad-timestamp), dropped; inspectSession and every date formatted survive (generated)', () => {
    fc.assert(
      fc.property(badTime, badTime, (a, b) => {
        const session = parseSession(log({ header: a, user: b, header2: T0 + 5 }), { format: 'deepseek-harness' });
        expect(session.problems.filter((p) => p.kind === 'bad-timestamp')).toHaveLength(2);
        expect(session.info.startedAt).toBeUndefined();
        for (const e of session.entries) {
          expect(e.timestamp === undefined || Math.abs(e.timestamp) <= 8.64e15).toBe(true);
          expect(e.message?.timestamp === undefined || Math.abs(e.message.timestamp) <= 8.64e15).toBe(true);
        }
        const report = inspectSession(session, 'ds.jsonl', 1);
        expect(report.session.startedAt ?? '').not.toContain('Invalid');
      }),
      { numRuns: Math.max(20, Math.round(CASES / 5)) },
    );
  });

  it('CLI: inspect, import, export (pi, claude-code) and view succeed (before: exit 1 "Invalid time value")', () => {
    const file = write('ds.jsonl', log({ header: -8.7e15, user: 1e20, header2: 275760 * 366 * 864e5 }));
    const inspected = runCli(['inspect', file]);
    expect(inspected.stderr).toBe('');
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toContain('bad-timestamp');
    const db = join(dir, 'ds.db');
    expect(runCli(['import', file, '--db', db]).code).toBe(0);
    for (const format of ['pi', 'claude-code']) {
      const r = runCli(['export', 'ds-1', '--db', db, '--format', format, '-o', join(dir, `ds.${format}.jsonl`)]);
      expect(r.stderr, format).toBe('');
      expect(r.code, format).toBe(0);
    }
    const view = runCli(['view', file, '-o', join(dir, 'ds.html')]);
    expect(view.stderr).toBe('');
    expect(view.code).toBe(0);
  });
});

describe('records nested too deep, lines too long', () => {
  const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  const withArguments = (args: string) =>
    SMALL_PI_SESSION.replace('"arguments":{"command":"ls"}', `"arguments":${args}`);

  it('CLI: a tool call nested 5,000 levels is exit 2 naming the file and line (before: exit 1, stack overflow)', () => {
    const file = write('deep.jsonl', withArguments(nested(5000)));
    for (const command of [['inspect'], ['replay'], ['view', '-o', join(dir, 'deep.html')]]) {
      const r = runCli([...command, file]);
      expect(r.code, command[0]).toBe(2);
      expect(r.stderr, command[0]).toBe(
        `abridge: ${file}: line 3: JSON nested more than 1,000 levels deep (arrays and objects within each other); abridge reads records up to that depth\n`,
      );
    }
    // A JSON document (an API request body) too.
    const body = write(
      'deep.json',
      `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],\n"x":${nested(5000)}}`,
    );
    const r = runCli(['inspect', body]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${body}: line 2: JSON nested more than 1,000 levels deep`);
  });

  it('nesting up to the limit is read; past it, refused (generated depths and shapes)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 * MAX_JSON_DEPTH }), fc.boolean(), (depth, arrays) => {
        const inner = arrays ? `${'['.repeat(depth - 1)}1${']'.repeat(depth - 1)}` : nested(depth - 1);
        const line = `{"type":"x","v":${inner}}`;
        const problems: Problem[] = [];
        const read = () =>
          readJsonlBuffer(`${line}\n`, { item() {}, problem: (p) => problems.push(p) }, { source: 'f.jsonl' });
        if (depth <= MAX_JSON_DEPTH) expect(read).not.toThrow();
        else expect(read).toThrow(/^f\.jsonl: line 1: JSON nested more than 1,000 levels deep/);
      }),
      { numRuns: Math.max(20, Math.round(CASES / 5)) },
    );
  });

  it('CLI: a line over the limit is exit 2 naming the file and line, before the line is held (limit lowered by ABRIDGE_MAX_LINE_BYTES)', () => {
    const file = write('long.jsonl', `${SMALL_PI_SESSION.split('\n')[0]}\n{"x":"${'a'.repeat(100_000)}"}\n`);
    const r = spawnSync(process.execPath, [CLI, 'inspect', file], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', ABRIDGE_MAX_LINE_BYTES: '65536' },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      `abridge: ${file}: line 2 is longer than 64 KiB`.replace('64 KiB', '65,536 bytes') +
        ', the longest line abridge can read (one record of that size is not a transcript abridge can hold in memory)\n',
    );
    // Under the limit, the same file reads.
    expect(runCli(['inspect', file]).code).toBe(0);
  });
});

describe('terminal escape sequences in transcripts', () => {
  const OSC_TITLE = '\x1b]0;PWNED\x07';
  const OSC_CLIPBOARD = '\x1b]52;c;ZXZpbA==\x07';
  const CLEAR = '\x1b[2J\x1b[H';
  const C1_CSI = '\u009b2J';
  const hostile = jsonl([
    { type: 'session', version: 3, id: `s${OSC_TITLE}`, timestamp: '2026-01-01T00:00:00.000Z', cwd: `/w${CLEAR}` },
    ...piSession(2, () => `bash${OSC_CLIPBOARD}`).slice(1),
    { type: `bogus${CLEAR}\r`, note: C1_CSI },
  ]).replace(/claude-sonnet-4-5/g, `claude${C1_CSI}`);
  const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

  it('CLI: inspect, replay, import and sessions print none of them raw; --json stays JSON and keeps the strings', () => {
    const file = write('esc.jsonl', hostile);
    const db = join(dir, 'esc.db');
    for (const args of [
      ['inspect', file],
      ['inspect', file, '--markdown'],
      ['replay', file],
      ['import', file, '--db', db],
      ['sessions', '--db', db],
      ['inspect', file, '--json'],
      ['replay', file, '--json'],
    ]) {
      const r = runCli(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(RAW.test(r.stdout), `${args.join(' ')}: ${JSON.stringify(r.stdout.match(RAW))}`).toBe(false);
      expect(RAW.test(r.stderr), args.join(' ')).toBe(false);
    }
    expect(runCli(['inspect', file]).stdout).toContain('bash\\x1b]52;c;ZXZpbA==\\x07');
    const json = JSON.parse(runCli(['inspect', file, '--json']).stdout) as { session: { id: string; cwd: string } };
    expect(json.session.id).toBe(`s${OSC_TITLE}`);
    expect(json.session.cwd).toBe(`/w${CLEAR}`);
    // An error message quoting the transcript's session id.
    const missing = runCli(['export', `nope${OSC_TITLE}`, '--db', db]);
    expect(missing.code).toBe(2);
    expect(RAW.test(missing.stderr)).toBe(false);
  });

  it('escapeControls leaves no control character but tab and newline, and changes nothing else (generated)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (s) => {
        const e = escapeControls(s);
        expect(RAW.test(e.replace(/[\t\n]/g, ''))).toBe(false);
        if (!RAW.test(s.replace(/[\t\n]/g, ''))) expect(e).toBe(s);
        const j = jsonForTerminal(JSON.stringify({ [s]: s }));
        expect(RAW.test(j)).toBe(false);
        expect(JSON.parse(j)).toEqual({ [s]: s });
        expect(escapeControlsDeep({ k: [s] })).toEqual({ k: [e] });
      }),
      { numRuns: CASES },
    );
  });
});

describe('import of bytes that are not UTF-8', () => {
  it('is refused, exit 2, naming the file, line and byte (before: imported, and export changed 8 bytes)', () => {
    const [head, user] = SMALL_PI_SESSION.split('\n');
    const broken = Buffer.concat([
      Buffer.from(`${head}\n${user!.replace('list files', 'list ')}`.slice(0, -40)),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from(`${user!.slice(-40)}\n`),
    ]);
    const file = write('bad-utf8.jsonl', broken);
    const db = join(dir, 'utf8.db');
    const r = runCli(['import', file, '--db', db]);
    expect(r.code).toBe(2);
    const col = broken.indexOf(0xff) - broken.indexOf(0x0a);
    expect(r.stderr).toContain(
      `${file}: not valid UTF-8 at line 2, byte ${col} of the line (byte offset ${broken.indexOf(0xff).toLocaleString('en-US')} in the file)`,
    );
    expect(r.stderr).toContain('nothing was imported');
    expect(runCli(['sessions', '--db', db]).stdout).not.toContain('s1');
  });

  it('valid UTF-8 of any kind imports and exports byte for byte (generated text)', () => {
    const db = join(dir, 'utf8-ok.db');
    const samples = fc.sample(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }), 5);
    samples.forEach((text, i) => {
      const file = write(`ok-${i}.jsonl`, SMALL_PI_SESSION.replace('list files', JSON.stringify(text).slice(1, -1)));
      expect(runCli(['import', file, '--db', db, '--id', `ok-${i}`]).code).toBe(0);
      const out = join(dir, `ok-${i}.out.jsonl`);
      expect(runCli(['export', `ok-${i}`, '--db', db, '-o', out]).code).toBe(0);
      expect(readFileSync(out).equals(readFileSync(file))).toBe(true);
    });
  });
});

describe('session ids holding NUL', () => {
  it('two sessions never share a result ref (before: "a\\0b" with "c" and "a" with "b\\0c" did)', () => {
    expect(sessionRefIdFor('a\0b', 'c')).not.toBe(sessionRefIdFor('a', 'b\0c'));
    // Ordinary ids keep the refs stored so far.
    expect(sessionRefIdFor('session-1', 'hello')).toBe('r_dbfc88299c3e658f');
  });

  it('distinct (id, text) pairs give distinct refs (generated, NUL-heavy)', () => {
    const part = fc.string({ unit: fc.constantFrom('a', 'b', '\0', 'é'), minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(part, part, part, part, (id1, t1, id2, t2) => {
        fc.pre(id1 !== id2 || t1 !== t2);
        expect(sessionRefIdFor(id1, t1)).not.toBe(sessionRefIdFor(id2, t2));
      }),
      { numRuns: CASES },
    );
  });
});

describe('tool names that are Object.prototype keys', () => {
  const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

  it('are counted like any name in inspect (generated mixes of names)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...NAMES, 'bash'), { minLength: 1, maxLength: 8 }), (names) => {
        const session = parseSession(jsonl(piSession(names.length, (i) => names[i]!)), { format: 'pi' });
        const report = inspectSession(session, 'p.jsonl', 1);
        const want = new Map<string, number>();
        for (const n of names) want.set(n, (want.get(n) ?? 0) + 1);
        expect(new Map(Object.entries(report.tools.byName))).toEqual(want);
        const ctx = contextBreakdown(session).byTool ?? {};
        expect(new Map(Object.entries(ctx).map(([k, v]) => [k, v.calls]))).toEqual(want);
      }),
      { numRuns: Math.max(20, Math.round(CASES / 10)) },
    );
  });

  it('CLI: inspect lists them with their counts (before: "constructor function Object() { [native code] }1")', () => {
    const file = write(
      'proto.jsonl',
      jsonl(piSession(5, (i) => ['__proto__', 'constructor', '__proto__', 'toString', 'bash'][i]!)),
    );
    const r = runCli(['inspect', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('(__proto__ 2, constructor 1, toString 1, bash 1)');
    expect(r.stdout).not.toContain('native code');
    expect(r.stdout).toMatch(/\n__proto__ +2 +2 /);
  });
});

describe('compact --out and --results-dir failures', () => {
  it('pi --out of a line holding two records says so on stderr, and changes no other line (before: split silently)', () => {
    const lines = jsonl(piSession(12)).split('\n');
    const joined = [...lines];
    joined.splice(2, 2, lines[2]! + lines[3]!);
    const file = write('two.jsonl', joined.join('\n'));
    const out = join(dir, 'two.out.jsonl');
    const r = runCli(['compact', file, '--budget', '3000', '-o', out]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      `abridge compact: ${file}: line 3 holds more than one JSON record; ${out} has them on separate lines, as pi reads them (every other line of the transcript is written as it was)\n`,
    );
    // The original part of the output: the input with that line split, nothing else changed.
    expect(readFileSync(out, 'utf8').startsWith(lines.join('\n'))).toBe(true);
    // Written back uncompacted, the line stays as it was.
    const db = join(dir, 'two.db');
    expect(runCli(['import', file, '--db', db]).code).toBe(0);
    expect(runCli(['export', 's1', '--db', db]).stdout).toBe(joined.join('\n'));
  });

  it('a failed --out leaves no <out>.results folder behind (before: it stayed, full of results)', () => {
    const file = write('big.jsonl', jsonl(piSession(40)));
    const out = join(dir, 'a-directory');
    mkdirSync(out);
    const r = runCli(['compact', file, '--budget', '20000', '-o', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('EISDIR');
    expect(existsSync(`${out}.results`)).toBe(false);
  });

  it('a full --results-dir (ENOSPC) is exit 2 with a clear message and no result left behind (before: exit 0, 40 orphans)', () => {
    const file = write('full.jsonl', jsonl(piSession(60)));
    const results = join(dir, 'full-results');
    mkdirSync(results);
    writeFileSync(join(results, 'keep.txt'), 'not ours');
    const out = join(dir, 'full.out.jsonl');
    const r = spawnSync(
      process.execPath,
      [
        '--require',
        resolve('test/support/full-disk.cjs'),
        CLI,
        'compact',
        file,
        '--budget',
        '20000',
        '--results-dir',
        results,
        '-o',
        out,
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1', ABRIDGE_TEST_FULL_DIR: results, ABRIDGE_TEST_FULL_AFTER: '30' },
      },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /^abridge: Cannot store result r_[0-9a-f]{16} in .*: ENOSPC: no space left on device.*; nothing was written, and the results this run had begun to store \(\d+\) were removed\n$/,
    );
    expect(readdirSync(results)).toEqual(['keep.txt']);
    expect(existsSync(out)).toBe(false);
  });
});
