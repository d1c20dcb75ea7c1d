import type { ViewItem } from '../../model/view.js';
import {
  changeable,
  errorEvidence,
  resultText,
  storedAs,
  StrategySkipped,
  withResults,
  type Strategy,
} from './strategy.js';

/**
 * Moves results larger than a threshold (default 4,096 bytes) to the ResultStore, leaving a reference: the tool, the
 * size, the first characters, and the `ref_id` the agent passes to `read_result`.
 */
export const offloadResults: Strategy = {
  name: 'offload',
  async apply(view, ctx) {
    const { thresholdBytes, previewChars } = ctx.options.offload;
    const out = view.slice();
    let moved = 0;
    for (let i = 0; i < out.length; i++) {
      const item = out[i]!;
      if (item.message.role !== 'tool' || item.edit !== undefined || !changeable(item, ctx)) continue;
      const big = item.message.parts.filter(
        (p) => p.type === 'tool-result' && Buffer.byteLength(resultText(p)) > thresholdBytes,
      );
      if (big.length === 0) continue;
      const refs = new Map<string, { refId: string; bytes: number; lines: number }>();
      for (const p of big) {
        if (p.type !== 'tool-result') continue;
        const s = await ctx.store.put(resultText(p), storedAs(ctx, item.entry, { tool: p.toolName, callId: p.callId }));
        refs.set(p.callId, s);
      }
      const message = withResults(item.message, (p) => {
        const r = refs.get(p.callId);
        if (!r) return p;
        const text = resultText(p);
        const preview = text.slice(0, previewChars).trimEnd();
        const errors = errorEvidence(p);
        return {
          ...p,
          content: [
            {
              type: 'text',
              text: `[tool result offloaded: ${p.toolName ?? 'tool'} output, ${r.bytes.toLocaleString('en-US')} bytes, ${r.lines.toLocaleString('en-US')} lines.${previewChars > 0 ? ` It began:\n${preview}${text.length > previewChars ? '…' : ''}` : ''}\n${errors ? `${errors}\n` : ''}Read it with read_result {"ref_id": "${r.refId}", "offset": 0, "limit": 200} (offset and limit count lines).]`,
            },
          ],
        };
      });
      out[i] = { entry: item.entry, message, edit: 'offloaded' } as ViewItem;
      moved++;
      if (ctx.size(out) <= ctx.target) break;
    }
    if (moved === 0) throw new StrategySkipped(`no changeable tool result over ${thresholdBytes} bytes`);
    return out;
  },
};
