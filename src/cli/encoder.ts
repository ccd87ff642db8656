/** `rumedbench predict-encoder`: a thin wrapper over runFinetuned. */

import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { resolveDataDir } from '../data/paths.js';
import { readUtf8File } from '../data/text.js';
import { UsageError } from '../errors.js';
import { withEngines } from '../optional-deps.js';
import { renderDetails, renderSummary, scoresPaperTask } from '../report/table.js';
import { getTask, isChoiceTask, isTaskName, TASKS } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import { encoderFlags } from './baseline.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

export const PREDICT_ENCODER_FLAGS = {
  model: flag.text(
    '--model <dir|id>',
    'model folder (config.json with id2label, tokenizer.json, onnx/model.onnx)',
    {
      required: true,
    },
  ),
  task: flag.text(
    '--task <task>',
    TASKS.filter((t) => !isChoiceTask(t))
      .map((t) => t.name)
      .join(', '),
    { required: true },
  ),
  split: flag.choice('--split <split>', 'what to answer', ['test', 'private_test', 'both'], {
    default: 'both',
  }),
  data: flag.dataFlag(),
  out: flag.text('--out <dir>', 'output folder for predictions/, submission.zip and summary.json', {
    default: 'encoder-out',
  }),
  ...encoderFlags(''),
  dtype: flag.choice(
    '--dtype <type>',
    'onnx/model.onnx (fp32) or onnx/model_quantized.onnx (q8); model.onnx beside config.json works too',
    ['fp32', 'q8'],
    { default: 'fp32' },
  ),
  threads: flag.count('--threads <n>', 'onnxruntime threads (default: all cores)', { min: 1 }),
  labels: flag.text(
    '--labels <list|file>',
    "the model's labels in output order, where config.json says LABEL_0 …",
  ),
  download: flag.on('--no-download', 'never fetch a hub model'),
  bootstrap: flag.bootstrapFlag('bootstrap resamples for the score'),
  seed: flag.seedFlag(),
  json: flag.jsonFlag('print one JSON object on stdout'),
} satisfies FlagTable;
export type PredictEncoderFlags = FlagsOf<typeof PREDICT_ENCODER_FLAGS>;

/** `--labels`: a file with one label per line, or a comma-separated list. */
function parseLabels(value: string): string[] {
  const text = existsSync(value) ? readUtf8File(value) : value;
  const labels = text
    .split(existsSync(value) ? /\r?\n/ : ',')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  if (labels.length === 0) throw new UsageError(`--labels: no labels in "${value}"`);
  return labels;
}

export async function runPredictEncoder(flags: PredictEncoderFlags, io: CliIo): Promise<number> {
  if (!isTaskName(flags.task)) throw new UsageError(`unknown task "${flags.task}"`);
  const task = getTask(flags.task);
  const splits: Split[] = flags.split === 'both' ? ['test', 'private_test'] : [flags.split];
  const log = io.log;
  // The engines load with the command, not with the program: they are optional, and heavy.
  const { runFinetuned } = await withEngines(
    'rumedbench predict-encoder',
    () => import('../encoders/predict.js'),
  );
  const result = await runFinetuned({
    model: flags.model,
    task,
    splits: splits.filter((s) => (task.splits as readonly Split[]).includes(s)),
    dataDir: resolveDataDir(flags.data),
    outDir: flags.out,
    dtype: flags.dtype,
    allowDownload: flags.download,
    bootstrap: flags.bootstrap,
    seed: flags.seed,
    logger: log,
    ...(flags.labels !== undefined ? { labels: parseLabels(flags.labels) } : {}),
    ...(flags.maxLength !== undefined ? { maxLength: flags.maxLength } : {}),
    ...(flags.batchSize !== undefined ? { batchSize: flags.batchSize } : {}),
    ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
  });
  if (flags.json) {
    io.out(`${JSON.stringify(result)}\n`);
    return EXIT.ok;
  }
  const parts: string[] = [];
  if (result.evaluation)
    parts.push(
      ...(scoresPaperTask(result.evaluation)
        ? [
            renderSummary(result.evaluation, {
              reference: true,
              label: `${basename(flags.model)} (this run)`,
            }),
          ]
        : []),
      renderDetails(result.evaluation),
      `test predictions (RuMedBench format): ${result.predictionsDir}`,
    );
  if (result.submissionZip)
    parts.push(`private-test submission (MedBench platform format): ${result.submissionZip}`);
  io.out(`${parts.join('\n\n')}\n`);
  return EXIT.ok;
}
