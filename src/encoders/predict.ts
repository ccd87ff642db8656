/**
 * `rumedbench predict-encoder`: a fine-tuned encoder exported to ONNX (a sequence-classification model for
 * RuMedTop3, RuMedSymptomRec, RuMedDaNet and RuMedNLI; a token-classification model for RuMedNER) answers the
 * task's test and private test. Its labels come from config.json's `id2label` (or `--labels`, in output order) and
 * must be the task's label space: anything else is refused with the difference listed, before any text is run.
 * Ranking tasks are ranked by logit (top three); classification takes the best logit; tagging takes each word's
 * first piece, as the model was trained (`label_all_tokens=False`).
 */
import { ifPresent, loadSplit, readGoldLabels } from '../data/load.js';
import { ModelError } from '../errors.js';
import { type Logger, silentLogger } from '../log.js';
import type { Prediction } from '../metrics/item-stats.js';
import { RunFolderWriter } from '../scoring/formats.js';
import { writeRunSummary } from '../scoring/run-log.js';
import { type EvaluationResult, evaluateSubmission } from '../scoring/score.js';
import { isChoiceTask } from '../tasks/registry.js';
import type { Split, TaskDefinition, TaskRecord } from '../tasks/types.js';
import { taskInput } from './inputs.js';
import { type Dtype, Encoder, type LoadEncoderOptions } from './model.js';

export interface FinetunedOptions {
  model: string;
  task: TaskDefinition;
  splits: readonly Split[];
  dataDir: string;
  outDir: string;
  dtype?: Dtype;
  maxLength?: number;
  batchSize?: number;
  threads?: number;
  allowDownload?: boolean;
  /** The model's labels in output order, where config.json's id2label does not name them (LABEL_0 …). */
  labels?: readonly string[];
  bootstrap?: number;
  seed?: number;
  logger?: Logger;
}

export interface FinetunedResult {
  model: { model: string; sha256: string; dtype: Dtype; labels: string[] };
  predictionsDir: string;
  submissionZip?: string;
  /** Per split, the records answered. */
  answered: Partial<Record<Split, number>>;
  seconds: number;
  /** The test split's score; absent when only the private test was answered (its gold is closed). */
  evaluation?: EvaluationResult;
}

/** The labels of config.json's id2label, by output index. */
export function modelLabels(config: Record<string, unknown>, source: string): string[] {
  const id2label = config.id2label as Record<string, unknown> | undefined;
  if (!id2label || typeof id2label !== 'object')
    throw new ModelError(
      source,
      'config.json has no id2label: give the labels in output order with --labels',
    );
  const n = Object.keys(id2label).length;
  return Array.from({ length: n }, (_, i) => {
    const label = id2label[String(i)];
    if (typeof label !== 'string')
      throw new ModelError(
        source,
        `config.json id2label has no label for output ${i} (ids must run 0…${n - 1})`,
      );
    return label;
  });
}

/**
 * Why `labels` is not `task`'s label space, or undefined where it is. Ranking tasks have an open label space: each
 * label must have the task's form; labels that train never uses are allowed (the caller says how many).
 */
export function labelMismatch(task: TaskDefinition, labels: readonly string[]): string | undefined {
  const dupes = labels.filter((l, i) => labels.indexOf(l) !== i);
  if (dupes.length > 0) return `labels repeat: ${[...new Set(dupes)].join(', ')}`;
  const generic = labels.length > 0 && labels.every((l) => /^LABEL_\d+$/.test(l));
  const hint = generic ? ' (config.json names no labels: give them in output order with --labels)' : '';
  if (task.kind === 'ranking') {
    const bad = labels.filter((l) => !task.labelPattern.test(l));
    if (bad.length === 0) return undefined;
    return `${bad.length} of ${labels.length} label(s) are not ${task.labelDescription}: ${bad.slice(0, 10).join(', ')}${bad.length > 10 ? ', …' : ''}${hint}`;
  }
  if (isChoiceTask(task))
    return `${task.name} is a multiple-choice exam with no training data; predict-encoder runs classification heads (use \`baseline encoder\` or \`llm\`)`;
  if (task.kind === 'multilabel')
    return `${task.name} is multi-label; predict-encoder runs single-label heads (use \`baseline encoder\`, which trains one head per class)`;
  const expected = task.kind === 'tagging' ? task.tags : task.labels;
  const missing = expected.filter((l) => !labels.includes(l));
  const unexpected = labels.filter((l) => !expected.includes(l));
  if (missing.length === 0 && unexpected.length === 0) return undefined;
  return [
    `the model's labels are not ${task.name}'s`,
    missing.length > 0 ? `missing: ${missing.join(', ')}` : '',
    unexpected.length > 0 ? `not in the task: ${unexpected.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('; ')
    .concat(hint);
}

function argmax(data: Float32Array, from: number, n: number): number {
  let best = 0;
  for (let k = 1; k < n; k++) if ((data[from + k] as number) > (data[from + best] as number)) best = k;
  return best;
}

function ranked(data: Float32Array, from: number, labels: readonly string[], top: number): string[] {
  return Array.from(labels.keys())
    .sort((a, b) => (data[from + b] as number) - (data[from + a] as number) || a - b)
    .slice(0, top)
    .map((k) => labels[k] as string);
}

/** Predictions of a fine-tuned model for `records`, one per record in the task's answer shape. */
export async function predictFinetuned(
  encoder: Encoder,
  task: TaskDefinition,
  labels: readonly string[],
  records: readonly TaskRecord[],
  options: { maxLength: number; batchSize: number },
): Promise<Prediction[]> {
  const L = labels.length;
  const out: Prediction[] = new Array(records.length);
  if (task.kind === 'tagging') {
    const sentences = records.map((r) => r.raw[task.tokensField] as string[]);
    const tags = sentences.map((words) => new Array<string>(words.length));
    await encoder.runWords(
      sentences,
      options.maxLength,
      { batchSize: options.batchSize, output: 'logits' },
      (sentence, word, batch, offset) => {
        if (batch.dims.length !== 3 || batch.dims[2] !== L)
          throw new ModelError(
            encoder.info.dir,
            `logits are [${batch.dims.join(', ')}]; a token classifier over ${L} labels gives [batch, length, ${L}]`,
          );
        (tags[sentence] as string[])[word] = labels[argmax(batch.data, offset, L)] as string;
      },
    );
    tags.forEach((t, i) => {
      out[i] = t;
    });
    return out;
  }
  const inputs = records.map((r) => taskInput(task, r));
  await encoder.runTexts(
    inputs,
    options.maxLength,
    { batchSize: options.batchSize, output: 'logits' },
    (batch) => {
      if (batch.dims.length !== 2 || batch.dims[1] !== L)
        throw new ModelError(
          encoder.info.dir,
          `logits are [${batch.dims.join(', ')}]; a sequence classifier over ${L} labels gives [batch, ${L}]`,
        );
      batch.rows.forEach((r, b) => {
        out[r] =
          task.kind === 'ranking'
            ? ranked(batch.data, b * L, labels, 3)
            : (labels[argmax(batch.data, b * L, L)] as string);
      });
    },
  );
  return out;
}

export async function runFinetuned(options: FinetunedOptions): Promise<FinetunedResult> {
  const log = options.logger ?? silentLogger;
  const { task } = options;
  const loadOptions: LoadEncoderOptions = {
    dtype: options.dtype ?? 'fp32',
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.allowDownload !== undefined ? { allowDownload: options.allowDownload } : {}),
  };
  const started = performance.now();
  const encoder = await Encoder.load(options.model, loadOptions);
  try {
    const labels = options.labels ? [...options.labels] : modelLabels(encoder.info.config, encoder.info.dir);
    const mismatch = labelMismatch(task, labels);
    if (mismatch) throw new ModelError(options.model, mismatch);
    if (!encoder.outputNames.includes('logits'))
      throw new ModelError(
        encoder.info.dir,
        `no "logits" output (outputs: ${encoder.outputNames.join(', ')}): export the model with its classification head`,
      );
    if (task.kind === 'ranking') {
      const train = await ifPresent(readGoldLabels(task, 'train', { dataDir: options.dataDir }));
      const unseen = train ? labels.filter((l) => !train.has(l)).length : 0;
      if (unseen > 0)
        log.warn(`${unseen} of the model's ${labels.length} labels never occur in ${task.name} train`);
    }
    const maxLength = Math.min(options.maxLength ?? encoder.info.maxPositions, encoder.info.maxPositions);
    const batchSize = options.batchSize ?? 16;
    const folder = new RunFolderWriter(options.outDir);
    const { predictionsDir } = folder;
    const answered: FinetunedResult['answered'] = {};
    for (const split of options.splits) {
      if (!(task.splits as readonly Split[]).includes(split)) {
        log.warn(`${task.name} has no ${split} split`);
        continue;
      }
      const records = await loadSplit(task, split, { dataDir: options.dataDir });
      const t0 = performance.now();
      const predictions = await predictFinetuned(encoder, task, labels, records, { maxLength, batchSize });
      const seconds = (performance.now() - t0) / 1000;
      log.info(
        `${task.name} ${split}: ${records.length} records in ${seconds.toFixed(1)} s (${(records.length / seconds).toFixed(1)}/s)`,
      );
      answered[split] = records.length;
      const items = records.map((r, i) => ({ id: r.id, gold: r.gold, prediction: predictions[i] ?? null }));
      if (split === 'private_test') folder.addPrivate(task, items);
      else folder.writeTest(task, items);
    }
    const submissionZip = folder.finish();
    const evaluation =
      answered.test !== undefined
        ? await evaluateSubmission(predictionsDir, {
            dataDir: options.dataDir,
            ...(options.bootstrap !== undefined ? { bootstrap: options.bootstrap } : {}),
            seed: options.seed ?? 0,
          })
        : undefined;
    const model = { model: options.model, sha256: encoder.info.sha256, dtype: encoder.info.dtype, labels };
    const seconds = (performance.now() - started) / 1000;
    // `runs` in the shape of a baseline run's, so that `rumedbench report` reads this folder as one.
    writeRunSummary(options.outDir, {
      kind: 'finetuned',
      runs: [{ task: task.name, seconds }],
      finetuned: { ...model, answered },
      ...(evaluation ? { evaluation } : {}),
    });
    return {
      model,
      predictionsDir,
      ...(submissionZip ? { submissionZip } : {}),
      answered,
      seconds,
      ...(evaluation ? { evaluation } : {}),
    };
  } finally {
    await encoder.close();
  }
}
