import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../test/support/cli.js';

function abridge(args: string[], cwd?: string) {
  return runCli(args, cwd ? { cwd } : {});
}

function tmpDir(): string {
  return mkdtempSync(join(tmpdir(), 'abridge-models-'));
}

/** A pi session on Claude Sonnet 4.5 whose second request billed a prompt of `prompt` tokens (mostly cache reads). */
function sonnetSession(prompt: number): string {
  const ts = '2026-01-01T00:00:00.000Z';
  const usage = (cacheRead: number) => ({
    input: 5_000,
    output: 400,
    cacheRead,
    cacheWrite: 8_112,
    totalTokens: 5_000 + 400 + cacheRead + 8_112,
  });
  const records = [
    { type: 'session', version: 3, id: 'big', timestamp: ts, cwd: '/w' },
    {
      type: 'message',
      id: 'u1',
      parentId: null,
      timestamp: ts,
      message: { role: 'user', content: [{ type: 'text', text: 'read the whole repository' }], timestamp: 1 },
    },
    {
      type: 'message',
      id: 'a1',
      parentId: 'u1',
      timestamp: ts,
      message: {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'c1', name: 'bash', arguments: { command: 'cat **/*.ts' } }],
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        usage: usage(100_000),
        stopReason: 'toolUse',
        timestamp: 2,
      },
    },
    {
      type: 'message',
      id: 'r1',
      parentId: 'a1',
      timestamp: ts,
      message: {
        role: 'toolResult',
        toolCallId: 'c1',
        toolName: 'bash',
        content: [{ type: 'text', text: 'export const x = 1;\n'.repeat(2000) }],
        isError: false,
        timestamp: 3,
      },
    },
    {
      type: 'message',
      id: 'a2',
      parentId: 'r1',
      timestamp: ts,
      message: {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'c2', name: 'bash', arguments: { command: 'git log -1' } }],
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        usage: usage(prompt - 5_000 - 8_112 - 300),
        stopReason: 'toolUse',
        timestamp: 4,
      },
    },
    {
      type: 'message',
      id: 'r2',
      parentId: 'a2',
      timestamp: ts,
      message: {
        role: 'toolResult',
        toolCallId: 'c2',
        toolName: 'bash',
        content: [{ type: 'text', text: 'commit 1f3e…' }],
        isError: false,
        timestamp: 5,
      },
    },
    {
      type: 'message',
      id: 'a3',
      parentId: 'r2',
      timestamp: ts,
      message: {
        role: 'assistant',
        content: [{ type: 'text', text: 'Read it all.' }],
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        // Two requests the provider accepted and billed: the evidence a window is raised on (one could be a bad report).
        usage: usage(prompt - 5_000 - 8_112),
        stopReason: 'stop',
        timestamp: 6,
      },
    },
  ];
  const file = join(tmpDir(), 'big.jsonl');
  writeFileSync(file, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return file;
}

describe('abridge inspect: prompts billed above the window raise it', () => {
  it('a Sonnet 4.5 session billed 303,112 tokens runs on the 1M variant, and the report says so', () => {
    const r = abridge(['inspect', sonnetSession(303_112), '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const context = JSON.parse(r.stdout).context;
    expect(context.model).toMatchObject({
      id: 'claude-sonnet-4-5',
      contextWindow: 1_000_000,
      source: 'transcript',
      matched: 'anthropic/claude-sonnet-4.5',
      note: 'a 303,112-token prompt was billed, above the 200,000 window: assuming the 1,000,000-token variant (openrouter: anthropic/claude-sonnet-4.5)',
    });
    expect(context.window).toBe(1_000_000);
    expect(context.used).toBeGreaterThanOrEqual(303_112);
    expect(context.level).toBe('ok');
    const human = abridge(['inspect', sonnetSession(303_112)]);
    expect(human.stdout).toContain('assuming the 1,000,000-token variant');
  });

  it('one bill above the window is not enough: it could be a bad report', () => {
    const file = sonnetSession(303_112);
    const lines = readFileSync(file, 'utf8').split('\n');
    // Only the last bill is above the window.
    const a2 = JSON.parse(lines[4]!);
    a2.message.usage.cacheRead = 150_000;
    lines[4] = JSON.stringify(a2);
    writeFileSync(file, lines.join('\n'));
    const context = JSON.parse(abridge(['inspect', file, '--json']).stdout).context;
    expect(context.model).toMatchObject({ id: 'claude-sonnet-4-5', contextWindow: 200_000, source: 'catalog' });
  });

  it('a session within the window keeps the catalog window', () => {
    const context = JSON.parse(abridge(['inspect', sonnetSession(150_000), '--json']).stdout).context;
    expect(context.model).toMatchObject({ id: 'claude-sonnet-4-5', contextWindow: 200_000, source: 'catalog' });
    expect(context.model.note).toBeUndefined();
  });

  it('a configured window is kept, the evidence noted', () => {
    const r = abridge(['inspect', sonnetSession(303_112), '--json', '--context-window', '200000']);
    const context = JSON.parse(r.stdout).context;
    expect(context.model).toMatchObject({ contextWindow: 200_000, source: 'config' });
    expect(context.model.note).toContain(
      'a 303,112-token prompt was billed, above the 200,000 window (kept: the configuration sets it)',
    );
  });
});

describe('abridge models', () => {
  it('--json: what each id resolves to, and the catalog it came from', () => {
    const r = abridge([
      'models',
      'claude-haiku-4-5',
      'claude-sonnet-4.6',
      'claude-sonnet-4-5[1m]',
      'mystery-model-7',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.catalog).toHaveLength(1);
    expect(out.catalog[0]).toMatchObject({ name: 'bundled snapshot' });
    expect(out.catalog[0].detail).toMatch(/pi-ai@[\d.]+ .*generated \d{4}-\d{2}-\d{2}/);
    expect(out.models).toEqual([
      {
        id: 'claude-haiku-4-5',
        contextWindow: 200_000,
        maxOutputTokens: 64_000,
        family: 'claude',
        source: 'catalog',
        pricing: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
      },
      {
        id: 'claude-sonnet-4.6',
        contextWindow: 1_000_000,
        maxOutputTokens: 128_000,
        family: 'claude',
        source: 'catalog',
        matched: 'claude-sonnet-4-6',
        pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
      },
      expect.objectContaining({
        id: 'claude-sonnet-4-5[1m]',
        contextWindow: 1_000_000,
        source: 'inferred',
        matched: 'claude-sonnet-4-5',
      }),
      expect.objectContaining({ id: 'mystery-model-7', contextWindow: 128_000, source: 'default' }),
    ]);
  });

  it('prints a long-context tier under the prices, with the cache prices billed above it', () => {
    const r = abridge(['models', 'claude-sonnet-4-0']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      '$3 in / $15 out · cache read $0.3 · cache write $3.75 per million tokens\n  above 200,000 prompt tokens, the whole request: $6 in / $22.5 out · cache read $0.6 · cache write $7.5 per million tokens',
    );
  });

  it('prints a block per id: window, output, prices, source and note', () => {
    const r = abridge(['models', 'claude-opus-4-6', 'mystery-model-7']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'claude-opus-4-6 (catalog)\n  window 1,000,000 · max output 128,000 · family claude\n  $5 in / $25 out · cache read $0.5 · cache write $6.25 per million tokens',
    );
    expect(r.stdout).toContain('mystery-model-7 (default)');
    expect(r.stdout).toContain('note unknown model "mystery-model-7"');
    expect(r.stdout).toMatch(/catalog: bundled snapshot \(.*\), [\d,]+ models\n$/);
  });

  it('--provider picks that provider’s entry', () => {
    const out = JSON.parse(
      abridge(['models', 'anthropic/claude-sonnet-4.5', '--provider', 'openrouter', '--json']).stdout,
    );
    expect(out.models[0]).toMatchObject({ contextWindow: 1_000_000, source: 'catalog' });
  });

  it('with no id, lists every model of the catalog', () => {
    const out = JSON.parse(abridge(['models', '--json']).stdout);
    expect(out.entries.length).toBe(out.catalog[0].models);
    expect(out.entries).toContainEqual({
      id: 'claude-opus-4-6',
      contextWindow: 1_000_000,
      maxOutputTokens: 128_000,
      provider: 'anthropic',
      pricing: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
    });
  });

  it('--catalog and the catalog config key read a newer models.dev file over the bundled one', () => {
    const dir = tmpDir();
    writeFileSync(
      join(dir, 'newer.json'),
      JSON.stringify({
        anthropic: {
          models: {
            'claude-opus-7': {
              id: 'claude-opus-7',
              limit: { context: 4_000_000, output: 300_000 },
              cost: { input: 3, output: 12 },
            },
          },
        },
      }),
    );
    const flag = JSON.parse(
      abridge(['models', 'claude-opus-7', 'claude-haiku-4-5', '--catalog', 'newer.json', '--json'], dir).stdout,
    );
    expect(flag.models[0]).toMatchObject({
      contextWindow: 4_000_000,
      maxOutputTokens: 300_000,
      source: 'catalog',
      pricing: { input: 3, output: 12 },
    });
    expect(flag.models[1]).toMatchObject({ contextWindow: 200_000, source: 'catalog' });
    expect(flag.catalog.map((s: { name: string; models: number }) => [s.name, s.models])).toEqual([
      ['bundled snapshot', expect.any(Number)],
      [join(dir, 'newer.json'), 1],
    ]);
    // The same file named in abridge.config.json, relative to it, from a subfolder.
    writeFileSync(join(dir, 'abridge.config.json'), JSON.stringify({ catalog: 'newer.json' }));
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    const config = JSON.parse(abridge(['models', 'claude-opus-7', '--json'], sub).stdout);
    expect(config.models[0]).toMatchObject({ contextWindow: 4_000_000, source: 'catalog' });
  });

  it('a bad catalog file is a one-line error naming the file and what is wrong, exit 2', () => {
    const dir = tmpDir();
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ anthropic: { models: { x: { id: 'x', limit: { context: 'big' } } } } }),
    );
    const bad = abridge(['models', 'gpt-4o', '--catalog', join(dir, 'bad.json')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      `abridge: ${join(dir, 'bad.json')}: anthropic.models["x"].limit.context: expected a positive integer (tokens), got "big"\n`,
    );
    const missing = abridge(['inspect', sonnetSession(1000), '--catalog', join(dir, 'nope.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`abridge: ${join(dir, 'nope.json')}: no such model catalog file\n`);
  });
});
