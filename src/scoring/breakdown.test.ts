import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import { breakdown } from './breakdown.js';

describe('breakdown', () => {
  it('lists labels by count, ties in code-unit order whatever the locale (capitals before small letters)', () => {
    const task = getTask('RuMedTop3');
    const items = ['b', 'B', 'a', 'a', 'b', 'B', 'Z'].map((gold, i) => ({
      id: String(i),
      gold,
      prediction: [gold, 'x', 'y'],
    }));
    const b = breakdown(task, items);
    expect(b.kind === 'labels' && b.labels.map((r) => [r.label, r.n])).toEqual([
      ['B', 2],
      ['a', 2],
      ['b', 2],
      ['Z', 1],
    ]);
  });
});
