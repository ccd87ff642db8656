/**
 * The task registry: the one list of tasks. Everything else asks it, so adding a task is one module plus its
 * line here.
 */
import { UsageError } from '../errors.js';
import { rumedDaNet } from './rumed-danet.js';
import { rumedNer } from './rumed-ner.js';
import { rumedNli } from './rumed-nli.js';
import { rumedSymptomRec } from './rumed-symptom-rec.js';
import { rumedTest } from './rumed-test.js';
import { rumedTop3 } from './rumed-top3.js';
import type { ClassificationTask, TaskDefinition } from './types.js';

/** In the paper's column order. */
export const TASKS = [rumedTop3, rumedSymptomRec, rumedDaNet, rumedNli, rumedNer, rumedTest] as const;

export type TaskName = (typeof TASKS)[number]['name'];

/** Tasks of the MedBench platform that are not text tasks and are not scored here (named so they are not "unknown"). */
export const PLATFORM_ONLY_TASKS: readonly string[] = ['ECG2Pathology'];

const BY_NAME = new Map<string, TaskDefinition>(TASKS.map((t) => [t.name, t]));

/** A multiple-choice task (RuMedTest): options instead of training data. */
export function isChoiceTask(
  task: TaskDefinition,
): task is ClassificationTask & { choices: NonNullable<ClassificationTask['choices']> } {
  return task.kind === 'classification' && task.choices !== undefined;
}

export function isTaskName(name: string): name is TaskName {
  return BY_NAME.has(name);
}

/** Edits (insertions, deletions, substitutions) between two short strings. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = row;
  }
  return prev[b.length] as number;
}

/** The task a near-miss name meant (another case, or one or two letters off), if one is nearest. */
export function nearestTask(name: string): string | undefined {
  const lower = name.toLowerCase();
  const scored = [...BY_NAME.keys()].map((t) => ({ t, d: editDistance(t.toLowerCase(), lower) }));
  const best = Math.min(...scored.map((x) => x.d));
  const near = scored.filter((x) => x.d === best);
  return best <= 2 && near.length === 1 ? near[0]?.t : undefined;
}

/** `; did you mean X?` for a near-miss task name, or nothing. */
export const didYouMean = (name: string): string => {
  const near = nearestTask(name);
  return near ? `; did you mean ${near}?` : '';
};

/**
 * @example getTask('RuMedNLI').labels // ['entailment', 'contradiction', 'neutral']
 */
export function getTask(name: string): TaskDefinition {
  const task = BY_NAME.get(name);
  if (!task)
    throw new UsageError(
      `unknown task "${name}"${didYouMean(name)}; expected one of ${[...BY_NAME.keys()].join(', ')}`,
    );
  return task;
}

/** Parses a comma-separated `--tasks` value; undefined or empty means all tasks. */
export function parseTaskList(value: string | undefined): TaskDefinition[] {
  if (value === undefined || value.trim() === '') return [...TASKS];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(getTask);
}

export const OVERALL_TASKS: readonly TaskDefinition[] = TASKS.filter((t) => t.inOverall);
