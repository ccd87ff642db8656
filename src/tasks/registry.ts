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

/**
 * @example getTask('RuMedNLI').labels // ['entailment', 'contradiction', 'neutral']
 */
export function getTask(name: string): TaskDefinition {
  const task = BY_NAME.get(name);
  if (!task)
    throw new UsageError(`unknown task "${name}"; expected one of ${[...BY_NAME.keys()].join(', ')}`);
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
