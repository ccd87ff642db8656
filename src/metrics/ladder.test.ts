import { describe, expect, it } from 'vitest';
import { type ItemScores, ladderStep, pairedStandardError, roundToItems } from './ladder.js';

/** One task of 100 items; `right` lists the items answered right. */
const items = (right: (i: number) => boolean): ItemScores => ({
  T: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`id${i}`, right(i) ? 1 : 0])),
});
const base = items((i) => i < 50);

describe('the parameter-free Ladder (Blum & Hardt 2015, Algorithm 2)', () => {
  it('releases a team first submission, rounded to 1/n', () => {
    expect(ladderStep(undefined, 50.004, base)).toEqual({ released: 50, improved: true });
    expect(roundToItems(33.333, { T: { a: 1, b: 0, c: 0 } })).toBeCloseTo(100 / 3, 10);
  });

  it('computes s/√n of the paired differences by hand', () => {
    // One item flipped to right: d has one 1 and 99 zeros, s² = 1/100 exactly, s/√n = 0.01 = 1 point.
    expect(
      pairedStandardError(
        items((i) => i <= 50),
        base,
      ),
    ).toBeCloseTo(1, 10);
    // Four flipped: s² = (4·0.96² + 96·0.04²)/99 = 0.0387879, s/√n = 1.96946 points.
    expect(
      pairedStandardError(
        items((i) => i < 54),
        base,
      ),
    ).toBeCloseTo(1.969464, 5);
  });

  it('tells nothing for one flipped item, whichever way it goes', () => {
    const state = { released: 50, items: base };
    const up = ladderStep(
      state,
      51,
      items((i) => i <= 50),
    );
    const down = ladderStep(
      state,
      49,
      items((i) => i < 49),
    );
    expect(up).toEqual({ released: 50, improved: false });
    expect(down).toEqual(up);
  });

  it('releases an improvement beyond one standard error', () => {
    const state = { released: 50, items: base };
    expect(
      ladderStep(
        state,
        54,
        items((i) => i < 54),
      ),
    ).toEqual({ released: 54, improved: true });
    // Three items up and two down: +1 point against a standard error of 2.24 points.
    const mixed = items((i) => (i < 50 && i !== 0 && i !== 1) || (i >= 50 && i < 53));
    expect(pairedStandardError(mixed, base)).toBeCloseTo(2.2446, 3);
    expect(ladderStep(state, 51, mixed)).toEqual({ released: 50, improved: false });
  });

  it('averages tasks as the overall does', () => {
    const two = (a: ItemScores, b: ItemScores): ItemScores => ({ A: a.T ?? {}, B: b.T ?? {} });
    // One flipped item in task A: Δ = 0.5 point, the standard error √(0.01² + 0)/2 = 0.5 point.
    expect(
      pairedStandardError(
        two(
          items((i) => i <= 50),
          base,
        ),
        two(base, base),
      ),
    ).toBeCloseTo(0.5, 10);
  });

  it('starts again when the items do not pair (new gold)', () => {
    const other: ItemScores = { T: { x: 1, y: 0 } };
    expect(pairedStandardError(other, base)).toBeUndefined();
    expect(ladderStep({ released: 90, items: base }, 50, other)).toEqual({ released: 50, improved: true });
  });
});
