/**
 * The Ladder (Blum & Hardt, 2015, "The Ladder: A Reliable Leaderboard for Machine Learning Competitions", ICML;
 * arXiv:1502.04585), its parameter-free variant (their Algorithm 2): a team's new score is released only when it
 * beats the team's last released score by more than the standard error of the paired differences, s/√n, between
 * the new submission's per-item scores and those of the team's best so far; the release is rounded to 1/n. Else
 * the previous release is shown again. Uploading a file with one answer flipped therefore tells nothing: a change
 * of one item is never more than one standard error.
 *
 * Our closed board's score is the mean of several tasks' scores, so the paired difference is taken per task
 * (Δ_t and s_t/√n_t over the task's items) and combined as the overall is: Δ = mean Δ_t, its standard error
 * √(Σ (s_t/√n_t)²) / T. The rounding step is 1/N of the score's scale, N the items of all tasks.
 */

/** Per-item scores of one submission, task → item id → score in [0, 1] (1: right). */
export type ItemScores = Record<string, Record<string, number>>;

export interface LadderState {
  /** The score released last, in percent. */
  released: number;
  /** The per-item scores of the submission it was released for. */
  items: ItemScores;
}

export interface LadderStep {
  /** What to show for the new submission, in percent. */
  released: number;
  /** Whether the new submission beat the margin (and becomes the team's best). */
  improved: boolean;
}

/** The standard error of the overall's paired difference, in percent; undefined when the items do not pair up. */
export function pairedStandardError(next: ItemScores, best: ItemScores): number | undefined {
  const tasks = Object.keys(next);
  if (tasks.length === 0) return undefined;
  let variance = 0;
  for (const task of tasks) {
    const a = next[task] as Record<string, number>;
    const b = best[task];
    if (!b) return undefined;
    const ids = Object.keys(a);
    if (ids.length < 2 || ids.length !== Object.keys(b).length) return undefined;
    const d: number[] = [];
    for (const id of ids) {
      const prev = b[id];
      if (prev === undefined) return undefined;
      d.push((a[id] as number) - prev);
    }
    const mean = d.reduce((x, y) => x + y, 0) / d.length;
    const s2 = d.reduce((x, y) => x + (y - mean) ** 2, 0) / (d.length - 1);
    variance += s2 / d.length;
  }
  return (Math.sqrt(variance) / tasks.length) * 100;
}

/** Rounds a score in percent to 1/N of the scale, N the number of items scored. */
export function roundToItems(score: number, items: ItemScores): number {
  const n = Object.values(items).reduce((sum, t) => sum + Object.keys(t).length, 0);
  if (n === 0) return score;
  const step = 100 / n;
  return Math.round(score / step) * step;
}

/**
 * One round of the Ladder for a team: `score` (percent) and `items` of the new submission against the team's state
 * (undefined: its first submission, which is released). A submission whose items do not pair with the best's (the
 * gold changed) starts the team's ladder again.
 */
export function ladderStep(state: LadderState | undefined, score: number, items: ItemScores): LadderStep {
  const released = roundToItems(score, items);
  if (state === undefined) return { released, improved: true };
  const se = pairedStandardError(items, state.items);
  if (se === undefined) return { released, improved: true };
  // Differences equal to one standard error (one flipped item) are not an improvement, whatever the float noise.
  const margin = se * (1 + 1e-9) + 1e-9;
  return score > state.released + margin
    ? { released, improved: true }
    : { released: state.released, improved: false };
}
