import { EventEmitter } from 'node:events';
import type { ContextBudget } from './budget.js';
import type { Level } from './types.js';

export interface PressureEvent {
  used: number;
  fill: number;
  level: Level;
  effective: number;
}

export interface BudgetEvents {
  /** The context crossed the warn level. Once per crossing; re-armed after a compaction. */
  'context-warning': [PressureEvent];
  /** The context crossed the compact level: compaction should run now (aiming at `target` tokens). */
  'auto-compacting': [PressureEvent & { target: number }];
  'compaction-complete': [{ before: number; after: number; strategies: string[] }];
  /** The context crossed the block level: another request would risk overflowing the window. */
  'context-blocked': [PressureEvent];
}

/**
 * Watches the context size turn by turn and says so when it crosses a level — once per crossing, not every turn.
 * A compaction re-arms the levels it brought the context under; otherwise a level re-arms only once the fill has
 * dropped `rearmMargin` below it, so a context hovering at a threshold does not repeat itself.
 */
export class BudgetMonitor extends EventEmitter<BudgetEvents> {
  private warned = false;
  private compacting = false;
  private blocked = false;
  private last: Level = 'ok';

  constructor(
    private budget: ContextBudget,
    private readonly rearmMargin = 0.05,
  ) {
    super();
  }

  /** Switches to another budget (the model changed); levels are re-evaluated on the next update. */
  setBudget(budget: ContextBudget): void {
    this.budget = budget;
  }

  get level(): Level {
    return this.last;
  }

  /**
   * Reports the current context size; emits what this crossing calls for and returns the level. With `compacting`
   * (the caller compacts right away), the block level is judged after the compaction, not before.
   */
  update(used: number, options: { compacting?: boolean } = {}): Level {
    const b = this.budget;
    const level = b.level(used);
    const event: PressureEvent = { used, fill: b.fill(used), level, effective: b.effective };
    const rank = RANK[level];
    const t = b.thresholds;
    if (event.fill < t.block - this.rearmMargin) this.blocked = false;
    if (event.fill < t.compact - this.rearmMargin) this.compacting = false;
    if (event.fill < t.warn - this.rearmMargin) this.warned = false;
    if (rank >= RANK.warn && !this.warned) {
      this.warned = true;
      this.emit('context-warning', event);
    }
    if (rank >= RANK.compact && !this.compacting) {
      this.compacting = true;
      this.emit('auto-compacting', { ...event, target: b.marks.target });
    }
    if (rank >= RANK.block && !this.blocked && !options.compacting) {
      this.blocked = true;
      this.emit('context-blocked', event);
    }
    this.last = level;
    return level;
  }

  /** A compaction finished: say so, and re-arm the levels it brought the context back under. */
  compactionComplete(result: { before: number; after: number; strategies: string[] }): void {
    const fill = this.budget.fill(result.after);
    const t = this.budget.thresholds;
    if (fill < t.warn) this.warned = false;
    if (fill < t.compact) this.compacting = false;
    if (fill < t.block) this.blocked = false;
    this.emit('compaction-complete', result);
    this.update(result.after);
  }
}

const RANK: Record<Level, number> = { ok: 0, warn: 1, compact: 2, block: 3 };
