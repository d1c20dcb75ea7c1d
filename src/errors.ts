export type AbridgeErrorCode =
  | 'FILE_NOT_FOUND'
  | 'FILE_UNREADABLE'
  | 'FILE_UNWRITABLE'
  | 'FILE_LOCKED'
  | 'INPUT_TIMEOUT'
  | 'UNRECOGNIZED_FORMAT'
  | 'UNSUPPORTED_FORMAT'
  | 'UNKNOWN_FORMAT_ID'
  | 'NOT_WRITABLE_FORMAT'
  | 'INVALID_INPUT'
  | 'INVALID_CONFIG'
  | 'INVALID_CATALOG'
  | 'RESULT_NOT_FOUND'
  | 'STORE_ERROR'
  | 'MISSING_DEPENDENCY'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_EXISTS'
  | 'CONFLICT'
  | 'CONTEXT_OVERFLOW';

/** An error meant for a person: the message names the input and what was expected. */
export class AbridgeError extends Error {
  override readonly name = 'AbridgeError';
  constructor(
    readonly code: AbridgeErrorCode,
    message: string,
  ) {
    super(message);
  }
}
