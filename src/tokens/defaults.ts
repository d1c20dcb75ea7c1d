import type { FormatId } from '../model/types.js';
import type { ProviderFamily } from './family.js';

/**
 * Provider tokens per estimated (o200k-like) token, before a session teaches better. Measured on real transcripts by
 * `npm run bench:tokens` (the "learned ratio" column). They include what the estimator does not see: each provider's
 * own tokenizer (Claude's yields ~10–20% more tokens than o200k for code and tool output) and request framing.
 */
export const FAMILY_RATIO: Record<ProviderFamily, number> = {
  claude: 1.16,
  gpt: 1.14,
  gemini: 1.18,
  other: 1.15,
};

/**
 * How much a seed ratio weighs against what a session shows, in estimated tokens: after a few thousand tokens of
 * observed growth the session's own ratio dominates.
 */
export const CALIBRATION_PRIOR_WEIGHT = 2000;

/**
 * Tokens an agent sends on every request that its transcript does not record: its system prompt and tool definitions.
 * A library that sees the real system prompt and tools counts them instead; these are for transcripts, where they are
 * not stored. Typical sizes of each harness' built-in prompt and tools (Claude Code's grows with MCP servers and
 * CLAUDE.md; Codex stores its base instructions in the transcript, so only its tool schemas are missing). Override
 * with `prefixTokens`.
 */
export const HARNESS_PREFIX_TOKENS: Record<FormatId, number> = {
  pi: 2500,
  'claude-code': 24000,
  codex: 3000,
  'swe-agent': 0,
  anthropic: 0,
  'openai-chat': 0,
  'openai-responses': 0,
  'ai-sdk': 0,
};

/**
 * The harness prefix of a Codex rollout (its tool definitions, which rollouts do not record), by CLI version
 * (`cli_version` of the session_meta record), in provider tokens as the predictor adds them to the family ratio × the
 * estimate of what the rollout records: measured on the corpus as a first request's reported prompt minus 1.14 × the
 * estimate of the items before it — 2,643–3,471 on 0.140.0 and 0.142.2 (three sessions), 5,127 on 0.124.0 (one
 * session). (Against exact o200k counts, the tools themselves come to 5,200–5,700 and 7,800.) MCP servers a user
 * configures add their tools to these.
 */
export function codexPrefixTokens(cliVersion: string | undefined): number {
  const [major, minor] = (cliVersion ?? '').split('.').map(Number);
  if (major === 0 && minor !== undefined && minor < 140) return 5100;
  return HARNESS_PREFIX_TOKENS.codex;
}
