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
 * entry's place in the tree — and a second pass builds the page from the entries of the branch.
 */
import { conversationEntries } from '../model/branch.js';
import type { Entry, FormatId, Session } from '../model/types.js';
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

/** Reads a transcript file twice at most, holding only what the page needs of it (see the top of this file). */
export async function buildViewDataStreamed(
  path: string,
  options: ViewDataOptions,
  read: ReadOptions = {},
): Promise<StreamedViewData> {
  const readOptions: StreamOptions = { ...read, keepSourceText: false };
  /** Every entry, with its texts let go of once read: the session's tree. */
  const skeleton: Entry[] = [];
  let format: FormatId | undefined;
  let sidechainMessages = 0;
  // The first pass: the page as if every entry were on the branch, while that can still be true.
  let hopeful = true;
  let builder: ViewBuilder | undefined;
  let texts: GzipTexts | undefined;
  let setUpAs: string | undefined;
  const waiting: Entry[] = [];
  let lastLinked: string | undefined;
  const giveWay = () => {
    hopeful = false;
    builder = undefined;
    texts?.discard();
    texts = undefined;
    for (const e of waiting) release(e);
    waiting.length = 0;
  };
  const start = () => {
    const session = sessionOf(format!, skeleton, undefined);
    setUpAs = trackerSetup(session, skeleton);
    texts = new GzipTexts();
    builder = new ViewBuilder(session, skeleton, options, texts, release);
    for (const e of waiting) builder.push(e);
    waiting.length = 0;
  };
  const first = await streamSession(
    path,
    (e) => {
      skeleton.push(e);
      if (e.sidechain && e.message) sidechainMessages++;
      if (hopeful && leavesBranch(e, lastLinked)) giveWay();
      if (e.id !== undefined && e.parentId !== undefined) lastLinked = e.id;
      if (!hopeful) {
        release(e);
        return;
      }
      if (builder) builder.push(e);
      else {
        waiting.push(e);
        if (namesModel(e)) start();
        else if (waiting.length > MAX_BEFORE_MODEL) giveWay();
      }
    },
    { ...readOptions, onFormat: (f) => (format = f), pace: () => texts?.drained() },
  );
  const session = sessionOf(first.format, skeleton, first.extra);
  const branch = conversationEntries(session);
  const facts: ViewSessionFacts = {
    info: first.info,
    format: first.format,
    entries: first.entries,
    problems: first.problems.length,
    sidechainMessages,
  };
  if (hopeful && !builder) {
    // No entry named a model: the few read wait still.
    format = first.format;
    start();
  }
  if (hopeful && builder && texts && branch.length === skeleton.length && trackerSetup(session, branch) === setUpAs)
    return { data: builder.finish(facts), texts: await texts.finish(), passes: 1 };
  giveWay();

  // The second pass: the entries of the branch only.
  const onBranch = new Uint8Array(first.entries);
  for (const e of branch) onBranch[e.index] = 1;
  const second = new GzipTexts();
  const b = new ViewBuilder(session, branch, options, second, release);
  // The tree is no longer needed: what the builder keeps of an entry is its own.
  skeleton.length = 0;
  branch.length = 0;
  let seen = 0;
  const again: StreamResult = await streamSession(
    path,
    (e) => {
      seen++;
      if (onBranch[e.index] === 1) b.push(e);
    },
    { ...readOptions, pace: () => second.drained() },
  );
  if (again.entries !== first.entries || seen !== first.entries)
    throw new AbridgeError(
      'INVALID_INPUT',
      `${path}: the transcript changed while it was read (${first.entries} entries, then ${again.entries}); run abridge view again`,
    );
  return { data: b.finish(facts), texts: await second.finish(), passes: 2 };
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
 * body's tools). The first pass is the page only when these were the same when it began as at the end.
 */
function trackerSetup(session: Session, branch: readonly Entry[]): string {
  const first = branch.find(namesModel);
  return JSON.stringify([
    session.format,
    first?.message?.model ?? first?.model?.id ?? modelAt(session, []) ?? null,
    first?.message?.provider ?? first?.model?.provider ?? null,
    harnessPrefixTokens(session),
    session.extra ?? null,
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
function release(e: Entry): void {
  if (e.compaction) return;
  if (e.raw !== undefined) e.raw = undefined;
  if (e.rawText !== undefined) e.rawText = undefined;
  const m = e.message;
  if (!m) return;
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
