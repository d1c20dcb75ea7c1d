import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, Part } from '../../model/types.js';
import { TokenCounter } from '../../tokens/counter.js';
import { ExtractiveSummarizer, parseSummary } from './extractive.js';

const counter = new TokenCounter();
const summarizer = new ExtractiveSummarizer();

/** A tiny transcript builder: calls get ids, results follow in a tool message. */
class Span {
  readonly messages: Message[] = [];
  private n = 0;
  user(text: string): this {
    this.messages.push({ role: 'user', parts: [{ type: 'text', text }] });
    return this;
  }
  harness(text: string): this {
    this.messages.push({ role: 'user', parts: [{ type: 'text', text }] });
    return this;
  }
  say(text: string): this {
    this.messages.push({ role: 'assistant', parts: [{ type: 'text', text }] });
    return this;
  }
  step(text: string | undefined, calls: { name: string; args: unknown; result?: string; isError?: boolean }[]): this {
    const parts: Part[] = text ? [{ type: 'text', text }] : [];
    const results: Part[] = [];
    for (const c of calls) {
      const id = `c${this.n++}`;
      parts.push({ type: 'tool-call', id, name: c.name, arguments: c.args });
      if (c.result !== undefined)
        results.push({
          type: 'tool-result',
          callId: id,
          toolName: c.name,
          isError: c.isError ?? false,
          content: [{ type: 'text', text: c.result }],
        });
    }
    this.messages.push({ role: 'assistant', parts });
    if (results.length) this.messages.push({ role: 'tool', parts: results });
    return this;
  }
}

function summary(
  span: Span,
  maxTokens = 4000,
  more: Partial<Parameters<ExtractiveSummarizer['summarizeSync']>[0]> = {},
) {
  return summarizer.summarizeSync({ messages: span.messages, maxTokens, counter, ...more });
}

/** One section of a summary (`### name…` up to the next section). */
function section(text: string, name: string): string {
  const at = text.indexOf(`### ${name}`);
  return at === -1 ? '' : text.slice(at).split('\n### ')[0]!;
}

/** A session of work: a plan, a failing test, a fix, the test passing, a file read, facts said along the way. */
function work(): Span {
  return new Span()
    .user(
      'Port the retry logic in src/net/retry.ts to exponential backoff, capped at 30 s. Keep the API of src/net/index.ts.',
    )
    .step('Planning.', [
      {
        name: 'TodoWrite',
        args: {
          todos: [
            { content: 'Read the retry code', status: 'completed' },
            { content: 'Switch to exponential backoff', status: 'in_progress' },
            { content: 'Document the cap in README.md', status: 'pending' },
          ],
        },
        result: 'Todos have been modified successfully',
      },
    ])
    .step(undefined, [
      {
        name: 'Read',
        args: { file_path: 'src/net/retry.ts' },
        result:
          '1→export function retryDelay(attempt: number): number {\n2→  return 100 * attempt;\n3→}\n4→// exit 1 means the caller gave up\n5→export class RetryPolicy {}',
      },
    ])
    .step('The root cause is the linear delay in retryDelay: it grows by 100 ms per attempt instead of doubling.', [
      {
        name: 'Edit',
        args: {
          file_path: 'src/net/retry.ts',
          old_string: '  return 100 * attempt;',
          new_string: '  return Math.min(30_000, 100 * 2 ** attempt);',
        },
        result: 'The file src/net/retry.ts has been updated.',
      },
    ])
    .step(undefined, [
      {
        name: 'Bash',
        args: { command: 'npm test -- retry' },
        result: 'Exit code 1\nFAIL src/net/retry.test.ts\nError: expected 800 to be 400',
        isError: true,
      },
    ])
    .step(undefined, [
      {
        name: 'Edit',
        args: { file_path: 'src/net/retry.test.ts', old_string: 'toBe(400)', new_string: 'toBe(800)' },
        result: 'ok',
      },
    ])
    .step('Tests pass now; the dev server runs on localhost:5173 with RETRY_MAX=5.', [
      { name: 'Bash', args: { command: 'npm test -- retry' }, result: 'Tests: 12 passed, 12 total' },
    ]);
}

describe('a hand-off of the work', () => {
  const text = summary(work());

  it('quotes the request, and says where the work stands with the next step from the plan, not narration', () => {
    expect(text).toContain('Port the retry logic in src/net/retry.ts to exponential backoff, capped at 30 s.');
    const state = section(text, 'Where the work stands');
    expect(state).toContain('Next step: continue "Switch to exponential backoff" (in progress in the plan)');
  });

  it("lists the agent's plan with what is done, under way and pending", () => {
    const plan = section(text, 'Plan');
    expect(plan).toContain('- [x] Read the retry code');
    expect(plan).toContain('- [~] Switch to exponential backoff');
    expect(plan).toContain('- [ ] Document the cap in README.md');
  });

  it('says what changed in each file modified: the lines taken out and put in', () => {
    const files = section(text, 'Files modified');
    expect(files).toContain('src/net/retry.ts — edited');
    expect(files).toContain('- return 100 * attempt;');
    expect(files).toContain('+ return Math.min(30_000, 100 * 2 ** attempt);');
    expect(files).toContain('src/net/retry.test.ts — edited');
    expect(files).toContain('+ toBe(800)');
  });

  it('says a failure was resolved only by the same command succeeding later, with the edits in between', () => {
    const errors = `${section(text, 'Errors')}\n${section(text, 'Where the work stands')}`;
    expect(errors).toContain(
      '`npm test -- retry` (exit 1): FAIL src/net/retry.test.ts … Error: expected 800 to be 400',
    );
    expect(errors).toContain('the same command succeeded later, after edits to src/net/retry.test.ts');
  });

  it('quotes a command with the status its harness recorded and what it printed last', () => {
    const commands = section(text, 'Commands run');
    expect(commands).toContain('`npm test -- retry` ×2 — printed: Tests: 12 passed, 12 total');
  });

  it('says what a file read defines, and never calls it failed for the words in it', () => {
    const read = section(text, 'Files read');
    expect(read).toBe('');
    // Read then edited: it is a modified file, listed once.
    expect(text.match(/src\/net\/retry\.ts —/g)).toHaveLength(1);
    expect(text).not.toMatch(/retry\.ts.*exit 1/);
  });

  it("keeps the agent's findings and the key facts with the line they were said in", () => {
    expect(section(text, "The agent's findings")).toContain('The root cause is the linear delay in retryDelay');
    const facts = section(text, 'Key facts');
    expect(facts).toContain(
      '`localhost:5173`, `RETRY_MAX=5` — Tests pass now; the dev server runs on localhost:5173 with RETRY_MAX=5.',
    );
    expect(facts).toContain('`RETRY_MAX=5`');
  });

  it('fits its budget', () => {
    expect(counter.text(text)).toBeLessThanOrEqual(4000);
  });
});

describe('only what the records say', () => {
  it('a result the tool did not flag is never said to have failed; its error-shaped lines are quoted as printed', () => {
    const text = summary(
      new Span().user('Run the checks.').step(undefined, [
        { name: 'bash', args: { command: 'npm run lint' }, result: 'src/a.ts:3:1: error Unexpected any\n1 problem' },
        { name: 'read', args: { path: 'docs/errors.md' }, result: '# Errors\nError: when the disk is full, exit 1.' },
      ]),
    );
    const commands = section(text, 'Commands run');
    expect(commands).toContain('`npm run lint` — printed: src/a.ts:3:1: error Unexpected any');
    expect(commands).not.toMatch(/→ (failed|exit)/);
    expect(section(text, 'Errors')).toBe('');
    expect(text).not.toContain('when the disk is full');
  });

  it("quotes a Codex exec failure by what it printed past its harness's header, with the exit code the header gives", () => {
    const text = summary(
      new Span().user('Build it.').step(undefined, [
        {
          name: 'exec_command',
          args: { cmd: 'cargo build' },
          result:
            'Chunk ID: 1a2b\nWall time: 0.4 seconds\nProcess exited with code 101\nOutput:\n   Compiling app v0.1.0\nerror[E0425]: cannot find value `x` in this scope',
          isError: true,
        },
      ]),
    );
    expect(text).toContain('`cargo build` (exit 101): error[E0425]: cannot find value `x` in this scope');
    expect(text).not.toContain('Chunk ID');
  });

  it('a file that was not where the call looked, then read where it is, is no unresolved failure', () => {
    const text = summary(
      new Span().user('Update the README.').step(undefined, [
        {
          name: 'view',
          args: { path: '/home/runner/work/gitclaw/gitclaw/README.md' },
          result: 'Path does not exist',
          isError: true,
        },
        {
          name: 'view',
          args: { path: '/home/runner/work/copilotclaw/copilotclaw/README.md' },
          result: '# copilotclaw',
        },
      ]),
    );
    expect(text).not.toContain('Unresolved');
    expect(text).toContain(
      'The latest failure: view /home/runner/work/gitclaw/gitclaw/README.md (failed): Path does not exist → the same call succeeded later on /home/runner/work/copilotclaw/copilotclaw/README.md',
    );
    // Another file of another name is no such evidence.
    const other = summary(
      new Span().user('Update the README.').step(undefined, [
        { name: 'view', args: { path: '/w/a/README.md' }, result: 'Path does not exist', isError: true },
        { name: 'view', args: { path: '/w/b/NOTES.md' }, result: '# notes' },
      ]),
    );
    expect(other).toContain('Unresolved, the latest failure: view /w/a/README.md (failed): Path does not exist');
  });

  it('an error is unresolved when only an unrelated call succeeded after it', () => {
    const text = summary(
      new Span().user('Check the session.').step(undefined, [
        { name: 'session_status', args: {}, result: 'session not found', isError: true },
        { name: 'write', args: { path: 'essay.md', content: 'An essay.' }, result: 'written' },
      ]),
    );
    expect(text).toContain('Unresolved, the latest failure: session_status (failed): session not found');
    expect(text).not.toMatch(/resolved: session_status|fixed by/);
  });

  it('a search or a file print that found lines with "error" in them quotes none of them as errors', () => {
    const text = summary(
      new Span().user('Find the handlers.').step(undefined, [
        {
          name: 'bash',
          args: { command: 'grep -rn error src/' },
          result: 'src/a.ts:12:    throw new Error("boom")\nsrc/b.ts:3: // error handling',
        },
        {
          name: 'bash',
          args: { command: 'sed -n 1,20p src/c.ts && cat src/missing.ts' },
          result: 'error: message,\ncat: src/missing.ts: No such file or directory',
          isError: true,
        },
      ]),
    );
    expect(text).not.toContain('throw new Error');
    expect(text).toContain('cat: src/missing.ts: No such file or directory');
    expect(text).not.toMatch(/: error: message/);
  });

  it('a grep that matched nothing (exit 1, no output) is no failure to fix', () => {
    const text = summary(
      new Span()
        .user('Is console.log used?')
        .step(undefined, [
          { name: 'Bash', args: { command: 'grep -n console src/a.ts' }, result: 'Exit code 1', isError: true },
        ]),
    );
    expect(section(text, 'Errors')).toBe('');
    expect(text).not.toContain('Unresolved');
    expect(section(text, 'Commands run')).toContain('`grep -n console src/a.ts` → exit 1');
  });

  it('terminal control codes never reach the summary', () => {
    const text = summary(
      new Span().user('Test.').step(undefined, [
        {
          name: 'bash',
          args: { command: 'npm test' },
          result: '\u001b[31mFAIL\u001b[39m src/a.test.ts\r\n\u001b[2mError: nope\u001b[22m',
          isError: true,
        },
      ]),
    );
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(text).toContain('FAIL src/a.test.ts');
  });

  it("the harness's text is never the primary request nor a person's words; it is listed apart", () => {
    const span = new Span()
      .harness('<command-name>/compact</command-name>')
      .harness('[Request interrupted by user]')
      .user('Rename the module.')
      .say('Renamed.');
    const text = summary(span, 4000, { task: '/gsd:progress' });
    expect(section(text, 'Primary request')).toBe('');
    expect(section(text, 'The latest user message')).toContain('Rename the module.');
    expect(section(text, 'User messages')).toBe('');
    expect(section(text, 'Harness messages')).toContain('<command-name>/compact</command-name>');
    expect(section(text, 'Harness messages')).toContain('[Request interrupted by user]');
  });

  it('a file is a path that names one: words with slashes and options are not', () => {
    const text = summary(
      new Span()
        .user(
          'Use --title/--description and mark it open/closed/blocked; the schema/Zod split stays. See **src/api/routes.ts** and README.md.',
        )
        .say('I will update src/api/routes.ts and docs/api.md; the pass/fail rule is in .env.'),
    );
    const files = section(text, 'Files named in messages');
    for (const f of ['src/api/routes.ts', 'README.md', 'docs/api.md', '.env']) expect(files).toContain(`- ${f}`);
    for (const w of ['--title', 'open/closed', 'schema/Zod', 'pass/fail']) expect(files).not.toContain(w);
  });
});

describe('plans the agent keeps', () => {
  it("Codex's update_plan and Claude Code's TaskCreate/TaskUpdate", () => {
    const codex = summary(
      new Span().user('Remove the plugin.').step(undefined, [
        {
          name: 'update_plan',
          args: {
            plan: [
              { step: 'Inspect references', status: 'completed' },
              { step: 'Delete the package', status: 'pending' },
            ],
          },
          result: 'Plan updated',
        },
      ]),
    );
    expect(section(codex, 'Plan')).toContain('- [ ] Delete the package');
    expect(codex).toContain('Next step: "Delete the package" (the first pending item of the plan)');
    const cc = summary(
      new Span().user('Add --threshold.').step(undefined, [
        {
          name: 'TaskCreate',
          args: { subject: 'Explore the CLI' },
          result: 'Task #1 created successfully: Explore the CLI',
        },
        {
          name: 'TaskCreate',
          args: { subject: 'Write the design' },
          result: 'Task #2 created successfully: Write the design',
        },
        { name: 'TaskUpdate', args: { taskId: '1', status: 'completed' }, result: 'Updated task #1 status' },
        { name: 'TaskUpdate', args: { taskId: '2', status: 'in_progress' }, result: 'Updated task #2 status' },
      ]),
    );
    expect(section(cc, 'Plan')).toContain('- [x] Explore the CLI');
    expect(section(cc, 'Plan')).toContain('- [~] Write the design');
  });
});

describe("a checklist in the agent's words", () => {
  it('is its plan while it is the newest word on the work; a request after it comes first', () => {
    const span = new Span()
      .user('Audit the package.')
      .say('Readiness:\n- [x] ESM entrypoints\n- [ ] Type declarations\n- [ ] Documentation');
    expect(summary(span)).toContain(
      'Next step: "Type declarations" (the first pending item of the agent\'s checklist)',
    );
    span.user('Add the DAG scaffolding.').say('Added dist/dags/index.js.');
    const later = summary(span);
    expect(section(later, 'Plan')).toContain('- [ ] Type declarations');
    expect(later).not.toContain('Next step: "Type declarations"');
  });
});

describe('agents that edit otherwise', () => {
  it("SWE-agent's edit changes the file its answer names; one its linter refused changed nothing", () => {
    const text = summary(
      new Span().user('Fix the bug.').step(undefined, [
        {
          name: 'bash',
          args: { command: 'open src/calc.py' },
          result: '[File: /repo/src/calc.py (40 lines total)]\n1:def div(a, b)',
        },
        {
          name: 'bash',
          args: { command: 'edit 1:1\ndef div(a, b):\nend_of_edit' },
          result: '[File: /repo/src/calc.py (40 lines total)]\n1:def div(a, b):',
        },
        {
          name: 'bash',
          args: { command: 'edit 2:2\n  return a /\nend_of_edit' },
          result: 'Your proposed edit has introduced new syntax error(s).',
        },
      ]),
    );
    expect(section(text, 'Files modified')).toContain('/repo/src/calc.py — edited');
    expect(section(text, 'Files modified')).toContain('+ def div(a, b):');
    expect(section(text, 'Files modified')).not.toContain('return a /');
  });

  it("Aider's SEARCH/REPLACE blocks in a reply are edits, with their lines", () => {
    const text = summary(
      new Span()
        .user('Export the DAGs.')
        .say(
          'dist/index.js\n```js\n<<<<<<< SEARCH\nexport const dagStubs = {};\n=======\nexport * from "./dags/index.js";\n>>>>>>> REPLACE\n```',
        ),
    );
    expect(section(text, 'Files modified')).toContain('dist/index.js — edited');
    expect(section(text, 'Files modified')).toContain('+ export * from "./dags/index.js";');
  });
});

describe('a tight budget', () => {
  const span = work();
  for (let i = 0; i < 30; i++)
    span.step(undefined, [
      { name: 'Bash', args: { command: `npm --prefix packages/pkg-${i} run lint` }, result: 'ok' },
      { name: 'Read', args: { file_path: `packages/pkg-${i}/index.ts` }, result: `export function f${i}() {}` },
    ]);
  span.user('Now also cap the jitter at 10%.');

  it('keeps the newest request whole and a few lines of every kind, not all of one list', () => {
    const text = summary(span, 500);
    expect(counter.text(text)).toBeLessThanOrEqual(500);
    expect(text).toContain('Now also cap the jitter at 10%.');
    const commands = section(text, 'Commands run').split('\n- ').length - 1;
    const files = section(text, 'Files read').split('\n- ').length - 1;
    expect(commands).toBeGreaterThan(2);
    expect(files).toBeGreaterThanOrEqual(1);
    // What did not fit is counted, not silently gone.
    expect(text).toMatch(/\(Not listed for room: \d+ commands, \d+ files read/);
    // The newest request comes after the plan was last written: it is the next step.
    expect(text).toContain('Next step: go on with the latest request ("Now also cap the jitter at 10%.")');
    expect(commands).toBeLessThan(30);
    // The newest are kept before the oldest.
    expect(text).toContain('pkg-29');
    expect(text).not.toContain('pkg-0/');
  });

  it('never exceeds its budget, down to a note of what was archived', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3000 }), (maxTokens) => {
        const text = summarizer.summarizeSync({ messages: span.messages, maxTokens, counter, strict: true });
        return (
          counter.text(text) <= maxTokens ||
          /^\[\d+ earlier messages archived; the full history is kept\.\]$/.test(text)
        );
      }),
      { numRuns: 60 },
    );
  });
});

describe('folded forward', () => {
  it('a second summary carries the first: the people’s words, the files-modified ledger, the errors; a newer plan replaces the old', () => {
    const first = summary(work());
    const later = new Span()
      .user('Now document it.')
      .step(undefined, [
        {
          name: 'TodoWrite',
          args: { todos: [{ content: 'Write the docs section', status: 'in_progress' }] },
          result: 'ok',
        },
      ])
      .step(undefined, [
        {
          name: 'Edit',
          args: { file_path: 'README.md', old_string: '## Retry', new_string: '## Retry\nCapped at 30 s.' },
          result: 'ok',
        },
      ]);
    const second = summarizer.summarizeSync({
      messages: later.messages,
      previousSummary: first,
      maxTokens: 4000,
      counter,
    });
    expect(second).toContain('Port the retry logic in src/net/retry.ts');
    expect(second).toContain('Now document it.');
    const files = section(second, 'Files modified');
    expect(files).toContain('src/net/retry.ts — edited');
    expect(files).toContain('README.md — edited');
    expect(section(second, 'Plan')).toContain('- [~] Write the docs section');
    expect(section(second, 'Plan')).not.toContain('Switch to exponential backoff');
    expect(second).toMatch(/resolved: `npm test -- retry`/);
    expect(parseSummary(second)!.archivedMessages).toBe(work().messages.length + later.messages.length);
  });

  it("quotes another agent's summary it archives, as far as the budget holds", () => {
    const text = summarizer.summarizeSync({
      messages: new Span().user('Go on.').messages,
      otherSummaries: ['1. Primary Request: implement spotter-gqc\n2. Pending: gqc.7'],
      maxTokens: 2000,
      counter,
    });
    expect(section(text, 'Earlier summary')).toContain('> 1. Primary Request: implement spotter-gqc');
  });
});

describe('instructions for this summary', () => {
  it('puts what matches them first: under pressure the matching items stay', () => {
    const span = new Span().user('Tidy up.');
    for (let i = 0; i < 5; i++)
      span.step(undefined, [
        { name: 'Read', args: { file_path: `src/mod-${i}.ts` }, result: `export const m${i} = ${i};` },
      ]);
    span.step(undefined, [
      { name: 'Read', args: { file_path: 'src/billing/invoice.ts' }, result: 'export class Invoice {}' },
    ]);
    for (let i = 5; i < 60; i++)
      span.step(undefined, [
        { name: 'Read', args: { file_path: `src/mod-${i}.ts` }, result: `export const m${i} = ${i};` },
      ]);
    const plain = summary(span, 300);
    const focused = summary(span, 300, { instructions: 'keep everything about billing and the invoice' });
    expect(plain).not.toContain('src/billing/invoice.ts');
    expect(focused).toContain('src/billing/invoice.ts');
    expect(section(focused, 'Focus of this summary')).toContain('keep everything about billing and the invoice');
  });
});
