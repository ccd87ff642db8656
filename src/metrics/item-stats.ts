/**
 * Every RuMedBench metric is a ratio of sums over items. Each item (a test record) is reduced to a few counts,
 * and a metric is a function of the column sums. The same counts then serve the point estimate, the bootstrap
 * and the paired comparison, so the three can never disagree on a definition.
 *
 * Definitions follow upstream `code/eval.py`:
 * - accuracy: scikit-learn's `accuracy_score` of the label (ranking tasks: of the first prediction);
 * - hit_at_3: the gold label is among the (at most three) predictions;
 * - RuMedNER accuracy: seqeval's `accuracy_score`, correct tokens over all tokens;
 * - RuMedNER f1: seqeval's micro F1 over entities (see ./seqeval.ts).
 *
 * Tasks defined in a file (src/tasks/definition.ts) may also ask for scikit-learn's `f1_score` with
 * `average='macro'` or `'micro'` and `zero_division=0`: over the binarised label matrix for multi-label tasks
 * (every class counts), over the labels that occur for single-label ones; and Hit@k for k other than 3. A
 * multi-label accuracy is `accuracy_score`'s subset accuracy (the whole set right).
 */
import type { MetricName, TaskDefinition } from '../tasks/types.js';
import { addEntityCounts, prf } from './seqeval.js';

/** A validated prediction: a label, a ranked label list, one tag per token, or a class set. */
export type Prediction = string | readonly string[];

type MetricFn = (sums: Float64Array, n: number) => number;

interface StatsLayout {
  /** Counts per item. */
  readonly width: number;
  /** Each metric from the column sums and the number of items, in percent. */
  readonly metrics: Partial<Record<MetricName, MetricFn>>;
  /** Writes one item's counts into `out` at `offset` (zeroed beforehand); null: no answer. */
  readonly write: (
    gold: Prediction,
    prediction: Prediction | null,
    out: Float64Array,
    offset: number,
  ) => void;
}

const pct = (num: number, den: number): number => (den === 0 ? 0 : (num / den) * 100);

/**
 * Per-class counts after `base` columns: true positives, false positives, false negatives of each class, in
 * blocks of `classes.length`. F1 of a class is 2·tp / (2·tp + fp + fn), scikit-learn's `f1_score` with
 * `zero_division=0` (a class with no true, no predicted item scores 0).
 */
function classCounts(classes: readonly string[], base: number) {
  const c = classes.length;
  const index = new Map(classes.map((l, i) => [l, i]));
  const f1Of = (tp: number, fp: number, fn: number) =>
    2 * tp + fp + fn === 0 ? 0 : (2 * tp) / (2 * tp + fp + fn);
  return {
    width: base + 3 * c,
    /** Adds one item's gold and predicted sets. */
    add(gold: readonly string[], predicted: readonly string[], out: Float64Array, offset: number): void {
      const g = new Set(gold);
      const p = new Set(predicted);
      for (const l of p) {
        const i = index.get(l);
        if (i === undefined) continue;
        const at = offset + base + (g.has(l) ? i : c + i);
        out[at] = (out[at] as number) + 1;
      }
      for (const l of g) {
        const i = index.get(l);
        const at = offset + base + 2 * c + (i ?? 0);
        if (i !== undefined && !p.has(l)) out[at] = (out[at] as number) + 1;
      }
    },
    /**
     * Macro F1: the mean over every class (`all`: multi-label, the binarised label matrix has a column per class),
     * or over the classes that occur in gold or predictions (single-label: scikit-learn's default label set).
     */
    macro(all: boolean): MetricFn {
      return (s) => {
        let total = 0;
        let counted = 0;
        for (let i = 0; i < c; i++) {
          const tp = s[base + i] as number;
          const fp = s[base + c + i] as number;
          const fn = s[base + 2 * c + i] as number;
          if (!all && tp + fp + fn === 0) continue;
          total += f1Of(tp, fp, fn);
          counted += 1;
        }
        return counted === 0 ? 0 : (total / counted) * 100;
      };
    },
    micro: ((s) => {
      let tp = 0;
      let fp = 0;
      let fn = 0;
      for (let i = 0; i < c; i++) {
        tp += s[base + i] as number;
        fp += s[base + c + i] as number;
        fn += s[base + 2 * c + i] as number;
      }
      return f1Of(tp, fp, fn) * 100;
    }) as MetricFn,
  };
}

const asList = (p: Prediction): readonly string[] => (typeof p === 'string' ? [p] : p);

function makeLayout(task: TaskDefinition): StatsLayout {
  switch (task.kind) {
    // [first prediction correct, gold among predictions]
    case 'ranking':
      return {
        width: 2,
        metrics: {
          accuracy: (s, n) => pct(s[0] as number, n),
          [`hit_at_${task.k ?? 3}`]: (s: Float64Array, n: number) => pct(s[1] as number, n),
        },
        write: (gold, prediction, out, o) => {
          if (prediction === null) return;
          const list = prediction as readonly string[];
          out[o] = list[0] === gold ? 1 : 0;
          out[o + 1] = list.includes(gold as string) ? 1 : 0;
        },
      };
    // [prediction correct], then per-label counts where the task asks for an F1
    case 'classification': {
      const withF1 = task.metrics.some((m) => m === 'macro_f1' || m === 'micro_f1');
      const counts = withF1 ? classCounts(task.labels, 1) : undefined;
      return {
        width: counts?.width ?? 1,
        metrics: {
          accuracy: (s, n) => pct(s[0] as number, n),
          ...(counts ? { macro_f1: counts.macro(false), micro_f1: counts.micro } : {}),
        },
        write: (gold, prediction, out, o) => {
          if (prediction !== null) out[o] = prediction === gold ? 1 : 0;
          counts?.add([gold as string], prediction === null ? [] : [prediction as string], out, o);
        },
      };
    }
    // [correct tokens, tokens, true-positive entities, predicted entities, gold entities]
    case 'tagging': {
      const tokenAccuracy: MetricFn = (s) => pct(s[0] as number, s[1] as number);
      const entityF1: MetricFn = (s) =>
        prf({ tp: s[2] as number, predicted: s[3] as number, gold: s[4] as number }).f1 * 100;
      return {
        width: 5,
        metrics: {
          accuracy: tokenAccuracy,
          token_accuracy: tokenAccuracy,
          f1: entityF1,
          entity_f1: entityF1,
        },
        write: (gold, prediction, out, o) => {
          const g = gold as readonly string[];
          // No answer: nothing right, no entity predicted; the item still counts its tokens and gold entities.
          const p = (prediction ?? []) as readonly string[];
          let correct = 0;
          for (let i = 0; i < g.length; i++) if (g[i] === p[i]) correct += 1;
          const total = { tp: 0, predicted: 0, gold: 0 };
          addEntityCounts(g, p, total);
          out[o] = correct;
          out[o + 1] = g.length;
          out[o + 2] = total.tp;
          out[o + 3] = total.predicted;
          out[o + 4] = total.gold;
        },
      };
    }
    // [exact match], then per-class counts
    case 'multilabel': {
      const counts = classCounts(task.classes, 1);
      return {
        width: counts.width,
        metrics: {
          accuracy: (s, n) => pct(s[0] as number, n),
          macro_f1: counts.macro(true),
          micro_f1: counts.micro,
        },
        write: (gold, prediction, out, o) => {
          const g = asList(gold);
          const p = prediction === null ? [] : asList(prediction);
          if (prediction !== null) out[o] = g.length === p.length && g.every((x) => p.includes(x)) ? 1 : 0;
          counts.add(g, p, out, o);
        },
      };
    }
  }
}

const layouts = new WeakMap<TaskDefinition, StatsLayout>();

export function statsLayout(task: TaskDefinition): StatsLayout {
  let layout = layouts.get(task);
  if (!layout) {
    layout = makeLayout(task);
    layouts.set(task, layout);
  }
  return layout;
}

/** The metrics a task's score averages: all (the built-in tasks, as the paper), or the first (defined tasks). */
export const scoreMetrics = (task: TaskDefinition): readonly MetricName[] =>
  task.scoreOf === 'first' ? task.metrics.slice(0, 1) : task.metrics;

/**
 * Whether the task's score is classification accuracy alone (one 0/1 count per item, the first column): exact
 * McNemar tests then apply to a pair of systems. The score decides, not the other metrics reported beside it: a
 * task defined with `metrics: [accuracy, macro_f1]` scores accuracy (its first metric), so it is tested as one
 * with `metrics: [accuracy]` is.
 */
export const isAccuracyScore = (task: TaskDefinition): boolean => {
  const names = scoreMetrics(task);
  return task.kind === 'classification' && names.length === 1 && names[0] === 'accuracy';
};

/** Whether the task's score is a mean over items (accuracy, Hit@k), not an F1 over pooled counts. */
export const isItemMeanScore = (task: TaskDefinition): boolean =>
  task.kind !== 'tagging' && scoreMetrics(task).every((m) => m === 'accuracy' || m.startsWith('hit_at_'));

/** Items of one task reduced to counts: row i holds item i's counts. */
export interface ItemStats {
  readonly task: TaskDefinition;
  readonly ids: readonly string[];
  readonly stats: Float64Array;
}

export function buildItemStats(
  task: TaskDefinition,
  items: readonly { id: string; gold: Prediction; prediction: Prediction | null }[],
): ItemStats {
  const { width, write } = statsLayout(task);
  const stats = new Float64Array(items.length * width);
  items.forEach((item, i) => {
    write(item.gold, item.prediction, stats, i * width);
  });
  return { task, ids: items.map((i) => i.id), stats };
}

/** Sums the rows named by `rows` (all rows when absent). */
export function sumRows(stats: Float64Array, width: number, rows?: ArrayLike<number>): Float64Array {
  const sums = new Float64Array(width);
  if (rows === undefined) {
    for (let i = 0; i < stats.length; i++) (sums[i % width] as number) += stats[i] as number;
    return sums;
  }
  for (let r = 0; r < rows.length; r++) {
    const base = (rows[r] as number) * width;
    for (let k = 0; k < width; k++) (sums[k] as number) += stats[base + k] as number;
  }
  return sums;
}

export type MetricValues = Partial<Record<MetricName, number>>;

/** The task's metrics and its score (their mean) from column sums. */
export function metricsFromSums(task: TaskDefinition, sums: Float64Array, n: number): MetricValues {
  const layout = statsLayout(task);
  const values: MetricValues = {};
  for (const name of task.metrics) {
    const fn = layout.metrics[name];
    if (fn) values[name] = fn(sums, n);
  }
  return values;
}

/** The task's metrics over all items of `it`. */
export function metricsOf(it: ItemStats): MetricValues {
  return metricsFromSums(it.task, sumRows(it.stats, statsLayout(it.task).width), it.ids.length);
}

/**
 * A task's score: the mean of its metrics (the paper averages accuracy and Hit@3, or token accuracy and F1), or
 * its first metric for a task defined in a file (the others are reported beside it).
 */
export function taskScore(task: TaskDefinition, values: MetricValues): number {
  const names = scoreMetrics(task);
  let total = 0;
  for (const name of names) total += values[name] ?? 0;
  return total / names.length;
}

/** The task's score straight from column sums, allocating nothing (the bootstrap calls it per system and replicate). */
export function scoreFromSums(task: TaskDefinition, sums: Float64Array, n: number): number {
  const layout = statsLayout(task);
  const names = scoreMetrics(task);
  let total = 0;
  for (const name of names) total += layout.metrics[name]?.(sums, n) ?? 0;
  return total / names.length;
}

/** RuMedOverall: the mean of the task scores. */
export function mean(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total / values.length;
}
