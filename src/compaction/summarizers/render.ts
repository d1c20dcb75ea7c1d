import type { TokenCounter } from '../../tokens/counter.js';
import { clean, clip, commandLine, oneLine, statusWords, type FileChange } from '../records.js';
import { CHECKLIST, type HandOff } from './handoff.js';
import { isHarnessText } from '../turns.js';

/**
 * The hand-off as text a model reads, within a token budget. Every statement is an item of a section with renderings
 * from the richest to the barest; items are packed by priority — what the next step needs most (the people's words,
 * where the work stands, the plan, open errors) first, then as many of the rest as fit at their barest, then the most
 * valuable made richer — so that a tight budget keeps a few lines of everything that matters rather than all of one
 * list and none of another.
 */

export const TITLE = '## Summary of earlier conversation (abridge, extractive)';

/**
 * The heading of the last section of a summary when compaction appends the files the archived work leaves in play
 * (in-play.ts `filesBack`): their text is no item, and its parse stops there (each compaction brings back its own).
 */
export const FILES_HEADING = '### Files as they stood at the end of the archived span';

export const SECTIONS = {
  task: 'Primary request',
  focus: 'Focus of this summary (as asked)',
  requests: 'User messages (verbatim)',
  latest: 'The latest user message (verbatim)',
  foreign: 'Earlier summary',
  state: 'Where the work stands',
  plan: 'Plan',
  errors: 'Errors',
  modified: 'Files modified',
  commands: 'Commands run',
  read: 'Files read',
  findings: "The agent's findings and answers",
  facts: 'Key facts',
  mentioned: 'Files named in messages',
  events: 'Harness messages',
} as const;

export type SectionKey = keyof typeof SECTIONS;
const ORDER = Object.keys(SECTIONS) as SectionKey[];
const HEADINGS: Partial<Record<SectionKey, string>> = {
  commands: 'Commands run (status as recorded)',
};

/** How much each further item of a list ranks below the one before it (see pack). */
const LIST_DISCOUNT = 0.25;
/** The share of the budget items may fill at their barest before any is made richer (see pack). */
const BREADTH = 0.9;
/** How much an item ranks lower per doubling of its cost beyond a few tokens (see pack). */
const COST_WEIGHT = 0.5;

/** Sections the next step cannot do without: packed first. */
const ESSENTIAL = new Set<SectionKey>(['task', 'focus', 'requests', 'latest', 'foreign', 'state', 'plan']);

export interface Item {
  section: SectionKey;
  /** What identifies it across summaries (a path, a command): a newer item of the same key replaces an older one. */
  key: string;
  /** Where it goes within its section (older first). */
  order: number;
  priority: number;
  /** Renderings, richest first; each may span lines. */
  levels: string[];
  /** Carried from an earlier summary. */
  inherited?: boolean;
}

export function heading(key: SectionKey): string {
  return `### ${HEADINGS[key] ?? SECTIONS[key]}`;
}

const code = (s: string) => (s.includes('`') ? `\`\` ${s} \`\`` : `\`${s}\``);

/** Distinct renderings, richest first. */
function levels(...xs: (string | undefined)[]): string[] {
  const out: string[] = [];
  for (const x of xs) if (x !== undefined && x.trim() && !out.includes(x)) out.push(x);
  return out;
}

/** The changes of a file as diff lines, newest change first, at most `n` lines of at most `chars` characters. */
function diffLines(changes: readonly FileChange[], n: number, chars: number): string[] {
  const out: string[] = [];
  for (let i = changes.length - 1; i >= 0 && out.length < n; i--) {
    const c = changes[i]!;
    if (c.how === 'write' || c.how === 'create' || c.how === 'append') continue;
    const pairs = [...c.removed.map((l) => `- ${l.trim()}`), ...c.added.map((l) => `+ ${l.trim()}`)];
    for (const l of pairs) {
      if (out.length >= n) break;
      // A line of punctuation (`}`, `"""`, `</div>`) says nothing of the change.
      if ((l.slice(2).match(/[A-Za-z0-9]/g) ?? []).length >= 3) out.push(clip(l, chars));
    }
  }
  return out;
}

function howChanged(f: HandOff['files'][number]): string {
  const counts = new Map<string, number>();
  for (const c of f.changes) {
    const word =
      c.how === 'write'
        ? `written${c.lines !== undefined ? ` (${c.lines} lines)` : ''}`
        : c.how === 'create'
          ? `created${c.lines ? ` (${c.lines} lines)` : ''}`
          : c.how === 'delete'
            ? 'deleted'
            : c.how === 'move'
              ? 'moved'
              : c.how === 'append'
                ? 'appended to'
                : 'edited';
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts].map(([w, k]) => (k > 1 ? `${w} ×${k}` : w)).join(', ');
}

function defsText(defs: readonly string[], n: number): string {
  return defs
    .slice(0, n)
    .map((d) => code(clip(d, 100)))
    .join('; ');
}

/** The items of a hand-off. `boost` raises items that match what the person asked this summary to focus on. */
export function itemsOf(h: HandOff, o: { task?: string; instructions?: string; laterRequestKept?: boolean }): Item[] {
  const items: Item[] = [];
  const end = Math.max(1, h.end);
  const recency = (at: number) => 2 * Math.min(1, Math.max(0, at / end));
  const add = (section: SectionKey, key: string, order: number, priority: number, ls: string[]) => {
    if (ls.length > 0) items.push({ section, key, order, priority, levels: ls });
  };
  // The primary request: quoted whole when it is archived here (it gave way to reach the target), else pointed to.
  const same = (a: string, b: string) => oneLine(clean(a)) === oneLine(clean(b));
  // A harness's text (a slash command, a notification) is never the primary request.
  const task = o.task !== undefined && !isHarnessText(o.task) ? o.task : undefined;
  o = { ...o, ...(task === undefined ? { task: undefined } : {}) };
  const archivedTask = o.task !== undefined && h.requests.some((r) => same(r.text, o.task!));
  if (o.task && archivedTask) add('task', 'task', 0, 10.5, quoted(o.task));
  else if (o.task) add('task', 'task', 0, 9, [`(kept at the start of the conversation) ${clip(oneLine(o.task), 160)}`]);
  if (o.instructions?.trim()) add('focus', 'focus', 0, 11, [clip(oneLine(o.instructions), 1000)]);
  h.requests.forEach((r, k) => {
    if (o.task && same(r.text, o.task)) return;
    // The latest request is what the next step answers: above every other item (unless a newer one stays in view).
    // Whole, it is quoted as written, in a fence of its own (byte for byte); cut, it is a list entry like the others.
    const newest = k === h.requests.length - 1 && !o.laterRequestKept;
    const key = `request:${oneLine(r.text).slice(0, 80)}`;
    if (newest && r.text.length <= 20_000)
      items.push({
        section: 'latest',
        key,
        order: r.at,
        priority: 12,
        levels: [fenced(r.text), ...quoted(r.text).slice(1)],
      });
    else add('requests', key, r.at, newest ? 12 : 10 + recency(r.at), quoted(r.text));
  });
  // Where the work stands: the next step (from the plan or the latest request), an open blocker, the last actions.
  const plan = h.plan?.items ?? [];
  // A checklist in the agent's words older than the latest request is not what it works through now (a plan tool is
  // kept up to date by the agent; its items stand).
  const staleChecklist =
    h.plan?.source === CHECKLIST && h.requests.length > 0 && h.requests[h.requests.length - 1]!.at > h.plan.at;
  const doing = staleChecklist ? undefined : plan.find((p) => p.status === 'doing');
  const pending = staleChecklist ? undefined : plan.find((p) => p.status === 'pending');
  const latest = h.requests[h.requests.length - 1];
  const planName = h.plan?.source === CHECKLIST ? "the agent's checklist" : 'the plan';
  // A request newer than the plan's last writing, not yet answered, comes before the plan's items.
  const newerRequest =
    latest !== undefined && latest.answer === undefined && !o.laterRequestKept && latest.at > (h.plan?.at ?? -1);
  const next = newerRequest
    ? `Next step: go on with the latest request ("${clip(oneLine(latest.text), 100)}")`
    : doing
      ? `Next step: continue "${doing.text}" (in progress in ${planName})`
      : pending
        ? `Next step: "${pending.text}" (the first pending item of ${planName})`
        : latest && latest.answer === undefined && !o.laterRequestKept
          ? `Next step: go on with the latest request ("${clip(oneLine(latest.text), 100)}")`
          : undefined;
  if (next) add('state', 'next', 1e9, 9.6, [next]);
  // The newest failure, and whether a later call resolved it: what the next step most likely deals with.
  const newestError = h.errors[h.errors.length - 1];
  if (newestError) {
    const said =
      newestError.lines.length > 1
        ? `${newestError.lines[0]} … ${newestError.lines[newestError.lines.length - 1]}`
        : newestError.lines[0];
    const what = `${newestError.what}${newestError.status ? ` (${newestError.status})` : ''}${said ? `: ${said}` : ''}`;
    add(
      'state',
      'blocker',
      1e9 - 1,
      newestError.resolved === undefined ? 9.4 : 8.8,
      levels(
        newestError.resolved === undefined
          ? `Unresolved, the latest failure: ${what}`
          : `The latest failure: ${what} → ${newestError.resolved}`,
      ),
    );
  }
  if (h.lastActions.length > 0)
    add(
      'state',
      'actions',
      1e9 - 2,
      8.6,
      levels(
        `Its last actions: ${clip(h.lastActions.join('; '), 600)}`,
        `Its last actions: ${clip(h.lastActions.slice(-2).join('; '), 240)}`,
      ),
    );
  if (h.lastWords)
    add(
      'state',
      'words',
      1e9 - 3,
      8,
      levels(
        `The agent's last words here: ${clip(oneLine(h.lastWords), 600)}`,
        `The agent's last words here: ${clip(oneLine(h.lastWords), 240)}`,
        `The agent's last words here: ${clip(oneLine(h.lastWords), 120)}`,
      ),
    );
  // A plan the agent keeps with a tool is what it works through; a checklist in its words may be its plan or may be
  // content (an audit's findings), and ranks lower.
  const planTool = h.plan !== undefined && h.plan.source !== CHECKLIST;
  plan.forEach((p, k) => {
    const mark = p.status === 'done' ? '[x]' : p.status === 'doing' ? '[~]' : p.status === 'cancelled' ? '[-]' : '[ ]';
    const priority =
      (planTool ? 0 : -3) +
      (p.status === 'doing' ? 9.5 : p.status === 'pending' ? 9 : 6 + k / Math.max(1, plan.length));
    add('plan', `plan:${k}`, k, priority, levels(`${mark} ${p.text}`, `${mark} ${clip(p.text, 100)}`));
  });
  for (const e of h.errors) {
    // The newest is said under where the work stands.
    if (e === newestError) continue;
    const head = `${e.resolved === undefined ? 'unresolved' : 'resolved'}: ${e.what}${e.status ? ` (${e.status})` : ''}`;
    const tail = e.resolved !== undefined ? ` → ${e.resolved}` : '';
    add(
      'errors',
      `error:${e.what}`,
      e.at,
      (e.resolved === undefined ? 8 : 4) + recency(e.at),
      levels(
        `${head}${e.lines.length ? `:\n${e.lines.join('\n')}` : ''}${tail}`,
        `${head}${e.lines[0] ? `: ${clip(e.lines[0], 160)}` : ''}${tail}`,
        `${head}${tail}`,
      ),
    );
  }
  for (const f of h.files) {
    if (f.changes.length === 0) continue;
    const header = `${f.path} — ${howChanged(f)}`;
    const wrote = f.changes.some((c) => c.how === 'write' || c.how === 'create');
    const rich = [
      ...diffLines(f.changes, 12, 140),
      ...(wrote && f.defs.length ? [`defines ${defsText(f.defs, 8)}`] : []),
    ];
    const mid = [
      ...diffLines(f.changes, 4, 100),
      ...(wrote && f.defs.length ? [`defines ${defsText(f.defs, 3)}`] : []),
    ];
    add(
      'modified',
      `file:${f.path}`,
      f.first,
      7 + recency(f.last),
      levels(
        rich.length ? `${header}\n${rich.join('\n')}` : header,
        mid.length ? `${header}\n${mid.join('\n')}` : header,
        header,
      ),
    );
  }
  for (const c of h.commands) {
    const status = statusWords(c.outcome);
    const runs = c.runs > 1 ? ` ×${c.runs}` : '';
    const said = c.outcome.failed
      ? c.failure[0]
        ? `: ${c.failure[0]}`
        : ''
      : c.printedErrors[0]
        ? ` — printed: ${c.printedErrors[0]}`
        : c.printed
          ? ` — printed: ${c.printed}`
          : '';
    const st = status ? ` → ${status}` : '';
    const line = commandLine(c.command);
    // At its barest a command keeps its opening, and its status only when it failed.
    add(
      'commands',
      `command:${oneLine(c.command)}`,
      c.first,
      (c.outcome.failed ? 6 : 5.5) + recency(c.last),
      levels(
        `${code(clip(line, 240))}${runs}${st}${clip(said, 200)}`,
        `${code(clip(line, 120))}${runs}${st}`,
        `${code(clip(line, 60))}${c.outcome.failed ? st : ''}`,
      ),
    );
  }
  for (const f of h.files) {
    if (f.changes.length > 0 || f.reads === 0) continue;
    const header = `${f.path} (read${f.reads > 1 ? ` ×${f.reads}` : ''})`;
    add(
      'read',
      `file:${f.path}`,
      f.first,
      4 + recency(f.last),
      levels(
        f.defs.length ? `${header}: defines ${defsText(f.defs, 10)}` : header,
        f.defs.length ? `${header}: defines ${defsText(f.defs, 3)}` : header,
        f.path,
      ),
    );
  }
  for (const x of h.findings)
    add(
      'findings',
      `finding:${oneLine(x.text).slice(0, 80)}`,
      x.at,
      (x.answer ? 5.5 : 4) + recency(x.at),
      levels(clip(oneLine(x.text), 600), clip(oneLine(x.text), 240), clip(oneLine(x.text), 120)),
    );
  // Facts said in one line are one item: the values, then the line once.
  const byLine = new Map<string, HandOff['facts']>();
  for (const x of h.facts) byLine.set(x.context, [...(byLine.get(x.context) ?? []), x]);
  for (const [context, xs] of byLine) {
    const values = xs.map((x) => code(x.value)).join(', ');
    const at = Math.max(...xs.map((x) => x.at));
    const alone = xs.length === 1 && context === xs[0]!.value;
    add(
      'facts',
      `fact:${xs.map((x) => x.value).join(',')}`,
      at,
      (xs.some((x) => x.person) ? 4.5 : 3) + recency(at),
      levels(alone ? values : `${values} — ${clip(context, 200)}`, alone ? values : `${values} — ${clip(context, 80)}`),
    );
  }
  // Files only named: for an agent that edits by writing (Aider, a chat) they are all the files there are.
  const viaTools = h.files.some((f) => f.reads > 0) || h.commands.length > 0;
  for (const m of h.mentioned)
    add('mentioned', `file:${m.path}`, m.at, (viaTools ? (m.person ? 4.5 : 3.5) : 5.5) + recency(m.at), [m.path]);
  h.events.forEach((e, k) =>
    add('events', `event:${e}`, k, 2 + k / Math.max(1, h.events.length), levels(clip(e, 300), clip(e, 100))),
  );
  const focus = o.instructions ? focusWords(o.instructions) : [];
  if (focus.length > 0)
    for (const it of items)
      if (it.section !== 'focus' && focus.some((w) => it.levels[0]!.toLowerCase().includes(w))) it.priority += 3;
  return items;
}

/** The words of a person's instructions for a summary worth matching: names, paths, and words of 4+ letters. */
function focusWords(instructions: string): string[] {
  const stop = new Set([
    'keep',
    'focus',
    'summary',
    'with',
    'that',
    'this',
    'what',
    'from',
    'about',
    'only',
    'please',
    'everything',
    'should',
    'must',
    'important',
    'details',
    'detail',
    'the',
    'and',
  ]);
  return [...new Set(instructions.toLowerCase().match(/[\w./-]{4,}/g) ?? [])].filter((w) => !stop.has(w));
}

/** A person's words, richest first: whole, then cut; at the least its first 200 characters whole (which it was). */
function quoted(text: string): string[] {
  return levels(
    clip(text, 20_000),
    clip(text, 4000),
    clip(text, 1000),
    clip(oneLine(text), 300),
    clip(oneLine(text), 201),
  );
}

/** A text inside a fence longer than any run of backticks it holds: quoted byte for byte. */
function fenced(text: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}text\n${text}\n${fence}`;
}

/** One item as a list entry. */
function entry(text: string): string {
  return `- ${text.replace(/\n/g, '\n  ')}`;
}

export function render(header: string[], chosen: ReadonlyMap<Item, number>): string {
  const out = [...header];
  // The chosen items by section, in the order chosen (one pass: a summary may hold thousands of items).
  const bySection = new Map<SectionKey, [Item, number][]>();
  for (const pair of chosen) {
    const list = bySection.get(pair[0].section);
    if (list) list.push(pair);
    else bySection.set(pair[0].section, [pair]);
  }
  for (const key of ORDER) {
    const its = bySection.get(key)?.sort((a, b) => a[0].order - b[0].order) ?? [];
    if (its.length === 0) continue;
    out.push('', heading(key));
    for (const [it, level] of its) {
      const text = it.levels[level]!;
      if (key === 'foreign') out.push(...text.split('\n').map((l) => (l ? `> ${l}` : '>')));
      else if (key === 'latest' && level === 0) out.push(text);
      else out.push(entry(text));
    }
  }
  return out.join('\n');
}

/**
 * The items that fit `maxTokens`, each at a level: the most needed first at their richest within a share of the
 * budget, then the rest at their barest by priority, then the most valuable made richer, then more at their barest.
 */
export function pack(header: string[], items: Item[], maxTokens: number, counter: TokenCounter): string {
  const cost = new Map<string, number>();
  const tokens = (s: string) => {
    let n = cost.get(s);
    if (n === undefined) {
      n = counter.text(s) + 1;
      cost.set(s, n);
    }
    return n;
  };
  const headerCost = counter.text(header.join('\n'));
  const budget = maxTokens - headerCost;
  const chosen = new Map<Item, number>();
  const sections = new Set<SectionKey>();
  let used = 0;
  const sectionCost = (it: Item) => (sections.has(it.section) ? 0 : tokens(heading(it.section)) + 1);
  // Per item and level, within this packing (an item's cost is asked again at each step that weighs it).
  const levelCosts = new Map<Item, number[]>();
  const itemCost = (it: Item, level: number) => {
    let costs = levelCosts.get(it);
    if (!costs) levelCosts.set(it, (costs = []));
    return (costs[level] ??= tokens(entry(it.levels[level]!)));
  };
  const take = (it: Item, level: number, limit: number) => {
    const extra = sectionCost(it) + itemCost(it, level) - (chosen.has(it) ? itemCost(it, chosen.get(it)!) : 0);
    if (used + extra > limit) return false;
    used += extra;
    chosen.set(it, level);
    sections.add(it.section);
    return true;
  };
  // More of one kind is worth less than the first of another: the k-th item of a list ranks a little lower, so that
  // lists give way together (a tight budget keeps some files, some commands, some errors, not all of one and none of
  // the next). The people's words and where the work stands are not discounted.
  const barest = (it: Item) => it.levels.length - 1;
  const rankInSection = new Map<Item, number>();
  const bySection = new Map<SectionKey, Item[]>();
  for (const it of items) bySection.set(it.section, [...(bySection.get(it.section) ?? []), it]);
  for (const [key, list] of bySection) {
    if (ESSENTIAL.has(key)) continue;
    list.sort((a, b) => b.priority - a.priority || b.order - a.order).forEach((it, k) => rankInSection.set(it, k));
  }
  // And a long item ranks a little below a short one of the same worth: a path or a command's opening in a handful
  // of tokens, a paragraph in fifty (the barest rendering is what the item costs when the budget is tight).
  const weight = new Map<Item, number>();
  for (const it of items) weight.set(it, COST_WEIGHT * Math.log2(Math.max(8, itemCost(it, barest(it))) / 8));
  const rank = (it: Item) => it.priority - LIST_DISCOUNT * (rankInSection.get(it) ?? 0) - weight.get(it)!;
  const byPriority = [...items].sort((a, b) => rank(b) - rank(a) || b.order - a.order);
  // 1. What the next step cannot do without — the people's words, where the work stands, the plan, open errors, an
  //    earlier summary — at their barest (the newest request, which the next step answers, at its richest).
  for (const it of byPriority) {
    if (it.priority >= 12) {
      for (let l = 0; l < it.levels.length; l++) if (take(it, l, budget)) break;
      continue;
    }
    if ((ESSENTIAL.has(it.section) && it.priority >= 8) || (it.section === 'errors' && it.priority >= 8))
      take(it, barest(it), budget);
  }
  // 2. Everything else at its barest, by priority, within nine tenths of the budget.
  for (const it of byPriority) if (!chosen.has(it)) take(it, barest(it), budget * BREADTH);
  // The essential items left out so far, at their barest, with what is left.
  for (const it of byPriority) if (!chosen.has(it) && ESSENTIAL.has(it.section)) take(it, barest(it), budget);
  // 3. Richer, one level at a time in rounds by priority: the budget goes to depth across items, not to one list.
  for (let changed = true; changed; ) {
    changed = false;
    for (const it of byPriority) {
      const at = chosen.get(it);
      if (at !== undefined && at > 0 && take(it, at - 1, budget)) changed = true;
    }
  }
  // 4. More at their barest with what is left.
  for (const it of byPriority) if (!chosen.has(it)) take(it, barest(it), budget);
  // The sum of the parts is an estimate of the whole: the least valuable give way (barest first) while it is over. What
  // did not fit is counted in a last line, so that the reader knows there is more in the archive.
  const withNote = () => {
    const body = render(header, chosen);
    const note = omittedNote(items, chosen);
    return note ? `${body}\n\n${note}` : body;
  };
  // Items give way in batches that cover the overage by their own costs, the whole rendered and counted again after
  // each batch (once per item made the summary's cost grow with the square of what the history had named).
  let text = withNote();
  let whole = counter.text(text);
  if (whole > maxTokens) {
    const leastFirst = [...chosen.keys()].sort((a, b) => rank(a) - rank(b));
    let k = 0;
    while (whole > maxTokens && k < leastFirst.length) {
      const over = whole - maxTokens;
      for (let freed = 0; freed < over && k < leastFirst.length; ) {
        const it = leastFirst[k]!;
        const level = chosen.get(it)!;
        if (level < barest(it)) {
          freed += itemCost(it, level) - itemCost(it, barest(it));
          chosen.set(it, barest(it));
        } else {
          freed += itemCost(it, level);
          chosen.delete(it);
          k++;
        }
      }
      text = withNote();
      whole = counter.text(text);
    }
  }
  if (whole > maxTokens) text = render(header, chosen);
  return text;
}

const NOUNS: Partial<Record<SectionKey, [string, string]>> = {
  requests: ['message of the person', 'messages of the person'],
  plan: ['plan item', 'plan items'],
  errors: ['error', 'errors'],
  modified: ['file modified', 'files modified'],
  commands: ['command', 'commands'],
  read: ['file read', 'files read'],
  findings: ['finding', 'findings'],
  facts: ['fact', 'facts'],
  mentioned: ['file named', 'files named'],
  events: ['harness message', 'harness messages'],
};

/** `(Not listed for room: 12 files read, 30 commands.)` — what the packing left out, by kind; empty when nothing. */
function omittedNote(items: readonly Item[], chosen: ReadonlyMap<Item, number>): string {
  const left = new Map<SectionKey, number>();
  for (const it of items)
    if (!chosen.has(it) && NOUNS[it.section]) left.set(it.section, (left.get(it.section) ?? 0) + 1);
  if (left.size === 0) return '';
  const parts = ORDER.filter((k) => left.has(k)).map((k) => {
    const n = left.get(k)!;
    const [one, many] = NOUNS[k]!;
    return `${n} ${n === 1 ? one : many}`;
  });
  return `(Not listed for room: ${parts.join(', ')}; the archive holds them all.)`;
}

/** What an earlier summary of ours holds, section by section, as items to carry forward. */
export interface ParsedSummary {
  archivedMessages: number;
  items: Item[];
  /** Another agent's summary this one quoted. */
  foreign?: string;
}

const BASE: Record<SectionKey, number> = {
  task: 9,
  focus: 3,
  requests: 10,
  latest: 10,
  foreign: 8.5,
  state: 0,
  plan: 7,
  errors: 5,
  modified: 7,
  commands: 4.5,
  read: 3.5,
  findings: 4.5,
  facts: 3.5,
  mentioned: 2,
  events: 1.5,
};

/** Reads a summary this module wrote back into its items; undefined for any other text. */
export function parseSummary(text: string): ParsedSummary | undefined {
  if (!text.startsWith(TITLE)) return undefined;
  const archivedMessages = Number(/^(\d+) earlier messages were archived here/m.exec(text)?.[1] ?? 0);
  const byHeading = new Map<string, SectionKey>(ORDER.map((k) => [heading(k).slice(4), k]));
  // Summaries of earlier versions named some sections otherwise: their items still carry.
  const legacy: Record<string, SectionKey> = {
    'Harness messages (slash commands, their output, interruptions)': 'events',
    'Plan ([x] done, [~] in progress, [ ] pending)': 'plan',
    'Commands run (exit status as the harness recorded it; failures marked)': 'commands',
    'Errors (failed calls, and whether a later call resolved them)': 'errors',
    'Current state': 'state',
    'Errors and how they were handled': 'errors',
    'Commands run (exit status; failing first, then most recent)': 'commands',
    'Other error lines': 'errors',
    Decisions: 'findings',
    Numbers: 'findings',
    'Pending tasks': 'plan',
    'Next step': 'state',
    'Files mentioned': 'mentioned',
    'Files named (not opened)': 'mentioned',
  };
  const items: Item[] = [];
  const foreign: string[] = [];
  let section: SectionKey | undefined;
  let current: string[] | undefined;
  const flush = () => {
    if (!section || !current) return;
    let body = current.join('\n');
    current = undefined;
    // Where the work stood is the newer span's to say; the latest failure it named is carried as an error.
    const failure = /^(Unresolved, the latest failure|The latest failure): /.exec(body);
    if (section === 'state' && failure) {
      body = `${failure[1]!.startsWith('Unresolved') ? 'unresolved' : 'resolved'}: ${body.slice(failure[0].length)}`;
      items.push({
        section: 'errors',
        key: `errors:${body.slice(0, 80)}`,
        order: -1e6 + items.length,
        priority: BASE.errors,
        levels: levels(body, body.split('\n')[0]),
        inherited: true,
      });
      return;
    }
    if (section === 'state' || section === 'focus') return;
    // The latest message of an earlier span is one of the people's messages now.
    if (section === 'latest') {
      items.push({
        section: 'requests',
        key: `requests:${body.slice(0, 80)}`,
        order: -1e6 + items.length,
        priority: BASE.requests,
        levels: levels(body, clip(oneLine(body), 201)),
        inherited: true,
      });
      return;
    }
    const first = body.split('\n')[0]!;
    const key =
      section === 'modified' || section === 'read'
        ? `file:${first.split(/ — | \(read/)[0]}`
        : section === 'commands'
          ? `command:${/^``? ?(.*?) ?``?(?: ×\d+)?(?: → |$)/.exec(first)?.[1] ?? first}`
          : `${section}:${first.slice(0, 80)}`;
    items.push({
      section,
      key,
      order: -1e6 + items.length,
      priority: BASE[section],
      levels: levels(body, first !== body ? first : undefined),
      inherited: true,
    });
  };
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    if (fence === undefined && line === FILES_HEADING) break;
    // Inside the latest message's fence every line is its text (a `### ` in it is the person's, not a section).
    if (fence !== undefined) {
      if (line === fence) {
        fence = undefined;
        flush();
      } else current!.push(line);
      continue;
    }
    if (section === 'latest' && /^`{3,}text$/.test(line)) {
      flush();
      fence = line.slice(0, line.length - 4);
      current = [];
      continue;
    }
    if (line.startsWith('### ')) {
      flush();
      const title = line.slice(4).trim();
      section = byHeading.get(title) ?? legacy[title];
      continue;
    }
    if (section === 'foreign') {
      if (line.startsWith('> ')) foreign.push(line.slice(2));
      else if (line === '>') foreign.push('');
      continue;
    }
    if (!section) continue;
    if (line.startsWith('- ')) {
      flush();
      current = [line.slice(2)];
    } else if (line.startsWith('  ') && current) current.push(line.slice(2));
  }
  flush();
  const earlier = foreign.join('\n').trim();
  return earlier ? { archivedMessages, items, foreign: earlier } : { archivedMessages, items };
}

/** Inherited items beside new ones: a new item of the same key replaces the old one (except files modified, which
 * accumulate: the old changes stay listed beside the new). */
export function mergeItems(inherited: readonly Item[], fresh: readonly Item[]): Item[] {
  const freshKeys = new Set(fresh.map((i) => `${i.section}\u0000${i.key}`));
  const planFresh = fresh.some((i) => i.section === 'plan');
  const kept = inherited.filter((i) => {
    if (i.section === 'plan') return !planFresh;
    if (i.section === 'modified') return true;
    return !freshKeys.has(`${i.section}\u0000${i.key}`);
  });
  return [...kept, ...fresh];
}
