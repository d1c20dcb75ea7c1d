export {
  PromptBuilder,
  minCacheableTokens,
  MAX_CACHE_BREAKPOINTS,
  type PromptSection,
  type PromptProvider,
  type PromptBuilderOptions,
  type BuildOptions,
  type BuiltPrompt,
  type PromptBlock,
  type CacheBreakpoint,
  type BreakpointSite,
  type CacheControl,
  type AnthropicSystemBlock,
  type CachedMessageParam,
  type ToolDefinitionLike,
} from './builder.js';
export { contextNote, contextNoteSection, fillOf, percentUsed, CONTEXT_NOTE_THRESHOLD, CONTEXT_NOTE_SECTION, COMPACT_TOOL_NAME, type ContextFill, type ContextNoteOptions } from './context-note.js';
export * from './deferral.js';
