/**
 * Cursor agent transcripts (`~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl`), which Cursor's CLI and
 * TUI write beside their own store (a blob database, `~/.cursor/chats/<hash>/<id>/store.db`). Read from real files
 * written by cursor-agent (the harness captures committed in inference-sh/agentprotocol, transcript/cursor/testdata):
 *
 * - One message a line, bare: `{"role": "user" | "assistant", "message": {"content": [Anthropic blocks]}}` — no type,
 *   id, timestamp, model or usage. Blocks: `text`, `tool_use` (`{name, input}`, with no `id`), reasoning.
 * - `{"type": "turn_ended", "status": "success"}` at the end of each turn.
 * - No tool results: Cursor writes the calls, not what they returned (the results live only in its blob store). The
 *   calls are read with ids made from their line, and the session notes once that their results are not recorded, so a
 *   count of this transcript is a floor of what Cursor sent.
 *
 * Cursor never loads this file back (it resumes from its store), so abridge reads it for inspection and writes none.
 */
import type { EntryDraft, Message, Part, Problem, SessionInfo } from '../model/types.js';
import { asString, isRecord, share, type DecodeContext, type EntryDecoder, type TranscriptFormat } from './format.js';
import { contentParts } from './claude-code.js';

const ROLES = new Set(['user', 'assistant', 'system']);

class CursorDecoder implements EntryDecoder {
  private calls = 0;
  private results = 0;
  private firstCallLine: number | undefined;

  decode(r: Record<string, unknown>, ctx: DecodeContext): EntryDraft[] {
    const type = asString(r.type);
    const role = asString(r.role);
    const base: EntryDraft = { kind: 'event', sourceType: type ?? role ?? '', raw: r };
    if (role === undefined) {
      if (type === 'turn_ended') return [base];
      ctx.problem({
        kind: type === undefined ? 'invalid-entry' : 'unknown-entry-type',
        message:
          type === undefined
            ? `line ${ctx.line}: expected a Cursor transcript line {"role", "message": {"content"}} or {"type": "turn_ended"}; kept as is`
            : `line ${ctx.line}: unknown Cursor transcript record type "${type}" (expected turn_ended); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const m = r.message;
    if (!ROLES.has(role) || !isRecord(m) || (typeof m.content !== 'string' && !Array.isArray(m.content))) {
      ctx.problem({
        kind: 'invalid-entry',
        message: `line ${ctx.line}: Cursor transcript line needs "role" user, assistant or system and "message.content" (a list of blocks or a string); kept as is`,
      });
      base.kind = 'unknown';
      return [base];
    }
    const parts = contentParts(m.content).map((p, i) => {
      if (p.type !== 'tool-call') return p;
      this.calls++;
      if (this.firstCallLine === undefined) this.firstCallLine = ctx.line;
      // Cursor's calls carry no id: one made from the line and the block, stable across reads.
      return p.id === '' ? { ...p, id: `cursor-call-${ctx.line ?? ctx.nextIndex}-${i}` } : p;
    });
    const results = parts.filter((p) => p.type === 'tool-result');
    this.results += results.length;
    if (parts.length === 0) return [base];
    if (role === 'user' && results.length > 0) {
      // Tool results (should a version write them) first, as the tool message answering the previous turn.
      const drafts: EntryDraft[] = [{ ...base, kind: 'message', message: { role: 'tool', parts: results } }];
      const others: Part[] = parts.filter((p) => p.type !== 'tool-result');
      if (others.length > 0)
        drafts.push({ kind: 'message', sourceType: role, message: { role: 'user', parts: others } });
      return drafts;
    }
    const message: Message = { role: role as Message['role'], parts };
    return [{ ...base, kind: 'message', message }];
  }

  finish(): { info: SessionInfo; problems?: Problem[] } {
    if (this.calls === 0 || this.results > 0) return { info: {} };
    return {
      info: {},
      problems: [
        {
          line: this.firstCallLine ?? 0,
          kind: 'invalid-entry',
          message: `Cursor's transcript records ${this.calls} tool call(s) but none of their results (they are kept only in Cursor's own store): counts of this session leave them out`,
        },
      ],
    };
  }
}

/** A bare Cursor line: a top-level role and a message holding content, with none of Claude Code's record keys. */
function isCursorLine(r: Record<string, unknown>): boolean {
  if (r.type === 'turn_ended' && r.role === undefined) return true;
  if ('type' in r || 'uuid' in r || 'sessionId' in r || 'parentUuid' in r) return false;
  return (
    typeof r.role === 'string' &&
    ROLES.has(r.role) &&
    isRecord(r.message) &&
    (Array.isArray(r.message.content) || typeof r.message.content === 'string') &&
    !('role' in r.message && r.message.role !== r.role)
  );
}

export const cursorFormat: TranscriptFormat = {
  id: 'cursor',
  label: 'Cursor agent transcript JSONL',
  container: 'jsonl',
  detect({ records }) {
    if (!records || records.length === 0) return 0;
    if (!records.some((r) => typeof r.role === 'string')) return 0;
    const s = share(records, isCursorLine);
    if (s >= 0.9) return 0.9;
    if (s >= 0.6) return 0.5;
    return 0;
  },
  createDecoder: () => new CursorDecoder(),
};
