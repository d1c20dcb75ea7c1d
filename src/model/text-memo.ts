/**
 * What was computed from a text, kept by the text's content: for work a loop repeats on the same long texts (a
 * summary's estimate, its redaction, the errors a result printed). Bounded by the characters of the texts it holds:
 * beyond `maxChars` it starts over (what a long loop needs again is what it computed last).
 */
export class TextMemo<V> {
  private readonly map = new Map<string, V>();
  private chars = 0;

  constructor(private readonly maxChars = 4_000_000) {}

  /** The value kept for `text`, else `make(text)`, kept. */
  get(text: string, make: (text: string) => V): V {
    const hit = this.map.get(text);
    if (hit !== undefined) return hit;
    const value = make(text);
    if (this.chars + text.length > this.maxChars) {
      this.map.clear();
      this.chars = 0;
    }
    this.map.set(text, value);
    this.chars += text.length;
    return value;
  }
}
