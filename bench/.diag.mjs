// scratch diagnostic (not committed)
import { pathToFileURL } from 'node:url';
import { extractItems, archivedMessages, retained, viewHaystack, recentTailVerbatim } from './retention.js';
const lib = await import(pathToFileURL('/work/main/dist/index.js').href);
const [file, frac='0.25'] = process.argv.slice(2);
const first = await lib.readSession(file);
const snap = lib.contextSnapshot(first);
const fixed = snap.components.unrecorded, visible = snap.used - fixed;
const target = fixed + Math.round(visible * Number(frac));
const s = await lib.readSession(file);
const v0 = lib.activeView(s);
const r = await lib.compact(s, { target });
const v = lib.activeView(s);
console.log({fixed, visible, target, before: r.beforeTokens, after: r.afterTokens, reached: r.reachedTarget, kept: r.keptRecentTokens, steps: r.keptLastSteps, prot: r.protectedTokens, run: r.strategiesRun, notes: r.summaryNotes});
console.log('parts', r.protectedParts);
const items = extractItems(archivedMessages(v0, v)); const hay = viewHaystack(v);
for (const k of ['paths','commands','errors']) { const miss = items[k].filter(x => !hay.includes(k==='commands'?x.slice(0,60):k==='errors'?x.slice(0,100):x)); console.log(k, items[k].length, 'missing', miss.length, miss.slice(0,8)); }
console.log('tail', recentTailVerbatim(v0, v));
const summ = v.filter(x => x.message.parts.some(p => p.type==='compaction'));
for (const x of summ) { const t = x.message.parts.find(p=>p.type==='compaction').marker.summary; console.log('--- summary chars', t.length); if (process.env.SHOW) console.log(t); }
console.log('view msgs', v0.length, '->', v.length);
