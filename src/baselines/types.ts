/** What every baseline model offers: predictions for records of its task, a ranking with probabilities, and saving. */
import type { Prediction } from '../metrics/item-stats.js';
import type { TaskDefinition, TaskRecord } from '../tasks/types.js';

export type BaselineMethod = 'naive' | 'tfidf' | 'encoder' | 'bilstm';

/** A label and the model's probability for it. */
export interface Scored {
  label: string;
  /** A probability for classifiers; a cosine similarity for the multiple-choice baseline (see `scoreKind`). */
  score: number;
}

export interface BaselineModel {
  readonly task: TaskDefinition;
  readonly method: BaselineMethod;
  readonly scoreKind: 'probability' | 'cosine';
  /** One prediction per record in the task's answer shape (ranked list of three, label, or tags). */
  predict(records: readonly TaskRecord[]): Prediction[];
  /**
   * Per record, labels ranked by probability (ranking and classification tasks), for `rumedbench predict`;
   * undefined for tagging tasks, whose answer is the tag sequence itself.
   */
  rank?(records: readonly TaskRecord[], top: number): Scored[][];
  /**
   * Work a model must do before `predict` or `rank` can read these records (an encoder embeds them); absent where
   * there is none.
   */
  prepare?(records: readonly TaskRecord[], label?: string): Promise<void>;
  /** Releases what the model holds open (an encoder's session). */
  close?(): Promise<void>;
  /** Everything needed to load the model again, as JSON plus named binary arrays. */
  serialize(): SerializedModel;
}

export interface SerializedModel {
  /** JSON-safe description and small parameters. */
  meta: Record<string, unknown>;
  /** Large numeric parameters, stored as raw little-endian files. */
  arrays: Record<string, Float32Array | Float64Array | Int32Array>;
  /** Large string tables (vocabularies), stored as JSON arrays. */
  strings: Record<string, string[]>;
}

export interface TrainOptions {
  seed: number;
  /** Worker threads for training; the machine's parallelism by default. */
  threads?: number;
  /** Progress lines (task, class or iteration, elapsed time); silent when absent. */
  progress?: (line: string) => void;
}
