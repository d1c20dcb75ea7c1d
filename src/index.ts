export * from './model/index.js';
export * from './formats/index.js';
export { AbridgeError, type AbridgeErrorCode } from './errors.js';
export * from './tokens/index.js';
export * from './budget/index.js';
