import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, runCli, SMALL_PI_SESSION } from '../../test/support/cli.js';
import { corpusAvailable, corpusFile } from '../../test/support/corpus.js';
import { grepSteps } from '../../test/support/agent-loop.js';
import { fixtureTranscripts, generatedPiSession } from '../../test/support/fixture-transcripts.js';
import { activeMessages } from '../model/view.js';

function abridge(...args: string[]) {
  return runCli(args);
}

function tmpFile(name: string, content: string | Buffer): string {
  const dir = mkdtempSync(join(tmpdir(), 'abridge-cli-'));
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

const piSession = SMALL_PI_SESSION;

describe('abridge inspect', () => {
  it('prints a JSON report with the documented fields', () => {
    const file = tmpFile('s.jsonl', `${piSession}\n`);
    const r = abridge('inspect', file, '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('pi');
    expect(report.session).toMatchObject({ id: 's1', cwd: '/w', version: 3 });
    expect(report.entries.total).toBe(4);
    expect(report.messages.total).toBe(3);
    expect(report.messages.byRole).toEqual({
      user: { count: 1, chars: 10 },
      assistant: { count: 1, chars: 4 + '{"command":"ls"}'.length },
      tool: { count: 1, chars: 9 },
    });
    expect(report.tools).toMatchObject({ calls: 1, results: 1, errors: 0, byName: { bash: 1 } });
    expect(report.models).toEqual([{ id: 'claude-sonnet-4-5', provider: 'anthropic', messages: 1 }]);
    expect(report.lastUsage).toMatchObject({
      input: 10,
      output: 5,
      cacheRead: 100,
      cacheWrite: 20,
      prompt: 130,
      line: 3,
    });
    expect(report.compactions).toEqual([]);
    expect(report.problems).toEqual([]);
  });

  it('reads a file with problems, reports them and exits 0', () => {
    const file = tmpFile(
      'bad.jsonl',
      `${piSession}\n{"type":"message",\n{"type": nope}\n{"type":"label","id":"x","parentId":"a3","targetId":"a1","label":"k"}{"type":"wat"}\n{"type":"message","message":{"role":"us`,
    );
    const r = abridge('inspect', file, '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.problems.map((p: { line: number; kind: string }) => [p.line, p.kind])).toEqual([
      [5, 'truncated-line'],
      [6, 'invalid-json'],
      [7, 'multiple-objects'],
      [7, 'unknown-entry-type'],
      [8, 'truncated-line'],
    ]);
    const human = abridge('inspect', file);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('problems    5');
    expect(human.stdout).toContain('line 8 ends inside an unfinished JSON value');
  });

  it('prints a readable table', () => {
    const file = tmpFile('s.jsonl', `${piSession}\n`);
    const r = abridge('inspect', file);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/format\s+pi \(pi session JSONL v3\)/);
    expect(r.stdout).toMatch(/last usage\s+prompt 130 tokens/);
    expect(r.stdout).toMatch(/tool-result\s+1\s+9/);
  });

  it('exits 2 with one line naming the file when it is missing', () => {
    const r = abridge('inspect', '/nonexistent/x.jsonl');
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual(['abridge: /nonexistent/x.jsonl: no such file']);
    expect(r.stdout).toBe('');
  });

  it('exits 2 for an unrecognized format and for an unknown --format id', () => {
    const file = tmpFile('x.json', '{"hello":"world"}');
    const r = abridge('inspect', file);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}: unrecognized transcript format`);
    const r2 = abridge('inspect', file, '--format', 'nope');
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain('unknown format "nope"');
  });

  it('--format overrides detection', () => {
    const file = tmpFile('s.jsonl', `${piSession}\n`);
    const r = abridge('inspect', file, '--format', 'claude-code', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).format).toBe('claude-code');
  });

  it('--instance reads the session asked for of a file that holds several, and exits 2 naming them for another', () => {
    const instance = (id: string, task: string) => ({
      instance_id: id,
      instruction: task,
      history: [{ id: 1, source: 'user', action: 'message', args: { content: task } }],
      metrics: {},
    });
    const file = tmpFile(
      'output.jsonl',
      `${[instance('org__a-1', 'Fix a.'), instance('org__b-2', 'Fix b.')].map((r) => JSON.stringify(r)).join('\n')}\n`,
    );
    const first = JSON.parse(abridge('inspect', file, '--json').stdout);
    expect(first.format).toBe('openhands');
    expect(first.session.id).toBe('org__a-1');
    expect(first.problems.map((p: { kind: string }) => p.kind)).toEqual(['more-sessions']);
    const r = abridge('inspect', file, '--instance', 'org__b-2', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).session.id).toBe('org__b-2');
    const bad = abridge('inspect', file, '--instance', 'org__c-3');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no OpenHands instance "org__c-3" in this file; it holds org__a-1, org__b-2');
  });

  it('exits 2 for a directory', () => {
    const r = abridge('inspect', tmpdir());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is a directory');
  });
});

(corpusAvailable() ? describe : describe.skip)('abridge inspect on real transcripts', () => {
  it('Claude Code transcript with a compaction', () => {
    const r = abridge(
      'inspect',
      corpusFile('claude-code', 'marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl'),
      '--json',
    );
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('claude-code');
    expect(report.compactions).toHaveLength(1);
    expect(report.compactions[0]).toMatchObject({
      number: 1,
      source: 'claude-code',
      tokensBefore: 167094,
      trigger: 'auto',
    });
    expect(report.models.map((m: { id: string }) => m.id)).toContain('claude-opus-4-6');
  });

  it('reads an Aider history: its last run in context, anchored on its last token report', () => {
    const r = abridge('inspect', corpusFile('other', 'AFI-Protocol__afi-core__.aider.chat.history.md'), '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('aider');
    expect(report.lastUsage).toMatchObject({ input: 18000, output: 66, prompt: 18000, model: 'gpt-4.1' });
    expect(report.context.used).toBeGreaterThan(18000);
  });
});

describe('abridge inspect: the /context breakdown', () => {
  // A session whose last request reported 130 prompt tokens (see piSession above).
  const withUsage = `${piSession}\n`;

  it('--json carries the context snapshot with the model, levels and components', () => {
    const file = tmpFile('s.jsonl', withUsage);
    const r = abridge('inspect', file, '--json', '--context-window', '1000', '--reserve-tokens', '200');
    expect(r.code).toBe(0);
    const { context } = JSON.parse(r.stdout);
    expect(context.window).toBe(1000);
    expect(context.reserve).toBe(200);
    expect(context.effective).toBe(800);
    expect(context.marks).toEqual({ warn: 640, compact: 720, block: 784, target: 480 });
    expect(context.anchored).toBe(true);
    // The last report (130) plus the tool result that came after it.
    expect(context.used).toBeGreaterThan(130);
    expect(context.level).toBe('ok');
    const visible = Object.entries(context.components as Record<string, number>)
      .filter(([k]) => k !== 'unrecorded')
      .reduce((n, [, v]) => n + v, 0);
    expect(context.components.unrecorded + visible).toBe(context.used);
    expect(context.components.prompt).toBeGreaterThan(0);
    expect(context.counts).toMatchObject({ messages: 3, toolResults: 1, compactions: 0 });
    expect(Object.keys(context.byTool)).toEqual(['bash']);
    expect(context.byTool.bash).toMatchObject({ calls: 1, results: 1 });
    expect(context.byTool.bash.tokens).toBeGreaterThan(0);
    expect(context.byMcpServer).toEqual({});
  });

  it('a bill that is no count of the request is a problem, and the count does not use it', () => {
    const lie = piSession.replace('"input":10,', '"input":10000000,');
    expect(lie).not.toBe(piSession);
    const r = abridge('inspect', tmpFile('s.jsonl', `${lie}\n`), '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'implausible-usage',
        message: expect.stringMatching(/10000120 tokens.*not used$/),
      }),
    ]);
    expect(report.context.anchored).toBe(false);
    expect(report.context.used).toBeLessThan(10_000);
    const text = abridge('inspect', tmpFile('s.jsonl', `${lie}\n`));
    expect(text.stdout).toMatch(/problems +1 \(implausible-usage 1\)/);
  });

  it('the text report lists the context by tool', () => {
    const r = abridge('inspect', tmpFile('s.jsonl', withUsage));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('context by tool');
    expect(r.stdout).toMatch(/\nbash +1 +1 /);
  });

  it('levels follow the thresholds given as flags', () => {
    const file = tmpFile('s.jsonl', withUsage);
    const r = abridge(
      'inspect',
      file,
      '--json',
      '--context-window',
      '400',
      '--reserve-tokens',
      '0',
      '--warn',
      '10%',
      '--compact',
      '20%',
      '--block',
      '95%',
      '--target',
      '5%',
    );
    expect(JSON.parse(r.stdout).context.level).toBe('compact');
  });

  it('--at shows the context as of an entry, and rejects an index out of range', () => {
    const file = tmpFile('s.jsonl', withUsage);
    const early = JSON.parse(abridge('inspect', file, '--json', '--at', '1').stdout).context;
    expect(early.asOf).toMatchObject({ entry: 1, line: 2, ofEntries: 4 });
    expect(early.anchored).toBe(false);
    expect(early.counts.messages).toBe(1);
    const bad = abridge('inspect', file, '--at', '9');
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('abridge: --at 9: expected an entry index from 0 to 3');
  });

  it('--markdown prints the breakdown table and the footer', () => {
    const file = tmpFile('s.jsonl', withUsage);
    const r = abridge('inspect', file, '--markdown', '--context-window', '400', '--reserve-tokens', '0');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\*\*Context [█░]{10} \d+% · \d+\/400 · (ok|warn|compact|block)\*\*/);
    expect(r.stdout).toContain('| Recent turns (verbatim) |');
    expect(r.stdout).toContain('<sub>Context');
  });

  it('reads abridge.config.json, and a bad one is exit 2 naming the key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-cfg-'));
    const file = join(dir, 's.jsonl');
    writeFileSync(file, withUsage);
    writeFileSync(
      join(dir, 'abridge.config.json'),
      JSON.stringify({ contextWindow: 5000, thresholds: { warn: '70%' } }),
    );
    const ok = spawnSync(process.execPath, [CLI, 'inspect', file, '--json'], { cwd: dir, encoding: 'utf8' });
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout).context).toMatchObject({ window: 5000, thresholds: { warn: 0.7, compact: 0.9 } });
    writeFileSync(join(dir, 'abridge.config.json'), JSON.stringify({ tresholds: {} }));
    const bad = spawnSync(process.execPath, [CLI, 'inspect', file], { cwd: dir, encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('unknown key "tresholds" at top level; did you mean "thresholds"?');
    const flag = abridge('inspect', file, '--warn', '150%');
    expect(flag.code).toBe(2);
    expect(flag.stderr.trim()).toBe(
      'abridge: --warn: expected a share like "80%" or a number between 0 and 1, got "150%"',
    );
  });
});

describe('abridge inspect: undone compactions', () => {
  type Listed = { number: number; inView?: boolean; undone?: number[]; undoneBy?: { number?: number; line?: number } };
  const listed = (file: string) => {
    const r = abridge('inspect', file, '--json');
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { compactions: Listed[]; context: { counts: { compactions: number } } };
    return {
      compactions: report.compactions.map((c) => [c.number, c.inView, c.undone, c.undoneBy]),
      inView: report.context.counts.compactions,
    };
  };
  const lines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n').length;

  it('a pi file: a compaction uncompact undid is listed undone, at the undo record, and not counted in view', () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-inspect-undo-'));
    const at = (name: string) => join(dir, name);
    writeFileSync(at('pi.jsonl'), generatedPiSession());
    expect(abridge('compact', at('pi.jsonl'), '--budget', '9000', '--out', at('c1.jsonl')).code).toBe(0);
    expect(abridge('compact', at('c1.jsonl'), '--budget', '5000', '--out', at('c2.jsonl')).code).toBe(0);
    expect(listed(at('c2.jsonl'))).toEqual({
      compactions: [
        [1, true, undefined, undefined],
        [2, true, undefined, undefined],
      ],
      inView: 1, // the second's branch holds its own marker only (abridge writes it as a new branch)
    });

    expect(abridge('uncompact', at('c2.jsonl'), '--out', at('last.jsonl')).code).toBe(0);
    const undoLine = lines(at('c2.jsonl')) + 1;
    const entry = undoLine - 1;
    expect(listed(at('last.jsonl'))).toEqual({
      compactions: [
        [1, true, undefined, undefined],
        [2, false, undefined, { entry, line: undoLine }],
      ],
      inView: 1,
    });
    const text = abridge('inspect', at('last.jsonl')).stdout;
    expect(text).toMatch(
      new RegExp(`\\n {12}#2 by abridge · line \\d+ · .* · undone \\(the undo at line ${undoLine}\\)\\n`),
    );
    expect(text).toMatch(/\ncompactions #1 by abridge · line \d+ · [^\n]*chars · archived entries \d+–\d+\n/);

    expect(abridge('uncompact', at('c2.jsonl'), '--marker', '1', '--out', at('first.jsonl')).code).toBe(0);
    expect(listed(at('first.jsonl'))).toEqual({
      compactions: [
        [1, false, undefined, { entry, line: undoLine }],
        [2, false, undefined, { entry, line: undoLine }],
      ],
      inView: 0,
    });
  });

  it('a Claude Code transcript: the undo boundary is listed as the undo of #1, which is not counted in view', async () => {
    const cc = (await fixtureTranscripts()).find((f) => f.folder === 'claude-code')!.file;
    const dir = mkdtempSync(join(tmpdir(), 'abridge-inspect-undo-'));
    const compacted = join(dir, 'cc.jsonl');
    const undone = join(dir, 'cc-undone.jsonl');
    expect(abridge('compact', cc, '--budget', '6000', '--out', compacted).code).toBe(0);
    expect(listed(compacted)).toEqual({ compactions: [[1, true, undefined, undefined]], inView: 1 });
    expect(abridge('uncompact', compacted, '--out', undone).code).toBe(0);
    const boundary = lines(compacted) + 1;
    expect(listed(undone)).toEqual({
      compactions: [
        [1, false, undefined, { entry: expect.any(Number), line: boundary, number: 2 }],
        [2, false, [1], undefined],
      ],
      inView: 0,
    });
    expect(abridge('inspect', undone).stdout).toMatch(
      new RegExp(`· undone by #2\\n {12}#2 undo of #1 · line ${boundary} · [\\d,]+ tokens before\\n`),
    );
  });

  it('a stored session undone after a resume: "#3 undo of #2", #2 undone by it, the resumed view in context', async () => {
    const { openSqliteStore } = await import('../store/sqlite/index.js');
    const { ContextManager } = await import('../manager/context-manager.js');
    const db = join(mkdtempSync(join(tmpdir(), 'abridge-inspect-undo-')), 's.db');
    const store = await openSqliteStore(db);
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', store, sessionId: 's' });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Find every use of value.' }] });
    await grepSteps(cm, 0, 8);
    expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(1);
    await grepSteps(cm, 8, 4);
    expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(2);
    // Resumed from the second's snapshot, undone at once (the checkpoint follows the snapshot's view, not a record of
    // the log), then appended to.
    const resumed = await ContextManager.resume(store, 's', {});
    expect((await resumed.undoCompaction()).undone).toEqual([2]);
    await resumed.append({ role: 'user', parts: [{ type: 'text', text: 'Now list the modules.' }] });
    await store.close();

    const r = abridge('inspect', '--db', db, '--session', 's', '--json');
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.compactions.map((c: Listed) => [c.number, c.inView, c.undone, c.undoneBy?.number])).toEqual([
      [1, true, undefined, undefined],
      [2, false, undefined, 3],
      [3, false, [2], undefined],
    ]);
    expect(report.context.counts).toMatchObject({
      compactions: 1,
      messages: activeMessages(resumed.session).length,
    });
    const text = abridge('inspect', '--db', db, '--session', 's').stdout;
    expect(text).toMatch(
      /\n {12}#2 by abridge · entry \d+ · .* · undone by #3\n {12}#3 undo of #2 · entry \d+ · [\d,]+ → [\d,]+ tokens\n/,
    );
    expect(text).toMatch(/ · 1 compaction · /);
  });
});
