import { describe, expect, it } from 'vitest';
import { contextNote, contextNoteSection, percentUsed } from './context-note.js';

const note = (pct: number) =>
  `[Context: ${pct}% used. You can call compact_context to free space before continuing with large operations.]`;

describe('contextNote', () => {
  it('says nothing at 79%', () => {
    expect(contextNote(0.79)).toBeUndefined();
    expect(contextNote({ used: 79_999, effective: 100_000 })).toBeUndefined();
    expect(contextNoteSection(0.79)).toBeUndefined();
  });

  it('shows the note from 80% on', () => {
    expect(contextNote(0.8)).toBe(note(80));
    expect(contextNote({ used: 80_000, effective: 100_000 })).toBe(note(80));
  });

  it('at 83% says exactly what the brief asks', () => {
    expect(contextNote(0.83)).toBe(
      '[Context: 83% used. You can call compact_context to free space before continuing with large operations.]',
    );
    expect(contextNote({ used: 138_000, effective: 166_000 })).toBe(note(83));
    expect(contextNote({ fill: 0.835 })).toBe(note(83));
  });

  it('rounds the percentage down, without float noise', () => {
    expect(percentUsed(0.29)).toBe(29);
    expect(percentUsed(0.8399)).toBe(83);
    expect(percentUsed({ used: 1, effective: 0 })).toBe(100);
  });

  it('is a non-cacheable section named context-status', () => {
    expect(contextNoteSection(0.9)).toEqual({ name: 'context-status', content: note(90), cacheable: false });
  });

  it('takes another threshold and tool name', () => {
    expect(contextNote(0.75, { threshold: 0.7, toolName: 'shrink' })).toBe(
      '[Context: 75% used. You can call shrink to free space before continuing with large operations.]',
    );
    expect(contextNote(0.69, { threshold: 0.7 })).toBeUndefined();
  });
});
