export { defineTool, toolDefinitions, type AgentTool, type ToolDefinition } from './tool.js';
export { capSlice, readResultInput, readResultTool, type ReadResultInput, type ReadResultToolOptions } from './read-result.js';
export { answerLimits, DEFAULT_ANSWER_LIMITS, type AnswerLimits } from './answer-limits.js';
export {
  compactContextInput,
  compactContextTool,
  describeCompaction,
  type CompactContextInput,
  type CompactContextOutcome,
  type CompactContextToolOptions,
} from './compact-context.js';
export {
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_FILES,
  formatSize,
  MEMORY_COMMANDS,
  MEMORY_TOOL_TYPE,
  memoryInput,
  memoryTool,
  type MemoryCommand,
  type MemoryInput,
  type MemoryToolOptions,
} from './memory.js';
export {
  isAddressableName,
  MAX_DEPTH,
  MAX_PATH_BYTES,
  MAX_SEGMENT_BYTES,
  MEMORY_ROOT,
  parseMemoryPath,
  SEGMENT_PUNCTUATION,
  showPath,
  type MemoryPath,
} from './memory-paths.js';
export * from './tool-search.js';
