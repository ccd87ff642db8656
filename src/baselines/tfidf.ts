/**
 * The paper's feature-based baselines for text tasks (upstream `code/linear_models`):
 * - classification and ranking: TF-IDF over character 3- to 8-grams (scikit-learn's defaults otherwise) and
 *   L2-regularised logistic regression, C = 10, one-vs-rest, labels ranked by probability. The input fields are
 *   joined with a space (RuMedDaNet: context + " " + question; RuMedNLI: sentence1 + " " + sentence2).
 * - tagging (RuMedNER): the CRF of ./crf.ts; the method keeps the paper's name for the row, "feature-based".
 * - multiple choice (RuMedTest): the option whose TF-IDF vector is closest (cosine) to the question's. With no
 *   training data, the vectorizer is fitted on the questions and options being answered.
 */
import type { Prediction } from '../metrics/item-stats.js';
import { blockWeights } from '../ml/ovr-parallel.js';
import {
  fitTransform,
  type TfidfModel,
  type TfidfOptions,
  tfidfFromVocabulary,
  transform,
} from '../ml/tfidf.js';
import { isChoiceTask } from '../tasks/registry.js';
import type {
  ClassificationTask,
  MultilabelTask,
  RankingTask,
  TaskDefinition,
  TaskRecord,
} from '../tasks/types.js';
import { loadCrfTagger, trainCrfTagger } from './crf.js';
import {
  type ClassHeads,
  fittingProgress,
  type LinearHead,
  loadClassHeads,
  predictClassHeads,
  rankRows,
  saveClassHeads,
  startLinearThreads,
  topK,
  trainClassHeads,
  trainLinearHead,
} from './linear.js';
import type { BaselineModel, Scored, SerializedModel, TrainOptions } from './types.js';

export const TFIDF_OPTIONS: TfidfOptions = { ngramMin: 3, ngramMax: 8 };
/** Upstream's LogisticRegression(C=10); eps and the pass cap are our dual solver's stopping rule. */
export const LR_OPTIONS = { C: 10, eps: 0.1, maxEpochs: 200, bias: 1 } as const;

export function inputText(task: TaskDefinition, record: TaskRecord): string {
  return task.inputFields.map((f) => String(record.raw[f] ?? '')).join(' ');
}

class TfidfClassifier implements BaselineModel {
  readonly method = 'tfidf';
  readonly scoreKind = 'probability';
  constructor(
    readonly task: RankingTask | ClassificationTask,
    private readonly tfidf: TfidfModel,
    private readonly head: LinearHead,
  ) {}

  rank(records: readonly TaskRecord[], top: number): Scored[][] {
    const x = transform(
      this.tfidf,
      records.map((r) => inputText(this.task, r)),
    );
    return rankRows(this.head, x, top);
  }

  predict(records: readonly TaskRecord[]): Prediction[] {
    return this.rank(records, this.task.kind === 'ranking' ? (this.task.k ?? 3) : 1).map((ranked) =>
      this.task.kind === 'ranking' ? ranked.map((s) => s.label) : (ranked[0] as Scored).label,
    );
  }

  serialize(): SerializedModel {
    const arrays: SerializedModel['arrays'] = { idf: this.tfidf.idf };
    this.head.blocks.forEach((b, g) => {
      arrays[`weights${g}`] = blockWeights(b);
    });
    return {
      meta: {
        kind: 'tfidf-logreg',
        tfidf: this.tfidf.options,
        logreg: LR_OPTIONS,
        classes: this.head.classes,
        blocks: this.head.blocks.map((b) => b.positives),
      },
      arrays,
      strings: { vocabulary: this.tfidf.index.texts() },
    };
  }
}

/**
 * Multi-label (a task defined in a file): one binary logistic regression per class over the same TF-IDF features
 * (scikit-learn's `OneVsRestClassifier(LogisticRegression(C=10))`); a class is predicted where its probability is
 * at least 0.5 (./linear.ts).
 */
class TfidfMultilabel implements BaselineModel {
  readonly method = 'tfidf';
  readonly scoreKind = 'probability';
  constructor(
    readonly task: MultilabelTask,
    private readonly tfidf: TfidfModel,
    private readonly heads: ClassHeads,
  ) {}

  predict(records: readonly TaskRecord[]): Prediction[] {
    const x = transform(
      this.tfidf,
      records.map((r) => inputText(this.task, r)),
    );
    return predictClassHeads(this.heads, this.task.classes, x);
  }

  serialize(): SerializedModel {
    const arrays: SerializedModel['arrays'] = { idf: this.tfidf.idf };
    const heads = saveClassHeads(this.heads, arrays);
    return {
      meta: { kind: 'tfidf-multilabel', tfidf: this.tfidf.options, logreg: LR_OPTIONS, heads },
      arrays,
      strings: { vocabulary: this.tfidf.index.texts() },
    };
  }
}

async function trainMultilabel(
  task: MultilabelTask,
  train: readonly TaskRecord[],
  options: TrainOptions,
): Promise<BaselineModel> {
  const log = options.progress ?? (() => {});
  const t0 = performance.now();
  const { model, matrix } = fitTransform(
    train.map((r) => inputText(task, r)),
    TFIDF_OPTIONS,
  );
  log(`${task.name}: TF-IDF ${matrix.rows} texts × ${matrix.cols} character n-grams; one model per class…`);
  const heads = await trainClassHeads(
    matrix,
    task.classes,
    train.map((r) => r.gold as readonly string[]),
    {
      ...LR_OPTIONS,
      seed: options.seed,
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
    },
    (done) => {
      if (done % 10 === 0) log(`${task.name}: ${done} of ${task.classes.length} classes`);
    },
  );
  log(`${task.name}: ${task.classes.length} classes in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return new TfidfMultilabel(task, model, heads);
}

/** Multiple choice without training: the option closest to the question under TF-IDF cosine similarity. */
class TfidfChoice implements BaselineModel {
  readonly method = 'tfidf';
  readonly scoreKind = 'cosine';
  constructor(readonly task: ClassificationTask) {}

  rank(records: readonly TaskRecord[], top: number): Scored[][] {
    const choices = this.task.choices;
    if (!choices) throw new Error(`${this.task.name} is not a multiple-choice task`);
    const labels = Object.keys(choices.optionFields);
    const width = labels.length + 1;
    const texts = records.flatMap((r) => [
      String(r.raw[choices.questionField] ?? ''),
      ...labels.map((l) => String(r.raw[choices.optionFields[l] as string] ?? '')),
    ]);
    const { matrix } = fitTransform(texts, TFIDF_OPTIONS);
    // Rows are unit length, so a dot product is the cosine.
    const dense = new Map<number, number>();
    return records.map((_, r) => {
      const q = r * width;
      dense.clear();
      for (let k = matrix.indptr[q] as number; k < (matrix.indptr[q + 1] as number); k++) {
        dense.set(matrix.indices[k] as number, matrix.data[k] as number);
      }
      const sims = new Float64Array(labels.length);
      labels.forEach((_, o) => {
        const row = q + 1 + o;
        let s = 0;
        for (let k = matrix.indptr[row] as number; k < (matrix.indptr[row + 1] as number); k++) {
          s += (matrix.data[k] as number) * (dense.get(matrix.indices[k] as number) ?? 0);
        }
        sims[o] = s;
      });
      return topK(sims, 0, labels.length, labels, top);
    });
  }

  predict(records: readonly TaskRecord[]): Prediction[] {
    return this.rank(records, 1).map((r) => (r[0] as Scored).label);
  }

  serialize(): SerializedModel {
    return { meta: { kind: 'tfidf-choice', tfidf: TFIDF_OPTIONS }, arrays: {}, strings: {} };
  }
}

/** Fits TF-IDF and the one-vs-rest classifier on `train` (or returns the untrained multiple-choice model). */
export async function trainTfidf(
  task: TaskDefinition,
  train: readonly TaskRecord[],
  options: TrainOptions,
): Promise<BaselineModel> {
  if (isChoiceTask(task)) return new TfidfChoice(task);
  if (task.kind === 'tagging') return trainCrfTagger(task, train, options);
  if (task.kind === 'multilabel') return trainMultilabel(task, train, options);
  const log = options.progress ?? (() => {});
  const t0 = performance.now();
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
  const gold = train.map((r) => r.gold as string);
  // The training threads start while this one fits TF-IDF.
  const pool = startLinearThreads(gold, options.threads);
  let head: LinearHead;
  let model: TfidfModel;
  try {
    log(`${task.name}: TF-IDF of ${train.length} training texts…`);
    const fitted = fitTransform(
      train.map((r) => inputText(task, r)),
      TFIDF_OPTIONS,
    );
    model = fitted.model;
    const { matrix } = fitted;
    log(`${task.name}: TF-IDF ${matrix.rows} texts × ${matrix.cols} character n-grams (${elapsed()})`);
    const progress = fittingProgress(task.name, new Set(gold).size, log);
    head = await trainLinearHead(matrix, gold, {
      ...LR_OPTIONS,
      seed: options.seed,
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      pool,
      onEpoch: (_group, epoch, active) => progress(epoch, active),
    });
  } finally {
    pool.close();
  }
  log(
    `${task.name}: logistic regression over ${head.blocks.reduce((n, b) => n + b.positives.length, 0)} problem(s) done (${elapsed()})`,
  );
  return new TfidfClassifier(task, model, head);
}

/** Rebuilds a saved TF-IDF model. */
export function loadTfidf(task: TaskDefinition, saved: SerializedModel): BaselineModel {
  const meta = saved.meta as { kind: string; tfidf: TfidfOptions; classes: string[]; blocks: number[][] };
  if (meta.kind === 'crf') return loadCrfTagger(task, saved);
  if (meta.kind === 'tfidf-choice') {
    if (!isChoiceTask(task))
      throw new Error(`${task.name}: a multiple-choice model was saved for another task`);
    return new TfidfChoice(task);
  }
  const tfidf = tfidfFromVocabulary(
    meta.tfidf,
    saved.strings.vocabulary ?? [],
    saved.arrays.idf as Float64Array,
  );
  if (meta.kind === 'tfidf-multilabel') {
    if (task.kind !== 'multilabel')
      throw new Error(`${task.name}: a multi-label model was saved for another task`);
    const heads = (saved.meta as { heads: Record<string, boolean | number[][]> }).heads;
    return new TfidfMultilabel(task, tfidf, loadClassHeads(heads, saved.arrays, LR_OPTIONS.bias));
  }
  if (task.kind === 'tagging' || task.kind === 'multilabel')
    throw new Error(`${task.name}: not a single-label text classification task`);
  const blocks = meta.blocks.map((positives, g) => ({
    positives,
    weights: saved.arrays[`weights${g}`] as Float32Array,
  }));
  return new TfidfClassifier(task, tfidf, { classes: meta.classes, blocks, bias: LR_OPTIONS.bias });
}
