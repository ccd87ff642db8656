/**
 * `rumedbench baseline`: train a baseline on each task's train split, predict the test split (RuMedBench format,
 * scored at once) and the private test split (MedBench platform zip), and optionally save the models.
 */

import { join } from 'node:path';
import { ifPresent, loadSplit } from '../data/load.js';
import { splitPath } from '../data/paths.js';
import type { EmbedStats, VectorSource } from '../encoders/embed.js';

import { type Logger, silentLogger } from '../log.js';
import { buildItemStats, metricsOf, type Prediction } from '../metrics/item-stats.js';
import { RunFolderWriter } from '../scoring/formats.js';
import { writeRunSummary } from '../scoring/run-log.js';
import { type EvaluationResult, evaluateSubmission } from '../scoring/score.js';
import { isChoiceTask } from '../tasks/registry.js';
import type { Split, TaskDefinition, TaskRecord } from '../tasks/types.js';
import { type BilstmOptions, bilstmReason, trainBilstm } from './bilstm.js';
import { DEFAULT_C, type EncoderRef, encoderRef, trainEncoder } from './encoder.js';
import { saveModel } from './model-io.js';
import { trainNaive } from './naive.js';
import { trainTfidf } from './tfidf.js';
import type { BaselineMethod, BaselineModel, TrainOptions } from './types.js';

export interface BaselineRunOptions {
  method: BaselineMethod;
  /** The encoder of `method: 'encoder'`, shared by every task (the caller opens and closes it). */
  embedder?: VectorSource;
  /** Inverse regularisation of the encoder heads' logistic regression. */
  C?: number;
  tasks: readonly TaskDefinition[];
  dataDir: string;
  /** Gold held apart (`--gold DIR`): the test splits are read without gold, and only the scoring reads this folder. */
  goldDir?: string;
  outDir: string;
  /** Save each task's model under `<saveDir>/<Task>`. */
  saveDir?: string;
  /** Split to train on: `train`, or `dev` where train is missing (RuMedNLI in some mirrors). */
  trainSplit?: 'train' | 'dev';
  seed?: number;
  threads?: number;
  /** The BiLSTM's epochs at most and early-stopping patience (./bilstm.ts; its defaults where absent). */
  epochs?: number;
  patience?: number;
  bootstrap?: number;
  logger?: Logger;
}

export interface TaskRun {
  task: string;
  trainedOn?: { split: Split; records: number };
  seconds: number;
  /** Why the task was skipped, where it was. */
  skipped?: string;
}

export interface BaselineRunResult {
  runs: TaskRun[];
  predictionsDir: string;
  /** The MedBench platform zip of private-test predictions, where any task has a private test. */
  submissionZip?: string;
  /** The encoder of an encoder run: what it was, its settings and how many inputs it embedded. */
  encoder?: EncoderRef & { batchSize: number; C: number; embedding: EmbedStats };
  evaluation: EvaluationResult;
}

export async function trainBaseline(
  method: BaselineMethod,
  task: TaskDefinition,
  train: readonly TaskRecord[],
  options: TrainOptions & { embedder?: VectorSource; C?: number } & BilstmOptions,
): Promise<BaselineModel> {
  if (method === 'naive') return trainNaive(task, train, options.seed);
  if (method === 'tfidf') return trainTfidf(task, train, options);
  if (method === 'bilstm') return trainBilstm(task, train, options);
  if (!options.embedder) throw new Error('the encoder baseline needs an encoder (options.embedder)');
  return trainEncoder(task, train, options.embedder, options);
}

/** Which split a task trains on; undefined when it needs none (multiple choice, naive constant answers). */
function needsTraining(method: BaselineMethod, task: TaskDefinition): boolean {
  if (method === 'naive') return task.kind !== 'classification';
  return !isChoiceTask(task);
}

/** A split of the task, or undefined where the task has no such split or its file is missing. */
function tryLoad(
  task: TaskDefinition,
  split: Split,
  dataDir: string,
  goldApart = false,
): Promise<TaskRecord[] | undefined> {
  if (!(task.splits as readonly Split[]).includes(split)) return Promise.resolve(undefined);
  return ifPresent(loadSplit(task, split, { dataDir, ...(goldApart ? { goldApart } : {}) }));
}

/** Trains one task's baseline, writes its test predictions and hands its private-test ones to the zip. */
async function runTask(
  task: TaskDefinition,
  options: BaselineRunOptions,
  trainSplit: Split,
  seed: number,
  folder: RunFolderWriter,
  log: Logger,
): Promise<TaskRun> {
  const t0 = performance.now();
  let train: TaskRecord[] = [];
  let trainedOn: TaskRun['trainedOn'];
  if (options.method === 'encoder' && task.kind === 'tagging' && options.embedder?.wordVectors === false) {
    const reason = `${options.embedder.info.endpoint ?? 'this source'} gives one vector per text, and ${task.name}'s heads need one per word; run the encoder here for it`;
    log.warn(`${task.name}: ${reason}`);
    return { task: task.name, seconds: 0, skipped: reason };
  }
  const unfit = options.method === 'bilstm' ? bilstmReason(task) : undefined;
  if (unfit) {
    log.warn(`${task.name}: skipped: ${unfit}`);
    return { task: task.name, seconds: 0, skipped: unfit };
  }
  if (needsTraining(options.method, task)) {
    const records = await tryLoad(task, trainSplit, options.dataDir);
    if (!records) {
      const reason = `${splitPath(options.dataDir, task, trainSplit)} is missing${trainSplit === 'train' && task.splits.includes('dev') ? ' (--train-split dev trains on dev instead, reported as such)' : ''}`;
      log.warn(`${task.name}: ${reason}`);
      return { task: task.name, seconds: 0, skipped: reason };
    }
    train = records;
    trainedOn = { split: trainSplit, records: records.length };
    log.info(
      `${task.name}: training the ${options.method} baseline on ${trainSplit} (${records.length} records)`,
    );
  }
  // The BiLSTM stops early on dev (upstream's rule); the other baselines only report it after training.
  const devForTraining =
    options.method === 'bilstm' && trainSplit !== 'dev'
      ? await tryLoad(task, 'dev', options.dataDir)
      : undefined;
  const model = await trainBaseline(options.method, task, train, {
    seed,
    ...(devForTraining ? { dev: devForTraining } : {}),
    ...(options.epochs !== undefined ? { epochs: options.epochs } : {}),
    ...(options.patience !== undefined ? { patience: options.patience } : {}),
    ...(options.embedder ? { embedder: options.embedder } : {}),
    ...(options.C !== undefined ? { C: options.C } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    progress: (line) => log.info(line),
  });
  if (options.saveDir)
    saveModel(join(options.saveDir, task.name), model, trainedOn ?? { split: 'none', records: 0 });

  if (trainSplit !== 'dev') {
    const dev = await tryLoad(task, 'dev', options.dataDir);
    if (dev) {
      await model.prepare?.(dev, `${task.name} dev`);
      const r = scoreRecords(task, dev, model);
      log.info(
        `${task.name}: dev ${Object.entries(r)
          .map(([m, v]) => `${m} ${v.toFixed(2)}`)
          .join(', ')}`,
      );
    }
  }
  const test = await tryLoad(task, 'test', options.dataDir, options.goldDir !== undefined);
  if (test) {
    await model.prepare?.(test, `${task.name} test`);
    const predictions = model.predict(test);
    folder.writeTest(
      task,
      test.map((r, i) => ({ id: r.id, gold: r.gold, prediction: predictions[i] ?? null })),
    );
  }
  const priv = await tryLoad(task, 'private_test', options.dataDir, options.goldDir !== undefined);
  if (priv) {
    await model.prepare?.(priv, `${task.name} private_test`);
    const predictions = model.predict(priv);
    folder.addPrivate(
      task,
      priv.map((r, i) => ({ id: r.id, prediction: predictions[i] ?? null })),
    );
  }
  return {
    task: task.name,
    ...(trainedOn ? { trainedOn } : {}),
    seconds: (performance.now() - t0) / 1000,
  };
}

export async function runBaseline(options: BaselineRunOptions): Promise<BaselineRunResult> {
  const log = options.logger ?? silentLogger;
  const seed = options.seed ?? 0;
  const trainSplit = options.trainSplit ?? 'train';
  const folder = new RunFolderWriter(options.outDir);
  const { predictionsDir } = folder;
  const runs: TaskRun[] = [];

  // One task at a time, each in a call of its own: when it returns, its model, matrix and vocabulary are garbage.
  // (Inside one loop of this async function, the suspended frame kept the previous task's model alive while the
  // next one trained: three tasks peaked at 1,150 MB instead of the 800 MB of the largest alone.)
  for (const task of options.tasks) runs.push(await runTask(task, options, trainSplit, seed, folder, log));
  const submissionZip = folder.finish();
  const evaluation = await evaluateSubmission(predictionsDir, {
    dataDir: options.dataDir,
    ...(options.goldDir !== undefined ? { goldDir: options.goldDir } : {}),
    ...(options.bootstrap !== undefined ? { bootstrap: options.bootstrap } : {}),
    seed,
  });
  const encoder = options.embedder
    ? {
        ...encoderRef(options.embedder),
        batchSize: options.embedder.batchSize,
        C: options.C ?? DEFAULT_C,
        embedding: options.embedder.stats,
      }
    : undefined;
  writeRunSummary(
    options.outDir,
    encoder ? { kind: 'encoder', runs, encoder, evaluation } : { kind: 'baseline', runs, evaluation },
  );
  return {
    runs,
    predictionsDir,
    ...(submissionZip ? { submissionZip } : {}),
    ...(encoder ? { encoder } : {}),
    evaluation,
  };
}

/** The task's metrics on records with gold, without the bootstrap (for dev-set progress lines). */
function scoreRecords(
  task: TaskDefinition,
  records: readonly TaskRecord[],
  model: BaselineModel,
): Record<string, number> {
  const predictions = model.predict(records);
  const stats = buildItemStats(
    task,
    records.map((r, i) => ({
      id: r.id,
      gold: r.gold as Prediction,
      prediction: predictions[i] as Prediction,
    })),
  );
  return metricsOf(stats);
}
