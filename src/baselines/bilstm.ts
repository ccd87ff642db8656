/**
 * The paper's BiLSTM baselines (upstream `code/bilstm`, its settings restated in docs/baselines.md), trained on
 * the network of src/ml/bilstm-net.ts:
 * - text classifiers (ranking and classification tasks; two input fields make a pair): lower-cased words, punctuation
 *   dropped, a vocabulary of every training word (PAD 0, UNK 1), sequences cut or padded at the end to 128 tokens
 *   (pairs: 256, the first text's first 192 then the second's first 64); embeddings 300; a bidirectional LSTM of
 *   hidden size 256 whose first layer's final states feed a linear layer; Adam (lr 1e-3); batches of 64 in file
 *   order; up to 50 epochs, stopping once the dev loss has failed to improve 3 times (upstream's counter never
 *   resets); the last epoch's model predicts.
 *   Upstream stacks 2 layers but reads only `h_n[0]` and `h_n[1]`, the first layer's states: its second layer
 *   neither reaches a logit nor receives a gradient, so we compute the first alone, with the same predictions.
 * - the tagger (tagging tasks): the given tokens, a vocabulary of training tokens, embeddings 300 (padding row zero)
 *   with dropout 0.5, 2 bidirectional layers (hidden 256, dropout 0.1 between), dropout 0.25, a linear layer per
 *   token; weights N(0, 0.1); AdamW (lr 0.0015, weight decay 0.01); batches of 32 padded to their longest sentence;
 *   20 epochs.
 */
import { availableParallelism } from 'node:os';
import { UsageError } from '../errors.js';
import type { Prediction } from '../metrics/item-stats.js';
import { createRng, type Rng } from '../metrics/rng.js';
import { Adam, type BiLstmConfig, BiLstmNet, crossEntropy } from '../ml/bilstm-net.js';
import type { TaggingTask, TaskDefinition, TaskRecord } from '../tasks/types.js';
import type { BaselineModel, Scored, SerializedModel, TrainOptions } from './types.js';

/** The layout of a saved BiLSTM (meta.bilstm_format); a reader refuses any other. */
export const BILSTM_FORMAT = 1;

export const BILSTM_CLASSIFIER = {
  embedding: 300,
  hidden: 256,
  seqLen: 128,
  pairSeqLen: 256,
  /** Share of a pair's tokens given to its first text (upstream: `seq_len * 0.75`). */
  firstShare: 0.75,
  batch: 64,
  lr: 1e-3,
  epochs: 50,
  patience: 3,
} as const;

export const BILSTM_TAGGER = {
  embedding: 300,
  hidden: 256,
  layers: 2,
  dropout: { embedding: 0.5, between: 0.1, output: 0.25 },
  initStd: 0.1,
  batch: 32,
  lr: 0.0015,
  weightDecay: 0.01,
  epochs: 20,
} as const;

export interface BilstmOptions extends TrainOptions {
  /** Epochs at most (classifiers 50, the tagger 20). */
  epochs?: number;
  /** Stop after the dev loss failed to improve this many times in all (classifiers 3; the tagger: never). */
  patience?: number;
  /** The dev split, for early stopping and the per-epoch dev loss. */
  dev?: readonly TaskRecord[];
  /**
   * Threads: 2 runs each layer's two directions at once, 1 one after the other (default: 2 where the machine has
   * 2 cores). The trained weights are the same bits either way; more than 2, or more than the cores, is refused.
   */
  threads?: number;
  /** Embedding and hidden sizes other than upstream's 300 and 256: for tests and experiments, not the paper's row. */
  size?: { embedding: number; hidden: number };
}

const PAD = 0;
const UNK = 1;
const WORD = /[\p{L}\p{N}]+(?:[-'][\p{L}\p{N}]+)*|[^\p{L}\p{N}\s]/gu;
const PUNCT = /^[^\p{L}\p{N}]+$/u;

/**
 * Lower-cased words with punctuation tokens dropped: what upstream keeps of nltk's ToktokTokenizer output (words
 * and numbers whole, hyphenated words whole). Not Toktok rule for rule: the same rule as bench/bilstm_reference.py.
 */
export function bilstmWords(text: string): string[] {
  return (text.toLowerCase().match(WORD) ?? []).filter((w) => !PUNCT.test(w));
}

type Kind = 'classifier' | 'tagger';

interface Encoded {
  tokens: Int32Array;
  steps: number;
}

class BilstmModel implements BaselineModel {
  readonly method = 'bilstm';
  readonly scoreKind = 'probability';
  private readonly index: Map<string, number>;
  /** Labels by probability, for classifiers; a tagger's answer is its tag sequence, so it has none. */
  readonly rank?: (records: readonly TaskRecord[], top: number) => Scored[][];
  constructor(
    readonly task: TaskDefinition,
    readonly kind: Kind,
    readonly net: BiLstmNet,
    readonly vocabulary: readonly string[],
    readonly labels: readonly string[],
    readonly history: { epoch: number; train_loss: number; dev_loss?: number; seconds: number }[],
  ) {
    this.index = new Map(vocabulary.map((w, i) => [w, i]));
    if (kind === 'classifier') this.rank = (records, top) => this.ranked(records, top);
  }

  /** A batch of records as token ids `[B, T]`: classifiers at their fixed length, the tagger at the batch's longest. */
  encode(records: readonly TaskRecord[]): Encoded {
    const id = (w: string) => this.index.get(w) ?? UNK;
    if (this.kind === 'tagger') {
      const field = (this.task as TaggingTask).tokensField;
      const seqs = records.map((r) => (r.raw[field] as string[]).map(id));
      const steps = Math.max(1, ...seqs.map((s) => s.length));
      const tokens = new Int32Array(records.length * steps);
      seqs.forEach((s, b) => {
        tokens.set(s, b * steps);
      });
      return { tokens, steps };
    }
    const fields = this.task.inputFields;
    const steps = fields.length > 1 ? BILSTM_CLASSIFIER.pairSeqLen : BILSTM_CLASSIFIER.seqLen;
    const first = fields.length > 1 ? Math.floor(steps * BILSTM_CLASSIFIER.firstShare) : steps;
    const tokens = new Int32Array(records.length * steps);
    records.forEach((r, b) => {
      const head = bilstmWords(String(r.raw[fields[0] as string] ?? '')).slice(0, first);
      const rest =
        fields.length > 1
          ? bilstmWords(
              fields
                .slice(1)
                .map((f) => String(r.raw[f] ?? ''))
                .join(' '),
            ).slice(0, steps - first)
          : [];
      tokens.set([...head, ...rest].map(id), b * steps);
    });
    return { tokens, steps };
  }

  /** Targets of a batch: one per record (classifiers), or one per time-major step, −1 on padding (the tagger). */
  targets(records: readonly TaskRecord[], steps: number): Int32Array {
    const at = new Map(this.labels.map((l, i) => [l, i]));
    if (this.kind === 'classifier') return Int32Array.from(records, (r) => at.get(String(r.gold)) ?? -1);
    const y = new Int32Array(records.length * steps).fill(-1);
    records.forEach((r, b) => {
      (r.gold as string[]).forEach((tag, t) => {
        y[t * records.length + b] = at.get(tag) ?? -1;
      });
    });
    return y;
  }

  get batchSize(): number {
    return this.kind === 'tagger' ? BILSTM_TAGGER.batch : BILSTM_CLASSIFIER.batch;
  }

  /** Mean loss over `records` (no dropout), weighted as upstream weights it: per record or per token. */
  loss(records: readonly TaskRecord[]): number {
    let sum = 0;
    let count = 0;
    for (let i = 0; i < records.length; i += this.batchSize) {
      const batch = records.slice(i, i + this.batchSize);
      const { tokens, steps } = this.encode(batch);
      const tape = this.net.forward(tokens, batch.length, steps);
      const rows = this.kind === 'tagger' ? batch.length * steps : batch.length;
      const ce = crossEntropy(tape.logits, rows, this.labels.length, this.targets(batch, steps));
      sum += ce.loss * ce.count;
      count += ce.count;
    }
    return count > 0 ? sum / count : Number.NaN;
  }

  /** Logits of each record (classifiers) or of each token of each record (the tagger). */
  private logits(records: readonly TaskRecord[], each: (record: number, logits: Float32Array) => void): void {
    const C = this.labels.length;
    for (let i = 0; i < records.length; i += this.batchSize) {
      const batch = records.slice(i, i + this.batchSize);
      const { tokens, steps } = this.encode(batch);
      const { logits } = this.net.forward(tokens, batch.length, steps);
      batch.forEach((r, b) => {
        if (this.kind === 'classifier') each(i + b, logits.subarray(b * C, b * C + C));
        else {
          const n = (r.raw[(this.task as TaggingTask).tokensField] as string[]).length;
          const own = new Float32Array(n * C);
          for (let t = 0; t < n; t++)
            own.set(logits.subarray((t * batch.length + b) * C, (t * batch.length + b + 1) * C), t * C);
          each(i + b, own);
        }
      });
    }
  }

  private ranked(records: readonly TaskRecord[], top: number): Scored[][] {
    const out: Scored[][] = [];
    this.logits(records, (i, z) => {
      const max = z.reduce((m, v) => Math.max(m, v), -Infinity);
      const exp = Array.from(z, (v) => Math.exp(v - max));
      const sum = exp.reduce((a, b) => a + b, 0);
      // Ties keep the label order: the ranking of upstream's argsort on distinct logits.
      out[i] = exp
        .map((e, k) => ({ label: this.labels[k] as string, score: e / sum }))
        .sort((a, b) => b.score - a.score)
        .slice(0, top);
    });
    return out;
  }

  predict(records: readonly TaskRecord[]): Prediction[] {
    if (this.kind === 'tagger') {
      const C = this.labels.length;
      const out: Prediction[] = [];
      this.logits(records, (i, z) => {
        const tags: string[] = [];
        for (let t = 0; t < z.length / C; t++) {
          let best = 0;
          for (let c = 1; c < C; c++) if ((z[t * C + c] as number) > (z[t * C + best] as number)) best = c;
          tags.push(this.labels[best] as string);
        }
        out[i] = tags;
      });
      return out;
    }
    const ranking = this.task.kind === 'ranking';
    return this.ranked(records, ranking ? (this.task.k ?? 3) : 1).map((r) =>
      ranking ? r.map((s) => s.label) : (r[0] as Scored).label,
    );
  }

  serialize(): SerializedModel {
    const arrays: SerializedModel['arrays'] = {};
    for (const p of this.net.params()) arrays[p.name] = p.value;
    return {
      meta: {
        kind: 'bilstm',
        bilstm_format: BILSTM_FORMAT,
        model: this.kind,
        config: this.net.config,
        history: this.history,
      },
      arrays,
      strings: { vocabulary: [...this.vocabulary], labels: [...this.labels] },
    };
  }
}

function vocabularyOf(task: TaskDefinition, kind: Kind, train: readonly TaskRecord[]): string[] {
  const words = ['PAD', 'UNK'];
  const seen = new Set(words);
  const add = (w: string) => {
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  };
  for (const r of train) {
    if (kind === 'tagger') for (const w of r.raw[(task as TaggingTask).tokensField] as string[]) add(w);
    else for (const f of task.inputFields) for (const w of bilstmWords(String(r.raw[f] ?? ''))) add(w);
  }
  return words;
}

function labelsOf(task: TaskDefinition, train: readonly TaskRecord[]): string[] {
  if (task.kind === 'tagging') return [...task.tags];
  if (task.kind === 'classification') return [...task.labels];
  // Ranking: the codes seen in training, in sorted order (upstream's label encoder).
  return [...new Set(train.map((r) => String(r.gold)))].sort();
}

/** Whether a task has a BiLSTM: text classification, ranking (one text or a pair) and tagging; not choice or multilabel. */
export function bilstmReason(task: TaskDefinition): string | undefined {
  if (task.kind === 'multilabel')
    return 'a multi-label task: the BiLSTM baseline trains classifiers and taggers only';
  if (task.kind === 'classification' && task.choices)
    return 'a multiple-choice task with no training split: the BiLSTM baseline has nothing to learn from';
  return undefined;
}

/** Trains a task's BiLSTM on `train`, stopping early on `options.dev` where given. */
export function trainBilstm(
  task: TaskDefinition,
  train: readonly TaskRecord[],
  options: BilstmOptions,
): BaselineModel {
  const reason = bilstmReason(task);
  if (reason) throw new Error(`${task.name}: ${reason}`);
  const kind: Kind = task.kind === 'tagging' ? 'tagger' : 'classifier';
  const rng = createRng(options.seed);
  const vocabulary = vocabularyOf(task, kind, train);
  const labels = labelsOf(task, train);
  const config: BiLstmConfig =
    kind === 'tagger'
      ? {
          vocab: vocabulary.length,
          embedding: options.size?.embedding ?? BILSTM_TAGGER.embedding,
          hidden: options.size?.hidden ?? BILSTM_TAGGER.hidden,
          layers: BILSTM_TAGGER.layers,
          outputs: labels.length,
          head: 'per-token',
          paddingIdx: PAD,
          dropout: { ...BILSTM_TAGGER.dropout },
        }
      : {
          vocab: vocabulary.length,
          embedding: options.size?.embedding ?? BILSTM_CLASSIFIER.embedding,
          hidden: options.size?.hidden ?? BILSTM_CLASSIFIER.hidden,
          layers: 1,
          outputs: labels.length,
          head: 'final-states',
        };
  const threads = bilstmThreads(options.threads);
  const net = new BiLstmNet(config);
  net.init(rng, kind === 'tagger' ? { kind: 'normal', std: BILSTM_TAGGER.initStd } : { kind: 'pytorch' });
  net.setThreads(threads);
  try {
    return trainNet(task, kind, net, rng, vocabulary, labels, train, options);
  } finally {
    // The trained model predicts on this thread alone: the second thread ends with training.
    net.close();
  }
}

/** The threads a BiLSTM trains on, given those asked for: refused above 2 (its two directions) or the cores. */
export function bilstmThreads(asked: number | undefined, cores = availableParallelism()): 1 | 2 {
  if (asked === undefined) return cores >= 2 ? 2 : 1;
  if (asked > 2)
    throw new UsageError(
      `--threads ${asked}: the BiLSTM runs at most 2 threads, one per direction of each layer`,
    );
  if (asked > cores)
    throw new UsageError(`--threads ${asked}: this machine has ${cores} core${cores === 1 ? '' : 's'}`);
  return asked === 2 ? 2 : 1;
}

function trainNet(
  task: TaskDefinition,
  kind: Kind,
  net: BiLstmNet,
  rng: Rng,
  vocabulary: string[],
  labels: string[],
  train: readonly TaskRecord[],
  options: BilstmOptions,
): BaselineModel {
  const history: BilstmModel['history'] = [];
  const model = new BilstmModel(task, kind, net, vocabulary, labels, history);
  const adam = new Adam(
    net.params(),
    kind === 'tagger'
      ? { lr: BILSTM_TAGGER.lr, weightDecay: BILSTM_TAGGER.weightDecay }
      : { lr: BILSTM_CLASSIFIER.lr },
  );
  const epochs = options.epochs ?? (kind === 'tagger' ? BILSTM_TAGGER.epochs : BILSTM_CLASSIFIER.epochs);
  const patience = options.patience ?? (kind === 'tagger' ? undefined : BILSTM_CLASSIFIER.patience);
  const dev = options.dev && options.dev.length > 0 ? options.dev : undefined;
  const stopper = earlyStopping(patience);
  for (let epoch = 1; epoch <= epochs; epoch++) {
    const t0 = performance.now();
    const trainLoss = trainEpoch(model, adam, train, kind === 'tagger' ? rng : undefined);
    const devLoss = dev ? model.loss(dev) : undefined;
    const seconds = (performance.now() - t0) / 1000;
    history.push({
      epoch,
      train_loss: trainLoss,
      ...(devLoss !== undefined ? { dev_loss: devLoss } : {}),
      seconds,
    });
    options.progress?.(
      `${task.name}: epoch ${epoch}/${epochs}: train loss ${trainLoss.toFixed(4)}${devLoss !== undefined ? `, dev loss ${devLoss.toFixed(4)}` : ''}, ${seconds.toFixed(1)} s`,
    );
    if (devLoss !== undefined && stopper(devLoss)) {
      options.progress?.(
        `${task.name}: stopped after epoch ${epoch}: the dev loss failed to improve ${patience} times`,
      );
      break;
    }
  }
  return model;
}

/**
 * Upstream's early stopping: a counter of epochs whose dev loss failed to beat the best so far, never reset by a
 * later improvement; training stops when it reaches `patience` (never, where patience is undefined). Returns a
 * function told each epoch's dev loss that answers whether to stop.
 */
export function earlyStopping(patience: number | undefined): (devLoss: number) => boolean {
  let best = Number.POSITIVE_INFINITY;
  let worse = 0;
  return (devLoss) => {
    if (devLoss < best) best = devLoss;
    else worse++;
    return patience !== undefined && worse >= patience;
  };
}

/** One pass over `train` in file order; returns the mean training loss (per record or per token). */
function trainEpoch(
  model: BilstmModel,
  adam: Adam,
  train: readonly TaskRecord[],
  dropout: Rng | undefined,
): number {
  const { net } = model;
  let sum = 0;
  let count = 0;
  for (let i = 0; i < train.length; i += model.batchSize) {
    const batch = train.slice(i, i + model.batchSize);
    const { tokens, steps } = model.encode(batch);
    const tape = net.forward(tokens, batch.length, steps, dropout);
    const rows = model.kind === 'tagger' ? batch.length * steps : batch.length;
    const ce = crossEntropy(tape.logits, rows, model.labels.length, model.targets(batch, steps));
    if (ce.count === 0) continue;
    net.zeroGrad();
    net.backward(tape, ce.grad);
    adam.step();
    sum += ce.loss * ce.count;
    count += ce.count;
  }
  return count > 0 ? sum / count : Number.NaN;
}

/** A saved BiLSTM (./model-io.ts) made whole again. */
export function loadBilstm(task: TaskDefinition, saved: SerializedModel, where: string): BaselineModel {
  const meta = saved.meta as {
    bilstm_format?: unknown;
    model?: unknown;
    config?: BiLstmConfig;
    history?: BilstmModel['history'];
  };
  if (meta.bilstm_format !== BILSTM_FORMAT)
    throw new Error(
      `${where}: BiLSTM format ${String(meta.bilstm_format)}, this release reads ${BILSTM_FORMAT}`,
    );
  if ((meta.model !== 'classifier' && meta.model !== 'tagger') || !meta.config)
    throw new Error(`${where}: meta.model must be classifier or tagger, with meta.config`);
  const net = new BiLstmNet(meta.config);
  for (const p of net.params()) {
    const a = saved.arrays[p.name];
    if (!(a instanceof Float32Array) || a.length !== p.value.length)
      throw new Error(
        `${where}: array ${p.name}: ${p.value.length} f32 values expected, found ${a ? a.length : 'none'}`,
      );
    p.value.set(a);
  }
  const vocabulary = saved.strings.vocabulary ?? [];
  const labels = saved.strings.labels ?? [];
  if (vocabulary.length !== meta.config.vocab || labels.length !== meta.config.outputs)
    throw new Error(`${where}: vocabulary or label list does not match the network's shape`);
  return new BilstmModel(task, meta.model, net, vocabulary, labels, meta.history ?? []);
}
