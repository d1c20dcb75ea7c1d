import { describe, expect, it } from 'vitest';
import { FORMAT_IDS } from '../model/types.js';
import { piFormat } from './pi.js';
import { parseSession } from './read.js';
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

  it('takes a format as a value where it takes its id', () => {
    const line = JSON.stringify({
      type: 'session',
      version: 3,
      id: 's1',
      timestamp: '2026-01-01T00:00:00.000Z',
      cwd: '/w',
    });
    const byValue = parseSession(`${line}\n`, { format: piFormat });
    expect(byValue.format).toBe('pi');
    expect(byValue).toEqual(parseSession(`${line}\n`, { format: 'pi' }));
  });
});
