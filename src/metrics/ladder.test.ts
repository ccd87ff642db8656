import { describe, expect, it } from 'vitest';
import { loadTaskFile } from '../tasks/definition-file.js';
import { getTask } from '../tasks/registry.js';
import type { TaskDefinition } from '../tasks/types.js';
import { buildItemStats, type Prediction } from './item-stats.js';
import { type LadderItems, ladderMargin, ladderScore, ladderStep, roundToItems } from './ladder.js';
import { createRng } from './rng.js';

const accuracyTask = getTask('RuMedDaNet');
const ecg = loadTaskFile('tasks/ECG2Pathology.json');

/** One task's counts for answers against gold, item ids id0…id(n−1). */
function taskItems(task: TaskDefinition, gold: Prediction[], answers: Prediction[], key = 'k') {
  const stats = buildItemStats(
    task,
    gold.map((g, i) => ({ id: `id${i}`, gold: g, prediction: answers[i] ?? null })),
  );
  return { task, key, rows: stats.stats };
}

/** One accuracy task of 100 items, gold all 'да'; `right` says which items are answered right. */
const yesNo = (right: (i: number) => boolean): LadderItems => [
  taskItems(
    accuracyTask,
    Array.from({ length: 100 }, () => 'да'),
    Array.from({ length: 100 }, (_, i) => (right(i) ? 'да' : 'нет')),
  ),
];
const base = yesNo((i) => i < 50);

describe('the parameter-free Ladder (Blum & Hardt 2015, Algorithm 2)', () => {
  it('releases a team first submission, rounded to 1/n', () => {
    expect(ladderStep(undefined, base)).toEqual({ released: 50, improved: true });
    expect(
      roundToItems(
        33.333,
        yesNo(() => true).map((t) => ({ ...t, rows: t.rows.subarray(0, 3) })),
      ),
    ).toBeCloseTo(100 / 3, 10);
  });

  it('keeps s/√n for accuracy: the jackknife of a mean is the paired standard error', () => {
    // One item flipped to right: d has one 1 and 99 zeros, s² = 1/100, s/√n = 0.01 = 1 point.
    expect(
      ladderMargin(
        yesNo((i) => i <= 50),
        base,
      ),
    ).toBeCloseTo(1, 10);
    // Four flipped: s² = (4·0.96² + 96·0.04²)/99 = 0.0387879, s/√n = 1.96946 points.
    expect(
      ladderMargin(
        yesNo((i) => i < 54),
        base,
      ),
    ).toBeCloseTo(1.969464, 5);
    // Three up, two down: 2.2446 points (the largest influence, 1 point, is smaller).
    const mixed = yesNo((i) => (i < 50 && i !== 0 && i !== 1) || (i >= 50 && i < 53));
    expect(ladderMargin(mixed, base)).toBeCloseTo(2.2446, 3);
    expect(ladderStep({ released: 50, items: base }, mixed)).toEqual({ released: 50, improved: false });
  });

  it('an identical re-upload is never an improvement, whatever the release', () => {
    // The best's exact score above its release (a mean of tasks off the 1/N grid) was the old leak.
    for (const released of [49, 49.5, 50, 50.5]) {
      expect(ladderStep({ released, items: base }, base)).toEqual({ released, improved: false });
    }
  });

  it('an upload that differs from the best in one item is never an improvement (accuracy)', () => {
    const state = { released: 49.5, items: base };
    const up = ladderStep(
      state,
      yesNo((i) => i <= 50),
    );
    const down = ladderStep(
      state,
      yesNo((i) => i < 49),
    );
    expect(up).toEqual({ released: 49.5, improved: false });
    expect(down).toEqual(up);
  });

  it('releases an improvement beyond the margin', () => {
    expect(
      ladderStep(
        { released: 50, items: base },
        yesNo((i) => i < 54),
      ),
    ).toEqual({ released: 54, improved: true });
  });

  it('averages tasks as the overall does', () => {
    const nli = (right: (i: number) => boolean): LadderItems => [
      taskItems(
        getTask('RuMedNLI'),
        Array.from({ length: 100 }, () => 'entailment'),
        Array.from({ length: 100 }, (_, i) => (right(i) ? 'entailment' : 'neutral')),
        'B',
      ),
    ];
    const pair = (a: LadderItems, b: LadderItems): LadderItems => [
      { ...(a[0] as LadderItems[number]), key: 'A' },
      b[0] as LadderItems[number],
    ];
    // One flipped item in task A: Δ = 0.5 point, the standard error √(0.01² + 0)/2 = 0.5 point.
    const next = pair(
      yesNo((i) => i <= 50),
      nli((i) => i < 51),
    );
    const best = pair(
      base,
      nli((i) => i < 51),
    );
    expect(ladderMargin(next, best)).toBeCloseTo(0.5, 10);
    expect(ladderScore(next) - ladderScore(best)).toBeCloseTo(0.5, 10);
    // 50.5 released (1/200 steps) while the exact best is 50.5: still no improvement for the one item.
    expect(ladderStep({ released: 50.5, items: best }, next).improved).toBe(false);
  });

  it('starts again when the items do not pair (new gold)', () => {
    const other: LadderItems = [{ ...(base[0] as LadderItems[number]), key: 'other' }];
    expect(ladderMargin(other, base)).toBeUndefined();
    expect(ladderStep({ released: 90, items: base }, other)).toEqual({ released: 50, improved: true });
  });
});

describe('the Ladder on macro F1 (a metric that is not a mean of items)', () => {
  // 200 records, each with one or two of 73 classes; rare classes make one record's label worth much.
  const rng = createRng(7);
  const random = () => rng.next();
  const classes = ecg.kind === 'multilabel' ? ecg.classes : [];
  const gold: string[][] = Array.from({ length: 200 }, (_, i) => {
    const a = classes[Math.floor(random() * classes.length)] as string;
    const b = classes[i % classes.length] as string;
    return a === b ? [a] : [a, b];
  });
  // The best: each record's first gold label only.
  const bestAnswers = gold.map((g) => [g[0] as string]);
  const best = [taskItems(ecg, gold, bestAnswers)];

  it('one label added to one record never improves, in the gold or not (it did: +0.3–0.9 points)', () => {
    const state = { released: roundToItems(ladderScore(best), best), items: best };
    let raised = 0;
    for (let r = 0; r < 200; r += 7) {
      for (const label of classes.slice(0, 73)) {
        const answers = bestAnswers.map((a, i) => (i === r ? [...a, label] : a));
        if (answers[r]?.length === 2 && answers[r]?.[0] === label) continue;
        const next = [taskItems(ecg, gold, answers)];
        if (ladderScore(next) > ladderScore(best)) raised += 1;
        expect(ladderStep(state, next)).toEqual({ released: state.released, improved: false });
      }
    }
    // The probes did move the exact score (the attack's signal), and the Ladder said nothing of it.
    expect(raised).toBeGreaterThan(10);
  });

  it('the margin is at least one record’s influence, and real improvements still pass', () => {
    const all = [taskItems(ecg, gold, gold)];
    const step = ladderStep({ released: roundToItems(ladderScore(best), best), items: best }, all);
    expect(step.improved).toBe(true);
    expect(step.released).toBeCloseTo(roundToItems(ladderScore(all), all), 10);
  });
});

describe('adaptive group tests on macro F1 (issue #57): the set-wise floor', () => {
  // 200 records, class '37' on each, and on half of them one more of the other 72 classes: most classes have one to
  // three positives, as rare findings do.
  const rng = createRng(57);
  const classes = ecg.kind === 'multilabel' ? ecg.classes : [];
  const common = classes[37] as string;
  const rare = classes.filter((c) => c !== common);
  const gold: string[][] = Array.from({ length: 200 }, () =>
    rng.next() < 0.5 ? [common] : [common, rare[rng.int(rare.length)] as string],
  );
  const positives = (c: string) => gold.filter((g) => g.includes(c)).length;
  const state = (answers: string[][]) => {
    const items = [taskItems(ecg, gold, answers)];
    return { released: roundToItems(ladderScore(items), items), items };
  };
  const step = (from: string[][], to: string[][]) => ladderStep(state(from), [taskItems(ecg, gold, to)]);

  it('the group test (a class added everywhere; then removed from blocks of 8) tells nothing, whatever the gold', () => {
    const best = gold.map(() => [common]);
    const tested = rare.slice(0, 24);
    let moved = 0;
    let twoOrMore = 0;
    // What the attacker's rule gets right: "improved" says c has two or more positives; a block "improved" says it
    // holds none of c's positives.
    let classesTold = 0;
    let blocksTold = 0;
    const margins = new Set<number>();
    for (const c of tested) {
      const everywhere = best.map((l) => [...l, c]);
      const [from, to] = [[taskItems(ecg, gold, best)], [taskItems(ecg, gold, everywhere)]];
      if (ladderScore(to) !== ladderScore(from)) moved += 1;
      if (positives(c) >= 2) twoOrMore += 1;
      margins.add(Math.round((ladderMargin(to, from) as number) * 1e9) / 1e9);
      if (step(best, everywhere).improved && positives(c) >= 2) classesTold += 1;
      for (let b = 0; b < 200; b += 8) {
        const block = everywhere.map((l, i) => (i >= b && i < b + 8 ? [common] : l));
        const none = gold.slice(b, b + 8).every((g) => !g.includes(c));
        if (step(everywhere, block).improved && none) blocksTold += 1;
      }
    }
    console.info(
      `[ladder] group tests on macro F1, ${tested.length} classes (${twoOrMore} with two or more positives): ${classesTold} told to have two or more, ${blocksTold} blocks of 8 told to hold none`,
    );
    // The probes moved the exact score (the signal is there); not one passed the floor, one step of the release
    // grid (100/200 points): the answers are the same whatever the gold, so the attack recovers what guessing does.
    // Every class with a positive moved it.
    expect(moved).toBe(tested.filter((c) => positives(c) > 0).length);
    expect(twoOrMore).toBeGreaterThan(5);
    expect({ classesTold, blocksTold, margins: [...margins] }).toEqual({
      classesTold: 0,
      blocksTold: 0,
      margins: [0.5],
    });
  });

  it('a real model that improves macro F1 by one point still climbs', () => {
    // A model that finds 60% of the rare findings and raises a few false alarms; the next version finds more of them.
    const first = gold.map((g, i) =>
      g.length === 2 && rng.next() < 0.6
        ? [...g]
        : i % 17 === 0
          ? [common, rare[i % 72] as string]
          : [common],
    );
    const next = first.map((l) => [...l]);
    const misses = gold.map((_, i) => i).filter((i) => gold[i]?.length === 2 && next[i]?.length === 1);
    let delta = 0;
    for (const i of misses) {
      next[i] = [...(gold[i] as string[])];
      delta = ladderScore([taskItems(ecg, gold, next)]) - ladderScore([taskItems(ecg, gold, first)]);
      if (delta >= 1) break;
    }
    expect(delta).toBeGreaterThanOrEqual(1);
    expect(delta).toBeLessThan(1.5);
    expect(step(first, next).improved).toBe(true);
  });
});
