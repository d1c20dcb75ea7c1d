import { pathToFileURL } from 'node:url';
const lib = await import(pathToFileURL('/work/main/dist/index.js').href);
const file = process.argv[2]; const strategies = process.argv[3]?.split(',');
const s = await lib.readSession(file);
const snap = lib.contextSnapshot(s); const fixed = snap.components.unrecorded; const target = fixed + Math.round((snap.used-fixed)*0.25);
const r = await lib.compact(s, { target, ...(strategies?{strategies}:{}) });
const v = lib.activeView(s);
console.log(r.strategiesRun, r.afterTokens, target, 'has1001', v.some(x=>x.entry===1001), 'kept', r.keptRecentTokens, r.keptLastSteps);
