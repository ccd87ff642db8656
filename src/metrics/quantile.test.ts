import { describe, expect, it } from 'vitest';
import { median, percentile, percentileOf } from './quantile.js';

describe('the one quantile rule (numpy linear)', () => {
  it('gives numpy.percentile’s values', () => {
    // numpy.percentile([1, 2, 3, 4], 50) == 2.5; numpy.percentile(range(1, 11), 95) == 9.55
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(percentileOf([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)).toBeCloseTo(9.55, 12);
    expect(percentile(Float64Array.from([1, 2, 3]), 0)).toBe(1);
    expect(median([7])).toBe(7);
    expect(median([])).toBeNull();
    expect(Number.isNaN(percentile(new Float64Array(0), 50))).toBe(true);
  });
});
