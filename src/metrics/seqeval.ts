/**
 * Entity counts and precision/recall/F1 exactly as `seqeval` 1.2.2 in its default mode, which upstream
 * `code/eval.py` uses for RuMedNER; the chunking itself is `src/tasks/iob2.ts`.
 */

import { type Entity, getEntities } from '../tasks/iob2.js';

export type { Entity };
export { getEntities };

export interface EntityCounts {
  /** Entities predicted with the right type and exact span. */
  tp: number;
  predicted: number;
  gold: number;
}

const key = (e: Entity): string => `${e.type}\u0000${e.start}\u0000${e.end}`;

/** Entity counts of one sentence, overall and per type. */
export function countEntities(
  gold: readonly string[],
  predicted: readonly string[],
): { total: EntityCounts; byType: Map<string, EntityCounts> } {
  const total: EntityCounts = { tp: 0, predicted: 0, gold: 0 };
  const byType = new Map<string, EntityCounts>();
  addEntityCounts(gold, predicted, total, byType);
  return { total, byType };
}

/**
 * Adds one sentence's entity counts to `total` and, where given, to `byType`: scoring sums them over a test set
 * without a map and three objects per sentence.
 */
export function addEntityCounts(
  gold: readonly string[],
  predicted: readonly string[],
  total: EntityCounts,
  byType?: Map<string, EntityCounts>,
): void {
  const goldEntities = getEntities(gold);
  const predEntities = getEntities(predicted);
  const goldKeys = new Set(goldEntities.map(key));
  const bucket = (type: string): EntityCounts | undefined => {
    if (!byType) return undefined;
    let c = byType.get(type);
    if (!c) {
      c = { tp: 0, predicted: 0, gold: 0 };
      byType.set(type, c);
    }
    return c;
  };
  total.gold += goldEntities.length;
  for (const e of goldEntities) {
    const b = bucket(e.type);
    if (b) b.gold += 1;
  }
  // seqeval compares sets, so a repeated entity would count once; the chunker never repeats a span.
  for (const e of predEntities) {
    const b = bucket(e.type);
    if (b) b.predicted += 1;
    total.predicted += 1;
    if (goldKeys.has(key(e))) {
      if (b) b.tp += 1;
      total.tp += 1;
    }
  }
}

/**
 * Precision, recall and F1 from counts, as seqeval computes them: a zero denominator gives 0 (its
 * `zero_division='warn'` default), and F1 = 2PR / (P + R), 0 where P + R = 0.
 */
export function prf(counts: EntityCounts): { precision: number; recall: number; f1: number } {
  const precision = counts.predicted === 0 ? 0 : counts.tp / counts.predicted;
  const recall = counts.gold === 0 ? 0 : counts.tp / counts.gold;
  const denom = precision + recall;
  return { precision, recall, f1: denom === 0 ? 0 : (2 * precision * recall) / denom };
}
