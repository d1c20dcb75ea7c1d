import { redactConnectionStrings } from '../errors.js';
import { redactSecrets } from './redact.js';

export { redactConnectionStrings };

/**
 * A message for a person (an error, a warning): the passwords of its connection strings hidden, and every secret the
 * built-in rules recognize redacted. Applied whatever the configuration says: a message is never the place for one.
 */
export function redactForMessage(text: string): string {
  return redactSecrets(redactConnectionStrings(text));
}
