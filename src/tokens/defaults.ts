import * as D from '../defaults.js';
import type { FormatId, Session } from '../model/types.js';
import type { ProviderFamily } from './family.js';

// The numbers live in src/defaults.ts; here they get the counting's types.
export const FAMILY_RATIO: Record<ProviderFamily, number> = D.FAMILY_RATIO;
export const CALIBRATION_PRIOR_WEIGHT = D.CALIBRATION_PRIOR_WEIGHT;
export const HARNESS_PREFIX_TOKENS: Record<FormatId, number> = D.HARNESS_PREFIX_TOKENS;

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

/**
 * What a session's harness sends that its transcript does not record, by format and by what the transcript holds:
 * Codex's tools by its version; Copilot CLI's tools, and its system prompt when the version does not record it;
 * OpenHands' prompt (and tools) when the run does not record them; Kimi CLI's prompt in files from before it recorded it; Cline's or Roo Code's prompt under a saved
 * conversation of theirs (Anthropic messages with their `<environment_details>` blocks, and no system prompt).
 */
export function harnessPrefixTokens(session: Session): number {
  if (session.format === 'codex')
    return codexPrefixTokens(typeof session.extra?.cliVersion === 'string' ? session.extra.cliVersion : undefined);
  const base = HARNESS_PREFIX_TOKENS[session.format];
  const recordsPrompt = () => session.entries.some((e) => e.message?.role === 'system');
  if (session.format === 'copilot-cli' && !recordsPrompt()) return base + D.COPILOT_SYSTEM_PROMPT_TOKENS;
  if (session.format === 'openhands' && !recordsPrompt()) return base + D.OPENHANDS_UNRECORDED_PROMPT_TOKENS;
  if (session.format === 'kimi-cli' && !recordsPrompt()) return base + D.KIMI_CLI_SYSTEM_PROMPT_TOKENS;
  if (session.format === 'anthropic' && session.extra?.harness === 'cline' && !recordsPrompt())
    return base + D.CLINE_SYSTEM_PROMPT_TOKENS;
  return base;
}
