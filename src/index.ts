export * from './model/index.js';
export * from './formats/index.js';
export { AbridgeError, type AbridgeErrorCode } from './errors.js';
export * from './tokens/index.js';
export * from './budget/index.js';
export { parseConfig, mergeConfig, configJsonSchema, DEFAULT_CONFIG, type AbridgeConfig, type ConfigOverrides } from './manager/config.js';
export { loadConfig, findConfigFile, CONFIG_FILE_NAME } from './manager/config-file.js';
export * from './store/index.js';
export * from './compaction/index.js';
