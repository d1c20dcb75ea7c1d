import { it } from 'vitest';
import { activeView, isSummaryItem } from '../model/view.js';
import { compact } from './compact.js';
import { summaryText } from './strategies/summarize.js';
import { unitsOf } from './turns.js';
// @ts-ignore
import * as T from './compact.test.helpers.js';
it('dbg', async () => {
  for (const pct of [0.5, 0.3, 0.15]) {
    const s = T.workSession();
    const size = (await compact(s, { target: 1e15, strategies: [], prefixTokens: 0 })).beforeTokens;
    const v0 = activeView(s);
    console.log('size', size, 'units', unitsOf(v0).map(u => u.kind + (u.end - u.start)).join(' '));
    const r = await compact(s, { target: Math.floor(size * pct), prefixTokens: 0, minKeepLastSteps: 5, strategies: process.env.STRATS ? process.env.STRATS.split(',') as any : undefined });
    console.log(pct, JSON.stringify({ ...r, entry: undefined, marker: undefined }));
    for (const v of activeView(s)) console.log('  ', v.entry, v.edit, isSummaryItem(v) ? 'SUMMARY ' + JSON.stringify(v.covers) + ' ' + summaryText(v.message).length : JSON.stringify(v.message.parts).slice(0, 80));
  }
});
