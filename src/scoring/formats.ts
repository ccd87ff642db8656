/**
 * Writing predictions in the two formats `eval` reads: RuMedBench (upstream `code/*\/out`: id, gold, `prediction`) and
 * the MedBench platform (id, and the gold field carrying the answer). `null` is "no answer".
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { toJsonl } from '../data/jsonl.js';
import type { Prediction } from '../metrics/item-stats.js';
import type { TaskDefinition } from '../tasks/types.js';

/** The date stamped on submission.zip's entries (the zip format cannot say 1970). */
const ZIP_DATE = new Date('2000-01-01T00:00:00Z');

// fflate loads when a zip is first written, not with the run loop that imports this module: a queue worker's start
// does not pay for it (#64).
const load = createRequire(import.meta.url);
const fflate = () => load('fflate') as typeof import('fflate');

export interface Answered {
  id: string;
  gold?: Prediction | undefined;
  prediction: Prediction | null;
}

/** One JSONL line per item, RuMedBench format. */
export function rumedbenchLines(task: TaskDefinition, items: readonly Answered[]): Record<string, unknown>[] {
  return items.map((it) => ({ [task.idField]: it.id, [task.goldField]: it.gold, prediction: it.prediction }));
}

/** One JSONL line per item, MedBench platform format. */
export function platformLines(task: TaskDefinition, items: readonly Answered[]): Record<string, unknown>[] {
  return items.map((it) => ({ [task.idField]: it.id, [task.goldField]: it.prediction }));
}

/**
 * A run's output folder, as every run writes it (baselines, encoders, LLMs): `predictions/<Task>.jsonl` in the
 * RuMedBench format for test sets (what `eval` scores) and `submission.zip` in the platform format for private tests.
 * The run owns both: files of an earlier run are removed when it starts, so they are never scored as this one's.
 */
export class RunFolderWriter {
  readonly predictionsDir: string;
  private readonly zipFiles: Record<string, Uint8Array> = {};

  constructor(readonly outDir: string) {
    this.predictionsDir = join(outDir, 'predictions');
    rmSync(this.predictionsDir, { recursive: true, force: true });
    rmSync(join(outDir, 'submission.zip'), { force: true });
    mkdirSync(this.predictionsDir, { recursive: true });
  }

  /** predictions/<Task>.jsonl, with the gold each item carries. */
  writeTest(task: TaskDefinition, items: readonly Answered[]): void {
    writeFileSync(join(this.predictionsDir, `${task.name}.jsonl`), toJsonl(rumedbenchLines(task, items)));
  }

  /** The task's private-test answers, for the zip `finish` writes. */
  addPrivate(task: TaskDefinition, items: readonly Answered[]): void {
    this.zipFiles[`${task.name}.jsonl`] = fflate().strToU8(toJsonl(platformLines(task, items)));
  }

  /** Writes submission.zip where any private test was answered; returns its path. */
  finish(): string | undefined {
    if (Object.keys(this.zipFiles).length === 0) return undefined;
    const zip = join(this.outDir, 'submission.zip');
    // A fixed date in every entry: the same answers make the same zip, byte for byte (a merge of shards, a rerun).
    writeFileSync(zip, fflate().zipSync(this.zipFiles, { mtime: ZIP_DATE }));
    return zip;
  }
}
