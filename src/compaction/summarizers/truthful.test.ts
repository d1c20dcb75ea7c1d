import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSession } from '../../formats/read.js';
import { activeView } from '../../model/view.js';
import type { Message, ToolCallPart, ToolResultPart } from '../../model/types.js';
import { TokenCounter } from '../../tokens/counter.js';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../../test/support/corpus.js';
import { fixtureTranscripts } from '../../../test/support/fixture-transcripts.js';
import { isRequest } from '../turns.js';
import { ExtractiveSummarizer } from './extractive.js';

/**
 * Every statement of the extractive summary, checked against the records it was made from, on every corpus transcript
 * (whole, and cut at 60%), at a tight, a middling and a generous budget. The checks read the summary as a model would
 * and judge each claim with their own reading of the records (not abridge's):
 *   - an exit status or "failed" said of a command is what its record says (the result's error flag; the exit code in
 *     the harness's header or trailer), and a command said without one did not fail by its record;
 *   - an error line quoted for a failed call is a line of that call's output, and the call failed by its record;
 *   - "resolved" is said only when a later call of the same command succeeded, or a later successful call edited the
 *     file named;
 *   - no terminal control codes;
 *   - every file listed is path-shaped (a tool's file argument, or a path with an extension, a leading `/`, `./`, `~/`,
 *     or a trailing `/`) — not `open/closed/blocked` or `--title/--body`;
 *   - the primary request and the people's messages are never the harness's text.
 */

const run = corpusAvailable() ? describe : describe.skip;
if (!corpusAvailable())
  console.warn(`summary truthfulness tests SKIPPED: ${CORPUS_DIR} not found (set ABRIDGE_CORPUS)`);

const counter = new TokenCounter();
const BUDGETS = [500, 2000, 8000];

// ---------------------------------------------------------------------------------------------------------------------
// The records, read independently of src/compaction/records.ts

function resultText(r: ToolResultPart): string {
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/** The exit code a harness wrote around a command's output: Codex's header, Claude Code's first line, pi's last. */
function headerExit(r: ToolResultPart): number | undefined {
  const t = resultText(r);
  const lines = t.split('\n');
  for (const l of lines.slice(0, 6)) {
    const m = /^Process exited with code (-?\d+)\s*$/.exec(l);
    if (m) return Number(m[1]);
  }
  const cc = /^Exit code (-?\d+)\s*$/.exec(lines[0] ?? '');
  if (cc) return Number(cc[1]);
  const pi = /^\(?Command exited with code (-?\d+)\)?\s*$/.exec(t.trimEnd().split('\n').pop() ?? '');
  return pi ? Number(pi[1]) : undefined;
}

function recordFailed(r: ToolResultPart): boolean {
  const exit = headerExit(r);
  return r.isError || (exit !== undefined && exit !== 0);
}

function commandText(call: ToolCallPart): string | undefined {
  const a = call.arguments;
  if (typeof a === 'string') return a;
  if (!a || typeof a !== 'object') return undefined;
  for (const k of ['command', 'cmd', 'script', 'commands']) {
    const v = (a as Record<string, unknown>)[k];
    if (typeof v === 'string') return v;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string'))
      return v.length >= 3 && /sh$/.test(String(v[0])) && /^-\w*c$/.test(String(v[1]))
        ? v.slice(2).join(' ')
        : v.join(' ');
  }
  return undefined;
}

const oneLine = (s: string) =>
  s
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ⏎ ');

interface Call {
  at: number;
  call: ToolCallPart;
  result: ToolResultPart | undefined;
  command: string | undefined;
  argsText: string;
}

function callsOf(messages: readonly Message[]): Call[] {
  const results = new Map<string, ToolResultPart>();
  for (const m of messages) for (const p of m.parts) if (p.type === 'tool-result') results.set(p.callId, p);
  const out: Call[] = [];
  messages.forEach((m, at) => {
    for (const p of m.parts)
      if (p.type === 'tool-call') {
        const command = commandText(p);
        out.push({
          at,
          call: p,
          result: results.get(p.id),
          command: command !== undefined ? oneLine(command) : undefined,
          argsText: typeof p.arguments === 'string' ? p.arguments : JSON.stringify(p.arguments ?? ''),
        });
      }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// The summary, read back

interface Section {
  title: string;
  items: string[];
}

function sectionsOf(text: string): Section[] {
  const out: Section[] = [];
  let current: Section | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('### ')) {
      current = { title: line.slice(4), items: [] };
      out.push(current);
    } else if (current && line.startsWith('- ')) current.items.push(line.slice(2));
    else if (current && line.startsWith('  ') && current.items.length > 0)
      current.items[current.items.length - 1] += `\n${line.slice(2)}`;
  }
  return out;
}

/** A code span at the start of an item: its text (without a trailing `…` of a clipped one) and what follows. */
function codeSpan(item: string): { code: string; rest: string } | undefined {
  const m = /^(``?) ?([\s\S]*?) ?\1([\s\S]*)$/.exec(item);
  if (!m) return undefined;
  return { code: m[2]!.replace(/…$/, ''), rest: m[3]! };
}

const HARNESS =
  /^\s*(?:\/[\w:-]+(?:\s|$)|<(?:command-name|command-message|local-command|task-notification|system-reminder)|\[Request interrupted|This session is being continued|Caveat: The messages below)/;
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u001b]/;

/** Path-shaped: a file argument of a call, or no spaces and an extension, a leading `/`, `./`, `../`, `~/`, or a trailing `/`. */
function pathShaped(p: string, argPaths: ReadonlySet<string>): boolean {
  if (argPaths.has(p)) return true;
  if (/\s/.test(p) || p.startsWith('-') || p.length < 3) return false;
  const name = p.slice(p.lastIndexOf('/') + 1);
  return (
    /^(?:~|\.{1,2})?\//.test(p) ||
    p.endsWith('/') ||
    /^[\w@+.-]*[\w@+-]\.[A-Za-z][\w]{0,9}$/.test(name) ||
    /^\.[\w-]+$/.test(name)
  );
}

interface Problem {
  where: string;
  what: string;
}

/** Every false statement of one summary of `messages`. */
function falseStatements(summary: string, messages: readonly Message[], where: string): Problem[] {
  const problems: Problem[] = [];
  const bad = (what: string) => problems.push({ where, what });
  if (CONTROL.test(summary)) bad(`control characters: ${JSON.stringify(summary.match(CONTROL)![0])}`);
  const calls = callsOf(messages);
  const argPaths = new Set<string>();
  for (const c of calls)
    if (c.call.arguments && typeof c.call.arguments === 'object')
      for (const [k, v] of Object.entries(c.call.arguments as Record<string, unknown>))
        if (/path|file/i.test(k) && typeof v === 'string') argPaths.add(v);
  const runsOf = (shown: string) => calls.filter((c) => c.command !== undefined && c.command.startsWith(shown));
  const sections = sectionsOf(summary);
  for (const s of sections) {
    if (/^Commands run/.test(s.title))
      for (const item of s.items) {
        const span = codeSpan(item);
        if (!span) continue;
        const runs = runsOf(span.code);
        if (runs.length === 0) {
          bad(`a command no call ran: ${item.slice(0, 120)}`);
          continue;
        }
        const status = /^(?: ×\d+)? → (exit -?\d+|failed|no result recorded)/.exec(span.rest)?.[1];
        // Of every command the clipped text may stand for, the latest run of one must be as said.
        const byCommand = new Map<string, Call>();
        for (const r of runs) byCommand.set(r.command!, r);
        const agrees = [...byCommand.values()].some((r) => {
          if (!r.result) return status === 'no result recorded' || status === undefined;
          if (status === undefined) return !recordFailed(r.result);
          if (status === 'failed') return recordFailed(r.result) && headerExit(r.result) === undefined;
          if (status.startsWith('exit ')) return headerExit(r.result) === Number(status.slice(5));
          return false;
        });
        if (!agrees) bad(`status not as recorded: ${item.slice(0, 160)}`);
      }
    const errorItems =
      /^Errors/.test(s.title) || /^Where the work stands/.test(s.title)
        ? s.items
            .map((i) =>
              i.replace(/^(?:Unresolved, the latest failure|The latest failure): /, (m) =>
                m.startsWith('U') ? 'unresolved: ' : 'resolved: ',
              ),
            )
            .filter((i) => /^(?:un)?resolved: /.test(i))
        : [];
    for (const item of errorItems) {
      const body = item.replace(/^(?:un)?resolved: /, '');
      const span = codeSpan(body);
      const [head, ...lines] = body.split('\n');
      const failing = span
        ? runsOf(span.code).filter((c) => c.result && recordFailed(c.result))
        : calls.filter((c) => c.result && recordFailed(c.result) && head!.startsWith(`${c.call.name} `));
      if (failing.length === 0) {
        bad(`an error said of a call that did not fail by its record: ${item.slice(0, 160)}`);
        continue;
      }
      // Its error lines are lines of that call's output (the first one may be on the head line, after the status).
      const resolution = / → (?:the same|fixed by).*$/;
      const quoted = [
        ...lines.map((l) => l.replace(resolution, '')),
        ...(/\): (.+)$/.exec(head!.replace(resolution, ''))?.[1] ?? '').split(' … '),
      ]
        .map((l) => l.replace(/…$/, '').trim())
        .filter((l) => l.length >= 4);
      for (const l of quoted)
        if (
          !failing.some((c) =>
            resultText(c.result!)
              .replace(/\u001b\[[0-9;?]*[ -/]*[@-~]/g, '')
              .includes(l),
          )
        )
          bad(
            `an error line not in the failed call's output: ${JSON.stringify(l.slice(0, 120))} (${item.slice(0, 80)})`,
          );
      // Resolved only by a later success of the same command, or a later successful edit of a file it names.
      if (item.startsWith('resolved: ')) {
        const first = failing[0]!.at;
        const later = calls.filter((c) => c.at > first && c.result && !recordFailed(c.result));
        const ok = / → the same (?:command|call) succeeded later/.test(item)
          ? later.some((c) =>
              span
                ? c.command?.startsWith(span.code.split(' | ')[0]!.split(' 2>&1')[0]!)
                : c.call.name === failing[0]!.call.name,
            )
          : (() => {
              const edited = / → fixed by an edit of (\S+)/.exec(item)?.[1];
              return (
                edited !== undefined && later.some((c) => c.argsText.includes(edited) || c.command?.includes(edited))
              );
            })();
        if (!ok) bad(`"resolved" with no later success that shows it: ${item.slice(0, 160)}`);
      }
    }
    if (/^Files (?:modified|read|named)/.test(s.title))
      for (const item of s.items) {
        const path = item
          .split('\n')[0]!
          .split(/ — | \(read/)[0]!
          .split(' → ')[0]!;
        if (!pathShaped(path, argPaths)) bad(`not a path: ${JSON.stringify(path)} in ${s.title}`);
      }
    if (s.title === 'Primary request' || /^User messages/.test(s.title))
      for (const item of s.items) {
        const text = item.replace(/^\(kept at the start of the conversation\) /, '');
        if (HARNESS.test(text)) bad(`harness text as a person's words: ${text.slice(0, 100)}`);
      }
  }
  return problems;
}

describe('the checker of false statements', () => {
  // A readable file whose text says "exit 1", a search that found error lines, a failed command.
  const messages: Message[] = [
    { role: 'user', parts: [{ type: 'text', text: 'Check the release script.' }] },
    {
      role: 'assistant',
      parts: [
        { type: 'tool-call', id: 'r1', name: 'Read', arguments: { file_path: 'scripts/release.sh' } },
        { type: 'tool-call', id: 'b1', name: 'Bash', arguments: { command: 'npm test' } },
      ],
    },
    {
      role: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: 'r1',
          isError: false,
          content: [{ type: 'text', text: '1→#!/bin/sh\n2→exit 1' }],
        },
        {
          type: 'tool-result',
          callId: 'b1',
          isError: true,
          content: [{ type: 'text', text: 'Exit code 2\nError: boom' }],
        },
      ],
    },
  ];
  const check = (summary: string) => falseStatements(summary, messages, 'test').map((p) => p.what);

  it('passes what the records say', () => {
    expect(
      check(
        [
          '### Commands run (status as recorded)',
          '- `npm test` → exit 2: Error: boom',
          '### Files read',
          '- scripts/release.sh (read)',
        ].join('\n'),
      ),
    ).toEqual([]);
  });

  it('catches a wrong exit status, an error line from a file read, a word taken for a file, control codes and harness text', () => {
    const problems = check(
      [
        '### Primary request',
        '- <command-name>/compact</command-name>',
        '### Commands run (status as recorded)',
        '- `npm test` → exit 1',
        '### Errors',
        '- unresolved: `npm test` (exit 2): exit 1',
        '- resolved: `npm test` (exit 2): Error: boom → the same command succeeded later',
        '### Files read',
        '- open/closed/blocked',
        '- \u001b[2mscripts/release.sh',
      ].join('\n'),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^control characters/),
        expect.stringMatching(/^harness text as a person's words/),
        expect.stringMatching(/^status not as recorded: `npm test` → exit 1/),
        expect.stringMatching(/^an error line not in the failed call's output: "exit 1"/),
        expect.stringMatching(/^"resolved" with no later success/),
        expect.stringMatching(/^not a path: "open\/closed\/blocked"/),
      ]),
    );
  });
});

function corpus(): string[] {
  return ['pi', 'claude-code', 'codex', 'swe-agent', 'openhands', 'other'].flatMap((f) => corpusFiles(f));
}

const summarizer = new ExtractiveSummarizer();

/** The false statements of the extractive summaries of a transcript (whole and cut at 60%, at every budget). */
async function falseStatementsOf(file: string): Promise<Problem[]> {
  const session = await readSession(file);
  const view = activeView(session).map((v) => v.message);
  const spans = [view, view.slice(0, Math.ceil(view.length * 0.6))];
  const problems: Problem[] = [];
  for (const [k, span] of spans.entries()) {
    const task = span.find(isRequest);
    const taskText = task?.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
    for (const maxTokens of BUDGETS) {
      const summary = summarizer.summarizeSync({
        messages: span,
        maxTokens,
        counter,
        ...(taskText ? { task: taskText } : {}),
      });
      expect(counter.text(summary)).toBeLessThanOrEqual(maxTokens);
      problems.push(...falseStatements(summary, span, `${k === 0 ? 'whole' : '60%'} @${maxTokens}`));
    }
  }
  return problems;
}

describe('the extractive summary states only what the records say (fixture transcripts)', async () => {
  const fixtures = await fixtureTranscripts();
  it.each(fixtures.map((f) => [`${f.folder}/${f.name}`, f.file]))('%s', async (_name, file) => {
    const problems = await falseStatementsOf(file);
    expect(problems, problems.map((p) => `${p.where}: ${p.what}`).join('\n')).toEqual([]);
  });
});

run('the extractive summary states only what the records say', () => {
  const all: Problem[] = [];
  for (const file of corpus()) {
    it(`${basename(file)}`, async () => {
      const problems = await falseStatementsOf(file);
      all.push(...problems);
      expect(problems, problems.map((p) => `${p.where}: ${p.what}`).join('\n')).toEqual([]);
    });
  }
  it('summary: no false statement in any corpus summary', () => {
    expect(all).toEqual([]);
  });
});
