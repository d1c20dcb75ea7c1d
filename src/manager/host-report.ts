import type { Level } from '../budget/types.js';
import type { Usage } from '../model/types.js';
import type { PreparedTurn } from './context-manager.js';

/**
 * One model request as a host integration saw it (the AI SDK middleware, the LangChain middleware, the OpenAI Agents
 * SDK session, the Mastra processor): after its response, or after a refusal that was not recovered.
 */
export interface HostRequestReport {
  /** 1-based count of model requests made through the integration (a retry after an overflow counts). */
  turn: number;
  /** abridge's prediction of the request's prompt tokens. */
  predicted: number;
  /** Prompt tokens the provider billed (input + cache read + cache write), null when it reported none. */
  reported: number | null;
  anchored: boolean;
  level: Level;
  /** Whether abridge compacted before this request. */
  compacted: boolean;
  /** The max output tokens the request asked for (reserved in the window). */
  maxOutputTokens: number;
  /** Whether this request is the retry after a provider's overflow refusal. */
  retry: boolean;
}

/** The report of a request a host made with `prepared`, billed `usage` (none when it was refused). */
export function hostRequestReport(
  turn: number,
  prepared: Pick<PreparedTurn, 'pressure' | 'compaction'>,
  usage: Usage | undefined,
  retry: boolean,
): HostRequestReport {
  const p = prepared.pressure;
  return {
    turn,
    predicted: p.predicted,
    reported: usage ? usage.input + usage.cacheRead + usage.cacheWrite : null,
    anchored: p.anchored,
    level: p.level,
    compacted: prepared.compaction !== undefined,
    maxOutputTokens: p.maxOutputTokens,
    retry,
  };
}

/** What a host integration tells besides its requests (each may add events of its own). */
export type HostEvent =
  /** The history the host passed did not continue what the integration had seen: the manager re-synced to it. */
  | { type: 'resync'; kept: number; dropped: number; added: number }
  /** The provider refused a request as too long; `recovered`: the manager compacted and the request is retried once. */
  | { type: 'overflow'; message: string; recovered: boolean };
