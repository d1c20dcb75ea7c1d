import { describe, expect, it } from 'vitest';
import { parseSession, readSession } from '../formats/read.js';
import { replaySession } from './replay.js';
import { compact } from '../compaction/compact.js';
import { corpusFile } from '../../test/support/corpus.js';
import { corpusAvailable } from '../../test/support/corpus.js';
import { abridgeCompactedTranscript, VIEW_CASES } from '../../test/support/view-fixtures.js';
import { buildViewData, type ViewData } from './view-data.js';
import { renderViewPage } from './view-page.js';

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;

function stackOf(d: ViewData, i: number): number {
  return d.points.tokens.reduce((n, col) => n + col[i]!, 0);
}

describe('buildViewData', () => {
  const base = { sessionId: 's', cwd: '/w', version: '2.0.0', userType: 'external', isSidechain: false };
  const usage = (read: number) => ({
    input_tokens: 10,
    cache_read_input_tokens: read,
    cache_creation_input_tokens: 0,
    output_tokens: 5,
  });
  const records = [
    {
      ...base,
      type: 'user',
      uuid: 'u1',
      parentUuid: null,
      timestamp: '2026-01-01T00:00:00Z',
      message: { role: 'user', content: 'look it up' },
    },
    {
      ...base,
      type: 'assistant',
      uuid: 'a1',
      parentUuid: 'u1',
      timestamp: '2026-01-01T00:00:01Z',
      message: {
        id: 'r1',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'tool_use', id: 't1', name: 'mcp__context7__docs', input: { id: 'react' } }],
        usage: usage(3000),
      },
    },
    {
      ...base,
      type: 'user',
      uuid: 'u2',
      parentUuid: 'a1',
      timestamp: '2026-01-01T00:00:02Z',
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'docs '.repeat(2000) }] },
    },
    {
      ...base,
      type: 'assistant',
      uuid: 'a2',
      parentUuid: 'u2',
      timestamp: '2026-01-01T00:00:03Z',
      message: {
        id: 'r2',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'text', text: 'done' }],
        usage: usage(5500),
      },
    },
  ];

  it('splits each request into categories that add up to the reported prompt, with per-tool results and MCP servers', () => {
    const { data, texts } = buildViewData(parseSession(jsonl(records)));
    expect(data.points.reported).toEqual([3010, 5510]);
    expect(data.points.entry).toEqual([1, 3]);
    for (let i = 0; i < 2; i++) expect(stackOf(data, i)).toBe(data.points.reported[i]);
    const k = data.categories.findIndex((c) => c.key === 'tool:mcp__context7__docs');
    expect(data.categories[k]).toMatchObject({ tool: 'mcp__context7__docs', mcpServer: 'context7' });
    // Before the first request nothing of the tool is in context; before the second its result is, and most of it.
    expect(data.points.tokens[k]).toHaveLength(2);
    expect(data.points.tokens[k]![0]).toBe(0);
    expect(data.points.tokens[k]![1]).toBeGreaterThan(1000);
    expect(data.points.results[k]).toEqual([0, 1]);
    expect(data.points.calls[k]).toEqual([0, 1]);
    expect(data.points.window[0]).toBe(200_000);
    expect(data.points.compact[0]).toBeLessThan(data.points.block[0]!);
    expect(data.records.map((r) => r.r)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(data.records[2]!.tools).toEqual(['mcp__context7__docs']);
    expect(texts[2]).toContain('[result of mcp__context7__docs]');
  });

  it('cuts long texts with a note and counts what it left out', () => {
    const { data, texts } = buildViewData(parseSession(jsonl(records)), { maxTextChars: 100 });
    expect(texts[2]).toMatch(
      /^\[result of mcp__context7__docs\]\ndocs docs[\s\S]{0,120}\n\n\[… 9,[0-9]{3} more characters not included in this page/,
    );
    expect(data.meta.truncatedChars).toBeGreaterThan(9000);
  });
});

(corpusAvailable() ? describe : describe.skip)('buildViewData on real transcripts', () => {
  it("pi: the predictions are replaySession's, and the compaction pi loads is there with its summary", async () => {
    const session = await readSession(VIEW_CASES.pi);
    const { data } = buildViewData(session);
    const replay = replaySession(session);
    const reported = data.points.reported
      .map((r, i) => ({ r, p: data.points.predicted[i], e: data.points.entry[i] }))
      .filter((x) => x.r !== null);
    expect(reported).toEqual(replay.map((r) => ({ r: r.reported, p: r.predicted, e: r.index })));
    for (let i = 0; i < data.points.entry.length; i++)
      expect(stackOf(data, i)).toBe(data.points.reported[i] ?? data.points.predicted[i]);
    // The file holds two compaction records, but the second shares line 1013 with a message: pi's loader skips a line
    // that does not parse as one JSON value, so pi resumes from the first one, and so does what abridge shows.
    const markers = session.entries.filter((e) => e.compaction);
    expect(markers.map((e) => e.sameLineAsPrevious === true)).toEqual([false, true]);
    expect(data.compactions.map((c) => c.source)).toEqual(['pi']);
    expect(data.compactions.map((c) => c.summary)).toEqual([markers[0]!.compaction!.summary]);
    // The first compaction: the context before it is far bigger than after it.
    const c1 = data.compactions[0]!;
    expect(c1.tokensBefore!).toBeGreaterThan(2 * c1.tokensAfter!);
    expect(c1.archivedMessages).toBeGreaterThan(100);
    expect(data.records.filter((r) => r.a === 1)).toHaveLength(c1.archivedMessages);
  });

  it('Claude Code and Codex: their own compactions, and tool results named through their calls', async () => {
    for (const [file, source] of [
      [VIEW_CASES.claudeCode, 'claude-code'],
      [VIEW_CASES.codex, 'codex'],
    ] as const) {
      const { data } = buildViewData(await readSession(file));
      expect(data.compactions.length).toBeGreaterThan(0);
      expect(data.compactions.every((c) => c.source === source && c.summary.length > 100)).toBe(true);
      expect(data.categories.filter((c) => c.tool).length).toBeGreaterThan(1);
      expect(data.categories.some((c) => c.tool === '(unknown tool)')).toBe(false);
      // Codex reports its window (model_context_window 121,600 in this rollout) from its first token count on; it is
      // already what is left for input, so no response reserve comes off it.
      if (source === 'codex') {
        expect(new Set(data.points.window.slice(1))).toEqual(new Set([121_600]));
        expect(data.points.reserve.at(-1)).toBe(0);
      } else expect(new Set(data.points.window).size).toBe(1); // the catalog's window of the model (Opus 4.6: 1M)
    }
  });

  it('a session compacted by abridge: strategies, archived messages and edited results with their refs', async () => {
    // The session as compacted in memory: written as pi, its edits become plain re-appended messages (what pi resumes).
    const { session } = await abridgeCompactedTranscript();
    const { data } = buildViewData(session);
    const c = data.compactions.find((x) => x.source === 'abridge')!;
    expect(c).toBeDefined();
    expect(c.strategies!.length).toBeGreaterThan(0);
    expect(c.tokensBefore!).toBeGreaterThan(c.tokensAfter!);
    expect(c.strategies).toContain('clear-tool-results');
    // Every cleared result names the ref to read it back with (edits that only emptied a call's inputs have none).
    const results = c.edits.filter((e) => e.preview.includes('read_result'));
    // (Oldest-first compaction archives most old results into the summary; those it cleared and kept say their ref.)
    expect(results.every((e) => e.ref !== undefined && e.preview.includes(e.ref) && e.after < e.before)).toBe(true);
    expect(c.archivedMessages).toBeGreaterThan(0);
    expect(data.records.filter((r) => r.a === c.number)).toHaveLength(c.archivedMessages);
    const edited = data.records.filter((r) => r.ed?.some((e) => e.n === c.number));
    expect(edited).toHaveLength(new Set(c.edits.map((e) => e.entry)).size);
  });
});

(corpusAvailable() ? describe : describe.skip)('buildViewData: an abridge compaction that only cleared results', () => {
  it('archives nothing: only the edited results are marked', async () => {
    const session = await readSession(corpusFile('pi', 'badlogic__pi-mono__large-session.jsonl'));
    const last = replaySession(session).at(-1)!.reported;
    const r = await compact(session, { target: Math.round(last * 0.8), strategies: ['clear-tool-results'] });
    expect(r.marker?.archived).toBeUndefined();
    const { data } = buildViewData(session);
    const c = data.compactions.at(-1)!;
    expect(c).toMatchObject({ source: 'abridge', archivedMessages: 0, strategies: ['clear-tool-results'] });
    expect(c.archived).toBeUndefined();
    expect(c.edits.length).toBeGreaterThan(0);
    expect(data.records.some((x) => x.a === c.number)).toBe(false);
  });
});

describe('renderViewPage', () => {
  it('is one self-contained document: no external script, style, image or link to fetch', () => {
    const { data, texts } = buildViewData(
      parseSession(
        jsonl([
          { type: 'session', version: 3, id: 's1', timestamp: '2026-01-01T00:00:00.000Z', cwd: '/w' },
          {
            type: 'message',
            id: 'a1',
            parentId: null,
            timestamp: '2026-01-01T00:00:01.000Z',
            message: {
              role: 'user',
              content: [{ type: 'text', text: '</script><script>alert(1)</script>' }],
              timestamp: 1,
            },
          },
        ]),
      ),
    );
    const html = renderViewPage(data, texts);
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    // The only address is in uPlot's license comment.
    expect(html.match(/https?:\/\/[^\s"')]+/g)).toEqual(['https://github.com/leeoniya/uPlot']);
    expect(html.match(/<\/script>/g)).toHaveLength(4);
    expect(html).toContain('uPlot');
  });
});
