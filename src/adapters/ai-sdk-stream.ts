/**
 * What a model answered, as the middleware records it: a generate result's content or a stream's parts, read as an
 * abridge assistant message whose parts keep their V3 prompt form (the provider's metadata given back on the next
 * request). Internal: not exported from the entry point.
 */
import type { LanguageModelV3Content, LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider';
import { parseArguments } from '../model/parts.js';
import type { Message, Part } from '../model/types.js';
import { decodeV3Part, mediaPart, withOptions, type V3AssistantPart } from './ai-sdk-v3.js';

/** A model's answer (generate content, or what a stream carried) as an abridge assistant message, each part with its V3 prompt form. */
export function responseMessage(content: readonly LanguageModelV3Content[]): {
  message: Message;
  pairs: [Part, V3AssistantPart][];
} {
  const parts: Part[] = [];
  const pairs: [Part, V3AssistantPart][] = [];
  for (const c of content) {
    let v3: V3AssistantPart | undefined;
    if (c.type === 'text' && c.text !== '')
      v3 = withOptions({ type: 'text' as const, text: c.text }, c.providerMetadata);
    else if (c.type === 'reasoning') v3 = withOptions({ type: 'reasoning' as const, text: c.text }, c.providerMetadata);
    else if (c.type === 'tool-call')
      v3 = withOptions(
        {
          type: 'tool-call' as const,
          toolCallId: c.toolCallId,
          toolName: c.toolName,
          input: parseArguments(c.input),
          ...(c.providerExecuted ? { providerExecuted: true } : {}),
        },
        c.providerMetadata,
      );
    else if (c.type === 'file') parts.push(mediaPart(c.data, c.mediaType));
    const part = v3 ? decodeV3Part(v3) : undefined;
    if (!v3 || !part) continue;
    parts.push(part);
    pairs.push([part, v3]);
  }
  return { message: { role: 'assistant', parts }, pairs };
}

/** Collects a stream's parts into the content they amount to, as they pass. */
export class StreamCollector {
  private readonly order: (string | LanguageModelV3Content)[] = [];
  private readonly texts = new Map<
    string,
    { type: 'text' | 'reasoning'; text: string; providerMetadata?: Record<string, Record<string, unknown>> }
  >();
  usage: LanguageModelV3Usage | undefined;
  finished = false;

  observe(part: LanguageModelV3StreamPart): void {
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
        this.block(part.type === 'text-start' ? 'text' : 'reasoning', part.id, part.providerMetadata);
        break;
      case 'text-delta':
      case 'reasoning-delta': {
        const b = this.block(part.type === 'text-delta' ? 'text' : 'reasoning', part.id, part.providerMetadata);
        b.text += part.delta;
        break;
      }
      case 'text-end':
      case 'reasoning-end':
        this.block(part.type === 'text-end' ? 'text' : 'reasoning', part.id, part.providerMetadata);
        break;
      case 'tool-call':
      case 'file':
        this.order.push(part);
        break;
      case 'finish':
        this.usage = part.usage;
        this.finished = true;
        break;
      default:
        break;
    }
  }

  content(): LanguageModelV3Content[] {
    return this.order.map((o) => {
      if (typeof o !== 'string') return o;
      const b = this.texts.get(o)!;
      return b.providerMetadata
        ? { type: b.type, text: b.text, providerMetadata: b.providerMetadata }
        : { type: b.type, text: b.text };
    }) as LanguageModelV3Content[];
  }

  private block(type: 'text' | 'reasoning', id: string, metadata: Record<string, Record<string, unknown>> | undefined) {
    const key = `${type}:${id}`;
    let b = this.texts.get(key);
    if (!b) {
      b = { type, text: '' };
      this.texts.set(key, b);
      this.order.push(key);
    }
    if (metadata) {
      b.providerMetadata ??= {};
      for (const [provider, values] of Object.entries(metadata))
        b.providerMetadata[provider] = { ...(b.providerMetadata[provider] ?? {}), ...values };
    }
    return b;
  }
}
