/** ROUGE-L against cases worked by hand. */
import { describe, expect, it } from 'vitest';
import { lcsLength, rougeL } from './rouge.js';

describe('ROUGE-L', () => {
  it('is the F-measure of the longest common subsequence of words', () => {
    // Lin (2004)'s example: "police killed the gunman" against "police kill the gunman": LCS 3 of 4 and 4.
    expect(rougeL('police kill the gunman', 'police killed the gunman')).toBeCloseTo(0.75, 12);
    expect(lcsLength(['a', 'b', 'c', 'd'], ['b', 'd', 'a', 'c'])).toBe(2);
    // LCS 3 words: recall 3/4, precision 3/3.
    expect(rougeL('Боль в груди.', 'Боль, слабость в груди')).toBeCloseTo(
      (2 * (3 / 4) * 1) / (3 / 4 + 1),
      12,
    );
    expect(rougeL('Точно так же', 'точно так же')).toBe(1);
    expect(rougeL('', 'что-то')).toBe(0);
  });
});
