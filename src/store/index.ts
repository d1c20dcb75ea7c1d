export {
  countLines,
  DEFAULT_READ_LIMIT,
  describeText,
  formatSlice,
  makeSlice,
  MAX_READ_LIMIT,
  normalizeRange,
  REF_ID_PATTERN,
  REF_ID_SHAPE,
  refIdFor,
  resultNotFound,
  SessionResultStore,
  sessionRefIdFor,
  sliceHeader,
  sliceLines,
  validateRefId,
  type KeyedResultStore,
  type ResultSlice,
  type ResultStore,
  type StoredResult,
  type StoredResultMeta,
} from '../compaction/result-store.js';
export { MemoryResultStore, type MemoryResultStoreOptions } from '../compaction/memory-result-store.js';
export { FileResultStore, type FileResultStoreOptions } from './file-result-store.js';
export { MemorySessionStore, type MemorySessionStoreOptions } from './memory-session-store.js';
export {
  importSession,
  loadSession,
  type NewSession,
  type ResumedSession,
  type SessionSnapshot,
  type SessionStore,
  type StoredSession,
} from './session-store.js';
