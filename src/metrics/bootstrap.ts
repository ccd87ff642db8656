/**
 * Uncertainty: percentile bootstrap confidence intervals (Efron and Tibshirani, 1993, ch. 13) for each metric,
 * each task score and the overall score, and a paired comparison of two systems on the same items: a paired
 * bootstrap interval for the difference, and an approximate-randomization p-value (Noreen, 1989; Riezler and
 * Maxwell, 2005) that swaps the two systems' outputs item by item.
 *
 * Tasks are resampled independently (they are separate test sets); replicate b of the overall score is the mean of
 * replicate b of each task. Each task draws from its own generator, seeded from the seed and the task name, so a
 * task's interval does not depend on which other tasks were scored with it.
 */
import type { MetricName } from '../tasks/types.js';
import { createResampler } from './draws-wasm.js';
import {
  type ItemStats,
  isAccuracyScore,
  mean,
  metricsFromSums,
  scoreMetrics,
  statsLayout,
  sumRows,
  taskScore,
} from './item-stats.js';
import { exactMcNemar } from './mcnemar.js';
import { percentile } from './quantile.js';
import { createRng, type Rng, seedState } from './rng.js';

export type Interval = [number, number];
export { median, percentile, percentileOf } from './quantile.js';

function interval(values: Float64Array, level: number): Interval {
  const sorted = Float64Array.from(values).sort();
  const tail = ((1 - level) / 2) * 100;
  return [percentile(sorted, tail), percentile(sorted, 100 - tail)];
}

function hashName(name: string): number {
  // FNV-1a, enough to give each task its own stream.
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const taskSeed = (seed: number, taskName: string): number => (seed ^ hashName(taskName)) >>> 0;

function taskRng(seed: number, taskName: string): Rng {
  return createRng(taskSeed(seed, taskName));
}

interface BootstrapOptions {
  /** Resamples; 0 turns the bootstrap off. */
  resamples: number;
  seed: number;
  /** Coverage of the interval; 0.95 by default. */
  level?: number;
}

/** Per replicate: each metric and the task score. */
interface Replicates {
  metrics: Partial<Record<MetricName, Float64Array>>;
  score: Float64Array;
}

function emptyReplicates(metrics: readonly MetricName[], resamples: number): Replicates {
  const out: Replicates = { metrics: {}, score: new Float64Array(resamples) };
  for (const m of metrics) out.metrics[m] = new Float64Array(resamples);
  return out;
}

interface TaskIntervals {
  metrics: Partial<Record<MetricName, Interval>>;
  score: Interval;
}

function toIntervals(rep: Replicates, level: number): TaskIntervals {
  const metrics: Partial<Record<MetricName, Interval>> = {};
  for (const [m, v] of Object.entries(rep.metrics)) metrics[m as MetricName] = interval(v, level);
  return { metrics, score: interval(rep.score, level) };
}

function resampleRows(rng: Rng, n: number, rows: Uint32Array): void {
  rng.fillInts(rows, n);
}

/** Row indexes grouped by cluster, clusters in order of first appearance. */
function groupsOf(clusters: readonly string[]): number[][] {
  const by = new Map<string, number[]>();
  clusters.forEach((c, i) => {
    const g = by.get(c);
    if (g) g.push(i);
    else by.set(c, [i]);
  });
  return [...by.values()];
}

/**
 * Bootstrap intervals for each task, and for the overall score when `overall` names the tasks that make it
 * (all must be among `items`).
 */
export function bootstrapIntervals(
  items: readonly ItemStats[],
  options: BootstrapOptions & {
    overallTasks?: readonly string[];
    /** A second overall from the same replicates (MedBench's six tasks: the five public ones and ECG2Pathology). */
    sixTasks?: readonly string[];
  },
): { tasks: Map<string, TaskIntervals>; overall?: Interval; six?: Interval } {
  const level = options.level ?? 0.95;
  const B = options.resamples;
  const reps = new Map<string, Replicates>();
  for (const it of items) {
    const { task, ids, stats } = it;
    const layout = statsLayout(task);
    const { width } = layout;
    const n = ids.length;
    const draws = createResampler(stats, width, seedState(taskSeed(options.seed, task.name)));
    const sums = new Float64Array(width);
    const rep = emptyReplicates(task.metrics, B);
    // Each metric's function and its replicates, and which of them the score averages (in the score's order, as
    // taskScore adds them): one replicate then allocates nothing.
    const fns = task.metrics.flatMap((m) => {
      const fn = layout.metrics[m];
      return fn ? [{ fn, out: rep.metrics[m] as Float64Array }] : [];
    });
    const names = scoreMetrics(task);
    const scoreFrom = names.map((m) => task.metrics.filter((x) => layout.metrics[x]).indexOf(m));
    const values = new Float64Array(fns.length);
    for (let b = 0; b < B; b++) {
      draws.next(sums);
      for (let k = 0; k < fns.length; k++) {
        const f = fns[k] as (typeof fns)[number];
        const v = f.fn(sums, n);
        values[k] = v;
        f.out[b] = v;
      }
      let total = 0;
      for (const i of scoreFrom) total += i < 0 ? 0 : (values[i] as number);
      rep.score[b] = total / names.length;
    }
    reps.set(task.name, rep);
  }
  const tasks = new Map<string, TaskIntervals>();
  for (const [name, rep] of reps) tasks.set(name, toIntervals(rep, level));
  // The mean of the tasks' scores in each replicate (the tasks resampled independently, as the paper's tasks are).
  const meanOf = (names: readonly string[] | undefined): Interval | undefined => {
    if (!names || B === 0 || !names.every((t) => reps.has(t))) return undefined;
    const overall = new Float64Array(B);
    for (let b = 0; b < B; b++)
      overall[b] = mean(names.map((t) => (reps.get(t) as Replicates).score[b] as number));
    return interval(overall, level);
  };
  const overall = meanOf(options.overallTasks);
  const six = meanOf(options.sixTasks);
  return { tasks, ...(overall ? { overall } : {}), ...(six ? { six } : {}) };
}

export interface Delta {
  /** B minus A, in points. */
  delta: number;
  ci: Interval;
  /** Two-sided p-value of `test`. */
  p: number;
  /**
   * The test: the exact McNemar test for classification accuracy without clusters (the accuracy row, and the score
   * where the score is accuracy); otherwise approximate randomization, (count + 1) / (R + 1), swapping whole clusters where the task has them.
   */
  test: 'exact McNemar' | 'approximate randomization' | 'approximate randomization by cluster';
}

interface TaskComparison {
  metrics: Partial<Record<MetricName, Delta>>;
  score: Delta;
}

function valuesWithScore(it: ItemStats, sums: Float64Array, n: number): Record<string, number> {
  const values = metricsFromSums(it.task, sums, n);
  return { ...values, score: taskScore(it.task, values) };
}

/**
 * Paired comparison of two systems on the same items (`a` and `b` aligned row by row, same task order).
 * Returns deltas (b - a) per metric, per task score and for the overall score when `overallTasks` are all present.
 */
export function pairedComparison(
  a: readonly ItemStats[],
  b: readonly ItemStats[],
  options: BootstrapOptions & {
    overallTasks?: readonly string[];
    /** Per task (aligned with `a`), each item's cluster: resampled and swapped together (RuMedNLI's premises). */
    clusters?: readonly (readonly string[] | undefined)[];
  },
): { tasks: Map<string, TaskComparison>; overall?: Delta } {
  const level = options.level ?? 0.95;
  const R = options.resamples;
  const perTask = new Map<
    string,
    {
      boot: Map<string, Float64Array>;
      perm: Map<string, Float64Array>;
      obs: Record<string, number>;
      clustered: boolean;
      /** McNemar's p on accuracy (classification without clusters). */
      mcnemar: number | undefined;
      scoreIsAccuracy: boolean;
    }
  >();
  a.forEach((itA, t) => {
    const itB = b[t] as ItemStats;
    const { task } = itA;
    const { width } = statsLayout(task);
    const n = itA.ids.length;
    const keys = [...task.metrics, 'score'];
    const obsA = valuesWithScore(itA, sumRows(itA.stats, width), n);
    const obsB = valuesWithScore(itB, sumRows(itB.stats, width), n);
    const obs = Object.fromEntries(keys.map((k) => [k, (obsB[k] as number) - (obsA[k] as number)]));
    const boot = new Map(keys.map((k) => [k, new Float64Array(R)]));
    const perm = new Map(keys.map((k) => [k, new Float64Array(R)]));
    const rng = taskRng(options.seed, task.name);
    const clusters = options.clusters?.[t];
    const groups = clusters ? groupsOf(clusters) : undefined;
    const rows = new Uint32Array(n);
    const picks = new Uint32Array(groups?.length ?? 0);
    for (let r = 0; r < R; r++) {
      let drawn: ArrayLike<number> = rows;
      if (groups) {
        // Whole clusters drawn with replacement: the replicate has as many items as its clusters hold.
        rng.fillInts(picks, groups.length);
        const list: number[] = [];
        for (const g of picks) for (const i of groups[g] as number[]) list.push(i);
        drawn = list;
      } else resampleRows(rng, n, rows);
      const va = valuesWithScore(itA, sumRows(itA.stats, width, drawn), drawn.length);
      const vb = valuesWithScore(itB, sumRows(itB.stats, width, drawn), drawn.length);
      for (const k of keys) (boot.get(k) as Float64Array)[r] = (vb[k] as number) - (va[k] as number);
      // Approximate randomization: each item's (cluster's) pair of outputs is swapped with probability 1/2.
      const sa = new Float64Array(width);
      const sb = new Float64Array(width);
      const swapItem = (i: number, swap: boolean) => {
        const base = i * width;
        for (let k = 0; k < width; k++) {
          const x = itA.stats[base + k] as number;
          const y = itB.stats[base + k] as number;
          sa[k] = (sa[k] as number) + (swap ? y : x);
          sb[k] = (sb[k] as number) + (swap ? x : y);
        }
      };
      if (groups)
        for (const g of groups) {
          const swap = rng.next() < 0.5;
          for (const i of g) swapItem(i, swap);
        }
      else for (let i = 0; i < n; i++) swapItem(i, rng.next() < 0.5);
      const pa = valuesWithScore(itA, sa, n);
      const pb = valuesWithScore(itB, sb, n);
      for (const k of keys) (perm.get(k) as Float64Array)[r] = (pb[k] as number) - (pa[k] as number);
    }
    // Classification accuracy on independent items (column 0, right or wrong): the exact McNemar test on the
    // discordant pairs instead, for the accuracy row and for the score where the score is accuracy. The test
    // follows the quantity tested, so adding macro F1 beside accuracy changes neither accuracy's test nor the score's.
    let mcnemar: number | undefined;
    if (task.kind === 'classification' && task.metrics.includes('accuracy') && !clusters) {
      let onlyA = 0;
      let onlyB = 0;
      for (let i = 0; i < n; i++) {
        const x = itA.stats[i * width] as number;
        const y = itB.stats[i * width] as number;
        if (x > y) onlyA++;
        else if (y > x) onlyB++;
      }
      mcnemar = exactMcNemar(onlyA, onlyB);
    }
    perTask.set(task.name, {
      boot,
      perm,
      obs,
      clustered: clusters !== undefined,
      mcnemar,
      scoreIsAccuracy: isAccuracyScore(task),
    });
  });

  const delta = (
    obs: number,
    boot: Float64Array,
    perm: Float64Array,
    how: { clustered?: boolean; mcnemar?: number | undefined } = {},
  ): Delta => {
    const ci: Interval = R > 0 ? interval(boot, level) : [Number.NaN, Number.NaN];
    if (how.mcnemar !== undefined) return { delta: obs, ci, p: how.mcnemar, test: 'exact McNemar' };
    let extreme = 0;
    // A tiny tolerance so that ties in floating point count as "at least as extreme".
    for (const v of perm) if (Math.abs(v) >= Math.abs(obs) - 1e-12) extreme += 1;
    return {
      delta: obs,
      ci,
      p: (extreme + 1) / (R + 1),
      test: how.clustered ? 'approximate randomization by cluster' : 'approximate randomization',
    };
  };

  const tasks = new Map<string, TaskComparison>();
  for (const [name, t] of perTask) {
    const metrics: Partial<Record<MetricName, Delta>> = {};
    const how = (accuracy: boolean) => ({
      clustered: t.clustered,
      mcnemar: accuracy ? t.mcnemar : undefined,
    });
    for (const [k, boot] of t.boot) {
      if (k === 'score') continue;
      metrics[k as MetricName] = delta(
        t.obs[k] as number,
        boot,
        t.perm.get(k) as Float64Array,
        how(k === 'accuracy'),
      );
    }
    tasks.set(name, {
      metrics,
      score: delta(
        t.obs.score as number,
        t.boot.get('score') as Float64Array,
        t.perm.get('score') as Float64Array,
        how(t.scoreIsAccuracy),
      ),
    });
  }
  const overallTasks = options.overallTasks;
  if (!overallTasks?.every((t) => perTask.has(t))) return { tasks };
  const combine = (pick: (t: string) => Float64Array): Float64Array => {
    const out = new Float64Array(R);
    for (let r = 0; r < R; r++) out[r] = mean(overallTasks.map((t) => pick(t)[r] as number));
    return out;
  };
  const obs = mean(overallTasks.map((t) => perTask.get(t)?.obs.score as number));
  const boot = combine((t) => perTask.get(t)?.boot.get('score') as Float64Array);
  const perm = combine((t) => perTask.get(t)?.perm.get('score') as Float64Array);
  return { tasks, overall: delta(obs, boot, perm) };
}
