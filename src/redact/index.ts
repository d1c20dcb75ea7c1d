export {
  createRedactor,
  DEFAULT_REDACTION,
  findSecrets,
  noRedaction,
  redactionMarker,
  redactionRules,
  redactMarker,
  redactMessage,
  redactPart,
  redactSecrets,
  redactValue,
  type RedactionSettings,
  type Redactor,
  type SecretMatch,
} from './redact.js';
export { entropy, SECRET_KINDS, SECRET_RULES, type SecretRule } from './rules.js';
