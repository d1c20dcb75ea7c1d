import { partTextLength, promptTokens } from './parts.js';
import type { CompactionMarker, Entry, EntryKind, NativeCompaction, PartType, Problem, Role, Usage } from './types.js';

export interface CountAndChars {
  count: number;
  chars: number;
}

export interface SessionStatsResult {
  entries: { total: number; byKind: Partial<Record<EntryKind, number>> };
  messages: { total: number; sidechain: number; synthetic: number; byRole: Partial<Record<Role, CountAndChars>> };
  parts: { byType: Partial<Record<PartType, CountAndChars>> };
  tools: { calls: number; results: number; errors: number; byName: Record<string, number> };
  media: { images: number; files: number; bytes: number };
  /** Characters of opaque thinking signatures: stored, sent back to the provider, but not prompt text. */
  signatureChars: number;
  models: { id: string; provider?: string; messages: number }[];
  lastUsage: (Usage & { prompt: number; entry: number; line?: number; model?: string }) | null;
  compactions: (Omit<CompactionMarker, 'summary' | 'native' | 'view'> & {
    entry: number;
    line?: number;
    summaryChars: number;
    /** The provider that made it on its side (its item stays in the session, not in the statistics). */
    native?: { provider: NativeCompaction['provider'] };
  })[];
  firstTimestamp?: number;
  lastTimestamp?: number;
}

/**
 * Counts a session entry by entry, keeping only totals, so a transcript of any size can be summarized while it
 * streams past.
 */
export class SessionStats {
  private readonly r: SessionStatsResult = {
    entries: { total: 0, byKind: {} },
    messages: { total: 0, sidechain: 0, synthetic: 0, byRole: {} },
    parts: { byType: {} },
    // Keyed by tool names from the transcript: no prototype, so `__proto__` or `constructor` counts like any name.
    tools: { calls: 0, results: 0, errors: 0, byName: Object.create(null) as Record<string, number> },
    media: { images: 0, files: 0, bytes: 0 },
    signatureChars: 0,
    models: [],
    lastUsage: null,
    compactions: [],
  };
  private readonly models = new Map<string, { id: string; provider?: string; messages: number }>();
  private readonly markers: { marker: CompactionMarker; entry: number; line: number | undefined }[] = [];

  add(e: Entry): void {
    const r = this.r;
    r.entries.total++;
    r.entries.byKind[e.kind] = (r.entries.byKind[e.kind] ?? 0) + 1;
    const ts = e.timestamp ?? e.message?.timestamp;
    if (ts !== undefined) {
      if (r.firstTimestamp === undefined || ts < r.firstTimestamp) r.firstTimestamp = ts;
      if (r.lastTimestamp === undefined || ts > r.lastTimestamp) r.lastTimestamp = ts;
    }
    // Readers finish a marker (summary, archived range) after its entry streams past: read it at the end.
    if (e.compaction) this.markers.push({ marker: e.compaction, entry: e.index, line: e.line });
    const usage = e.message?.usage ?? e.usage;
    // All zeros is no report (a request that billed nothing, a rewritten copy of a message).
    if (usage && usage.input + usage.output + usage.cacheRead + usage.cacheWrite > 0) {
      const u: NonNullable<SessionStatsResult['lastUsage']> = { ...usage, prompt: promptTokens(usage), entry: e.index };
      if (e.line !== undefined) u.line = e.line;
      const model = e.message?.model ?? e.model?.id ?? this.r.lastUsage?.model;
      if (model) u.model = model;
      r.lastUsage = u;
    }
    const m = e.message;
    if (!m) return;
    r.messages.total++;
    if (e.sidechain) r.messages.sidechain++;
    if (m.synthetic) r.messages.synthetic++;
    let chars = 0;
    for (const p of m.parts) {
      const n = partTextLength(p);
      chars += n;
      const slot = (r.parts.byType[p.type] ??= { count: 0, chars: 0 });
      slot.count++;
      slot.chars += n;
      if (p.type === 'thinking' && p.signature) r.signatureChars += p.signature.length;
      if (p.type === 'tool-call') {
        r.tools.calls++;
        r.tools.byName[p.name] = (r.tools.byName[p.name] ?? 0) + 1;
      }
      if (p.type === 'tool-result') {
        r.tools.results++;
        if (p.isError) r.tools.errors++;
        for (const c of p.content) this.media(c);
      }
      this.media(p);
    }
    const role = (r.messages.byRole[m.role] ??= { count: 0, chars: 0 });
    role.count++;
    role.chars += chars;
    if (m.role === 'assistant' && m.model) {
      const key = `${m.provider ?? ''}/${m.model}`;
      let slot = this.models.get(key);
      if (!slot) {
        slot = m.provider ? { id: m.model, provider: m.provider, messages: 0 } : { id: m.model, messages: 0 };
        this.models.set(key, slot);
      }
      slot.messages++;
    }
  }

  private media(p: { type: string; byteSize?: number }): void {
    if (p.type === 'image') this.r.media.images++;
    else if (p.type === 'file') this.r.media.files++;
    else return;
    this.r.media.bytes += p.byteSize ?? 0;
  }

  result(): SessionStatsResult {
    this.r.compactions = this.markers.map(({ marker, entry, line }) => {
      const { summary, native, view: _view, ...rest } = marker as CompactionMarker & { view?: unknown };
      const c: SessionStatsResult['compactions'][number] = { ...rest, entry, summaryChars: summary.length };
      if (native) c.native = { provider: native.provider };
      if (line !== undefined) c.line = line;
      return c;
    });
    this.r.models = [...this.models.values()].sort((a, b) => b.messages - a.messages);
    return this.r;
  }
}

/** Problems counted by kind. */
export function problemCounts(problems: readonly Problem[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of problems) out[p.kind] = (out[p.kind] ?? 0) + 1;
  return out;
}
