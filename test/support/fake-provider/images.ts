/**
 * Image tokens by the providers' documented rules, from the image's real dimensions (read from its bytes with
 * image-size). Images given by URL cannot be measured here: they are billed as a typical screenshot.
 */
import { imageSize } from 'image-size';

export interface Dimensions {
  width: number;
  height: number;
}

export function dimensionsOf(bytes: Uint8Array): Dimensions | undefined {
  try {
    const d = imageSize(bytes);
    return d.width && d.height ? { width: d.width, height: d.height } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Anthropic: an image whose long edge exceeds 1,568 px or whose area exceeds ~1.15 megapixels is scaled down first;
 * then tokens = width × height / 750.
 */
export function anthropicImageTokens(d: Dimensions | undefined): number {
  if (!d) return 1590; // a 1092×1092 image, the documented maximum at 1:1
  const scale = Math.min(1, 1568 / Math.max(d.width, d.height), Math.sqrt(1_150_000 / (d.width * d.height)));
  const w = Math.floor(d.width * scale);
  const h = Math.floor(d.height * scale);
  return Math.ceil((w * h) / 750);
}

/**
 * OpenAI (GPT-4o family): detail "low" costs 85; otherwise fit in 2048×2048, scale the short side down to 768, and
 * count 170 per 512-px tile plus 85.
 */
export function openaiImageTokens(d: Dimensions | undefined, detail: string | undefined): number {
  if (detail === 'low') return 85;
  let { width: w, height: h } = d ?? { width: 1024, height: 1024 };
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const shrink = Math.min(1, 768 / Math.min(w, h));
  w = Math.floor(w * shrink);
  h = Math.floor(h * shrink);
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/** Dimensions of a `data:` URL's image; undefined for remote URLs or unreadable data. */
export function dimensionsOfDataUrl(url: string): Dimensions | undefined {
  const m = /^data:[^;,]*;base64,(.*)$/s.exec(url);
  return m ? dimensionsOf(Buffer.from(m[1]!, 'base64')) : undefined;
}
