/**
 * The scanners of untrusted text (transcripts, tool outputs, model replies) and, for each, an attack on the regular
 * expressions it used to run: a long run of the class a pattern repeats, with a tail that makes it fail, or many
 * near-prefixes (issue 34, item 2). Shared by test/adversarial-text.test.ts (the ratio, in one run) and
 * bench/adversarial.js (the table). Modules are loaded from a src/ directory given by path, so that the bench can time
 * another tree (`--src`) the same way.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export interface Scanner {
  /** `scanner: attack`, the case's name. */
  name: string;
  /** The input the scanner gets, around `core` (the attack, or ordinary text of the same size). */
  frame(core: string): unknown;
  run(input: unknown): unknown;
  /** The attack's core, about `size` characters. */
  attack(size: number): string;
  /** Characters a fuzzed attack is made of (repeated units of them, then a tail). */
  alphabet: string[];
}

/** Ordinary text of a coding session, `size` characters: prose, code, paths, commands, test output. */
export function ordinaryText(size: number): string {
  const chunk = [
    'I read src/net/retry.ts and the backoff is applied twice: once in fetchWithRetry and again in the caller.',
    'export async function fetchWithRetry(url: string, attempts = 3): Promise<Response> {',
    '  for (let i = 0; i < attempts; i++) {',
    '    const res = await fetch(url, { headers: { Accept: "application/json" } });',
    '    if (res.ok) return res;',
    '    await sleep(2 ** i * 100);',
    '  }',
    '}',
    '$ npm test -- src/net/retry.test.ts 2>&1 | tail -20',
    ' FAIL  src/net/retry.test.ts > retries three times',
    'AssertionError: expected 6 to equal 3 at src/net/retry.test.ts:42:17',
    '- [x] read the retry code',
    '- [ ] remove the second backoff',
    '## Next step',
    'The server listens on localhost:8080 (PORT=8080) and the docs are at https://example.com/docs/retry.',
    'Version 1.4.2 of the client fixed #1234; commit 3f9c2ab changed the default timeout.',
    '',
  ].join('\n');
  return chunk.repeat(Math.ceil(size / chunk.length)).slice(0, size);
}

/** Median of `runs` timings of `f`, in milliseconds. */
export function medianMs(f: () => unknown, runs = 3): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    f();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const pump = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

/** The scanners, from the src/ directory at `src`. */
export async function scanners(src: string): Promise<Scanner[]> {
  const load = (path: string) => import(join(src, path));
  const records = await load('compaction/records.ts');
  const { ExtractiveSummarizer } = await load('compaction/summarizers/extractive.ts');
  const { extractHandOff } = await load('compaction/summarizers/handoff.ts');
  const { aiderFormat } = await load('formats/aider.ts');
  const { TokenCounter } = await load('tokens/counter.ts');
  const { normalizeModelId } = await load('budget/catalog.ts');
  const { mcpServerOf } = await load('budget/attribution.ts');
  const { searchTerms } = await load('tools/tool-search.ts');
  const counter = new TokenCounter();
  const summarizer = new ExtractiveSummarizer();
  const say = (text: string) => [
    { role: 'user', parts: [{ type: 'text', text: 'Please fix the retry bug.' }] },
    { role: 'assistant', parts: [{ type: 'text', text }] },
  ];
  const bash = (command: string) => ({ type: 'tool-call', id: 'c1', name: 'bash', arguments: { command } });
  const searchBlock = '\n<<<<<<< SEARCH\nconst a = 1;\n=======\nconst a = 2;\n>>>>>>> REPLACE\n';
  /** Lines of at most `width` characters (the scanners that skip longer lines see each). */
  const lines = (line: string, size: number) => pump(`${line}\n`, size);

  return [
    {
      name: 'extractive summary (SEARCH/REPLACE path line): a run of spaces inside the line before the fence',
      frame: (core) => say(`Here is the change:\n\na${core}b${searchBlock}`),
      run: (messages) => summarizer.summarizeSync({ messages, maxTokens: 2000, counter }),
      attack: (size) => ' '.repeat(size),
      alphabet: [' ', '\t', '`', '*', ':', '#', 'a'],
    },
    {
      name: 'searchReplaceChanges (path line): a run of colons and backticks inside the line',
      frame: (core) => `src/a${core}b.ts${searchBlock}`,
      run: (text) => records.searchReplaceChanges(text),
      attack: (size) => pump(':`', size),
      alphabet: [' ', '`', '*', ':', '#', 'a', '.'],
    },
    {
      name: 'aider run header: a run of spaces after the date, then a character',
      frame: (core) => `# aider chat started at 2025-07-15 11:38:37${core}x\n\n#### hello  \n`,
      run: (text) => aiderFormat.readText!(text as string, 'attack.md'),
      attack: (size) => ' '.repeat(size),
      alphabet: [' ', '\t', 'a', '0', '\r'],
    },
    {
      name: 'aider confirmation: (Y)es/(N)o then a run of [ never closed',
      frame: (core) => `# aider chat started at 2025-07-15 11:38:37\n\n#### (Y)es/(N)o ${core}  \n`,
      run: (text) => aiderFormat.readText!(text as string, 'attack.md'),
      attack: (size) => '['.repeat(size),
      alphabet: ['[', ']', ':', ' ', 'y', '(Y)es/(N)o'],
    },
    {
      name: 'failureLines (error-shaped lines): a location, a run of spaces, no error word',
      frame: (core) => core,
      run: (text) => records.failureLines(text as string),
      attack: (size) => lines(`src/a.ts:12:5${' '.repeat(1980)}x`, size),
      alphabet: [' ', ':', '1', '-', 'a', '('],
    },
    {
      name: 'pathsIn (trailing punctuation): a path token with a long run of dots',
      frame: (core) => `see src/a${core}x for details`,
      run: (text) => records.pathsIn(text as string),
      attack: (size) => '.'.repeat(size),
      alphabet: ['.', ',', ':', ';', 'a', '/'],
    },
    {
      name: 'pathsIn (path tokens): a run of `a+` with no `/` (every `+` may start a token)',
      frame: (core) => `see ${core} for details`,
      run: (text) => records.pathsIn(text as string),
      attack: (size) => 'a+'.repeat(Math.floor(size / 2)),
      alphabet: ['a', '+', '.', '/', '~', ':'],
    },
    {
      name: 'pathsIn (path tokens): a run of `a+` ending in `/` (the directory form fails at its end)',
      frame: (core) => `see ${core} for details`,
      run: (text) => records.pathsIn(text as string),
      attack: (size) => `${'a+'.repeat(Math.floor(size / 2) - 1)}a/`,
      alphabet: ['a', '+', '/', '.', '-'],
    },
    {
      name: 'pathsIn (path tokens): `+.` after a `:` (every start behind a prefix)',
      frame: (core) => `see x:${core} for details`,
      run: (text) => records.pathsIn(text as string),
      attack: (size) => '+.'.repeat(Math.floor(size / 2)),
      alphabet: ['+', '.', '~', '/', ':', 'a'],
    },
    {
      name: 'definitions (declarations after modifiers): repeated modifiers without a name',
      frame: (core) => core,
      run: (text) => records.definitions(text as string, 'src/Main.java'),
      attack: (size) => lines(`public${' '.repeat(290)}x`, size),
      alphabet: ['public ', 'static ', ' ', 'x', '<', '(', '\t'],
    },
    {
      name: 'heredoc (callInfo of a shell call): cat, a run of spaces, no <<',
      frame: (core) => bash(`cat${core}x`),
      run: (call) => records.callInfo(call),
      attack: (size) => ' '.repeat(size),
      alphabet: [' ', '>', '<', 'x', '\n', ';'],
    },
    {
      name: 'heredoc (callInfo of a shell call): many cat <<EOF headers that never close',
      frame: (core) => bash(core),
      run: (call) => records.callInfo(call),
      attack: (size) => pump('cat <<EOF\n', size),
      alphabet: ['cat <<EOF', '\n', ' ', ';', 'EOF', '>'],
    },
    {
      name: 'extractHandOff (checklist items, headings): a run of blank lines',
      frame: (core) => say(`Plan:\n${core}x`),
      run: (messages) => extractHandOff(messages),
      attack: (size) => '\n'.repeat(size),
      alphabet: ['\n', ' ', '-', '#', '['],
    },
    {
      name: 'extractHandOff (host:port facts): lines of `-a-a…` with a dot, then a port after a space',
      frame: (core) => say(`Plan:\n${core}x`),
      run: (messages) => extractHandOff(messages),
      attack: (size) => lines(`${'-a'.repeat(990)}.b c:80`, size),
      alphabet: ['-', 'a', '.', ':', '8', ' '],
    },
    {
      name: 'extractHandOff (re-run key of a command): a run of spaces in the command',
      frame: (core) => [
        { role: 'user', parts: [{ type: 'text', text: 'Run the tests.' }] },
        { role: 'assistant', parts: [bash(`npm${core}x`)] },
        {
          role: 'tool',
          parts: [
            {
              type: 'tool-result',
              callId: 'c1',
              toolName: 'bash',
              isError: false,
              content: [{ type: 'text', text: 'ok' }],
            },
          ],
        },
      ],
      run: (messages) => extractHandOff(messages),
      attack: (size) => ' '.repeat(size),
      alphabet: [' ', '2', '>', '&', '1', '/'],
    },
    {
      name: 'extractHandOff (facts: ports): port then a run of spaces, no number',
      frame: (core) => say(core),
      run: (messages) => extractHandOff(messages),
      attack: (size) => lines(`port${' '.repeat(1990)}x`, size),
      alphabet: [' ', ':', '=', 'port', '8'],
    },
    {
      name: 'normalizeModelId (the [1m] suffix): a run of [ never closed',
      frame: (core) => `claude-sonnet-4-5${core}x`,
      run: (id) => normalizeModelId(id as string),
      attack: (size) => '['.repeat(size),
      alphabet: ['[', ']', 'a', '-'],
    },
    {
      name: 'mcpServerOf (mcp__server__tool): a run of __ then a line break',
      frame: (core) => `mcp__${core}\nx`,
      run: (name) => mcpServerOf(name as string),
      attack: (size) => '_'.repeat(size),
      alphabet: ['_', 'a', '\n'],
    },
    {
      name: 'searchTerms (tool_search): a run of capitals then a digit',
      frame: (core) => `${core}1`,
      run: (text) => searchTerms(text as string),
      attack: (size) => 'A'.repeat(size),
      alphabet: ['A', 'b', '1'],
    },
  ];
}
