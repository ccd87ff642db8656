/**
 * Writing predictions in the two formats `eval` reads: RuMedBench (upstream `code/*\/out`: id, gold, `prediction`) and
 * the MedBench platform (id, and the gold field carrying the answer). `null` is "no answer".
 */
import type { Prediction } from '../metrics/item-stats.js';
import type { TaskDefinition } from '../tasks/types.js';

export interface Answered {
  id: string;
  gold?: Prediction | undefined;
  prediction: Prediction | null;
}

/** One JSONL line per item, RuMedBench format. */
export function rumedbenchLines(task: TaskDefinition, items: readonly Answered[]): Record<string, unknown>[] {
  return items.map((it) => ({ [task.idField]: it.id, [task.goldField]: it.gold, prediction: it.prediction }));
}

/** One JSONL line per item, MedBench platform format. */
export function platformLines(task: TaskDefinition, items: readonly Answered[]): Record<string, unknown>[] {
  return items.map((it) => ({ [task.idField]: it.id, [task.goldField]: it.prediction }));
}
