/** The options probe's statistics (Deng et al., 2023) against cases whose answer is known. */
import { describe, expect, it } from 'vitest';
import { exactMatchTest, normaliseOption } from './contamination.js';

describe('options probe: exact matches against chance', () => {
  it('normalises case, ё, spaces and punctuation only', () => {
    expect(normaliseOption('  Ёлочный «Шар»!')).toBe(normaliseOption('елочный шар'));
    expect(normaliseOption('12–20 в минуту')).toBe('12 20 в минуту');
    expect(normaliseOption('аспирин')).not.toBe(normaliseOption('аспирина'));
  });

  it('ten guesses all right: p is the smallest a permutation test gives; chance is one fixed point in ten', () => {
    const truths = Array.from({ length: 10 }, (_, i) => `вариант ${i}`);
    const r = exactMatchTest(truths, truths, 20_000, 1);
    expect(r.exact_match).toBe(1);
    // A random permutation of 10 has one fixed point on average, and all 10 with probability 1/10! ≈ 2.8e-7.
    expect(r.chance).toBeCloseTo(0.1, 2);
    expect(r.p_value).toBe(1 / 20_001);
  });

  it('two items: the identity or the swap, each half the time', () => {
    const r = exactMatchTest(['a', 'b'], ['a', 'b'], 20_000, 2);
    expect(r.exact_match).toBe(1);
    expect(r.chance).toBeCloseTo(0.5, 1);
    expect(r.p_value).toBeCloseTo(0.5, 1);
    // Guesses that match nothing: p = 1 (every permutation does as well).
    expect(exactMatchTest(['x', 'y'], ['a', 'b'], 100, 3)).toEqual({ exact_match: 0, chance: 0, p_value: 1 });
    // An empty guess never matches, even an empty truth.
    expect(exactMatchTest(['', ''], ['', ''], 10, 4).exact_match).toBe(0);
  });
});
