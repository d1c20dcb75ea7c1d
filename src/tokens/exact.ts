/**
 * Exact counting with gpt-tokenizer's encodings, loaded on first use: importing abridge loads no encoding (an encoding
 * costs ~90 ms and tens of MB to load).
 */
export type EncodingName = 'o200k_base' | 'cl100k_base';

/** Anything that counts tokens of a text exactly (gpt-tokenizer here; a provider's own tokenizer if you have one). */
export interface ExactTokenizer {
  /** Its name, shown in reports. */
  encoding: string;
  count(text: string): number;
}

const loaded = new Map<EncodingName, Promise<ExactTokenizer>>();

export function loadExactTokenizer(encoding: EncodingName = 'o200k_base'): Promise<ExactTokenizer> {
  let p = loaded.get(encoding);
  if (!p) {
    p = (
      encoding === 'o200k_base'
        ? import('gpt-tokenizer/encoding/o200k_base')
        : import('gpt-tokenizer/encoding/cl100k_base')
    ).then((m) => ({
      encoding,
      // Special-token text in transcripts (`<|endoftext|>` quoted in a file) is plain text to us, never a control token.
      count: (text: string) => m.countTokens(text, { disallowedSpecial: new Set() }),
    }));
    loaded.set(encoding, p);
  }
  return p;
}
