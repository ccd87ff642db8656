import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import { bootstrapIntervals, pairedComparison, percentile } from './bootstrap.js';
import { buildItemStats } from './item-stats.js';
import { createRng } from './rng.js';

const task = getTask('RuMedDaNet');
const system = (correct: boolean[]) =>
  buildItemStats(
    task,
    correct.map((c, i) => ({ id: String(i), gold: 'да', prediction: c ? 'да' : 'нет' })),
  );

describe('percentile', () => {
  it("interpolates linearly like numpy's default", () => {
    const v = Float64Array.from([1, 2, 3, 4]);
    expect(percentile(v, 25)).toBe(1.75);
    expect(percentile(v, 50)).toBe(2.5);
    expect(percentile(v, 97.5)).toBeCloseTo(3.925, 12);
  });
});

describe('rng', () => {
  it('is deterministic for a seed and uniform enough', () => {
    const a = createRng(42);
    const b = createRng(42);
    const xs = Array.from({ length: 10_000 }, () => a.next());
    expect(xs.slice(0, 5)).toEqual(Array.from({ length: 5 }, () => b.next()));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    expect(xs.reduce((s, x) => s + x, 0) / xs.length).toBeCloseTo(0.5, 1);
    expect(createRng(43).next()).not.toBe(createRng(42).next());
  });
});

describe('bootstrap intervals', () => {
  // 150 of 200 right: accuracy 75, binomial standard error ~3.06, so a 95% interval of about ±6.
  const s = system(Array.from({ length: 200 }, (_, i) => i % 4 !== 0));

  it('bracket the estimate with about the binomial width, and repeat for a seed', () => {
    const r = bootstrapIntervals([s], { resamples: 2000, seed: 7 });
    const [lo, hi] = r.tasks.get('RuMedDaNet')?.metrics.accuracy ?? [0, 0];
    expect(lo).toBeLessThan(75);
    expect(hi).toBeGreaterThan(75);
    expect(hi - lo).toBeGreaterThan(9);
    expect(hi - lo).toBeLessThan(15);
    expect(bootstrapIntervals([s], { resamples: 2000, seed: 7 }).tasks.get('RuMedDaNet')).toEqual(
      r.tasks.get('RuMedDaNet'),
    );
  });

  it('gives no overall interval unless every overall task is present', () => {
    expect(
      bootstrapIntervals([s], { resamples: 10, seed: 1, overallTasks: ['RuMedDaNet', 'RuMedNLI'] }).overall,
    ).toBeUndefined();
    expect(
      bootstrapIntervals([s], { resamples: 10, seed: 1, overallTasks: ['RuMedDaNet'] }).overall,
    ).toBeDefined();
  });
});

describe('paired comparison', () => {
  const base = Array.from({ length: 300 }, (_, i) => i % 2 === 0);

  it('finds no difference between a system and itself', () => {
    const c = pairedComparison([system(base)], [system(base)], { resamples: 500, seed: 3 }).tasks.get(
      'RuMedDaNet',
    );
    expect(c?.metrics.accuracy).toEqual({ delta: 0, ci: [0, 0], p: 1, test: 'exact McNemar' });
  });

  it('finds a 20-point improvement on 300 items significant', () => {
    // B fixes 60 of A's 150 errors.
    let fixed = 0;
    const better = base.map((c) => c || fixed++ < 60);
    const d = pairedComparison([system(base)], [system(better)], { resamples: 1000, seed: 3 }).tasks.get(
      'RuMedDaNet',
    )?.metrics.accuracy;
    expect(d?.delta).toBeCloseTo(20, 10);
    expect(d?.p).toBeLessThan(0.01);
    expect(d?.ci[0]).toBeGreaterThan(10);
    expect(d?.ci[1]).toBeLessThan(30);
  });
});
