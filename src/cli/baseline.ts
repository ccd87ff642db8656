/** `rumedbench baseline` and `rumedbench predict`: thin wrappers over runBaseline and a loaded model. */
import { readFileSync } from 'node:fs';
import { loadModel } from '../baselines/model-io.js';
import { runBaseline } from '../baselines/run.js';
import type { BaselineMethod } from '../baselines/types.js';
import { parseJsonl } from '../data/jsonl.js';
import { validateRecords } from '../data/load.js';
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import { renderDetails, renderSummary, renderTable } from '../report/table.js';
import { parseTaskList } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { type CliIo, EXIT } from './io.js';

export interface BaselineFlags {
  tasks?: string;
  data?: string;
  out: string;
  save?: string;
  trainSplit: 'train' | 'dev';
  seed: number;
  threads?: number;
  bootstrap: number;
  quiet?: boolean;
  json?: boolean;
}

export async function runBaselineCommand(method: string, flags: BaselineFlags, io: CliIo): Promise<number> {
  if (method !== 'naive' && method !== 'tfidf')
    throw new UsageError(`unknown baseline "${method}"; expected naive or tfidf`);
  const quietLog = { ...io.log, info: () => {} };
  const result = await runBaseline({
    method: method as BaselineMethod,
    tasks: parseTaskList(flags.tasks),
    dataDir: resolveDataDir(flags.data),
    outDir: flags.out,
    trainSplit: flags.trainSplit,
    seed: flags.seed,
    bootstrap: flags.bootstrap,
    logger: flags.quiet ? quietLog : io.log,
    ...(flags.save !== undefined ? { saveDir: flags.save } : {}),
    ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
  });
  if (flags.json) {
    io.out(`${JSON.stringify({ runs: result.runs, evaluation: result.evaluation })}\n`);
    return EXIT.ok;
  }
  const label = `${method} (this run)`;
  const notes = result.runs.map((r) =>
    r.skipped
      ? `${r.task}: skipped: ${r.skipped}`
      : `${r.task}: ${r.trainedOn ? `trained on ${r.trainedOn.split} (${r.trainedOn.records} records)` : 'no training'}, ${r.seconds.toFixed(1)} s`,
  );
  io.out(
    `${[
      renderSummary(result.evaluation, { reference: true, label }),
      renderDetails(result.evaluation),
      notes.join('\n'),
      `test predictions (RuMedBench format): ${result.predictionsDir}`,
      ...(result.submissionZip
        ? [`private-test submission (MedBench platform format): ${result.submissionZip}`]
        : []),
    ].join('\n\n')}\n`,
  );
  return EXIT.ok;
}

export interface PredictFlags {
  model: string;
  task?: string;
  text?: string;
  input?: string;
  top: number;
}

/** Predictions of a saved model: one text (`--text`) or a JSONL file of task records (`--input`), JSONL out. */
export async function runPredict(flags: PredictFlags, io: CliIo): Promise<number> {
  const { model, manifest } = loadModel(flags.model, flags.task);
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
    records = validateRecords(task, 'private_test', file, [...parseJsonl(readFileSync(file, 'utf8'))]);
  }
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
