/**
 * Text from transcripts on a terminal. A transcript can hold any character, and a terminal obeys control sequences:
 * a window title (OSC 0/2), the clipboard (OSC 52), a cleared screen (CSI 2J), hidden or rewritten lines (CR, CSI K).
 * Everything abridge prints for a person passes through {@link escapeControls} (its reports through
 * {@link escapeControlsDeep} before colouring, so that abridge's own colours stay), and its JSON through
 * {@link jsonForTerminal}.
 */

/** C0 controls except tab and newline, DEL, and C1 controls (U+0080–U+009F, CSI and OSC among them). */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `text` with every control character shown as `\xNN` (ESC as `\x1b`): printed, it moves nothing and sets nothing. */
export function escapeControls(text: string): string {
  CONTROLS.lastIndex = 0;
  return CONTROLS.test(text)
    ? text.replace(CONTROLS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
    : text;
}

/** A copy of a report with {@link escapeControls} applied to every string in it (keys of objects included). */
export function escapeControlsDeep<T>(value: T): T {
  if (typeof value === 'string') return escapeControls(value) as T;
  if (Array.isArray(value)) return value.map((v) => escapeControlsDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // defineProperty: a key such as "__proto__" stays a key, not the copy's prototype.
      Object.defineProperty(out, escapeControls(k), {
        value: escapeControlsDeep(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out as T;
  }
  return value;
}

/**
 * JSON text as safe to print as it is to parse: JSON.stringify escapes C0 controls but writes DEL and the C1 controls
 * as they are; these become `\u007f`…`\u009f` (in JSON text they can only stand inside strings, so the value read
 * back is the same).
 */
export function jsonForTerminal(json: string): string {
  return json.replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
