import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The shared corpus of real transcripts: `../shared/corpus` beside the checkout (or $ABRIDGE_CORPUS). */
export const CORPUS_DIR = process.env.ABRIDGE_CORPUS ?? resolve(here, '../../../shared/corpus');

export function corpusAvailable(): boolean {
  return existsSync(CORPUS_DIR);
}

/** Files of one corpus folder (`pi`, `claude-code`, `codex`, `swe-agent`, `openhands`, `other`), as absolute paths. */
export function corpusFiles(folder: string): string[] {
  const dir = join(CORPUS_DIR, folder);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.'))
    .sort()
    .map((f) => join(dir, f));
}

export function corpusFile(folder: string, name: string): string {
  return join(CORPUS_DIR, folder, name);
}

/**
 * Every corpus transcript abridge has a reader for, with its folder: all but the formats it names and refuses (Aider's
 * markdown history in `other/`).
 */
export function readableCorpusFiles(): { folder: string; file: string }[] {
  const refused = (file: string) => file.endsWith('.md');
  return ['pi', 'claude-code', 'codex', 'swe-agent', 'openhands', 'other'].flatMap((folder) =>
    corpusFiles(folder)
      .filter((file) => !refused(file))
      .map((file) => ({ folder, file })),
  );
}
