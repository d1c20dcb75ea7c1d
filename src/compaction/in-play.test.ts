import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import type { Session, ToolCallPart, ToolResultPart } from '../model/types.js';
import { activeView, isSummaryItem, type ViewItem } from '../model/view.js';
import { TokenCounter } from '../tokens/counter.js';
import { PiTranscript } from '../../test/support/random-session.js';
import { compact } from './compact.js';
import { FILES_HEADING, filesSection, givingWayOrder, inPlay, laterNote, type Standing } from './in-play.js';
import { MemoryResultStore } from './memory-result-store.js';
import { summaryText } from './strategies/summarize.js';
import { parseSummary } from './summarizers/extractive.js';

const counter = new TokenCounter();

/** The context size compact() works with (no prefix). */
async function sizeOf(session: Session): Promise<number> {
  return (await compact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [], prefixTokens: 0 })).beforeTokens;
}

/** `n` numbered lines of a file's text, each naming the file and a version (what a read of it shows). */
function fileLines(file: string, version: number, from = 1, to = 40): string {
  return Array.from({ length: to - from + 1 }, (_, i) => `${file} v${version} line ${from + i}`).join('\n');
}

/** A view made call by call: each call in an assistant message of its own, its result in the next (entries in order). */
class ViewBuilder {
  readonly items: ViewItem[] = [];
  private n = 0;

  user(text: string): this {
    this.items.push({ entry: this.items.length, message: { role: 'user', parts: [{ type: 'text', text }] } });
    return this;
  }

  call(name: string, args: unknown, result: string, isError = false): string {
    const id = `c${this.n++}`;
    const call: ToolCallPart = { type: 'tool-call', id, name, arguments: args };
    const r: ToolResultPart = {
      type: 'tool-result',
      callId: id,
      toolName: name,
      content: [{ type: 'text', text: result }],
      isError,
    };
    this.items.push({ entry: this.items.length, message: { role: 'assistant', parts: [call] } });
    this.items.push({ entry: this.items.length, message: { role: 'tool', parts: [r] } });
    return id;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Standings on generated views, in every agent's way of reading and changing a file

type Range = { from: number; to: number } | undefined;
type Op =
  | { kind: 'read'; file: number; range: Range; form: number; failed: boolean }
  | { kind: 'change'; file: number; form: number }
  | { kind: 'command' };

const FILES = ['src/a.ts', 'src/lib/b.py', 'docs/c.md'];
const ROOT = '/repo';

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('read' as const),
    file: fc.integer({ min: 0, max: FILES.length - 1 }),
    range: fc.option(
      fc
        .tuple(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 30 }))
        .map(([from, n]) => ({ from, to: from + n })),
      { nil: undefined },
    ),
    form: fc.integer({ min: 0, max: 4 }),
    failed: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
  }),
  fc.record({
    kind: fc.constant('change' as const),
    file: fc.integer({ min: 0, max: FILES.length - 1 }),
    form: fc.integer({ min: 0, max: 3 }),
  }),
  fc.constant({ kind: 'command' as const }),
);

/** One read in one agent's form: pi `read`, Claude Code `Read`, Codex `cd … && sed -n`/`cat`, OpenHands `view`. */
function readCall(file: string, range: Range, form: number): [string, unknown] {
  const abs = `${ROOT}/${file}`;
  const limit = range ? { offset: range.from, limit: range.to - range.from + 1 } : {};
  switch (form) {
    case 0:
      return ['read', { path: `./${file}`, ...limit }];
    case 1:
      return ['Read', { file_path: abs, ...limit }];
    case 2:
      return [
        'exec_command',
        { cmd: `cd ${ROOT} && ${range ? `sed -n '${range.from},${range.to}p'` : 'cat'} ${file}` },
      ];
    case 3:
      return [
        'exec_command',
        { cmd: `cd ${ROOT} && nl -ba ${file}${range ? ` | sed -n '${range.from},${range.to}p'` : ''}` },
      ];
    default:
      return [
        'str_replace_editor',
        { command: 'view', path: abs, ...(range ? { view_range: [range.from, range.to] } : {}) },
      ];
  }
}

/** One change in one agent's form: pi `edit`, Claude Code `Edit`, Codex apply_patch, OpenHands `str_replace`. */
function changeCall(file: string, form: number, k: number): [string, unknown] {
  const abs = `${ROOT}/${file}`;
  switch (form) {
    case 0:
      return ['edit', { path: file, oldText: `old ${k}`, newText: `new ${k}` }];
    case 1:
      return ['Edit', { file_path: abs, old_string: `old ${k}`, new_string: `new ${k}` }];
    case 2:
      return ['apply_patch', `*** Begin Patch\n*** Update File: ${abs}\n@@\n-old ${k}\n+new ${k}\n*** End Patch`];
    default:
      return ['str_replace_editor', { command: 'str_replace', path: abs, old_str: `old ${k}`, new_str: `new ${k}` }];
  }
}

interface Made {
  view: ViewItem[];
  /** Ground truth per call id: the file it reads or changes (an index into FILES), its lines, whether it succeeded. */
  truth: Map<string, { op: Op; at: number; entry: number; callEntry: number }>;
}

function makeView(ops: readonly Op[]): Made {
  const b = new ViewBuilder().user('Fix the bug.');
  const truth: Made['truth'] = new Map();
  const version = FILES.map(() => 0);
  ops.forEach((o, k) => {
    let id: string;
    if (o.kind === 'read') {
      const [name, args] = readCall(FILES[o.file]!, o.range, o.form);
      const text = o.failed
        ? 'Error: no such file'
        : fileLines(FILES[o.file]!, version[o.file]!, o.range?.from, o.range?.to);
      id = b.call(name, args, text, o.failed);
    } else if (o.kind === 'change') {
      const [name, args] = changeCall(FILES[o.file]!, o.form, k);
      version[o.file]!++;
      id = b.call(name, args, 'Done.');
    } else id = b.call('bash', { command: `npm test -- part${k}` }, `ok ${k}`);
    const at = b.items.length - 1;
    truth.set(id, { op: o, at, entry: at, callEntry: at - 1 });
  });
  return { view: b.items, truth };
}

const covers = (later: Range, earlier: Range) =>
  later === undefined || (earlier !== undefined && later.from <= earlier.from && later.to >= earlier.to);

describe('in play: which results hold a file’s latest read, which a later read superseded or a change made stale', () => {
  it('on generated views of every read and edit form, says what the ground truth says', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 25 }), (ops) => {
        const { view, truth } = makeView(ops);
        const play = inPlay(view);
        const list = [...truth.entries()];
        for (const [id, t] of list) {
          const s = play.results.get(id)!;
          const o = t.op;
          const after = list.filter(([, x]) => x.at > t.at);
          const sameFile = (x: Op) => x.kind !== 'command' && o.kind !== 'command' && x.file === o.file;
          const laterReads = after.filter(([, x]) => x.op.kind === 'read' && !x.op.failed && sameFile(x.op));
          const laterChange = after.find(([, x]) => x.op.kind === 'change' && sameFile(x.op));
          let want: Standing;
          if (o.kind === 'command' || (o.kind === 'read' && o.failed)) want = 'other';
          else if (o.kind === 'change')
            want = laterReads.some(([, x]) => x.op.kind === 'read' && x.op.range === undefined)
              ? 'superseded'
              : laterChange
                ? 'stale'
                : 'other';
          else if (laterReads.some(([, x]) => x.op.kind === 'read' && covers(x.op.range, o.range))) want = 'superseded';
          else if (laterReads.length === 0) want = 'latest';
          else want = laterChange ? 'stale' : 'older';
          expect({ id, standing: s.standing }).toEqual({ id, standing: want });
          // What the placeholder points to is true: the newest later read showing those lines, or the first change.
          if (want === 'superseded') {
            const newest = laterReads.filter(
              ([, x]) =>
                x.op.kind === 'read' &&
                (o.kind === 'change' ? x.op.range === undefined : covers(x.op.range, (o as { range: Range }).range)),
            );
            const [laterId, x] = newest[newest.length - 1]!;
            expect(s.later).toMatchObject({ how: 'read', callId: laterId, entry: x.entry });
            // "Its current text" only when nothing changed the file after that read.
            const since = list.find(([, y]) => y.at > x.at && y.op.kind === 'change' && sameFile(y.op));
            const file = FILES[(o as { file: number }).file]!;
            expect(laterNote(s)).toBe(
              since
                ? `Superseded: ${s.later!.path} was read again later (entry ${x.entry}), and changed after that (entry ${since[1].callEntry}).`
                : `Superseded: ${s.later!.path} was read again later (entry ${x.entry}); that read has its current text.`,
            );
            expect(s.later!.path.endsWith(file)).toBe(true);
          } else if (want === 'stale') {
            const [laterId, x] = laterChange!;
            expect(s.later).toMatchObject({ how: 'change', callId: laterId, entry: x.callEntry });
            expect(laterNote(s)).toMatch(/^Stale: \S+ was changed after this \(entry \d+\)\.$/);
          } else expect(laterNote(s)).toBe('');
        }
        // Each file read at all has one latest read: its newest successful one.
        for (let f = 0; f < FILES.length; f++) {
          const reads = list.filter(([, x]) => x.op.kind === 'read' && !x.op.failed && x.op.file === f);
          if (reads.length === 0) continue;
          const latest = list.filter(
            ([id, x]) => x.op.kind === 'read' && x.op.file === f && play.results.get(id)!.standing === 'latest',
          );
          expect(latest.map(([id]) => id)).toEqual([reads[reads.length - 1]![0]]);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('an edit’s answer a later command deleted is stale, and says so', () => {
    const b = new ViewBuilder().user('Clean up.');
    const edit = b.call(
      'str_replace_editor',
      { command: 'str_replace', path: '/r/tmp.py', old_str: 'a', new_str: 'b' },
      'The file /r/tmp.py has been edited. Here is a snippet:\n     1\tb',
    );
    b.call('execute_bash', { command: 'rm /r/tmp.py' }, '');
    const s = inPlay(b.items).results.get(edit)!;
    expect(s).toMatchObject({ standing: 'stale', files: ['/r/tmp.py'] });
    expect(laterNote(s)).toBe('Stale: /r/tmp.py was deleted after this (entry 3).');
  });

  it('gives way what is no longer in play first, then turn by turn, a latest read after the other results of its turn', () => {
    const b = new ViewBuilder().user('Start.');
    const a1 = b.call('read', { path: 'a.ts' }, fileLines('a.ts', 0)); // superseded by a2
    const log = b.call('bash', { command: 'npm test' }, 'ok'); // other
    const bRead = b.call('read', { path: 'b.ts' }, fileLines('b.ts', 0)); // latest of b
    b.user('Next.');
    const a2 = b.call('read', { path: 'a.ts' }, fileLines('a.ts', 0)); // latest of a
    const log2 = b.call('bash', { command: 'npm run lint' }, 'ok');
    const at = (id: string) =>
      b.items.findIndex((it) => it.message.parts.some((p) => p.type === 'tool-result' && p.callId === id));
    const order = givingWayOrder(b.items).filter((i) => b.items[i]!.message.role === 'tool');
    expect(order).toEqual([at(a1), at(log), at(bRead), at(log2), at(a2)]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Through compact(): the placeholders, and the files given back after archiving

/** pi: a file read, read again whole (superseding), edited (making the first read of b stale), and other work. */
function piSession(): string {
  const t = new PiTranscript();
  t.user('Rename the retry option in src/net/retry.ts.');
  t.step({ calls: [{ name: 'bash', args: { command: 'git log' }, result: fileLines('log', 0, 1, 120) }] });
  t.step({ calls: [{ name: 'read', args: { path: 'src/net/retry.ts' }, result: fileLines('retry.ts', 0, 1, 120) }] });
  t.step({
    calls: [{ name: 'read', args: { path: 'src/net/backoff.ts' }, result: fileLines('backoff.ts', 0, 1, 120) }],
  });
  t.step({ calls: [{ name: 'bash', args: { command: 'npm test' }, result: fileLines('test output', 0, 1, 120) }] });
  t.step({ calls: [{ name: 'read', args: { path: 'src/net/retry.ts' }, result: fileLines('retry.ts', 0, 1, 120) }] });
  t.step({
    calls: [
      {
        name: 'edit',
        args: {
          path: 'src/net/backoff.ts',
          oldText: 'backoff.ts v0 line 7',
          newText: 'backoff.ts v1 line 7 (renamed)',
        },
        result: 'Successfully replaced text in src/net/backoff.ts.',
      },
    ],
  });
  t.step({ calls: [{ name: 'bash', args: { command: 'git diff --stat' }, result: fileLines('diff', 0, 1, 120) }] });
  t.step({ text: 'Done.' });
  return t.jsonl();
}

describe('compaction with what is in play', () => {
  it('clears what is no longer in play first, its placeholder naming the later entry with the current text', async () => {
    const session = parseSession(piSession());
    const view0 = activeView(session);
    const store = new MemoryResultStore();
    const size = await sizeOf(parseSession(piSession()));
    await compact(session, {
      target: size - 50,
      prefixTokens: 0,
      store,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
      options: { clearing: { untilTarget: true, keep: 1 } },
    });
    const view = activeView(session);
    const cleared = view.filter((v) => v.edit === 'cleared');
    // One result was enough; the first read of retry.ts (a later whole read supersedes it) went, not the older command
    // output or a file's latest read.
    expect(cleared).toHaveLength(1);
    const first = cleared[0]!;
    expect(first.entry).toBe(view0.filter((v) => v.message.role === 'tool')[1]!.entry);
    const text = (first.message.parts[0] as ToolResultPart).content
      .map((c) => (c.type === 'text' ? c.text : ''))
      .join('');
    const laterRead = view0.filter((v) => v.message.role === 'tool')[4]!;
    expect(text).toMatch(
      new RegExp(
        `^\\[tool result cleared to save context: read output of ~\\d+ tokens\\. Superseded: src/net/retry\\.ts was read again later \\(entry ${laterRead.entry}\\); that read has its current text\\. Read it back with read_result \\{"ref_id": "r_[0-9a-f]{16}"\\} if it is needed again\\.\\]$`,
      ),
    );
    // The entry it names holds a read of that file; the placeholder's reference gives the text back.
    expect(JSON.stringify(view0.find((v) => v.entry === laterRead.entry! - 1)!.message)).toContain('src/net/retry.ts');
    const ref = /"ref_id": "([^"]+)"/.exec(text)![1]!;
    expect((await store.read(ref, { limit: 2000 })).text).toBe(fileLines('retry.ts', 0, 1, 120));
  });

  it('a result a later edit made stale says so when cleared', async () => {
    const t = new PiTranscript();
    t.user('Fix it.');
    t.step({
      calls: [{ name: 'read', args: { path: 'a.ts', offset: 1, limit: 120 }, result: fileLines('a.ts', 0, 1, 120) }],
    });
    t.step({
      calls: [{ name: 'read', args: { path: 'a.ts', offset: 200, limit: 20 }, result: fileLines('a.ts', 0, 200, 219) }],
    });
    t.step({ calls: [{ name: 'edit', args: { path: 'a.ts', oldText: 'x', newText: 'y' }, result: 'ok' }] });
    for (let i = 0; i < 3; i++) t.step({ calls: [{ name: 'bash', args: { command: `make ${i}` }, result: 'ok' }] });
    const session = parseSession(t.jsonl());
    await compact(session, {
      target: 1,
      prefixTokens: 0,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
    });
    const texts = activeView(session)
      .filter((v) => v.edit === 'cleared')
      .map((v) =>
        (v.message.parts[0] as ToolResultPart).content.map((c) => (c.type === 'text' ? c.text : '')).join(''),
      );
    const editEntry = activeView(session).find((v) =>
      v.message.parts.some((p) => p.type === 'tool-call' && p.name === 'edit'),
    )!.entry;
    // Both reads cleared: the first (lines 1–120, changed since, and not read again whole) says so; the latest read of
    // the file (lines 200–219) is no less current for the edit and says nothing of it.
    expect(texts).toHaveLength(2);
    expect(texts[0]).toContain(` Stale: a.ts was changed after this (entry ${editEntry}). Read it back`);
    expect(texts[1]).not.toMatch(/Stale|Superseded/);
  });

  it('after archiving, the room left brings back the files the archived work leaves in play, edits applied', async () => {
    const t = new PiTranscript();
    t.user('Rename the retry option.');
    t.step({ calls: [{ name: 'read', args: { path: 'src/retry.ts' }, result: fileLines('retry.ts', 0, 1, 10) }] });
    const edit = { path: 'src/retry.ts', oldText: 'retry.ts v0 line 8', newText: 'retry.ts v1 line 8 renamed' };
    t.step({ calls: [{ name: 'edit', args: edit, result: 'ok' }] });
    t.step({ calls: [{ name: 'read', args: { path: 'src/other.ts' }, result: fileLines('other.ts', 0, 1, 4) }] });
    // Later work of long answers and short outputs: nothing shortened to give back, few items for the summary, units
    // large enough that archiving whole ones leaves room over.
    for (let i = 0; i < 12; i++)
      t.step({
        text: `Step ${i}: ${'checking the next part of the rename '.repeat(40)}`,
        calls: [{ name: 'bash', args: { command: `make part${i}` }, result: 'ok' }],
      });
    t.step({ text: 'Done.' });
    const session = parseSession(t.jsonl());
    const size = await sizeOf(parseSession(t.jsonl()));
    const r = await compact(session, { target: Math.floor(size * 0.3), prefixTokens: 0 });
    expect(r.strategiesRun.map((s) => s.name)).toContain('summarize');
    expect(r.reachedTarget).toBe(true);
    expect(r.violations).toEqual([]);
    const text = summaryText(activeView(session).find(isSummaryItem)!.message);
    const [said, files] = text.split(`\n\n${FILES_HEADING}\n`);
    // The most recently touched first; the edit applied to what the read showed.
    const other = fileLines('other.ts', 0, 1, 4);
    const retry = fileLines('retry.ts', 0, 1, 10).replace('retry.ts v0 line 8', 'retry.ts v1 line 8 renamed');
    expect(files).toBe(
      `- src/other.ts — read in entry 7:\n\`\`\`\n${other}\n\`\`\`\n` +
        `- src/retry.ts — read in entry 3, then changed in entry 4 (applied here):\n\`\`\`\n${retry}\n\`\`\``,
    );
    // A later compaction reads the summary back without the files (each compaction brings back its own).
    expect(parseSummary(text)).toEqual(parseSummary(said!));
  });

  it('files within the room: a read again later is left out, a change that does not apply is said, a large file is excerpted around its change', () => {
    const b = new ViewBuilder().user('Go.');
    const big = Array.from({ length: 400 }, (_, i) => `big line ${i + 1} ${'x'.repeat(40)}`).join('\n');
    const rBig = b.call('read', { path: 'big.ts' }, big);
    const eBig = b.call('edit', { path: 'big.ts', oldText: 'big line 300 ', newText: 'big line 300 CHANGED ' }, 'ok');
    const rA = b.call('read', { path: 'a.ts' }, fileLines('a.ts', 0, 1, 5));
    const eA = b.call('edit', { path: 'a.ts', oldText: 'not in the file', newText: 'y' }, 'ok');
    const rC = b.call('read', { path: 'c.ts' }, fileLines('c.ts', 0, 1, 5));
    b.call('read', { path: 'c.ts' }, fileLines('c.ts', 0, 1, 5)); // after the span: in view
    const play = inPlay(b.items);
    const section = filesSection(play, new Set([rBig, eBig, rA, eA, rC]), 1200, counter);
    expect(section.startsWith(`${FILES_HEADING}\n`)).toBe(true);
    expect(section).not.toContain('c.ts');
    expect(section).toMatch(
      /- a\.ts — read in entry \d+; changed after that in entry \d+, not applied here:\n```\na\.ts v0 line 1/,
    );
    expect(section).toMatch(
      /- big\.ts — read in entry \d+, then changed in entry \d+ \(applied here\):\n```\n\[an excerpt: lines \d+–\d+ of the 400 of this text\]/,
    );
    expect(section).toContain('big line 300 CHANGED');
    expect(counter.text(section)).toBeLessThanOrEqual(1200);
  });

  it('the files given back keep every view within the target and every invariant (random sessions with reads and edits)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 3, maxLength: 30 }),
        fc.double({ min: 0.15, max: 0.8, noNaN: true }),
        async (ops, share) => {
          const t = new PiTranscript();
          t.user('Work on the files.');
          const version = FILES.map(() => 0);
          ops.forEach((o, k) => {
            if (o.kind === 'read')
              t.step({
                calls: [
                  {
                    name: 'read',
                    args: {
                      path: FILES[o.file]!,
                      ...(o.range ? { offset: o.range.from, limit: o.range.to - o.range.from + 1 } : {}),
                    },
                    result: fileLines(FILES[o.file]!, version[o.file]!, o.range?.from ?? 1, o.range?.to ?? 40),
                    isError: o.failed,
                  },
                ],
              });
            else if (o.kind === 'change') {
              t.step({
                calls: [
                  {
                    name: 'edit',
                    args: {
                      path: FILES[o.file]!,
                      oldText: `${FILES[o.file]} v${version[o.file]} line ${3 + k}`,
                      newText: `changed ${k}`,
                    },
                    result: 'ok',
                  },
                ],
              });
              version[o.file]!++;
            } else
              t.step({
                text: `Step ${k}.`,
                calls: [{ name: 'bash', args: { command: `make ${k}` }, result: fileLines('make', k, 1, 30) }],
              });
          });
          t.step({ text: 'Done.' });
          const session = parseSession(t.jsonl());
          const size = await sizeOf(parseSession(t.jsonl()));
          const target = Math.floor(size * share);
          const r = await compact(session, { target, prefixTokens: 0 });
          expect(r.violations).toEqual([]);
          if (r.reachedTarget) expect(r.afterTokens).toBeLessThanOrEqual(target);
          const summary = activeView(session).find(isSummaryItem);
          if (summary) {
            const text = summaryText(summary.message);
            // The files come last, after what the summarizer wrote, and an extractive summary still reads back.
            const at = text.indexOf(FILES_HEADING);
            if (at !== -1) expect(text.indexOf('### ', at + FILES_HEADING.length)).toBe(-1);
            if (text.startsWith('## Summary of earlier conversation')) expect(parseSummary(text)).toBeDefined();
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
