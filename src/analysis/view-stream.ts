/**
 * The viewer's data of a transcript file read as a stream: the session is never held whole. Each entry is read, given
 * to the page's builder (view-data.ts `ViewBuilder`: counted, redacted, its text gzipped), and then let go of its texts;
 * what stays per entry is its place in the tree (ids, parent, role, call ids) and what the page shows of it.
 *
 * The page shows the conversation's active branch, and which one that is a tree-shaped session (pi, Claude Code) says
 * only at its end. So the first pass builds the page as if every entry were on the branch — true of most sessions —
 * and checks at the end: when it was, that is the page (one pass). When it was not (a branch left behind, subagent
 * sidechains, records sharing a line), or when what the counter is set up from was not known in time (Codex's
 * truncation policy, found at the end of its rollout), the first pass gives way as soon as it knows — keeping only each
 * entry's place in the tree — and a second pass builds the page from the entries of the branch. A compaction's marker
 * is complete only at the end too: the first pass stops building at the first one, and the second takes up from there
 * (parsing the file again, building each entry once).
 */
import { conversationEntries } from '../model/branch.js';
import type { Entry, FormatId, Part, Session } from '../model/types.js';
import { type ReadOptions, type StreamOptions, type StreamResult, streamSession } from '../formats/read.js';
import { harnessPrefixTokens } from '../tokens/defaults.js';
import { modelAt } from '../tokens/replay.js';
import { AbridgeError } from '../errors.js';
import { ViewBuilder, type ViewData, type ViewDataOptions, type ViewSessionFacts } from './view-data.js';
import { type CompressedTexts, GzipTexts } from './view-page.js';

/** The page's data and its texts, compressed; and how many passes over the file it took. */
export interface StreamedViewData {
  data: ViewData;
  texts: CompressedTexts;
  passes: 1 | 2;
}

/** Entries read before the first one naming a model, at most, before the first pass gives way to a second. */
const MAX_BEFORE_MODEL = 1000;

/**
 * Entries read and not yet built, at most: readers complete an entry after handing it over when a later record says
 * more of it (Codex and Copilot CLI attach a response's usage and model when its report comes, a few records on; the
 * DeepSeek harness gives its system message the prompt of a later request header). An entry is built once this many
 * have come after it; one completed later still is caught at the end (the first pass then is not the page).
 */
const WINDOW = 64;

/**
 * Formats whose counter is set up from what their reader finds only at the end (Codex: its CLI version and truncation
 * policy): their first pass only reads the tree.
 */
const SET_UP_AT_THE_END = new Set<string>(['codex']);

/** Reads a transcript file twice at most, holding only what the page needs of it (see the top of this file). */
export async function buildViewDataStreamed(
  path: string,
  options: ViewDataOptions,
  read: ReadOptions = {},
): Promise<StreamedViewData> {
  const readOptions: StreamOptions = { ...read, keepSourceText: false };
  /** The parts lists `release` emptied: a list a reader replaced after that is the entry's last word (see WINDOW). */
  const released = new WeakSet<Part[]>();
  const release = (e: Entry) => releaseEntry(e, released);
  /** Every entry, with its texts let go of once built or read: the session's tree. */
  const skeleton: Entry[] = [];
  let format: FormatId | undefined;
  let sidechainMessages = 0;
  // The first pass: the page as if every entry were on the branch, while that can still be true.
  let hopeful = true;
  let builder: ViewBuilder | undefined;
  let texts: GzipTexts | undefined;
  let setUpAs: string | undefined;
  /** Read, not yet built (see WINDOW). */
  const queue: Entry[] = [];
  /** What each built entry's message said when it was built (see WINDOW): checked against what it says at the end. */
  const builtAs = new Map<number, ReturnType<typeof lateFields>>();
  /**
   * The first entry the first pass did not build, once it stopped at a compaction: a reader completes a compaction's
   * marker (what it archived, the first entry it kept) only once it has read the whole transcript (pi, Claude Code,
   * Codex and Qwen Code resolve them at the end); the second pass takes up from there, the markers complete.
   */
  let pausedAt: number | undefined;
  let lastLinked: string | undefined;
  const giveWay = () => {
    hopeful = false;
    builder = undefined;
    texts?.discard();
    texts = undefined;
    for (const e of queue) release(e);
    queue.length = 0;
    builtAs.clear();
  };
  const start = () => {
    const session = sessionOf(format!, skeleton, undefined);
    setUpAs = trackerSetup(session, skeleton);
    texts = new GzipTexts();
    builder = new ViewBuilder(session, skeleton, options, texts, release);
  };
  const build = (e: Entry) => {
    builtAs.set(e.index, lateFields(e));
    builder!.push(e);
  };
  const first = await streamSession(
    path,
    (e) => {
      skeleton.push(e);
      if (e.sidechain && e.message) sidechainMessages++;
      if (hopeful && leavesBranch(e, lastLinked)) giveWay();
      if (e.id !== undefined && e.parentId !== undefined) lastLinked = e.id;
      if (hopeful && pausedAt === undefined && e.compaction) {
        if (builder) {
          pausedAt = queue[0]?.index ?? e.index;
          for (const q of queue) release(q);
          queue.length = 0;
        } else giveWay();
      }
      if (!hopeful || pausedAt !== undefined) {
        release(e);
        return;
      }
      queue.push(e);
      if (!builder && namesModel(e)) start();
      if (builder) while (queue.length > WINDOW) build(queue.shift()!);
      else if (queue.length > MAX_BEFORE_MODEL) giveWay();
    },
    {
      ...readOptions,
      onFormat: (f) => {
        format = f;
        if (SET_UP_AT_THE_END.has(f)) giveWay();
      },
      pace: () => texts?.drained(),
    },
  );
  const session = sessionOf(first.format, skeleton, first.extra);
  const facts: ViewSessionFacts = {
    info: first.info,
    format: first.format,
    entries: first.entries,
    problems: first.problems.length,
    sidechainMessages,
  };
  if (hopeful) {
    // The reader is done with every entry: those waiting are built (with no entry naming a model, from here).
    if (!builder) start();
    for (const e of queue.splice(0)) build(e);
  }
  const branch = conversationEntries(session);
  const held =
    hopeful &&
    branch.length === skeleton.length &&
    trackerSetup(session, branch) === setUpAs &&
    [...builtAs].every(([i, was]) => sameLateFields(was, lateFields(skeleton[i]!)));
  builtAs.clear();
  if (held && builder && texts && pausedAt === undefined)
    return { data: builder.finish(facts), texts: await texts.finish(), passes: 1 };

  // The second pass: the rest of the session from where the first stopped, when all of it is the branch; else the
  // branch's entries from the start. Each is the first pass's entry (complete) given its texts again.
  let from = 0;
  let onBranch: Uint8Array | undefined;
  let b: ViewBuilder;
  let sink: GzipTexts;
  if (held && builder && texts) {
    b = builder;
    sink = texts;
    from = pausedAt!;
  } else {
    giveWay();
    onBranch = new Uint8Array(first.entries);
    for (const e of branch) onBranch[e.index] = 1;
    sink = new GzipTexts();
    b = new ViewBuilder(session, branch, options, sink, release);
  }
  branch.length = 0;
  // Built as in the first pass, WINDOW entries behind the reader, so that each is as complete as it was then.
  const rebuild = (e: Entry) => {
    const whole = skeleton[e.index];
    if (!whole || whole.kind !== e.kind) throw changed(path);
    if (!whole.compaction && whole.message && e.message && released.has(whole.message.parts))
      whole.message.parts = e.message.parts;
    b.push(whole);
  };
  let seen = 0;
  const again: StreamResult = await streamSession(
    path,
    (e) => {
      seen++;
      if (e.index < from || (onBranch && onBranch[e.index] !== 1)) return;
      queue.push(e);
      while (queue.length > WINDOW) rebuild(queue.shift()!);
    },
    { ...readOptions, pace: () => sink.drained() },
  );
  for (const e of queue.splice(0)) rebuild(e);
  if (again.entries !== first.entries || seen !== first.entries) throw changed(path);
  return { data: b.finish(facts), texts: await sink.finish(), passes: 2 };
}

function changed(path: string): AbridgeError {
  return new AbridgeError('INVALID_INPUT', `${path}: the transcript changed while it was read; run abridge view again`);
}

/** What a reader may complete on an entry after handing it over (see WINDOW). */
function lateFields(e: Entry): readonly unknown[] {
  const m = e.message;
  return [e.usage, m?.usage, m?.model, m?.provider, m?.responseId, m?.stopReason, m?.parts];
}

function sameLateFields(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.every((x, i) => x === b[i]);
}

function sessionOf(format: FormatId, entries: Entry[], extra: Record<string, unknown> | undefined): Session {
  const session: Session = { format, info: {}, entries, problems: [] } as unknown as Session;
  if (extra) session.extra = extra;
  return session;
}

/** The entry `trackerFor` takes the session's model from (its first such entry on the branch). */
function namesModel(e: Entry): boolean {
  return Boolean((e.message?.role === 'assistant' && e.message.model) || (e.kind === 'model-change' && e.model?.id));
}

/**
 * What the page's counter and predictions are set up from (tokens/replay.ts `trackerFor`): the format, the first model
 * of the branch and its provider, the harness prefix, and the reader's extra (Codex's truncation policy, a request
 * body's tools and model). The first pass is the page only when these were the same when it began as at the end.
 */
function trackerSetup(session: Session, branch: readonly Entry[]): string {
  const first = branch.find(namesModel);
  return JSON.stringify([
    session.format,
    first?.message?.model ?? first?.model?.id ?? modelAt(session, []) ?? null,
    first?.message?.provider ?? first?.model?.provider ?? null,
    harnessPrefixTokens(session),
    ...['truncationPolicy', 'cliVersion', 'harness', 'request'].map((k) => session.extra?.[k] ?? null),
  ]);
}

/**
 * An entry the branch may leave out (model/branch.ts `conversationEntries`): a subagent's, one sharing its line with
 * another record, one linked to another parent than the entry linked before it (a branch), or one outside the tree
 * once the session is one. Only a hint, to give way early: the end decides.
 */
function leavesBranch(e: Entry, lastLinked: string | undefined): boolean {
  if (e.sidechain || e.sameLineAsPrevious) return true;
  const linked = e.id !== undefined && e.parentId !== undefined;
  if (lastLinked === undefined) return false;
  if (!linked) return e.kind !== 'header';
  return e.parentId !== lastLinked && e.logicalParentId !== lastLinked;
}

/**
 * Lets go of an entry's texts once the builder is done with it, keeping its place in the tree (ids, role, response
 * and call ids) and its parts: the tracker counts them again at a compaction, and its counter remembers each part's
 * count by the part itself. A compaction entry is kept whole (the tracker reads its marker again).
 */
function releaseEntry(e: Entry, released: WeakSet<Part[]>): void {
  if (e.compaction) return;
  if (e.raw !== undefined) e.raw = undefined;
  if (e.rawText !== undefined) e.rawText = undefined;
  const m = e.message;
  if (!m) return;
  released.add(m.parts);
  for (const p of m.parts)
    switch (p.type) {
      case 'text':
        p.text = '';
        break;
      case 'thinking':
        p.text = '';
        if (p.signature !== undefined) p.signature = '';
        break;
      case 'tool-call':
        p.arguments = null;
        break;
      case 'tool-result':
        p.content = [];
        break;
      case 'image':
      case 'file':
        if ('data' in p && p.data !== undefined) p.data = '';
        break;
      case 'compaction':
        break;
    }
}
