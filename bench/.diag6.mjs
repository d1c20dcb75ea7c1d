import { pathToFileURL } from 'node:url';
const lib = await import(pathToFileURL('/work/main/dist/index.js').href);
const { extractEvidence } = await import(pathToFileURL('/work/main/dist/compaction/summarizers/extract.js').href);
const s = await lib.readSession(process.argv[2]);
const v0 = lib.activeView(s);
const ev = extractEvidence(v0.map(x=>x.message));
console.log('commands', ev.commands.length, ev.commands.slice(0,5));
const calls = v0.flatMap(x=>x.message.parts.filter(p=>p.type==='tool-call'));
console.log('calls', calls.length, calls.slice(0,3).map(c=>JSON.stringify(c).slice(0,300)));
