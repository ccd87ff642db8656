import { describe, expect, it } from 'vitest';
import { getTask } from '../../tasks/registry.js';
import { agreement, annotatorScores, combine, type ItemAnswers, ruleOf } from './results.js';
import { assignItems, sampleItems } from './sampling.js';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `i${i}`);

describe('sampling', () => {
  it('draws a seeded sample, stratified by gold label in proportion', () => {
    const items = [
      ...ids(60).map((id) => ({ id, label: 'neutral' })),
      ...ids(30).map((id) => ({ id: `c${id}`, label: 'contradiction' })),
      ...ids(10).map((id) => ({ id: `e${id}`, label: 'entailment' })),
    ];
    const s = sampleItems(items, 20, 7);
    expect(s).toHaveLength(20);
    const label = new Map(items.map((i) => [i.id, i.label]));
    const counts = { neutral: 0, contradiction: 0, entailment: 0 } as Record<string, number>;
    for (const id of s) counts[label.get(id) as string] = (counts[label.get(id) as string] as number) + 1;
    expect(counts).toEqual({ neutral: 12, contradiction: 6, entailment: 2 });
    expect(new Set(s).size).toBe(20);
    expect(sampleItems(items, 20, 7)).toEqual(s);
    expect(sampleItems(items, 20, 8)).not.toEqual(s);
  });

  it('gives remainders to the strata with the largest fractions, and takes all when asked', () => {
    const items = [
      ...ids(5).map((id) => ({ id, label: 'a' })),
      ...ids(5).map((id) => ({ id: `b${id}`, label: 'b' })),
    ];
    const s = sampleItems(items, 3, 1);
    expect(s).toHaveLength(3);
    expect(sampleItems(items, 'all', 1).sort()).toEqual(items.map((i) => i.id).sort());
    expect(
      sampleItems(
        items.map(({ id }) => ({ id })),
        4,
        1,
      ),
    ).toHaveLength(4);
  });
});

describe('assignment', () => {
  it('gives every item to `overlap` distinct annotators, loads within one of each other', () => {
    for (const [n, annotators, overlap] of [
      [300, 5, 2],
      [101, 4, 3],
      [17, 3, 1],
      [50, 6, 2],
    ] as const) {
      const q = assignItems(ids(n), annotators, overlap, 0);
      const loads = q.map((x) => x.length);
      expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
      expect(loads.reduce((s, x) => s + x, 0)).toBe(n * overlap);
      const per = new Map<string, number>();
      for (const queue of q) {
        expect(new Set(queue).size).toBe(queue.length);
        for (const id of queue) per.set(id, (per.get(id) ?? 0) + 1);
      }
      expect([...per.values()].every((c) => c === overlap)).toBe(true);
    }
  });

  it('spreads the overlapping items over every pair of annotators', () => {
    const q = assignItems(ids(300), 5, 2, 0);
    const together = new Map<string, number>();
    const sets = q.map((x) => new Set(x));
    for (let a = 0; a < 5; a++)
      for (let b = a + 1; b < 5; b++)
        together.set(`${a}-${b}`, ids(300).filter((i) => sets[a]?.has(i) && sets[b]?.has(i)).length);
    // 300 items, 10 pairs: 30 each, give or take a few.
    expect([...together.values()].every((n) => n >= 27 && n <= 33)).toBe(true);
  });

  it('is the same for the same seed, and refuses an impossible overlap', () => {
    expect(assignItems(ids(40), 4, 2, 3)).toEqual(assignItems(ids(40), 4, 2, 3));
    expect(assignItems(ids(40), 4, 2, 3)).not.toEqual(assignItems(ids(40), 4, 2, 4));
    expect(() => assignItems(ids(4), 2, 3, 0)).toThrow(/between 1 and the number of annotators \(2\)/);
  });
});

describe('results', () => {
  const nli = getTask('RuMedNLI');
  const item = (id: string, ...values: (string | string[])[]): ItemAnswers => ({
    id,
    answers: values.map((value, annotator) => ({ annotator, value })),
  });

  it('takes the majority with an odd overlap on label tasks, else the first annotator', () => {
    expect(ruleOf(nli, 3)).toBe('majority');
    expect(ruleOf(nli, 2)).toBe('first');
    expect(ruleOf(getTask('RuMedTop3'), 3)).toBe('first');
    expect(combine(item('x', 'neutral', 'entailment', 'entailment'), 'majority')).toBe('entailment');
    expect(combine(item('x', 'neutral', 'entailment', 'contradiction'), 'majority')).toBe('neutral');
    expect(combine(item('x', 'neutral', 'entailment'), 'first')).toBe('neutral');
    expect(combine({ id: 'x', answers: [] }, 'first')).toBeUndefined();
  });

  it('measures agreement on shared items: a hand-worked fixture', () => {
    // Two annotators, four shared items, as in the Cohen fixture of metrics/agreement.test.ts: p_o = 3/4, κ = 1/2.
    const items = [
      item('1', 'e', 'e'),
      item('2', 'e', 'e'),
      item('3', 'e', 'c'),
      item('4', 'c', 'c'),
      { id: '5', answers: [{ annotator: 0, value: 'n' }] },
    ];
    const r = agreement(nli, items, 2, 2);
    expect(r).toEqual({
      items: 4,
      observed: 0.75,
      fleiss_kappa: expect.closeTo(0.4666666, 6),
      krippendorff_alpha: expect.closeTo(0.53333333, 6),
      pairs: [{ a: 0, b: 1, n: 4, observed: 0.75, kappa: 0.5 }],
    });
  });

  it('compares ranked answers by first choice and by set, and tag sequences by entity F1', () => {
    const top3 = getTask('RuMedTop3');
    const r = agreement(
      top3,
      [item('1', ['M54', 'I11', 'G54'], ['M54', 'E11', 'I11']), item('2', ['J06'], ['J00'])],
      2,
      2,
    );
    expect(r.pairs[0]).toEqual({
      a: 0,
      b: 1,
      n: 2,
      observed: 0.5,
      kappa: expect.any(Number),
      set_overlap: 0.25,
    });
    const ner = getTask('RuMedNER');
    const t = agreement(ner, [item('1', ['B-Drugname', 'O', 'B-ADR'], ['B-Drugname', 'O', 'O'])], 2, 2);
    // One entity in common of 2 and 1: precision 1, recall 1/2, F1 2/3.
    expect(t.pairs[0]?.entity_f1).toBeCloseTo(2 / 3, 12);
    expect(t.entity_f1).toBeCloseTo(2 / 3, 12);
  });

  it('scores each annotator against the gold', () => {
    const gold = new Map([
      ['1', 'e'],
      ['2', 'c'],
      ['3', 'n'],
    ]);
    const s = annotatorScores(nli, [item('1', 'e', 'c'), item('2', 'c', 'c'), item('3', 'e')], gold, 3);
    expect(s).toEqual([
      { annotator: 0, answered: 3, accuracy: (100 * 2) / 3 },
      { annotator: 1, answered: 2, accuracy: 50 },
      { annotator: 2, answered: 0, accuracy: null },
    ]);
  });
});
