import { pathToFileURL } from 'node:url';
const lib = await import(pathToFileURL('/work/main/dist/index.js').href);
const s = await lib.readSession(process.argv[2]);
const v0 = lib.activeView(s);
const counter = new lib.TokenCounter({});
console.log('entries', s.entries.length, 'view', v0.length);
for (const x of v0.slice(-12)) console.log(x.entry, x.message.role, counter.message(x.message), x.covers?'SUMMARY':'' );
console.log(v0.slice(0,5).map(x=>[x.entry, x.message.role, counter.message(x.message), x.covers]));
