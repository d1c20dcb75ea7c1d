import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { detectFormat, sampleSource } from './detect.js';
import { unsupportedFormats } from './unsupported.js';

// Every format abridge recognized without a reader (Aider, the DeepSeek harness) has one now: the list is empty, and
// what stays to check is that the readers' detectors do not claim each other's files.

describe('unsupported format detectors', () => {
  it('answers 0 for empty input', () => {
    for (const d of unsupportedFormats) expect(d.detect({ head: '' })).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Real transcripts

const HEAD_BYTES = 256 * 1024;
function detectFile(file: string) {
  const text = readFileSync(file, 'utf8');
  return detectFormat(sampleSource(text.slice(0, HEAD_BYTES), text.length <= HEAD_BYTES, () => text));
}

describe.skipIf(!corpusAvailable())(
  corpusAvailable() ? 'corpus detection' : `corpus detection (skipped: no corpus at ${CORPUS_DIR})`,
  () => {
    // The readers' detectors must not claim each other's files.
    it.each([
      ...['pi', 'claude-code', 'codex', 'swe-agent', 'openhands'].flatMap((folder) =>
        corpusFiles(folder).map((f) => [`${folder}/${basename(f)}`, f, folder] as const),
      ),
      ...corpusFiles('other').map(
        (f) =>
          [
            `other/${basename(f)}`,
            f,
            f.endsWith('.aider.chat.history.md') ? 'aider' : /deepseek/i.test(f) ? 'deepseek-harness' : 'copilot-cli',
          ] as const,
      ),
    ])('%s is detected as its own format', (_label, file, format) => {
      const detection = detectFile(file);
      expect(detection.kind === 'supported' ? detection.format.id : detection).toBe(format);
    });
  },
);
