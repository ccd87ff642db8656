import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { labelsByFrequency, trainNaive } from './naive.js';

const rec = (id: string, gold: string | string[], raw: Record<string, unknown> = {}): TaskRecord => ({
  id,
  gold,
  raw,
  line: 1,
});

describe('naive baselines', () => {
  it('ranks train labels by frequency, ties in order of first appearance', () => {
    const train = ['I11', 'M54', 'G54', 'M54', 'J06', 'G54', 'M54'].map((c, i) => rec(String(i), c));
    expect(labelsByFrequency(train)).toEqual([
      { label: 'M54', count: 3 },
      { label: 'G54', count: 2 },
      { label: 'I11', count: 1 },
      { label: 'J06', count: 1 },
    ]);
    const model = trainNaive(getTask('RuMedTop3'), train, 0);
    expect(model.predict([rec('t', 'M54')])).toEqual([['M54', 'G54', 'I11']]);
    expect(model.rank?.([rec('t', 'M54')], 2)).toEqual([
      [
        { label: 'M54', score: 3 / 7 },
        { label: 'G54', score: 2 / 7 },
      ],
    ]);
  });

  it("answers the task's constant label for classification", () => {
    expect(trainNaive(getTask('RuMedNLI'), [], 0).predict([rec('p', 'entailment')])).toEqual(['neutral']);
    expect(trainNaive(getTask('RuMedDaNet'), [], 0).predict([rec('p', 'нет')])).toEqual(['да']);
    expect(trainNaive(getTask('RuMedTest'), [], 0).predict([rec('q', '2')])).toEqual(['1']);
  });

  it('tags each known token with one draw from its train tags, unknown tokens with O, the same for a seed', () => {
    const task = getTask('RuMedNER');
    const train = [
      rec('a', ['B-Drugname', 'O'], { tokens: ['Виферон', 'помог'] }),
      rec('b', ['B-Drugname', 'O'], { tokens: ['Виферон', '.'] }),
    ];
    const model = trainNaive(task, train, 5);
    const test = [rec('t', ['O', 'O', 'O'], { tokens: ['Виферон', 'новое', 'Виферон'] })];
    expect(model.predict(test)).toEqual([['B-Drugname', 'O', 'B-Drugname']]);
    // A token seen with two tags gets one of them, identically at every occurrence and for every run with the seed.
    const mixed = [rec('c', ['B-ADR', 'O', 'B-ADR'], { tokens: ['сыпь', 'сыпь', 'сыпь'] })];
    const runs = [1, 2, 3].map(() =>
      trainNaive(task, mixed, 11).predict([rec('t', ['O', 'O'], { tokens: ['сыпь', 'сыпь'] })]),
    );
    expect(new Set(runs.map((r) => JSON.stringify(r))).size).toBe(1);
    const tags = runs[0]?.[0] as readonly string[] | undefined;
    expect(tags?.[0]).toBe(tags?.[1]);
    expect(['B-ADR', 'O']).toContain(tags?.[0]);
  });

  it('answers a multi-label task with the class most train records have (as MedBench does on ECG2Pathology)', () => {
    const train = [['3', '37'], ['37'], ['5'], ['37', '5']].map((g, i) => rec(String(i), g));
    expect(trainNaive(getTask('ECG2Pathology'), train, 0).predict([rec('t', ['1'])])).toEqual([['37']]);
  });
});
