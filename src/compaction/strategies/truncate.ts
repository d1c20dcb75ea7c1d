import { unitsOf } from '../turns.js';
import { isSummaryItem, type SummaryItem } from '../../model/view.js';
import { coverage, summaryMessage, summaryText } from './summarize.js';
import { changeable, StrategySkipped, type Strategy } from './strategy.js';

/**
 * The last resort: archives whole units right after the summary (or the oldest archivable ones) without summarizing
 * them, until the view fits; the summary says how many messages went unsummarized.
 */
export const truncateOldest: Strategy = {
  name: 'truncate',
  async apply(view, ctx) {
    let out = view.slice();
    let dropped = 0;
    while (ctx.size(out) > ctx.target) {
      const units = unitsOf(out);
      const summaryAt = out.findIndex((it) => isSummaryItem(it));
      // The next unit to go: right after the summary, or the first archivable one.
      const unit = units.find((u) => (summaryAt === -1 || u.start > summaryAt) && u.kind !== 'system' && out.slice(u.start, u.end).every((it) => it.entry !== undefined && changeable(it, ctx)));
      if (!unit) break;
      if (summaryAt !== -1 && unit.start !== summaryAt + 1) {
        // Only what touches the summary keeps the archived range in one piece.
        if (out.slice(summaryAt + 1, unit.start).length > 0) break;
      }
      const span = summaryAt === -1 ? out.slice(unit.start, unit.end) : out.slice(summaryAt, unit.end);
      dropped += unit.end - unit.start;
      const previous = summaryAt === -1 ? undefined : (out[summaryAt] as SummaryItem);
      const { base, earlier } = splitNote(previous ? summaryText(previous.message) : '');
      const note = `[${earlier + unit.end - unit.start} more messages were archived without a summary to fit the context; the full history is kept.]`;
      const item: SummaryItem = { message: summaryMessage(base ? `${base}\n${note}` : note), covers: coverage(span) };
      const start = summaryAt === -1 ? unit.start : summaryAt;
      out = [...out.slice(0, start), item, ...out.slice(unit.end)];
    }
    if (dropped === 0) throw new StrategySkipped('no archivable unit left (the rest is protected)');
    return out;
  },
};

const NOTE = /\n?\[(\d+) more messages were archived without a summary to fit the context; the full history is kept\.\]$/;

/** A summary without its truncation note, and how many messages the note counted (notes accumulate into one). */
function splitNote(text: string): { base: string; earlier: number } {
  const m = text.match(NOTE);
  return m ? { base: text.slice(0, m.index), earlier: Number(m[1]) } : { base: text, earlier: 0 };
}
