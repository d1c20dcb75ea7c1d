/**
 * Defaults, in one place: the library's (src/defaults.ts, the bottom layer every module reads) re-exported, and the
 * ContextManager's own.
 */
export {
  CALIBRATION_PRIOR_WEIGHT,
  CONTEXT_NOTE_THRESHOLD,
  DEFAULT_ANSWER_LIMITS,
  DEFAULT_CONTEXT_WINDOW,
  DEFAULT_DEFERRAL_THRESHOLD,
  DEFAULT_IMAGE_TOKENS,
  DEFAULT_KEEP_RECENT_TOKENS,
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_FILES,
  DEFAULT_MAX_OUTPUT_TOKENS,
  DEFAULT_READ_LIMIT,
  DEFAULT_RESERVE_CAP,
  DEFAULT_STRATEGY_OPTIONS,
  DEFAULT_THRESHOLDS,
  FAMILY_RATIO,
  HARNESS_PREFIX_TOKENS,
  MAX_READ_LIMIT,
  SEED_ALLOCATIONS,
} from '../defaults.js';

/** Defaults of the ContextManager itself. */
export const MANAGER_DEFAULTS = {
  /**
   * Room kept under window − max output for the prediction's own error, as a share of that room: small once the count
   * is anchored on the provider's bill (replay: p90 ≈ 1% across 2,760 real requests), larger on a pure estimate
   * (estimate-only p90 ≈ 15%, but here the manager sees the whole request, system prompt and tools included).
   */
  anchoredMargin: 0.02,
  estimatedMargin: 0.08,
  /** A tool result larger than this share of the effective window is offloaded as it arrives (head and tail kept). */
  offloadShare: 0.2,
  /** After a provider's overflow refusal that does not say its count: assume it counted this much more than predicted. */
  overflowFactor: 1.25,
} as const;
