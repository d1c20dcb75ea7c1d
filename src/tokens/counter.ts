import { argumentsText } from '../model/parts.js';
import type { Message, Part } from '../model/types.js';
import { estimateTokens } from './estimate.js';
import type { ExactTokenizer } from './exact.js';
import type { ProviderFamily } from './family.js';
import { imageTokens } from './images.js';
import type { SendResult } from './sent.js';
import { TextMemo } from '../model/text-memo.js';

/**
 * Framing a provider adds around content, in tokens: role markers per message, and the envelope of a tool call or
 * result (type, name/id keys, braces). OpenAI documents 3 tokens per chat message (its cookbook's
 * `num_tokens_from_messages`); Anthropic and Google publish nothing, and 4 fits their requests. Tool-call ids are
 * counted as the text they are (random strings of 10–30 tokens that appear in both the call and its result). What
 * framing does not capture, each session's calibration absorbs (see PromptTracker).
 */
export const FRAMING: Record<ProviderFamily, { message: number; toolCall: number; toolResult: number }> = {
  claude: { message: 4, toolCall: 8, toolResult: 8 },
  gpt: { message: 3, toolCall: 8, toolResult: 8 },
  gemini: { message: 4, toolCall: 8, toolResult: 8 },
  other: { message: 4, toolCall: 8, toolResult: 8 },
};
/** The framing of an unknown family, for callers without one. */
export const MESSAGE_OVERHEAD = FRAMING.other.message;
export const TOOL_CALL_OVERHEAD = FRAMING.other.toolCall;
export const TOOL_RESULT_OVERHEAD = FRAMING.other.toolResult;
/** Files (PDFs and other documents) with no text we can see: a rough per-kilobyte price. */
const FILE_TOKENS_PER_KB = 40;

export interface TokenCounterOptions {
  /** Prices images and framing; default 'other'. */
  family?: ProviderFamily;
  /** Count text exactly with this tokenizer instead of estimating. */
  exact?: ExactTokenizer;
  /**
   * Count a tool result as the harness sends it (`harnessSends`): a counter of a Codex session counts each output as
   * cut to its model's truncation policy, the way the provider saw it.
   */
  send?: SendResult;
}

/**
 * Counts text, parts and messages, remembering what it counted: a part object is counted once (parts are not edited in
 * place), and in exact mode equal texts are tokenized once. Re-counting a session after one more message costs only
 * that message.
 */
/**
 * Estimates of a part's own text (without framing or the parts it holds), shared by every estimating counter: an
 * estimate depends on the text alone and parts are not edited in place, so a session counted by two counters (a
 * breakdown by role and the context snapshot, each with its family's framing) is estimated once.
 */
const estimatedText = new WeakMap<Part, number>();

/**
 * Estimates of long texts, by content, shared by every estimating counter: a compaction counts its summary (tens of
 * thousands of characters) as the text it packed, as the message it stands in, in the view and in the marker — a new
 * part each time, the same text. A lookup compares the text (memory speed); the estimate walks it character by
 * character. Bounded by the characters held (it starts over beyond).
 */
const longTexts = new TextMemo<number>();
/** Texts shorter than this are estimated each time (their estimate costs about what a lookup would). */
const LONG_TEXT = 2048;

export class TokenCounter {
  readonly family: ProviderFamily;
  readonly exact: boolean;
  private readonly framing: (typeof FRAMING)[ProviderFamily];
  private readonly tokenizer: ExactTokenizer | undefined;
  private readonly parts = new WeakMap<object, number>();
  private readonly texts = new Map<string, number>();
  /** How this counter takes a tool result to be sent (`TokenCounterOptions.send`): what a request should carry. */
  readonly send: SendResult | undefined;

  constructor(options: TokenCounterOptions = {}) {
    this.family = options.family ?? 'other';
    this.send = options.send;
    this.framing = FRAMING[this.family];
    this.tokenizer = options.exact;
    this.exact = options.exact !== undefined;
  }

  text(text: string): number {
    if (text.length === 0) return 0;
    if (!this.tokenizer) return text.length >= LONG_TEXT ? longTexts.get(text, estimateTokens) : estimateTokens(text);
    // Keyed by the text itself: the engine hashes a string once, and equal content repeats (re-read files).
    const hit = this.texts.get(text);
    if (hit !== undefined) return hit;
    const n = this.tokenizer.count(text);
    if (this.texts.size >= 50_000) this.texts.clear();
    this.texts.set(text, n);
    return n;
  }

  part(part: Part): number {
    const hit = this.parts.get(part);
    if (hit !== undefined) return hit;
    const n = this.countPart(part);
    this.parts.set(part, n);
    return n;
  }

  private countPart(p: Part): number {
    switch (p.type) {
      case 'text':
      case 'thinking':
      case 'compaction':
        return this.ownText(p);
      case 'tool-call':
        return this.framing.toolCall + this.ownText(p);
      case 'tool-result': {
        let n = this.framing.toolResult + this.text(p.callId);
        for (const c of (this.send ? this.send(p) : p).content) n += this.part(c);
        return n;
      }
      case 'image':
        return imageTokens(p, this.family);
      case 'file':
        return Math.ceil(((p.byteSize ?? 0) / 1024) * FILE_TOKENS_PER_KB);
    }
  }

  /** Tokens of the text a part carries itself, through the shared cache when estimating. */
  private ownText(p: Part): number {
    if (this.tokenizer) return this.textOf(p);
    const hit = estimatedText.get(p);
    if (hit !== undefined) return hit;
    const n = this.textOf(p);
    estimatedText.set(p, n);
    return n;
  }

  private textOf(p: Part): number {
    switch (p.type) {
      case 'text':
        return this.text(p.text);
      case 'thinking':
        // The signature is opaque data the provider verifies, not prompt text; redacted thinking has no visible text.
        return p.redacted ? 0 : this.text(p.text);
      case 'tool-call':
        return this.text(p.id) + this.text(p.name) + this.text(argumentsText(p.arguments));
      case 'compaction':
        return this.text(p.marker.summary);
      default:
        return 0;
    }
  }

  /** Tokens of a message's role framing for this family. */
  get messageFraming(): number {
    return this.framing.message;
  }

  message(m: Message): number {
    let n = this.framing.message;
    for (const p of m.parts) n += this.part(p);
    return n;
  }
}
