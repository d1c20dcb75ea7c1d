import { isSummary, unitsOf } from '../turns.js';
import { isSummaryItem, type SummaryItem, type ViewItem } from '../../model/view.js';
import { coverage, summaryMessage, summaryText } from './summarize.js';
import { changeable, StrategySkipped, type Strategy } from './strategy.js';

/**
 * The last resort: archives whole units without summarizing them, oldest first and wherever they are (any unit that
 * is not protected), until the view fits. Summaries — abridge's and the agent's own — are never archived this way:
 * they are the only record of what they replaced. The summary says how many messages went unsummarized; a unit next
 * to it joins its archived range, any other is hidden (the compaction record lists it).
 */
export const truncateOldest: Strategy = {
  name: 'truncate',
  async apply(view, ctx) {
    let out = view.slice();
    let dropped = 0;
    while (ctx.size(out) > ctx.target) {
      const units = unitsOf(out);
      const unit = units.find(
        (u) =>
          u.kind !== 'system' &&
          u.kind !== 'summary' &&
          out
            .slice(u.start, u.end)
            .every((it) => it.entry !== undefined && !isSummary(it.message) && changeable(it, ctx)),
      );
      if (!unit) break;
      const n = unit.end - unit.start;
      dropped += n;
      const summaryAt = out.findIndex((it) => isSummaryItem(it) && ownOrNew(it));
      if (summaryAt === -1) {
        // No summary of ours yet: the note stands where the unit was.
        const item: SummaryItem = {
          message: summaryMessage(note('', n)),
          covers: coverage(out.slice(unit.start, unit.end)),
        };
        out = [...out.slice(0, unit.start), item, ...out.slice(unit.end)];
        continue;
      }
      const previous = out[summaryAt] as SummaryItem;
      const adjacent = unit.start === summaryAt + 1 || unit.end === summaryAt;
      const covers = adjacent ? coverage([previous, ...out.slice(unit.start, unit.end)]) : previous.covers;
      const item: SummaryItem = { message: summaryMessage(note(summaryText(previous.message), n)), covers };
      const rest = out.map((it, i) => (i === summaryAt ? item : it));
      out = [...rest.slice(0, unit.start), ...rest.slice(unit.end)];
    }
    if (dropped === 0) throw new StrategySkipped('no archivable unit left (the rest is protected)');
    return out;
  },
};

/** abridge's summary (earlier or made by this chain); another agent's summary item is left as it is. */
function ownOrNew(it: ViewItem): boolean {
  const p = it.message.parts.find((x) => x.type === 'compaction');
  return p?.type === 'compaction' && p.marker.source === 'abridge';
}

const NOTE =
  /\n?\[(\d+) more messages were archived without a summary to fit the context; the full history is kept\.\]$/;

/** A summary with its truncation note counting `more` messages besides those it already counted. */
function note(text: string, more: number): string {
  const m = text.match(NOTE);
  const base = m ? text.slice(0, m.index) : text;
  const earlier = m ? Number(m[1]) : 0;
  const line = `[${earlier + more} more messages were archived without a summary to fit the context; the full history is kept.]`;
  return base ? `${base}\n${line}` : line;
}
