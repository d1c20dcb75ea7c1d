import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { viewSession } from '../src/cli/compact.js';
import { compact } from '../src/compaction/compact.js';
import { LlmSummarizer } from '../src/compaction/summarizers/llm.js';
import { readSession } from '../src/formats/read.js';
import { writeSession } from '../src/formats/write.js';
import { FileResultStore } from '../src/store/file-result-store.js';
import { MemoryResultStore } from '../src/compaction/memory-result-store.js';
import { randomOutput } from './support/random-session.js';
import { PiTranscript } from './support/random-session.js';
import { fakeSecrets, type PlantedSecret } from './support/secrets.js';

/**
 * A generated session with fake but well-formed secrets of every kind planted in user messages, tool outputs,
 * tool-call arguments and thinking; then every way text leaves abridge is checked for them: compaction summaries (the
 * extractive summarizer and an LLM summarizer's requests), the records compaction adds, offloaded and cleared results
 * (in memory and on disk), request bodies of every API format, the CLI's compact --emit / --out / --json, inspect and
 * export. 0 leaks.
 */

const BIN = resolve(import.meta.dirname, '../dist/cli/main.js');

function plantedTranscript(secrets: readonly PlantedSecret[]): string {
  const t = new PiTranscript('sess-planted');
  t.user(
    `Task: deploy the service. Credentials: ${secrets
      .slice(0, 4)
      .map((s) => s.inContext)
      .join(' ; ')}`,
  );
  secrets.forEach((s, i) => {
    // A password or an AWS secret key is recognizable only by what names it: planted bare only when self-evident.
    const bare = s.selfEvident ? s.secret : s.inContext;
    const pad = randomOutput(1000 + i, 6000);
    t.step({
      thinking: `I will use the credential from the environment: ${bare}`,
      text: `Running step ${i}.`,
      calls: [
        {
          name: 'bash',
          args: { command: s.inContext.split('\n')[0]!, env: { SECRET: bare } },
          result: `${pad.slice(0, 3000)}\n${s.inContext}\n${pad.slice(3000)}`,
        },
      ],
      usage: { input: 10, output: 200, cacheRead: 2000 + i * 3000, cacheWrite: 100 },
    });
    if (i % 5 === 0) t.user(`Note: the key is ${bare} — keep it out of logs.`);
  });
  t.user('Thanks; now summarize what you did.');
  t.step({ text: 'Done.', usage: { input: 10, output: 50, cacheRead: 2000 + secrets.length * 3000, cacheWrite: 100 } });
  return t.jsonl();
}

const SECRETS = [...fakeSecrets(11), ...fakeSecrets(12)];

function leaks(text: string): string[] {
  return SECRETS.filter((s) => text.includes(s.probe) || text.includes(s.secret)).map((s) => s.kind);
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'abridge-planted-'));
}

describe('planted secrets never leave abridge', () => {
  const jsonl = plantedTranscript(SECRETS);

  it('the transcript really carries every secret (the test can fail)', () => {
    expect(leaks(jsonl).length).toBe(SECRETS.length);
  });

  it('compaction: 0 leaks into the summary, the added record, the LLM request, and the stored results', async () => {
    const dir = tmp();
    const file = join(dir, 's.jsonl');
    writeFileSync(file, jsonl);
    const session = await readSession(file);
    const requests: string[] = [];
    const summarizer = new LlmSummarizer({
      model: 'capture',
      contextWindow: 200_000,
      async complete(req: unknown) {
        requests.push(JSON.stringify(req));
        return 'Summary: deployed the service with the given credentials.';
      },
    });
    const resultsDir = join(dir, 'results');
    const store = new FileResultStore(resultsDir);
    const result = await compact(session, { target: 4000, force: true, store, summarizer, keepLastSteps: 1 });
    expect(result.strategiesRun.length).toBeGreaterThan(0);
    expect(requests.length).toBeGreaterThan(0);
    expect(leaks(requests.join('\n'))).toEqual([]);
    expect(leaks(JSON.stringify(result.marker))).toEqual([]);
    const blobs = readdirSync(resultsDir).map((n) => readFileSync(join(resultsDir, n), 'utf8'));
    expect(blobs.length).toBeGreaterThan(0);
    expect(leaks(blobs.join('\n'))).toEqual([]);
    // The extractive summarizer and an in-memory store, too.
    const again = await readSession(file);
    const mem = new MemoryResultStore();
    const r2 = await compact(again, { target: 4000, force: true, store: mem, keepLastSteps: 1 });
    expect(leaks(JSON.stringify(r2.marker))).toEqual([]);
    const texts = await Promise.all(
      (await mem.list()).map(async (s) => (await mem.read(s.refId, { limit: 2000 })).text),
    );
    expect(leaks(texts.join('\n'))).toEqual([]);
    // Written back in its own format: the user's own records as they were, the added compaction record clean.
    const out = writeSession(again, 'pi');
    const added = out.split('\n').slice(jsonl.trimEnd().split('\n').length).join('\n');
    expect(added).toMatch(/compaction|abridge\.summary/);
    expect(leaks(added)).toEqual([]);
    expect(out.startsWith(jsonl)).toBe(true);
    // Every request body of the compacted view, and conversions to other transcript formats.
    for (const format of ['anthropic', 'openai-chat', 'openai-responses', 'ai-sdk', 'claude-code']) {
      expect(leaks(writeSession(viewSession(again), format)), format).toEqual([]);
      expect(leaks(writeSession(again, format)), format).toEqual([]);
    }
  });

  it('the CLI: compact --json/--emit/--out, inspect, export: 0 leaks', () => {
    const dir = tmp();
    const file = join(dir, 's.jsonl');
    writeFileSync(file, jsonl);
    const run = (...args: string[]) => {
      const r = spawnSync(process.execPath, [BIN, ...args], {
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1' },
      });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    expect(leaks(run('inspect', file))).toEqual([]);
    expect(leaks(run('inspect', file, '--json'))).toEqual([]);
    expect(leaks(run('inspect', file, '--markdown'))).toEqual([]);
    expect(leaks(run('compact', file, '--budget', '8000', '--json'))).toEqual([]);
    for (const f of ['anthropic', 'openai-chat', 'openai-responses', 'ai-sdk'])
      expect(leaks(run('compact', file, '--budget', '8000', '--emit', f)), f).toEqual([]);
    const out = join(dir, 'out.jsonl');
    run('compact', file, '--budget', '8000', '--out', out);
    const written = readFileSync(out, 'utf8');
    expect(written.startsWith(jsonl)).toBe(true);
    expect(leaks(written.slice(jsonl.length))).toEqual([]);
    const results = readdirSync(`${out}.results`).map((n) => readFileSync(join(`${out}.results`, n), 'utf8'));
    expect(leaks(results.join('\n'))).toEqual([]);
    const db = join(dir, 's.db');
    const imported = run('import', out, '--db', db);
    const id = /as session (\S+)/.exec(imported)?.[1] ?? 'sess-planted';
    for (const f of ['anthropic', 'openai-chat', 'openai-responses', 'claude-code'])
      expect(leaks(run('export', id, '--db', db, '--format', f)), f).toEqual([]);
  });
});
