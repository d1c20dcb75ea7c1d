/**
 * abridge's defaults, in one place: every number a caller or abridge.config.json can override, and the measured seeds
 * the counting starts from. The bottom layer (it imports only the model's types), so that every layer reads its
 * defaults from here; `manager/defaults.ts` re-exports them beside the ContextManager's own. Each module that takes an
 * option names its default here (e.g. budget/defaults.ts re-exports DEFAULT_THRESHOLDS).
 */
import type { FormatId } from './model/types.js';

// ---------------------------------------------------------------------------------------------------------------------
// Budget

/** Warn at 80%, compact at 90%, block at 98% of the effective window; compaction aims for 60%. */
export const DEFAULT_THRESHOLDS = { warn: 0.8, compact: 0.9, block: 0.98, target: 0.6 };

/** The seeds' allocation plan, as shares of the window. Not applied unless asked for (`"allocations": "seed"` in abridge.config.json). */
export const SEED_ALLOCATIONS = {
  system: { share: 0.05 },
  skills: { share: 0.03 },
  knowledgeBase: { share: 0.03 },
  crossIssue: { share: 0.02 },
  summary: { share: 0.1 },
  recent: { share: 0.3 },
  prompt: { share: 0.02 },
  response: { share: 0.45 },
};

/** Window and max output of a model the catalog does not know. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_000;
/** The response reserve never exceeds this by default, whatever the model's maximum output. */
export const DEFAULT_RESERVE_CAP = 32_000;

// ---------------------------------------------------------------------------------------------------------------------
// Token counting seeds (measured: `npm run bench:tokens`)

/**
 * Provider tokens per estimated (o200k-like) token, before a session teaches better. Measured on real transcripts by
 * `npm run bench:tokens` (the "learned ratio" column). They include what the estimator does not see: each provider's
 * own tokenizer (Claude's yields ~10–20% more tokens than o200k for code and tool output) and request framing.
 */
export const FAMILY_RATIO = { claude: 1.16, gpt: 1.14, gemini: 1.18, other: 1.15 };

/**
 * How much a seed ratio weighs against what a session shows, in estimated tokens: after a few thousand tokens of
 * observed growth the session's own ratio dominates.
 */
export const CALIBRATION_PRIOR_WEIGHT = 500;

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
  // Its tool definitions: 4,481 tokens by Copilot CLI 1.0.68's own count (`session.shutdown` toolDefinitionsTokens).
  // Versions from 1.0.64 record the system prompt (`system.message`); for older ones see COPILOT_SYSTEM_PROMPT_TOKENS.
  'copilot-cli': 4500,
  // Runs from 0.33 record the system prompt (the `system` action) and their tools (counted from the request's tools);
  // older ones record neither: see OPENHANDS_UNRECORDED_PROMPT_TOKENS.
  openhands: 0,
  // Not in its session files: the system prompt (17.4–22k characters: Gemini CLI's prompts.test.ts snapshots, last
  // JSON-session version), the tool declarations (~19–28k characters of compact JSON for the default set, by
  // coreToolsModelSnapshots: read_file, replace, run_shell_command, grep_search…, more with write_todos/ask_user) and
  // the <session_context> turn (date, OS, folder listing; ~1k tokens). ~47k characters / 4 ≈ 12,000 tokens.
  'gemini-cli': 12000,
  // Not in its exports: the system prompt (session/prompt/anthropic.txt 8.2k characters, beast.txt 11.1k for GPT
  // models, plus the environment block and instruction files, ~1k) and the tool definitions: descriptions in
  // tool/*.txt — bash 9.7k, todowrite 8.9k, task 4.2k (plus its agent list), edit 1.4k, read 1.2k, and write, glob,
  // grep, webfetch, skill… ~4k — with their JSON parameter schemas (~5k). ~43k characters / 4 ≈ 11,000 tokens.
  opencode: 11000,
  // Not in its chat recordings: the system prompt (core/src/core/prompts.ts getCoreSystemPrompt: ~20–25k characters
  // with its tool-use examples and the environment context) and the tool declarations (~25–30k characters of JSON:
  // todo_write's long description, agent, run_shell_command, edit, read_file, grep_search, glob, skill, web_fetch…, more
  // with MCP servers). An estimate, not a measured count: ~55k characters / 4 ≈ 14,000 tokens.
  'qwen-code': 14000,
  // Its log records the system prompt and the tool definitions of every request (`request/header`, amended by
  // `request/header-delta`): the reader counts them, nothing of the prompt is left unrecorded.
  'deepseek-harness': 0,
  // Not in its chat history: the system prompt of its edit format with its example exchange (~1,500–2,500 tokens for
  // diff and whole), the repository map (`--map-tokens`, 1,024 by default, more when no file is in the chat) and the
  // files added to the chat, which vary from request to request: its token reports teach the rest. The corpus' first
  // requests: 3.2k sent for a one-line input (diff format, 4,096-token map), 1.8k (whole format, 1,024-token map).
  aider: 2500,
  // Not in its sessions: the system prompt and the tool definitions (Read, Execute, Edit, ApplyPatch, Grep, Glob, Task,
  // TodoWrite, ToolSearch…). The environment, skills, subagents and deferred-tool list ARE recorded (the first message,
  // `visibility: "llm_only"`) and counted. An estimate, not a measured count: the size of a Claude-Code-like prompt and
  // tool set without its recorded parts.
  droid: 12000,
  // Not in its agent transcripts: the system prompt, the tool definitions and every tool result (see formats/cursor.ts).
  // An estimate of the first two only, not a measured count.
  cursor: 12000,
  // Not in its sessions: the system prompt and the tool specifications (read, write, shell, grep, glob, aws…); hooks'
  // context is recorded with each prompt. An estimate, not a measured count.
  kiro: 12000,
  // Not in its context files: the tool definitions — the default agent's 16 tools (src/kimi_cli/tools/*/*.md in
  // MoonshotAI/kimi-cli: ~21k characters of descriptions, with their JSON schemas ~26k) ≈ 6,500 tokens, more with MCP
  // servers. Files from 2026-03 on record the system prompt (`_system_prompt`); for older ones see
  // KIMI_CLI_SYSTEM_PROMPT_TOKENS. An estimate, not a measured count.
  'kimi-cli': 6500,
  // Not in its chat history: the tool definitions (read_file, search_replace, write, apply_patch, run_terminal_command,
  // web_search, spawn_subagent, monitor, search_tool/use_tool…); the system prompt and the <user_info> block are
  // recorded. An estimate, not a measured count (grok's source is not public): a Codex-like tool set.
  'grok-build': 8000,
};

/**
 * Kimi CLI's system prompt, added to its prefix when the context file does not record it (before 2026-03): the
 * default agent's system.md is 14.3k characters before its arguments (the work dir listing, AGENTS.md) are filled in.
 */
export const KIMI_CLI_SYSTEM_PROMPT_TOKENS = 4000;

/**
 * Copilot CLI's system prompt, added to its prefix when the transcript does not record it (versions before 1.0.64):
 * 11,340 tokens by Copilot's own count in a 1.0.68 session, 46–53 thousand characters where newer ones record it.
 */
export const COPILOT_SYSTEM_PROMPT_TOKENS = 11000;

/**
 * OpenHands' system prompt and what came with it, for runs whose history does not record a `system` action: the 2024
 * CodeAct agents' prompt and in-context example (~3,130 o200k tokens), or early function-calling runs' prompt and
 * tools (~1,150 + ~1,900).
 */
export const OPENHANDS_UNRECORDED_PROMPT_TOKENS = 3500;

/**
 * Cline's and Roo Code's system prompt, which their saved conversation (`api_conversation_history.json`, a bare array of
 * Anthropic messages) does not hold: its tools described in the prompt as XML, its rules, modes and the workspace — 37,104
 * characters in Roo Code's own snapshot of it (`consistent-system-prompt.snap`), ~9,300 tokens at 4 characters a token;
 * MCP servers and custom instructions add to it.
 */
export const CLINE_SYSTEM_PROMPT_TOKENS = 9500;

/**
 * Image tokens by each provider's published rule when the dimensions are unknown (and cannot be read from the image
 * header): an image as large as the provider keeps without downscaling.
 */
export const DEFAULT_IMAGE_TOKENS = {
  // Anthropic: width × height / 750 after fitting within 1568 px and ~1.15 megapixels → at most ~1,600.
  claude: 1600,
  // OpenAI high detail: 85 + 170 per 512-px tile after fitting 2048 and a 768-px short side → 765 for 1024×1024.
  gpt: 765,
  // Google: 258 per image up to 384 px, else 258 per 768-px tile.
  gemini: 258,
  other: 1000,
};

// ---------------------------------------------------------------------------------------------------------------------
// Compaction

/** The options of each built-in strategy. */
export const DEFAULT_STRATEGY_OPTIONS = {
  clearing: { keep: 3, clearAtLeast: 0, excludeTools: [] as string[], clearToolInputs: false, untilTarget: false },
  offload: { thresholdBytes: 4096, previewChars: 200 },
  headTail: { thresholdTokens: 2000, keepTokens: 800 },
  stubInputs: { thresholdBytes: 4096 },
  summarize: {
    maxSummaryTokens: 12000,
    minSummaryTokens: 400,
    ratio: 0.4,
    maxRoomShare: 0.6,
    minRoomShare: 0.3,
    recentShare: 0.1,
  },
};

/** pi's default `keepRecentTokens`: the recent tail kept verbatim, in provider tokens, when the target allows it. */
export const DEFAULT_KEEP_RECENT_TOKENS = 20_000;

/** Lines a read of an offloaded result returns by default, and at most. */
export const DEFAULT_READ_LIMIT = 200;
export const MAX_READ_LIMIT = 2000;

// ---------------------------------------------------------------------------------------------------------------------
// Prompt and tools

/** Tool definitions are deferred once they pass this share of the usable window. */
export const DEFAULT_DEFERRAL_THRESHOLD = 0.1;

/** Share of the effective window from which the context note shows: the budget's default warn level. */
export const CONTEXT_NOTE_THRESHOLD = DEFAULT_THRESHOLDS.warn;

/** The cap on every answer of read_result, the memory tool's view and tool_search. */
export const DEFAULT_ANSWER_LIMITS = Object.freeze({ maxBytes: 32 * 1024, maxTokens: 8_000, maxLineChars: 2_000 });

/** The memory tool: largest file, and most files under its root. */
export const DEFAULT_MAX_FILE_BYTES = 256 * 1024;
export const DEFAULT_MAX_FILES = 1000;

// ---------------------------------------------------------------------------------------------------------------------
// The ContextManager

/** Defaults of the ContextManager itself. */
export const MANAGER_DEFAULTS = {
  /**
   * Room kept under window − max output for the prediction's own error, as a share of that room: small once the count
   * is anchored on the provider's bill (replay: p90 ≈ 1% across 2,760 real requests), larger on a pure estimate
   * (estimate-only p90 ≈ 15%, but here the manager sees the whole request, system prompt and tools included).
   */
  anchoredMargin: 0.02,
  estimatedMargin: 0.08,
  /**
   * A tool result is shortened as it arrives (head and tail kept, the whole offloaded behind a ref) only when it would
   * take more than this share of the free room: what the prompt may still hold before its ceiling, at least what a
   * compaction to the target would leave. A result in an empty window is kept whole up to half of that window.
   */
  arrivalRoomShare: 0.5,
  /** A tool result over this share of the effective window (window − reserve) is offloaded as it arrives, room or not. */
  arrivalHardShare: 0.5,
  /** After a provider's overflow refusal that does not say its count: assume it counted this much more than predicted. */
  overflowFactor: 1.25,
} as const;
