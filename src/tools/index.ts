// `abridge-context/tools`: the agent-callable tools (zod schemas, text answers). Their internals (memory paths, answer
// trimming, search terms) are not public.
export { defineTool, toolDefinitions, type ToolDefinition } from './tool.js';
// AgentTool, what these return, is the core's (abridge-context), where ContextManager.tools() returns it.
export { readResultInput, readResultTool, type ReadResultInput, type ReadResultToolOptions } from './read-result.js';
export { DEFAULT_ANSWER_LIMITS, type AnswerLimits } from './answer-limits.js';
export {
  compactContextInput,
  compactContextTool,
  type CompactContextInput,
  type CompactContextOutcome,
  type CompactContextToolOptions,
} from './compact-context.js';
export {
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_FILES,
  MEMORY_COMMANDS,
  MEMORY_TOOL_TYPE,
  memoryInput,
  memoryTool,
  type MemoryCommand,
  type MemoryInput,
  type MemoryToolOptions,
} from './memory.js';
export { TOOL_SEARCH_NAME, searchDeferredTools, toolSearchTool, type ToolHit } from './tool-search.js';
