/**
 * The canonical session model. Every transcript or API format is read into these types and written back from them.
 *
 * Two layers: an `Entry` is one record of the source (a JSONL line, an item of a request body), kept with its original
 * object in `raw` so that writing back is lossless; a `Message` is what an entry means to a model (role + ordered
 * parts). Entries that carry no message (model changes, labels, progress events…) are kept as entries too.
 */

/** Every format abridge reads, in detection order: the one list (formats/registry.ts holds a reader for each). */
export const FORMAT_IDS = [
  'pi',
  'claude-code',
  'codex',
  'swe-agent',
  'anthropic',
  'openai-chat',
  'openai-responses',
  'ai-sdk',
  'copilot-cli',
  'openhands',
  'gemini-cli',
  'opencode',
  'qwen-code',
  'deepseek-harness',
  'aider',
  'droid',
  'cursor',
  'kiro',
  'kimi-cli',
  'grok-build',
] as const;

export type FormatId = (typeof FORMAT_IDS)[number];

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface TextPart {
  type: 'text';
  text: string;
}

/** Model reasoning. `signature` is provider opaque data (not prompt text); `redacted` means `text` is not readable. */
export interface ThinkingPart {
  type: 'thinking';
  text: string;
  signature?: string;
  redacted?: boolean;
}

export interface ToolCallPart {
  type: 'tool-call';
  id: string;
  name: string;
  /** Parsed arguments when they were JSON; otherwise the raw argument string. */
  arguments: unknown;
}

/** Binary media. Never counted as text: tokens come from dimensions or size by the provider's rule. */
export interface ImagePart {
  type: 'image';
  mediaType?: string;
  /** Decoded size in bytes, when known. */
  byteSize?: number;
  width?: number;
  height?: number;
  /** A URL or file reference when the image is not inline. */
  url?: string;
  /** Inline base64 data, kept (by reference, not copied) so that converting between formats loses nothing. */
  data?: string;
}

export interface FilePart {
  type: 'file';
  mediaType?: string;
  byteSize?: number;
  name?: string;
  data?: string;
  url?: string;
}

export type ResultContentPart = TextPart | ImagePart | FilePart;

export interface ToolResultPart {
  type: 'tool-result';
  callId: string;
  toolName?: string;
  content: ResultContentPart[];
  isError: boolean;
  /**
   * The source wrote `is_error: false` (Claude Code does for some results): encoders repeat it, so that a request is
   * the one the agent sends, to the token.
   */
  isErrorExplicit?: true;
}

/** Where an agent (or abridge) compacted the conversation: the model saw `summary` instead of the archived range. */
export interface CompactionMarker {
  /** 1-based count of compactions in this session, in order. */
  number: number;
  summary: string;
  /** Entry indexes (inclusive) of the history the summary replaced, when known. */
  archived?: { fromEntry: number; toEntry: number };
  /** Id of the first entry kept verbatim after the marker, when the format names it. */
  firstKeptEntryId?: string;
  /** Index of the first entry kept verbatim, when it could be resolved. */
  firstKeptEntry?: number;
  tokensBefore?: number;
  tokensAfter?: number;
  strategies?: string[];
  /** Which agent made it: 'pi', 'claude-code', 'codex', 'abridge'… */
  source: string;
  trigger?: string;
  /**
   * A compaction the provider made (Anthropic `compaction` block, OpenAI Responses `compaction` item): its item as the
   * API returned it, sent back as it is — the provider drops everything before it. `summary` holds its readable text
   * where the provider gives one (Anthropic), else it is empty (OpenAI's is encrypted).
   */
  native?: NativeCompaction;
}

/** A provider's own compaction item, kept to send back (`CompactionMarker.native`). */
export interface NativeCompaction {
  provider: 'anthropic' | 'openai';
  item: Record<string, unknown>;
}

export interface CompactionPart {
  type: 'compaction';
  marker: CompactionMarker;
}

export type Part = TextPart | ThinkingPart | ToolCallPart | ToolResultPart | ImagePart | FilePart | CompactionPart;
export type PartType = Part['type'];

/**
 * Provider-reported usage of one request, normalized: `input` is the prompt tokens billed at the full rate (not read
 * from or written to cache), so the prompt size is always input + cacheRead + cacheWrite.
 */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning?: number;
  /** The context window the agent reported for this request, when it did (Codex). */
  contextWindow?: number;
  /**
   * Prompt tokens the provider's own context management removed before billing (Anthropic's applied edits): the request
   * as sent held `input + cacheRead + cacheWrite + cleared` tokens (`sentTokens`). Absent when nothing was removed.
   */
  cleared?: number;
}

export interface Message {
  role: Role;
  parts: Part[];
  model?: string;
  provider?: string;
  usage?: Usage;
  /**
   * Provider response id. Several entries can share one (Claude Code writes one entry per content block of a
   * response, each repeating the usage): count usage once per responseId.
   */
  responseId?: string;
  stopReason?: string;
  /** Epoch milliseconds. */
  timestamp?: number;
  /** A message injected by the harness (reminders, hook output) rather than typed by a person. */
  synthetic?: boolean;
  /**
   * Pinned by the host: compaction keeps it verbatim through every strategy (never cleared, shortened or archived),
   * counted among what must stay. Kept by the session stores; the transcript writers leave it out (no agent's format
   * has such a field: `compact --pin` names pinned entries of a file instead).
   */
  pinned?: true;
}

export type EntryKind =
  | 'header'
  | 'message'
  | 'compaction'
  | 'model-change'
  | 'thinking-level'
  | 'branch-summary'
  | 'label'
  | 'session-info'
  | 'custom'
  | 'event'
  | 'unknown';

export interface Entry {
  /** Position in the session, 0-based, in source order. */
  index: number;
  kind: EntryKind;
  /** The format's own record type (`message`, `compaction`, `response_item/function_call`…). */
  sourceType?: string;
  id?: string;
  parentId?: string | null;
  /** A parent link that crosses a compaction boundary (Claude Code `logicalParentUuid`). */
  logicalParentId?: string;
  /** Epoch milliseconds. */
  timestamp?: number;
  message?: Message;
  compaction?: CompactionMarker;
  model?: { provider?: string; id: string };
  /** Belongs to a subagent run inside the main transcript (Claude Code sidechains, Codex sub-agents). */
  sidechain?: boolean;
  /** The original record, unknown fields included: writers of the same format serialize it as it was. */
  raw?: unknown;
  /** 1-based physical line of the source, for JSONL formats. */
  line?: number;
  /** True when this record shared its physical line with the previous record (a real-world corruption kept as is). */
  sameLineAsPrevious?: boolean;
  /**
   * This entry was derived from the same source record as the previous entry (one record meaning two messages, e.g. a
   * Claude Code user record holding tool results and text). Writers of the source format skip it: the record is
   * written once, from the first entry's `raw`.
   */
  fromSameRecord?: boolean;
  /** Blank lines just before this record's line in the source. */
  blankLinesBefore?: number;
  /**
   * The source text of a line that could not be parsed, or of a record that serializing `raw` again would not give
   * back byte for byte (other spacing or escapes, several objects on one line): writers of the source format write it
   * instead of `raw`, so that nothing is lost when the session is written.
   */
  rawText?: string;
  /** Usage reported by an event record for the request that just finished (Codex `token_count`). */
  usage?: Usage;
}

/** An entry before it has its place in a session. */
export type EntryDraft = Omit<Entry, 'index'>;

export type ProblemKind =
  | 'invalid-json'
  | 'multiple-objects'
  | 'truncated-line'
  | 'not-an-object'
  | 'invalid-utf8'
  | 'unknown-entry-type'
  | 'invalid-entry'
  /** The file holds more than one conversation (OpenHands: one per benchmark instance); the first was read. */
  | 'more-sessions'
  /** A provider's usage report that cannot be a count of the request sent: recorded, not used. */
  | 'implausible-usage'
  /** A timestamp no date can hold (beyond ±8.64e15 ms of 1970, or not finite): dropped, the record read without it. */
  | 'bad-timestamp';

/** A record the reader could not take as it was. Reading always continues. */
export interface Problem {
  line: number;
  kind: ProblemKind;
  message: string;
}

/**
 * What a session ran with, as the program that kept it knew it: abridge's ContextManager writes it when it creates a
 * session and again when it changes (a model switch, a window a provider's refusal stated). Readers of a stored
 * session (`inspect --db`, `view --db`, `ContextManager.resume`) take the window and reserve from here rather than
 * from the catalog, unless told otherwise.
 */
export interface SessionSettings {
  /** Who wrote the session: `context-manager` for abridge's ContextManager. */
  writer?: 'context-manager';
  /** The model requests went to last. */
  model?: string;
  /** The wire format requests were sent in (`anthropic`, `openai-chat`, `openai-responses`). */
  provider?: string;
  /** The window the session ran in, in tokens (a stated or configured one, not only the catalog's). */
  contextWindow?: number;
  /** The max output a request reserved by default, in tokens. */
  reserveTokens?: number;
}

export interface SessionInfo {
  id?: string;
  cwd?: string;
  /** Format version when the format has one (pi header `version`; absent for the older header). */
  version?: number;
  title?: string;
  startedAt?: number;
  /** What the session ran with (model, provider, window, reserve), when the program that kept it said. */
  settings?: SessionSettings;
}

export interface Session {
  format: FormatId;
  info: SessionInfo;
  entries: Entry[];
  problems: Problem[];
  /** Whether the source ended with a newline (JSONL formats), so that writing back is byte-identical. */
  finalNewline?: boolean;
  /** Blank lines at the end of the source (JSONL formats). */
  trailingBlankLines?: number;
  /** Format-specific data needed to write back (e.g. request-body fields outside the messages). */
  extra?: Record<string, unknown>;
}
