import { styleText } from 'node:util';
import type { ContextBreakdown } from './breakdown.js';
import type { ComponentId, Level } from './types.js';

/** 142_300 → "142K", 1_048_576 → "1.0M". */
export function compactNumber(n: number): string {
  if (n >= 999_500) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 10_000) return `${Math.round(n / 1000)}K`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}K`;
  return String(Math.round(n));
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (x: number) => `${Math.round(x * 100)}%`;

function bar(share: number, width = 10): string {
  const filled = Math.max(0, Math.min(width, Math.round(share * width)));
  return '█'.repeat(filled) + '░'.repeat(width - filled);
}

function paint(level: Level, s: string, color: boolean): string {
  if (!color) return s;
  return level === 'ok' ? styleText('green', s) : level === 'warn' ? styleText('yellow', s) : styleText('red', s);
}

/** `Context ███████░░░ 71% · 142K/200K · warn` — share of the whole window, and the level. */
export function pressureLine(s: ContextBreakdown, options: { color?: boolean } = {}): string {
  const share = s.used / s.window;
  return `Context ${paint(s.level, bar(share), options.color ?? false)} ${pct(share)} · ${compactNumber(s.used)}/${compactNumber(s.window)} · ${paint(s.level, s.level, options.color ?? false)}`;
}

/**
 * A footer for an issue or PR comment written by an agent: nothing below 30% of the window, the pressure line above
 * it, and advice from 60% and 80% on.
 */
export function markdownFooter(s: ContextBreakdown): string {
  // Decided on the percentage shown, so the advice never disagrees with the number beside it.
  const share = Math.round((s.used / s.window) * 100) / 100;
  if (share < 0.3) return '';
  const lines = ['', '---', `<sub>${pressureLine(s)}</sub>`];
  if (share >= 0.8) {
    lines.push(
      `<sub>⚠️ The context is nearly full (${pct(share)}). Older tool output will be cleared and earlier turns summarized at ${pct(s.thresholds.compact)} of the usable window; start a new session for unrelated work.</sub>`,
    );
  } else if (share >= 0.6) {
    lines.push(
      `<sub>The context is filling up (${pct(share)}). Keep requests focused; large outputs are better written to files than pasted.</sub>`,
    );
  }
  return lines.join('\n');
}

const LABELS: Record<ComponentId | 'unrecorded', string> = {
  unrecorded: 'System prompt + tools (not in transcript)',
  system: 'System prompt',
  memory: 'Memory files',
  skills: 'Skills',
  tools: 'Tool definitions',
  knowledgeBase: 'Knowledge base',
  crossIssue: 'Cross-issue context',
  summary: 'Summary of earlier turns',
  recent: 'Recent turns (verbatim)',
  prompt: 'Current prompt',
};

export interface BreakdownRow {
  key: string;
  label: string;
  tokens: number;
  /** Share of the whole window. */
  share: number;
}

/** The `/context` rows: every component, then reserved response, compaction buffer and free space. */
export function breakdownRows(s: ContextBreakdown): BreakdownRow[] {
  const rows: BreakdownRow[] = [];
  const order: (ComponentId | 'unrecorded')[] = [
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
  ];
  for (const k of order)
    rows.push({ key: k, label: LABELS[k], tokens: s.components[k], share: s.components[k] / s.window });
  const untilBuffer = Math.max(0, s.marks.compact - s.used);
  rows.push({
    key: 'free',
    label: 'Free space (until compaction)',
    tokens: untilBuffer,
    share: untilBuffer / s.window,
  });
  rows.push({
    key: 'compactionBuffer',
    label: 'Compaction buffer',
    tokens: Math.min(s.compactionBuffer, s.effective - Math.max(s.used, s.marks.compact)),
    share: 0,
  });
  rows[rows.length - 1]!.tokens = Math.max(0, rows[rows.length - 1]!.tokens);
  rows[rows.length - 1]!.share = rows[rows.length - 1]!.tokens / s.window;
  rows.push({ key: 'reserve', label: 'Reserved for the response', tokens: s.reserve, share: s.reserve / s.window });
  return rows;
}

function header(s: ContextBreakdown): string[] {
  const m = s.model;
  const source = m.source === 'catalog' ? '' : ` (${m.source}${m.matched ? `: ${m.matched}` : ''})`;
  return [
    `${m.id} · window ${int(s.window)}${source} · ${s.anchored ? 'anchored on the last reported usage' : 'estimated (no usable usage report)'}`,
    // One share per state: the pressure line above gives it of the window; the levels are marks in tokens here.
    `used ${int(s.used)} · usable ${int(s.effective)} (window − ${int(s.reserve)} reserved) · warn ${int(s.marks.warn)} · compact ${int(s.marks.compact)} → ${int(s.marks.target)} · block ${int(s.marks.block)}`,
  ];
}

/** `/context` as terminal text (colored when `color`). */
export function renderBreakdownText(s: ContextBreakdown, options: { color?: boolean; title?: string } = {}): string {
  const color = options.color ?? false;
  const dim = (x: string) => (color ? styleText('dim', x) : x);
  const out: string[] = [];
  out.push(pressureLine(s, { color }));
  for (const h of header(s)) out.push(dim(h));
  if (s.model.note) out.push(color ? styleText('yellow', s.model.note) : s.model.note);
  out.push('');
  const rows = breakdownRows(s);
  const w = Math.max(...rows.map((r) => r.label.length));
  const tw = Math.max(...rows.map((r) => int(r.tokens).length));
  for (const r of rows) {
    if (r.tokens === 0 && !['free', 'reserve', 'recent', 'prompt'].includes(r.key)) continue;
    const line = `${r.label.padEnd(w)}  ${int(r.tokens).padStart(tw)}  ${pct(r.share).padStart(4)}  ${bar(r.share, 20)}`;
    out.push(['free', 'compactionBuffer', 'reserve'].includes(r.key) ? dim(line) : line);
  }
  if (s.tools.mcp || s.tools.deferred)
    out.push(
      dim(
        `tools: ${int(s.tools.builtIn)} built-in · ${int(s.tools.mcp)} MCP · ${int(s.tools.deferred)} deferred (not in the prompt)`,
      ),
    );
  if (s.allocations) {
    out.push('');
    out.push(`allocations (conversation room ${int(s.allocations.conversationRoom)})`);
    for (const a of s.allocations.rows)
      out.push(
        `  ${a.key.padEnd(14)} cap ${a.cap === undefined ? '—' : int(a.cap)}  used ${int(a.used)}${a.unused ? dim(`  unused ${int(a.unused)} → conversation`) : ''}`,
      );
  }
  out.push('');
  out.push(
    dim(
      `${int(s.counts.messages)} messages in context · ${int(s.counts.toolResults)} tool results · ${s.counts.compactions} compaction${s.counts.compactions === 1 ? '' : 's'} · as of entry ${s.asOf.entry}${s.asOf.line !== undefined ? ` (line ${s.asOf.line})` : ''} of ${s.asOf.ofEntries} · tokens ${s.counting === 'estimate' ? 'estimated, calibrated on the session' : 'counted exactly'}`,
    ),
  );
  return `${out.join('\n')}\n`;
}

/** `/context` as a Markdown table. */
export function renderBreakdownMarkdown(s: ContextBreakdown): string {
  const out: string[] = [`**${pressureLine(s)}**`, '', ...header(s).map((h) => `${h}  `)];
  if (s.model.note) out.push(`> ${s.model.note}`);
  out.push('', '| component | tokens | % of window |', '|---|--:|--:|');
  for (const r of breakdownRows(s)) out.push(`| ${r.label} | ${int(r.tokens)} | ${pct(r.share)} |`);
  out.push(
    '',
    `${int(s.counts.messages)} messages · ${int(s.counts.toolResults)} tool results · ${s.counts.compactions} compactions`,
  );
  return `${out.join('\n')}\n`;
}
