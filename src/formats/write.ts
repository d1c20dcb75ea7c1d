import { AbridgeError } from '../errors.js';
import type { FormatId, Session } from '../model/types.js';
import { getFormat } from './registry.js';

/**
 * Serializes a session in a format. A session read from the same format is written back byte-identically; from
 * another format, it is converted (pi and Claude Code transcripts, or API request bodies).
 */
export function writeSession(session: Session, format: FormatId | string = session.format): string {
  const f = getFormat(format);
  if (!f.write) throw new AbridgeError('NOT_WRITABLE_FORMAT', `abridge cannot write the ${f.label} format (writable: pi, claude-code, anthropic, openai-chat, openai-responses)`);
  return f.write(session);
}
