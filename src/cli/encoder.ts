/** `rumedbench predict-encoder`: a thin wrapper over runFinetuned. */

import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { resolveDataDir } from '../data/paths.js';
import { readUtf8File } from '../data/text.js';
import type { Dtype } from '../encoders/model.js';
import { runFinetuned } from '../encoders/predict.js';
import { UsageError } from '../errors.js';
import { renderDetails, renderSummary } from '../report/table.js';
import { getTask, isTaskName } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import { type CliIo, EXIT } from './io.js';

export interface PredictEncoderFlags {
  model: string;
  task: string;
  split: 'test' | 'private_test' | 'both';
  data?: string;
  out: string;
  dtype: Dtype;
  maxLength?: number;
  batchSize?: number;
  threads?: number;
  labels?: string;
  download: boolean;
  bootstrap: number;
  seed: number;
  quiet?: boolean;
  json?: boolean;
}

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
  const log = flags.quiet ? { ...io.log, info: () => {} } : io.log;
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
      renderSummary(result.evaluation, { reference: true, label: `${basename(flags.model)} (this run)` }),
      renderDetails(result.evaluation),
      `test predictions (RuMedBench format): ${result.predictionsDir}`,
    );
  if (result.submissionZip)
    parts.push(`private-test submission (MedBench platform format): ${result.submissionZip}`);
  io.out(`${parts.join('\n\n')}\n`);
  return EXIT.ok;
}
