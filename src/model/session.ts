import type { CompactionMarker, Entry, EntryDraft, FormatId, Problem, Session, SessionInfo, Usage } from './types.js';

/** Builds a Session from entries in source order, giving each its index. */
export class SessionBuilder {
  readonly entries: Entry[] = [];
  readonly problems: Problem[] = [];
  info: SessionInfo = {};
  extra: Record<string, unknown> | undefined;
  finalNewline: boolean | undefined;
  trailingBlankLines: number | undefined;

  constructor(readonly format: FormatId) {}

  /** Gives the draft its index in place, so a decoder holding the draft can later read where it landed. */
  add(draft: EntryDraft): Entry {
    const entry = draft as Entry;
    entry.index = this.entries.length;
    this.entries.push(entry);
    return entry;
  }

  build(): Session {
    const s: Session = { format: this.format, info: this.info, entries: this.entries, problems: this.problems };
    if (this.finalNewline !== undefined) s.finalNewline = this.finalNewline;
    if (this.trailingBlankLines) s.trailingBlankLines = this.trailingBlankLines;
    if (this.extra) s.extra = this.extra;
    return s;
  }
}

export function compactionsOf(session: Session): CompactionMarker[] {
  const out: CompactionMarker[] = [];
  for (const e of session.entries) if (e.compaction) out.push(e.compaction);
  return out;
}

/** The last provider-reported usage in the session (billing anything), with the entry that carried it. */
export function lastUsage(session: Session): { entry: Entry; usage: Usage; model?: string } | undefined {
  for (let i = session.entries.length - 1; i >= 0; i--) {
    const e = session.entries[i]!;
    const usage = e.message?.usage ?? e.usage;
    // All zeros is no report: a request that failed before billing, or a rewritten copy of a message (pi writer).
    if (usage && usage.input + usage.output + usage.cacheRead + usage.cacheWrite > 0) {
      const model = e.message?.model ?? e.model?.id;
      return model ? { entry: e, usage, model } : { entry: e, usage };
    }
  }
  return undefined;
}
