import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { activeBranch } from '../model/branch.js';
import { corpusAvailable, corpusFile, corpusFiles } from '../../test/support/corpus.js';
import { readSession } from './read.js';
import { writeSession } from './write.js';

const run = corpusAvailable() ? describe : describe.skip;
if (!corpusAvailable()) console.warn('corpus tests skipped: ../shared/corpus not found (set ABRIDGE_CORPUS)');

const SUPPORTED: Record<string, string> = {
  pi: 'pi',
  'claude-code': 'claude-code',
  codex: 'codex',
  'swe-agent': 'swe-agent',
  openhands: 'openhands',
};

/** `other/` mixes agents: GitHub Copilot CLI events, Aider histories and DeepSeek harness logs are read. */
function otherFormat(file: string): { reads: string } | { refused: RegExp } {
  if (file.endsWith('.aider.chat.history.md')) return { reads: 'aider' };
  if (/deepseek/i.test(file)) return { reads: 'deepseek-harness' };
  return { reads: 'copilot-cli' };
}

async function readsAs(file: string, format: string): Promise<void> {
  const s = await readSession(file);
  expect(s.format).toBe(format);
  expect(s.entries.length).toBeGreaterThan(0);
  expect(s.entries.filter((e) => e.message).length).toBeGreaterThan(0);
  // Entry indexes are positions.
  s.entries.forEach((e, i) => expect(e.index).toBe(i));
}

run('every corpus transcript', () => {
  for (const folder of Object.keys(SUPPORTED)) {
    for (const file of corpusFiles(folder)) {
      it(`${folder}/${basename(file)} reads as ${SUPPORTED[folder]}`, () => readsAs(file, SUPPORTED[folder]!));
    }
  }

  for (const file of corpusFiles('other')) {
    const expected = otherFormat(file);
    if ('reads' in expected) {
      it(`other/${basename(file)} reads as ${expected.reads}`, () => readsAs(file, expected.reads));
      continue;
    }
    it(`other/${basename(file)} is named and refused`, async () => {
      const err = await readSession(file).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AbridgeError);
      expect((err as AbridgeError).code).toBe('UNSUPPORTED_FORMAT');
      expect((err as AbridgeError).message).toMatch(expected.refused);
      expect((err as AbridgeError).message).toContain(basename(file));
    });
  }
});

run('byte-identical round trips', () => {
  for (const folder of ['pi', 'claude-code']) {
    for (const file of corpusFiles(folder)) {
      it(`${folder}/${basename(file)}`, async () => {
        const original = readFileSync(file, 'utf8');
        const s = await readSession(file);
        const written = writeSession(s);
        expect(written.length).toBe(original.length);
        expect(written === original).toBe(true);
      });
    }
  }
});

run('known quirks of real transcripts', () => {
  it('pi-mono compact.jsonl: two objects on line 1013, both recovered', async () => {
    const s = await readSession(corpusFile('pi', 'badlogic__pi-mono__compact.jsonl'));
    expect(s.problems).toEqual([
      {
        line: 1013,
        kind: 'multiple-objects',
        message:
          'line 1013 holds 2 JSON values on one line; its 2 objects were read as separate records; writing the session back reproduces the line byte for byte',
      },
    ]);
    const onLine = s.entries.filter((e) => e.line === 1013);
    expect(onLine).toHaveLength(2);
    expect(onLine.map((e) => e.sameLineAsPrevious ?? false)).toEqual([false, true]);
    expect(onLine[0]!.message?.role).toBe('assistant');
    expect(onLine[1]!.kind).toBe('compaction');
  });

  it('pi-mono session.jsonl: two objects on line 440, both recovered', async () => {
    const s = await readSession(corpusFile('pi', 'badlogic__pi-mono__session.jsonl'));
    expect(s.problems).toEqual([
      {
        line: 440,
        kind: 'multiple-objects',
        message:
          'line 440 holds 2 JSON values on one line; its 2 objects were read as separate records; writing the session back reproduces the line byte for byte',
      },
    ]);
    expect(s.entries.filter((e) => e.line === 440)).toHaveLength(2);
  });

  it('the older pi header (no version) and its index-based compactions', async () => {
    const s = await readSession(corpusFile('pi', 'badlogic__pi-mono__before-compaction.jsonl'));
    expect(s.info.version).toBeUndefined();
    const markers = s.entries.filter((e) => e.compaction).map((e) => e.compaction!);
    expect(markers.map((m) => [m.number, m.tokensBefore, m.firstKeptEntry, m.archived])).toEqual([
      [1, 175004, 293, { fromEntry: 1, toEntry: 292 }],
      [2, 185014, 551, { fromEntry: 293, toEntry: 550 }],
    ]);
    expect(s.entries[293]!.message?.role).toBe('user');
  });

  it('Claude Code compact_boundary + isCompactSummary become one marker with its summary', async () => {
    const s = await readSession(
      corpusFile('claude-code', 'marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl'),
    );
    const boundary = s.entries.filter((e) => e.kind === 'compaction');
    expect(boundary).toHaveLength(1);
    const marker = boundary[0]!.compaction!;
    expect(marker.tokensBefore).toBe(167094);
    expect(marker.trigger).toBe('auto');
    expect(marker.summary.length).toBeGreaterThan(1000);
    const summaryEntry = s.entries.find((e) => e.message?.parts.some((p) => p.type === 'compaction'));
    expect(summaryEntry!.index).toBeGreaterThan(boundary[0]!.index);
  });

  it('Claude Code active branch keeps every main-chain message, parallel tool results included', async () => {
    for (const file of corpusFiles('claude-code')) {
      const s = await readSession(file);
      const branch = activeBranch(s);
      const main = s.entries.filter((e) => e.message && !e.sidechain);
      const sidechainFile = main.length === 0;
      const onBranch = branch.filter((e) => e.message);
      if (!sidechainFile) expect(onBranch.length, basename(file)).toBe(main.length);
      // Every tool result on the branch answers a call earlier on the branch.
      const calls = new Set<string>();
      for (const e of onBranch) {
        for (const p of e.message!.parts) {
          if (p.type === 'tool-call') calls.add(p.id);
          if (p.type === 'tool-result') expect(calls.has(p.callId), `${basename(file)} entry ${e.index}`).toBe(true);
        }
      }
    }
  });

  it('Claude Code usage is read from message.usage, one response split over records shares its id', async () => {
    const s = await readSession(corpusFile('claude-code', 'marot__spotter__short.jsonl'));
    const withUsage = s.entries.filter((e) => e.message?.usage);
    expect(withUsage.length).toBe(5);
    const raw = readFileSync(corpusFile('claude-code', 'marot__spotter__short.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; message?: { id?: string; usage?: Record<string, number> } })
      .filter((r) => r.type === 'assistant');
    expect(withUsage.map((e) => e.message!.usage!.cacheRead)).toEqual(
      raw.map((r) => r.message!.usage!.cache_read_input_tokens),
    );
    expect(new Set(withUsage.map((e) => e.message!.responseId)).size).toBe(new Set(raw.map((r) => r.message!.id)).size);
  });
});
