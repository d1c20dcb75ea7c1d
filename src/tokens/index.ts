export { estimateTokens } from './estimate.js';
export { loadExactTokenizer, type EncodingName, type ExactTokenizer } from './exact.js';
export { familyOf, PROVIDER_FAMILIES, type ProviderFamily } from './family.js';
export { imageTokens, imageDimensions, DEFAULT_IMAGE_TOKENS } from './images.js';
export { TokenCounter, FRAMING, MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, TOOL_RESULT_OVERHEAD, type TokenCounterOptions } from './counter.js';
export { PromptTracker, startsResponse, type Prediction, type PredictorOptions } from './predict.js';
export type { ReplayRequest, ReplayOptions } from './replay.js';
export { FAMILY_RATIO, HARNESS_PREFIX_TOKENS, CALIBRATION_PRIOR_WEIGHT } from './defaults.js';
export { TokenBreakdown, type TokenBreakdownResult } from './breakdown.js';
