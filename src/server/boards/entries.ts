/** Submissions as the boards show them: the row a board reads, summarized from a result, and the ranking. */

import { cleanName } from '../../data/clean-text.js';
import type { Interval } from '../../metrics/bootstrap.js';
import type { RunUsage } from '../../scoring/run-usage.js';
import { type EvaluationResult, SIXTH_TASK } from '../../scoring/score.js';
import type { TrustSummary } from '../../scoring/trust-files.js';
import type { BoardName, ListedRow, SubmissionStatus, SubmissionsTable } from '../db/schema.js';
import { rowHeldTasks, shownRelease } from '../gold/release.js';
import { sixTaskOverall } from '../score-upload.js';
import { compareKeys, orderKey } from './order.js';
import type { RankCell } from './ranking.js';

export type { BoardName } from '../db/schema.js';

export interface TaskCell {
  n: number;
  metrics: Record<string, number>;
  score: number;
  score_ci: Interval | null;
  ci: Record<string, Interval>;
  /** The entry's rank among the board's entries on this task, its 95% interval and group (boards/ranking.ts). */
  place?: RankCell;
  /** A score on hidden gold as the Ladder released it (the team's best so far): no metrics, no interval. */
  released?: true;
}

/** A submission as the boards and pages show it. */
export interface Entry
  extends Pick<
    SubmissionsTable,
    | 'id'
    | 'created_at'
    | 'board'
    | 'status'
    | 'model'
    | 'team'
    | 'description'
    | 'link'
    | 'kind'
    | 'params'
    | 'duplicate_of'
  > {
  open_weights: boolean;
  verified: boolean;
  flagged: boolean;
  hidden: boolean;
  overall: number | null;
  overall_ci: Interval | null;
  /**
   * MedBench's six-task overall (the five public tasks and ECG2Pathology), public board, where the entry has all six;
   * made with ECG2Pathology's score as the Ladder released it where it is released so.
   */
  overall_six: number | null;
  tasks: Record<string, TaskCell>;
  coverage?: { answered: number; sampled: number };
  /** Run by the platform's own workers (not uploaded): how. */
  platform_run: PlatformRun | null;
  /** What the uploaded run's trust files say, where it sent them. */
  trust: TrustSummary | null;
  /** What the uploaded run spent, as its uploader says (tokens; cost where it was priced). */
  usage: RunUsage | null;
  /** The whole result (breakdowns too): only on a submission's own page, never in a board's list. */
  result?: EvaluationResult;
  /**
   * Scores on hidden gold released by the Ladder: closed, `overall` is the released score and per-task scores are
   * withheld; public, the cells of the tasks on hidden gold hold the released score (`released`).
   */
  ladder?: boolean;
  /** The overall's rank, its 95% interval and group, where the board's ranking holds the entry. */
  place?: RankCell;
}

/** How the platform ran an entry: the fixed settings, the prompts' versions, and the run's manifest. */
export interface PlatformRun {
  plan_id: string;
  endpoint: string;
  settings: Record<string, unknown>;
  prompt_versions: Record<string, string>;
  manifest: Record<string, unknown>;
}

/** What a board row needs of a result: the per-task numbers and the overall's interval, without breakdowns. */
export interface Summary {
  tasks: Record<string, TaskCell>;
  overall_ci: Interval | null;
  /** A human row from a campaign: how many of the sampled items it answers, and how answers were combined. */
  coverage?: { answered: number; sampled: number };
  rule?: 'first' | 'majority';
}

/**
 * A result as the Ladder lets it out: closed, no task's score and no interval of the overall; public, no score of the
 * tasks on hidden gold, and the six-task overall made with the released score (where those tasks are ECG2Pathology).
 */
export function releasedResult(
  board: BoardName,
  result: EvaluationResult,
  held: readonly string[],
  /** Null: nothing was released for it (all hidden scores withheld). */
  released: number | null,
): EvaluationResult {
  if (board === 'closed') return { ...result, tasks: {}, overall_ci: null };
  const tasks = Object.fromEntries(Object.entries(result.tasks).filter(([t]) => !held.includes(t)));
  const { overall_six: _exact, ...rest } = result;
  const six =
    held.length === 1 && held[0] === SIXTH_TASK && released !== null
      ? sixTaskOverall({
          ...Object.fromEntries(Object.entries(tasks).map(([t, r]) => [t, r.score])),
          [SIXTH_TASK]: released,
        })
      : null;
  return { ...rest, tasks, ...(six !== null ? { overall_six: { score: six, ci: null } } : {}) };
}

export function summarize(result: EvaluationResult): Summary {
  const tasks: Record<string, TaskCell> = {};
  for (const [name, t] of Object.entries(result.tasks)) {
    tasks[name] = {
      n: t.n,
      metrics: t.metrics as Record<string, number>,
      score: t.score,
      score_ci: t.score_ci,
      ci: t.ci as Record<string, Interval>,
    };
  }
  return { tasks, overall_ci: result.overall_ci };
}

/**
 * A row as a board shows it. `exact`: the scores as computed (the admin, or a board released exactly); otherwise a
 * closed entry the Ladder released shows its released score and no task's.
 */
export function toEntry(row: ListedRow, result?: EvaluationResult, options: { exact?: boolean } = {}): Entry {
  const entry = exactEntry(row, result);
  if (options.exact) return entry;
  // The release gate (gold/release.ts): a row's ladder's release; without a ladder (stored before it), nothing hidden.
  const shown = shownRelease(row, Object.keys(entry.tasks));
  if (shown === 'as-computed') return entry;
  const { released } = shown;
  if (row.board === 'public') {
    // What the row itself was scored on hidden gold with, whatever this process loaded (gold/release.ts).
    const held = rowHeldTasks('public', Object.keys(entry.tasks));
    const tasks: Entry['tasks'] = {};
    // One task on hidden gold: its cell is the released score. Several share one release, so none is shown alone.
    for (const [name, cell] of Object.entries(entry.tasks))
      if (!held.includes(name)) tasks[name] = cell;
      else if (held.length === 1 && released !== null)
        tasks[name] = { n: cell.n, metrics: {}, score: released, score_ci: null, ci: {}, released: true };
    return {
      ...entry,
      tasks,
      overall_six: held.length === 1 && released !== null ? sixOf(tasks) : null,
      ladder: true,
      ...(entry.result ? { result: releasedResult('public', entry.result, held, released) } : {}),
    };
  }
  return {
    ...entry,
    // A closed entry missing a task has no overall; its released score is its uploader's alone (in the answer).
    overall: entry.overall === null ? null : released,
    overall_ci: null,
    overall_six: null,
    tasks: {},
    ladder: true,
    ...(entry.result ? { result: { ...entry.result, tasks: {}, overall_ci: null } } : {}),
  };
}

function exactEntry(row: ListedRow, result?: EvaluationResult): Entry {
  const { tasks, overall_ci, coverage } = JSON.parse(row.summary) as Summary;
  return {
    id: row.id,
    created_at: row.created_at,
    board: row.board,
    status: row.status,
    ...shownNames(row),
    kind: row.kind,
    open_weights: row.open_weights === 1,
    verified: row.verified === 1,
    flagged: row.flagged === 1,
    hidden: row.hidden === 1,
    duplicate_of: row.duplicate_of,
    platform_run: row.platform_run ? (JSON.parse(row.platform_run) as PlatformRun) : null,
    trust: row.trust ? (JSON.parse(row.trust) as TrustSummary) : null,
    usage: row.usage ? (JSON.parse(row.usage) as RunUsage) : null,
    overall: row.overall === null ? null : Number(row.overall),
    // The closed board's overall has no interval of its own; the public one is the scorer's.
    overall_ci: row.board === 'public' ? overall_ci : null,
    overall_six: row.board === 'public' ? sixOf(tasks) : null,
    tasks,
    ...(coverage ? { coverage } : {}),
    ...(result ? { result } : {}),
  };
}

/**
 * A row's names as they may be shown: cleaned as an upload's are (`cleanName`), for rows stored before uploads were
 * cleaned (issue #42); a name of nothing but controls is shown empty.
 */
export function shownNames<R extends Pick<ListedRow, 'model' | 'team' | 'description' | 'link' | 'params'>>(
  row: R,
): Pick<R, 'model' | 'team' | 'description' | 'link' | 'params'> {
  return {
    model: cleanName(row.model),
    team: cleanName(row.team),
    description: cleanName(row.description, { multiline: true }),
    link: row.link === null ? null : cleanName(row.link),
    params: row.params === null ? null : cleanName(row.params),
  };
}

const sixOf = (tasks: Entry['tasks']): number | null =>
  sixTaskOverall(Object.fromEntries(Object.entries(tasks).map(([t, c]) => [t, c.score])));

/**
 * Sorted as a board reads: complete entries by overall, then partial ones by how many tasks they have, then the
 * older first (and by id, so that the order and the API's cursors are total).
 */
export function rank(entries: Entry[]): Entry[] {
  // Each entry's key made once, not twice per comparison (a board of 5,000 is sorted after every upload).
  const keyed = entries.map((e) => ({ e, key: orderKey(e) }));
  keyed.sort((a, b) => compareKeys(a.key, b.key));
  return keyed.map((k) => k.e);
}

/** Shown to everybody: scored and not hidden. */
export const visible = (row: { hidden: number; status: SubmissionStatus }): boolean =>
  row.hidden === 0 && row.status === 'scored';
