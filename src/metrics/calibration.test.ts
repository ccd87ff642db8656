/** Calibration measures against cases whose answers are worked out by hand. */
import { describe, expect, it } from 'vitest';
import { type CalibrationItem, calibration, eceDifference, softmax } from './calibration.js';

describe('calibration', () => {
  it('two items by hand: ECE, Brier, NLL', () => {
    // Probabilities 0.8/0.2 (right) and 0.6/0.4 (wrong): the log-probabilities are their own logits.
    const c = calibration([
      { logits: [Math.log(0.8), Math.log(0.2)], gold: 0 },
      { logits: [Math.log(0.6), Math.log(0.4)], gold: 1 },
    ]);
    // Two bins of one item each: ½·|1 − 0.8| + ½·|0 − 0.6|.
    expect(c.ece).toBeCloseTo(0.4, 12);
    expect(c.ece_adaptive).toBeCloseTo(0.4, 12);
    // (0.2² + 0.2²) and (0.6² + 0.6²), halved.
    expect(c.brier).toBeCloseTo((0.08 + 0.72) / 2, 12);
    expect(c.nll).toBeCloseTo(-(Math.log(0.8) + Math.log(0.4)) / 2, 12);
    expect(c.accuracy_at_coverage.map((x) => x.accuracy)).toEqual([1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5]);
  });

  it('is 0 for a model right exactly as often as it is confident, and shows overconfidence', () => {
    // In each of five confidence levels, 20 items, of which that share are right.
    const items = [0.6, 0.7, 0.8, 0.9, 1.0].flatMap((q) =>
      Array.from({ length: 20 }, (_, i) => ({
        logits: q === 1 ? [0, Number.NEGATIVE_INFINITY] : [Math.log(q), Math.log(1 - q)],
        gold: i < Math.round(20 * q) ? 0 : 1,
      })),
    );
    expect(calibration(items).ece).toBeCloseTo(0, 12);
    // The same answers, every one said with confidence 0.99: the error is 0.99 − the accuracy (0.8).
    const sure = items.map((x) => ({ ...x, logits: [Math.log(0.99), Math.log(0.01)] }));
    expect(calibration(sure).ece).toBeCloseTo(0.99 - 0.8, 12);
  });

  it('equal-count bins see what equal-width ones average away', () => {
    // 15 items at 0.95 that are all right and 15 at 0.96 that are all wrong share one equal-width bin (|0.5 − 0.955|).
    // In 15 equal-count bins of two, seven hold right 0.95s, seven wrong 0.96s, and one a pair of each.
    const items = [
      ...Array.from({ length: 15 }, () => ({ logits: [Math.log(0.95), Math.log(0.05)], gold: 0 })),
      ...Array.from({ length: 15 }, () => ({ logits: [Math.log(0.96), Math.log(0.04)], gold: 1 })),
    ];
    const c = calibration(items);
    expect(c.ece).toBeCloseTo(Math.abs(0.5 - 0.955), 12);
    expect(c.ece_adaptive).toBeCloseTo((14 / 30) * 0.05 + (2 / 30) * 0.455 + (14 / 30) * 0.96, 12);
  });

  it('keeps NLL finite for an answer the model finds all but impossible, and softmax sums to 1', () => {
    const c = calibration([{ logits: [0, -2000], gold: 1 }]);
    expect(c.nll).toBeCloseTo(2000, 9);
    expect(softmax([-1000, -1001, -1002]).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
  });
});

describe('ECE difference between two runs (paired)', () => {
  const item = (p: number, right: boolean): CalibrationItem => ({
    logits: [Math.log(p), Math.log(1 - p)],
    gold: right ? 0 : 1,
  });
  it('is ECE(B) − ECE(A) on the same items, with a paired interval and a randomization p-value', () => {
    // A: sure and often wrong; B: as sure as it is right.
    const a = Array.from({ length: 40 }, (_, i) => item(0.95, i % 2 === 0));
    const b = Array.from({ length: 40 }, (_, i) => item(0.55, i % 2 === 0));
    const pairs = a.map((x, i) => ({ a: x, b: b[i] as CalibrationItem }));
    const d = eceDifference(pairs, 500, 1);
    expect(d.a).toBeCloseTo(calibration(a).ece, 12);
    expect(d.b).toBeCloseTo(calibration(b).ece, 12);
    // By hand: A's one bin, confidence 0.95 and accuracy 0.5; B's, 0.55 and 0.5.
    expect(d.a).toBeCloseTo(0.45, 12);
    expect(d.b).toBeCloseTo(0.05, 12);
    expect(d.delta).toBeCloseTo(-0.4, 12);
    expect(d.ci[1]).toBeLessThan(0);
    expect(d.p).toBeLessThan(0.01);
    expect(
      eceDifference(
        pairs.map((p) => ({ a: p.b, b: p.a })),
        500,
        1,
      ).delta,
    ).toBeCloseTo(0.4, 12);
    // The same answers twice: no difference, p = 1.
    const same = eceDifference(
      a.map((x) => ({ a: x, b: x })),
      200,
      2,
    );
    expect([same.delta, same.ci, same.p]).toEqual([0, [0, 0], 1]);
  });
});
