import { promptTokens, sentTokens } from '../model/parts.js';
import type { Entry, Message, Usage } from '../model/types.js';
import { viewOf } from '../model/view.js';
import { TokenCounter } from './counter.js';
import { CALIBRATION_PRIOR_WEIGHT, FAMILY_RATIO } from './defaults.js';
import { familyOf, type ProviderFamily } from './family.js';

export interface PredictorOptions {
  /** Counts the content; default: the estimator. Pass an exact counter to count with a real tokenizer. */
  counter?: TokenCounter;
  /**
   * The largest window known for a model (any of its variants), or undefined when none is known: a bill above it is no
   * bill of that model, and is not used (see `observe`).
   */
  windowOf?: (model: string) => number | undefined;
  /**
   * The caller counts everything a request carries (its system prompt and tools through `setOverhead`, as the
   * ContextManager does): a first bill far from the count is then as implausible as any other. Default false: a
   * transcript's harness prefix is a guess, and a first bill may be several times it.
   */
  countsEverything?: boolean;
  /** Tokens sent on every request but not in the entries (system prompt, tool definitions): the harness prefix. */
  prefixTokens?: number;
  /** Seed ratios of provider tokens per counted token, by family (defaults: FAMILY_RATIO). */
  familyRatio?: Partial<Record<ProviderFamily, number>>;
  /** Weight of the seed ratio, in counted tokens (default CALIBRATION_PRIOR_WEIGHT). */
  priorWeight?: number;
  /**
   * The provider drops the reasoning of earlier turns from the prompt (OpenAI Responses API, as Codex uses it): a
   * request's prompt carries the reasoning tokens of the earlier responses of its turn (reported as `usage.reasoning`,
   * encrypted in the transcript, so never counted), and the first request after a person's message carries none.
   */
  reasoningDroppedAtUserTurn?: boolean;
}

export interface Prediction {
  /** Best prediction of the prompt tokens the provider will bill for the next request. */
  predicted: number;
  /** The same without any provider usage: counted content × family ratio + harness prefix. */
  estimateOnly: number;
  /** Whether `predicted` builds on an earlier reported usage (same model, same context since). */
  anchored: boolean;
  /** Entry index of the usage `predicted` builds on. */
  anchorEntry?: number;
  /** Provider tokens per counted token used for this model. */
  ratio: number;
  /** Counted tokens of the context (what the model sees), without the prefix. */
  counted: number;
  /**
   * The part of `predicted` that is not the context's messages — the system prompt and tool definitions the transcript
   * does not hold: learned once, from the model's first bill in the session (what it billed beyond the messages it was
   * sent then), else the harness prefix the tracker was given; never above `predicted`. Stable along a session: what the
   * bills show beyond that later (a ratio a little off over a long context, the reasoning a Codex turn carries) belongs
   * to the messages.
   */
  prefix: number;
}

/** What became of a bill (`observe`): used, or not, and why (`problem`: a report that cannot be true). */
export type UsageVerdict = { used: true } | { used: false; problem?: string };

/**
 * How far a bill may be from what the tracker expected of the request before it is taken for a lie: the corpus's
 * anchored bills are within 0.75–1.5× their prediction; a report 3× off is no bill of what was sent.
 */
const PLAUSIBLE_FACTOR = 3;
/**
 * …and by more than this many tokens: a small request carries what no count sees (a provider's own tool-use system
 * prompt is 300–700 tokens; an image billed by its pixels), so a bill of a few hundred tokens against a count of fifty
 * is no lie.
 */
const PLAUSIBLE_SLACK = 4_000;
/** Above any window a provider offers (10M is the largest known): a bill this large is not one. */
const MAX_PLAUSIBLE_PROMPT = 20_000_000;

/**
 * How a provider bills the thinking a transcript records, learned per model from the session's own bills: sent back
 * and billed (`keep`, Anthropic's signed thinking, most OpenAI-compatible reasoning passed back), dropped from the
 * prompt once a person speaks again (`drop-at-user`: GLM, Kimi, MiniMax through their own APIs), or never billed
 * (`never`: a harness that keeps the reasoning but does not send it back).
 */
type ThinkingBilling = 'keep' | 'drop-at-user' | 'never';
const THINKING_BILLINGS: readonly ThinkingBilling[] = ['keep', 'drop-at-user', 'never'];
/** Bills that must tell the ways of billing apart before another than the default is taken (one may be off by chance). */
const EVIDENCE_BILLS = 2;

interface Calibration {
  num: number;
  den: number;
  /** Summed |error| of each way of billing thinking over this model's bills that told them apart. */
  thinkingError: Record<ThinkingBilling, number>;
  /**
   * Summed |error| with and without the output the transcript does not show (billed output − what its messages count:
   * reasoning a harness folds into `output` and never records) carried into the next prompt, as Grok's is.
   */
  hiddenError: { carried: number; not: number; bills: number };
  /** Bills that told the ways of billing thinking apart. */
  thinkingBills: number;
  /**
   * The session's own prefix for this model, learned once from its first bill: billed − ratio × counted then (the least
   * content, so the least error from the ratio), less the reasoning it carried. Not derived again from later bills nor
   * moved by a ratio they refine: one session shows one prefix wherever it is cut.
   */
  prefix?: number;
}

/**
 * Tracks what the model sees as entries arrive, and predicts the next prompt's size from the provider's own last report
 * plus what was added since — scaled by a per-model ratio it learns from the session. Each push costs the size of the
 * pushed entry; a compaction costs the size of the context it keeps.
 */
export class PromptTracker {
  readonly counter: TokenCounter;
  private readonly prefix: number;
  private readonly ratios: Record<ProviderFamily, number>;
  private readonly priorWeight: number;
  /** The entries pushed so far: a compaction marker is read against them. */
  private readonly entries: Entry[] = [];
  private counted = 0;
  /** Counted tokens of what a request carries besides the messages (system prompt, tool definitions), when known. */
  private overhead = 0;
  private anchor:
    | { prompt: number; counted: number; model: string; entry: number; reasoningCarried: number }
    | undefined;
  private readonly dropsReasoning: boolean;
  private readonly windowOf: ((model: string) => number | undefined) | undefined;
  private countsEverything: boolean;
  /** Reasoning tokens of the responses of the current turn so far (see `reasoningDroppedAtUserTurn`). */
  private turnReasoning = 0;
  private userTurnSinceAnchor = false;
  private viewEnd: { entry: number; tokens: number } | undefined;
  /**
   * The size abridge's last compaction gave the view it left (its marker's `tokensAfter`), and the counted tokens of
   * that view: until a bill anchors again, the next prompts are that plus what was added since — so that the size after
   * a compaction is the one the compaction reported, not a recount by another rule.
   */
  private compacted: { prompt: number; counted: number; model: string } | undefined;
  /** Counted thinking since the last person's message (what a `drop-at-user` provider removes when one comes). */
  private thinkingSinceUser = 0;
  /** Counted thinking since the anchor: all of it (`never`), and what a person's message since dropped (`drop-at-user`). */
  private thinkingSinceAnchor = 0;
  private droppedSinceAnchor = 0;
  /** The output billed for the anchor's response, and what its messages count: their difference is hidden output. */
  private outputBilled = 0;
  private outputCounted = 0;
  /**
   * A bill not used because it was under half of what the messages count, kept in case the next one agrees with it: a
   * harness that prunes what it sends (old tool results trimmed in memory, never written to the transcript) bills
   * consistently less than the transcript holds, and two bills that agree with each other are evidence, not a lie.
   */
  private low: { prompt: number; counted: number; model: string } | undefined;
  /** Models whose bills were shown to run under the count: for them, the last bill is the measure, not the count. */
  private readonly pruned = new Set<string>();
  private readonly calibration = new Map<string, Calibration>();
  private lastModel: string | undefined;

  constructor(options: PredictorOptions = {}) {
    this.counter = options.counter ?? new TokenCounter();
    this.prefix = options.prefixTokens ?? 0;
    this.ratios = { ...FAMILY_RATIO, ...options.familyRatio };
    this.priorWeight = options.priorWeight ?? CALIBRATION_PRIOR_WEIGHT;
    this.dropsReasoning = options.reasoningDroppedAtUserTurn === true;
    this.windowOf = options.windowOf;
    this.countsEverything = options.countsEverything === true;
  }

  /** Counted tokens of the context so far (without prefix): the messages, plus the request overhead when set. */
  get contextTokens(): number {
    return this.counted;
  }

  /**
   * Sets the counted tokens of what the next request carries besides the messages (its system prompt and tool
   * definitions), for a caller that builds the request itself and so knows them: they are then counted like the
   * messages (anchored on the bill, scaled by the learned ratio) instead of being guessed as a harness prefix.
   */
  setOverhead(counted: number): void {
    this.counted += counted - this.overhead;
    this.overhead = counted;
  }

  /**
   * Adds an entry to what the model sees. A compaction marker replaces the context with what it keeps — as the view
   * says (model/view.ts `viewOf`, the one reading of a marker): the tracker counts exactly the messages a request built
   * from the session carries.
   */
  push(entry: Entry): void {
    this.entries.push(entry);
    if (entry.compaction) {
      const marker = entry.compaction;
      this.counted = this.overhead + viewOf(this.entries).reduce((n, it) => n + this.counter.message(it.message), 0);
      // A report from before the compaction describes a context that is gone.
      this.anchor = undefined;
      this.compacted = undefined;
      this.low = undefined;
      this.thinkingSinceAnchor = 0;
      this.droppedSinceAnchor = 0;
      this.outputBilled = 0;
      // A compacted view re-appended by a writer is, where it ends, of the size the compaction reported (itself built
      // on the last bill before it): anchor there.
      const end = (marker as { viewEndsAt?: number }).viewEndsAt;
      this.viewEnd =
        marker.source === 'abridge' && end !== undefined && marker.tokensAfter !== undefined
          ? { entry: end, tokens: marker.tokensAfter }
          : undefined;
    }
    // (A marker's own message, its summary, is in the view already.)
    if (entry.message && !entry.compaction) {
      if (entry.message.role === 'user' && !entry.message.synthetic) {
        this.turnReasoning = 0;
        this.userTurnSinceAnchor = true;
        this.droppedSinceAnchor += this.thinkingSinceUser;
        this.thinkingSinceUser = 0;
      }
      this.counted += this.counter.message(entry.message);
      if (entry.message.role === 'assistant') {
        let thinking = 0;
        for (const p of entry.message.parts) if (p.type === 'thinking') thinking += this.counter.part(p);
        this.thinkingSinceUser += thinking;
        this.thinkingSinceAnchor += thinking;
        this.outputCounted += this.counter.message(entry.message);
        if (entry.message.model) this.lastModel = entry.message.model;
      }
    }
    // (Set once the marker's own message, the summary, is counted: the size it reported includes it.)
    if (entry.compaction?.source === 'abridge' && entry.compaction.tokensAfter !== undefined)
      this.compacted = { prompt: entry.compaction.tokensAfter, counted: this.counted, model: this.lastModel ?? '' };
    if (this.viewEnd && this.viewEnd.entry === entry.index) {
      // (A view with no assistant message left has no model to go by: any model then reads this anchor.)
      this.anchor = {
        prompt: this.viewEnd.tokens,
        counted: this.counted,
        model: this.lastModel ?? '',
        entry: entry.index,
        reasoningCarried: 0,
      };
      // The size the compaction reported is of the view as it is: nothing in it is still to be dropped or added.
      this.thinkingSinceAnchor = 0;
      this.droppedSinceAnchor = 0;
      this.outputBilled = 0;
      this.viewEnd = undefined;
    }
  }

  /**
   * The context as it stands was sized `prompt` provider tokens for `model` by the compaction that left it (a stored
   * snapshot's size, read back on resume): until a bill anchors again, predictions are that plus what is added since,
   * as after a compaction seen live.
   */
  anchorCompaction(prompt: number, model: string): void {
    if (!Number.isFinite(prompt) || prompt <= 0) return;
    this.anchor = undefined;
    this.compacted = { prompt, counted: this.counted, model };
  }

  /**
   * The entries the context is now made of, replacing those pushed so far: a working session restarted from a
   * compaction's view (the ContextManager keeps the whole history in its store). They must hold what the tracker counts
   * already — the view it was given with the compaction's marker — so nothing is counted again.
   */
  rebase(entries: readonly Entry[]): void {
    this.entries.length = 0;
    this.entries.push(...entries);
    this.viewEnd = undefined;
  }

  /** Whether a bill can be one of the request that started at `countedAtStart` (see `observe`), changing nothing. */
  judge(usage: Usage, model: string, countedAtStart: number): UsageVerdict {
    // What was sent is compared with the count of the request; what was billed (the provider's edits applied, if it
    // made any) with the window.
    const prompt = sentTokens(usage);
    const billed = promptTokens(usage);
    if (!Number.isFinite(prompt) || prompt > MAX_PLAUSIBLE_PROMPT)
      return { used: false, problem: `a prompt of ${String(prompt)} tokens is no count of a request` };
    if (billed <= 0) return { used: false }; // an aborted or failed request reports nothing useful
    const window = this.windowOf?.(model);
    if (window !== undefined && billed > window)
      return {
        used: false,
        problem: `a prompt of ${billed} tokens is above every window known for ${model} (${window})`,
      };
    // A bill that agrees with the low one before it (that one plus what was added since): the harness sends less than
    // the transcript holds, and says so twice.
    if (this.confirmsLow(prompt, model, countedAtStart)) return { used: true };
    // A bill under half of what its messages count is not a bill of them (a harness reporting only part of the prompt,
    // a usage field misread): anchoring on it would put every figure of the session far under what it holds — unless
    // this model's bills were shown to run under the count (see `low`), when the last bill is the measure.
    if (!this.pruned.has(model) && prompt < (this.ratioOf(model) * countedAtStart) / 2)
      return {
        used: false,
        problem: `a prompt of ${prompt} tokens is under half of what the request's messages count (${Math.round(this.ratioOf(model) * countedAtStart)})`,
      };
    const expected = this.expectedAt(model, countedAtStart);
    if (
      expected !== undefined &&
      Math.abs(prompt - expected) > PLAUSIBLE_SLACK &&
      (prompt > expected * PLAUSIBLE_FACTOR || prompt * PLAUSIBLE_FACTOR < expected)
    )
      return {
        used: false,
        problem: `a prompt of ${prompt} tokens is more than ${PLAUSIBLE_FACTOR}× off the ${Math.round(expected)} expected of the request`,
      };
    return { used: true };
  }

  /** Whether a bill under the count agrees with the low bill before it (`low`): within 15%, or 500 tokens. */
  private confirmsLow(prompt: number, model: string, countedAtStart: number): boolean {
    const low = this.low;
    if (!low || low.model !== model || countedAtStart < low.counted) return false;
    const expected = low.prompt + this.ratioOf(model) * (countedAtStart - low.counted);
    return Math.abs(prompt - expected) <= Math.max(500, 0.15 * prompt);
  }

  /**
   * Counts everything a request carries from now on (see `countsEverything`): for a caller that follows a recorded
   * history first (bills of another harness's prompt) and then sends its own requests.
   */
  countEverything(): void {
    this.countsEverything = true;
  }

  /**
   * Records what the provider reported for a request whose prompt was the context as it stood when the request
   * started (`countedAtStart`, from `contextTokens` then): anchors later predictions and calibrates the ratio — when it
   * is evidence of that request. A report is checked before it is used: one that is not a finite count, that is above
   * any window known for the model, under half of what the request's messages count, or more than 3× off what the
   * tracker expected of the request (from its last bill; or from its count, when `countsEverything`) is not used, and
   * the verdict says why.
   */
  observe(usage: Usage, model: string, entry: number, countedAtStart: number): UsageVerdict {
    const verdict = this.judge(usage, model, countedAtStart);
    const prompt = sentTokens(usage);
    if (!verdict.used) {
      // Kept, for the next bill to confirm or not (see `low`); a bill of another kind of wrong is not.
      this.low =
        verdict.problem?.includes('under half') === true ? { prompt, counted: countedAtStart, model } : undefined;
      return verdict;
    }
    if (this.confirmsLow(prompt, model, countedAtStart)) this.pruned.add(model);
    this.low = undefined;
    const cal = this.cal(model);
    const a = this.anchor;
    if (a && a.model === model) {
      // Which way of billing thinking this bill tells apart from the others, when thinking came since the anchor.
      if (this.thinkingSinceAnchor > 0) {
        const ratio = this.ratioOf(model);
        for (const how of THINKING_BILLINGS) {
          const predicted = a.prompt + ratio * (countedAtStart - a.counted - this.unbilledThinking(how));
          cal.thinkingError[how] += Math.abs(predicted - prompt);
        }
        cal.thinkingBills++;
      }
      const hidden = this.hiddenNow();
      if (hidden > 0) {
        const base =
          a.prompt +
          this.ratioOf(model) * (countedAtStart - a.counted - this.unbilledThinking(this.thinkingBilling(model)));
        cal.hiddenError.carried += Math.abs(base + hidden - prompt);
        cal.hiddenError.not += Math.abs(base - prompt);
        cal.hiddenError.bills++;
      }
      const grown = countedAtStart - a.counted - this.unbilledThinking(this.thinkingBilling(model));
      const delta = prompt - a.prompt;
      // A shrinking prompt means the agent dropped something we cannot see, and growth far from what was counted means
      // content we cannot see came or went (a hidden reminder, a truncated result): learn nothing from either.
      const seed = this.ratios[familyOf(model)];
      if (grown > 0 && delta >= 0 && delta <= grown * seed * 4 && delta >= (grown * seed) / 4) {
        cal.num += delta;
        cal.den += grown;
      }
    }
    cal.prefix ??= prompt - this.ratioOf(model) * countedAtStart - this.turnReasoning;
    this.compacted = undefined;
    this.anchor = { prompt, counted: countedAtStart, model, entry, reasoningCarried: this.turnReasoning };
    if (this.dropsReasoning) this.turnReasoning += usage.reasoning ?? 0;
    this.userTurnSinceAnchor = false;
    this.thinkingSinceAnchor = 0;
    this.droppedSinceAnchor = 0;
    // The response to this request is pushed next: what it shows is compared with the output billed.
    this.outputBilled = this.dropsReasoning ? 0 : Math.max(0, usage.output);
    this.outputCounted = 0;
    return { used: true };
  }

  /** Output billed for the anchor's response beyond what the transcript shows of it (reasoning it did not record). */
  private hiddenNow(): number {
    if (this.outputBilled <= 0 || !this.anchor) return 0;
    return Math.max(0, this.outputBilled - this.ratioOf(this.anchor.model) * this.outputCounted);
  }

  /** Whether `model`'s bills showed the output the transcript does not hold carried into the next prompt (as above). */
  private carriesHidden(model: string): boolean {
    const e = this.calibration.get(model)?.hiddenError;
    return e !== undefined && e.bills >= EVIDENCE_BILLS && e.carried < e.not;
  }

  /** Counted thinking since the anchor that a provider billing thinking `how` does not bill. */
  private unbilledThinking(how: ThinkingBilling): number {
    return how === 'never' ? this.thinkingSinceAnchor : how === 'drop-at-user' ? this.droppedSinceAnchor : 0;
  }

  /**
   * How `model` bills thinking, as its bills in this session showed: `keep` until two bills tell the ways apart, then
   * the way whose predictions of them erred least in sum.
   */
  private thinkingBilling(model: string): ThinkingBilling {
    const c = this.calibration.get(model);
    if (!c || c.thinkingBills < EVIDENCE_BILLS) return 'keep';
    const e = c.thinkingError;
    let best: ThinkingBilling = 'keep';
    for (const how of THINKING_BILLINGS) if (e[how] < e[best]) best = how;
    return best;
  }

  /**
   * The last bill as a measure of a request of `model`: of the same model, what was added since (less the thinking the
   * model does not bill); of another model of the same session, scaled by the two models' ratios — the harness's
   * system prompt and tools the transcript does not hold are in it either way, which no count from the messages has.
   */
  private fromAnchor(model: string, counted: number): { predicted: number; sameModel: boolean } | undefined {
    const a = this.anchor;
    if (!a) return undefined;
    const ratio = this.ratioOf(model);
    if (a.model === model || a.model === '') {
      const grown = counted - a.counted - this.unbilledThinking(this.thinkingBilling(model));
      const hidden = this.carriesHidden(model) ? this.hiddenNow() : 0;
      return { predicted: a.prompt + ratio * grown + hidden, sameModel: true };
    }
    const scale = ratio / this.ratioOf(a.model);
    return { predicted: a.prompt * scale + ratio * (counted - a.counted), sameModel: false };
  }

  /**
   * What the tracker expected of a request of `model` that started at `countedAtStart`: from its last bill, else (when it
   * counts everything a request carries) from the count; undefined when it cannot say (a transcript's first bill).
   */
  private expectedAt(model: string, countedAtStart: number): number | undefined {
    const ratio = this.ratioOf(model);
    const from = this.fromAnchor(model, countedAtStart);
    if (from) return Math.max(1, from.predicted);
    const c = this.compacted;
    if (c && (c.model === model || c.model === '')) return Math.max(1, c.prompt + ratio * (countedAtStart - c.counted));
    if (this.countsEverything) return Math.max(1, this.prefixOf(model) + ratio * countedAtStart);
    return undefined;
  }

  /** Predicts the prompt of a request sent now by `model` (default: the last model seen). */
  predict(model: string | undefined = this.lastModel ?? this.anchor?.model): Prediction {
    const family = familyOf(model);
    const ratio = model ? this.ratioOf(model) : this.ratios[family];
    const estimateOnly = Math.round(this.prefix + this.ratios[family] * this.counted);
    const prefix = this.prefixOf(model);
    const a = this.anchor;
    const from = model !== undefined ? this.fromAnchor(model, this.counted) : undefined;
    if (a && from?.sameModel) {
      // A person spoke since: the reasoning the reported prompt carried is gone from the next one.
      const dropped = this.dropsReasoning && this.userTurnSinceAnchor ? a.reasoningCarried : 0;
      const predicted = Math.max(1, Math.round(from.predicted - dropped));
      return {
        predicted,
        estimateOnly,
        anchored: true,
        anchorEntry: a.entry,
        ratio,
        counted: this.counted,
        prefix: Math.max(0, Math.min(predicted, Math.round(prefix))),
      };
    }
    // No bill of this model: another model's, scaled (see fromAnchor); else the size abridge's compaction reported when
    // it was the last thing to set one; else counted, with the prefix this session showed for this model when it has one.
    const c = this.compacted;
    const predicted =
      from && !c
        ? Math.max(1, Math.round(from.predicted))
        : c && model !== undefined && (c.model === model || c.model === '')
          ? Math.max(0, Math.round(c.prompt + ratio * (this.counted - c.counted)))
          : Math.round(prefix + ratio * this.counted);
    return {
      predicted,
      estimateOnly,
      anchored: false,
      ratio,
      counted: this.counted,
      prefix: Math.max(0, Math.min(predicted, Math.round(prefix))),
    };
  }

  /**
   * Provider tokens a request of `model` carries besides the messages: the prefix the session's first bill for that
   * model showed (see Calibration.prefix), else the harness prefix this tracker was given.
   */
  prefixOf(model: string | undefined): number {
    const learned = model ? this.calibration.get(model)?.prefix : undefined;
    return learned !== undefined && learned >= 0 ? learned : this.prefix;
  }

  private cal(model: string): Calibration {
    let c = this.calibration.get(model);
    if (!c) {
      c = {
        num: 0,
        den: 0,
        thinkingError: { keep: 0, 'drop-at-user': 0, never: 0 },
        thinkingBills: 0,
        hiddenError: { carried: 0, not: 0, bills: 0 },
      };
      this.calibration.set(model, c);
    }
    return c;
  }

  /** Provider tokens per counted token for a model: the family seed, pulled toward what the session showed. */
  ratioOf(model: string): number {
    const seed = this.ratios[familyOf(model)];
    const c = this.calibration.get(model);
    if (!c) return seed;
    return (seed * this.priorWeight + c.num) / (this.priorWeight + c.den);
  }
}

/** Whether an assistant message begins a new provider response, given the assistant message before it (if adjacent). */
export function startsResponse(message: Message, previousAssistant: Message | undefined): boolean {
  if (!previousAssistant) return true;
  if (message.responseId !== undefined && previousAssistant.responseId !== undefined)
    return message.responseId !== previousAssistant.responseId;
  // Formats that give each response one message with its own usage (pi) start a response with every message.
  return previousAssistant.usage !== undefined;
}
