/**
 * Transcripts made in the repository, for the tests whose main subject is real transcripts (../shared/corpus, which a
 * clone does not have): the same checks run on these everywhere, and on the corpus too where it is present.
 *
 * - `pi/refactor-session.jsonl`: examples/refactor-session.jsonl (a long, realistic pi v3 session close to a full
 *   window, with usage on every response; made by examples/generate.js);
 * - `claude-code/refactor-session.jsonl`: the same session written by abridge's Claude Code writer;
 * - `pi/generated.jsonl`: a pi session from test/support/random-session.ts (thinking, parallel calls, errors, a
 *   `!` command, an injected message, large results);
 * - `pi/generated-compacted.jsonl`: that session compacted by abridge (to half its tokens) and written back, so it
 *   carries abridge's compaction marker.
 *
 * Written once per test process into a temporary folder.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compact } from '../../src/compaction/compact.js';
import { readSession } from '../../src/formats/read.js';
import { writeSession } from '../../src/formats/write.js';
import { activeMessages } from '../../src/model/view.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { PiTranscript, randomOutput } from './random-session.js';

export const EXAMPLE_PI = fileURLToPath(new URL('../../examples/refactor-session.jsonl', import.meta.url));

export interface FixtureTranscript {
  /** The corpus folder it stands for: `pi` or `claude-code`. */
  folder: 'pi' | 'claude-code';
  /** Its file name, for test names. */
  name: string;
  file: string;
}

/** A pi session of ~30 turns with every kind of record the pi reader handles. */
export function generatedPiSession(): string {
  const t = new PiTranscript('fixture-generated');
  t.user('Fix the failing date parser in src/date.ts and make the tests pass.');
  for (let i = 0; i < 12; i++) {
    t.step({
      thinking: i % 3 === 0 ? `Turn ${i}: look at the parser again.` : undefined,
      text: `Reading what turn ${i} needs.`,
      calls: [
        { name: 'read', args: { path: `src/module-${i}.ts` }, result: randomOutput(100 + i, 3000 + 200 * i) },
        ...(i % 4 === 1
          ? [
              {
                name: 'bash',
                args: { command: 'npm test' },
                result: `Error: ${randomOutput(200 + i, 800)}`,
                isError: true,
              },
            ]
          : []),
      ],
      usage: { input: 2000 + 1500 * i, output: 120, cacheRead: 0, cacheWrite: 0 },
    });
    if (i === 5) t.bash('git status --short', ' M src/date.ts\n');
    if (i === 8) t.synthetic('Reminder: keep the public API unchanged.');
  }
  t.step({
    text: 'Edited src/date.ts.',
    calls: [{ name: 'edit', args: { path: 'src/date.ts', oldText: 'a', newText: 'b' }, result: 'Edited src/date.ts' }],
    usage: { input: 21_000, output: 80, cacheRead: 0, cacheWrite: 0 },
  });
  t.user('Thanks. Now run the whole suite once more.');
  t.step({
    calls: [{ name: 'bash', args: { command: 'npm test' }, result: randomOutput(999, 1500) }],
    usage: { input: 23_000, output: 40, cacheRead: 0, cacheWrite: 0 },
  });
  t.step({ text: 'All tests pass.', usage: { input: 23_500, output: 10, cacheRead: 0, cacheWrite: 0 } });
  return t.jsonl();
}

let made: Promise<FixtureTranscript[]> | undefined;

/** The fixture transcripts (see the top of this file), written on first use. */
export function fixtureTranscripts(): Promise<FixtureTranscript[]> {
  made ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-fixtures-'));
    mkdirSync(join(dir, 'pi'));
    mkdirSync(join(dir, 'claude-code'));
    const out: FixtureTranscript[] = [{ folder: 'pi', name: 'refactor-session.jsonl', file: EXAMPLE_PI }];

    const claude = join(dir, 'claude-code', 'refactor-session.jsonl');
    writeFileSync(claude, writeSession(await readSession(EXAMPLE_PI), 'claude-code'));
    out.push({ folder: 'claude-code', name: 'refactor-session.jsonl', file: claude });

    const generated = join(dir, 'pi', 'generated.jsonl');
    writeFileSync(generated, generatedPiSession());
    out.push({ folder: 'pi', name: 'generated.jsonl', file: generated });

    const session = await readSession(generated);
    const counter = new TokenCounter();
    const visible = activeMessages(session).reduce((n, m) => n + counter.message(m), 0);
    await compact(session, { target: Math.floor(visible / 2), force: true });
    const compacted = join(dir, 'pi', 'generated-compacted.jsonl');
    writeFileSync(compacted, writeSession(session));
    out.push({ folder: 'pi', name: 'generated-compacted.jsonl', file: compacted });
    return out;
  })();
  return made;
}
