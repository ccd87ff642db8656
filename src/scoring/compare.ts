/**
 * Comparing two submissions on the same items: for each metric, B minus A with a paired-bootstrap interval and a
 * p-value: the exact McNemar test for classification accuracy on independent items (the accuracy row, and the score
 * where the score is accuracy), approximate randomization otherwise; RuMedNLI's
 * items are resampled and swapped by premise (see ../metrics/bootstrap.ts).
 */
import { type Delta, pairedComparison } from '../metrics/bootstrap.js';
import {
  buildItemStats,
  type ItemStats,
  type MetricValues,
  metricsOf,
  taskScore,
} from '../metrics/item-stats.js';
import { OVERALL_TASKS } from '../tasks/registry.js';
import type { MetricName, Split } from '../tasks/types.js';
import { VERSION } from '../version.js';
import type { SubmissionIssue } from './issues.js';
import type { ReferenceLoader } from './reference.js';
import {
  type EvaluateOptions,
  RESULT_SCHEMA_VERSION,
  referencesFor,
  type ValidatedSubmission,
  validateSubmission,
} from './score.js';
import type { ScoredItem } from './validate.js';

export interface TaskComparisonResult {
  n: number;
  a: MetricValues & { score: number };
  b: MetricValues & { score: number };
  metrics: Partial<Record<MetricName, Delta>>;
  score: Delta;
}

export interface ComparisonResult {
  schema_version: number;
  rumedbench_version: string;
  a: string;
  b: string;
  split: Split;
  tasks: Record<string, TaskComparisonResult>;
  /** Overall B − A, when both submissions have all five public tasks. */
  overall: (Delta & { a: number; b: number }) | null;
  method: {
    interval: 'paired bootstrap (percentile), over clusters where the task has them';
    p_value: 'exact McNemar for classification accuracy (and a score that is accuracy) on a task without clusters; otherwise approximate randomization (by cluster where the task has them); two-sided';
    resamples: number;
    seed: number;
    level: number;
  };
  errors: SubmissionIssue[];
  warnings: SubmissionIssue[];
}

function withScore(s: ItemStats): MetricValues & { score: number } {
  const values = metricsOf(s);
  return { ...values, score: taskScore(s.task, values) };
}

/**
 * @example const c = await compareSubmissions('runs/a', 'runs/b', { dataDir }); c.tasks.RuMedNLI?.metrics.accuracy?.p
 */
export async function compareSubmissions(
  pathA: string,
  pathB: string,
  options: EvaluateOptions = {},
): Promise<ComparisonResult> {
  const references = await referencesFor(options);
  const opts = { ...options, references };
  const [va, vb] = [await validateSubmission(pathA, opts), await validateSubmission(pathB, opts)];
  const result = compareValidated(va, vb, { ...options, clusters: await clustersOfTasks(references, va) });
  // Nothing compared is a mistake (two systems of different tasks, tasks without gold here), never an empty table;
  // other errors already say why.
  if (Object.keys(result.tasks).length === 0 && result.errors.length === 0) {
    const [a, b] = [va, vb].map((v) => v.tasks.map((t) => t.task.name).join(', ') || 'none');
    result.errors.push({
      severity: 'error',
      code: 'NOTHING_SCORED',
      file: `${va.source} and ${vb.source}`,
      message: `no task was compared: none is scored in both (A: ${a}; B: ${b})`,
      expected: 'both submissions answering a task whose gold is here (its data file, or --gold DIR)',
    });
  }
  return result;
}

/** The clusters of every task of a submission that declares one (RuMedNLI: the premise), by id. */
export async function clustersOfTasks(
  references: ReferenceLoader,
  v: ValidatedSubmission,
): Promise<Record<string, ReadonlyMap<string, string>>> {
  const out: Record<string, ReadonlyMap<string, string>> = {};
  for (const t of v.tasks) {
    const c = await references.clusters(t.task, v.split);
    if (c) out[t.task.name] = c;
  }
  return out;
}

/** The paired comparison of two submissions already validated (the report validates each system once). */
export function compareValidated(
  va: ValidatedSubmission,
  vb: ValidatedSubmission,
  options: Pick<EvaluateOptions, 'bootstrap' | 'seed'> & {
    /** Per task, each item's cluster by id (`clustersOfTasks`): clustered intervals and tests. */
    clusters?: Record<string, ReadonlyMap<string, string>>;
  } = {},
): ComparisonResult {
  const issues = [
    ...va.issues,
    ...vb.issues,
    ...va.tasks.flatMap((t) => t.issues),
    ...vb.tasks.flatMap((t) => t.issues),
  ];
  const pairsA: ItemStats[] = [];
  const pairsB: ItemStats[] = [];
  const clusters: (string[] | undefined)[] = [];
  for (const ta of va.tasks) {
    const tb = vb.tasks.find((t) => t.task === ta.task);
    if (!ta.items || !tb?.items) continue;
    const byId = new Map(tb.items.map((i) => [i.id, i]));
    const aligned: ScoredItem[] = [];
    const mismatch =
      ta.items.length !== tb.items.length ||
      ta.items.some((i) => {
        const other = byId.get(i.id);
        if (!other || JSON.stringify(other.gold) !== JSON.stringify(i.gold)) return true;
        aligned.push(other);
        return false;
      });
    if (mismatch) {
      issues.push({
        severity: 'error',
        code: 'UNKNOWN_ID',
        file: tb.file,
        task: ta.task.name,
        message: `${ta.task.name}: the two submissions do not cover the same items with the same gold; not compared`,
      });
      continue;
    }
    pairsA.push(buildItemStats(ta.task, ta.items));
    pairsB.push(buildItemStats(ta.task, aligned));
    const clusterOf = options.clusters?.[ta.task.name];
    const of = clusterOf ? ta.items.map((i) => clusterOf.get(i.id)) : undefined;
    clusters.push(of?.every((c) => c !== undefined) ? (of as string[]) : undefined);
  }
  const resamples = options.bootstrap ?? 1000;
  const seed = options.seed ?? 0;
  const level = 0.95;
  const overallTasks = OVERALL_TASKS.map((t) => t.name);
  const cmp = pairedComparison(pairsA, pairsB, { resamples, seed, level, overallTasks, clusters });
  const tasks: Record<string, TaskComparisonResult> = {};
  pairsA.forEach((a, i) => {
    const b = pairsB[i] as ItemStats;
    const c = cmp.tasks.get(a.task.name);
    if (c) tasks[a.task.name] = { n: a.ids.length, a: withScore(a), b: withScore(b), ...c };
  });
  const overall = cmp.overall
    ? {
        ...cmp.overall,
        a: overallTasks.reduce((s, t) => s + (tasks[t]?.a.score ?? 0), 0) / overallTasks.length,
        b: overallTasks.reduce((s, t) => s + (tasks[t]?.b.score ?? 0), 0) / overallTasks.length,
      }
    : null;
  return {
    schema_version: RESULT_SCHEMA_VERSION,
    rumedbench_version: VERSION,
    a: va.source,
    b: vb.source,
    split: va.split,
    tasks,
    overall,
    method: {
      interval: 'paired bootstrap (percentile), over clusters where the task has them',
      p_value:
        'exact McNemar for classification accuracy (and a score that is accuracy) on a task without clusters; otherwise approximate randomization (by cluster where the task has them); two-sided',
      resamples,
      seed,
      level,
    },
    errors: issues.filter((i) => i.severity === 'error'),
    warnings: issues.filter((i) => i.severity === 'warning'),
  };
}
