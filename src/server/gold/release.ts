/**
 * The release gate. Its invariant, asserted as this sentence by test/e2e/ladder-attacks.test.ts: **every score on gold
 * the host holds leaves only as the Ladder of its uploader's identity released it.**
 *
 * Every path that computes such a score (the closed tests, a public-board test whose records only the host has,
 * whatever gold `serve import-gold` brought) decides what it shows here, through `releaseOnHeldGold`:
 * - an upload (submissions/service.ts), on the ladder of its team (or, anonymous, of its address);
 * - a platform evaluation (the same path), on the ladder of the team whose endpoint it is, under that team's daily
 *   quota of uploads on hidden gold: over it, nothing on hidden gold is released;
 * - a re-score after `import-gold` (gold/service.ts), which climbs every ladder again in upload order (a ladder whose
 *   best was deleted, from the best's state its ladders row keeps), and is refused where this process lacks a hidden
 *   task the board's rows were scored on. A rejected row stays rejected and is not scored; a file of a task the row was not on hidden gold for when it came (the board did
 *   not hold the task then: `serve` without `--tasks-dir`) is set aside by `scorableFiles`, named, and never scored on
 *   the gold that came later: its owner uploads it again, under the quota;
 * - a row stored without a ladder key (before the Ladder, or migrated from an older version) is shown with nothing on
 *   hidden gold (boards/entries.ts asks `shownRelease`), whatever its stored scores.
 * The one way around it is the admin's: `--closed-release exact`, for the final ranking. A campaign's human rows are
 * the host's own annotators on a sample, not an uploader's answers, and are shown as their campaign scored them.
 */
import type { LadderItems, LadderState, LadderStep } from '../../metrics/ladder.js';
import { ladderStep } from '../../metrics/ladder.js';
import type { SubmissionIssue } from '../../scoring/issues.js';
import type { EvaluationResult } from '../../scoring/score.js';
import { getTask, heldByHost, isTaskName } from '../../tasks/registry.js';
import type { BoardName, SubmissionSource } from '../db/schema.js';
import { BOARD_SPLIT, HELD_TASKS, heldTasksOf } from '../score-upload.js';

/** The sentence the module comment states, for the attack test to hold it to. */
export const RELEASE_INVARIANT =
  "every score on gold the host holds leaves only as the Ladder of its uploader's identity released it";

/**
 * How closed-board (hidden-gold) scores are released: `ladder` (the default: Blum & Hardt's parameter-free Ladder,
 * see metrics/ladder.ts) or `exact` (every score as computed; for the final ranking).
 */
export type ClosedRelease = 'ladder' | 'exact';

/** What leaves of one row's scores on hidden gold. */
export type Release =
  /** No task on hidden gold: everything as computed. */
  | { kind: 'open' }
  /** `--closed-release exact`: as computed, the admin's choice. */
  | { kind: 'exact' }
  /** The Ladder's step: the release and whether it improved on the ladder's best. */
  | { kind: 'ladder'; step: LadderStep }
  /** Nothing on hidden gold: no ladder (no identity, over the quota), or not every hidden task of the board answered. */
  | { kind: 'withheld' };

export interface ReleaseInput {
  mode: ClosedRelease;
  /** The row's tasks on hidden gold (scored or waiting for gold). */
  heldTasks: readonly string[];
  /** The ladder of the uploader's identity; null: none (then nothing on hidden gold is released). */
  ladderKey: string | null;
  /** Per-item counts of every hidden task of the board, or undefined where one is missing or unscored. */
  items: LadderItems | undefined;
}

/** Whether the gate will take a step of the row's ladder (and so needs the ladder's best, under its lock). */
export const climbsLadder = (input: ReleaseInput): boolean =>
  input.heldTasks.length > 0 &&
  input.mode === 'ladder' &&
  input.ladderKey !== null &&
  input.items !== undefined;

/**
 * The gate: what of a row's scores on hidden gold may leave. `best` is the row's ladder as it stands (read only
 * when the row climbs it).
 */
export async function releaseOnHeldGold(
  input: ReleaseInput,
  best: () => LadderState | undefined | Promise<LadderState | undefined>,
): Promise<Release> {
  if (input.heldTasks.length === 0) return { kind: 'open' };
  if (input.mode === 'exact') return { kind: 'exact' };
  if (!climbsLadder(input)) return { kind: 'withheld' };
  return { kind: 'ladder', step: ladderStep(await best(), input.items as LadderItems) };
}

/**
 * The tasks of a stored row that were scored on gold only the host holds, decided from the row's own tasks and their
 * definitions, never from the tasks this process loaded: a board restarted without `--tasks-dir` holds no
 * ECG2Pathology, yet its rows keep their exact ECG2Pathology scores (issue #57). Every task of the closed board; on
 * the public board a task whose test records only its host has, and any task this process does not know.
 */
export function rowHeldTasks(board: BoardName, tasks: readonly string[]): string[] {
  if (board === 'closed') return [...tasks];
  return tasks.filter((t) => !isTaskName(t) || heldByHost(getTask(t), BOARD_SPLIT.public));
}

/**
 * A stored row as a board shows it: its ladder's release where it has a ladder key, else (stored before the Ladder,
 * or migrated) nothing on hidden gold, unless the row is a campaign's human row or shows no task on hidden gold.
 */
export function shownRelease(
  row: { board: BoardName; ladder_key: string | null; released: number | null; source: SubmissionSource },
  shownTasks: readonly string[],
): 'as-computed' | { released: number | null } {
  if (row.ladder_key !== null) return { released: row.released === null ? null : Number(row.released) };
  if (row.source === 'campaign' || rowHeldTasks(row.board, shownTasks).length === 0) return 'as-computed';
  return { released: null };
}

/** The warning a file set aside by `scorableFiles` carries. */
export const HELD_GOLD_AFTER_UPLOAD = 'HELD_GOLD_AFTER_UPLOAD' as const;

/**
 * The files of a stored row that a re-score may score: a file of a task on hidden gold that the row was not on hidden
 * gold for when it came (its stored result has no such task, scored or waiting) is set aside with a warning naming
 * it, so gold that came later never scores it.
 */
export function scorableFiles<F extends { name: string }>(
  board: BoardName,
  stored: Pick<EvaluationResult, 'tasks' | 'unscored'>,
  files: readonly F[],
): { files: F[]; setAside: SubmissionIssue[] } {
  const had = heldTasksOf(board, {
    tasks: stored.tasks ?? {},
    unscored: stored.unscored ?? {},
  } as EvaluationResult);
  const held = HELD_TASKS[board];
  const kept: F[] = [];
  const setAside: SubmissionIssue[] = [];
  for (const f of files) {
    const task = f.name.slice(f.name.lastIndexOf('/') + 1).replace(/\.jsonl$/, '');
    if (held.includes(task) && !had.includes(task))
      setAside.push({
        severity: 'warning',
        code: HELD_GOLD_AFTER_UPLOAD,
        file: f.name,
        task,
        message: `${task} was not on this board's hidden gold when this file came, and is not scored on the gold imported since: upload it again (it counts against the daily quota of uploads on hidden gold)`,
      });
    else kept.push(f);
  }
  return { files: kept, setAside };
}
