import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { compact } from '../../src/compaction/compact.js';
import { readSession } from '../../src/formats/read.js';
import { writeSession } from '../../src/formats/write.js';
import type { Session } from '../../src/model/types.js';
import { replaySession } from '../../src/analysis/replay.js';
import { corpusFile } from './corpus.js';

/** The viewer's corpus cases: one transcript per agent, the pi and Codex ones with compactions of their own. */
export const VIEW_CASES = {
  pi: corpusFile('pi', 'badlogic__pi-mono__compact.jsonl'),
  claudeCode: corpusFile('claude-code', 'marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl'),
  codex: corpusFile('codex', 'EntityProcess__agentv__00-34f597b72d-1-full.jsonl'),
};

/**
 * A real pi session compacted by abridge (to 40% of its last prompt), written back as a pi transcript: the viewer must
 * show abridge's marker with its strategies, archived span and edits.
 */
export function abridgeCompactedTranscript(): Promise<{ file: string; session: Session }> {
  return compactedByAbridge(corpusFile('pi', 'badlogic__pi-mono__large-session.jsonl'));
}

/**
 * A transcript compacted by abridge (to 40% of its last billed prompt) and written back in its own format, e.g. a
 * fixture transcript (test/support/fixture-transcripts.ts) where the corpus is absent.
 */
export async function compactedByAbridge(source: string): Promise<{ file: string; session: Session }> {
  const session = await readSession(source);
  const last = replaySession(session).at(-1)!.reported;
  const result = await compact(session, {
    target: Math.round(last * 0.4),
    now: () => new Date('2026-01-01T00:00:00Z'),
  });
  if (!result.marker) throw new Error(`${source}: the fixture session was not compacted`);
  const file = join(mkdtempSync(join(tmpdir(), 'abridge-view-')), `abridge-compacted-${basename(source)}`);
  writeFileSync(file, writeSession(session));
  return { file, session };
}
