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
import { OVERALL_TASKS } from '../tasks/registry.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import type { SubmissionIssue } from './issues.js';
import type { ReferenceLoader } from './reference.js';
import {
  type EvaluateOptions,
  referencesFor,
  type ValidatedSubmission,
  validateSubmission,
} from './score.js';

export interface RankResult {
  split: Split;
  systems: { name: string; source: string }[];
  tasks: Record<string, TaskRanking & { metric: 'score' }>;
  /** The mean of the five public task scores, for systems that have all five; null otherwise. */
  overall: Omit<TaskRanking, 'n' | 'clusters'> | null;
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

type RankOptions = EvaluateOptions & { names?: readonly string[]; alpha?: number; tasks?: readonly string[] };

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
  const first = validated[0];
  for (const t0 of first?.tasks ?? []) {
    if (options.tasks && !options.tasks.includes(t0.task.name)) continue;
    if (!t0.items) continue;
    // Items in the order of their ids, as the boards keep them: the same seed draws the same replicates in both.
    const order = t0.items.map((i) => i.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const first = new Map(t0.items.map((i) => [i.id, i]));
    const stats: ItemStats[] = [
      buildItemStats(
        t0.task,
        order.map((id) => first.get(id) as NonNullable<ReturnType<typeof first.get>>),
      ),
    ];
    let aligned = true;
    for (const v of validated.slice(1)) {
      const t = v.tasks.find((x) => x.task.name === t0.task.name);
      const byId = new Map((t?.items ?? []).map((i) => [i.id, i]));
      const items = order.map((id) => byId.get(id));
      if (!t?.items || t.items.length !== order.length || items.some((i) => i === undefined)) {
        aligned = false;
        break;
      }
      stats.push(buildItemStats(t0.task, items as NonNullable<(typeof items)[number]>[]));
    }
    if (!aligned) {
      issues.push({
        severity: 'warning',
        code: 'MISSING_TASK',
        task: t0.task.name,
        file: t0.file,
        message: `${t0.task.name}: not ranked: the submissions do not all answer the same items of it`,
      });
      continue;
    }
    const clusters = t0.task.cluster ? await clustersOf(references, t0.task, split, order) : undefined;
    perTask.set(t0.task.name, {
      task: t0.task,
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
    warnings: issues.filter((i) => i.severity === 'warning'),
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
