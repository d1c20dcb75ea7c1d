import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import type { DetectInput } from './format.js';
import { detectFormat, sampleSource } from './detect.js';
import { piFormat } from './pi.js';
import { readSession } from './read.js';
import { unsupportedFormats } from './unsupported.js';

const AIDER = 'Aider chat history';
const DEEPSEEK = 'DeepSeek harness trace';

function detector(name: string) {
  const d = unsupportedFormats.find((u) => u.name === name);
  if (!d) throw new Error(`no detector named ${name}`);
  return d;
}

function sample(text: string): DetectInput {
  return sampleSource(text, true, () => text);
}
function jsonl(records: unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

// Synthetic look-alikes of each format (a few records, invented values).
const inputs: Record<string, DetectInput> = {
  [AIDER]: sample(
    '\n# aider chat started at 2030-01-01 10:00:00\n\n> aider --model some-model\n\n#### fix the tests\n\nSure.\n',
  ),
  [DEEPSEEK]: sample(
    jsonl([
      { type: 'session', version: 0, id: 'd1', createdAt: 1900000000000, cwd: '/w', delegationDepth: 0 },
      { type: 'turn/start', seq: 0, time: 1900000000001, data: { turn: 1 } },
      { type: 'user/message', seq: 1, time: 1900000000002, data: { text: 'hi' } },
      { type: 'assistant/chunk', seq: 2, time: 1900000000003, data: { text: 'he' } },
    ]),
  ),
};

const piLike = sample(
  jsonl([
    { type: 'session', version: 3, id: 'p1', timestamp: '2030-01-01T00:00:00.000Z', cwd: '/w' },
    {
      type: 'message',
      id: 'a',
      parentId: null,
      timestamp: '2030-01-01T00:00:01.000Z',
      message: { role: 'user', content: 'hi', timestamp: 1 },
    },
  ]),
);

describe('unsupported format detectors', () => {
  it.each(Object.keys(inputs))('%s: recognizes its own kind and no other', (name) => {
    for (const [other, input] of Object.entries(inputs)) {
      const c = detector(name).detect(input);
      if (other === name) expect(c).toBeGreaterThanOrEqual(0.9);
      else expect(c, `${name} on ${other}`).toBe(0);
    }
    expect(detector(name).detect(piLike)).toBe(0);
  });

  it.each(Object.keys(inputs))('%s: detectFormat reports it as unsupported', (name) => {
    expect(detectFormat(inputs[name]!)).toEqual({ kind: 'unsupported', name });
  });

  it('keeps the DeepSeek trace and pi sessions apart although both open with {type: "session"}', () => {
    expect(piFormat.detect(inputs[DEEPSEEK]!)).toBe(0);
    expect(detector(DEEPSEEK).detect(piLike)).toBe(0);
    const detection = detectFormat(piLike);
    expect(detection.kind === 'supported' && detection.format.id).toBe('pi');
    // A pi header with extra fields (an ISO timestamp, pi-style entries after it) stays pi.
    const piWithExtras = sample(
      jsonl([
        {
          type: 'session',
          version: 3,
          id: 'p2',
          timestamp: '2030-01-01T00:00:00.000Z',
          cwd: '/w',
          createdAt: 1900000000000,
          delegationDepth: 0,
        },
        {
          type: 'message',
          id: 'a',
          parentId: null,
          timestamp: '2030-01-01T00:00:01.000Z',
          message: { role: 'user', content: 'hi', timestamp: 1 },
        },
      ]),
    );
    expect(detector(DEEPSEEK).detect(piWithExtras)).toBe(0);
    const again = detectFormat(piWithExtras);
    expect(again.kind === 'supported' && again.format.id).toBe('pi');
    // A DeepSeek-like header followed by events of another shape is not claimed.
    const headerOnly = sample(
      jsonl([
        { type: 'session', version: 0, id: 'd2', createdAt: 1900000000000, cwd: '/w', delegationDepth: 0 },
        { type: 'message', id: 'a', parentId: null, message: { role: 'user', content: 'hi' } },
        { type: 'message', id: 'b', parentId: 'a', message: { role: 'assistant', content: [] } },
      ]),
    );
    expect(detector(DEEPSEEK).detect(headerOnly)).toBe(0);
  });

  it('does not take markdown that only mentions aider', () => {
    expect(detector(AIDER).detect({ head: '# Notes\n\nWe tried aider chat started at some point.\n' })).toBe(0);
  });

  it('answers 0 for empty input', () => {
    for (const d of unsupportedFormats) expect(d.detect({ head: '' })).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Real transcripts

/** The unsupported format a corpus file is, from its name (independent of the detectors); undefined when read. */
function expectedName(file: string): string | undefined {
  if (file.endsWith('.aider.chat.history.md')) return AIDER;
  if (file.includes('deepseek')) return DEEPSEEK;
  return undefined;
}

const refused = corpusFiles('other').flatMap((f) => {
  const name = expectedName(basename(f));
  return name ? [[`other/${basename(f)} (${name})`, f, name] as const] : [];
});

const HEAD_BYTES = 256 * 1024;
function detectFile(file: string) {
  const text = readFileSync(file, 'utf8');
  return detectFormat(sampleSource(text.slice(0, HEAD_BYTES), text.length <= HEAD_BYTES, () => text));
}

describe.skipIf(!corpusAvailable())(
  corpusAvailable() ? 'unsupported corpus' : `unsupported corpus (skipped: no corpus at ${CORPUS_DIR})`,
  () => {
    it('has files to refuse', () => {
      expect(refused.length).toBeGreaterThan(0);
      expect(new Set(refused.map(([, , name]) => name))).toEqual(new Set([AIDER, DEEPSEEK]));
    });

    it.each(refused)('%s is refused', async (_label, file, name) => {
      const error = await readSession(file).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AbridgeError);
      expect((error as AbridgeError).code).toBe('UNSUPPORTED_FORMAT');
      expect((error as AbridgeError).message).toContain(
        `recognized as ${name}, a format abridge has no reader for yet`,
      );
      expect((error as AbridgeError).message).toContain(file);
    });

    // The readers' detectors and these must not claim each other's files.
    it.each([
      ...['pi', 'claude-code', 'codex', 'swe-agent', 'openhands'].flatMap((folder) =>
        corpusFiles(folder).map((f) => [`${folder}/${basename(f)}`, f, folder] as const),
      ),
      ...corpusFiles('other')
        .filter((f) => expectedName(basename(f)) === undefined)
        .map((f) => [`other/${basename(f)}`, f, 'copilot-cli'] as const),
    ])('%s is detected as its own format', (_label, file, format) => {
      const detection = detectFile(file);
      expect(detection.kind === 'supported' ? detection.format.id : detection).toBe(format);
    });
  },
);
