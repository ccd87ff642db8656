/** `rumedbench baseline` and `rumedbench predict`: thin wrappers over runBaseline (with an encoder where asked) and a loaded model. */

import { basename } from 'node:path';
import { loadModel, type ModelManifest } from '../baselines/model-io.js';
import type { BaselineRunResult } from '../baselines/run.js';
import type { BaselineModel } from '../baselines/types.js';
import { parseJsonl } from '../data/jsonl.js';
import { validateRecords } from '../data/load.js';
import { readUtf8File } from '../data/text.js';
import { BASELINE_FLAGS, BASELINE_METHODS, type BaselineFlags } from '../engine/baseline-flags.js';
import { specOfFlags, strayFlags } from '../engine/flag-table.js';
import { runEvaluation } from '../engine/run.js';
import type { BaselineSpec } from '../engine/spec.js';
import { UsageError } from '../errors.js';
import { renderDetails, renderSummary, renderTable, scoresPaperTask } from '../report/table.js';
import type { TaskRecord } from '../tasks/types.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

export {
  BASELINE_FLAGS,
  type BaselineFlags,
  encoderFlags,
} from '../engine/baseline-flags.js';

/**
 * The run spec the flags of `baseline METHOD` stand for: every flag fills the field BASELINE_FLAGS binds it to, and
 * the spec's own rules (`makeRunSpec`) judge the whole, their problems told in the flags' words. Checked here: a flag
 * its method does not take (the table says which take it), and the model `baseline encoder` cannot run without.
 */
export function baselineSpecOf(method: string, flags: BaselineFlags): BaselineSpec {
  if (!(BASELINE_METHODS as readonly string[]).includes(method))
    throw new UsageError(`unknown baseline "${method}"; expected ${BASELINE_METHODS.join(', ')}`);
  const stray = strayFlags(BASELINE_FLAGS, flags, method);
  if (stray.length > 0) {
    const by = new Map<string, string[]>();
    for (const s of stray) {
      const only = s.only?.join(' or ') ?? 'another method';
      by.set(only, [...(by.get(only) ?? []), s.flag]);
    }
    throw new UsageError(
      [...by].map(([only, names]) => `${names.join(', ')}: only for baseline ${only}`).join('\n'),
    );
  }
  if (method === 'encoder' && flags.model === undefined)
    throw new UsageError(
      flags.endpoint !== undefined
        ? '--endpoint needs --model NAME, the model the server embeds with'
        : 'baseline encoder needs --model DIR_OR_HUB_ID',
    );
  return specOfFlags(BASELINE_FLAGS, flags, {
    kind: 'baseline',
    of: method,
    fixed: { method },
    where: `the flags of baseline ${method}`,
  }) as BaselineSpec;
}

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
