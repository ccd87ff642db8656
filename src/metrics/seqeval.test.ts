import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import { buildItemStats, metricsFromSums, sumRows } from './item-stats.js';
import { countEntities, getEntities, prf } from './seqeval.js';

describe('getEntities follows seqeval 1.2.2 default (conlleval) chunking', () => {
  it.each([
    [
      ['B-PER', 'I-PER', 'O', 'B-LOC'],
      [
        ['PER', 0, 1],
        ['LOC', 3, 3],
      ],
    ],
    // An I- tag after O starts an entity, as in conlleval.
    [['O', 'I-PER', 'I-PER'], [['PER', 1, 2]]],
    // A type change inside a chunk ends it and starts another.
    [
      ['B-PER', 'I-LOC'],
      [
        ['PER', 0, 0],
        ['LOC', 1, 1],
      ],
    ],
    [
      ['B-PER', 'B-PER'],
      [
        ['PER', 0, 0],
        ['PER', 1, 1],
      ],
    ],
    [
      ['I-ADR', 'B-ADR', 'I-ADR', 'O'],
      [
        ['ADR', 0, 0],
        ['ADR', 1, 2],
      ],
    ],
    [['O', 'O'], []],
    [['B-Drug-name', 'I-Drug-name'], [['Drug-name', 0, 1]]],
  ])('%j', (tags, expected) => {
    expect(getEntities(tags).map((e) => [e.type, e.start, e.end])).toEqual(expected);
  });
});

describe('RuMedNER metrics', () => {
  it("match seqeval's documented example: accuracy 0.80, micro F1 0.50", () => {
    // seqeval README: two sentences, one MISC entity mis-spanned and one PER entity right.
    const gold = [
      ['O', 'O', 'O', 'B-MISC', 'I-MISC', 'I-MISC', 'O'],
      ['B-PER', 'I-PER', 'O'],
    ];
    const pred = [
      ['O', 'O', 'B-MISC', 'I-MISC', 'I-MISC', 'I-MISC', 'O'],
      ['B-PER', 'I-PER', 'O'],
    ];
    const task = getTask('RuMedNER');
    const stats = buildItemStats(
      task,
      gold.map((g, i) => ({ id: String(i), gold: g, prediction: pred[i] as string[] })),
    );
    expect(metricsFromSums(task, sumRows(stats.stats, 5), 2)).toEqual({ accuracy: 80, f1: 50 });
  });

  it('counts per type and gives 0 where nothing is predicted', () => {
    const { total, byType } = countEntities(['B-ADR', 'O', 'B-DI'], ['B-ADR', 'O', 'O']);
    expect(total).toEqual({ tp: 1, predicted: 1, gold: 2 });
    expect(Object.fromEntries(byType)).toEqual({
      ADR: { tp: 1, predicted: 1, gold: 1 },
      DI: { tp: 0, predicted: 0, gold: 1 },
    });
    expect(prf({ tp: 0, predicted: 0, gold: 1 })).toEqual({ precision: 0, recall: 0, f1: 0 });
  });
});
