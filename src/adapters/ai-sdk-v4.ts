/**
 * AI SDK 7 (LanguageModelV4) ↔ AI SDK 6 (LanguageModelV3) prompts and answers: the middleware works on V3 forms and
 * converts at its edges when the model it wraps is a V4 model (what `ai@7`'s `wrapLanguageModel` always gives it,
 * V3 providers included). Internal: not exported from the entry point.
 *
 * What V4 changed that abridge reads or writes (everything else — text, reasoning, tool calls, usage, tools, stream
 * parts, the middleware's hooks — has the same shape):
 * - file parts (prompt, generate content, stream): `data` is tagged, `{type: 'data', data}` (bytes or base64),
 *   `{type: 'url', url}`, `{type: 'reference', reference}` or `{type: 'text', text}`, where V3 had the bytes,
 *   base64 or URL itself;
 * - tool-result `content` outputs: one `{type: 'file', data: <tagged>, mediaType, filename?}` item where V3 had
 *   `image-data`, `file-data`, `image-url`, `file-url`, `file-id` and `image-file-id`;
 * - new parts: assistant `reasoning-file` (a file in the model's reasoning) and `custom` (provider-specific).
 *
 * The V4 types are written here structurally, for the conversions only: the package's types must compile against
 * `@ai-sdk/provider@3`, which has no V4 types. A V4 part read and converted is remembered, so that a part compaction
 * left untouched goes back to the provider exactly as it came (references, original URLs, reasoning files).
 */
import type {
  LanguageModelV3Content,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3ToolResultOutput,
} from '@ai-sdk/provider';

type Options = Record<string, Record<string, unknown>>;

/** V4's tagged file data (SharedV4FileData). */
export type V4FileData =
  | { type: 'data'; data: Uint8Array | string }
  | { type: 'url'; url: URL; originalUrl?: string }
  | { type: 'reference'; reference: Record<string, string> }
  | { type: 'text'; text: string };

/** A V4 prompt part or content item, as far as the conversions look at it. */
interface V4Part {
  type: string;
  data?: V4FileData;
  mediaType?: string;
  filename?: string;
  output?: { type: string; value?: unknown };
  providerOptions?: Options;
  providerMetadata?: Options;
  [key: string]: unknown;
}

/** A V4 prompt message (`LanguageModelV4Message`), structurally. */
export type V4Message =
  | { role: 'system'; content: string; providerOptions?: Options }
  | { role: 'user' | 'assistant' | 'tool'; content: V4Part[]; providerOptions?: Options };

/** Whether a model (or the `model` a middleware hook is given) speaks LanguageModelV4. */
export function isV4(model: unknown): boolean {
  return (
    typeof model === 'object' &&
    model !== null &&
    (model as { specificationVersion?: unknown }).specificationVersion === 'v4'
  );
}

function isTagged(data: unknown): data is V4FileData {
  return (
    typeof data === 'object' &&
    data !== null &&
    !(data instanceof Uint8Array) &&
    !(data instanceof URL) &&
    typeof (data as { type?: unknown }).type === 'string'
  );
}

/** V4 file data → V3 data: bytes, base64 or URL; a reference or inline text stays as it is (no V3 form). */
function v3Data(data: unknown): unknown {
  if (!isTagged(data)) return data;
  switch (data.type) {
    case 'data':
      return data.data;
    case 'url':
      return data.url;
    default:
      return data;
  }
}

/** V3 data → V4 tagged file data. */
function v4Data(data: unknown): V4FileData {
  if (isTagged(data)) return data;
  if (data instanceof URL) return { type: 'url', url: data };
  return { type: 'data', data: data as Uint8Array | string };
}

/**
 * The V4 ↔ V3 conversions of one middleware, with what it read: a V3 part made from a V4 part converts back to that
 * very V4 part.
 */
export class V4Bridge {
  private readonly back = new WeakMap<object, object>();

  private keep<T extends object>(v3: T, v4: object): T {
    if (v3 !== v4) this.back.set(v3, v4);
    return v3;
  }

  // -------------------------------------------------------------------------------------------------------------------
  // V4 → V3

  /** A V4 prompt as a V3 prompt (the parts without a V3 form — `custom` — left out; approvals pass through). */
  prompt(prompt: readonly unknown[]): LanguageModelV3Prompt {
    return prompt.map((m) => this.message(m as V4Message));
  }

  private message(m: V4Message): LanguageModelV3Message {
    if (m.role === 'system') return m as LanguageModelV3Message;
    const content = m.content.flatMap((p) => {
      const v3 = this.part(p);
      return v3 ? [v3] : [];
    });
    return { ...m, content } as LanguageModelV3Message;
  }

  private part(p: V4Part): object | undefined {
    switch (p.type) {
      case 'file':
        return this.keep({ ...p, data: v3Data(p.data) }, p);
      case 'reasoning-file':
        // A file of the model's reasoning: counted as the file it is, given back as the reasoning file it was.
        return this.keep({ ...p, type: 'file', data: v3Data(p.data) }, p);
      case 'custom':
        return undefined;
      case 'tool-result': {
        const output = p.output ? this.output(p.output) : p.output;
        return output === p.output ? p : { ...p, output };
      }
      default:
        return p;
    }
  }

  private output(o: { type: string; value?: unknown }): LanguageModelV3ToolResultOutput {
    if (o.type !== 'content' || !Array.isArray(o.value)) return o as LanguageModelV3ToolResultOutput;
    const value = (o.value as V4Part[]).map((item) => {
      if (item.type !== 'file' || !item.data) return item;
      const { data, mediaType, filename, providerOptions } = item;
      const image = mediaType?.startsWith('image/') === true;
      const extra = providerOptions ? { providerOptions } : {};
      switch (data.type) {
        case 'data': {
          const b64 =
            typeof data.data === 'string'
              ? data.data
              : Buffer.from(data.data.buffer, data.data.byteOffset, data.data.byteLength).toString('base64');
          return image
            ? { type: 'image-data', data: b64, mediaType, ...extra }
            : { type: 'file-data', data: b64, mediaType, ...(filename ? { filename } : {}), ...extra };
        }
        case 'url':
          return mediaType === 'image/*'
            ? { type: 'image-url', url: data.url.href, ...extra }
            : { type: 'file-url', url: data.url.href, mediaType, ...extra };
        case 'reference':
          return { type: image ? 'image-file-id' : 'file-id', fileId: data.reference, ...extra };
        case 'text':
          return { type: 'text', text: data.text, ...extra };
      }
      return item;
    });
    return this.keep({ type: 'content', value } as LanguageModelV3ToolResultOutput, o);
  }

  /** A V4 answer's content (generate) as V3 content: file data untagged, reasoning files as files, custom left out. */
  content(content: readonly unknown[]): LanguageModelV3Content[] {
    return (content as V4Part[]).flatMap((c): LanguageModelV3Content[] => {
      if (c.type === 'custom') return [];
      if (c.type === 'file' || c.type === 'reasoning-file')
        return [{ ...c, type: 'file', data: v3Data(c.data) } as unknown as LanguageModelV3Content];
      return [c as unknown as LanguageModelV3Content];
    });
  }

  /** A V4 stream part as the V3 part the collector reads (file data untagged; custom parts as nothing). */
  streamPart(part: unknown): LanguageModelV3StreamPart | undefined {
    const p = part as V4Part;
    if (p.type === 'custom') return undefined;
    if (p.type === 'file' || p.type === 'reasoning-file')
      return { ...p, type: 'file', data: v3Data(p.data) } as unknown as LanguageModelV3StreamPart;
    return part as LanguageModelV3StreamPart;
  }

  // -------------------------------------------------------------------------------------------------------------------
  // V3 → V4

  /** A V3 prompt (abridge's view) as a V4 prompt: the parts read from a V4 prompt go back as they were read. */
  toV4(prompt: LanguageModelV3Prompt): V4Message[] {
    return prompt.map((m): V4Message => {
      if (m.role === 'system') return m;
      return { ...m, content: (m.content as unknown as V4Part[]).map((p) => this.toV4Part(p)) } as V4Message;
    });
  }

  private toV4Part(p: V4Part): V4Part {
    const original = this.back.get(p) as V4Part | undefined;
    if (original) return original;
    if (p.type === 'file') return { ...p, data: v4Data(p.data) };
    if (p.type === 'tool-result' && p.output) {
      const output = this.toV4Output(p.output);
      return output === p.output ? p : { ...p, output };
    }
    return p;
  }

  private toV4Output(o: { type: string; value?: unknown }): { type: string; value?: unknown } {
    const original = this.back.get(o) as { type: string; value?: unknown } | undefined;
    if (original) return original;
    if (o.type !== 'content' || !Array.isArray(o.value)) return o;
    const value = (o.value as Record<string, unknown>[]).map((item) => {
      const providerOptions = item.providerOptions ? { providerOptions: item.providerOptions } : {};
      switch (item.type) {
        case 'image-data':
        case 'file-data':
          return {
            type: 'file',
            data: { type: 'data', data: item.data },
            mediaType: item.mediaType,
            ...(item.filename ? { filename: item.filename } : {}),
            ...providerOptions,
          };
        case 'image-url':
        case 'file-url':
          return {
            type: 'file',
            data: { type: 'url', url: new URL(item.url as string) },
            mediaType: (item.mediaType as string | undefined) ?? (item.type === 'image-url' ? 'image/*' : '*/*'),
            ...providerOptions,
          };
        case 'image-file-id':
        case 'file-id':
          return typeof item.fileId === 'object'
            ? {
                type: 'file',
                data: { type: 'reference', reference: item.fileId },
                mediaType: item.type === 'image-file-id' ? 'image/*' : '*/*',
                ...providerOptions,
              }
            : item;
        default:
          return item;
      }
    });
    return { type: 'content', value };
  }
}
