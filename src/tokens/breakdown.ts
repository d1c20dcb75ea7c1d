import type { Entry, PartType, Role } from '../model/types.js';
import type { TokenCounter } from './counter.js';

export interface TokenBreakdownResult {
  /** 'estimate' (abridge's estimator) or the exact encoding used. */
  method: string;
  total: number;
  byRole: Partial<Record<Role, number>>;
  /** Message framing (role markers) is listed as its own line, `framing`. */
  byPartType: Partial<Record<PartType | 'framing', number>>;
  /** Messages of subagent sidechains, counted apart (they are not in the main context). */
  sidechain: number;
}

/** Adds up the tokens of a session's messages by role and part type, entry by entry (works while streaming). */
export class TokenBreakdown {
  private readonly r: TokenBreakdownResult;

  constructor(
    private readonly counter: TokenCounter,
    method = counter.exact ? 'exact' : 'estimate',
  ) {
    this.r = { method, total: 0, byRole: {}, byPartType: {}, sidechain: 0 };
  }

  add(e: Entry): void {
    const m = e.message;
    if (!m) return;
    if (e.sidechain) {
      this.r.sidechain += this.counter.message(m);
      return;
    }
    const framing = this.counter.messageFraming;
    let n = framing;
    this.r.byPartType.framing = (this.r.byPartType.framing ?? 0) + framing;
    for (const p of m.parts) {
      const t = this.counter.part(p);
      n += t;
      this.r.byPartType[p.type] = (this.r.byPartType[p.type] ?? 0) + t;
    }
    this.r.byRole[m.role] = (this.r.byRole[m.role] ?? 0) + n;
    this.r.total += n;
  }

  result(): TokenBreakdownResult {
    return this.r;
  }
}
