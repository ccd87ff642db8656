/**
 * Ranking several submissions scored on the same items (`rumedbench rank`): per task and overall, each system's
 * score with its standard error, its rank with a 95% interval and its group letters, every pair's difference with a
 * Holm-corrected p-value, and the minimum detectable effect (../metrics/ranking.ts has the statistics and their
 * sources). Items of a task that declares a cluster (RuMedNLI: the premise) are clustered by it.
 */
import { buildItemStats, type ItemStats } from '../metrics/item-stats.js';
import {
  drawTask,
  type RankInput,
  rankDraws,
  rankOverallDraws,
  type TaskDraws,
  type TaskRanking,
} from '../metrics/ranking.js';
import { OVERALL_TASKS, tasksIn } from '../tasks/registry.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import type { SubmissionIssue } from './issues.js';
import type { ReferenceLoader } from './reference.js';
import {
  type EvaluateOptions,
  referencesFor,
  type ValidatedSubmission,
  validateSubmission,
} from './score.js';

/** A submission's file of a task that keeps the task from being ranked. */
export type UnrankedFile = { system: string; file: string } & (
  | /** The submission has no file of the task (`file`: the submission). */ { reason: 'missing' }
  | /** The file is not scored: it has errors (listed with it), or no gold. */ {
      reason: 'unscored';
      errors: number;
    }
  | /** Scored, but on other items than `like` (another release of the test split, a --limit run). */ {
      reason: 'other_items';
      items: number;
      /** Its items that `like` does not have. */
      foreign: number;
      like: string;
    }
);

export interface UnrankedTask {
  task: string;
  differ: UnrankedFile[];
}

/** Why a file keeps its task out of the ranking, in words (the CLI's warning, which names the file). */
export function unrankedWhy(task: string, d: UnrankedFile): string {
  switch (d.reason) {
    case 'missing':
      return `this submission has no ${task} file`;
    case 'unscored':
      return `this file is not scored (${d.errors > 0 ? `${d.errors} error(s), listed among the errors` : 'see its warnings'})`;
    case 'other_items':
      return `this file answers ${d.items} items, ${d.foreign} of them not in ${d.like}`;
  }
}

export interface RankResult {
  split: Split;
  systems: { name: string; source: string }[];
  tasks: Record<string, TaskRanking & { metric: 'score' }>;
  /** The mean of the five public task scores, for systems that have all five ranked; null otherwise. */
  overall: Omit<TaskRanking, 'n' | 'clusters'> | null;
  /** Tasks some submissions answer that are not ranked, with the files that differ from the others. */
  unranked: UnrankedTask[];
  method: {
    resamples: number;
    seed: number;
    alpha: number;
    se: string;
    tests: string;
    rank_interval: string;
    groups: string;
    mde: string;
  };
  errors: SubmissionIssue[];
  warnings: SubmissionIssue[];
}

type RankOptions = EvaluateOptions & { names?: readonly string[]; alpha?: number };

export async function rankSubmissions(
  paths: readonly string[],
  options: RankOptions = {},
): Promise<RankResult> {
  const references = await referencesFor(options);
  const opts = { ...options, references };
  const validated = [];
  for (const p of paths) validated.push(await validateSubmission(p, opts));
  return rankValidated(
    validated,
    paths.map((p, i) => options.names?.[i] ?? p),
    opts,
  );
}

/** The same, for submissions already validated (the report validates each system once). */
export async function rankValidated(
  validated: readonly ValidatedSubmission[],
  names: readonly string[],
  options: Omit<RankOptions, 'names'> & { references: ReferenceLoader },
): Promise<RankResult> {
  const references = options.references;
  const issues: SubmissionIssue[] = validated.flatMap((v) => [
    ...v.issues,
    ...v.tasks.flatMap((t) => t.issues),
  ]);
  const resamples = options.bootstrap ?? 1000;
  const seed = options.seed ?? 0;
  const alpha = options.alpha ?? 0.05;
  const split = validated[0]?.split ?? 'test';
  const perTask = new Map<string, { task: TaskDefinition; systems: RankInput[]; clusters?: string[] }>();
  const unranked: UnrankedTask[] = [];
  // First among the warnings: they say what the ranking leaves out, and a capped listing must not cut them.
  const notRanked: SubmissionIssue[] = [];
  const present = tasksIn(validated.flatMap((v) => v.tasks.map((t) => t.task.name)));
  for (const task of present) {
    if (options.tasks && !options.tasks.includes(task.name)) continue;
    const files = validated.map((v) => v.tasks.find((t) => t.task === task));
    // The items of the first submission that has any: the others must answer exactly these.
    const head = files.find((t) => t?.items);
    if (!head?.items) continue; // scored by none: each file's own errors already say why
    // Items in the order of their ids, as the boards keep them: the same seed draws the same replicates in both.
    const order = head.items.map((i) => i.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const known = new Set(order);
    const stats: ItemStats[] = [];
    const differ: UnrankedFile[] = [];
    files.forEach((t, i) => {
      const system = names[i] as string;
      if (!t) {
        differ.push({ system, file: (validated[i] as ValidatedSubmission).source, reason: 'missing' });
        return;
      }
      if (!t.items) {
        const errors = t.issues.filter((x) => x.severity === 'error').length;
        differ.push({ system, file: t.file, reason: 'unscored', errors });
        return;
      }
      const byId = new Map(t.items.map((x) => [x.id, x]));
      const items = order.map((id) => byId.get(id));
      if (t.items.length !== order.length || items.some((x) => x === undefined)) {
        const foreign = t.items.filter((x) => !known.has(x.id)).length;
        differ.push({
          system,
          file: t.file,
          reason: 'other_items',
          items: t.items.length,
          foreign,
          like: head.file,
        });
        return;
      }
      stats.push(buildItemStats(task, items as NonNullable<(typeof items)[number]>[]));
    });
    if (differ.length > 0) {
      unranked.push({ task: task.name, differ });
      for (const d of differ)
        notRanked.push({
          severity: 'warning',
          code: 'TASK_NOT_RANKED',
          task: task.name,
          file: d.file,
          message: `${task.name} is not ranked: ${unrankedWhy(task.name, d)}; a task is ranked only where every submission answers the same items`,
        });
      continue;
    }
    const clusters = task.cluster ? await clustersOf(references, task, split, order) : undefined;
    perTask.set(task.name, {
      task,
      systems: stats.map((s, i) => ({ name: names[i] as string, stats: s })),
      ...(clusters ? { clusters } : {}),
    });
  }
  const tasks: RankResult['tasks'] = {};
  // Each task drawn once: its ranking and the overall's read the same replicates.
  const draws = new Map<string, TaskDraws>();
  for (const [name, t] of perTask) {
    const d = drawTask(t.systems, { resamples, seed, ...(t.clusters ? { clusters: t.clusters } : {}) });
    draws.set(name, d);
    tasks[name] = { metric: 'score', ...rankDraws(d, { alpha }) };
  }
  const overallDraws = OVERALL_TASKS.map((t) => draws.get(t.name));
  const overall =
    overallDraws.every((d) => d !== undefined) && resamples > 0
      ? rankOverallDraws(overallDraws, names.slice(0, validated.length), { alpha })
      : null;
  return {
    split,
    systems: validated.map((v, i) => ({ name: names[i] as string, source: v.source })),
    tasks,
    overall,
    unranked,
    method: {
      resamples,
      seed,
      alpha,
      se: 'mean over items, clustered where the task declares a cluster (Miller, 2024); RuMedNER: bootstrap SD',
      tests:
        'exact McNemar where the score is classification accuracy (unclustered); z-test on the paired differences with their (clustered) SE for other item means (Miller, 2024); paired bootstrap test for F1 scores (RuMedNER) and the overall; Holm-corrected over the pairs of each task',
      rank_interval:
        'paired bootstrap over items (clusters), every system re-ranked per replicate; 2.5% and 97.5%',
      groups: 'compact letter display (Piepho, 2004) of the Holm-corrected tests at alpha',
      mde: 'paired, alpha 0.05 two-sided, power 0.8: (z_0.975 + z_0.8) × SE of the paired difference, median over pairs',
    },
    errors: issues.filter((i) => i.severity === 'error'),
    warnings: [...notRanked, ...issues.filter((i) => i.severity === 'warning')],
  };
}

/** Each item's cluster (the task's cluster field of the split's record), in the order of `ids`. */
async function clustersOf(
  references: ReferenceLoader,
  task: TaskDefinition,
  split: Split,
  ids: readonly string[],
): Promise<string[] | undefined> {
  const byId = await references.clusters(task, split);
  if (!byId) return undefined;
  const out = ids.map((id) => byId.get(id));
  return out.every((c) => c !== undefined) ? (out as string[]) : undefined;
}
