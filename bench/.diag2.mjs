import { pathToFileURL } from 'node:url';
const lib = await import(pathToFileURL('/work/main/dist/index.js').href);
const [file, frac='0.25'] = process.argv.slice(2);
const s = await lib.readSession(file);
const snap = lib.contextSnapshot(s);
const fixed = snap.components.unrecorded, visible = snap.used - fixed;
const target = fixed + Math.round(visible * Number(frac));
const v0 = lib.activeView(s);
const counter = new lib.TokenCounter({});
const r = await lib.compact(s, { target });
const v = lib.activeView(s);
const pos = new Map(v0.map((x,i)=>[x.entry,i]));
const tot = v0.reduce((n,x)=>n+counter.message(x.message),0);
let acc=0; const cum = v0.map(x=> (acc+=counter.message(x.message)));
for (const x of v) { const i = pos.get(x.entry); const kinds = x.message.parts.map(p=>p.type[0]+(p.type==='tool-result'&&p.isError?'!':'')).join(''); console.log(String(x.entry).padStart(4), x.message.role.padEnd(9), kinds.padEnd(6), String(counter.message(x.message)).padStart(6), i===undefined?'summary': (x.edit?('EDIT:'+x.edit+' was '+counter.message(v0[i].message)):'') , i!==undefined? (100*cum[i]/tot).toFixed(0)+'%':''); }
