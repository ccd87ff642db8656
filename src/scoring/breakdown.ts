/**
 * Where a system fails: per-label accuracy (ranking and classification tasks), precision/recall/F1 per label and a
 * confusion matrix (classification), and precision/recall/F1 per entity type (tagging, seqeval's definitions).
 */
import { addEntityCounts, type EntityCounts, prf } from '../metrics/seqeval.js';
import type { TaskDefinition } from '../tasks/types.js';
import type { ScoredItem } from './validate.js';

export interface LabelRow {
  label: string;
  /** Gold items with this label. */
  n: number;
  /** Percent of those whose (first) prediction is right: the per-label recall. */
  accuracy: number;
  /** Ranking tasks: percent of those with the label among the predictions. */
  hit_at_3?: number;
  /** Classification tasks: precision, recall and F1 of the label, in percent. */
  precision?: number;
  recall?: number;
  f1?: number;
  /** Items predicted (first prediction) with this label. */
  predicted: number;
}

export interface EntityRow {
  type: string;
  precision: number;
  recall: number;
  f1: number;
  /** Gold entities of this type. */
  support: number;
  predicted: number;
}

export type Breakdown =
  | { kind: 'labels'; labels: LabelRow[]; confusion?: { labels: string[]; matrix: number[][] } }
  | { kind: 'entities'; types: EntityRow[] };

const pct = (a: number, b: number): number => (b === 0 ? 0 : (a / b) * 100);

/**
 * Multi-label: per class, its gold items (`n`), recall as `accuracy`, precision and F1; classes that occur in
 * neither gold nor predictions are left out (they score 0 in the macro F1 all the same).
 */
function classRows(classes: readonly string[], items: readonly ScoredItem[]): LabelRow[] {
  const c = new Map(classes.map((l) => [l, { tp: 0, predicted: 0, gold: 0 }]));
  for (const it of items) {
    const gold = new Set(it.gold as readonly string[]);
    for (const l of gold) (c.get(l) as EntityCounts).gold += 1;
    for (const l of (it.prediction ?? []) as readonly string[]) {
      const x = c.get(l) as EntityCounts;
      x.predicted += 1;
      if (gold.has(l)) x.tp += 1;
    }
  }
  return classes
    .filter((l) => (c.get(l) as EntityCounts).gold + (c.get(l) as EntityCounts).predicted > 0)
    .map((label) => {
      const x = c.get(label) as EntityCounts;
      const { precision, recall, f1 } = prf(x);
      return {
        label,
        n: x.gold,
        accuracy: recall * 100,
        precision: precision * 100,
        recall: recall * 100,
        f1: f1 * 100,
        predicted: x.predicted,
      };
    })
    .sort((a, b) => b.n - a.n || classes.indexOf(a.label) - classes.indexOf(b.label));
}
const first = (p: ScoredItem['prediction']): string | undefined =>
  p === null ? undefined : typeof p === 'string' ? p : p[0];

export function breakdown(task: TaskDefinition, items: readonly ScoredItem[]): Breakdown {
  if (task.kind === 'tagging') {
    const totals = new Map<string, EntityCounts>();
    const all: EntityCounts = { tp: 0, predicted: 0, gold: 0 };
    for (const it of items)
      addEntityCounts(it.gold as string[], (it.prediction ?? []) as string[], all, totals);
    const types = [...totals.keys()].sort().map((type) => {
      const c = totals.get(type) as EntityCounts;
      const { precision, recall, f1 } = prf(c);
      return {
        type,
        precision: precision * 100,
        recall: recall * 100,
        f1: f1 * 100,
        support: c.gold,
        predicted: c.predicted,
      };
    });
    return { kind: 'entities', types };
  }

  if (task.kind === 'multilabel') return { kind: 'labels', labels: classRows(task.classes, items) };

  const goldCount = new Map<string, number>();
  const correct = new Map<string, number>();
  const hits = new Map<string, number>();
  const predicted = new Map<string, number>();
  const inc = (m: Map<string, number>, k: string): void => {
    m.set(k, (m.get(k) ?? 0) + 1);
  };
  for (const it of items) {
    const gold = it.gold as string;
    const top = first(it.prediction);
    inc(goldCount, gold);
    if (top !== undefined) inc(predicted, top);
    if (top === gold) inc(correct, gold);
    if (Array.isArray(it.prediction) && it.prediction.includes(gold)) inc(hits, gold);
  }
  const labels: LabelRow[] = [...goldCount.entries()]
    // Ties in code-unit order: the same on every machine (localeCompare follows the locale, and its first call
    // loads ICU's collator, 6-10 ms of a cold `eval`).
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([label, n]) => {
      const c = correct.get(label) ?? 0;
      const row: LabelRow = { label, n, accuracy: pct(c, n), predicted: predicted.get(label) ?? 0 };
      if (task.kind === 'ranking') row.hit_at_3 = pct(hits.get(label) ?? 0, n);
      else {
        const { precision, recall, f1 } = prf({ tp: c, predicted: row.predicted, gold: n });
        row.precision = precision * 100;
        row.recall = recall * 100;
        row.f1 = f1 * 100;
      }
      return row;
    });
  if (task.kind !== 'classification') return { kind: 'labels', labels };
  const space = [...task.labels];
  const index = new Map(space.map((l, i) => [l, i]));
  const matrix = space.map(() => space.map(() => 0));
  // Items without an answer have no column; they count as wrong in the per-label rows above.
  for (const it of items) {
    if (it.prediction === null) continue;
    const row = matrix[index.get(it.gold as string) as number] as number[];
    const col = index.get(it.prediction as string) as number;
    row[col] = (row[col] as number) + 1;
  }
  return { kind: 'labels', labels, confusion: { labels: space, matrix } };
}
