import { AbridgeError } from '../errors.js';
import type { Entry } from '../model/types.js';
import { redactSerialized, type Redactor } from '../redact/redact.js';
import type { SessionLayout } from '../store/session-store.js';

/**
 * The text of a transcript written back record by record, as `writeSession` writes a session whose entries are all
 * as read (see `isAsRead`) in its own format: each record's source text (or its raw record serialized), on its line,
 * with the records that shared a line still sharing it, blank lines where they were, and the file's final newline and
 * trailing blank lines. Each physical line is redacted as `writeSession(…, { redactOriginal: true })` redacts it
 * (redactSerialized, line by line: a line without a secret stays byte for byte as it was).
 *
 * `add` returns the text complete so far (lines are given out whole, once redacted); `end` the rest.
 */
export class TranscriptLines {
  private pending = '';
  private first = true;

  constructor(
    private readonly redact: Redactor,
    private readonly layout: SessionLayout = {},
  ) {}

  add(e: Entry): string {
    if (e.fromSameRecord) return '';
    const text = e.rawText ?? (e.raw !== undefined ? JSON.stringify(e.raw) : undefined);
    if (text === undefined)
      throw new AbridgeError(
        'STORE_ERROR',
        `entry ${e.index} has no record to write back (it was not read from a transcript)`,
      );
    let out = '';
    if (!this.first && !e.sameLineAsPrevious) out += this.newline();
    for (let n = e.blankLinesBefore ?? 0; n > 0; n--) out += this.newline();
    this.pending += text;
    this.first = false;
    return out;
  }

  end(): string {
    let out = '';
    if (!this.first && (this.layout.finalNewline ?? true)) out += this.newline();
    for (let n = this.layout.trailingBlankLines ?? 0; n > 0; n--) out += this.newline();
    out += this.line(this.pending);
    this.pending = '';
    return out;
  }

  private newline(): string {
    const line = this.line(this.pending);
    this.pending = '';
    return `${line}\n`;
  }

  private line(text: string): string {
    return text === '' ? text : redactSerialized(text, this.redact);
  }
}
