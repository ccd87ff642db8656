import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import { buildItemStats, metricsFromSums, sumRows, taskScore } from './item-stats.js';

describe('ranking metrics as upstream eval.py', () => {
  const task = getTask('RuMedTop3');
  const items = [
    { id: 'a', gold: 'M54', prediction: ['M54', 'I11', 'G54'] }, // first right
    { id: 'b', gold: 'I11', prediction: ['M54', 'I11'] }, // hit only
    { id: 'c', gold: 'J42', prediction: ['M54'] }, // miss
    { id: 'd', gold: 'K58', prediction: ['K29', 'K52', 'K58'] }, // hit at rank 3
  ];
  const stats = buildItemStats(task, items);

  it('accuracy looks at the first prediction, Hit@3 at the list', () => {
    const m = metricsFromSums(task, sumRows(stats.stats, 2), items.length);
    expect(m).toEqual({ accuracy: 25, hit_at_3: 75 });
    expect(taskScore(task, m)).toBe(50);
  });

  it('sums the rows a resample names, repeats included', () => {
    expect([...sumRows(stats.stats, 2, [0, 0, 2])]).toEqual([2, 2]);
  });
});

describe('classification accuracy', () => {
  it('is the share of exact label matches', () => {
    const task = getTask('RuMedNLI');
    const stats = buildItemStats(task, [
      { id: '1', gold: 'neutral', prediction: 'neutral' },
      { id: '2', gold: 'entailment', prediction: 'neutral' },
      { id: '3', gold: 'contradiction', prediction: 'contradiction' },
    ]);
    expect(metricsFromSums(task, sumRows(stats.stats, 1), 3).accuracy).toBeCloseTo((2 / 3) * 100, 12);
  });
});
