/**
 * AI SDK 6 (LanguageModelV3) prompts and usage ↔ abridge messages: the conversions under `abridge-context/ai-sdk`'s
 * middleware. Internal: not exported from the entry point.
 */
import type {
  LanguageModelV3FilePart,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolCallPart,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3ToolResultPart,
  LanguageModelV3Usage,
  SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import type { LanguageModelUsage } from 'ai';
import {
  CONVERSATION_START_TEXT,
  mediaPlaceholder,
  parseDataUrl,
  prepareConversation,
} from '../formats/request-body.js';
import { base64ByteSize, parseArguments, textPart } from '../model/parts.js';
import type { FilePart, ImagePart, Message, Part, ResultContentPart, ToolResultPart, Usage } from '../model/types.js';

export type V3Part = Exclude<LanguageModelV3Message['content'][number], string>;
export type V3AssistantPart = Extract<LanguageModelV3Message, { role: 'assistant' }>['content'][number];
type V3UserPart = Extract<LanguageModelV3Message, { role: 'user' }>['content'][number];

/**
 * What the V3 parts a message was read from looked like, so that writing the view back gives the provider its own
 * metadata (signatures, item ids, cache control) on parts that compaction left untouched.
 */
export class V3Originals {
  private readonly parts = new WeakMap<object, V3Part>();
  private readonly calls = new Map<string, { args: unknown; part: LanguageModelV3ToolCallPart }>();
  private readonly results = new Map<string, { content: ResultContentPart[]; part: LanguageModelV3ToolResultPart }>();

  remember(part: Part, original: V3Part): void {
    if (part.type === 'tool-call' && original.type === 'tool-call')
      this.calls.set(part.id, { args: part.arguments, part: original });
    else if (part.type === 'tool-result' && original.type === 'tool-result')
      this.results.set(part.callId, { content: part.content, part: original });
    else this.parts.set(part, original);
  }

  /** The original of a part when the part is the one read (or, for tool parts, holds the same arguments / content). */
  original(part: Part): V3Part | undefined {
    if (part.type === 'tool-call') {
      const c = this.calls.get(part.id);
      return c && c.args === part.arguments ? c.part : undefined;
    }
    if (part.type === 'tool-result') {
      const r = this.results.get(part.callId);
      return r && r.content === part.content ? r.part : undefined;
    }
    return this.parts.get(part);
  }
}

export function base64(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
}

/** A V3 file part (or tool-output media) as an image or file part: data kept as base64, URLs as URLs. */
export function mediaPart(data: unknown, mediaType: string | undefined, filename?: string): ImagePart | FilePart {
  const p: ImagePart | FilePart = mediaType?.startsWith('image/') ? { type: 'image' } : { type: 'file' };
  if (mediaType && mediaType !== 'image/*') p.mediaType = mediaType;
  if (data instanceof Uint8Array) {
    p.data = base64(data);
    p.byteSize = data.byteLength;
  } else if (data instanceof URL) p.url = data.href;
  else if (typeof data === 'string') {
    const parsed = parseDataUrl(data);
    if (parsed) {
      p.data = parsed.data;
      if (parsed.mediaType && !p.mediaType) p.mediaType = parsed.mediaType;
      p.byteSize = base64ByteSize(parsed.data);
    } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(data)) p.url = data;
    else {
      p.data = data;
      p.byteSize = base64ByteSize(data);
    }
  }
  if (filename && p.type === 'file') p.name = filename;
  return p;
}

function outputContent(output: LanguageModelV3ToolResultOutput): { content: ResultContentPart[]; isError: boolean } {
  switch (output.type) {
    case 'text':
      return { content: [textPart(output.value)], isError: false };
    case 'error-text':
      return { content: [textPart(output.value)], isError: true };
    case 'json':
      return { content: [textPart(JSON.stringify(output.value))], isError: false };
    case 'error-json':
      return { content: [textPart(JSON.stringify(output.value))], isError: true };
    case 'execution-denied':
      return {
        content: [textPart(`Tool execution denied${output.reason ? `: ${output.reason}` : ''}`)],
        isError: true,
      };
    case 'content':
      return {
        isError: false,
        content: output.value.map((item): ResultContentPart => {
          switch (item.type) {
            case 'text':
              return textPart(item.text);
            case 'image-data':
              return mediaPart(item.data, item.mediaType);
            case 'file-data':
              return mediaPart(item.data, item.mediaType, item.filename);
            case 'image-url':
              return { type: 'image', url: item.url };
            case 'file-url': {
              // `mediaType` is in @ai-sdk/provider 3's V3 type, not in 4's copy of it.
              const mediaType = (item as { mediaType?: string }).mediaType;
              return mediaType ? { type: 'file', url: item.url, mediaType } : { type: 'file', url: item.url };
            }
            default:
              return textPart(JSON.stringify(item));
          }
        }),
      };
  }
}

export function decodeV3Part(c: V3Part): Part | undefined {
  switch (c.type) {
    case 'text':
      return textPart(c.text);
    case 'reasoning': {
      const anthropic = c.providerOptions?.anthropic as { signature?: unknown; redactedData?: unknown } | undefined;
      if (typeof anthropic?.redactedData === 'string')
        return { type: 'thinking', text: c.text, signature: anthropic.redactedData, redacted: true };
      return typeof anthropic?.signature === 'string'
        ? { type: 'thinking', text: c.text, signature: anthropic.signature }
        : { type: 'thinking', text: c.text };
    }
    case 'file':
      return mediaPart(c.data, c.mediaType, c.filename);
    case 'tool-call':
      return { type: 'tool-call', id: c.toolCallId, name: c.toolName, arguments: parseArguments(c.input) };
    case 'tool-result': {
      const { content, isError } = outputContent(c.output);
      return { type: 'tool-result', callId: c.toolCallId, toolName: c.toolName, content, isError };
    }
    case 'tool-approval-response':
      // Approval bookkeeping: nothing the model reads.
      return undefined;
  }
}

/** One V3 prompt message as an abridge message (its parts remembered in `originals` when given). */
export function fromV3Message(m: LanguageModelV3Message, originals?: V3Originals): Message {
  if (m.role === 'system') return { role: 'system', parts: [textPart(m.content)] };
  const parts: Part[] = [];
  for (const c of m.content as V3Part[]) {
    const p = decodeV3Part(c);
    if (!p) continue;
    originals?.remember(p, c);
    parts.push(p);
  }
  return { role: m.role, parts };
}

function filePart(p: ImagePart | FilePart): LanguageModelV3FilePart | undefined {
  const mediaType = p.mediaType ?? (p.type === 'image' ? 'image/*' : undefined);
  if (!mediaType) return undefined;
  const data = p.data ?? (p.url ? new URL(p.url) : undefined);
  if (data === undefined) return undefined;
  const out: LanguageModelV3FilePart = { type: 'file', data, mediaType };
  if (p.type === 'file' && p.name) out.filename = p.name;
  return out;
}

function encodeOutput(p: ToolResultPart): LanguageModelV3ToolResultOutput {
  if (p.content.some((c) => c.type !== 'text' && (c.data || c.url))) {
    return {
      type: 'content',
      value: p.content.map((c) => {
        if (c.type === 'text') return { type: 'text' as const, text: c.text };
        if (c.data && c.mediaType)
          return c.type === 'image'
            ? { type: 'image-data' as const, data: c.data, mediaType: c.mediaType }
            : c.name
              ? { type: 'file-data' as const, data: c.data, mediaType: c.mediaType, filename: c.name }
              : { type: 'file-data' as const, data: c.data, mediaType: c.mediaType };
        if (c.url)
          return c.type === 'image'
            ? { type: 'image-url' as const, url: c.url }
            : c.mediaType
              ? { type: 'file-url' as const, url: c.url, mediaType: c.mediaType }
              : { type: 'file-url' as const, url: c.url };
        return { type: 'text' as const, text: mediaPlaceholder(c) };
      }),
    };
  }
  const text = p.content.map((c) => (c.type === 'text' ? c.text : mediaPlaceholder(c))).join('\n');
  return { type: p.isError ? 'error-text' : 'text', value: text };
}

export function withOptions<T extends object>(part: T, providerOptions: SharedV3ProviderOptions | undefined): T {
  return providerOptions ? { ...part, providerOptions } : part;
}

function encodeUser(p: Part, originals: V3Originals | undefined): V3UserPart | undefined {
  const original = originals?.original(p);
  if (original && (original.type === 'text' || original.type === 'file')) return original;
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'compaction':
      return { type: 'text', text: p.marker.summary };
    case 'thinking':
      return p.redacted ? undefined : { type: 'text', text: p.text };
    case 'image':
    case 'file':
      return filePart(p) ?? { type: 'text', text: mediaPlaceholder(p) };
    default:
      return undefined;
  }
}

function encodeAssistant(p: Part, originals: V3Originals | undefined): V3AssistantPart | undefined {
  const original = originals?.original(p);
  if (original && original.type !== 'tool-approval-response') {
    // prepareConversation may have made a tool-call id safe: the result follows it.
    if (original.type === 'tool-call' && p.type === 'tool-call' && original.toolCallId !== p.id)
      return { ...original, toolCallId: p.id, toolName: p.name };
    return original;
  }
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'compaction':
      return { type: 'text', text: p.marker.summary };
    case 'thinking': {
      // A signature that is JSON is a Responses reasoning item (abridge's own encoding), not an Anthropic signature.
      const signed = p.signature && !p.signature.trimStart().startsWith('{');
      return withOptions(
        { type: 'reasoning' as const, text: p.text },
        signed ? { anthropic: p.redacted ? { redactedData: p.signature! } : { signature: p.signature! } } : undefined,
      );
    }
    case 'tool-call':
      return { type: 'tool-call', toolCallId: p.id, toolName: p.name, input: p.arguments };
    case 'image':
    case 'file':
      return filePart(p) ?? { type: 'text', text: mediaPlaceholder(p) };
    default:
      return undefined;
  }
}

/**
 * Abridge messages (a view: what the model sees) as a V3 prompt: the system texts first (`system`, then the view's
 * system messages), tool calls and their results paired (`prepareConversation`: a call without a result gets an error
 * result, a result without its call becomes user text), a first message that is a user message. Parts read from a V3
 * prompt and left untouched come back as they were read (provider metadata included) when `originals` is given.
 */
export function toV3Prompt(
  messages: readonly Message[],
  options: { system?: readonly string[]; originals?: V3Originals } = {},
): LanguageModelV3Prompt {
  const conv = prepareConversation(messages);
  const out: LanguageModelV3Prompt = [];
  for (const s of [...(options.system ?? []), ...conv.system])
    if (s.trim() !== '') out.push({ role: 'system', content: s });
  const originals = options.originals;
  const names = new Map<string, string>();
  for (const t of conv.turns) {
    if (t.role === 'user') {
      const content = t.parts.map((p) => encodeUser(p, originals)).filter((c): c is V3UserPart => c !== undefined);
      if (content.length) out.push({ role: 'user', content });
    } else if (t.role === 'assistant') {
      for (const p of t.parts) if (p.type === 'tool-call') names.set(p.id, p.name);
      const content = t.parts
        .map((p) => encodeAssistant(p, originals))
        .filter((c): c is V3AssistantPart => c !== undefined);
      if (content.length) out.push({ role: 'assistant', content });
    } else {
      const content = t.parts
        .filter((p): p is ToolResultPart => p.type === 'tool-result')
        .map((p): LanguageModelV3ToolResultPart => {
          const original = originals?.original(p);
          const toolName = p.toolName ?? names.get(p.callId) ?? 'unknown_tool';
          if (original?.type === 'tool-result')
            return { ...original, toolCallId: p.callId, toolName: original.toolName || toolName };
          return { type: 'tool-result', toolCallId: p.callId, toolName, output: encodeOutput(p) };
        });
      if (content.length) out.push({ role: 'tool', content });
    }
  }
  const first = out.findIndex((m) => m.role !== 'system');
  if (first >= 0 && out[first]!.role !== 'user')
    out.splice(first, 0, { role: 'user', content: [{ type: 'text', text: CONVERSATION_START_TEXT }] });
  return out;
}

/** V3 usage → abridge Usage (prompt = input + cacheRead + cacheWrite); undefined when the provider reported no input. */
export function usageFromV3(u: LanguageModelV3Usage | undefined): Usage | undefined {
  const total = u?.inputTokens.total;
  if (!u || total === undefined) return undefined;
  const cacheRead = u.inputTokens.cacheRead ?? 0;
  const cacheWrite = u.inputTokens.cacheWrite ?? 0;
  const usage: Usage = {
    input: u.inputTokens.noCache ?? Math.max(0, total - cacheRead - cacheWrite),
    output: u.outputTokens.total ?? 0,
    cacheRead,
    cacheWrite,
  };
  if (u.outputTokens.reasoning) usage.reasoning = u.outputTokens.reasoning;
  return usage;
}

/** The AI SDK's step usage (`LanguageModelUsage`) → abridge Usage. */
export function usageFromStep(u: LanguageModelUsage | undefined): Usage | undefined {
  if (!u || u.inputTokens === undefined) return undefined;
  const d = u.inputTokenDetails;
  return usageFromV3({
    inputTokens: {
      total: u.inputTokens,
      noCache: d?.noCacheTokens,
      cacheRead: d?.cacheReadTokens,
      cacheWrite: d?.cacheWriteTokens,
    },
    outputTokens: {
      total: u.outputTokens,
      text: u.outputTokenDetails?.textTokens,
      reasoning: u.outputTokenDetails?.reasoningTokens,
    },
  });
}
