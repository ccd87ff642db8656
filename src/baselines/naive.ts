/**
 * The paper's naive baselines: the three most frequent train labels (ranking tasks), one fixed label
 * (classification tasks: the task definition's `naiveLabel`), and, for tagging, a tag drawn for each token from
 * that token's tag distribution in train (seeded; unseen tokens get `O`). The draw is made once per distinct
 * token, as upstream's naive predictions show (a token gets the same tag wherever it occurs).
 */
import type { Prediction } from '../metrics/item-stats.js';
import { createRng } from '../metrics/rng.js';
import type { TaskDefinition, TaskRecord } from '../tasks/types.js';
import type { BaselineModel, Scored, SerializedModel } from './types.js';

/** Labels by train frequency, most frequent first; ties keep the order of first appearance. */
export function labelsByFrequency(records: readonly TaskRecord[]): { label: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const r of records) counts.set(r.gold as string, (counts.get(r.gold as string) ?? 0) + 1);
  return [...counts.entries()].map(([label, count]) => ({ label, count })).sort((a, b) => b.count - a.count);
}

interface NaiveParams {
  /** Ranking, classification and multi-label: labels (classes) with their train share, best first. */
  ranked?: Scored[];
  /** Tagging: the tag drawn for each train token. */
  tokenTags?: Record<string, string>;
}

export function trainNaive(task: TaskDefinition, train: readonly TaskRecord[], seed: number): BaselineModel {
  if (task.kind === 'ranking') {
    const n = train.length;
    return naiveModel(task, {
      ranked: labelsByFrequency(train).map((l) => ({ label: l.label, score: l.count / n })),
    });
  }
  if (task.kind === 'classification') {
    // The paper's constant answer, whatever the training data; probability 1 on it.
    return naiveModel(task, { ranked: [{ label: task.naiveLabel, score: 1 }] });
  }
  if (task.kind === 'multilabel') {
    // The class found in most train records, for every record (as MedBench's ECG2Pathology sample answers 37).
    const counts = new Map<string, number>();
    for (const r of train) for (const c of r.gold as string[]) counts.set(c, (counts.get(c) ?? 0) + 1);
    const ranked = task.classes
      .map((label) => ({ label, score: (counts.get(label) ?? 0) / Math.max(1, train.length) }))
      .sort((a, b) => b.score - a.score);
    return naiveModel(task, { ranked });
  }
  const byToken = new Map<string, Map<string, number>>();
  for (const r of train) {
    const tokens = r.raw[task.tokensField] as string[];
    const tags = r.gold as string[];
    tokens.forEach((tok, i) => {
      let m = byToken.get(tok);
      if (!m) {
        m = new Map();
        byToken.set(tok, m);
      }
      m.set(tags[i] as string, (m.get(tags[i] as string) ?? 0) + 1);
    });
  }
  // One seeded draw per distinct token, in order of first appearance in train.
  const rng = createRng(seed);
  const tokenTags: Record<string, string> = {};
  for (const [tok, m] of byToken) {
    const total = [...m.values()].reduce((a, b) => a + b, 0);
    let pick = rng.next() * total;
    let tag = 'O';
    for (const [t, c] of m) {
      tag = t;
      pick -= c;
      if (pick < 0) break;
    }
    tokenTags[tok] = tag;
  }
  return naiveModel(task, { tokenTags });
}

export function naiveModel(task: TaskDefinition, params: NaiveParams): BaselineModel {
  const serialize = (): SerializedModel => ({ meta: { params }, arrays: {}, strings: {} });
  if (task.kind === 'tagging') {
    const table = new Map(Object.entries(params.tokenTags ?? {}));
    return {
      task,
      method: 'naive',
      scoreKind: 'probability',
      predict: (records) =>
        records.map((r) => (r.raw[task.tokensField] as string[]).map((tok) => table.get(tok) ?? 'O')),
      serialize,
    };
  }
  const ranked = params.ranked ?? [];
  return {
    task,
    method: 'naive',
    scoreKind: 'probability',
    predict: (records) =>
      records.map(
        (): Prediction =>
          task.kind === 'ranking'
            ? ranked.slice(0, task.k ?? 3).map((s) => s.label)
            : task.kind === 'multilabel'
              ? ranked.slice(0, 1).map((s) => s.label)
              : (ranked[0]?.label ?? ''),
      ),
    rank: (records, top) => records.map(() => ranked.slice(0, top)),
    serialize,
  };
}
