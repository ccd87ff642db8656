/** `rumedbench baseline` and `rumedbench predict`: thin wrappers over runBaseline (with an encoder where asked) and a loaded model. */

import { basename, resolve } from 'node:path';
import { loadModel, type ModelManifest } from '../baselines/model-io.js';
import type { BaselineRunResult } from '../baselines/run.js';
import type { BaselineModel } from '../baselines/types.js';
import { parseJsonl } from '../data/jsonl.js';
import { validateRecords } from '../data/load.js';
import { readUtf8File } from '../data/text.js';
import { runEvaluation } from '../engine/run.js';
import { type BaselineSpec, makeRunSpec, RUN_SPEC_SCHEMA } from '../engine/spec.js';
import { UsageError } from '../errors.js';
import { renderDetails, renderSummary, renderTable, scoresPaperTask } from '../report/table.js';
import { parseTaskList } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

const positive = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} must be a number > 0, got "${v}"`);
  return n;
};

/** Encoder flags of `baseline encoder` and `predict-encoder`; `prefix` says which commands use them. */
export const encoderFlags = (prefix: string) => ({
  dtype: flag.choice(
    '--dtype <type>',
    `${prefix}onnx/model.onnx (fp32) or onnx/model_quantized.onnx (q8); model.onnx beside config.json works too`,
    ['fp32', 'q8'],
  ),
  maxLength: flag.count('--max-length <n>', `${prefix}tokens per input (default: the model's limit)`, {
    min: 4,
  }),
  batchSize: flag.count('--batch-size <n>', `${prefix}inputs per forward pass (default 16)`, { min: 1 }),
});

export const BASELINE_FLAGS = {
  tasks: flag.tasksFlag(),
  data: flag.dataFlag(),
  gold: flag.goldDirFlag(),
  out: flag.text('--out <dir>', 'output folder for predictions/ and submission.zip', {
    default: 'baseline-out',
  }),
  save: flag.text('--save <dir>', 'save each trained model under DIR/<Task>'),
  trainSplit: flag.choice('--train-split <split>', 'split to train on', ['train', 'dev'], {
    default: 'train',
  }),
  seed: flag.seedFlag('seed'),
  threads: flag.count(
    '--threads <n>',
    'training threads (default: all cores; bilstm: 1 or 2, default 2 on 2 cores or more)',
    { min: 1 },
  ),
  epochs: flag.count(
    '--epochs <n>',
    'bilstm: epochs at most (default: 50 for classifiers, 20 for the tagger)',
    {
      min: 1,
    },
  ),
  patience: flag.count(
    '--patience <n>',
    'bilstm: stop once the dev loss failed to improve N times in all (default: 3 for classifiers; the tagger runs every epoch)',
    { min: 1 },
  ),
  bootstrap: flag.bootstrapFlag('bootstrap resamples for the score'),
  model: flag.text(
    '--model <dir|id>',
    'encoder: model folder (config.json, tokenizer.json, onnx/model.onnx) or hub id',
  ),
  pooling: flag.choice('--pooling <how>', 'encoder: sentence vector', ['mean', 'cls']),
  endpoint: flag.text(
    '--endpoint <url>',
    'encoder: sentence vectors from this OpenAI-compatible /v1/embeddings API (vLLM, TEI, Ollama) for --model NAME',
  ),
  apiKeyEnv: flag.text('--api-key-env <name>', "encoder: environment variable that holds the endpoint's key"),
  maxDimensions: flag.count(
    '--max-dimensions <n>',
    'encoder --endpoint: dimensions of one vector at most; a wider answer is refused unread (default 16384)',
    { min: 1 },
  ),
  ...encoderFlags('encoder: '),
  C: flag.custom('--C <c>', 'encoder: inverse regularisation of the heads (default 1)', positive('--C')),
  cache: flag.textOrOff(
    '--cache <dir>',
    'encoder: embedding cache folder (default: the user cache folder)',
    'encoder: embed everything afresh and keep nothing',
  ),
  download: flag.on('--no-download', 'encoder: never fetch a hub model'),
  json: flag.jsonFlag('print one JSON object (runs and evaluation) on stdout'),
} satisfies FlagTable;
export type BaselineFlags = FlagsOf<typeof BASELINE_FLAGS>;

const ENCODER_FLAGS = [
  'model',
  'pooling',
  'dtype',
  'maxLength',
  'batchSize',
  'C',
  'endpoint',
  'apiKeyEnv',
  'maxDimensions',
] as const;

/** The run spec the flags of `baseline METHOD` stand for. */
export function baselineSpecOf(method: string, flags: BaselineFlags): BaselineSpec {
  if (method !== 'naive' && method !== 'tfidf' && method !== 'encoder' && method !== 'bilstm')
    throw new UsageError(`unknown baseline "${method}"; expected naive, tfidf, encoder or bilstm`);
  if (method !== 'bilstm') {
    const stray = (['epochs', 'patience'] as const).filter((f) => flags[f] !== undefined);
    if (stray.length > 0) throw new UsageError(`${stray.map(flagName).join(', ')}: only for baseline bilstm`);
  }
  if (method !== 'encoder') {
    const stray = ENCODER_FLAGS.filter((f) => flags[f] !== undefined);
    if (stray.length > 0)
      throw new UsageError(`${stray.map(flagName).join(', ')}: only for baseline encoder`);
  } else if (!flags.model)
    throw new UsageError(
      flags.endpoint !== undefined
        ? '--endpoint needs --model NAME, the model the server embeds with'
        : 'baseline encoder needs --model DIR_OR_HUB_ID',
    );
  if (method === 'encoder' && flags.endpoint === undefined && flags.maxDimensions !== undefined)
    throw new UsageError('--max-dimensions: for an embeddings --endpoint, not a model run here');
  if (method === 'encoder' && flags.endpoint !== undefined) {
    const local = (['pooling', 'dtype', 'maxLength', 'save'] as const).filter((f) => flags[f] !== undefined);
    if (local.length > 0 || flags.download === false)
      throw new UsageError(
        `${[...local.map(flagName), ...(flags.download === false ? ['--no-download'] : [])].join(', ')}: for a model run here, not with --endpoint (the server pools, and its heads cannot be reopened without it)`,
      );
  }
  return makeRunSpec(
    {
      schema: RUN_SPEC_SCHEMA,
      kind: 'baseline',
      method,
      ...(method === 'encoder'
        ? {
            encoder: {
              model: flags.model as string,
              ...(flags.endpoint !== undefined ? { endpoint: flags.endpoint } : {}),
              ...(flags.apiKeyEnv !== undefined ? { api_key_env: flags.apiKeyEnv } : {}),
              ...(flags.maxDimensions !== undefined ? { max_dimensions: flags.maxDimensions } : {}),
              ...(flags.pooling !== undefined ? { pooling: flags.pooling } : {}),
              ...(flags.dtype !== undefined ? { dtype: flags.dtype } : {}),
              ...(flags.maxLength !== undefined ? { max_length: flags.maxLength } : {}),
              ...(flags.batchSize !== undefined ? { batch_size: flags.batchSize } : {}),
              ...(flags.C !== undefined ? { C: flags.C } : {}),
              ...(flags.cache !== undefined
                ? { cache: flags.cache === false ? false : resolve(flags.cache) }
                : {}),
              download: flags.download,
            },
          }
        : {}),
      tasks: parseTaskList(flags.tasks).map((t) => t.name),
      ...(flags.data !== undefined ? { data: resolve(flags.data) } : {}),
      ...(flags.gold !== undefined ? { gold: resolve(flags.gold) } : {}),
      train_split: flags.trainSplit,
      seed: flags.seed,
      ...(flags.epochs !== undefined ? { epochs: flags.epochs } : {}),
      ...(flags.patience !== undefined ? { patience: flags.patience } : {}),
      ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
      bootstrap: flags.bootstrap,
      ...(flags.save !== undefined ? { save: resolve(flags.save) } : {}),
    },
    `the flags of baseline ${method}`,
  ) as BaselineSpec;
}

const flagName = (f: string) => `--${f.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

export async function runBaselineCommand(method: string, flags: BaselineFlags, io: CliIo): Promise<number> {
  const spec = baselineSpecOf(method, flags);
  const outcome = await runEvaluation(spec, { out: flags.out, log: io.log });
  if (outcome.kind === 'baseline') printBaseline(outcome.result, spec, flags.json, io);
  return EXIT.ok;
}

/** A baseline run's outcome on stdout: the paper's table with this run's row, or one JSON object. */
export function printBaseline(result: BaselineRunResult, spec: BaselineSpec, json: boolean, io: CliIo): void {
  if (json) {
    io.out(
      `${JSON.stringify({ runs: result.runs, ...(result.encoder ? { encoder: result.encoder } : {}), evaluation: result.evaluation })}\n`,
    );
    return;
  }
  const label = result.encoder ? `${basename(result.encoder.model)} (this run)` : `${spec.method} (this run)`;
  const embedded = result.encoder
    ? [
        `embedded ${result.encoder.embedding.embedded} input(s) in ${result.encoder.embedding.seconds.toFixed(1)} s, ${result.encoder.embedding.fromCache} from the cache`,
      ]
    : [];
  const notes = [
    ...embedded,
    ...result.runs.map((r) =>
      r.skipped
        ? `${r.task}: skipped: ${r.skipped}`
        : `${r.task}: ${r.trainedOn ? `trained on ${r.trainedOn.split} (${r.trainedOn.records} records)` : 'no training'}, ${r.seconds.toFixed(1)} s`,
    ),
  ];
  io.out(
    `${[
      ...(scoresPaperTask(result.evaluation)
        ? [renderSummary(result.evaluation, { reference: true, label })]
        : []),
      renderDetails(result.evaluation),
      notes.join('\n'),
      `test predictions (RuMedBench format): ${result.predictionsDir}`,
      ...(result.submissionZip
        ? [`private-test submission (MedBench platform format): ${result.submissionZip}`]
        : []),
    ].join('\n\n')}\n`,
  );
}

export const PREDICT_FLAGS = {
  model: flag.text(
    '--model <dir>',
    'a task folder written by `baseline --save` (encoder heads find their encoder)',
    {
      required: true,
    },
  ),
  task: flag.text('--task <task>', 'the task the model must be for'),
  text: flag.text('--text <text>', 'one input text (tasks with one input field)'),
  input: flag.text('--input <file>', 'JSONL records of the task (its input fields and id)'),
  top: flag.count('--top <n>', 'labels to show', { min: 1, default: 3 }),
} satisfies FlagTable;
export type PredictFlags = FlagsOf<typeof PREDICT_FLAGS>;

/** Predictions of a saved model: one text (`--text`) or a JSONL file of task records (`--input`), JSONL out. */
export async function runPredict(flags: PredictFlags, io: CliIo): Promise<number> {
  const { model, manifest } = loadModel(flags.model, flags.task);
  try {
    return await predictWith(model, manifest, flags, io);
  } finally {
    await model.close?.();
  }
}

async function predictWith(
  model: BaselineModel,
  manifest: ModelManifest,
  flags: PredictFlags,
  io: CliIo,
): Promise<number> {
  const task = model.task;
  if ((flags.text === undefined) === (flags.input === undefined))
    throw new UsageError('give either --text or --input FILE');
  let records: TaskRecord[];
  if (flags.text !== undefined) {
    if (task.inputFields.length !== 1) {
      throw new UsageError(
        `${task.name} reads ${task.inputFields.join(', ')}; give its records as JSONL with --input`,
      );
    }
    const field = task.inputFields[0] as string;
    // RuMedNER reads tokens: split words and punctuation as the RuDReC corpus does.
    const value =
      task.kind === 'tagging' ? (flags.text.match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu) ?? []) : flags.text;
    records = [{ id: 'text', gold: undefined, raw: { [field]: value }, line: 1 }];
  } else {
    const file = flags.input as string;
    records = validateRecords(task, 'private_test', file, [...parseJsonl(readUtf8File(file))]);
  }
  await model.prepare?.(records, 'input');
  if (flags.text !== undefined && model.rank) {
    const ranked = model.rank(records, flags.top)[0] ?? [];
    io.out(
      `${renderTable(
        ['label', model.scoreKind],
        ranked.map((s) => [s.label, s.score.toFixed(4)]),
      )}\n`,
    );
    return EXIT.ok;
  }
  const predictions = model.predict(records);
  const ranked = model.rank?.(records, flags.top);
  records.forEach((r, i) => {
    const out: Record<string, unknown> = { [task.idField]: r.id, prediction: predictions[i] };
    if (task.kind === 'tagging') out[task.tokensField] = r.raw[task.tokensField];
    if (ranked) out.scores = ranked[i]?.map((s) => ({ label: s.label, [model.scoreKind]: s.score }));
    io.out(`${JSON.stringify(out)}\n`);
  });
  io.log.debug(`model ${flags.model}: ${manifest.method} for ${manifest.task}`);
  return EXIT.ok;
}
