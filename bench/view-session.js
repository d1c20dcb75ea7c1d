// A deterministic pi (v3) coding-agent session of a given size, for the viewer's benchmark: turns of a user prompt,
// assistant tool calls (bash, read, edit, grep, an MCP tool) and their results of varied sizes, usage that grows with
// the context, and pi compaction entries whenever the prompt passes 160K tokens. Invented content; seeded PRNG.

function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  'const let function return import export interface type async await value result error config session token window budget compact summary message request response stream buffer index entry record parse write read file path module test assert expect mock client server handler router cache store query update delete insert select where order limit'.split(
    ' ',
  );
const TOOLS = [
  {
    name: 'bash',
    weight: 5,
    args: (r, n) => ({
      command: `cd /repo && npm test -- src/${pick(r, WORDS)}/${pick(r, WORDS)}.test.ts # step ${n}`,
    }),
  },
  { name: 'read', weight: 4, args: (r) => ({ path: `/repo/src/${pick(r, WORDS)}/${pick(r, WORDS)}.ts` }) },
  {
    name: 'edit',
    weight: 2,
    args: (r) => ({ path: `/repo/src/${pick(r, WORDS)}.ts`, oldText: line(r, 8), newText: line(r, 9) }),
  },
  { name: 'grep', weight: 2, args: (r) => ({ pattern: pick(r, WORDS), path: '/repo/src' }) },
  { name: 'mcp__docs__search', weight: 1, args: (r) => ({ query: `${pick(r, WORDS)} ${pick(r, WORDS)}` }) },
];

function pick(r, xs) {
  return xs[Math.floor(r() * xs.length)];
}
function line(r, words) {
  let s = '';
  for (let i = 0; i < words; i++) s += (i ? ' ' : '') + pick(r, WORDS);
  return s;
}
function body(r, chars) {
  const out = [];
  let n = 0;
  let k = 1;
  while (n < chars) {
    const l = `${String(k++).padStart(4)}  ${line(r, 4 + Math.floor(r() * 10))}${r() < 0.1 ? ` // ${Math.floor(r() * 1e6).toString(16)}` : ''}`;
    out.push(l);
    n += l.length + 1;
  }
  return out.join('\n');
}

/** JSONL text of a session of about `targetBytes`. */
export function generateSession(targetBytes, seed = 42) {
  const r = prng(seed);
  const lines = [];
  let bytes = 0;
  let t = Date.UTC(2026, 0, 5, 9, 0, 0);
  let id = 0;
  let parent = null;
  const nextId = () => (id++).toString(16).padStart(8, '0');
  const push = (rec) => {
    const s = JSON.stringify(rec);
    lines.push(s);
    bytes += s.length + 1;
  };
  const entry = (message) => {
    const e = {
      type: 'message',
      id: nextId(),
      parentId: parent,
      timestamp: new Date((t += 1500 + Math.floor(r() * 4000))).toISOString(),
      message: { ...message, timestamp: t },
    };
    parent = e.id;
    push(e);
    return e;
  };
  push({ type: 'session', version: 3, id: 'bench-view-0001', timestamp: new Date(t).toISOString(), cwd: '/repo' });
  const prefix = 6000;
  let context = 0; // tokens of the messages in context, as this generator prices them (chars / 3.6)
  const kept = []; // ids and sizes of entries in context, for the compaction's first kept entry
  let calls = 0;
  let turn = 0;
  const add = (e, chars) => {
    const tokens = Math.round(chars / 3.6) + 4;
    context += tokens;
    kept.push({ id: e.id, tokens });
  };
  while (bytes < targetBytes) {
    turn++;
    const prompt = `Turn ${turn}: ${line(r, 12 + Math.floor(r() * 30))}. Please fix the failing ${pick(r, WORDS)} test and keep the ${pick(r, WORDS)} API stable.`;
    add(entry({ role: 'user', content: [{ type: 'text', text: prompt }] }), prompt.length);
    const steps = 3 + Math.floor(r() * 10);
    for (let s = 0; s < steps && bytes < targetBytes; s++) {
      const weights = TOOLS.reduce((n, x) => n + x.weight, 0);
      let w = r() * weights;
      const tool = TOOLS.find((x) => (w -= x.weight) < 0) ?? TOOLS[0];
      const callId = `call_${(calls++).toString(36)}`;
      const args = tool.args(r, calls);
      const say = r() < 0.4 ? line(r, 10 + Math.floor(r() * 25)) : '';
      const content = [
        ...(say ? [{ type: 'text', text: say }] : []),
        { type: 'toolCall', id: callId, name: tool.name, arguments: args },
      ];
      const prompt = prefix + context;
      const a = entry({
        role: 'assistant',
        content,
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        usage: {
          input: 3 + Math.floor(r() * 20),
          output: 50 + Math.floor(r() * 400),
          cacheRead: prompt - 2000,
          cacheWrite: 1997 - Math.floor(r() * 20),
          totalTokens: prompt + 300,
        },
        stopReason: 'toolUse',
      });
      add(a, say.length + JSON.stringify(args).length + tool.name.length);
      // Most results are small; a few are huge (a test log, a big file).
      const size = r() < 0.06 ? 20_000 + Math.floor(r() * 60_000) : 200 + Math.floor(r() * 5000);
      const text = body(r, size);
      const res = entry({
        role: 'toolResult',
        toolCallId: callId,
        toolName: tool.name,
        content: [{ type: 'text', text }],
        isError: r() < 0.05,
      });
      add(res, text.length);
      if (prefix + context > 160_000) {
        // pi compacts: a summary, keeping the last ~20k tokens verbatim.
        let keepTokens = 0;
        let k = kept.length;
        while (k > 0 && keepTokens < 20_000) keepTokens += kept[--k].tokens;
        const summary = `## Goal\nFix the failing tests (turn ${turn}).\n\n## Progress\n${Array.from({ length: 12 }, () => `- ${line(r, 14)}`).join('\n')}\n\n## Files\n${Array.from({ length: 8 }, () => `- /repo/src/${pick(r, WORDS)}.ts`).join('\n')}`;
        const c = {
          type: 'compaction',
          id: nextId(),
          parentId: parent,
          timestamp: new Date((t += 20_000)).toISOString(),
          summary,
          firstKeptEntryId: kept[k].id,
          tokensBefore: prefix + context,
        };
        parent = c.id;
        push(c);
        const rest = kept.slice(k);
        kept.length = 0;
        kept.push(...rest);
        context = keepTokens + Math.round(summary.length / 3.6);
      }
    }
    const done = line(r, 20 + Math.floor(r() * 40));
    const prompt2 = prefix + context;
    add(
      entry({
        role: 'assistant',
        content: [{ type: 'text', text: done }],
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        usage: { input: 5, output: 200, cacheRead: prompt2 - 1000, cacheWrite: 995, totalTokens: prompt2 + 200 },
        stopReason: 'stop',
      }),
      done.length,
    );
  }
  return `${lines.join('\n')}\n`;
}
