import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { DEFAULT_THRESHOLDS } from './defaults.js';
import {
  breakdownRows,
  compactNumber,
  markdownFooter,
  pressureLine,
  renderBreakdownMarkdown,
  renderBreakdownText,
} from './report.js';
import { contextBreakdown, type ContextBreakdown } from './breakdown.js';
import type { Level } from './types.js';

const COMPONENT_KEYS = [
  'unrecorded',
  'system',
  'tools',
  'memory',
  'skills',
  'knowledgeBase',
  'crossIssue',
  'summary',
  'recent',
  'prompt',
] as const;

/** A snapshot of a 200,000-token window with 32,000 reserved: effective 168,000, compact mark 151,200. */
function snapshot(used: number, over: Partial<ContextBreakdown> = {}): ContextBreakdown {
  const effective = 168_000;
  const marks = { warn: 134_400, compact: 151_200, block: 164_640, target: 100_800 };
  const fill = used / effective;
  const level: Level = fill >= 0.98 ? 'block' : fill >= 0.9 ? 'compact' : fill >= 0.8 ? 'warn' : 'ok';
  // Components that add up to `used`: 20,000 unrecorded, 2,000 memory, 10,000 summary, 2,000 prompt, the rest recent.
  const fixed = { unrecorded: 20_000, memory: 2_000, summary: 10_000, prompt: 2_000 };
  const scale = Math.min(1, used / 34_000);
  const components = {
    system: 0,
    memory: 0,
    skills: 0,
    tools: 0,
    knowledgeBase: 0,
    crossIssue: 0,
    summary: 0,
    recent: 0,
    prompt: 0,
    unrecorded: 0,
  };
  for (const [k, v] of Object.entries(fixed) as [keyof typeof fixed, number][]) components[k] = Math.floor(v * scale);
  components.recent = used - Object.values(components).reduce((a, b) => a + b, 0);
  return {
    model: {
      id: 'claude-opus-4-1-20250805',
      contextWindow: 200_000,
      maxOutputTokens: 32_000,
      family: 'claude',
      source: 'catalog',
    },
    window: 200_000,
    reserve: 32_000,
    effective,
    thresholds: DEFAULT_THRESHOLDS,
    marks,
    used,
    anchored: true,
    fill,
    level,
    components,
    tools: { builtIn: 0, mcp: 0, deferred: 0 },
    untilCompaction: marks.compact - used,
    compactionBuffer: effective - marks.compact,
    free: Math.max(0, effective - used),
    counts: { messages: 120, toolResults: 40, compactions: 1, entries: 300 },
    asOf: { entry: 299, line: 300, ofEntries: 300 },
    counting: 'estimate',
    ...over,
  };
}

const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

describe('compactNumber', () => {
  it.each([
    [0, '0'],
    [12.6, '13'],
    [999, '999'],
    [1_000, '1.0K'],
    [1_500, '1.5K'],
    [10_000, '10K'],
    [142_300, '142K'],
    [200_000, '200K'],
    [999_499, '999K'],
    [999_500, '1.0M'],
    [1_048_576, '1.0M'],
    [2_500_000, '2.5M'],
  ])('%d → %s', (n, s) => {
    expect(compactNumber(n)).toBe(s);
  });
});

describe('pressureLine', () => {
  it('is the exact line for a known snapshot', () => {
    const s = snapshot(142_000);
    expect(s.level).toBe('warn');
    expect(pressureLine(s)).toBe('Context ███████░░░ 71% · 142K/200K · warn');
  });

  it.each([
    [0, 'Context ░░░░░░░░░░ 0% · 0/200K · ok'],
    [30_000, 'Context ██░░░░░░░░ 15% · 30K/200K · ok'],
    [159_600, 'Context ████████░░ 80% · 160K/200K · compact'],
    [170_000, 'Context █████████░ 85% · 170K/200K · block'],
    [200_000, 'Context ██████████ 100% · 200K/200K · block'],
    [260_000, 'Context ██████████ 130% · 260K/200K · block'],
  ])('used %d → %s', (used, line) => {
    expect(pressureLine(snapshot(used))).toBe(line);
  });

  it('with color, the same text once the escapes are removed', () => {
    const s = snapshot(142_000);
    expect(strip(pressureLine(s, { color: true }))).toBe(pressureLine(s));
  });
});

describe('markdownFooter', () => {
  const line = (used: number) => `<sub>${pressureLine(snapshot(used))}</sub>`;
  const filling = (p: string) =>
    `<sub>The context is filling up (${p}). Keep requests focused; large outputs are better written to files than pasted.</sub>`;
  const full = (p: string, compact = '90%') =>
    `<sub>⚠️ The context is nearly full (${p}). Older tool output will be cleared and earlier turns summarized at ${compact} of the usable window; start a new session for unrelated work.</sub>`;

  // Levels of the footer follow the percentage it shows (rounded), so the advice never disagrees with the number.
  it('is empty below 30% of the window (as shown, rounded)', () => {
    expect(markdownFooter(snapshot(0))).toBe('');
    expect(markdownFooter(snapshot(58_999))).toBe('');
    expect(markdownFooter(snapshot(59_000))).not.toBe('');
  });

  it('is the pressure line alone from 30% to just under 60% (as shown)', () => {
    expect(markdownFooter(snapshot(60_000))).toBe('\n---\n<sub>Context ███░░░░░░░ 30% · 60K/200K · ok</sub>');
    expect(markdownFooter(snapshot(118_999))).toBe(`\n---\n${line(118_999)}`);
    expect(markdownFooter(snapshot(118_999))).not.toContain('filling up');
  });

  it('advises from 60%', () => {
    expect(markdownFooter(snapshot(120_000))).toBe(`\n---\n${line(120_000)}\n${filling('60%')}`);
    expect(markdownFooter(snapshot(142_000))).toBe(`\n---\n${line(142_000)}\n${filling('71%')}`);
  });

  it('warns from 80%, naming the compact threshold', () => {
    expect(markdownFooter(snapshot(160_000))).toBe(`\n---\n${line(160_000)}\n${full('80%')}`);
    expect(markdownFooter(snapshot(190_000, { thresholds: { ...DEFAULT_THRESHOLDS, compact: 0.85 } }))).toBe(
      `\n---\n${line(190_000)}\n${full('95%', '85%')}`,
    );
  });
});

describe('breakdownRows', () => {
  const total = (rows: ReturnType<typeof breakdownRows>) => rows.reduce((n, r) => n + r.tokens, 0);
  const get = (rows: ReturnType<typeof breakdownRows>, key: string) => rows.find((r) => r.key === key)!;

  it('lists every component, then free space, the compaction buffer and the reserve', () => {
    const rows = breakdownRows(snapshot(142_000));
    expect(rows.map((r) => r.key)).toEqual([...COMPONENT_KEYS, 'free', 'compactionBuffer', 'reserve']);
    expect(rows.map((r) => [r.key, r.tokens])).toEqual([
      ['unrecorded', 20_000],
      ['system', 0],
      ['tools', 0],
      ['memory', 2_000],
      ['skills', 0],
      ['knowledgeBase', 0],
      ['crossIssue', 0],
      ['summary', 10_000],
      ['recent', 108_000],
      ['prompt', 2_000],
      ['free', 9_200],
      ['compactionBuffer', 16_800],
      ['reserve', 32_000],
    ]);
    for (const r of rows) expect(r.share).toBe(r.tokens / 200_000);
  });

  it('below the compact mark: components = used, and everything adds up to the window', () => {
    const s = snapshot(142_000);
    const rows = breakdownRows(s);
    expect(rows.slice(0, 10).reduce((n, r) => n + r.tokens, 0)).toBe(s.used);
    expect(get(rows, 'free').tokens).toBe(s.marks.compact - s.used);
    expect(get(rows, 'compactionBuffer').tokens).toBe(s.effective - s.marks.compact);
    expect(get(rows, 'reserve').tokens).toBe(s.window - s.effective);
    expect(total(rows)).toBe(s.window);
  });

  it('past the compact mark: no free space, the buffer is what is left of the effective window', () => {
    const s = snapshot(160_000);
    const rows = breakdownRows(s);
    expect(get(rows, 'free').tokens).toBe(0);
    expect(get(rows, 'compactionBuffer').tokens).toBe(8_000);
    expect(total(rows)).toBe(s.window);
  });

  it('past the effective window: no free space and no buffer; the total is used + reserve', () => {
    const s = snapshot(180_000);
    const rows = breakdownRows(s);
    expect(get(rows, 'free').tokens).toBe(0);
    expect(get(rows, 'compactionBuffer').tokens).toBe(0);
    expect(total(rows)).toBe(180_000 + 32_000);
  });

  it('on a real snapshot the rows add up to the window too', () => {
    const ts = '2026-01-01T00:00:00.000Z';
    const s = contextBreakdown(
      parseSession(
        [
          { type: 'session', version: 3, id: 's', timestamp: ts, cwd: '/r' },
          {
            type: 'message',
            id: 'u',
            parentId: null,
            timestamp: ts,
            message: { role: 'user', content: 'hello there', timestamp: 1 },
          },
          {
            type: 'message',
            id: 'a',
            parentId: 'u',
            timestamp: ts,
            message: {
              role: 'assistant',
              content: [{ type: 'text', text: 'Hi! What shall we build?' }],
              provider: 'openai',
              model: 'gpt-4o',
              usage: { input: 900, output: 9, cacheRead: 0, cacheWrite: 0 },
              stopReason: 'stop',
              timestamp: 2,
            },
          },
        ]
          .map((r) => JSON.stringify(r))
          .join('\n'),
      ),
    );
    const rows = breakdownRows(s);
    expect(rows.slice(0, 10).reduce((n, r) => n + r.tokens, 0)).toBe(s.used);
    expect(total(rows)).toBe(s.window);
    expect(s.window).toBe(128_000);
  });
});

describe('renderBreakdownMarkdown', () => {
  it('is a table with a row per component and the free / buffer / reserve rows', () => {
    const md = renderBreakdownMarkdown(snapshot(142_000));
    expect(md).toBe(
      [
        '**Context ███████░░░ 71% · 142K/200K · warn**',
        '',
        'claude-opus-4-1-20250805 · window 200,000 · anchored on the last reported usage  ',
        'used 142,000 · usable 168,000 (window − 32,000 reserved) · warn 134,400 · compact 151,200 → 100,800 · block 164,640  ',
        '',
        '| component | tokens | % of window |',
        '|---|--:|--:|',
        '| System prompt + tools (not in transcript) | 20,000 | 10% |',
        '| System prompt | 0 | 0% |',
        '| Tool definitions | 0 | 0% |',
        '| Memory files | 2,000 | 1% |',
        '| Skills | 0 | 0% |',
        '| Knowledge base | 0 | 0% |',
        '| Cross-issue context | 0 | 0% |',
        '| Summary of earlier turns | 10,000 | 5% |',
        '| Recent turns (verbatim) | 108,000 | 54% |',
        '| Current prompt | 2,000 | 1% |',
        '| Free space (until compaction) | 9,200 | 5% |',
        '| Compaction buffer | 16,800 | 8% |',
        '| Reserved for the response | 32,000 | 16% |',
        '',
        '120 messages · 40 tool results · 1 compactions',
        '',
      ].join('\n'),
    );
  });

  it('names where the window came from and quotes the note when it is not a plain catalog hit', () => {
    const note =
      '"claude-opus-4-6" is not in the catalog; limits of claude-opus-4-1-20250805 assumed (set models["claude-opus-4-6"] in abridge.config.json to override)';
    const md = renderBreakdownMarkdown(
      snapshot(50_000, {
        anchored: false,
        model: {
          id: 'claude-opus-4-6',
          contextWindow: 200_000,
          maxOutputTokens: 32_000,
          family: 'claude',
          source: 'inferred',
          matched: 'claude-opus-4-1-20250805',
          note,
        },
      }),
    );
    expect(md).toContain(
      'claude-opus-4-6 · window 200,000 (inferred: claude-opus-4-1-20250805) · estimated (no usable usage report)  \n',
    );
    expect(md).toContain(`\n> ${note}\n`);
  });
});

describe('renderBreakdownText', () => {
  it('shows the pressure line, the header, non-empty components and the always-shown rows', () => {
    const text = renderBreakdownText(snapshot(142_000));
    const lines = text.split('\n');
    expect(lines[0]).toBe('Context ███████░░░ 71% · 142K/200K · warn');
    expect(lines[1]).toBe('claude-opus-4-1-20250805 · window 200,000 · anchored on the last reported usage');
    const labels = lines.filter((l) => /^\S.*\s{2}[\d,]+\s+\d+%/.test(l)).map((l) => l.split(/\s{2,}/)[0]);
    expect(labels).toEqual([
      'System prompt + tools (not in transcript)',
      'Memory files',
      'Summary of earlier turns',
      'Recent turns (verbatim)',
      'Current prompt',
      'Free space (until compaction)',
      'Compaction buffer',
      'Reserved for the response',
    ]);
    expect(text).toContain('Recent turns (verbatim)                    108,000   54%  ███████████░░░░░░░░░\n');
    expect(
      text.endsWith(
        '120 messages in context · 40 tool results · 1 compaction · as of entry 299 (line 300) of 300 · tokens estimated, calibrated on the session\n',
      ),
    ).toBe(true);
  });

  it('lists allocations with the conversation room and what flows to it', () => {
    const text = renderBreakdownText(
      snapshot(142_000, {
        allocations: {
          rows: [
            { key: 'summary', cap: 20_000, used: 10_000, unused: 10_000 },
            { key: 'response', cap: 32_000, used: 0, unused: 0 },
          ],
          conversationRoom: 144_000,
        },
      }),
    );
    expect(text).toContain('\nallocations (conversation room 144,000)\n');
    expect(text).toContain('\n  summary        cap 20,000  used 10,000  unused 10,000 → conversation\n');
    expect(text).toContain('\n  response       cap 32,000  used 0\n');
  });

  it('with color, the same text once the escapes are removed', () => {
    const s = snapshot(142_000);
    expect(strip(renderBreakdownText(s, { color: true }))).toBe(renderBreakdownText(s));
  });
});
