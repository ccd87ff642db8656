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
 */

import type { TaskDefinition } from '../tasks/types.js';
import { scoreFromSums, statsLayout } from './item-stats.js';

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

/** One task's share of the margin: the jackknife variance of its paired difference and the largest influence. */
function taskMargin(next: LadderTask, best: LadderTask): { variance: number; influence: number } {
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
  return { variance: ((n - 1) / n) * ss, influence };
}

/**
 * The margin an upload must beat its team's best by, in percent: the larger of the jackknife standard error of the
 * paired difference and the largest one-item influence (module comment). Undefined when the two do not pair up
 * (other tasks, or another item set: the gold changed).
 */
export function ladderMargin(next: LadderItems, best: LadderItems): number | undefined {
  if (next.length === 0 || next.length !== best.length) return undefined;
  let variance = 0;
  let influence = 0;
  for (const t of next) {
    const b = best.find((x) => x.task.name === t.task.name);
    if (!b || b.key !== t.key || b.rows.length !== t.rows.length || itemsOf(t) < 2) return undefined;
    const m = taskMargin(t, b);
    variance += m.variance;
    influence = Math.max(influence, m.influence);
  }
  return Math.max(Math.sqrt(variance), influence) / next.length;
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
