/**
 * Reference compaction policies for `bench/compact.js`: what other agents do, applied to the same transcripts and
 * budgets as abridge, so that abridge's figures can be read against them. Each takes the view before compaction and a
 * budget in counted tokens (the bench's own counter) and returns the view the model would see.
 *
 *   - tail:        tail truncation — the longest suffix of whole turns that fits; nothing else.
 *   - pi-like:     keep the last 20,000 tokens (pi's keepRecentTokens), cut at a message that is not a tool result,
 *                  summarize everything before it extractively (pi's summary is capped near 13K tokens).
 *   - claude-like: summarize everything (one summary, capped at 8,000 tokens), then re-attach the 5 most recently
 *                  read files (at most 5,000 tokens each), as Claude Code's /compact does.
 *
 * These are simplifications of the agents' behavior, not their code. Summaries use abridge's extractive summarizer,
 * so the comparison is about what each policy selects, not about summary wording.
 */

const PI_KEEP_RECENT = 20_000;
const PI_SUMMARY_CAP = 13_107;
const CC_SUMMARY_CAP = 8_000;
const CC_FILES = 5;
const CC_FILE_CAP = 5_000;

const READ_TOOL = /^(read|read_file|view|cat|open|str_replace_based_edit_tool|Read|NotebookRead)$/i;
const PATH_KEYS = ['file_path', 'path', 'filePath', 'file', 'notebook_path'];

function summaryItem(text) {
  return {
    message: {
      role: 'user',
      synthetic: true,
      parts: [{ type: 'compaction', marker: { number: 0, summary: text, source: 'reference' } }],
    },
  };
}

/** View positions where a turn may begin (not a tool result). */
function boundaries(view) {
  const out = [];
  view.forEach((v, i) => {
    if (v.message.role !== 'tool') out.push(i);
  });
  return out;
}

export function tailPolicy(view, budget, size) {
  const starts = boundaries(view);
  for (const s of starts) {
    const tail = view.slice(s);
    if (size(tail) <= budget) return tail;
  }
  return [];
}

async function summarize(lib, counter, messages, maxTokens) {
  if (messages.length === 0) return undefined;
  const text = await new lib.ExtractiveSummarizer().summarize({ messages, maxTokens, counter });
  return text.trim() ? text : undefined;
}

export async function piPolicy(lib, counter, view, size, scale) {
  // keepRecentTokens is in provider tokens: `scale` turns counted tokens into them.
  let acc = 0;
  let cut = 0;
  for (let i = view.length - 1; i >= 0; i--) {
    acc += counter.message(view[i].message) * scale;
    if (acc >= PI_KEEP_RECENT) {
      cut = i;
      break;
    }
  }
  while (cut < view.length && view[cut].message.role === 'tool') cut++;
  if (cut === 0) return view.slice();
  const text = await summarize(
    lib,
    counter,
    view.slice(0, cut).map((v) => v.message),
    Math.round(PI_SUMMARY_CAP / scale),
  );
  return [...(text ? [summaryItem(text)] : []), ...view.slice(cut)];
}

export async function claudeLikePolicy(lib, counter, view, size, scale) {
  const text = await summarize(
    lib,
    counter,
    view.map((v) => v.message),
    Math.round(CC_SUMMARY_CAP / scale),
  );
  const out = text ? [summaryItem(text)] : [];
  // The most recently read files, newest first, each at most CC_FILE_CAP tokens.
  const results = new Map();
  for (const v of view) for (const p of v.message.parts) if (p.type === 'tool-result') results.set(p.callId, p);
  const seen = new Set();
  const files = [];
  for (let i = view.length - 1; i >= 0 && files.length < CC_FILES; i--) {
    for (const p of view[i].message.parts) {
      if (p.type !== 'tool-call' || !READ_TOOL.test(p.name) || !p.arguments || typeof p.arguments !== 'object')
        continue;
      const path = PATH_KEYS.map((k) => p.arguments[k]).find((x) => typeof x === 'string');
      const r = results.get(p.id);
      if (!path || seen.has(path) || !r || r.isError) continue;
      seen.add(path);
      let body = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
      const cap = Math.round(CC_FILE_CAP / scale);
      if (counter.text(body) > cap)
        body = `${body.slice(0, Math.floor((body.length * cap) / counter.text(body)))}\n[… truncated]`;
      files.push({
        message: {
          role: 'user',
          synthetic: true,
          parts: [
            {
              type: 'text',
              text: `Called the Read tool with the following input: {"file_path":"${path}"}\nResult of calling the Read tool:\n${body}`,
            },
          ],
        },
      });
      if (files.length >= CC_FILES) break;
    }
  }
  return [...out, ...files.reverse()];
}
