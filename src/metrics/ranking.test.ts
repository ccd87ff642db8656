import { describe, expect, it } from 'vitest';
import { taskFromObject } from '../tasks/definition.js';
import { getTask } from '../tasks/registry.js';
import type { TaskDefinition } from '../tasks/types.js';
import { type Delta, pairedComparison } from './bootstrap.js';
import { buildItemStats } from './item-stats.js';
import {
  clusteredSe,
  compactLetters,
  drawsFromRows,
  drawTask,
  exactMcNemar,
  groupLabels,
  holm,
  moveRanks,
  plannedMde,
  rankDraws,
  rankOverall,
  rankOverallDraws,
  rankTask,
  replicateRanks,
  TESTED_TOP,
} from './ranking.js';
import { createRng } from './rng.js';
import { normalUpper } from './student-t.js';

describe('the tests and their corrections, against hand-worked cases', () => {
  it('exact McNemar: 1 of 10 discordant pairs one way is p = 2·(1 + 10)/1024', () => {
    expect(exactMcNemar(1, 9)).toBeCloseTo(22 / 1024, 15);
    expect(exactMcNemar(9, 1)).toBeCloseTo(22 / 1024, 15);
    expect(exactMcNemar(0, 0)).toBe(1);
    expect(exactMcNemar(5, 5)).toBe(1);
    // 0 of 6 one way: 2 · (1/2)^6.
    expect(exactMcNemar(0, 6)).toBeCloseTo(2 / 64, 15);
  });

  it('Holm: sorted p times (m − rank), kept monotone', () => {
    expect(holm([0.01, 0.04, 0.03])).toEqual([0.03, 0.06, 0.06]);
    expect(holm([0.5, 0.9])).toEqual([1, 1]);
  });

  it('Miller’s clustered standard error: two clusters of two agreeing items', () => {
    // Mean 50; cluster sums of deviations +100 and −100: sqrt(2·100²)/4.
    expect(clusteredSe([100, 100, 0, 0], ['a', 'a', 'b', 'b'])).toBeCloseTo(Math.sqrt(20000) / 4, 12);
    // Each item its own cluster: sqrt(4·50²)/4 = 25.
    expect(clusteredSe([100, 100, 0, 0])).toBeCloseTo(25, 12);
  });

  it('compact letters (Piepho, 2004): only A and C differ → a, ab, b', () => {
    const pairs = new Set(['A C']);
    const letters = compactLetters(
      ['A', 'B', 'C'],
      (x, y) => pairs.has(`${x} ${y}`) || pairs.has(`${y} ${x}`),
    );
    expect(Object.fromEntries(letters)).toEqual({ A: 'a', B: 'ab', C: 'b' });
    expect(Object.fromEntries(compactLetters(['A', 'B', 'C'], () => true))).toEqual({
      A: 'a',
      B: 'b',
      C: 'c',
    });
    expect(Object.fromEntries(compactLetters(['A', 'B'], () => false))).toEqual({ A: 'a', B: 'a' });
  });
});

const danet = getTask('RuMedDaNet');
const items = (n: number, wrong: (i: number) => boolean) =>
  buildItemStats(
    danet,
    Array.from({ length: n }, (_, i) => ({
      id: `q${i}`,
      gold: 'да',
      prediction: wrong(i) ? 'нет' : 'да',
    })),
  );

describe('rankTask on constructed systems', () => {
  // A: 80 of 100 right. B: A with two answers flipped (one right → wrong, one wrong → right). C: far worse.
  const A = items(100, (i) => i % 5 === 0);
  const B = items(100, (i) => (i % 5 === 0 && i !== 0) || i === 1);
  const C = items(100, (i) => i % 2 === 0);
  const ranked = rankTask(
    [
      { name: 'A', stats: A },
      { name: 'B', stats: B },
      { name: 'C', stats: C },
    ],
    { resamples: 2000, seed: 7 },
  );

  it('A and B tie (one group, overlapping ranks); C is worse than both, alone', () => {
    const by = Object.fromEntries(ranked.systems.map((s) => [s.name, s]));
    expect([by.A?.score, by.B?.score, by.C?.score]).toEqual([80, 80, 50]);
    expect(by.A?.group).toBe(by.B?.group);
    expect(by.C?.group).not.toContain(by.A?.group as string);
    expect(by.C?.rank_ci).toEqual([3, 3]);
    expect(by.A?.rank).toBe(1);
    expect(by.A?.rank_ci[1]).toBeLessThanOrEqual(2);
  });

  it('the McNemar p-values equal a direct computation; Holm adjusts them', () => {
    const ab = ranked.pairs.find((p) => p.a === 'A' && p.b === 'B');
    expect(ab?.test).toBe('exact McNemar');
    expect(ab?.p_value).toBeCloseTo(exactMcNemar(1, 1), 15);
    const ac = ranked.pairs.find((p) => p.a === 'A' && p.b === 'C');
    // A right and C wrong: even i not divisible by 5 (40); C right and A wrong: odd multiples of 5 (10).
    expect(ac?.p_value).toBeCloseTo(exactMcNemar(40, 10), 15);
    expect(ac?.p_holm).toBeCloseTo(Math.min(1, 3 * exactMcNemar(40, 10)), 12);
  });

  it('the standard error is the item formula, and the bootstrap agrees with it', () => {
    const a = ranked.systems.find((s) => s.name === 'A');
    // sqrt(p(1 − p)/n) in points: sqrt(0.8 · 0.2 / 100) · 100 = 4.
    expect(a?.se).toBeCloseTo(4, 12);
  });

  it('the minimum detectable effect follows the paired discordance (Connor, 1987)', () => {
    expect(ranked.mde).toBeGreaterThan(0);
    // Between two systems that disagree on 2 items of 100 (one each way): SE = sqrt(2·100²)/100.
    const tie = rankTask(
      [
        { name: 'A', stats: A },
        { name: 'B', stats: B },
      ],
      { resamples: 0, seed: 0 },
    );
    expect(tie.mde).toBeCloseTo(
      (1.959963984540054 + 0.8416212335729143) * (Math.sqrt(2 * 100 ** 2) / 100),
      10,
    );
  });
});

describe('the detectable difference of identical entries', () => {
  // Copies of one entry disagree on no item: their paired difference has no spread, and says nothing of the
  // differences the test set detects. "Detects ≥ 0.0" would read as "any gap is detectable".
  const A = items(100, (i) => i % 5 === 0);
  const B = items(100, (i) => (i % 5 === 0 && i !== 0) || i === 1);

  it('is none among identical entries only', () => {
    const same = rankTask(
      ['A', 'A2', 'A3'].map((name) => ({ name, stats: A })),
      { resamples: 0, seed: 0 },
    );
    expect(same.mde).toBeNull();
  });

  it('is taken over the pairs that disagree somewhere, copies left out', () => {
    const mixed = rankTask(
      [
        { name: 'A', stats: A },
        { name: 'A2', stats: A },
        { name: 'A3', stats: A },
        { name: 'B', stats: B },
      ],
      { resamples: 0, seed: 0 },
    );
    // Each copy and B disagree on 2 items of 100; the copies among themselves on none: the median of the three
    // informative pairs, not of all six (which would halve it).
    expect(mixed.mde).toBeCloseTo(
      (1.959963984540054 + 0.8416212335729143) * (Math.sqrt(2 * 100 ** 2) / 100),
      10,
    );
  });
});

describe('the detectable difference: docs/reading-the-board.md’s worked example', () => {
  // RuMedDaNet, feature-based against BiLSTM: 256 items, 58 only the first answers right, 59 only the second, the
  // other 139 alike (here 75 right by both, 64 wrong by both).
  const pair = (n: number, onlyA: number, onlyB: number, both: number) => {
    // Items [0, both) are right for both; the next onlyA right for A alone; the next onlyB right for B alone.
    const wrong = (first: boolean) => (i: number) => {
      const alone = first ? i >= both && i < both + onlyA : i >= both + onlyA && i < both + onlyA + onlyB;
      return !(i < both || alone);
    };
    return rankTask(
      [
        { name: 'A', stats: items(n, wrong(true)) },
        { name: 'B', stats: items(n, wrong(false)) },
      ],
      { resamples: 0, seed: 0 },
    );
  };
  const Z = 1.959963984540054 + 0.8416212335729143;

  it('is 2.80 × 100·sqrt((p_d − d̄²)/n) = 2.80 × 4.23 ≈ 11.8 points, and McNemar gives p = 1', () => {
    const r = pair(256, 58, 59, 75);
    const se = 100 * Math.sqrt((117 / 256 - (1 / 256) ** 2) / 256);
    expect(se).toBeCloseTo(4.23, 2);
    expect(r.mde).toBeCloseTo(Z * se, 12);
    expect(Number(r.mde?.toFixed(1))).toBe(11.8);
    expect([r.pairs[0]?.test, r.pairs[0]?.p_value]).toEqual(['exact McNemar', 1]);
  });

  it('keeps the d̄² term: far apart, it is below 100·sqrt(p_d/n), which only plan check (d̄ = 0) uses', () => {
    // 100 items: 2 only A has right, 20 only B: p_d = 0.22, d̄ = 0.18.
    const r = pair(100, 2, 20, 30);
    expect(r.mde).toBeCloseTo(Z * 100 * Math.sqrt((0.22 - 0.18 ** 2) / 100), 12);
    expect(r.mde).toBeLessThan(plannedMde(100, 0.22) * 0.93);
  });
});

describe('a clustered task: RuMedNLI’s hypotheses share premises', () => {
  const nli = getTask('RuMedNLI');
  // 60 premises × 3 hypotheses; the system is right on whole premises (clustered errors).
  const stats = buildItemStats(
    nli,
    Array.from({ length: 180 }, (_, i) => ({
      id: `h${i}`,
      gold: 'neutral',
      prediction: Math.floor(i / 3) % 4 === 0 ? 'entailment' : 'neutral',
    })),
  );
  const clusters = Array.from({ length: 180 }, (_, i) => `p${Math.floor(i / 3)}`);

  it('the standard error is the clustered formula, larger than the item one', () => {
    const r = rankTask([{ name: 'X', stats }], { resamples: 0, seed: 0, clusters });
    const values = Array.from({ length: 180 }, (_, i) => (Math.floor(i / 3) % 4 === 0 ? 0 : 100));
    expect(r.systems[0]?.se).toBeCloseTo(clusteredSe(values, clusters), 12);
    expect(r.systems[0]?.se).toBeGreaterThan(clusteredSe(values) * 1.5);
    expect(r.clusters).toBe(60);
  });
});

describe('rankOverall', () => {
  it('the mean of the task scores, with intervals from the tasks’ own resampling', () => {
    const A = items(200, (i) => i % 10 === 0);
    const C = items(200, (i) => i % 2 === 0);
    const r = rankOverall(
      [
        {
          systems: [
            { name: 'A', stats: A },
            { name: 'C', stats: C },
          ],
        },
      ],
      { resamples: 500, seed: 1 },
    );
    expect(r.systems.map((s) => [s.name, s.score, s.rank, s.group])).toEqual([
      ['A', 90, 1, 'a'],
      ['C', 50, 2, 'b'],
    ]);
    expect(r.pairs[0]?.p_value).toBeLessThan(0.01);
  });
});

describe('plannedMde', () => {
  it('is (z_0.975 + z_0.8) · 100 · sqrt(p_d / n): 256 items, 30% answered differently → 9.59 points', () => {
    expect(plannedMde(256, 0.3)).toBeCloseTo(2.8015852181 * 100 * Math.sqrt(0.3 / 256), 8);
    expect(plannedMde(256, 0.3)).toBeCloseTo(9.59, 2);
    // Four times the items halve it.
    expect(plannedMde(1024, 0.3) * 2).toBeCloseTo(plannedMde(256, 0.3), 12);
  });
});

describe('the tests beyond McNemar', () => {
  it('a clustered task: the z-test on paired differences with their clustered SE (Miller, 2024)', () => {
    const nli = getTask('RuMedNLI');
    // 40 premises × 3 hypotheses. A is right on every premise; B misses whole premises 0, 4, 8, ….
    const make = (wrong: (i: number) => boolean) =>
      buildItemStats(
        nli,
        Array.from({ length: 120 }, (_, i) => ({
          id: `h${i}`,
          gold: 'neutral',
          prediction: wrong(i) ? 'entailment' : 'neutral',
        })),
      );
    const clusters = Array.from({ length: 120 }, (_, i) => `p${Math.floor(i / 3)}`);
    const A = make(() => false);
    const B = make((i) => Math.floor(i / 3) % 4 === 0);
    const r = rankTask(
      [
        { name: 'A', stats: A },
        { name: 'B', stats: B },
      ],
      { resamples: 0, seed: 0, clusters },
    );
    const d = Array.from({ length: 120 }, (_, i) => (Math.floor(i / 3) % 4 === 0 ? -100 : 0));
    const se = clusteredSe(d, clusters);
    // By hand: mean −25; 10 clusters of (−75·3) and 30 of (25·3): sqrt(10·225² + 30·75²) / 120.
    expect(se).toBeCloseTo(Math.sqrt(10 * 225 ** 2 + 30 * 75 ** 2) / 120, 12);
    expect(r.pairs[0]?.test).toBe('z-test, clustered');
    expect(r.pairs[0]?.diff).toBeCloseTo(-25, 12);
    expect(r.pairs[0]?.p_value).toBeCloseTo(2 * normalUpper(25 / se), 12);
  });

  it('the overall: the paired bootstrap test, z = d / SD of the replicates’ differences', () => {
    const A = items(200, (i) => i % 10 === 0);
    const B = items(200, (i) => i % 10 === 0 || i === 5);
    const r = rankOverall(
      [
        {
          systems: [
            { name: 'A', stats: A },
            { name: 'B', stats: B },
          ],
        },
      ],
      { resamples: 4000, seed: 3 },
    );
    // B differs from A on one item, one wrong answer more: d = −0.5 points; in a replicate the difference is 0.5 ×
    // how often that item was drawn, Binomial(200, 1/200), so its SD is 0.5·sqrt(199/200) and z ≈ 1.0025.
    const z = 0.5 / (0.5 * Math.sqrt(199 / 200));
    expect(r.pairs[0]?.test).toBe('paired bootstrap');
    expect(r.pairs[0]?.diff).toBeCloseTo(-0.5, 12);
    expect(r.pairs[0]?.p_value).toBeGreaterThan(2 * normalUpper(z * 1.03));
    expect(r.pairs[0]?.p_value).toBeLessThan(2 * normalUpper(z * 0.97));
  });
});

describe('compact letters on many systems', () => {
  // The first implementation (sets, absorb over all groups), kept as the oracle for the bit-set one.
  function lettersBySets(order: readonly string[], differ: (a: string, b: string) => boolean) {
    let groups: Set<string>[] = [new Set(order)];
    for (let i = 0; i < order.length; i++)
      for (let j = i + 1; j < order.length; j++) {
        const a = order[i] as string;
        const b = order[j] as string;
        if (!differ(a, b)) continue;
        const next: Set<string>[] = [];
        for (const g of groups)
          if (g.has(a) && g.has(b))
            next.push(new Set([...g].filter((x) => x !== a)), new Set([...g].filter((x) => x !== b)));
          else next.push(g);
        groups = next.filter(
          (g, k) =>
            !next.some(
              (h, l) =>
                l !== k && h.size >= g.size && [...g].every((x) => h.has(x)) && (h.size > g.size || l < k),
            ),
        );
      }
    return groups.map((g) => [...g].sort().join(',')).sort();
  }
  const groupsOf = (letters: Map<string, string>) => {
    const by = new Map<string, string[]>();
    for (const [s, ls] of letters) for (const l of groupLabels(ls)) by.set(l, [...(by.get(l) ?? []), s]);
    return [...by.values()].map((g) => g.sort().join(',')).sort();
  };

  it('finds the same groups as insert-and-absorb over sets, on random scores', () => {
    const rng = createRng(11);
    for (let trial = 0; trial < 40; trial++) {
      const k = 3 + rng.int(18);
      const scores = Array.from({ length: k }, () => rng.next() * 10).sort((x, y) => y - x);
      const order = scores.map((_, i) => `s${String(i).padStart(2, '0')}`);
      const gap = 1 + rng.next() * 4;
      const differ = (a: string, b: string) =>
        Math.abs((scores[order.indexOf(a)] as number) - (scores[order.indexOf(b)] as number)) > gap;
      expect(groupsOf(compactLetters(order, differ))).toEqual(lettersBySets(order, differ));
    }
  });

  it('200 systems in a line take well under a second', () => {
    const order = Array.from({ length: 200 }, (_, i) => `s${i}`);
    const t0 = performance.now();
    const letters = compactLetters(order, (a, b) => Math.abs(Number(a.slice(1)) - Number(b.slice(1))) > 10);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(letters.get('s0')).toBe('a');
    // Windows of 11 neighbours: 190 groups, s100 in the 11 that start at s90 … s100.
    expect(groupsOf(letters)).toHaveLength(190);
    expect(groupLabels(letters.get('s100') as string)).toEqual(
      Array.from({ length: 11 }, (_, i) => `[${91 + i}]`),
    );
    expect(letters.get('s30')).toBe('uvwxyzABCDE');
  });
});

describe('the paired test follows the metric tested, not the metrics reported beside it', () => {
  // One task defined twice: `metrics: [accuracy]`, and `metrics: [accuracy, macro_f1]`. A defined task's score is
  // its first metric, accuracy, in both; so both get the exact McNemar test, with the same p.
  const defined = (metrics: string[]) =>
    taskFromObject(
      {
        schema: 'rumedbench.task/1',
        name: 'Triage',
        description: 'd',
        licence: 'l',
        id: 'id',
        inputs: ['text'],
        gold: 'label',
        type: 'classification',
        labels: ['a', 'b'],
        metrics,
        files: { test: 'data/test.jsonl' },
      },
      '/defs/triage.json',
    );
  // 60 items, gold alternating a/b. A is wrong where i % 3 = 0, B where i % 5 = 0: A alone right on the 8 multiples
  // of 5 that are not of 15, B alone right on the 16 multiples of 3 that are not of 15.
  const answers = (task: TaskDefinition, wrong: (i: number) => boolean) =>
    buildItemStats(
      task,
      Array.from({ length: 60 }, (_, i) => {
        const gold = i % 2 === 0 ? 'a' : 'b';
        return { id: `t${i}`, gold, prediction: wrong(i) ? (gold === 'a' ? 'b' : 'a') : gold };
      }),
    );
  const rankOf = (task: TaskDefinition) =>
    rankTask(
      [
        { name: 'A', stats: answers(task, (i) => i % 3 === 0) },
        { name: 'B', stats: answers(task, (i) => i % 5 === 0) },
      ],
      { resamples: 200, seed: 1 },
    ).pairs.map((p) => [p.a, p.b, p.diff, p.p_value, p.test]);

  it('rank: exact McNemar on 8 against 16 discordant items, for both shapes', () => {
    // The difference as the scorer computes it: B's accuracy (48 of 60) minus A's (40 of 60).
    const expected = [['A', 'B', (48 / 60) * 100 - (40 / 60) * 100, exactMcNemar(8, 16), 'exact McNemar']];
    expect(rankOf(defined(['accuracy']))).toEqual(expected);
    expect(rankOf(defined(['accuracy', 'macro_f1']))).toEqual(expected);
  });

  it('rank: a task whose score is macro F1 (its first metric) is no item mean: the paired bootstrap test', () => {
    expect(rankOf(defined(['macro_f1', 'accuracy']))[0]?.[4]).toBe('paired bootstrap');
  });
  const compared = (task: TaskDefinition) => {
    const c = pairedComparison([answers(task, (i) => i % 3 === 0)], [answers(task, (i) => i % 5 === 0)], {
      resamples: 200,
      seed: 1,
    }).tasks.get('Triage');
    const row = (d: Delta | undefined) => [d?.p, d?.test];
    return { accuracy: row(c?.metrics.accuracy), score: row(c?.score), macro_f1: row(c?.metrics.macro_f1) };
  };

  it('compare: the same McNemar p on accuracy and on the score, with or without macro F1 beside it', () => {
    const mcnemar = [exactMcNemar(8, 16), 'exact McNemar'];
    expect(compared(defined(['accuracy']))).toEqual({
      accuracy: mcnemar,
      score: mcnemar,
      macro_f1: [undefined, undefined],
    });
    const withF1 = compared(defined(['accuracy', 'macro_f1']));
    expect({ accuracy: withF1.accuracy, score: withF1.score, macro_f1: withF1.macro_f1[1] }).toEqual({
      accuracy: mcnemar,
      score: mcnemar,
      macro_f1: 'approximate randomization',
    });
  });

  it('compare: a score that is the mean of accuracy and macro F1 gets randomization; its accuracy row McNemar', () => {
    const c = compared({ ...defined(['accuracy', 'macro_f1']), scoreOf: 'mean' });
    expect([c.accuracy, c.score[1]]).toEqual([
      [exactMcNemar(8, 16), 'exact McNemar'],
      'approximate randomization',
    ]);
  });
});

describe('a board of thousands: rows drawn apart, pairs among the best TESTED_TOP', () => {
  // Systems of varied skill on varied items, seeded; RuMedNER's stats are F1 sums (no item mean), RuMedNLI clustered.
  const rng = createRng(44);
  const boardOf = (task: TaskDefinition, k: number, n: number) =>
    Array.from({ length: k }, (_, s) => {
      const skill = 0.3 + 0.6 * rng.next();
      return {
        name: `s${s}`,
        stats: buildItemStats(
          task,
          Array.from({ length: n }, (_, i) => {
            const right = rng.next() < skill;
            if (task.name === 'RuMedNER') {
              const gold = ['B-Drugname', 'I-Drugname', 'O', 'B-ADR', 'O'];
              return {
                id: `i${i}`,
                gold,
                prediction: gold.map((t) => (right || rng.next() < 0.5 ? t : 'O')),
              };
            }
            const gold = task.name === 'RuMedNLI' ? 'neutral' : 'да';
            const wrong = task.name === 'RuMedNLI' ? 'entailment' : 'нет';
            return { id: `i${i}`, gold, prediction: right ? gold : wrong };
          }),
        ),
      };
    });
  const cases = [
    { task: getTask('RuMedDaNet'), clusters: undefined },
    { task: getTask('RuMedNLI'), clusters: Array.from({ length: 60 }, (_, i) => `p${Math.floor(i / 3)}`) },
    { task: getTask('RuMedNER'), clusters: undefined },
  ];

  it("a system's replicate row drawn alone is, bit for bit, its row drawn with the whole board", () => {
    for (const { task, clusters } of cases) {
      const board = boardOf(task, 30, 60);
      const o = { resamples: 200, seed: 3, ...(clusters ? { clusters } : {}) };
      const all = drawTask(board, o);
      board.forEach((s, j) => {
        const alone = drawTask([s], o);
        expect(Object.is(alone.observed[0], all.observed[j])).toBe(true);
        expect(Buffer.from((alone.boot[0] as Float64Array).buffer)).toEqual(
          Buffer.from((all.boot[j] as Float64Array).slice().buffer),
        );
      });
    }
  });

  it('a ranking from rows drawn in batches is the ranking from the board drawn at once', () => {
    for (const { task, clusters } of cases) {
      const board = boardOf(task, 30, 60);
      const o = { resamples: 200, seed: 3, ...(clusters ? { clusters } : {}) };
      const whole = drawTask(board, o);
      const parts = [drawTask(board.slice(0, 11), o), drawTask(board.slice(11), o)];
      const rows = drawsFromRows(
        task,
        {
          names: board.map((s) => s.name),
          observed: parts.flatMap((p) => p.observed),
          boot: parts.flatMap((p) => p.boot),
          statsOf: (i) => (board[i] as (typeof board)[number]).stats,
        },
        { n: 60, ...(clusters ? { clusters } : {}) },
      );
      expect(rankDraws(rows, { top: 10 })).toEqual(rankDraws(whole, { top: 10 }));
    }
  });

  it(`a board no larger than the bound (${TESTED_TOP}) gets the all-pairs ranking`, () => {
    const board = boardOf(danet, 40, 80);
    const d = drawTask(board, { resamples: 300, seed: 5 });
    const r = rankDraws(d, {});
    expect(r).toEqual(rankDraws(d, { top: Number.POSITIVE_INFINITY }));
    expect(r.pairs.length).toBe((40 * 39) / 2);
  });

  it('above the bound: ranks and intervals of all as without it; pairs, groups and MDE those of the best alone', () => {
    for (const { task, clusters } of cases) {
      const board = boardOf(task, 25, 60);
      const d = drawTask(board, { resamples: 300, seed: 9, ...(clusters ? { clusters } : {}) });
      const top = 8;
      const bounded = rankDraws(d, { top });
      const unbounded = rankDraws(d, { top: Number.POSITIVE_INFINITY });
      const place = (x: typeof bounded) => x.systems.map((s) => [s.name, s.score, s.se, s.rank, s.rank_ci]);
      expect(place(bounded)).toEqual(place(unbounded));
      // The best 8 by score (ties in board order), ranked alone: the same pairs, Holm over them, letters and MDE.
      const best = d.observed
        .map((v, i) => [v, i] as const)
        .sort((x, y) => y[0] - x[0])
        .slice(0, top)
        .map(([, i]) => i)
        .sort((x, y) => x - y);
      const alone = rankDraws(d, { only: best });
      expect(bounded.pairs).toEqual(alone.pairs);
      expect(bounded.mde).toBe(alone.mde);
      const groups = Object.fromEntries(bounded.systems.map((s) => [s.name, s.group]));
      expect(groups).toEqual(
        Object.fromEntries(
          board.map((s, i) => [
            s.name,
            best.includes(i) ? (alone.systems.find((a) => a.name === s.name)?.group as string) : '',
          ]),
        ),
      );
    }
  });

  it('the overall above the bound: places of all as without it, groups for the best only', () => {
    const tasks = [boardOf(danet, 20, 50), boardOf(getTask('RuMedNLI'), 20, 60)].map((b) =>
      drawTask(b, { resamples: 200, seed: 1 }),
    );
    const names = tasks[0]?.names as string[];
    const bounded = rankOverallDraws(tasks, names, { top: 6 });
    const unbounded = rankOverallDraws(tasks, names, { top: Number.POSITIVE_INFINITY });
    const place = (x: typeof bounded) => x.systems.map((s) => [s.name, s.score, s.se, s.rank, s.rank_ci]);
    expect(place(bounded)).toEqual(place(unbounded));
    expect(bounded.pairs.length).toBe((6 * 5) / 2);
    expect(bounded.systems.filter((s) => s.group !== '').length).toBe(6);
  });
});

describe('replicate ranks kept between rankings', () => {
  it('moved by the systems removed and added, they are the ranks counted anew, and rank the same', () => {
    const rng = createRng(45);
    const R = 300;
    // Scores on a grid, so that many replicates tie (ties share the better rank).
    const row = () => Float64Array.from({ length: R }, () => Math.round(40 * rng.next()) / 2);
    const before = Array.from({ length: 40 }, row);
    const ranks = replicateRanks(before, R);
    // Systems 3 and 17 leave; three arrive, one of them between the others.
    const keptFrom = before.map((_, i) => i).filter((i) => i !== 3 && i !== 17);
    const arrivals = [row(), row(), row()];
    const after = [
      ...keptFrom.slice(0, 10).map((i) => before[i] as Float64Array),
      arrivals[0] as Float64Array,
    ];
    after.push(...keptFrom.slice(10).map((i) => before[i] as Float64Array), arrivals[1] as Float64Array);
    after.push(arrivals[2] as Float64Array);
    const keptAt = keptFrom.map((_, n) => (n < 10 ? n : n + 1));
    const moved = moveRanks(
      after,
      keptFrom.map((i) => ranks[i] as Float64Array),
      keptAt,
      [before[3] as Float64Array, before[17] as Float64Array],
    );
    expect(moved).toEqual(replicateRanks(after, R));
    const names = after.map((_, i) => `s${i}`);
    const observed = after.map((b) => b[0] as number);
    expect(rankOverallDraws([{ names, observed, boot: after }], names, { ranks: moved })).toEqual(
      rankOverallDraws([{ names, observed, boot: after }], names, {}),
    );
  });
});
