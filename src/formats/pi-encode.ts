/**
 * abridge's messages as pi records: the encoders the pi writer uses for entries that did not come from a pi file, for
 * the rewritten copies of a compacted view, and for the pi extension (`abridge-context/pi`), which hands pi messages back.
 */
import { EPOCH_ISO, isoTime, compactionText } from '../model/parts.js';
import type { CompactionMarker, Entry, Message, Part, Usage } from '../model/types.js';
import type { AbridgeMarker } from '../model/view.js';

/** pi message content from abridge parts (tool results are separate pi messages: see `encodeEntry`). */
export function encodeParts(parts: readonly Part[]): unknown[] {
  const out: unknown[] = [];
  for (const p of parts) {
    switch (p.type) {
      case 'text':
        out.push({ type: 'text', text: p.text });
        break;
      case 'thinking': {
        const t: Record<string, unknown> = { type: 'thinking', thinking: p.text };
        if (p.signature) t.thinkingSignature = p.signature;
        if (p.redacted) t.redacted = true;
        out.push(t);
        break;
      }
      case 'tool-call':
        out.push({ type: 'toolCall', id: p.id, name: p.name, arguments: p.arguments });
        break;
      case 'image':
        out.push({ type: 'image', data: p.data ?? '', mimeType: p.mediaType ?? 'image/png' });
        break;
      case 'file':
        out.push({ type: 'text', text: `[file ${p.name ?? ''} ${p.mediaType ?? ''} ${p.byteSize ?? '?'} bytes]` });
        break;
      case 'compaction':
        out.push({ type: 'text', text: compactionText(p.marker) });
        break;
      case 'tool-result':
        break;
    }
  }
  return out;
}

export function encodeUsage(u: Usage): Record<string, unknown> {
  const total = u.input + u.output + u.cacheRead + u.cacheWrite;
  return {
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
    totalTokens: total,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/**
 * The usage a rewritten copy of an assistant message carries: none billed. The original entry keeps what was billed
 * (so pi's cost totals count it once), and a copy must not anchor a token count on a context that is gone.
 */
export const ZERO_USAGE: Readonly<Record<string, unknown>> = Object.freeze(
  encodeUsage({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }),
);

/**
 * An abridge compaction that is not the one a written session resumes from (an earlier one, made in memory and
 * superseded before writing): a `custom` record pi ignores, kept for the record.
 */
function encodeAbridgeMarker(m: AbridgeMarker, iso: string): Record<string, unknown> {
  const { number: _n, ...saved } = m;
  return { type: 'custom', timestamp: iso, customType: 'abridge.compaction', data: { abridge: saved } };
}

/**
 * pi records (without id links) for an entry that did not come from a pi file. `written` holds the compaction markers
 * already written, so that a format that stores a compaction twice (Claude Code: boundary + summary) gives one.
 */
export function encodeEntry(e: Entry, iso: string, written: Set<CompactionMarker>): Record<string, unknown>[] {
  const carried = e.compaction ?? e.message?.parts.find((p) => p.type === 'compaction')?.marker;
  if (carried?.source === 'abridge') {
    if (written.has(carried)) return [];
    written.add(carried);
    return [encodeAbridgeMarker(carried as AbridgeMarker, iso)];
  }
  if (carried) {
    if (written.has(carried)) return [];
    written.add(carried);
    const r: Record<string, unknown> = {
      type: 'compaction',
      timestamp: iso,
      summary: carried.summary,
      tokensBefore: carried.tokensBefore ?? 0,
    };
    if (carried.firstKeptEntryId) r.firstKeptEntryId = carried.firstKeptEntryId;
    return [r];
  }
  if (e.sidechain) {
    // A subagent's messages are not part of the main conversation: keep them outside the model's context.
    return [
      { type: 'custom', timestamp: iso, customType: 'abridge.sidechain', data: { message: e.message, raw: e.raw } },
    ];
  }
  if (e.kind === 'model-change' && e.model)
    return [{ type: 'model_change', timestamp: iso, provider: e.model.provider ?? 'unknown', modelId: e.model.id }];
  const m = e.message;
  if (!m)
    return [
      {
        type: 'custom',
        timestamp: iso,
        customType: 'abridge.entry',
        data: { kind: e.kind, sourceType: e.sourceType, raw: e.raw },
      },
    ];
  const ts = m.timestamp ?? e.timestamp ?? Date.parse(iso);
  if (m.role === 'system') {
    // pi keeps no system prompt in its sessions: preserve it as extension data, outside the model's context.
    return [
      {
        type: 'custom',
        timestamp: iso,
        customType: 'abridge.system',
        data: { text: m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n') },
      },
    ];
  }
  return encodeMessage(m, ts).map((message) => ({ type: 'message', timestamp: iso, message }));
}

/** pi messages (`AgentMessage`) for one abridge message: a tool message gives one `toolResult` per result. */
export function encodeMessage(m: Message, ts: number = m.timestamp ?? 0): Record<string, unknown>[] {
  switch (m.role) {
    case 'system':
    case 'user':
      return [{ role: 'user', content: encodeParts(m.parts), timestamp: ts }];
    case 'assistant': {
      const msg: Record<string, unknown> = {
        role: 'assistant',
        content: encodeParts(m.parts),
        api: apiFor(m.provider),
        provider: m.provider ?? 'unknown',
        model: m.model ?? 'unknown',
      };
      msg.usage = encodeUsage(m.usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
      msg.stopReason = m.stopReason ?? (m.parts.some((p) => p.type === 'tool-call') ? 'toolUse' : 'stop');
      msg.timestamp = ts;
      return [msg];
    }
    case 'tool': {
      const out: Record<string, unknown>[] = [];
      for (const p of m.parts) {
        if (p.type !== 'tool-result') continue;
        out.push({
          role: 'toolResult',
          toolCallId: p.callId,
          toolName: p.toolName ?? '',
          content: encodeParts(p.content),
          isError: p.isError,
          timestamp: ts,
        });
      }
      return out;
    }
  }
}

export function apiFor(provider: string | undefined): string {
  if (provider === 'anthropic') return 'anthropic-messages';
  if (provider === 'openai') return 'openai-responses';
  if (provider === 'google') return 'google-generative-ai';
  return 'unknown';
}

export function withoutType(r: Record<string, unknown>): Record<string, unknown> {
  const { type: _type, ...rest } = r;
  return rest;
}

export function isoOf(e: Entry): string {
  return isoTime(e.timestamp) ?? isoTime(e.message?.timestamp) ?? EPOCH_ISO;
}
