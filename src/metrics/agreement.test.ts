import { describe, expect, it } from 'vitest';
import { cohenKappa, fleissKappa, jaccard, krippendorffAlpha, observedAgreement } from './agreement.js';

const rep = (label: string, n: number): string[] => Array.from({ length: n }, () => label);

describe('agreement', () => {
  it("Cohen's kappa: the worked example of Wikipedia's article (50 items, 20 yes/yes, 15 no/no) is 0.4", () => {
    // A said yes 25 times, B said yes 30 times; they agreed on 20 yes and 15 no.
    const a = [...rep('yes', 20), ...rep('yes', 5), ...rep('no', 10), ...rep('no', 15)];
    const b = [...rep('yes', 20), ...rep('no', 5), ...rep('yes', 10), ...rep('no', 15)];
    const r = cohenKappa(a, b);
    expect(r.n).toBe(50);
    expect(r.observed).toBeCloseTo(0.7, 12);
    expect(r.kappa).toBeCloseTo(0.4, 12);
  });

  it("Cohen's kappa by hand: 4 common items, one missing", () => {
    // p_o = 3/4; A: x 3/4, y 1/4; B: x 2/4, y 2/4; p_e = 3/8 + 1/8 = 1/2; κ = (3/4 − 1/2)/(1/2) = 1/2.
    const r = cohenKappa(['x', 'x', 'x', 'y', 'y'], ['x', 'x', 'y', 'y', null]);
    expect(r).toEqual({ n: 4, observed: 0.75, kappa: 0.5 });
    expect(cohenKappa(['a'], [null]).n).toBe(0);
  });

  it("Fleiss' kappa: Fleiss (1971) as worked in Wikipedia's article, 10 items, 14 raters, 5 categories: 0.210", () => {
    const table = [
      [0, 0, 0, 0, 14],
      [0, 2, 6, 4, 2],
      [0, 0, 3, 5, 6],
      [0, 3, 9, 2, 0],
      [2, 2, 8, 1, 1],
      [7, 7, 0, 0, 0],
      [3, 2, 6, 3, 0],
      [2, 5, 3, 2, 2],
      [6, 5, 2, 1, 0],
      [0, 2, 2, 3, 7],
    ];
    expect(fleissKappa(table)).toBeCloseTo(0.20993, 5);
  });

  it("Fleiss' kappa by hand: two raters, three items", () => {
    // P_i = 1, 0, 1 → P̄ = 2/3; p = (3/6, 3/6) → P̄_e = 1/2; κ = (2/3 − 1/2)/(1/2) = 1/3.
    expect(
      fleissKappa([
        [2, 0],
        [1, 1],
        [0, 2],
      ]),
    ).toBeCloseTo(1 / 3, 12);
    expect(() =>
      fleissKappa([
        [2, 0],
        [1, 2],
      ]),
    ).toThrow(/same number/);
  });

  it("Krippendorff's alpha: the nominal example of Krippendorff (2011), 4 coders, 12 units, missing values: 0.743", () => {
    const A = ['1', '2', '3', '3', '2', '1', '4', '1', '2', null, null, null];
    const B = ['1', '2', '3', '3', '2', '2', '4', '1', '2', '5', null, '3'];
    const C = [null, '3', '3', '3', '2', '3', '4', '2', '2', '5', '1', null];
    const D = ['1', '2', '3', '3', '2', '4', '4', '1', '2', '5', '1', null];
    const units = A.map((_, u) => [A[u], B[u], C[u], D[u]] as (string | null)[]);
    expect(krippendorffAlpha(units)).toBeCloseTo(0.743, 3);
  });

  it("Krippendorff's alpha by hand, and equal to Fleiss' kappa's small-sample form on complete data", () => {
    // Units (a,a) (a,b) (b,b): o_aa = 2, o_ab = o_ba = 1, o_bb = 2; n = 6; α = 1 − 5·2/(3·3·2) = 4/9.
    expect(
      krippendorffAlpha([
        ['a', 'a'],
        ['a', 'b'],
        ['b', 'b'],
      ]),
    ).toBeCloseTo(4 / 9, 12);
    expect(krippendorffAlpha([['a'], ['b', null]])).toBeNaN();
  });

  it('observed agreement counts agreeing pairs within items; Jaccard compares answer sets', () => {
    expect(
      observedAgreement([
        ['a', 'a', 'b'],
        ['c', null],
        ['d', 'd'],
      ]),
    ).toEqual({ pairs: 4, agreement: 0.5 });
    expect(jaccard(['M54', 'I11', 'G54'], ['I11', 'M54', 'E11'])).toBeCloseTo(0.5, 12);
    expect(jaccard([], [])).toBe(1);
  });
});
