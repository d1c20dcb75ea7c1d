import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readSession } from '../formats/read.js';
import { createRedactor } from '../redact/redact.js';
import { corpusAvailable, readableCorpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { PiTranscript, randomOutput, TIMESTAMP } from '../../test/support/random-session.js';
import { fakeSecrets } from '../../test/support/secrets.js';
import { buildViewData, type ViewDataOptions } from './view-data.js';
import { renderViewPageWithPolicy, writeViewPage } from './view-page.js';
import { buildViewDataStreamed } from './view-stream.js';

const dir = mkdtempSync(join(tmpdir(), 'abridge-view-stream-'));

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** The page as `abridge view` writes a file now (streamed), and as the in-memory API renders it. */
async function bothPages(file: string, options: ViewDataOptions = {}) {
  const streamed = await buildViewDataStreamed(file, { ...options, source: file });
  const pieces: string[] = [];
  await writeViewPage(streamed.data, streamed.texts, async (s) => {
    pieces.push(s);
  });
  const session = await readSession(file);
  const { data, texts } = buildViewData(session, { ...options, source: file });
  return {
    streamed: pieces.join(''),
    passes: streamed.passes,
    inMemory: renderViewPageWithPolicy(data, texts).html,
    data,
    texts,
  };
}

/** The two pages are the same bytes; else where they first differ (a page is too long for a diff). */
function expectSame(streamed: string, inMemory: string, what = ''): void {
  if (streamed === inMemory) return;
  let i = 0;
  while (i < streamed.length && streamed[i] === inMemory[i]) i++;
  expect.fail(
    `${what}: the streamed page differs at ${i} of ${inMemory.length}: …${streamed.slice(i - 100, i + 200)}… instead of …${inMemory.slice(i - 100, i + 200)}…`,
  );
}

/** The texts a page carries: its last element's base64, gunzipped. */
function textsOf(html: string): string[] {
  const b64 = /<script type="application\/octet-stream" id="texts">([^<]*)<\/script>/.exec(html)![1]!;
  return JSON.parse(gunzipSync(Buffer.from(b64, 'base64')).toString('utf8'));
}

function dataOf(html: string) {
  return JSON.parse(/<script type="application\/json" id="data">(.*?)<\/script>/s.exec(html)![1]!);
}

/** A pi session of `steps` tool steps, each reporting usage. */
function piSession(steps: number, result: (i: number) => string = (i) => randomOutput(i, 400)): PiTranscript {
  const t = new PiTranscript('stream-test');
  t.user('Make the parser handle CRLF input.');
  for (let i = 0; i < steps; i++)
    t.step({
      thinking: i % 2 ? `Step ${i}: read on.` : undefined,
      text: `Step ${i}.`,
      calls: [{ name: i % 3 ? 'read' : 'bash', args: { path: `src/m${i}.ts` }, result: result(i) }],
      usage: { input: 1500 + 900 * i, output: 80, cacheRead: 0, cacheWrite: 0 },
    });
  return t;
}

/** Records appended under `parentId` (pi's tree: a branch from an earlier entry). */
function branchFrom(t: PiTranscript, parentId: string, prefix: string, usage: number): void {
  t.records.push(
    {
      type: 'message',
      id: `${prefix}0`,
      parentId,
      timestamp: TIMESTAMP,
      message: { role: 'user', content: `Try another way (${prefix}).`, timestamp: 900 },
    },
    {
      type: 'message',
      id: `${prefix}1`,
      parentId: `${prefix}0`,
      timestamp: TIMESTAMP,
      message: {
        role: 'assistant',
        content: [{ type: 'text', text: `Another way, ${prefix}.` }],
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        stopReason: 'stop',
        usage: { input: usage, output: 40, cacheRead: 0, cacheWrite: 0, totalTokens: usage + 40 },
        timestamp: 901,
      },
    },
  );
}

describe('the streamed page (view-stream.ts) is the in-memory page', () => {
  it('a linear session: one pass, the same bytes', async () => {
    const r = await bothPages(write('linear.jsonl', piSession(8).jsonl()));
    expect(r.passes).toBe(1);
    expectSame(r.streamed, r.inMemory);
    expect(r.data.records.length).toBeGreaterThan(10);
  });

  it('a tree whose active branch leaves a tail behind: two passes, the branch only', async () => {
    const t = piSession(6);
    // The leaf is on a branch from the third entry: what came after it on the first branch is not on the page.
    branchFrom(t, 'e0002', 'b', 4000);
    const r = await bothPages(write('tree-tail.jsonl', t.jsonl()));
    expect(r.passes).toBe(2);
    expectSame(r.streamed, r.inMemory);
    expect(r.data.records.map((x) => x.p)).toContain('Another way, b.');
    expect(r.data.records.length).toBeLessThan(8);
  });

  it('a tree with a side branch abandoned midway, the session going on from its first branch', async () => {
    const t = piSession(4);
    branchFrom(t, 'e0003', 'side', 3000);
    // The session resumes from the last entry of the first branch.
    const last = (t.records as { id?: string }[]).filter((r) => r.id?.startsWith('e')).at(-1)!.id!;
    t.records.push({
      type: 'message',
      id: 'f0',
      parentId: last,
      timestamp: TIMESTAMP,
      message: { role: 'user', content: 'Back on the first branch.', timestamp: 950 },
    });
    const r = await bothPages(write('tree-side.jsonl', t.jsonl()));
    expect(r.passes).toBe(2);
    expectSame(r.streamed, r.inMemory);
    expect(r.data.records.map((x) => x.p)).not.toContain('Another way, side.');
  });

  it('sessions with compactions: abridge’s marker (archived, edited) and pi’s own', async () => {
    const fixtures = await fixtureTranscripts();
    const compacted = fixtures.find((f) => f.name === 'generated-compacted.jsonl')!.file;
    const r = await bothPages(compacted);
    expect(r.data.compactions.length).toBeGreaterThan(0);
    expectSame(r.streamed, r.inMemory);

    const t = piSession(6);
    t.records.push({
      type: 'compaction',
      id: 'c0',
      parentId: (t.records.at(-1) as { id: string }).id,
      timestamp: TIMESTAMP,
      summary: 'The parser was read; CRLF is still to handle.',
      firstKeptEntryId: 'e0008',
      tokensBefore: 9000,
    });
    branchFrom(t, 'c0', 'k', 2500);
    const pi = await bothPages(write('pi-compacted.jsonl', t.jsonl()));
    expect(pi.passes).toBe(2);
    expect(pi.data.compactions).toHaveLength(1);
    expect(pi.data.compactions[0]!.archivedMessages).toBeGreaterThan(0);
    expectSame(pi.streamed, pi.inMemory);
  });

  it('every fixture transcript (pi, Claude Code written by abridge), exact counting too', async () => {
    const { loadExactTokenizer } = await import('../tokens/exact.js');
    const exact = await loadExactTokenizer();
    for (const f of await fixtureTranscripts()) {
      const r = await bothPages(f.file);
      expectSame(r.streamed, r.inMemory, f.name);
      const x = await bothPages(f.file, { exact });
      expectSame(x.streamed, x.inMemory, `${f.name} --exact`);
      expect(dataOf(x.streamed).meta.counting).toBe('exact');
    }
  });

  it.skipIf(!corpusAvailable())(
    'every readable corpus transcript: whatever its reader completes late (compactions, usage, a system prompt)',
    async () => {
      const passes = new Set<number>();
      for (const { file } of readableCorpusFiles()) {
        const r = await bothPages(file);
        expectSame(r.streamed, r.inMemory, file);
        passes.add(r.passes);
      }
      expect([...passes].sort()).toEqual([1, 2]);
    },
  );

  it('secrets are redacted in every text that leaves: texts, previews, summaries, the title', async () => {
    const secrets = fakeSecrets(37).filter((s) => s.selfEvident);
    const t = new PiTranscript(`session ${secrets[0]!.secret}`);
    t.user(`Deploy with ${secrets[1]!.inContext}`);
    secrets.forEach((s, i) =>
      t.step({
        text: `Using ${s.inContext} now.`,
        calls: [
          { name: 'bash', args: { command: `echo ${s.secret}` }, result: `${randomOutput(i, 300)}\n${s.inContext}` },
        ],
        usage: { input: 2000 + 100 * i, output: 20, cacheRead: 0, cacheWrite: 0 },
      }),
    );
    t.records.push({
      type: 'compaction',
      id: 'c0',
      parentId: (t.records.at(-1) as { id: string }).id,
      timestamp: TIMESTAMP,
      summary: `Deployed with ${secrets[2]!.inContext}.`,
      firstKeptEntryId: 'e0004',
      tokensBefore: 5000,
    });
    const r = await bothPages(write('secrets.jsonl', t.jsonl()), { redact: createRedactor() });
    expectSame(r.streamed, r.inMemory);
    for (const s of secrets) expect(r.streamed.includes(s.probe), s.kind).toBe(false);
    for (const s of secrets) expect(textsOf(r.streamed).join('\n').includes(s.probe), s.kind).toBe(false);
    expect(r.streamed).toContain('[REDACTED:');
  });
});

describe('the texts of a streamed page', () => {
  it('a session of many large texts: the blob decompresses to every text, long ones cut', async () => {
    // Texts hard to compress (random words) and over the 64,000-character cut: the blob spans many gzip chunks and
    // base64 pieces.
    const t = piSession(120, (i) => randomOutput(1000 + i, i % 10 === 0 ? 90_000 : 30_000));
    const file = write('large.jsonl', t.jsonl());
    const streamed = await buildViewDataStreamed(file, { source: file });
    expect(streamed.texts.chunks.length).toBeGreaterThan(1);
    const pieces: string[] = [];
    const { bytes } = await writeViewPage(streamed.data, streamed.texts, async (s) => {
      pieces.push(s);
    });
    const html = pieces.join('');
    expect(bytes).toBe(Buffer.byteLength(html));
    const { texts, data } = buildViewData(await readSession(file), { source: file });
    const got = textsOf(html);
    expect(got).toHaveLength(data.records.length);
    expect(got).toEqual(texts);
    expect(got.filter((x) => x.includes('more characters not included in this page'))).toHaveLength(12);
    expect(dataOf(html).meta.truncatedChars).toBe(data.meta.truncatedChars);
    expect(data.meta.truncatedChars).toBeGreaterThan(0);
  });

  it('a session with no message: an empty list', async () => {
    const file = write(
      'empty.jsonl',
      `${JSON.stringify({ type: 'session', version: 3, id: 'x', timestamp: TIMESTAMP, cwd: '/' })}\n`,
    );
    const streamed = await buildViewDataStreamed(file, {});
    const pieces: string[] = [];
    await writeViewPage(streamed.data, streamed.texts, async (s) => {
      pieces.push(s);
    });
    expect(textsOf(pieces.join(''))).toEqual([]);
    expect(pieces.join('')).toBe(renderViewPageWithPolicy(buildViewData(await readSession(file)).data, []).html);
  });
});
