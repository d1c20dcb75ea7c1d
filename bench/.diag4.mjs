import { pathToFileURL } from 'node:url';
const lib = await import(pathToFileURL('/work/main/dist/index.js').href);
const s = await lib.readSession(process.argv[2]);
const e = s.entries.find(x=>x.index===1001); console.log(JSON.stringify(e.message).slice(0,600), e.message.synthetic);
