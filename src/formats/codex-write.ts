/**
 * Codex CLI rollouts written: a rollout read as Codex comes back byte for byte, with abridge's compactions added as
 * Codex records them (`compacted` with a `replacement_history`), and another agent's session becomes a new rollout
 * (`session_meta`, then one `response_item` a message part) — what `codex resume` loads.
 *
 * On resume Codex rebuilds the history from the rollout: every `response_item` in order, and a `compacted` record that
 * carries `replacement_history` replaces everything before it with those items. So abridge writes its compaction as
 * the compacted view itself, item for item (the summary a user message at its place), and the reader expands the same
 * list into the messages after the marker: what the reader reports is what Codex sends.
 */
import type { Entry, Message, Part, ResultContentPart, Session } from '../model/types.js';
import { argumentsText, compactionText, EPOCH_ISO, isoTime } from '../model/parts.js';
import { activeView, type AbridgeMarker } from '../model/view.js';
import { writeJsonl, type JsonlLine } from './jsonl.js';
import { dataUrl, inlineText, mediaPlaceholder } from './request-body.js';

type Item = Record<string, unknown>;

/** The Codex version whose rollout vocabulary abridge writes (a rollout names the CLI that wrote it). */
const WRITTEN_AS = '0.171.0';

export function writeCodex(session: Session, options: { redact?: (text: string) => string } = {}): string {
  const redact = options.redact ?? ((t: string) => t);
  const same = session.format === 'codex';
  const lines: JsonlLine[] = [];
  const add = (timestamp: string, type: string, payload: Item) =>
    lines.push({ text: redact(JSON.stringify({ timestamp, type, payload })) });
  if (!same) add(isoTime(session.info.startedAt) ?? EPOCH_ISO, 'session_meta', sessionMeta(session));
  for (const e of session.entries) {
    if (same && e.fromSameRecord) continue;
    if (same && (e.raw !== undefined || e.rawText !== undefined)) {
      lines.push({
        text: e.rawText ?? JSON.stringify(e.raw),
        sameLineAsPrevious: e.sameLineAsPrevious,
        blankLinesBefore: e.blankLinesBefore,
      });
      continue;
    }
    const at = isoTime(e.timestamp) ?? isoTime(e.message?.timestamp) ?? EPOCH_ISO;
    if (e.compaction?.source === 'abridge') {
      add(at, 'compacted', compactedPayload(session, e, e.compaction as AbridgeMarker, same));
      continue;
    }
    if (!e.message || (e.kind === 'header' && e.message.role === 'system')) continue;
    for (const item of codexItems(e.message, { reasoning: same })) add(at, 'response_item', item);
  }
  return writeJsonl(lines, same ? session : {});
}

/** A new rollout's first record: the session's id (a UUID, as Codex names threads), where and when it ran. */
function sessionMeta(session: Session): Item {
  return {
    id: session.info.id,
    timestamp: isoTime(session.info.startedAt) ?? EPOCH_ISO,
    cwd: session.info.cwd ?? '',
    originator: 'abridge',
    cli_version: WRITTEN_AS,
    source: 'cli',
    model_provider: 'openai',
  };
}

/**
 * abridge's compaction as a Codex `compacted` record: `message` is the summary (what `codex` shows of it), and the
 * `replacement_history` is the whole compacted view as Codex will send it. The instructions Codex read from the
 * rollout's header are not items: they stay out of it.
 */
function compactedPayload(session: Session, e: Entry, marker: AbridgeMarker, same: boolean): Item {
  const view = activeView({ ...session, entries: session.entries.slice(0, e.index + 1) });
  const history: Item[] = [];
  for (const v of view) {
    const from = v.entry === undefined ? undefined : session.entries[v.entry];
    if (from?.kind === 'header') continue;
    history.push(...codexItems(v.message, { reasoning: same }));
  }
  return { message: marker.summary, replacement_history: withAbortedOutputs(history) };
}

/**
 * A call no output answers (a step cut off, its output still to come) is answered `aborted` right after it, as Codex
 * answers it when it loads such a history: written so, the file says what Codex will send.
 */
function withAbortedOutputs(history: Item[]): Item[] {
  const answered = new Set(history.filter((i) => i.type === 'function_call_output').map((i) => i.call_id));
  return history.flatMap((i) =>
    i.type === 'function_call' && !answered.has(i.call_id)
      ? [i, { type: 'function_call_output', call_id: i.call_id, output: 'aborted' }]
      : [i],
  );
}

/**
 * One message as the response items Codex records: text and images as a `message` (input parts for what the model
 * reads, output parts for what it wrote), each tool call a `function_call`, each result a `function_call_output`.
 * Reasoning goes back only as Codex's own encrypted item (`reasoning`: true for a rollout's own messages); another
 * provider's thinking cannot be sent to OpenAI and is left out.
 */
export function codexItems(m: Message, o: { reasoning: boolean }): Item[] {
  const out: Item[] = [];
  const assistant = m.role === 'assistant';
  const role = m.role === 'system' ? 'developer' : assistant ? 'assistant' : 'user';
  let content: Item[] = [];
  const flush = () => {
    if (content.length) out.push({ type: 'message', role, content });
    content = [];
  };
  const text = (t: string) => content.push({ type: assistant ? 'output_text' : 'input_text', text: t });
  for (const p of m.parts) {
    switch (p.type) {
      case 'text':
        // Whitespace alone is no content (every API encoder of abridge's drops it; the Responses API may refuse it).
        if (p.text.trim() !== '') text(p.text);
        break;
      case 'image':
      case 'file': {
        const media = assistant ? undefined : mediaItem(p);
        if (media) content.push(media);
        else text(mediaPlaceholder(p));
        break;
      }
      case 'compaction': {
        const item = p.marker.native?.provider === 'openai' ? nativeCompaction(p.marker.native.item) : undefined;
        if (item) {
          flush();
          out.push(item);
        } else text(compactionText(p.marker));
        break;
      }
      case 'thinking':
        if (o.reasoning && assistant && p.signature && !p.signature.trimStart().startsWith('{')) {
          flush();
          out.push({
            type: 'reasoning',
            summary: p.text && !p.redacted ? [{ type: 'summary_text', text: p.text }] : [],
            content: null,
            encrypted_content: p.signature,
          });
        }
        break;
      case 'tool-call':
        flush();
        out.push({
          type: 'function_call',
          name: p.name,
          arguments: argumentsText(p.arguments) || '{}',
          call_id: p.id,
        });
        break;
      case 'tool-result':
        flush();
        out.push({ type: 'function_call_output', call_id: p.callId, output: outputOf(p.content) });
        break;
    }
  }
  flush();
  return out;
}

function mediaItem(p: Part): Item | undefined {
  if (p.type === 'image') {
    if (p.data) return { type: 'input_image', image_url: dataUrl(p.mediaType ?? 'image/png', p.data) };
    if (p.url && /^https?:/.test(p.url)) return { type: 'input_image', image_url: p.url };
    return undefined;
  }
  if (p.type !== 'file') return undefined;
  const t = inlineText(p);
  return t === undefined ? undefined : { type: 'input_text', text: p.name ? `${p.name}:\n${t}` : t };
}

/**
 * A result's output: its text as a string (what Codex records for its own tools), or a list of content items when it
 * holds an image — or when the text itself reads as an older Codex shell output (`{"output": …}`), which a reader
 * would unwrap: a list keeps it as the text it is.
 */
function outputOf(content: readonly ResultContentPart[]): string | Item[] {
  const media = content.some((c) => c.type !== 'text' && mediaItem(c as Part) !== undefined);
  const joined = content.map((c) => (c.type === 'text' ? c.text : mediaPlaceholder(c))).join('\n');
  if (!media && !readsAsShellOutput(joined)) return joined;
  return content.map((c) =>
    c.type === 'text'
      ? { type: 'input_text', text: c.text }
      : (mediaItem(c as Part) ?? { type: 'input_text', text: mediaPlaceholder(c) }),
  );
}

function readsAsShellOutput(text: string): boolean {
  if (!text.trimStart().startsWith('{')) return false;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && typeof (v as { output?: unknown }).output === 'string';
  } catch {
    return false;
  }
}

/** OpenAI's compaction item as Codex keeps it: its encrypted summary (and id), nothing the API would refuse. */
function nativeCompaction(item: Record<string, unknown>): Item | undefined {
  if (typeof item.encrypted_content !== 'string' || item.encrypted_content === '') return undefined;
  return { type: 'compaction', encrypted_content: item.encrypted_content };
}
