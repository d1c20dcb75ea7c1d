import { describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import type { Message } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { IncrementalEncoder } from './incremental.js';
import { readSession } from './read.js';
import { toRequest, type RequestOptions, type RequestProvider } from './wire.js';

const PROVIDERS: RequestProvider[] = ['anthropic', 'openai-chat', 'openai-responses'];
const OPTIONS: RequestOptions = {
  model: 'm',
  maxOutputTokens: 1000,
  system: [{ text: 'You are a coding agent.', cache: true }],
  cacheConversation: true,
};

/** What the encoder sends must be exactly the whole-view encoding (breakpoints included), whatever it reused. */
function expectSameAsWhole(encoder: IncrementalEncoder, provider: RequestProvider, view: readonly Message[]): void {
  expect(encoder.build(provider, view, OPTIONS)).toEqual(toRequest(view, provider, OPTIONS));
}

/**
 * Grown message by message — as new arrays (the path that re-reads the view, reusing encoded groups) and as one array
 * that grows (the append-only path) — then compacted: what the encoder sends equals encoding the whole view.
 */
async function expectEncoderAgrees(file: string): Promise<void> {
  const session = await readSession(file);
  const view = activeMessages(session);
  for (const provider of PROVIDERS) {
    const encoder = new IncrementalEncoder();
    const step = Math.max(1, Math.floor(view.length / 25));
    for (let n = 1; n <= view.length; n += step) expectSameAsWhole(encoder, provider, view.slice(0, n));
    expectSameAsWhole(encoder, provider, view);
    const growing: Message[] = [];
    const appending = new IncrementalEncoder();
    for (const m of view) {
      growing.push(m);
      if (growing.length % step === 0 || growing.length === view.length)
        expectSameAsWhole(appending, provider, growing);
    }
  }
  await compact(session, { target: 20_000, force: true });
  for (const provider of PROVIDERS) {
    const encoder = new IncrementalEncoder();
    expectSameAsWhole(encoder, provider, view);
    expectSameAsWhole(encoder, provider, activeMessages(session));
  }
}

describe('IncrementalEncoder on the fixture transcripts', async () => {
  const fixtures = await fixtureTranscripts();
  it.each(fixtures.map((f) => [`${f.folder}/${f.name}`, f.file]))(
    'grown message by message, then compacted: equal to encoding the whole view (%s)',
    async (_name, file) => expectEncoderAgrees(file),
  );
});

describe.skipIf(!corpusAvailable())('IncrementalEncoder on real transcripts', () => {
  const files = [
    ...corpusFiles('pi').slice(0, 6),
    ...corpusFiles('claude-code').slice(0, 4),
    ...corpusFiles('codex').slice(0, 2),
  ];
  it.each(files)(
    'grown message by message, then compacted: equal to encoding the whole view (%s)',
    expectEncoderAgrees,
  );
});
