// abridge-context/config — the configuration file (zod-validated; a subpath so that importing the core does not load zod).
export {
  parseConfig,
  mergeConfig,
  configJsonSchema,
  validateConfig,
  DEFAULT_CONFIG,
  type AbridgeConfig,
  type ConfigOverrides,
} from './manager/config.js';
export {
  loadConfig,
  findConfigFile,
  parseConfigText,
  CONFIG_FILE_NAME,
  CONFIG_DIR_NAME,
} from './manager/config-file.js';
