import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { viewSession } from '../src/cli/compact.js';
import { compact } from '../src/compaction/compact.js';
import { LlmSummarizer } from '../src/compaction/summarizers/llm.js';
import { parseSession, readSession } from '../src/formats/read.js';
import { noRedaction } from '../src/redact/redact.js';
import { SECRET_KINDS } from '../src/redact/rules.js';
import { ContextManager } from '../src/manager/context-manager.js';
import { DEFAULT_CONFIG, mergeConfig } from '../src/manager/config.js';
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
        maxBuffer: 1 << 30,
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

// ---------------------------------------------------------------------------------------------------------------------
// Every output kind, for the transcripts of three agents

/** The same planted session as a Codex rollout (session_meta, messages, function calls and their outputs). */
function codexTranscript(secrets: readonly PlantedSecret[]): string {
  let clock = 0;
  const rec = (type: string, payload: unknown) => ({
    timestamp: new Date(Date.UTC(2030, 0, 2, 3, 4, 5) + 1000 * clock++).toISOString(),
    type,
    payload,
  });
  const out: unknown[] = [
    rec('session_meta', {
      id: 'sess-planted-codex',
      timestamp: '2030-01-02T03:00:00.000Z',
      cwd: '/work/demo',
      originator: 'codex_cli_rs',
      cli_version: '0.0.1',
      model_provider: 'openai',
    }),
    rec('turn_context', {
      cwd: '/work/demo',
      approval_policy: 'never',
      model: 'gpt-5',
      effort: 'low',
      summary: 'auto',
    }),
    rec('response_item', {
      type: 'message',
      role: 'user',
      content: [
        {
          type: 'input_text',
          text: `Deploy. ${secrets
            .slice(0, 4)
            .map((s) => s.inContext)
            .join(' ; ')}`,
        },
      ],
    }),
  ];
  secrets.forEach((s, i) => {
    const bare = s.selfEvident ? s.secret : s.inContext;
    out.push(
      rec('response_item', {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: `Step ${i} with ${bare}` }],
      }),
      rec('response_item', {
        type: 'function_call',
        name: 'exec_command',
        arguments: JSON.stringify({ cmd: s.inContext.split('\n')[0] }),
        call_id: `call_${i}`,
      }),
      rec('response_item', {
        type: 'function_call_output',
        call_id: `call_${i}`,
        output: `${randomOutput(2000 + i, 3000)}\n${s.inContext}\n`,
      }),
    );
  });
  return `${out.map((r) => JSON.stringify(r)).join('\n')}\n`;
}

/** The page's data and its texts (a gzip blob, base64), as one string to search. */
function pageText(html: string): string {
  const blob = /<script type="application\/octet-stream" id="texts">([^<]*)<\/script>/.exec(html)?.[1] ?? '';
  return `${html}\n${gunzipSync(Buffer.from(blob, 'base64')).toString('utf8')}`;
}

describe('planted secrets: every kind of rule, every output kind', () => {
  const pi = plantedTranscript(SECRETS);
  const piSession = parseSession(pi, { format: 'pi', source: 'planted.jsonl' });
  const claude = writeSession(piSession, 'claude-code', { redact: noRedaction });
  const codex = codexTranscript(SECRETS);
  const transcripts: [string, string, string][] = [
    ['pi', pi, 'pi'],
    ['claude-code', claude, 'claude-code'],
    ['codex', codex, 'pi'],
  ];
  /** Leaks per output kind, printed at the end (0 everywhere is the claim). */
  const table: [string, number][] = [];
  /** ABRIDGE_PLANTED_COUNT_ONLY=1 counts the leaks of every output kind without failing (to measure a baseline). */
  const countOnly = process.env.ABRIDGE_PLANTED_COUNT_ONLY === '1';
  const check = (what: string, text: string) => {
    const found = leaks(text);
    table.push([what, found.length]);
    if (!countOnly) expect(found, what).toEqual([]);
  };

  it('plants a secret of every built-in kind, the 40 generic forms among them, in all three transcripts', () => {
    const kinds = new Set(SECRETS.map((s) => s.kind));
    expect(SECRET_KINDS.filter((k) => !kinds.has(k))).toEqual([]);
    expect(SECRETS.filter((s) => s.kind === 'generic-secret').length).toBeGreaterThanOrEqual(2 * 40);
    for (const [name, text] of transcripts) expect(leaks(text).length, name).toBe(SECRETS.length);
  });

  it('the ContextManager: a large result offloaded as it arrives is stored redacted', async () => {
    const dir = tmp();
    const store = new FileResultStore(join(dir, 'results'));
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 40_000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', config, results: store });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Deploy the service.' }] });
    await cm.recordResponse(
      {
        role: 'assistant',
        parts: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: { command: 'cat .env' } }],
      },
      { input: 10, output: 20, cacheRead: 0, cacheWrite: 0 },
    );
    const big = SECRETS.map((s, i) => `${randomOutput(3000 + i, 600)}\n${s.inContext}`).join('\n');
    await cm.append({
      role: 'tool',
      parts: [
        { type: 'tool-result', callId: 'c1', toolName: 'bash', isError: false, content: [{ type: 'text', text: big }] },
      ],
    });
    const blobs = readdirSync(join(dir, 'results')).map((n) => readFileSync(join(dir, 'results', n), 'utf8'));
    expect(blobs.length).toBeGreaterThan(0);
    check('ContextManager offloaded blob (files)', blobs.join('\n'));
  });

  it('compaction into a SQLite result store: the blobs on disk carry no secret', async () => {
    const { openSqliteStore } = await import('../src/store/sqlite/session-store.js');
    const dir = tmp();
    const db = join(dir, 'results.db');
    const sqlite = await openSqliteStore(db, { mustExist: false, readonly: false });
    try {
      const session = parseSession(pi, { format: 'pi', source: 'planted.jsonl' });
      await compact(session, { target: 4000, force: true, store: sqlite.results, keepLastSteps: 1 });
      expect((await sqlite.results.list()).length).toBeGreaterThan(0);
    } finally {
      await sqlite.close();
    }
    const files = readdirSync(dir).filter((n) => n.startsWith('results.db'));
    check('SQLite result-store blobs (database file)', files.map((n) => readFileSync(join(dir, n), 'latin1')).join(''));
  });

  it('the CLI, per agent: export (every format), view, inspect --json, replay --json: 0 leaks', () => {
    const run = (args: string[], expectCode = 0) => {
      const r = spawnSync(process.execPath, [BIN, ...args], {
        encoding: 'utf8',
        maxBuffer: 1 << 30,
        env: { ...process.env, NO_COLOR: '1' },
      });
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(expectCode);
      return r;
    };
    for (const [agent, text, own] of transcripts) {
      const dir = tmp();
      const file = join(dir, `${agent}.jsonl`);
      writeFileSync(file, text);
      const db = join(dir, 's.db');
      const id = JSON.parse(run(['import', file, '--db', db, '--json']).stdout).sessionId as string;
      // Its own transcript format: valid JSONL, every record kept (the agent resumes it), no secret.
      const exported = run(['export', id, '--db', db, ...(agent === 'codex' ? ['--format', 'pi'] : [])]).stdout;
      check(`export ${agent} → ${own}`, exported);
      const lines = exported.trimEnd().split('\n');
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      if (agent !== 'codex') {
        expect(lines.length).toBe(text.trimEnd().split('\n').length);
        const back = parseSession(exported, { format: own, source: 'exported.jsonl' });
        expect(back.entries.length).toBe(parseSession(text, { format: own, source: 'x.jsonl' }).entries.length);
      }
      for (const f of ['pi', 'claude-code', 'anthropic', 'openai-chat', 'openai-responses'])
        check(`export ${agent} --format ${f}`, run(['export', id, '--db', db, '--format', f]).stdout);
      const page = join(dir, 'page.html');
      run(['view', file, '-o', page]);
      check(`view ${agent} (file)`, pageText(readFileSync(page, 'utf8')));
      run(['view', '--db', db, '--session', id, '-o', page]);
      check(`view ${agent} (from the store)`, pageText(readFileSync(page, 'utf8')));
      check(`inspect --json ${agent}`, run(['inspect', file, '--json']).stdout);
      check(`replay --json ${agent}`, run(['replay', file, '--json']).stdout);
      check(`compact --json ${agent}`, run(['compact', file, '--budget', '8000', '--json']).stdout);
    }
  }, 300_000);

  it('view --serve: the page served carries no secret', async () => {
    const dir = tmp();
    const file = join(dir, 'pi.jsonl');
    writeFileSync(file, pi);
    const child = spawn(process.execPath, [BIN, 'view', file, '--serve'], { env: { ...process.env, NO_COLOR: '1' } });
    try {
      const url = await new Promise<string>((done, fail) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /serving (http:\/\/\S+)/.exec(out);
          if (m) done(m[1]!);
        });
        child.once('exit', (code) => fail(new Error(`view --serve exited (${code})`)));
        setTimeout(() => fail(new Error('view --serve did not start')), 60_000);
      });
      const html = await (await fetch(url)).text();
      check('view --serve', pageText(html));
    } finally {
      child.kill('SIGTERM');
    }
  }, 90_000);

  it('error messages: a connection string in every form keeps its password out of stderr', () => {
    const password = 'Pl4nt3dPassw0rd';
    const forms = [
      `postgres://app:${password}@127.0.0.1:1/app`,
      `postgresql://app:${password}@127.0.0.1:1/app?sslmode=disable`,
      `postgresql://app@127.0.0.1:1/app?password=${password}`,
      `postgres://127.0.0.1:1/app?user=app&sslpassword=${password}&sslmode=disable`,
      `postgresql:///app?host=127.0.0.1&port=1&password=${password}`,
      `host=127.0.0.1 port=1 user=app password=${password} dbname=app`,
      `host=127.0.0.1 port=1 password='${password} x' dbname=app`,
    ];
    for (const db of forms) {
      for (const args of [
        ['sessions', '--db', db],
        ['export', 'nope', '--db', db],
      ]) {
        const r = spawnSync(process.execPath, [BIN, ...args], {
          encoding: 'utf8',
          maxBuffer: 1 << 30,
          env: { ...process.env, PGCONNECT_TIMEOUT: '2' },
        });
        expect(r.status, `${args.join(' ')}: ${r.stderr}`).not.toBe(0);
        table.push([
          `error message: ${args[0]} --db ${db.replace(password, '…')}`,
          r.stderr.includes(password) || r.stdout.includes(password) ? 1 : 0,
        ]);
        if (!countOnly) expect(r.stderr + r.stdout, db).not.toContain(password);
      }
    }
  }, 120_000);

  it('reports the leaks per output kind', () => {
    // Printed for the record (the assertions above fail on any leak).
    console.log(table.map(([what, n]) => `planted leaks ${n} of ${SECRETS.length}\t${what}`).join('\n'));
  });
});
