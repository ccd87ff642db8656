/**
 * The task registry: the one list of tasks. Everything else asks it. The six built-in tasks are definition files
 * in the package's `tasks/` folder, in the schema users write theirs in (src/tasks/definition.ts); tasks defined in
 * files (`--tasks-dir`, `RUMEDBENCH_TASKS`; src/tasks/user.ts) join them at start, and the other definitions
 * shipped there (ECG2Pathology) are read the first time they are named.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../errors.js';
import { compileTask, type TaskFile, taskFromObject } from './definition.js';
import type { ClassificationTask, Split, TaskDefinition } from './types.js';

/** The built-in tasks' names, in the paper's column order. */
export const BUILTIN_NAMES = [
  'RuMedTop3',
  'RuMedSymptomRec',
  'RuMedDaNet',
  'RuMedNLI',
  'RuMedNER',
  'RuMedTest',
] as const;

export type TaskName = (typeof BUILTIN_NAMES)[number];

/** The package's `tasks/` folder (beside src/ and dist/). */
const SHIPPED_TASKS_DIR = fileURLToPath(new URL('../../tasks/', import.meta.url));

/** A built-in task's definition file. */
export const builtinFile = (name: TaskName): string => `${SHIPPED_TASKS_DIR}${name}.json`;

/** Where a task is defined: the file it was loaded from, or a built-in task's file in the package. */
export const definitionFileOf = (task: TaskDefinition): string | undefined =>
  task.source ??
  ((BUILTIN_NAMES as readonly string[]).includes(task.name) ? builtinFile(task.name as TaskName) : undefined);

/**
 * The built-in tasks, read at start. Their files are checked against the schema by the tests
 * (src/tasks/builtin.test.ts), not here: the schema library's import would cost every command tens of milliseconds.
 */
export const BUILTIN_TASKS: readonly TaskDefinition[] = BUILTIN_NAMES.map((name) => {
  const file = builtinFile(name);
  return compileTask(JSON.parse(readFileSync(file, 'utf8')) as TaskFile, file, { builtin: true });
});

/**
 * Whether a split's records and gold are held by the task's host alone: a defined task that lists the split without
 * its file (ECG2Pathology: the signals are PTB-XL's, the gold the MedBench host's). Such a split is scored only on
 * gold given apart (`eval --gold DIR`; a board's imported gold, which stays hidden).
 */
export const heldByHost = (task: TaskDefinition, split: Split): boolean =>
  task.source !== undefined &&
  (task.splits as readonly Split[]).includes(split) &&
  task.files?.[split] === undefined;

/**
 * Every task "all tasks" means: the built-in ones, then those defined in files, in the order they were loaded. A
 * live list: registering a task adds it here.
 */
export const TASKS: TaskDefinition[] = [...BUILTIN_TASKS];

/**
 * Definitions shipped with the package, known by name but read only when named, and never among "all tasks":
 * ECG2Pathology has no data here (the signals are PTB-XL's, the gold is the host's).
 */
const SHIPPED: Readonly<Record<string, string>> = { ECG2Pathology: 'ECG2Pathology.json' };

const BY_NAME = new Map<string, TaskDefinition>(TASKS.map((t) => [t.name, t]));

function shipped(name: string): TaskDefinition | undefined {
  const file = SHIPPED[name];
  if (!file) return undefined;
  const path = `${SHIPPED_TASKS_DIR}${file}`;
  const task = taskFromObject(JSON.parse(readFileSync(path, 'utf8')), path, { optional: true });
  BY_NAME.set(name, task);
  return task;
}

const lookup = (name: string): TaskDefinition | undefined => BY_NAME.get(name) ?? shipped(name);

/**
 * Adds a task defined in a file. A name of a built-in task, or of another file's task, is refused: one name, one
 * definition. Registering the same file twice is harmless.
 */
export function registerTask(task: TaskDefinition): void {
  const known = BY_NAME.get(task.name) ?? (SHIPPED[task.name] ? shipped(task.name) : undefined);
  if (known) {
    if (known.source !== undefined && known.source === task.source) {
      // A shipped definition named on purpose (`--tasks-dir ECG2Pathology`): a task like a user's from now on, on
      // the boards and among all tasks.
      if (known.optional && !task.optional && !TASKS.includes(known)) {
        BY_NAME.set(task.name, task);
        TASKS.push(task);
      }
      return;
    }
    throw new UsageError(
      known.source === undefined || known.optional
        ? `${task.source ?? 'a task definition'}: "${task.name}" is the name of a built-in task; give yours another name`
        : `${task.source ?? 'a task definition'}: "${task.name}" is already defined by ${known.source}`,
    );
  }
  BY_NAME.set(task.name, task);
  if (!task.optional) TASKS.push(task);
}

/** Tasks defined in files that are registered now (for `rumedbench tasks`). */
export const userTasks = (): TaskDefinition[] => TASKS.filter((t) => t.source !== undefined);

/** The file of a shipped definition, by the task's name (`--tasks-dir ECG2Pathology`); undefined for other names. */
export const shippedFile = (name: string): string | undefined =>
  SHIPPED[name] ? `${SHIPPED_TASKS_DIR}${SHIPPED[name]}` : undefined;

/** The shipped definitions, read (for `rumedbench tasks`). */
export const shippedTasks = (): TaskDefinition[] =>
  Object.keys(SHIPPED).map((n) => lookup(n) as TaskDefinition);

/** A multiple-choice task (RuMedTest): options instead of training data. */
export function isChoiceTask(
  task: TaskDefinition,
): task is ClassificationTask & { choices: NonNullable<ClassificationTask['choices']> } {
  return task.kind === 'classification' && task.choices !== undefined;
}

/** Whether a task of this name is known (built in, defined in a loaded file, or shipped). */
export function isTaskName(name: string): name is TaskName {
  return BY_NAME.has(name) || SHIPPED[name] !== undefined;
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
  const scored = [...new Set([...BY_NAME.keys(), ...Object.keys(SHIPPED)])].map((t) => ({
    t,
    d: editDistance(t.toLowerCase(), lower),
  }));
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
  const task = lookup(name);
  if (!task)
    throw new UsageError(
      `unknown task "${name}"${didYouMean(name)}; expected one of ${TASKS.map((t) => t.name).join(', ')}`,
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

export const OVERALL_TASKS: readonly TaskDefinition[] = BUILTIN_TASKS.filter((t) => t.inOverall);

/**
 * The tasks named in `names`, in registry order (built in first, then defined in files), then any optional ones
 * (ECG2Pathology) named: how results list their tasks.
 */
export function tasksIn(names: Iterable<string>): TaskDefinition[] {
  const wanted = new Set(names);
  const listed = TASKS.filter((t) => wanted.has(t.name));
  const extra = [...wanted]
    .filter((n) => !listed.some((t) => t.name === n) && isTaskName(n))
    .map((n) => getTask(n));
  return [...listed, ...extra];
}
