import { describe, expect, it } from 'vitest';
import { DEFAULT_STRATEGY_OPTIONS } from '../../defaults.js';
import { summaryRoom } from './summarize.js';

const o = DEFAULT_STRATEGY_OPTIONS.summarize;

describe('summaryRoom: the summary share of the room beside what must stay', () => {
  it('is maxRoomShare of the room while the room is much larger than the newest tenth of the conversation', () => {
    // A budget of a quarter of the conversation: the newest tenth takes 40% of the room, the summary maxRoomShare.
    expect(summaryRoom({ room: 25_000, conversation: 100_000, tail: 5_000 }, o)).toBe(25_000 * o.maxRoomShare);
  });

  it('gives way to the newest tenth of the conversation, down to minRoomShare of the room', () => {
    // The room is the newest tenth and a little more: the summary gets what the tenth leaves.
    expect(summaryRoom({ room: 16_000, conversation: 100_000, tail: 3_000 }, o)).toBe(6_000);
    expect(6_000).toBeGreaterThan(16_000 * o.minRoomShare);
    expect(6_000).toBeLessThan(16_000 * o.maxRoomShare);
    // The room is the tenth or less: the summary keeps its least share.
    expect(summaryRoom({ room: 10_000, conversation: 100_000, tail: 2_500 }, o)).toBe(10_000 * o.minRoomShare);
    expect(summaryRoom({ room: 4_000, conversation: 100_000, tail: 1_000 }, o)).toBe(4_000 * o.minRoomShare);
  });

  it('gives way to a protected tail larger than the tenth (keepRecentTokens set by the caller)', () => {
    expect(summaryRoom({ room: 40_000, conversation: 100_000, tail: 25_000 }, o)).toBe(15_000);
  });

  it('never grows as the room shrinks against the same conversation, and is never negative', () => {
    let last = Number.POSITIVE_INFINITY;
    for (let room = 60_000; room >= 0; room -= 1_000) {
      const s = summaryRoom({ room, conversation: 100_000, tail: room / 4 }, o);
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(last);
      expect(s).toBeLessThanOrEqual(room * o.maxRoomShare);
      last = s;
    }
  });

  it('follows the options: without the tenth rule the summary keeps maxRoomShare', () => {
    expect(summaryRoom({ room: 10_000, conversation: 100_000, tail: 2_500 }, { ...o, recentShare: 0 })).toBe(
      10_000 * o.maxRoomShare,
    );
  });
});
