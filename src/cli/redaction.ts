import { createRedactor, type Redactor } from '../redact/redact.js';
import { resolveConfig } from './config-options.js';

/**
 * The redactor for a command without configuration flags of its own (export, replay): the configuration file's
 * `redaction` settings when there is one (found as every command finds it), else the defaults (on).
 */
export async function outputRedactor(): Promise<Redactor> {
  return createRedactor((await resolveConfig({})).redaction);
}
