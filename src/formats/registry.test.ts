import { describe, expect, it } from 'vitest';
import { FORMAT_IDS } from '../model/types.js';
import { formats, getFormat, isFormatId } from './registry.js';

describe('the format registry', () => {
  it('has one reader per format id, in the order of FORMAT_IDS', () => {
    expect(formats.map((f) => f.id)).toEqual([...FORMAT_IDS]);
    for (const id of FORMAT_IDS) expect(getFormat(id).id).toBe(id);
  });

  it('is not a mutable registry', () => {
    expect(Object.isFrozen(formats)).toBe(true);
    expect(isFormatId('pi')).toBe(true);
    expect(isFormatId('gemini')).toBe(false);
  });
});
