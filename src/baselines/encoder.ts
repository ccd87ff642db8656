/**
 * Frozen-encoder baselines: a transformer encoder (../encoders) turns each input into a vector, and small heads
 * are trained on those vectors:
 * - ranking and classification (RuMedTop3, RuMedSymptomRec, RuMedDaNet, RuMedNLI): the logistic regression of
 *   ./linear.ts over the pooled vector, standardised per dimension on train; two-field tasks are encoded as a pair
 *   (context + question, premise + hypothesis) with token type ids. Labels ranked by probability (Hit@3).
 * - tagging (RuMedNER): the same logistic regression over each word's first-piece vector, decoded by Viterbi under
 *   IOB2's rule (I-X only after B-X or I-X), so no entity starts with an I- tag.
 * - multiple choice (RuMedTest, no training data): the option whose pooled vector is closest (cosine) to the
 *   question's.
 * Vectors come from `prepare(records)`, which embeds them (through the cache) before `predict` or `rank` read them.
 */

import { existsSync } from 'node:fs';
import type { Embedder, VectorSource } from '../encoders/embed.js';
import { taskInput } from '../encoders/inputs.js';
import type { Dtype, Pooling } from '../encoders/model.js';
import type { OpenEmbedderOptions } from '../encoders/open.js';
import { ModelError } from '../errors.js';
import type { Prediction } from '../metrics/item-stats.js';
import { blockWeights, type OvrBlock } from '../ml/ovr-parallel.js';
import { type CsrMatrix, denseToCsr } from '../ml/sparse.js';
import { withEngines } from '../optional-deps.js';
import { isChoiceTask } from '../tasks/registry.js';
import type {
  ClassificationTask,
  MultilabelTask,
  RankingTask,
  TaggingTask,
  TaskDefinition,
  TaskRecord,
} from '../tasks/types.js';
import {
  type ClassHeads,
  fittingProgress,
  type LinearHead,
  linearProbabilities,
  loadClassHeads,
  predictClassHeads,
  rankRows,
  saveClassHeads,
  topK,
  trainClassHeads,
  trainLinearHead,
} from './linear.js';
import type { BaselineModel, Scored, SerializedModel, TrainOptions } from './types.js';

/** Our dual solver's stopping rule, as for TF-IDF; C is the run's (`--C`). */
export const ENCODER_LR = { eps: 0.1, maxEpochs: 200, bias: 1 } as const;
export const DEFAULT_C = 1;

/** What saved heads need to find their encoder again, and to check that it is the same one. */
export interface EncoderRef {
  model: string;
  dir: string;
  sha256: string;
  dtype: Dtype | string;
  pooling: Pooling | string;
  maxLength: number;
  /** Vectors from a serving engine's /v1/embeddings (such heads cannot be saved and reopened here). */
  endpoint?: string;
}

/**
 * The run's embedder (shared by every task and closed by the run), or, for heads loaded from disk, one opened on
 * first use and closed with the model.
 */
interface EmbedderSource {
  get(): Promise<VectorSource>;
  close(): Promise<void>;
}

export function encoderRef(embedder: VectorSource): EncoderRef {
  const i = embedder.info;
  return {
    model: i.model,
    dir: i.dir,
    sha256: i.sha256,
    dtype: i.dtype,
    pooling: embedder.pooling,
    maxLength: embedder.maxLength,
    ...(i.endpoint ? { endpoint: i.endpoint } : {}),
  };
}

/** Per-dimension standardisation from train, scaled so that a row has unit expected norm (the solver's comfort). */
interface Standardizer {
  mean: Float32Array;
  scale: Float32Array;
}

function fitStandardizer(vectors: readonly Float32Array[], width: number): Standardizer {
  const mean = new Float64Array(width);
  const sq = new Float64Array(width);
  for (const v of vectors) {
    for (let d = 0; d < width; d++) {
      mean[d] = (mean[d] as number) + (v[d] as number);
      sq[d] = (sq[d] as number) + (v[d] as number) ** 2;
    }
  }
  const n = Math.max(1, vectors.length);
  const scale = new Float32Array(width);
  for (let d = 0; d < width; d++) {
    const m = (mean[d] as number) / n;
    mean[d] = m;
    const variance = Math.max(0, (sq[d] as number) / n - m * m);
    // A dimension constant on train says nothing: an infinite scale makes it 0 everywhere, rather than letting a
    // tiny spread blow a test value up.
    const sd = Math.sqrt(variance);
    scale[d] = sd > 1e-6 ? sd * Math.sqrt(width) : Number.POSITIVE_INFINITY;
  }
  return { mean: Float32Array.from(mean), scale };
}

function features(vectors: readonly Float32Array[], s: Standardizer): CsrMatrix {
  return denseToCsr(vectors, s.mean.length, (v, d) => (v - (s.mean[d] as number)) / (s.scale[d] as number));
}

/** Splits [words × width] matrices into one vector per word. */
function wordRows(matrix: Float32Array, width: number): Float32Array[] {
  return Array.from({ length: matrix.length / width }, (_, w) => matrix.subarray(w * width, (w + 1) * width));
}

abstract class EncoderModel implements BaselineModel {
  readonly method = 'encoder';
  abstract readonly task: TaskDefinition;
  abstract readonly scoreKind: 'probability' | 'cosine';
  private readonly vectors = new WeakMap<TaskRecord, Float32Array>();

  constructor(
    protected readonly source: EmbedderSource,
    protected readonly ref: EncoderRef,
  ) {}

  /** One vector per record, of its input fields' text; taggers and multiple choice embed otherwise. */
  protected embed(
    embedder: VectorSource,
    records: readonly TaskRecord[],
    label: string,
  ): Promise<Float32Array[]> {
    return embedder.embedTexts(
      records.map((r) => taskInput(this.task, r)),
      label,
    );
  }

  async prepare(records: readonly TaskRecord[], label = this.task.name): Promise<void> {
    const todo = records.filter((r) => !this.vectors.has(r));
    if (todo.length === 0) return;
    const vectors = await this.embed(await this.source.get(), todo, label);
    todo.forEach((r, i) => {
      this.vectors.set(r, vectors[i] as Float32Array);
    });
  }

  protected vectorsOf(records: readonly TaskRecord[]): Float32Array[] {
    return records.map((r) => {
      const v = this.vectors.get(r);
      if (!v) throw new Error(`${this.task.name}: record ${r.id} was not embedded; call prepare() first`);
      return v;
    });
  }

  async close(): Promise<void> {
    await this.source.close();
  }

  abstract predict(records: readonly TaskRecord[]): Prediction[];
  abstract serialize(): SerializedModel;
}

/** An encoder with a trained linear head over standardised vectors. */
abstract class EncoderHeadModel extends EncoderModel {
  readonly scoreKind = 'probability';
  constructor(
    source: EmbedderSource,
    ref: EncoderRef,
    protected readonly standardizer: Standardizer,
    protected readonly head: LinearHead,
    private readonly C: number,
  ) {
    super(source, ref);
  }

  protected serializeAs(kind: 'encoder-logreg' | 'encoder-tagger'): SerializedModel {
    const arrays: SerializedModel['arrays'] = {
      mean: this.standardizer.mean,
      scale: this.standardizer.scale,
    };
    this.head.blocks.forEach((b, g) => {
      arrays[`weights${g}`] = blockWeights(b);
    });
    return {
      meta: {
        kind,
        encoder: this.ref,
        logreg: { ...ENCODER_LR, C: this.C },
        classes: this.head.classes,
        blocks: this.head.blocks.map((b) => b.positives),
      },
      arrays,
      strings: {},
    };
  }
}

class EncoderClassifier extends EncoderHeadModel {
  constructor(
    readonly task: RankingTask | ClassificationTask,
    ...rest: ConstructorParameters<typeof EncoderHeadModel>
  ) {
    super(...rest);
  }

  rank(records: readonly TaskRecord[], top: number): Scored[][] {
    return rankRows(this.head, features(this.vectorsOf(records), this.standardizer), top);
  }

  predict(records: readonly TaskRecord[]): Prediction[] {
    return this.rank(records, this.task.kind === 'ranking' ? (this.task.k ?? 3) : 1).map((ranked) =>
      this.task.kind === 'ranking' ? ranked.map((s) => s.label) : (ranked[0] as Scored).label,
    );
  }

  serialize(): SerializedModel {
    return this.serializeAs('encoder-logreg');
  }
}

/** Multi-label (a task defined in a file): one binary head per class over the standardised vectors (./linear.ts). */
class EncoderMultilabel extends EncoderModel {
  readonly scoreKind = 'probability';
  constructor(
    readonly task: MultilabelTask,
    source: EmbedderSource,
    ref: EncoderRef,
    private readonly standardizer: Standardizer,
    private readonly heads: ClassHeads,
    private readonly C: number,
  ) {
    super(source, ref);
  }

  predict(records: readonly TaskRecord[]): Prediction[] {
    return predictClassHeads(
      this.heads,
      this.task.classes,
      features(this.vectorsOf(records), this.standardizer),
    );
  }

  serialize(): SerializedModel {
    const arrays: SerializedModel['arrays'] = {
      mean: this.standardizer.mean,
      scale: this.standardizer.scale,
    };
    const heads = saveClassHeads(this.heads, arrays);
    return {
      meta: { kind: 'encoder-multilabel', encoder: this.ref, logreg: { ...ENCODER_LR, C: this.C }, heads },
      arrays,
      strings: {},
    };
  }
}

/** IOB2: I-X may follow only B-X or I-X. */
function allowed(previous: string | undefined, tag: string): boolean {
  if (!tag.startsWith('I-')) return true;
  return previous !== undefined && previous !== 'O' && previous.slice(2) === tag.slice(2);
}

/** The most probable tag sequence that IOB2 allows, from per-word probabilities (words × tags). */
export function viterbiIob2(
  probabilities: Float64Array,
  offset: number,
  words: number,
  tags: readonly string[],
): string[] {
  const K = tags.length;
  const logp = (w: number, k: number) =>
    Math.log(Math.max(probabilities[offset + w * K + k] as number, 1e-300));
  let score = Float64Array.from(tags, (t, k) => (allowed(undefined, t) ? logp(0, k) : -Infinity));
  const back: Int32Array[] = [];
  for (let w = 1; w < words; w++) {
    const next = new Float64Array(K).fill(-Infinity);
    const from = new Int32Array(K).fill(-1);
    for (let k = 0; k < K; k++) {
      for (let j = 0; j < K; j++) {
        if (!allowed(tags[j], tags[k] as string)) continue;
        const s = (score[j] as number) + logp(w, k);
        if (s > (next[k] as number)) {
          next[k] = s;
          from[k] = j;
        }
      }
    }
    back.push(from);
    score = next;
  }
  let best = 0;
  for (let k = 1; k < K; k++) if ((score[k] as number) > (score[best] as number)) best = k;
  if (!Number.isFinite(score[best] as number)) {
    // Only I- tags were ever seen: no sequence is valid, so take each word's best tag.
    return Array.from(
      { length: words },
      (_, w) => (topK(probabilities, offset + w * K, K, tags, 1)[0] as Scored).label,
    );
  }
  const path = [best];
  for (let w = back.length - 1; w >= 0; w--)
    path.push((back[w] as Int32Array)[path[path.length - 1] as number] as number);
  return path.reverse().map((k) => tags[k] as string);
}

class EncoderTagger extends EncoderHeadModel {
  constructor(
    readonly task: TaggingTask,
    ...rest: ConstructorParameters<typeof EncoderHeadModel>
  ) {
    super(...rest);
  }

  protected override embed(
    embedder: VectorSource,
    records: readonly TaskRecord[],
    label: string,
  ): Promise<Float32Array[]> {
    return embedder.embedWords(
      records.map((r) => r.raw[this.task.tokensField] as string[]),
      label,
    );
  }

  predict(records: readonly TaskRecord[]): Prediction[] {
    const width = this.standardizer.mean.length;
    const matrices = this.vectorsOf(records);
    const rows = matrices.flatMap((m) => wordRows(m, width));
    const p = linearProbabilities(this.head, features(rows, this.standardizer));
    const K = this.head.classes.length;
    let offset = 0;
    return matrices.map((m) => {
      const words = m.length / width;
      const tags = viterbiIob2(p, offset, words, this.head.classes);
      offset += words * K;
      return tags;
    });
  }

  serialize(): SerializedModel {
    return this.serializeAs('encoder-tagger');
  }
}

class EncoderChoice extends EncoderModel {
  readonly scoreKind = 'cosine';
  private readonly labels: string[];
  constructor(
    readonly task: ClassificationTask,
    source: EmbedderSource,
    ref: EncoderRef,
  ) {
    super(source, ref);
    const choices = task.choices;
    if (!choices) throw new Error(`${task.name} is not a multiple-choice task`);
    this.labels = Object.keys(choices.optionFields);
  }

  /** Per record, its question's vector then each option's, concatenated. */
  protected override async embed(
    embedder: VectorSource,
    records: readonly TaskRecord[],
    label: string,
  ): Promise<Float32Array[]> {
    const choices = this.task.choices as NonNullable<ClassificationTask['choices']>;
    const fields = [choices.questionField, ...this.labels.map((l) => choices.optionFields[l] as string)];
    const vectors = await embedder.embedTexts(
      records.flatMap((r) => fields.map((f) => String(r.raw[f] ?? ''))),
      label,
    );
    return records.map((_, i) => {
      const parts = vectors.slice(i * fields.length, (i + 1) * fields.length);
      const width = (parts[0] as Float32Array).length;
      const out = new Float32Array(width * fields.length);
      parts.forEach((p, k) => {
        out.set(p, k * width);
      });
      return out;
    });
  }

  rank(records: readonly TaskRecord[], top: number): Scored[][] {
    const n = this.labels.length + 1;
    return this.vectorsOf(records).map((m) => {
      const width = m.length / n;
      const [question, ...options] = wordRows(m, width) as [Float32Array, ...Float32Array[]];
      const sims = options.map((o) => cosine(question, o));
      return topK(sims, 0, this.labels.length, this.labels, top);
    });
  }

  predict(records: readonly TaskRecord[]): Prediction[] {
    return this.rank(records, 1).map((r) => (r[0] as Scored).label);
  }

  serialize(): SerializedModel {
    return { meta: { kind: 'encoder-choice', encoder: this.ref }, arrays: {}, strings: {} };
  }
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let d = 0; d < a.length; d++) {
    dot += (a[d] as number) * (b[d] as number);
    na += (a[d] as number) ** 2;
    nb += (b[d] as number) ** 2;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Embeds `train` and fits the task's head (nothing to fit for multiple choice). */
export async function trainEncoder(
  task: TaskDefinition,
  train: readonly TaskRecord[],
  embedder: VectorSource,
  options: TrainOptions & { C?: number },
): Promise<BaselineModel> {
  const source: EmbedderSource = { get: () => Promise.resolve(embedder), close: async () => {} };
  const ref = encoderRef(embedder);
  if (isChoiceTask(task)) return new EncoderChoice(task, source, ref);
  const log = options.progress ?? (() => {});
  const progress = fittingProgress(task.name, new Set(train.map((r) => r.gold as string)).size, log);
  const C = options.C ?? DEFAULT_C;
  const lr = {
    ...ENCODER_LR,
    C,
    seed: options.seed,
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    onEpoch: (_group: number, epoch: number, active: number) => progress(epoch, active),
  };
  const done = (head: LinearHead, started: number) =>
    log(
      `${task.name}: logistic regression (C = ${C}) over ${head.blocks.reduce((n, b) => n + b.positives.length, 0)} problem(s) done in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  if (task.kind === 'multilabel') {
    const vectors = await embedder.embedTexts(
      train.map((r) => taskInput(task, r)),
      `${task.name} train`,
    );
    const standardizer = fitStandardizer(vectors, vectors[0]?.length ?? 0);
    const started = performance.now();
    const { onEpoch: _, ...binary } = lr;
    const heads = await trainClassHeads(
      features(vectors, standardizer),
      task.classes,
      train.map((r) => r.gold as readonly string[]),
      binary,
    );
    log(
      `${task.name}: ${task.classes.length} per-class logistic regressions (C = ${C}) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    return new EncoderMultilabel(task, source, ref, standardizer, heads, C);
  }
  if (task.kind === 'tagging') {
    const matrices = await embedder.embedWords(
      train.map((r) => r.raw[task.tokensField] as string[]),
      `${task.name} train`,
    );
    const started = performance.now();
    const first = train[0];
    if (!first) throw new Error(`${task.name}: nothing to train on`);
    const width = (matrices[0] as Float32Array).length / (first.raw[task.tokensField] as string[]).length;
    const rows = matrices.flatMap((m) => wordRows(m, width));
    const standardizer = fitStandardizer(rows, width);
    const head = await trainLinearHead(
      features(rows, standardizer),
      train.flatMap((r) => r.gold as string[]),
      lr,
    );
    done(head, started);
    return new EncoderTagger(task, source, ref, standardizer, head, C);
  }
  const vectors = await embedder.embedTexts(
    train.map((r) => taskInput(task, r)),
    `${task.name} train`,
  );
  const started = performance.now();
  const width = vectors[0]?.length ?? 0;
  const standardizer = fitStandardizer(vectors, width);
  const head = await trainLinearHead(
    features(vectors, standardizer),
    train.map((r) => r.gold as string),
    lr,
  );
  done(head, started);
  return new EncoderClassifier(task, source, ref, standardizer, head, C);
}

/** Opens the encoder that saved heads were trained with, and checks it is byte for byte the same model. */
function lazyEmbedder(ref: EncoderRef, open: (ref: EncoderRef) => Promise<Embedder>): EmbedderSource {
  let pending: Promise<Embedder> | undefined;
  return {
    get: () => {
      pending ??= open(ref);
      return pending;
    },
    close: async () => {
      if (pending) await (await pending).close();
      pending = undefined;
    },
  };
}

/** Rebuilds saved encoder heads; `open` loads the encoder (../encoders) for them. */
export function loadEncoderModel(
  task: TaskDefinition,
  saved: SerializedModel,
  open: (ref: EncoderRef) => Promise<Embedder>,
): BaselineModel {
  const meta = saved.meta as {
    kind: string;
    encoder: EncoderRef;
    logreg?: { C: number };
    classes?: string[];
    blocks?: number[][];
  };
  const source = lazyEmbedder(meta.encoder, open);
  if (meta.kind === 'encoder-choice') {
    if (!isChoiceTask(task))
      throw new Error(`${task.name}: a multiple-choice model was saved for another task`);
    return new EncoderChoice(task, source, meta.encoder);
  }
  const standardizer = { mean: saved.arrays.mean as Float32Array, scale: saved.arrays.scale as Float32Array };
  if (meta.kind === 'encoder-multilabel') {
    if (task.kind !== 'multilabel')
      throw new Error(`${task.name}: a multi-label model was saved for another task`);
    const heads = (saved.meta as { heads: Record<string, boolean | number[][]> }).heads;
    return new EncoderMultilabel(
      task,
      source,
      meta.encoder,
      standardizer,
      loadClassHeads(heads, saved.arrays, ENCODER_LR.bias),
      meta.logreg?.C ?? DEFAULT_C,
    );
  }
  const blocks: OvrBlock[] = (meta.blocks ?? []).map((positives, g) => ({
    positives,
    weights: saved.arrays[`weights${g}`] as Float32Array,
  }));
  const head: LinearHead = { classes: meta.classes ?? [], blocks, bias: ENCODER_LR.bias };
  const C = meta.logreg?.C ?? DEFAULT_C;
  if (meta.kind === 'encoder-tagger') {
    if (task.kind !== 'tagging') throw new Error(`${task.name}: a tagging model was saved for another task`);
    return new EncoderTagger(task, source, meta.encoder, standardizer, head, C);
  }
  if (task.kind === 'tagging' || task.kind === 'multilabel' || isChoiceTask(task))
    throw new Error(`${task.name}: a text classification model was saved for another task`);
  return new EncoderClassifier(task, source, meta.encoder, standardizer, head, C);
}

/** Opens the encoder of saved heads (the folder they name, else the hub id) and checks its sha256. */
export async function openSavedEncoder(
  ref: EncoderRef,
  options: Omit<OpenEmbedderOptions, 'model' | 'dtype' | 'pooling' | 'maxLength'> = {},
): Promise<Embedder> {
  const where = existsSync(ref.dir) ? ref.dir : ref.model;
  // Loaded here, not at the top: onnxruntime's native library is only needed once an encoder runs.
  const { openEmbedder } = await withEngines('an encoder baseline', () => import('../encoders/open.js'));
  const embedder = await openEmbedder({
    ...options,
    model: where,
    dtype: ref.dtype as Dtype,
    pooling: ref.pooling as Pooling,
    maxLength: ref.maxLength,
  });
  const sha256 = embedder.encoder.info.sha256;
  if (sha256 !== ref.sha256) {
    await embedder.close();
    throw new ModelError(
      where,
      `this is not the encoder the heads were trained with: its ONNX file has sha256 ${sha256}, the heads expect ${ref.sha256}`,
    );
  }
  return embedder;
}
