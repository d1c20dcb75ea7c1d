import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contextBreakdown } from '../budget/breakdown.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { readSession } from '../formats/read.js';
import { CLI } from '../../test/support/cli.js';
import { statuslineReport, statuslineText, wantsColor } from './statusline.js';

const dir = mkdtempSync(join(tmpdir(), 'abridge-statusline-'));

/** A Claude Code transcript: `turns` exchanges, each a Bash call and its result, the assistant records with usage. */
function claudeTranscript(turns: number, model = 'claude-sonnet-4-5-20250929'): string {
  const lines: Record<string, unknown>[] = [];
  let parent: string | null = null;
  const rec = (type: string, message: Record<string, unknown>) => {
    const uuid = `u${lines.length}`;
    lines.push({
      parentUuid: parent,
      isSidechain: false,
      userType: 'external',
      cwd: '/work/app',
      sessionId: 'sess-1',
      version: '2.1.0',
      type,
      uuid,
      timestamp: new Date(Date.UTC(2026, 10, 1, 0, 0, lines.length)).toISOString(),
      message,
    });
    parent = uuid;
  };
  rec('user', { role: 'user', content: 'Find why the build is slow.' });
  let prompt = 20_000;
  for (let i = 0; i < turns; i++) {
    rec('assistant', {
      id: `msg_${i}`,
      model,
      role: 'assistant',
      type: 'message',
      content: [{ type: 'tool_use', id: `toolu_${i}`, name: 'Bash', input: { command: `ls dir${i}` } }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 10, cache_creation_input_tokens: 500, cache_read_input_tokens: prompt, output_tokens: 40 },
    });
    rec('user', {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: `file-${i}.ts\n`.repeat(200) }],
    });
    prompt += 1_500;
  }
  const path = join(dir, `claude-${turns}.jsonl`);
  writeFileSync(path, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return path;
}

/** The input Claude Code documents for a statusLine command (code.claude.com/docs/en/statusline). */
function claudeInput(transcript: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    hook_event_name: 'Status',
    session_id: 'sess-1',
    transcript_path: transcript,
    cwd: '/work/app',
    model: { id: 'claude-sonnet-4-5-20250929', display_name: 'Sonnet 4.5' },
    workspace: { current_dir: '/work/app', project_dir: '/work/app' },
    version: '2.1.0',
    output_style: { name: 'default' },
    cost: {
      total_cost_usd: 0.42,
      total_duration_ms: 60_000,
      total_api_duration_ms: 20_000,
      total_lines_added: 3,
      total_lines_removed: 1,
    },
    exceeds_200k_tokens: false,
    context_window: {
      total_input_tokens: 90_000,
      total_output_tokens: 2_000,
      context_window_size: 200_000,
      current_usage: {
        input_tokens: 10,
        output_tokens: 40,
        cache_creation_input_tokens: 500,
        cache_read_input_tokens: 50_000,
      },
      used_percentage: 25,
      remaining_percentage: 75,
    },
    ...extra,
  });
}

function statusline(input: string, args: string[] = [], env: Record<string, string | undefined> = { NO_COLOR: '1' }) {
  const r = spawnSync(process.execPath, [CLI, 'statusline', ...args], {
    input,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('abridge statusline', () => {
  const transcript = claudeTranscript(20);

  it('gives the figures inspect gives the session (its context breakdown)', async () => {
    const r = await statuslineReport(claudeInput(transcript), DEFAULT_BUDGET_SETTINGS);
    const c = contextBreakdown(await readSession(transcript));
    expect(r).toMatchObject({ used: c.used, window: c.window, level: c.level, anchored: true, transcript });
    expect(r.compactAt).toBeCloseTo(c.marks.compact / c.window);
    expect(r.model).toBe('claude-sonnet-4-5-20250929');
  });

  it('prints one short line from the documented input, coloured by level unless NO_COLOR', async () => {
    const r = statusline(claudeInput(transcript));
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^ctx \d+% · \d+(\.\d)?K\/\d+(\.\d)?[KM] · compact at \d+%\n$/);
    const report = await statuslineReport(claudeInput(transcript), DEFAULT_BUDGET_SETTINGS);
    expect(r.stdout).toBe(`${statuslineText(report, false)}\n`);
    const coloured = statusline(claudeInput(transcript), [], { NO_COLOR: undefined });
    expect(coloured.stdout).toContain('\x1b[32m');
    expect(statusline(claudeInput(transcript), ['--no-color'], { NO_COLOR: undefined }).stdout).not.toContain('\x1b[');
    expect(wantsColor({ NO_COLOR: '1' }, undefined)).toBe(false);
    expect(wantsColor({}, undefined)).toBe(true);
  });

  it('--json prints the figures as one object', () => {
    const r = statusline(claudeInput(transcript), ['--json']);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(j).sort()).toEqual([
      'anchored',
      'compactAt',
      'level',
      'model',
      'share',
      'transcript',
      'used',
      'window',
    ]);
  });

  it('names the level from warn on, and marks an unanchored prediction with ~', () => {
    const base = {
      used: 150_000,
      window: 200_000,
      share: 0.75,
      compactAt: 0.9,
      anchored: true,
      model: 'm',
      transcript: 't',
    };
    expect(statuslineText({ ...base, level: 'warn' }, false)).toBe('ctx 75% · 150K/200K · compact at 90% · warn');
    expect(statuslineText({ ...base, level: 'ok', anchored: false }, false)).toBe(
      'ctx ~75% · 150K/200K · compact at 90%',
    );
  });

  it("a new session whose transcript names no model yet is measured against the input's model", async () => {
    const path = join(dir, 'new.jsonl');
    writeFileSync(
      path,
      `${JSON.stringify({ parentUuid: null, type: 'user', uuid: 'u0', sessionId: 's', cwd: '/w', timestamp: '2026-11-01T00:00:00.000Z', message: { role: 'user', content: 'hi' } })}\n`,
    );
    const r = await statuslineReport(
      claudeInput(path, { model: { id: 'claude-opus-4-6', display_name: 'Opus' } }),
      DEFAULT_BUDGET_SETTINGS,
    );
    expect(r.model).toBe('claude-opus-4-6');
    expect(r.anchored).toBe(false);
  });

  it('bad input: one short line on stdout, exit 0, no stack trace', () => {
    for (const [input, message] of [
      ['', /^abridge: no JSON on standard input/],
      ['{not json', /^abridge: standard input is not JSON/],
      ['[1, 2]', /^abridge: expected a JSON object/],
      ['{"session_id": "x"}', /^abridge: the input has no "transcript_path" string/],
      [claudeInput(join(dir, 'missing.jsonl')), /^abridge: .*missing\.jsonl.*no such file/],
    ] as const) {
      const r = statusline(input);
      expect(r.code, input).toBe(0);
      expect(r.stdout, input).toMatch(message);
      expect(r.stdout.split('\n')).toHaveLength(2);
      expect(r.stderr).toBe('');
    }
    const j = statusline('{not json', ['--json']);
    expect(JSON.parse(j.stdout)).toEqual({ error: expect.stringMatching(/not JSON/) });
  });
});
