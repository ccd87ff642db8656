/** Student's t against published table values and closed forms. */
import { describe, expect, it } from 'vitest';
import { logGamma, normalUpper, oneSidedTTest, studentTUpper } from './student-t.js';

describe("Student's t", () => {
  it('gives the tables’ one-sided critical values', () => {
    // t tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2): upper-tail probability at the critical value.
    expect(studentTUpper(2.228, 10)).toBeCloseTo(0.025, 4);
    expect(studentTUpper(2.764, 10)).toBeCloseTo(0.01, 4);
    expect(studentTUpper(1.699, 29)).toBeCloseTo(0.05, 4);
    expect(studentTUpper(3.169, 10)).toBeCloseTo(0.005, 4);
    expect(studentTUpper(0, 7)).toBeCloseTo(0.5, 12);
    expect(studentTUpper(-2.228, 10)).toBeCloseTo(0.975, 4);
  });

  it('matches closed forms: Cauchy at 1 degree of freedom, and 2', () => {
    for (const t of [-3, -0.5, 0.3, 1, 4.2]) {
      expect(studentTUpper(t, 1)).toBeCloseTo(0.5 - Math.atan(t) / Math.PI, 12);
      expect(studentTUpper(t, 2)).toBeCloseTo(0.5 - t / (2 * Math.sqrt(2 + t * t)), 12);
    }
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(0.5)).toBeCloseTo(0.5 * Math.log(Math.PI), 12);
  });

  it('tests a sample by hand', () => {
    // mean 2, sd √2.5 over 5 values: t = 2 / (√2.5 / √5) = 2√2.
    const r = oneSidedTTest([0, 1, 2, 3, 4]);
    expect([r.mean, r.df]).toEqual([2, 4]);
    expect(r.t).toBeCloseTo(2 * Math.SQRT2, 12);
    expect(r.p).toBeCloseTo(0.023_72, 4);
  });
});

describe('normalUpper', () => {
  it('matches known tail areas of the standard normal', () => {
    expect(normalUpper(0)).toBeCloseTo(0.5, 7);
    expect(normalUpper(1.959963984540054)).toBeCloseTo(0.025, 7);
    expect(normalUpper(-1.6448536269514722)).toBeCloseTo(0.95, 7);
    expect(normalUpper(3)).toBeCloseTo(0.0013498980316301, 8);
  });
});
