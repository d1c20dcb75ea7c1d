// `abridge-context/analysis`: what reads whole sessions after the fact — the viewer's data and page, replay of predictions,
// prefix stability and cost.
export {
  buildViewData,
  type ViewData,
  type ViewMeta,
  type ViewCategory,
  type ViewPoints,
  type ViewCompaction,
  type ViewEdit,
  type MessageRecord,
  type ViewDataOptions,
} from './view-data.js';
export { renderViewPage } from './view-page.js';
export {
  prefixStability,
  type PrefixStabilityOptions,
  type PrefixStabilityReport,
  type PrefixRow,
  type ScenarioRow,
  type ScenarioTotals,
  type CompactionCacheCost,
  type BreakPoint,
} from './prefix-stability.js';
export { replaySession, summarizeReplay, type ErrorSummary } from './replay.js';
export type { ReplayOptions, ReplayRequest } from '../tokens/replay.js';
