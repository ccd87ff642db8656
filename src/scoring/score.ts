/**
 * Scoring a submission: read it, validate each task file, compute the metrics of upstream `code/eval.py`, their
 * bootstrap intervals and a per-label breakdown, and assemble the versioned result that `--json` prints.
 */
import { bootstrapIntervals, type Interval } from '../metrics/bootstrap.js';
import {
  buildItemStats,
  type ItemStats,
  type MetricValues,
  mean,
  metricsOf,
  taskScore,
} from '../metrics/item-stats.js';
import { getTask, isTaskName, OVERALL_TASKS, TASKS, tasksIn } from '../tasks/registry.js';
import type { MetricName, Split } from '../tasks/types.js';
import { VERSION } from '../version.js';
import { type Breakdown, breakdown } from './breakdown.js';
import type { SubmissionIssue } from './issues.js';
import { ReferenceLoader } from './reference.js';
import { readSubmission, type Submission } from './submission.js';
import { type SubmissionFormat, type ValidatedTask, validateTaskFile } from './validate.js';

/** Bumped whenever a field of {@link EvaluationResult} changes meaning or disappears. */
export const RESULT_SCHEMA_VERSION = 1;

export interface EvaluateOptions {
  /** The data folder (`--data`); see `resolveDataDir`. */
  dataDir?: string;
  /** Which split the submission answers; `test` by default. */
  split?: Split;
  /** Bootstrap resamples (`--bootstrap`); 1000 by default, 0 for none. */
  bootstrap?: number;
  seed?: number;
  /**
   * Score RuMedBench-format files on the gold they carry, without checking ids against the data split (what
   * upstream `code/eval.py` does). Needed for prediction files made on an earlier release of the data.
   */
  fileGold?: boolean;
  /**
   * A folder of gold files (`--gold DIR`: `<Task>.jsonl` with ids and the gold field) that is the gold of the split
   * scored, for tasks whose data carries none (a closed test's host, ECG2Pathology).
   */
  goldDir?: string;
  /** Share loaded data between several evaluations. */
  references?: ReferenceLoader;
  /** Only these tasks' files are read and checked (`rank --tasks`); a submission's other files are left alone. */
  tasks?: readonly string[];
}

/**
 * The reference loader the options ask for: the one given, else one over `--data` and `--gold` that keeps only what
 * scoring reads of each record.
 */
export async function referencesFor(options: EvaluateOptions): Promise<ReferenceLoader> {
  if (options.references) return options.references;
  // Loaded only for `--gold`.
  const gold =
    options.goldDir !== undefined
      ? await (await import('./gold-dir.js')).readGoldDir(options.goldDir)
      : undefined;
  return new ReferenceLoader(options.dataDir, { scoringOnly: true, ...(gold ? { gold } : {}) });
}

export interface TaskResult {
  n: number;
  /** Items answered with null (an unreadable model reply), scored as wrong. */
  unanswered: number;
  file: string;
  format: SubmissionFormat;
  /** In percent, 0-100; only the task's own metrics. */
  metrics: MetricValues;
  /** The mean of the task's metrics. */
  score: number;
  ci: Partial<Record<MetricName, Interval>>;
  score_ci: Interval | null;
  breakdown: Breakdown;
}

export interface EvaluationResult {
  schema_version: number;
  rumedbench_version: string;
  source: string;
  split: Split;
  /** Mean of the five public task scores; null unless all five are scored. */
  overall: number | null;
  overall_ci: Interval | null;
  /**
   * MedBench's overall over six tasks, as its table has it since ECG2Pathology: the mean of the five public task
   * scores and ECG2Pathology's (its naive row: 29.53). Present only when all six are scored.
   */
  overall_six?: { score: number; ci: Interval | null };
  tasks: Record<string, TaskResult>;
  /** Tasks present but not scored, with the reason (errors, or no gold for a closed test). */
  unscored: Record<string, string>;
  /** Tasks with this split that the submission does not include. */
  missing_tasks: string[];
  bootstrap: { resamples: number; seed: number; level: number };
  errors: SubmissionIssue[];
  warnings: SubmissionIssue[];
}

/** Validated task files plus the submission-level issues. */
export interface ValidatedSubmission {
  source: string;
  split: Split;
  tasks: ValidatedTask[];
  issues: SubmissionIssue[];
}

export async function validateSubmission(
  path: string,
  options: EvaluateOptions = {},
): Promise<ValidatedSubmission> {
  return validateRead(
    await readSubmission(path, {
      ...(options.split !== undefined ? { split: options.split } : {}),
      ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
    }),
    options,
  );
}

/** Validates a submission already read (a folder, a zip, or files uploaded to the server). */
export async function validateRead(
  submission: Submission,
  options: EvaluateOptions = {},
): Promise<ValidatedSubmission> {
  const split = options.split ?? 'test';
  const references = await referencesFor(options);
  const tasks: ValidatedTask[] = [];
  for (const f of submission.files) {
    if (!isTaskName(f.task)) continue;
    if (options.tasks && !options.tasks.includes(f.task)) continue;
    const task = getTask(f.task);
    const reference = await references.load(task, split, { withRecords: !options.fileGold });
    const validated = validateTaskFile(task, f.file, f.lines, reference);
    const other = await otherSplitOf(validated, split, references);
    // The ids answer another split (dev predictions scored as test): say which, once, instead of advice that
    // would lead to a wrong score (--file-gold).
    if (other) {
      validated.issues = [
        {
          severity: 'error',
          code: 'WRONG_SPLIT',
          file: f.file,
          task: task.name,
          message: `these are ${task.name} ${other} ids, not ${split} ones: score them with --split ${other}`,
        },
        ...validated.issues.filter(
          (i) => i.code !== 'UNKNOWN_ID' && i.code !== 'DATA_VERSION_HINT' && i.code !== 'MISSING_ITEM',
        ),
      ];
    }
    tasks.push(validated);
  }
  // The paper's column order, whatever the order of files.
  const order = tasksIn(tasks.map((t) => t.task.name));
  tasks.sort((a, b) => order.indexOf(a.task) - order.indexOf(b.task));
  return { source: submission.source, split, tasks, issues: submission.issues };
}

/**
 * The split a file's ids belong to when none is in the split asked for: the first few unknown ids are looked up in
 * the task's other splits (held by the reference loader, loaded on demand).
 */
async function otherSplitOf(
  v: ValidatedTask,
  asked: Split,
  references: ReferenceLoader,
): Promise<Split | undefined> {
  const unknown = v.issues.filter((i) => i.code === 'UNKNOWN_ID' && i.id !== undefined);
  if (unknown.length === 0 || v.issues.some((i) => i.code === 'MISSING_ITEM') === false) return undefined;
  const ids = unknown.slice(0, 5).map((i) => i.id as string);
  for (const split of v.task.splits as readonly Split[]) {
    if (split === asked) continue;
    const ref = await references.load(v.task, split, { withRecords: true });
    const known = new Set(ref.records?.map((r) => r.id));
    if (ids.every((id) => known.has(id))) return split;
  }
  return undefined;
}

/** Item stats of every scorable task, in registry order. */
function scorableStats(v: ValidatedSubmission): ItemStats[] {
  return v.tasks.flatMap((t) => (t.items ? [buildItemStats(t.task, t.items)] : []));
}

/**
 * Scores a submission folder or zip.
 * @example
 * const result = await evaluateSubmission('out/', { dataDir: 'data/' });
 * console.log(result.overall, result.tasks.RuMedDaNet?.metrics.accuracy);
 */
export async function evaluateSubmission(
  path: string,
  options: EvaluateOptions = {},
): Promise<EvaluationResult> {
  const result = scoreValidated(await validateSubmission(path, options), options);
  const nothing = nothingScored(result);
  if (nothing) result.errors.push(nothing);
  return result;
}

/**
 * The error of a result that scored no task though a score was asked for, where no other error says why (files of
 * tasks whose gold is not here: a defined task without `--gold`, ECG2Pathology). A closed test (`private_test`),
 * whose gold is never public, is validated and left unscored without one: checking it is all a scorer can do.
 */
function nothingScored(
  result: Pick<EvaluationResult, 'source' | 'split' | 'tasks' | 'unscored' | 'errors'>,
): SubmissionIssue | undefined {
  if (Object.keys(result.tasks).length > 0 || result.errors.length > 0 || result.split === 'private_test')
    return undefined;
  // Without errors, a task is left unscored only for want of gold (each has its NO_GOLD warning saying where).
  return {
    severity: 'error',
    code: 'NOTHING_SCORED',
    file: result.source,
    message: `no task was scored: no gold here for ${Object.keys(result.unscored).join(', ')}`,
    expected: "each task's gold: in its data file, or as <Task>.jsonl in a folder given with --gold DIR",
  };
}

/** The task MedBench added to the paper's five public ones: its table's overall is over six. */
export const SIXTH_TASK = 'ECG2Pathology';

export function scoreValidated(v: ValidatedSubmission, options: EvaluateOptions = {}): EvaluationResult {
  const resamples = options.bootstrap ?? 1000;
  const seed = options.seed ?? 0;
  const level = 0.95;
  const stats = scorableStats(v);
  const overallNames = OVERALL_TASKS.map((t) => t.name);
  const sixNames = [...overallNames, SIXTH_TASK];
  const boot =
    resamples > 0
      ? bootstrapIntervals(stats, { resamples, seed, level, overallTasks: overallNames, sixTasks: sixNames })
      : undefined;

  const tasks: Record<string, TaskResult> = {};
  const unscored: Record<string, string> = {};
  const issues = [...v.issues];
  for (const t of v.tasks) {
    issues.push(...t.issues);
    const it = stats.find((s) => s.task === t.task);
    if (!it || !t.items || !t.format) {
      const errors = t.issues.filter((i) => i.severity === 'error');
      unscored[t.task.name] =
        t.unscored ?? `${errors.length} error(s) in the file; the first: ${errors[0]?.message ?? 'unknown'}`;
      continue;
    }
    const n = it.ids.length;
    const metrics = metricsOf(it);
    const intervals = boot?.tasks.get(t.task.name);
    tasks[t.task.name] = {
      n,
      unanswered: t.items.filter((i) => i.prediction === null).length,
      file: t.file,
      format: t.format,
      metrics,
      score: taskScore(t.task, metrics),
      ci: intervals?.metrics ?? {},
      score_ci: intervals?.score ?? null,
      breakdown: breakdown(t.task, t.items),
    };
  }

  const present = new Set(v.tasks.map((t) => t.task.name));
  // The built-in tasks make the overall, so a missing one is worth a word where any is present; tasks defined in
  // files stand alone (a file of one of them is not missing the others).
  const anyBuiltIn = v.tasks.some((t) => t.task.source === undefined);
  const missing_tasks = TASKS.filter(
    (t) =>
      t.source === undefined &&
      anyBuiltIn &&
      (t.splits as readonly Split[]).includes(v.split) &&
      !present.has(t.name),
  ).map((t) => t.name);
  for (const name of missing_tasks) {
    issues.push({
      severity: 'warning',
      code: 'MISSING_TASK',
      file: v.source,
      task: name,
      message: `${name} is not in the submission`,
    });
  }
  const allScored = overallNames.every((n) => tasks[n] !== undefined);
  const sixScored = allScored && tasks[SIXTH_TASK] !== undefined;
  return {
    schema_version: RESULT_SCHEMA_VERSION,
    rumedbench_version: VERSION,
    source: v.source,
    split: v.split,
    overall: allScored ? mean(overallNames.map((n) => (tasks[n] as TaskResult).score)) : null,
    overall_ci: allScored ? (boot?.overall ?? null) : null,
    ...(sixScored
      ? {
          overall_six: {
            score: mean(sixNames.map((n) => (tasks[n] as TaskResult).score)),
            ci: boot?.six ?? null,
          },
        }
      : {}),
    tasks,
    unscored,
    missing_tasks,
    bootstrap: { resamples, seed, level },
    errors: issues.filter((i) => i.severity === 'error'),
    warnings: issues.filter((i) => i.severity === 'warning'),
  };
}
