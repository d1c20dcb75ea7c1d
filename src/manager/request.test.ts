import { describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import { readSession } from '../formats/read.js';
import { toRequest, type RequestProvider } from '../formats/wire.js';
import type { Message } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { PromptBuilder } from '../prompt/builder.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { RequestEncoder } from './request.js';

const PROVIDERS: RequestProvider[] = ['anthropic', 'openai-chat', 'openai-responses'];
const strip = (body: unknown) => JSON.parse(JSON.stringify(body, (k, v) => (k === 'cache_control' ? undefined : v)));

/** What the encoder sends must be exactly the whole-view encoding, whatever it reused from earlier turns. */
function expectSameAsWhole(encoder: RequestEncoder, provider: RequestProvider, view: readonly Message[]): void {
  const prompt = new PromptBuilder([{ name: 'base', content: 'You are a coding agent.', cacheable: true }]);
  const body = strip(encoder.build(provider, { model: 'm', maxOutputTokens: 1000, prompt, tools: [], messages: view }));
  const whole = strip(
    toRequest(view, provider, { model: 'm', maxOutputTokens: 1000, system: [{ text: 'You are a coding agent.' }] }),
  );
  expect(body).toEqual(whole);
}

/** Grown message by message, then compacted: what the encoder sends equals encoding the whole view. */
async function expectEncoderAgrees(file: string): Promise<void> {
  const session = await readSession(file);
  const view = activeMessages(session);
  for (const provider of PROVIDERS) {
    const encoder = new RequestEncoder();
    const step = Math.max(1, Math.floor(view.length / 25));
    for (let n = 1; n <= view.length; n += step) expectSameAsWhole(encoder, provider, view.slice(0, n));
    expectSameAsWhole(encoder, provider, view);
  }
  await compact(session, { target: 20_000, force: true });
  for (const provider of PROVIDERS) {
    const encoder = new RequestEncoder();
    expectSameAsWhole(encoder, provider, view);
    expectSameAsWhole(encoder, provider, activeMessages(session));
  }
}

describe('RequestEncoder on the fixture transcripts', async () => {
  const fixtures = await fixtureTranscripts();
  it.each(fixtures.map((f) => [`${f.folder}/${f.name}`, f.file]))(
    'grown message by message, then compacted: equal to encoding the whole view (%s)',
    async (_name, file) => expectEncoderAgrees(file),
  );
});

describe.skipIf(!corpusAvailable())('RequestEncoder on real transcripts', () => {
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
