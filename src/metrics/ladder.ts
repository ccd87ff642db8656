/**
 * The Ladder (Blum & Hardt, 2015, "The Ladder: A Reliable Leaderboard for Machine Learning Competitions", ICML;
 * arXiv:1502.04585), its parameter-free variant (their Algorithm 2), carried to a score that is a mean of tasks
 * whose metrics need not be means of items.
 *
 * The invariant, asserted as such by ladder.test.ts and by the attacks in test/e2e/ladder-attacks.test.ts:
 * **an upload that differs from the team's best in one item is never an improvement, and an identical re-upload is
 * never one.** So a one-item probe (one answer flipped, one label added) answers the same whatever the hidden gold.
 *
 * Algorithm 2 releases a new score when it beats the last release by more than s/√n, the standard error of the
 * paired per-item differences, and rounds the release to 1/n. Two things of that proof do not come along here:
 * - On one task of n items a score is a multiple of 1/n, so the rounded release *is* the exact score. A mean of
 *   tasks is not on that grid: the best's exact score can sit above its release, and compared with the release an
 *   identical re-upload "improves" and a one-item flip then decides. So the new score is compared with the best's
 *   *exact* score (kept server-side), which is what the paper's comparison amounts to on its own grid.
 * - s/√n bounds one item's effect only for a mean of per-item scores (one flip moves a mean by 1/n, exactly s/√n).
 *   Macro F1 or entity F1 pool counts: one record can move them by far more than its share. The margin is therefore
 *   the larger of (a) the jackknife standard error of the metric's paired difference (Efron & Stein, 1981; for a
 *   mean it equals s/√n exactly, so the paper's rule is unchanged for accuracy), and (b) the largest influence of
 *   one item on the difference: how much the new score moves when one of its items is put back as the best had it.
 *   For an upload differing from the best in one item, (b) equals the whole difference, so it is never more than
 *   the margin, whatever the metric.
 * Tasks combine as the overall does: Δ = mean Δ_t, SE = √(Σ SE_t²) / T, an item's influence divided by T.
 *
 * A third thing does not come along for pooled metrics: the margin above bounds one changed item, not a *set* of them,
 * and an adaptive group test changes many records at once (issue #57). On macro F1 over K classes and n records
 * (ECG2Pathology: K = 73), adding class c to every record moves the score by (2P/(n + P))/K, P the positives of c: a
 * few hundredths of a point, yet above the margin exactly when P ≥ 2 (one positive put back is half of it); removing c
 * from a block of b records moves it by about 2Pb/((n + P)²K), above the margin exactly when no positive is in the
 * block. Each such upload tells about one bit, and a red team declared 578 (record, class) pairs in 132 uploads, all
 * right. So a task whose score is not a mean of items, when it changed, adds a floor to the margin: one step of the
 * release grid, 100/n points (Blum & Hardt's Algorithm 1 is the Ladder with a fixed step η; this is η = 1/n, the
 * step the release is rounded to anyway). What then passes, with K = 73 and n = 200 (margin 0.5 points):
 * - c added to every record: only if (2P/(n + P))/K > 1/n, that is P > Kn/(2n − K) = 44.6: a class on 45 or more
 *   records, whose being common is no secret;
 * - c (predicted everywhere) removed from a block of b records: only if 2Pbn > K(n + P)(n + P − b), that is
 *   b ≥ 192 for P = 2, b ≥ 122 for P = 45; the red team's blocks of 8 never pass;
 * - c added from nowhere to a set S holding TP of its P positives: F1_c = 2TP/(|S| + P), only if that exceeds
 *   K/n = 0.365 and TP ≥ 2 (with one positive, putting it back is the whole difference): for P = 2 both positives
 *   inside a set of at most 8 records guessed blind, C(8,2)/C(200,2) ≈ 1/711 an upload.
 * So each such upload's answer is almost surely "no", whatever the gold, and tells far less than a bit; what any
 * Ladder leaks remains: one answer per upload, under the daily quota, and at most 100/floor releases in all. A real
 * model that improves macro F1 by a point on 200 records (two grid steps) passes (ladder.test.ts).
 */

import type { TaskDefinition } from '../tasks/types.js';
import { isItemMeanScore, scoreFromSums, statsLayout } from './item-stats.js';

/** One task's per-item counts (item-stats.ts layout), rows in the order of the sorted item ids. */
export interface LadderTask {
  task: TaskDefinition;
  /** Names the item set (a hash of the sorted ids): two uploads pair up only on the same set. */
  key: string;
  rows: Float64Array;
}

/** The tasks on hidden gold of one upload, each once. */
export type LadderItems = readonly LadderTask[];

export interface LadderState {
  /** The score released last, in percent. */
  released: number;
  /** The counts of the team's best so far (the submission the release was made for). */
  items: LadderItems;
}

export interface LadderStep {
  /** What to show for the new submission, in percent. */
  released: number;
  /** Whether the new submission beat the margin (and becomes the team's best). */
  improved: boolean;
}

const itemsOf = (t: LadderTask): number => t.rows.length / statsLayout(t.task).width;

/** A task's score (percent) from its column sums. */
function taskScoreOf(t: LadderTask): number {
  const width = statsLayout(t.task).width;
  const sums = new Float64Array(width);
  for (let i = 0; i < t.rows.length; i++) (sums[i % width] as number) += t.rows[i] as number;
  return scoreFromSums(t.task, sums, itemsOf(t));
}

/** The exact score of an upload on hidden gold: the mean of its tasks' scores, in percent. */
export function ladderScore(items: LadderItems): number {
  let total = 0;
  for (const t of items) total += taskScoreOf(t);
  return total / items.length;
}

/** Rounds a score in percent to 1/N of the scale, N the number of items of all tasks. */
export function roundToItems(score: number, items: LadderItems): number {
  const n = items.reduce((sum, t) => sum + itemsOf(t), 0);
  if (n === 0) return score;
  const step = 100 / n;
  return Math.round(score / step) * step;
}

/**
 * The floor a changed task's score must beat on its own for a set of changed items (module comment): one step of the
 * release grid, 100/n points, for a score that is not a mean of items; none for a mean (one item is its whole grid
 * step already, and the jackknife bounds a set of them).
 */
export const setwiseFloor = (task: TaskDefinition, n: number): number =>
  isItemMeanScore(task) ? 0 : 100 / n;

/** One task's share of the margin: the jackknife variance of its paired difference and the largest influence. */
function taskMargin(
  next: LadderTask,
  best: LadderTask,
): { variance: number; influence: number; changed: boolean } {
  const { width } = statsLayout(next.task);
  const n = itemsOf(next);
  const sumOf = (rows: Float64Array) => {
    const s = new Float64Array(width);
    for (let i = 0; i < rows.length; i++) (s[i % width] as number) += rows[i] as number;
    return s;
  };
  const sNext = sumOf(next.rows);
  const sBest = sumOf(best.rows);
  const score = (s: Float64Array, items: number) => scoreFromSums(next.task, s, items);
  const scoreNext = score(sNext, n);
  const a = new Float64Array(width);
  const b = new Float64Array(width);
  // Jackknife pseudo-values of D = M(next) − M(best): D with item i left out of both.
  const leaveOut = new Float64Array(n);
  let influence = 0;
  let changed = false;
  for (let i = 0; i < n; i++) {
    let differs = false;
    for (let k = 0; k < width; k++) {
      const x = next.rows[i * width + k] as number;
      const y = best.rows[i * width + k] as number;
      a[k] = (sNext[k] as number) - x;
      b[k] = (sBest[k] as number) - y;
      if (x !== y) differs = true;
    }
    leaveOut[i] = score(a, n - 1) - score(b, n - 1);
    if (differs) {
      changed = true;
      // The new upload with item i put back as the best had it.
      for (let k = 0; k < width; k++) a[k] = (a[k] as number) + (best.rows[i * width + k] as number);
      influence = Math.max(influence, Math.abs(scoreNext - score(a, n)));
    }
  }
  let m = 0;
  for (const v of leaveOut) m += v;
  m /= n;
  let ss = 0;
  for (const v of leaveOut) ss += (v - m) ** 2;
  return { variance: ((n - 1) / n) * ss, influence, changed };
}

/**
 * The margin an upload must beat its team's best by, in percent: the largest of the jackknife standard error of the
 * paired difference, the largest one-item influence and, where a pooled metric's task changed, its set-wise floor
 * (module comment). Undefined when the two do not pair up (other tasks, or another item set: the gold changed).
 */
export function ladderMargin(next: LadderItems, best: LadderItems): number | undefined {
  if (next.length === 0 || next.length !== best.length) return undefined;
  let variance = 0;
  let influence = 0;
  let floor = 0;
  for (const t of next) {
    const b = best.find((x) => x.task.name === t.task.name);
    if (!b || b.key !== t.key || b.rows.length !== t.rows.length || itemsOf(t) < 2) return undefined;
    const m = taskMargin(t, b);
    variance += m.variance;
    influence = Math.max(influence, m.influence);
    if (m.changed) floor = Math.max(floor, setwiseFloor(t.task, itemsOf(t)));
  }
  return Math.max(Math.sqrt(variance), influence, floor) / next.length;
}

/**
 * One round of the Ladder for a team: the new upload's counts against the team's state (undefined: its first
 * upload, which is released). An upload that does not pair with the best (the gold changed) starts the ladder again.
 */
export function ladderStep(state: LadderState | undefined, items: LadderItems): LadderStep {
  const score = ladderScore(items);
  const released = roundToItems(score, items);
  if (state === undefined) return { released, improved: true };
  const margin = ladderMargin(items, state.items);
  if (margin === undefined) return { released, improved: true };
  // A difference equal to the margin (one item changed) is no improvement, whatever the float noise.
  const tolerance = 1e-9 * (1 + Math.abs(margin));
  return score - ladderScore(state.items) > margin + tolerance
    ? { released, improved: true }
    : { released: state.released, improved: false };
}
