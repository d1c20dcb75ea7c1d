import { describe, expect, it } from 'vitest';
import { parseSession } from '../../formats/read.js';
import { activeView } from '../../model/view.js';
import { PiTranscript } from '../../../test/support/random-session.js';
import { TokenCounter } from '../../tokens/counter.js';
import { ExtractiveSummarizer, parseSummary } from './extractive.js';
import type { Message } from '../../model/types.js';

const counter = new TokenCounter();

/** The extractive summary of a transcript, with room for every section. */
function summaryOf(t: PiTranscript): string {
  const view = activeView(parseSession(t.jsonl())).map((v) => v.message);
  return new ExtractiveSummarizer().summarizeSync({ messages: view, maxTokens: 4000, counter });
}

/** One section of a summary (`### name` up to the next section). */
function section(text: string, name: string): string {
  const at = text.indexOf(`### ${name}`);
  return at === -1 ? '' : text.slice(at).split('\n### ')[0]!;
}
const WORDS = ['Use exponential backoff, capped at 30 s.', 'Keep the public API of src/net/index.ts.'];

/** Two requests from a person, a failing test run, a fix, a passing run. */
function messages() {
  const t = new PiTranscript();
  t.user('Port the retry logic in src/net/retry.ts to exponential backoff.');
  t.user(WORDS[0]!);
  t.step({
    text: 'Running the tests.',
    calls: [
      {
        name: 'bash',
        args: { command: 'npm test' },
        result: 'FAIL src/net/retry.test.ts\nError: expected 800 to be 400',
        isError: true,
      },
    ],
  });
  t.user(WORDS[1]!);
  t.step({
    text: 'Fixed the doubling.',
    calls: [{ name: 'edit', args: { path: 'src/net/retry.ts', oldText: 'a', newText: 'b' }, result: 'ok' }],
  });
  t.step({ text: 'Passing now.', calls: [{ name: 'bash', args: { command: 'npm test' }, result: 'ok' }] });
  return activeView(parseSession(t.jsonl())).map((v) => v.message);
}

describe('the shortest form (no room for sections)', () => {
  const summarizer = new ExtractiveSummarizer();

  it('carries the people’s words, the commands and the error lines as far as they fit', () => {
    const text = summarizer.summarizeSync({ messages: messages(), maxTokens: 120, counter, strict: true });
    expect(text).not.toContain('### ');
    expect(counter.text(text)).toBeLessThanOrEqual(120);
    for (const w of WORDS) expect(text).toContain(w);
    expect(text).toContain('`npm test` → ');
    expect(text).toContain('Error line: Error: expected 800 to be 400');
  });

  it('lists the files an agent only named in its words (Aider, a chat) after those it changed or read', () => {
    const said: Message[] = [
      { role: 'user', parts: [{ type: 'text', text: 'Why is the export missing?' }] },
      {
        role: 'assistant',
        parts: [
          { type: 'text', text: 'It is in src/schemas/index.ts, re-exported by src/index.ts; see docs/exports.md.' },
        ],
      },
    ];
    const text = summarizer.summarizeSync({ messages: said, maxTokens: 80, counter, strict: true });
    expect(text).not.toContain('### ');
    expect(text).toContain('Files: src/schemas/index.ts, src/index.ts, docs/exports.md');
  });

  it('is read back whole when folded into the next summary, not dropped with its missing sections', () => {
    const short = summarizer.summarizeSync({ messages: messages(), maxTokens: 120, counter, strict: true });
    const parsed = parseSummary(short)!;
    expect(parsed.evidence.instructions).toEqual(expect.arrayContaining(WORDS));
    expect(parsed.evidence.commands.map((c) => c.command)).toContain('npm test');
    expect(parsed.evidence.errors).toContain('Error: expected 800 to be 400');
    // The next compaction, with room again: what the short summary carried is still there.
    const next = summarizer.summarizeSync({ messages: [], previousSummary: short, maxTokens: 4000, counter });
    for (const w of WORDS) expect(next).toContain(w);
    expect(next).toContain('Error: expected 800 to be 400');
    expect(next).toContain('`npm test`');
  });

  it('gives up the tail of a long list, not the whole list: files and commands each as far as they fit', () => {
    const t = new PiTranscript();
    t.user('Tidy the packages.');
    for (let i = 0; i < 30; i++)
      t.step({
        text: `Package ${i}.`,
        calls: [
          {
            name: 'bash',
            args: { command: `npm --prefix packages/component-number-${i}/long/nested/folder run lint:fix` },
            result: 'ok',
          },
          { name: 'read', args: { path: `packages/component-number-${i}/long/nested/folder/index.ts` }, result: 'x' },
        ],
      });
    const view = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const text = summarizer.summarizeSync({ messages: view, maxTokens: 220, counter, strict: true });
    expect(text).not.toContain('### ');
    expect(counter.text(text)).toBeLessThanOrEqual(220);
    // Neither list fits whole in 220 tokens; before, each went whole or not at all, and both went.
    const parsed = parseSummary(text)!;
    const files = parsed.evidence.filesRead;
    const commands = parsed.evidence.commands.map((c) => c.command);
    expect(files.length).toBeGreaterThan(1);
    expect(files.length).toBeLessThan(30);
    expect(commands.length).toBeGreaterThan(1);
    expect(commands.length).toBeLessThan(30);
    // The most recent commands are the ones kept, written in the order they ran.
    expect(commands.at(-1)).toContain('component-number-29/');
    expect(commands).toEqual(
      [...commands].sort((a, b) => Number(/(\d+)\//.exec(a)![1]) - Number(/(\d+)\//.exec(b)![1])),
    );
  });
});

describe('a budget the sections cannot hold whole', () => {
  it('takes the compact form when it keeps more of the evidence than sections that gave up whole lists', () => {
    const t = new PiTranscript();
    // Long requests (their opening is what both forms quote) and many small files: the sections give up the file
    // list before the people's words, the compact form lists a file in a few tokens.
    for (let r = 0; r < 4; r++) {
      t.user(`Request ${r}: ${'please keep the schemas strict and the exports tidy; '.repeat(30)}`);
      for (let i = 0; i < 12; i++)
        t.step({
          text: `Reading ${r}.${i}.`,
          calls: [{ name: 'read', args: { path: `src/s${r}/f${i}.ts` }, result: 'x' }],
        });
    }
    const view = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const summarizer = new ExtractiveSummarizer();
    const files = (text: string) => new Set(text.match(/src\/s\d\/f\d+\.ts/g)).size;
    const roomy = summarizer.summarizeSync({ messages: view, maxTokens: 4000, counter, strict: true });
    expect(roomy).toContain('### Files read');
    expect(files(roomy)).toBe(48);
    const tight = summarizer.summarizeSync({ messages: view, maxTokens: 500, counter, strict: true });
    expect(counter.text(tight)).toBeLessThanOrEqual(500);
    expect(tight).not.toContain('### ');
    expect(files(tight)).toBeGreaterThan(30);
    for (let r = 0; r < 4; r++) expect(tight).toContain(`Request ${r}: please keep`);
    // Read back into evidence when folded into the next summary.
    expect(parseSummary(tight)!.evidence.filesRead.length).toBe(files(tight));
  });
});

describe('lists that give way', () => {
  it('give way together: a tight summary keeps some files, commands and error lines, not all of one and none of another', () => {
    const t = new PiTranscript();
    t.user('Make the integration suite pass.');
    for (let i = 0; i < 16; i++) {
      t.step({
        text: `Checking part ${i}.`,
        calls: [
          {
            name: 'read',
            args: {
              path: `/home/user/projects/spotter-worktrees/spotter-review/lib/spotter_web/part${i}/handler_${i}.ex`,
            },
            result: 'defmodule X do\nend',
          },
        ],
      });
      t.step({
        calls: [
          {
            name: 'bash',
            args: { command: `bd show p${i}` },
            result: `Error: part${i} handler timed out after ${i * 100}ms while waiting for the session registry to answer the pane lookup for the review`,
            isError: true,
          },
        ],
      });
    }
    const view = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const summarizer = new ExtractiveSummarizer();
    const count = (text: string, re: RegExp) => new Set(text.match(re)).size;
    let tried = 0;
    for (let budget = 200; budget <= 700; budget += 50) {
      const text = summarizer.summarizeSync({ messages: view, maxTokens: budget, counter, strict: true });
      expect(counter.text(text)).toBeLessThanOrEqual(budget);
      const files = count(text, /part\d+\/handler_\d+\.ex/g);
      const commands = count(text, /bd show p\d+/g);
      const errors = count(text, /handler timed out after \d+ms/g);
      if (files + commands + errors < 6) continue;
      tried++;
      // Before: every error line went first, then every file, while 10 or more commands stayed.
      expect(
        Math.min(files, commands, errors),
        `at ${budget}: ${files} files, ${commands} commands, ${errors} errors`,
      ).toBeGreaterThan(0);
    }
    expect(tried).toBeGreaterThan(3);
  });
});

describe('decisions', () => {
  it('are outcomes — what was chosen and why, or found to be the cause — not the narration of the next action', () => {
    const t = new PiTranscript();
    t.user('Keep the repository URL visible while browsing the report.');
    t.step({
      text: 'Let me check if the Tabs bar is sticky: I will look at Tabs.tsx.',
      calls: [{ name: 'read', args: { path: 'src/components/Tabs.tsx' }, result: 'export function Tabs() {}' }],
    });
    t.step({
      text: "Now let me implement the changes. I'll put the URL in a strip below the header instead of inside it. The root cause is the Summary tab scrolling away.",
      calls: [{ name: 'edit', args: { path: 'src/App.tsx', oldText: 'a', newText: 'b' }, result: 'ok' }],
    });
    t.step({ text: "I'll use a sticky strip because the header is already sticky. Let me run the tests." });
    const text = summaryOf(t);
    const decisions = section(text, 'Decisions');
    expect(decisions).toContain('strip below the header instead of inside it');
    expect(decisions).toContain('The root cause is the Summary tab scrolling away');
    expect(decisions).toContain('because the header is already sticky');
    expect(decisions).not.toContain('Let me check if the Tabs bar is sticky');
    expect(decisions).not.toContain('Now let me implement the changes');
    expect(decisions).not.toContain('Let me run the tests');
  });
});

describe('files a command names', () => {
  it('are the arguments that name a file, not a pattern or an option with a slash in it', () => {
    const t = new PiTranscript();
    t.user('Find where the header colour is set.');
    t.step({
      calls: [
        {
          name: 'bash',
          args: { command: 'grep -rn "bg-slate-800/95" frontend/src/App.tsx ./lib/theme' },
          result: '12: x',
        },
        { name: 'bash', args: { command: 'sed -n 1,40p src/components/Tabs.tsx' }, result: 'tabs' },
      ],
    });
    const text = summaryOf(t);
    const files = section(text, 'Files read');
    for (const f of ['frontend/src/App.tsx', './lib/theme', 'src/components/Tabs.tsx']) expect(files).toContain(f);
    expect(files).not.toContain('bg-slate-800/95');
  });

  it('are found in Markdown bold, as models list them', () => {
    const t = new PiTranscript();
    t.user('Which files validate signals?');
    t.step({
      text: '1. **validators/SignalValidator.tsx**: a React component.\n2. **schemas/universal_signal_schema.ts**: the schema.',
    });
    const text = summaryOf(t);
    const files = section(text, 'Files mentioned');
    expect(files).toContain('validators/SignalValidator.tsx');
    expect(files).toContain('schemas/universal_signal_schema.ts');
  });

  it("are named by each agent's own argument (Gemini CLI's read_file takes absolute_path, Continue's filepath): a file read whose text opens like an error did not fail", () => {
    const t = new PiTranscript();
    t.user('Read the config loaders.');
    t.step({
      calls: [
        // A file whose own text opens like an error report: read, not failed.
        {
          name: 'read_file',
          args: { absolute_path: '/work/app/src/config/messages.txt' },
          result: 'Error: the configuration could not be loaded.\nWarning: falling back to defaults.',
        },
        { name: 'read_file', args: { filepath: 'src/config/schema.ts' }, result: 'export {}' },
      ],
    });
    const text = summaryOf(t);
    const files = section(text, 'Files read');
    expect(files).toContain('/work/app/src/config/messages.txt');
    expect(files).toContain('src/config/schema.ts');
    expect(text).not.toContain('printed an error');
  });
});

describe("SWE-agent's own file commands", () => {
  it('an edit changes the file its answer names; one its linter refused changed nothing and is an error', () => {
    const t = new PiTranscript();
    t.user('Make the Pixel Representation attribute optional.');
    t.step({
      calls: [
        {
          name: 'bash',
          args: { command: 'open pydicom/pixel_data_handlers/numpy_handler.py 293\n' },
          result: '[File: /repo/pydicom/pixel_data_handlers/numpy_handler.py (372 lines total)]\n293:    missing = []',
        },
      ],
    });
    t.step({
      calls: [
        {
          name: 'bash',
          args: { command: "edit 287:295\n    required = ['Rows'\nend_of_edit\n" },
          result:
            'Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your edit commmand.\n\nERRORS:\n- E999 SyntaxError: unmatched bracket',
        },
      ],
    });
    t.step({
      calls: [
        {
          name: 'bash',
          args: { command: "edit 287:295\n    required = ['Rows']\nend_of_edit\n" },
          result:
            "[File: /repo/pydicom/pixel_data_handlers/numpy_handler.py (370 lines total)]\n287:    required = ['Rows']\nFile updated.",
        },
      ],
    });
    t.step({
      calls: [
        {
          name: 'bash',
          args: { command: 'create reproduce.py\n' },
          result: '[File: /repo/reproduce.py (1 lines total)]',
        },
      ],
    });
    const text = summaryOf(t);
    const modified = section(text, 'Files modified');
    expect(modified).toContain('/repo/pydicom/pixel_data_handlers/numpy_handler.py — edit');
    expect(modified).not.toContain('edit ×2');
    expect(modified).toContain('reproduce.py');
    const errors = section(text, 'Errors and how they were handled');
    expect(errors).toContain('Your proposed edit has introduced new syntax error(s)');
    expect(errors).toContain("→ then `edit 287:295 required = ['Rows'] end_of_edit` (ok)");
  });
});

describe('errors without an error word', () => {
  it("are quoted by what the command printed, not by its harness's header (Codex's exec)", () => {
    const t = new PiTranscript();
    t.user('Show the checkpoint status.');
    t.step({
      calls: [
        {
          name: 'exec_command',
          args: { cmd: 'entire status --detailed --json' },
          result:
            'Chunk ID: 42eb7d\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 27\nOutput:\nif any flags in the group [detailed json] are set none of the others can be\n',
        },
      ],
    });
    const errors = section(summaryOf(t), 'Errors and how they were handled');
    expect(errors).toContain('`entire status --detailed --json` (exit 1):');
    expect(errors).toContain('if any flags in the group [detailed json] are set none of the others can be');
    expect(errors).not.toContain('Chunk ID');
  });
});

describe('what comes next', () => {
  it('is said once: a sentence that reads as a pending task and as the next step is the next step', () => {
    const t = new PiTranscript();
    t.user('Migrate the users table.');
    t.step({
      text: 'Schema written. The next step is to run the migration against the staging database.',
      calls: [{ name: 'bash', args: { command: 'npm run db:generate' }, result: 'ok' }],
    });
    const text = summaryOf(t);
    // Before: listed under Pending tasks and again under Next step (and quoted in the agent's last words).
    expect(text).not.toContain('### Pending tasks');
    expect(text.slice(text.indexOf('### Next step'))).toContain('run the migration against the staging database');
  });
});

describe("the harness's messages", () => {
  const summarizer = new ExtractiveSummarizer();

  it('are listed apart from the people’s words, and carried when the summary is folded into the next', () => {
    const t = new PiTranscript();
    t.user('Port the retry logic in src/net/retry.ts to exponential backoff.');
    t.user('<command-name>/mcp</command-name>\n<command-message>mcp</command-message>');
    t.user('<local-command-stdout>Reconnected to tidewave.</local-command-stdout>');
    t.step({ text: 'Reading it.', calls: [{ name: 'read', args: { path: 'src/net/retry.ts' }, result: 'code' }] });
    t.user('[Request interrupted by user]');
    const all = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const text = summarizer.summarizeSync({ messages: all, maxTokens: 4000, counter });
    const events = [
      '<command-name>/mcp</command-name> <command-message>mcp</command-message>',
      '<local-command-stdout>Reconnected to tidewave.</local-command-stdout>',
      '[Request interrupted by user]',
    ];
    const said = /### User messages \(verbatim\)\n([\s\S]*?)(\n\n###|$)/.exec(text)![1]!;
    expect(said).toContain('Port the retry logic');
    for (const e of events) expect(said).not.toContain(e);
    const listed = /### Harness messages [^\n]*\n([\s\S]*?)(\n\n###|$)/.exec(text)![1]!;
    expect(listed.split('\n')).toEqual(events.map((e) => `- ${e}`));
    // Folded forward (no new messages): the list comes back whole.
    const next = summarizer.summarizeSync({ messages: [], previousSummary: text, maxTokens: 4000, counter });
    expect(parseSummary(next)!.evidence.events).toEqual(events);
  });
});

describe('a long list of commands', () => {
  it('keeps the opening of every command before it keeps the whole text of fewer', () => {
    const t = new PiTranscript();
    t.user('Retry the stuck jobs.');
    const commands = Array.from(
      { length: 60 },
      (_, i) =>
        `curl -s -X POST localhost:8080/v1/jobs/${1000 + i}/retry -H 'Content-Type: application/json' --data '{"force":true,"attempt":${i}}'`,
    );
    for (const command of commands) t.step({ calls: [{ name: 'bash', args: { command }, result: 'ok' }] });
    const all = activeView(parseSession(t.jsonl())).map((v) => v.message);
    // Room for every command's opening (60 characters and `…`), not for every command whole (all 60 whole take 3,630);
    // cut to 80 characters and `… [N more chars]` they held 40 in this room.
    const text = new ExtractiveSummarizer().summarizeSync({ messages: all, maxTokens: 2500, counter });
    expect(counter.text(text)).toBeLessThanOrEqual(2500);
    for (const c of commands) expect(text).toContain(`\`${c.slice(0, 60)}…\``);
    expect(text).not.toContain(commands[0]);
  });
});

describe('a result the tool did not flag', () => {
  it('is said to have printed an error when it opens with one, and listed among the failing', () => {
    const t = new PiTranscript();
    t.user('Load the notes and search for the release date.');
    t.step({
      calls: [
        {
          name: 'read',
          args: { path: 'memory/2026-04-08.md' },
          result: '{\n  "status": "error",\n  "error": "ENOENT: no such file or directory"\n}',
        },
      ],
    });
    t.step({ calls: [{ name: 'read', args: { path: 'docs/errors.md' }, result: 'Error handling: how we report.\n' }] });
    t.step({ calls: [{ name: 'bash', args: { command: 'ls' }, result: 'a\nb' }] });
    t.step({
      calls: [
        {
          name: 'bash',
          args: { command: 'python search.py "release date"' },
          result: "Error during web search: module 'duckduckgo_search' has no attribute 'ddg'",
        },
      ],
    });
    const all = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const text = new ExtractiveSummarizer().summarizeSync({ messages: all, maxTokens: 4000, counter });
    const commands = /### Commands run[^\n]*\n([\s\S]*?)(\n\n###|$)/.exec(text)![1]!.split('\n');
    expect(commands).toEqual(['- `python search.py "release date"` → printed an error', '- `ls` → ok']);
    expect(text).toMatch(
      /read memory\/2026-04-08\.md \(printed an error\):\n\s*"status": "error",\n\s*"error": "ENOENT/,
    );
    // A file whose own text opens with the word is not an error.
    expect(text).not.toMatch(/docs\/errors\.md \(printed an error\)/);
  });
});

describe('an editor tool that names its operation in `command`', () => {
  it('reads with `view` and writes with the others, and none of them is a command run', () => {
    const t = new PiTranscript();
    t.user('Fix the parser bug.');
    const editor = (args: Record<string, string>, result: string) => ({ name: 'str_replace_editor', args, result });
    t.step({ calls: [editor({ command: 'view', path: '/repo/src/parse.py' }, 'def parse(x):\n    return x\n')] });
    t.step({ calls: [editor({ command: 'view', path: '/repo/README.md' }, 'Error: handling is documented here.')] });
    t.step({
      calls: [
        editor(
          { command: 'str_replace', path: '/repo/src/parse.py', old_str: 'return x', new_str: 'return x or 0' },
          'The file /repo/src/parse.py has been edited.',
        ),
      ],
    });
    t.step({ calls: [editor({ command: 'create', path: '/repo/tests/test_parse.py', file_text: 'x' }, 'created')] });
    t.step({ calls: [{ name: 'execute_bash', args: { command: 'pytest -q' }, result: '1 passed' }] });
    const all = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const text = new ExtractiveSummarizer().summarizeSync({ messages: all, maxTokens: 4000, counter });
    const section = (title: string) => new RegExp(`### ${title}[^\\n]*\\n([\\s\\S]*?)(\\n\\n###|$)`).exec(text)?.[1];
    expect(section('Commands run')!.split('\n')).toEqual(['- `pytest -q` → ok']);
    expect(section('Files modified')).toMatch(/\/repo\/src\/parse\.py/);
    expect(section('Files modified')).toMatch(/\/repo\/tests\/test_parse\.py/);
    // A file both read and changed is listed as changed; a file's own text is not an error the tool printed.
    expect(section('Files read')!.split('\n')).toEqual(['- /repo/README.md']);
    expect(text).not.toMatch(/printed an error/);
    expect(text).not.toMatch(/`view`|`str_replace`|`create`/);
  });
});

describe('files named by commands', () => {
  it('a remote branch is no file, and a bare name is not listed beside the full path that ends in it', () => {
    const t = new PiTranscript();
    t.user('Why does the hook fail?');
    t.step({ calls: [{ name: 'bash', args: { command: 'git diff origin/main --stat' }, result: ' 2 files changed' }] });
    t.step({ calls: [{ name: 'bash', args: { command: 'cat /repo/.entire/settings.json' }, result: '{}' }] });
    t.step({ calls: [{ name: 'bash', args: { command: 'grep -n hook settings.json notes.md' }, result: '' }] });
    const all = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const text = new ExtractiveSummarizer().summarizeSync({ messages: all, maxTokens: 4000, counter });
    const section = (title: string) => new RegExp(`### ${title}[^\\n]*\\n([\\s\\S]*?)(\\n\\n###|$)`).exec(text)?.[1];
    expect(section('Files read')!.split('\n')).toEqual(['- /repo/.entire/settings.json', '- notes.md']);
    // The commands themselves still say what they ran on.
    expect(text).toContain('`git diff origin/main --stat` → ok');
  });
});

describe('files an agent edits by writing', () => {
  it("Aider's SEARCH/REPLACE blocks and unified diffs in a reply are files modified; words with a slash are not files", () => {
    const reply = (text: string): Message => ({ role: 'assistant', parts: [{ type: 'text', text }] });
    const messages: Message[] = [
      {
        role: 'user',
        parts: [{ type: 'text', text: 'Add the flag and/or a config key; see docs/usage.md and `.d.ts` files.' }],
      },
      reply(
        'src/cli.py\n```python\n<<<<<<< SEARCH\nimport sys\n=======\nimport sys\nimport argparse\n>>>>>>> REPLACE\n```\n\n' +
          '```\nsrc/config.py\n<<<<<<< SEARCH\n=======\nVERBOSE = False\n>>>>>>> REPLACE\n```',
      ),
      reply('--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-old\n+new'),
      reply('*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** End Patch'),
      reply('One more in src/cli.py:\n\nsrc/cli.py\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```'),
    ];
    const text = new ExtractiveSummarizer().summarizeSync({ messages, maxTokens: 4000, counter });
    const section = (title: string) => new RegExp(`### ${title}[^\\n]*\\n([\\s\\S]*?)(\\n\\n###|$)`).exec(text)?.[1];
    expect(section('Files modified')!.split('\n')).toEqual([
      '- src/cli.py — edit ×2',
      '- src/config.py — edit',
      '- README.md — diff',
      '- src/new.py — add',
    ]);
    expect(section('Files mentioned')!.split('\n')).toEqual(['- docs/usage.md']);
  });
});

describe('error lines', () => {
  it('are listed once: under the fix that quotes them, else among the other error lines', () => {
    const t = new PiTranscript();
    t.user('Make the tests pass.');
    t.step({
      calls: [
        {
          name: 'bash',
          args: { command: 'npm test' },
          result: 'FAIL src/a.test.ts\nError: expected 800 to be 400',
          isError: true,
        },
      ],
    });
    t.step({ calls: [{ name: 'edit', args: { path: 'src/a.ts', oldText: 'a', newText: 'b' }, result: 'ok' }] });
    t.step({ calls: [{ name: 'bash', args: { command: 'npm test' }, result: 'ok' }] });
    t.step({
      calls: [{ name: 'read', args: { path: 'logs/x.log' }, result: 'boot\nError: disk quota exceeded on /var' }],
    });
    const all = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const text = new ExtractiveSummarizer().summarizeSync({ messages: all, maxTokens: 4000, counter });
    const section = (title: string) => new RegExp(`### ${title}[^\\n]*\\n([\\s\\S]*?)(\\n\\n###|$)`).exec(text)?.[1];
    expect(section('Errors and how they were handled')).toContain('Error: expected 800 to be 400');
    expect(section('Other error lines')!.split('\n')).toEqual(['- Error: disk quota exceeded on /var']);
  });
});
