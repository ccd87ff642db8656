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
 */
import type { MetricName, TaskDefinition, TaskKind } from '../tasks/types.js';
import { countEntities, prf } from './seqeval.js';

/** A validated prediction: a label, a ranked label list, or one tag per token. */
export type Prediction = string | readonly string[];

interface StatsLayout {
  /** Counts per item. */
  readonly width: number;
  /** Each metric from the column sums and the number of items, in percent. */
  readonly metrics: Partial<Record<MetricName, (sums: Float64Array, n: number) => number>>;
}

const pct = (num: number, den: number): number => (den === 0 ? 0 : (num / den) * 100);

const LAYOUTS: Record<TaskKind, StatsLayout> = {
  // [first prediction correct, gold among predictions]
  ranking: {
    width: 2,
    metrics: {
      accuracy: (s, n) => pct(s[0] as number, n),
      hit_at_3: (s, n) => pct(s[1] as number, n),
    },
  },
  // [prediction correct]
  classification: { width: 1, metrics: { accuracy: (s, n) => pct(s[0] as number, n) } },
  // [correct tokens, tokens, true-positive entities, predicted entities, gold entities]
  tagging: {
    width: 5,
    metrics: {
      accuracy: (s) => pct(s[0] as number, s[1] as number),
      f1: (s) => prf({ tp: s[2] as number, predicted: s[3] as number, gold: s[4] as number }).f1 * 100,
    },
  },
};

export function statsLayout(task: TaskDefinition): StatsLayout {
  return LAYOUTS[task.kind];
}

/** Writes one item's counts into `out` at `offset`. Inputs are already validated for the task's kind. */
function writeItemStats(
  task: TaskDefinition,
  gold: Prediction,
  prediction: Prediction | null,
  out: Float64Array,
  offset: number,
): void {
  if (prediction === null) {
    // No answer: nothing right, no entity predicted; a tagging item still counts its tokens and gold entities.
    out.fill(0, offset, offset + LAYOUTS[task.kind].width);
    if (task.kind === 'tagging') {
      out[offset + 1] = gold.length;
      out[offset + 4] = countEntities(gold as readonly string[], []).total.gold;
    }
    return;
  }
  switch (task.kind) {
    case 'ranking': {
      const list = prediction as readonly string[];
      out[offset] = list[0] === gold ? 1 : 0;
      out[offset + 1] = list.includes(gold as string) ? 1 : 0;
      return;
    }
    case 'classification':
      out[offset] = prediction === gold ? 1 : 0;
      return;
    case 'tagging': {
      const g = gold as readonly string[];
      const p = prediction as readonly string[];
      let correct = 0;
      for (let i = 0; i < g.length; i++) if (g[i] === p[i]) correct += 1;
      const { total } = countEntities(g, p);
      out[offset] = correct;
      out[offset + 1] = g.length;
      out[offset + 2] = total.tp;
      out[offset + 3] = total.predicted;
      out[offset + 4] = total.gold;
      return;
    }
  }
}

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
  const { width } = statsLayout(task);
  const stats = new Float64Array(items.length * width);
  items.forEach((item, i) => {
    writeItemStats(task, item.gold, item.prediction, stats, i * width);
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

/** A task's score: the mean of its metrics (the paper averages accuracy and Hit@3, or token accuracy and F1). */
export function taskScore(task: TaskDefinition, values: MetricValues): number {
  let total = 0;
  for (const name of task.metrics) total += values[name] ?? 0;
  return total / task.metrics.length;
}

/** The task's score straight from column sums, allocating nothing (the bootstrap calls it per system and replicate). */
export function scoreFromSums(task: TaskDefinition, sums: Float64Array, n: number): number {
  const layout = LAYOUTS[task.kind];
  let total = 0;
  for (const name of task.metrics) total += layout.metrics[name]?.(sums, n) ?? 0;
  return total / task.metrics.length;
}

/** RuMedOverall: the mean of the task scores. */
export function mean(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total / values.length;
}
