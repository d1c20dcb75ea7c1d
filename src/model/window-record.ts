import type { Entry } from './types.js';

/**
 * The record a session keeps of a window its provider stated in a refusal ("prompt is too long: N tokens > M maximum"):
 * a custom entry `{type: 'custom', customType: 'abridge.window', data: {model, window}}` (pi's custom record, which pi
 * itself ignores). The window a provider enforces is the session's window for that model, whatever a catalog says.
 */
export const WINDOW_RECORD = 'abridge.window';

/** The custom entry recording `window` for `model`. */
export function windowRecord(model: string, window: number): Omit<Entry, 'index' | 'id' | 'parentId' | 'timestamp'> {
  return {
    kind: 'custom',
    sourceType: 'custom',
    raw: { type: 'custom', customType: WINDOW_RECORD, data: { model, window } },
  };
}

/** The windows the entries record, by model: the last record of each model wins. */
export function statedWindows(entries: readonly Entry[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of entries) {
    if (e.kind !== 'custom') continue;
    const r = e.raw as { customType?: unknown; data?: { model?: unknown; window?: unknown } } | undefined;
    const model = r?.data?.model;
    const window = r?.data?.window;
    if (r?.customType === WINDOW_RECORD && typeof model === 'string' && typeof window === 'number' && window > 0)
      out.set(model, window);
  }
  return out;
}
