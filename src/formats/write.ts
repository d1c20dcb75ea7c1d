import { AbridgeError } from '../errors.js';
import type { FormatId, Session } from '../model/types.js';
import { createRedactor, redactSerialized, type Redactor } from '../redact/redact.js';
import { writePiChunks } from './pi-write.js';
import { getFormat } from './registry.js';

export interface WriteOptions {
  /** The secret redaction applied to what abridge makes (default: the built-in detector; `noRedaction` turns it off). */
  redact?: Redactor;
  /**
   * Redact the transcript's own records too (an export: the transcript leaves for another place). The result is still
   * a transcript the agent resumes — each line valid JSON, a line without a secret byte for byte as it was (see
   * redactSerialized). Default false: a transcript written back to its own file keeps its records as they were.
   */
  redactOriginal?: boolean;
}

/**
 * Serializes a session in a format. A session read from the same format is written back byte-identically; from
 * another format, it is converted (pi and Claude Code transcripts, or API request bodies).
 *
 * Redaction: an agent's transcript written back in its own format holds the user's own records as they were (the
 * records abridge added — compaction summaries and edits — were redacted when they were made); anything else is a new
 * document abridge makes (a request body, a conversion), and recognized secrets are redacted from all of it.
 */
export function writeSession(
  session: Session,
  format: FormatId | string = session.format,
  options: WriteOptions = {},
): string {
  const f = getFormat(format);
  if (!f.write)
    throw new AbridgeError(
      'NOT_WRITABLE_FORMAT',
      `abridge cannot write the ${f.label} format (writable: pi, claude-code, codex, anthropic, openai-chat, openai-responses)`,
    );
  const redact = options.redact ?? createRedactor();
  // The user's own transcript: its records as they were, the records abridge added redacted by the writer.
  if (f.id === session.format && TRANSCRIPT_FORMATS.includes(f.id)) {
    const text = f.write(session, { redact });
    return options.redactOriginal ? redactSerialized(text, redact) : text;
  }
  return redactSerialized(f.write(session), redact);
}

/**
 * The same text as {@link writeSession}, in pieces that each end at the end of a line: a pi transcript is serialized a
 * piece at a time (a 100 MB session is never one string), other formats come whole, as one piece. For writing to a
 * file or a stream.
 */
export function writeSessionChunks(
  session: Session,
  format: FormatId | string = session.format,
  options: WriteOptions = {},
): Iterable<string> {
  const f = getFormat(format);
  if (f.id !== 'pi' || session.format !== 'pi') return [writeSession(session, format, options)];
  const redact = options.redact ?? createRedactor();
  const chunks = writePiChunks(session, { redact });
  if (!options.redactOriginal) return chunks;
  return (function* () {
    // Each piece is whole lines, and redactSerialized works line by line: the same text as redacting the whole.
    for (const chunk of chunks) yield redactSerialized(chunk, redact);
  })();
}

/** Agents' own transcript formats: written back as they were read. */
const TRANSCRIPT_FORMATS: readonly FormatId[] = ['pi', 'claude-code', 'codex', 'swe-agent'];
