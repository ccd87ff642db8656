/**
 * Which systems are really different on one test set: standard errors, paired tests, rank intervals, tie groups and
 * the minimum detectable effect, for a set of systems scored on the same items. Built to rank a board of hundreds
 * of systems: every statistic is one pass over the items (or over the bootstrap's replicates) per system or pair.
 *
 * - Standard errors of a score that is a mean over items, clustered where items are not independent (RuMedNLI's
 *   hypotheses share a premise): SE_C = sqrt(Σ_c (Σ_{i∈c} (s_i − s̄))²) / n (Miller, 2024, "Adding Error Bars to
 *   Evals: A Statistical Approach to Language Model Evaluations", eq. 4); without clusters each item is its own.
 *   A score that is no item mean (RuMedNER's token accuracy and entity F1, the overall) takes the bootstrap's
 *   standard deviation.
 * - Paired tests between every two systems: the exact McNemar test (McNemar, 1947; two-sided binomial test on the
 *   discordant pairs) for accuracy on a task without clusters; for other item-mean scores the z-test on the paired
 *   differences with their (clustered) standard error (Miller, 2024, section 4: "paired differences"); for the
 *   rest the paired bootstrap test in its normal form, z = d / SD(d*) over the paired replicates (Efron and
 *   Tibshirani, 1993, "An Introduction to the Bootstrap", ch. 16), whose p-values, unlike counts of replicates,
 *   can pass a Holm correction over a board's thousands of pairs. P-values are Holm-corrected
 *   (Holm, 1979) over the pairs of each task.
 * - Rank intervals from a paired bootstrap over items (clusters) that re-ranks every system in each replicate (Hall
 *   and Miller, 2009, "Using the bootstrap to quantify the authority of an empirical ranking"): marginal 95%
 *   intervals, ties sharing the better rank.
 * - Tie groups as a compact letter display (Piepho, 2004, "An algorithm for a letter-based representation of
 *   all-pairwise comparisons"): systems that share a letter are not distinguishable at α after Holm's correction.
 * - A board of thousands: ranks and rank intervals for every system (per replicate a sort and a binary search,
 *   O(R·k·log k)); the pairwise tests, Holm's correction, the letters and the MDE among the best `TESTED_TOP` by score
 *   only (Holm's family is then the pairs tested; a board no larger gets exactly the all-pairs ranking). Each
 *   system's replicates depend only on its own counts, the seed, the task and the clusters, never on the other
 *   systems, so a row drawn alone is the row drawn with the board, bit for bit (`drawsFromRows`).
 * - The minimum detectable effect of a paired comparison at α = 0.05 (two-sided) and 80% power: (z_{1−α/2} + z_{0.8})
 *   × SE of the paired difference (Bloom, 1995, "Minimum detectable effects"), the median over the task's pairs. The
 *   SE is Miller's, of the per-item differences d_i: sqrt(Σ (d_i − d̄)²) / n, clustered where the task is; for
 *   accuracy (d_i ∈ {−100, 0, +100}) that is 100·sqrt((p_d − d̄²) / n), with p_d the share of discordant items and
 *   d̄ the observed difference as a fraction: the variance of a paired difference in proportions under the
 *   alternative (Connor, 1987, "Sample size for testing differences in proportions for the paired-sample design").
 *   `plannedMde`, before any answer exists, takes d̄ = 0: 100·sqrt(p_d / n).
 */
import {
  type ItemStats,
  isAccuracyScore,
  isItemMeanScore,
  metricsFromSums,
  scoreFromSums,
  statsLayout,
  taskScore,
} from './item-stats.js';
import { exactMcNemar } from './mcnemar.js';
import { median, percentile } from './quantile.js';
import { createRng } from './rng.js';
import { normalUpper } from './student-t.js';

export { exactMcNemar };

export interface RankInput {
  name: string;
  /** The system's items of one task, aligned row by row with every other system's. */
  stats: ItemStats;
}

export interface RankOptions {
  resamples: number;
  seed: number;
  /** Level of the tests and the groups (0.05). */
  alpha?: number;
  /** Per item, the cluster it belongs to (items of one cluster are resampled together). */
  clusters?: readonly string[];
  /** Whether to list every pair with its interval (a board of hundreds needs only the groups): true. */
  pairs?: boolean;
}

export interface RankedSystem {
  name: string;
  score: number;
  se: number;
  /** 1 + the systems with a strictly higher score. */
  rank: number;
  rank_ci: [number, number];
  /** Letters: two systems that share one are not distinguishable. */
  group: string;
}

export type PairTest = 'exact McNemar' | 'z-test' | 'z-test, clustered' | 'paired bootstrap';

export interface RankedPair {
  a: string;
  b: string;
  /** B − A in points. */
  diff: number;
  ci: [number, number];
  p_value: number;
  p_holm: number;
  test: PairTest;
}

export interface TaskRanking {
  n: number;
  clusters: number | null;
  /** Minimum detectable effect in points (α 0.05 two-sided, power 0.8); null with fewer than two systems. */
  mde: number | null;
  systems: RankedSystem[];
  pairs: RankedPair[];
}

/** z_{0.975} + z_{0.80}. */
const Z_SUM = 1.959963984540054 + 0.8416212335729143;

/**
 * The minimum detectable effect of a paired accuracy comparison planned before any answer is in: n items, a share
 * `discordance` of them answered differently by the two systems; (z_0.975 + z_0.8) · 100 · sqrt(p_d / n) points
 * (Connor, 1987, leaving out the small d² term).
 */
export function plannedMde(n: number, discordance: number): number {
  return n > 0 ? Z_SUM * 100 * Math.sqrt(discordance / n) : Number.POSITIVE_INFINITY;
}

/** Holm's step-down adjustment: the i-th smallest p times (m − i), kept monotone, capped at 1. */
export function holm(p: readonly number[]): number[] {
  const order = p.map((v, i) => [v, i] as const).sort((x, y) => x[0] - y[0]);
  const out = new Array<number>(p.length);
  let running = 0;
  order.forEach(([v, i], rank) => {
    running = Math.max(running, Math.min(1, v * (p.length - rank)));
    out[i] = running;
  });
  return out;
}

/** Miller's clustered standard error of a mean of per-item values (each item its own cluster without clusters). */
export function clusteredSe(values: ArrayLike<number>, clusters?: readonly string[]): number {
  const index = clusterIndex(values.length, clusters);
  return seOf(values, index.of, index.count);
}

/** Each item's cluster as a number in [0, count). */
function clusterIndex(n: number, clusters?: readonly string[]): { of: Int32Array; count: number } {
  const of = new Int32Array(n);
  if (!clusters) {
    for (let i = 0; i < n; i++) of[i] = i;
    return { of, count: n };
  }
  const ids = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const c = clusters[i] as string;
    let id = ids.get(c);
    if (id === undefined) {
      id = ids.size;
      ids.set(c, id);
    }
    of[i] = id;
  }
  return { of, count: ids.size };
}

/** The clustered SE over numbered clusters. */
function seOf(values: ArrayLike<number>, of: Int32Array, count: number): number {
  const n = values.length;
  if (n === 0) return 0;
  let m = 0;
  for (let i = 0; i < n; i++) m += values[i] as number;
  m /= n;
  const sums = new Float64Array(count);
  for (let i = 0; i < n; i++) (sums[of[i] as number] as number) += (values[i] as number) - m;
  let total = 0;
  for (let c = 0; c < count; c++) total += (sums[c] as number) ** 2;
  return Math.sqrt(total) / n;
}

/**
 * The compact letter display of Piepho (2004), insert-and-absorb: start from one group of all; for each pair that
 * differs, split every group holding both into two (one without each), then drop groups contained in others.
 * Letters go to groups in the order of their best system (`order`: systems best first). Groups are bit sets, so a
 * board of hundreds of systems takes milliseconds.
 */
export function compactLetters(
  order: readonly string[],
  differ: (a: string, b: string) => boolean,
): Map<string, string> {
  const k = order.length;
  const words = Math.ceil(k / 32) || 1;
  const has = (g: Uint32Array, i: number) => ((g[i >>> 5] as number) & (1 << (i & 31))) !== 0;
  const without = (g: Uint32Array, i: number) => {
    const h = Uint32Array.from(g);
    h[i >>> 5] = (h[i >>> 5] as number) & ~(1 << (i & 31));
    return h;
  };
  const within = (g: Uint32Array, h: Uint32Array) => {
    for (let w = 0; w < words; w++) if (((g[w] as number) & ~(h[w] as number)) !== 0) return false;
    return true;
  };
  const all = new Uint32Array(words);
  for (let i = 0; i < k; i++) all[i >>> 5] = (all[i >>> 5] as number) | (1 << (i & 31));
  let groups: Uint32Array[] = k > 0 ? [all] : [];
  for (let i = 0; i < k; i++)
    for (let j = i + 1; j < k; j++) {
      if (!differ(order[i] as string, order[j] as string)) continue;
      const kept: Uint32Array[] = [];
      const split: Uint32Array[] = [];
      for (const g of groups) {
        if (has(g, i) && has(g, j)) split.push(without(g, i), without(g, j));
        else kept.push(g);
      }
      if (split.length === 0) continue;
      // Absorb: a new group inside another says nothing more (an old group is never inside a new one: each new
      // group lies in the old group it came from, and old groups were not inside each other).
      const fresh: Uint32Array[] = [];
      for (const g of split) {
        if (kept.some((h) => within(g, h))) continue;
        if (fresh.some((h) => within(g, h))) continue;
        for (let f = fresh.length - 1; f >= 0; f--)
          if (within(fresh[f] as Uint32Array, g)) fresh.splice(f, 1);
        fresh.push(g);
      }
      groups = [...kept, ...fresh];
    }
  const members = groups.map((g) => {
    const m: number[] = [];
    for (let i = 0; i < k; i++) if (has(g, i)) m.push(i);
    return m;
  });
  // In the order of their best member, then of their next ones: the same letters whatever order the groups grew in.
  members.sort((x, y) => {
    for (let t = 0; t < Math.min(x.length, y.length); t++)
      if (x[t] !== y[t]) return (x[t] as number) - (y[t] as number);
    return x.length - y.length;
  });
  const letters = new Map(order.map((s) => [s, '']));
  members.forEach((m, g) => {
    const letter = letterOf(g);
    for (const i of m) letters.set(order[i] as string, (letters.get(order[i] as string) as string) + letter);
  });
  return letters;
}

/** a–z, then A–Z, then [53], [54], …: a system's letters read apart however many groups a board has. */
const letterOf = (k: number): string =>
  k < 26 ? String.fromCharCode(97 + k) : k < 52 ? String.fromCharCode(65 + k - 26) : `[${k + 1}]`;

/** The group labels in a system's letters (the inverse of concatenating `letterOf`). */
export const groupLabels = (letters: string): string[] => letters.match(/[a-zA-Z]|\[\d+\]/g) ?? [];

/**
 * Per item, its own score in points (for tasks whose score is a mean over items), or undefined (RuMedNER, a score
 * that is an F1).
 */
function itemScores(s: ItemStats): Float64Array | undefined {
  if (!isItemMeanScore(s.task)) return undefined;
  const { width } = statsLayout(s.task);
  const row = new Float64Array(width);
  const out = new Float64Array(s.ids.length);
  for (let i = 0; i < s.ids.length; i++) {
    for (let c = 0; c < width; c++) row[c] = s.stats[i * width + c] as number;
    out[i] = taskScore(s.task, metricsFromSums(s.task, row, 1));
  }
  return out;
}

/** Competition ranks: 1 + how many scores are strictly higher (by more than 1e-9). `sorted` is scratch space. */
function ranksOf(scores: ArrayLike<number>, out: Float64Array | number[], sorted?: Float64Array): void {
  const k = scores.length;
  const s = sorted ?? new Float64Array(k);
  for (let i = 0; i < k; i++) s[i] = scores[i] as number;
  s.sort();
  for (let i = 0; i < k; i++) {
    // Scores above v + 1e-9: k minus the first position holding a value above it.
    const v = (scores[i] as number) + 1e-9;
    let lo = 0;
    let hi = k;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((s[mid] as number) > v) hi = mid;
      else lo = mid + 1;
    }
    out[i] = 1 + (k - lo);
  }
}

/** What one task's resampling gives: per system its score in each replicate, and per item its own score. */
export interface TaskDraws {
  task: ItemStats['task'];
  names: string[];
  n: number;
  clusterOf: Int32Array;
  clusterCount: number;
  clustered: boolean;
  observed: number[];
  /** Per system, its score in each replicate (the replicates are shared: the systems are paired). */
  boot: Float64Array[];
  /**
   * Per system, its counts: read only for the systems tested in pairs (and for standard errors), so that a board's
   * thousands of entries need not be decoded for the hundred that are.
   */
  statsOf: (i: number) => ItemStats;
}

/**
 * The pairwise tests, the groups and the minimum detectable effect are computed among this many systems at most: the
 * best by score. Every system keeps its rank and rank interval (one pass over the replicates, O(R·k·log k)); tests
 * over all pairs would be O(k²) (12.5 million pairs at 5,000 entries, most of the minute a board of that size took
 * to rank) and a letter display over thousands of systems cannot be read.
 */
export const TESTED_TOP = 100;

/**
 * One task's paired bootstrap over items (clusters): every system scored on the same replicates. The counts are
 * laid out item by item (all systems' non-zero counts of item i together), so that a replicate adds each drawn
 * item's row once, weighted by how often it was drawn: integer work, zeros and items not drawn skipped.
 */
export function drawTask(
  systems: readonly RankInput[],
  o: Omit<RankOptions, 'alpha' | 'pairs'> & {
    /** Keep the replicates in shared memory, so that passing them between threads copies nothing. */
    shared?: boolean;
  },
): TaskDraws {
  const head = systems[0]?.stats as ItemStats;
  const task = head.task;
  const n = head.ids.length;
  const k = systems.length;
  const { width } = statsLayout(task);
  const kw = k * width;

  const { of, count } = clusterIndex(n, o.clusters);
  // Each cluster's items, compressed: cluster c holds clusterItems[clusterStart[c] … clusterStart[c + 1]).
  const clusterStart = new Int32Array(count + 1);
  for (let i = 0; i < n; i++) (clusterStart[(of[i] as number) + 1] as number)++;
  for (let c = 0; c < count; c++) (clusterStart[c + 1] as number) += clusterStart[c] as number;
  const clusterItems = new Int32Array(n);
  const fill = clusterStart.slice(0, count);
  for (let i = 0; i < n; i++) clusterItems[(fill[of[i] as number] as number)++] = i;
  const rng = createRng((o.seed ^ hashName(task.name)) >>> 0);
  const R = o.resamples;
  // Per item and count, the value most systems have (the baseline: an easy item is right for nearly all, and
  // RuMedNER's token and gold-entity counts are the same for all); a replicate sums the baselines once and each
  // system's departures from them, which are few where systems agree.
  const baseline = new Int32Array(n * width);
  const start = new Int32Array(n + 1);
  const at: number[] = [];
  const value: number[] = [];
  const tally = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < width; c++) {
      let mode = 0;
      let most = 0;
      let ones = 0;
      let binary = true;
      for (let j = 0; j < k && binary; j++) {
        const v = (systems[j] as RankInput).stats.stats[i * width + c] as number;
        if (v === 1) ones++;
        else if (v !== 0) binary = false;
      }
      if (binary) {
        baseline[i * width + c] = 2 * ones > k ? 1 : 0;
        continue;
      }
      tally.clear();
      for (let j = 0; j < k; j++) {
        const v = (systems[j] as RankInput).stats.stats[i * width + c] as number;
        const seen = (tally.get(v) ?? 0) + 1;
        tally.set(v, seen);
        if (seen > most) {
          most = seen;
          mode = v;
        }
      }
      baseline[i * width + c] = mode;
    }
    for (let j = 0; j < k; j++)
      for (let c = 0; c < width; c++) {
        const v =
          ((systems[j] as RankInput).stats.stats[i * width + c] as number) -
          (baseline[i * width + c] as number);
        if (v === 0) continue;
        at.push(j * width + c);
        value.push(v);
      }
    start[i + 1] = at.length;
  }
  const positions = Int32Array.from(at);
  const values = Int32Array.from(value);
  const sums = new Int32Array(kw);
  const baseSums = new Int32Array(width);
  const one = new Float64Array(width);
  /** Adds every item, item i drawn weights[i] times (or once each without weights): the hot loop. */
  const addAll = (weights: Int32Array | null) => {
    sums.fill(0);
    baseSums.fill(0);
    for (let i = 0; i < n; i++) {
      const w = weights ? (weights[i] as number) : 1;
      if (w === 0) continue;
      const end = start[i + 1] as number;
      for (let t = start[i] as number; t < end; t++)
        (sums[positions[t] as number] as number) += w * (values[t] as number);
      for (let c = 0; c < width; c++) (baseSums[c] as number) += w * (baseline[i * width + c] as number);
    }
  };
  const scores = (drawn: number, out: (j: number, score: number) => void) => {
    for (let j = 0; j < k; j++) {
      for (let c = 0; c < width; c++) one[c] = (baseSums[c] as number) + (sums[j * width + c] as number);
      out(j, scoreFromSums(task, one, drawn));
    }
  };
  addAll(null);
  const observed: number[] = new Array(k);
  scores(n, (j, v) => {
    observed[j] = v;
  });
  const bytes = systems.length * R * Float64Array.BYTES_PER_ELEMENT;
  const block = new Float64Array(o.shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes));
  const boot = systems.map((_, j) => block.subarray(j * R, (j + 1) * R));
  const weights = new Int32Array(n);
  const picks = new Uint32Array(count);
  for (let r = 0; r < R; r++) {
    weights.fill(0);
    rng.fillInts(picks, count);
    for (let g = 0; g < count; g++) {
      const c = picks[g] as number;
      const end = clusterStart[c + 1] as number;
      for (let t = clusterStart[c] as number; t < end; t++) (weights[clusterItems[t] as number] as number)++;
    }
    let drawn = 0;
    for (let i = 0; i < n; i++) drawn += weights[i] as number;
    addAll(weights);
    scores(drawn, (j, v) => {
      (boot[j] as Float64Array)[r] = v;
    });
  }
  return {
    task,
    names: systems.map((s) => s.name),
    n,
    clusterOf: of,
    clusterCount: count,
    clustered: o.clusters !== undefined,
    observed,
    boot,
    statsOf: (j) => (systems[j] as RankInput).stats,
  };
}

/**
 * Draws assembled from replicate rows drawn elsewhere (kept between rankings, or drawn a few systems at a time):
 * a system's row depends only on its own counts, the seed, the task and the items' clusters, so a row drawn alone
 * is bit for bit the row drawn with the whole board.
 */
export function drawsFromRows(
  task: ItemStats['task'],
  rows: { names: string[]; observed: number[]; boot: Float64Array[]; statsOf: (i: number) => ItemStats },
  o: { n: number; clusters?: readonly string[] },
): TaskDraws {
  const { of, count } = clusterIndex(o.n, o.clusters);
  return {
    task,
    n: o.n,
    clusterOf: of,
    clusterCount: count,
    clustered: o.clusters !== undefined,
    ...rows,
  };
}

/** A system's first column (accuracy: right or wrong per item), for McNemar's counts. */
function firstColumn(s: ItemStats): Float64Array {
  const { width } = statsLayout(s.task);
  const n = s.ids.length;
  const col = new Float64Array(n);
  for (let i = 0; i < n; i++) col[i] = s.stats[i * width] as number;
  return col;
}

/**
 * Each system's rank in each replicate, from the replicates' scores. A block of replicates at a time, copied out of
 * each system's row together: at thousands of systems, reading one replicate across all rows touched a cache line
 * per system per replicate.
 */
export function replicateRanks(boot: readonly Float64Array[], R: number, shared = false): Float64Array[] {
  const k = boot.length;
  const bytes = k * R * Float64Array.BYTES_PER_ELEMENT;
  const all = new Float64Array(shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes));
  const ranks = boot.map((_, s) => all.subarray(s * R, (s + 1) * R));
  const B = 16;
  const block = new Float64Array(B * k);
  const blockRanks = new Float64Array(B * k);
  const rk = new Float64Array(k);
  const scratch = new Float64Array(k);
  for (let r0 = 0; r0 < R; r0 += B) {
    const m = Math.min(B, R - r0);
    for (let s = 0; s < k; s++) {
      const row = boot[s] as Float64Array;
      for (let b = 0; b < m; b++) block[b * k + s] = row[r0 + b] as number;
    }
    for (let b = 0; b < m; b++) {
      ranksOf(block.subarray(b * k, (b + 1) * k), rk, scratch);
      blockRanks.set(rk, b * k);
    }
    for (let s = 0; s < k; s++) {
      const row = ranks[s] as Float64Array;
      for (let b = 0; b < m; b++) row[r0 + b] = blockRanks[b * k + s] as number;
    }
  }
  return ranks;
}

/**
 * Kept replicate ranks (`replicateRanks`) moved to another set of systems, in place: a system's rank in a replicate
 * is 1 + the systems above it there (by more than 1e-9, as `ranksOf` counts), so one removed above it takes one
 * off and one added above it adds one; an added system's ranks are counted against the whole new set. O(R·k) per
 * system added or removed, where ranking anew sorts every replicate: the same ranks, exactly (integers).
 * `kept[i]` are the ranks of the system whose row is `boot[keptAt[i]]`; returns the ranks of every system of `boot`.
 */
export function moveRanks(
  boot: readonly Float64Array[],
  kept: readonly Float64Array[],
  keptAt: readonly number[],
  removed: readonly Float64Array[],
  shared = false,
): Float64Array[] {
  const k = boot.length;
  const R = boot[0]?.length ?? 0;
  const out: (Float64Array | undefined)[] = new Array(k);
  keptAt.forEach((at, i) => {
    out[at] = kept[i] as Float64Array;
  });
  const added: number[] = [];
  for (let s = 0; s < k; s++) if (!out[s]) added.push(s);
  for (let i = 0; i < keptAt.length; i++) {
    const ranks = kept[i] as Float64Array;
    const own = boot[keptAt[i] as number] as Float64Array;
    for (const x of removed)
      for (let r = 0; r < R; r++) if ((x[r] as number) > (own[r] as number) + 1e-9) (ranks[r] as number)--;
    for (const a of added) {
      const x = boot[a] as Float64Array;
      for (let r = 0; r < R; r++) if ((x[r] as number) > (own[r] as number) + 1e-9) (ranks[r] as number)++;
    }
  }
  const bytes = added.length * R * Float64Array.BYTES_PER_ELEMENT;
  const block = new Float64Array(shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes));
  added.forEach((a, n) => {
    const ranks = block.subarray(n * R, (n + 1) * R);
    const own = boot[a] as Float64Array;
    for (let r = 0; r < R; r++) ranks[r] = 1;
    for (let s = 0; s < k; s++) {
      const x = boot[s] as Float64Array;
      for (let r = 0; r < R; r++) if ((x[r] as number) > (own[r] as number) + 1e-9) (ranks[r] as number)++;
    }
    out[a] = ranks;
  });
  return out as Float64Array[];
}

/**
 * The `at`-th smallest value (0-based) of `values`, reordering them: Hoare's selection, O(n) on average, where a
 * rank interval needs two order statistics of each system's R ranks, not a sort of them.
 */
function select(values: Float64Array, at: number): number {
  let lo = 0;
  let hi = values.length - 1;
  while (lo < hi) {
    const pivot = values[(lo + hi) >>> 1] as number;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while ((values[i] as number) < pivot) i++;
      while ((values[j] as number) > pivot) j--;
      if (i <= j) {
        const t = values[i] as number;
        values[i] = values[j] as number;
        values[j] = t;
        i++;
        j--;
      }
    }
    if (at <= j) hi = j;
    else if (at >= i) lo = i;
    else return values[at] as number;
  }
  return values[at] as number;
}

/**
 * Two-sided p of the paired bootstrap test in its normal form: the difference over the standard deviation of its
 * replicates. A count of replicates cannot go below 1/(R + 1), which no Holm correction over a board's thousands of
 * pairs would ever pass; the z form can.
 */
function bootstrapP(se: number, observed: number): number {
  if (se > 0) return Math.min(1, 2 * normalUpper(Math.abs(observed) / se));
  return Math.abs(observed) > 1e-9 ? 0 : 1;
}

function sdOfDiff(a: Float64Array, b: Float64Array): number {
  const R = a.length;
  if (R < 2) return 0;
  let m = 0;
  for (let r = 0; r < R; r++) m += (b[r] as number) - (a[r] as number);
  m /= R;
  let ss = 0;
  for (let r = 0; r < R; r++) ss += ((b[r] as number) - (a[r] as number) - m) ** 2;
  return Math.sqrt(ss / (R - 1));
}

function sd(values: Float64Array): number {
  return sdOfDiff(new Float64Array(values.length), values);
}

/** Systems of a set of draws: their observed scores, replicates and the pair test between two of them. */
interface Ranked {
  names: readonly string[];
  observed: readonly number[];
  boot: readonly Float64Array[];
  se: (i: number) => number;
  /** Each system's rank in each replicate, where kept from an earlier ranking (`moveRanks`); read, not changed. */
  ranks?: readonly Float64Array[];
  /** The pair test among the systems `tested` (ascending indexes), prepared for that set; called with two of them. */
  tests: (tested: readonly number[]) => (i: number, j: number) => { p: number; test: PairTest; se: number };
}

/**
 * The ranking of systems: ranks and intervals for all; pairs with Holm's correction, groups and the MDE among the
 * best `top` by score (all of them on a board no larger: then exactly the all-pairs ranking). Holm's family is the
 * pairs tested, so a p-value is corrected for the comparisons made, not for those left out.
 */
function rankFrom(
  d: Ranked,
  alpha: number,
  listPairs: boolean,
  top: number,
): Omit<TaskRanking, 'n' | 'clusters'> {
  const k = d.names.length;
  const R = d.boot[0]?.length ?? 0;
  // Best first; a stable sort, so ties keep the input order (and the letters the same order as before the bound).
  const order = d.names
    .map((_, i) => i)
    .sort((x, y) => (d.observed[y] as number) - (d.observed[x] as number));
  const tested = k <= top ? order.map((_, i) => i) : order.slice(0, top).sort((x, y) => x - y);
  const m = tested.length;
  const pair = d.tests(tested);
  const p: number[] = [];
  const pairSe: number[] = [];
  const pairs: RankedPair[] = [];
  const diffs = new Float64Array(R);
  for (let x = 0; x < m; x++)
    for (let y = x + 1; y < m; y++) {
      const [i, j] = [tested[x] as number, tested[y] as number];
      const t = pair(i, j);
      p.push(t.p);
      // Entries that answer every item alike (copies) have no spread to detect a difference with: left out, and
      // with no other pair the detectable difference is none, not 0 ("detects ≥ 0.0" reads as "any gap").
      if (t.se > 0) pairSe.push(t.se);
      if (!listPairs) continue;
      const bi = d.boot[i] as Float64Array;
      const bj = d.boot[j] as Float64Array;
      for (let r = 0; r < R; r++) diffs[r] = (bj[r] as number) - (bi[r] as number);
      diffs.sort();
      const diff = (d.observed[j] as number) - (d.observed[i] as number);
      pairs.push({
        a: d.names[i] as string,
        b: d.names[j] as string,
        diff,
        ci: R > 0 ? [percentile(diffs, 2.5), percentile(diffs, 97.5)] : [diff, diff],
        p_value: t.p,
        p_holm: t.p,
        test: t.test,
      });
    }
  const adjusted = holm(p);
  pairs.forEach((pair, x) => {
    pair.p_holm = adjusted[x] as number;
  });
  // Pair x of (tested[a], tested[b]), a < b, in the order above.
  const pairIndex = (a: number, b: number) => a * m - (a * (a + 1)) / 2 + (b - a - 1);
  const position = new Map(tested.map((i, x) => [d.names[i] as string, x]));
  const letters = compactLetters(
    order.filter((i) => position.has(d.names[i] as string)).map((i) => d.names[i] as string),
    (u, v) => {
      const [a, b] = [position.get(u) as number, position.get(v) as number].sort((s, t) => s - t) as [
        number,
        number,
      ];
      return (adjusted[pairIndex(a, b)] as number) < alpha;
    },
  );
  const ranks: number[] = new Array(k);
  ranksOf(d.observed, ranks);
  // Selection reorders: kept ranks are copied first.
  const drawnRanks = d.ranks ? d.ranks.map((x) => x.slice()) : replicateRanks(d.boot, R);
  return {
    mde: pairSe.length > 0 ? Z_SUM * (median(pairSe) as number) : null,
    systems: d.names.map((name, i) => {
      const draws = drawnRanks[i] as Float64Array;
      return {
        name,
        score: d.observed[i] as number,
        se: d.se(i),
        rank: ranks[i] as number,
        rank_ci:
          R > 0
            ? [select(draws, Math.floor(0.025 * (R - 1))), select(draws, Math.ceil(0.975 * (R - 1)))]
            : [ranks[i] as number, ranks[i] as number],
        // Below the tested top: no letters (its rank interval says where it stands).
        group: letters.get(name) ?? '',
      };
    }),
    pairs,
  };
}

/**
 * One task's ranking from its draws, over the systems named in `only` (all when absent); pairs, groups and the MDE
 * among the best `top` of them (`TESTED_TOP`); `se: false` leaves standard errors out (NaN) where nobody reads them
 * (a board), so that its thousands of entries need not be decoded.
 */
export function rankDraws(
  d: TaskDraws,
  o: {
    alpha?: number;
    pairs?: boolean;
    only?: readonly number[];
    top?: number;
    se?: boolean;
    /** Per system of `only`, its rank in each replicate, kept (`moveRanks`). */
    ranks?: readonly Float64Array[];
  },
): TaskRanking {
  const pick = o.only ?? d.names.map((_, i) => i);
  const R = d.boot[0]?.length ?? 0;
  // The test follows the score: a task scored by accuracy gets McNemar whatever metrics are reported beside it.
  const accuracyOnly = isAccuracyScore(d.task) && !d.clustered;
  const itemMean = isItemMeanScore(d.task);
  const centredOf = (x: number) =>
    centred(itemScores(d.statsOf(pick[x] as number)) as Float64Array, d.clusterOf, d.clusterCount);
  const ranked = rankFrom(
    {
      names: pick.map((i) => d.names[i] as string),
      ...(o.ranks ? { ranks: o.ranks } : {}),
      observed: pick.map((i) => d.observed[i] as number),
      boot: pick.map((i) => d.boot[i] as Float64Array),
      se: (x) => {
        if (o.se === false) return Number.NaN;
        if (itemMean) {
          const c = centredOf(x);
          return Math.sqrt(dot(c, c)) / d.n;
        }
        return R > 1 ? sd(d.boot[pick[x] as number] as Float64Array) : 0;
      },
      tests: (tested) => {
        const m = tested.length;
        const at = new Map(tested.map((x, a) => [x, a]));
        // Every pair's standard error from one matrix: with D_a the centred cluster sums of system a's item
        // scores, SE(b − a)² = |D_b − D_a|² / n² = (Q_aa + Q_bb − 2·Q_ab) / n², Q = D·Dᵀ (Miller's formula,
        // expanded).
        const gram = itemMean ? gramOf(tested.map(centredOf)) : null;
        // McNemar's discordant pairs: right only by A = |A| − |A ∧ B|.
        const firsts = accuracyOnly ? tested.map((x) => firstColumn(d.statsOf(pick[x] as number))) : null;
        const both = firsts ? gramOf(firsts) : null;
        const right = firsts?.map((f) => f.reduce((u, v) => u + v, 0));
        return (x, y) => {
          const [i, j] = [pick[x] as number, pick[y] as number];
          const observed = (d.observed[j] as number) - (d.observed[i] as number);
          if (!gram) {
            const se = sdOfDiff(d.boot[i] as Float64Array, d.boot[j] as Float64Array);
            return { p: R > 1 ? bootstrapP(se, observed) : 1, test: 'paired bootstrap', se };
          }
          const [a, b] = [at.get(x) as number, at.get(y) as number];
          const q =
            (gram[a * m + a] as number) + (gram[b * m + b] as number) - 2 * (gram[a * m + b] as number);
          const se = Math.sqrt(Math.max(0, q)) / d.n;
          if (both && right) {
            const common = both[a * m + b] as number;
            const p = exactMcNemar(
              Math.round((right[a] as number) - common),
              Math.round((right[b] as number) - common),
            );
            return { p, test: 'exact McNemar', se };
          }
          return { p: bootstrapP(se, observed), test: d.clustered ? 'z-test, clustered' : 'z-test', se };
        };
      },
    },
    o.alpha ?? 0.05,
    o.pairs ?? true,
    o.top ?? TESTED_TOP,
  );
  return { n: d.n, clusters: d.clustered ? d.clusterCount : null, ...ranked };
}

/** A vector's centred cluster sums (each item its own cluster where there are none: then the vector itself). */
function centred(v: Float64Array, of: Int32Array, count: number): Float64Array {
  let mean = 0;
  for (let i = 0; i < v.length; i++) mean += v[i] as number;
  mean /= v.length || 1;
  const sums = new Float64Array(count);
  for (let i = 0; i < v.length; i++) (sums[of[i] as number] as number) += (v[i] as number) - mean;
  return sums;
}

function dot(a: Float64Array, b: Float64Array): number {
  let out = 0;
  for (let t = 0; t < a.length; t++) out += (a[t] as number) * (b[t] as number);
  return out;
}

/** The Gram matrix of vectors (m × m, row-major): their dot products. */
function gramOf(rows: readonly Float64Array[]): Float64Array {
  const m = rows.length;
  const out = new Float64Array(m * m);
  for (let a = 0; a < m; a++) {
    const va = rows[a] as Float64Array;
    for (let b = a; b < m; b++) {
      const d = dot(va, rows[b] as Float64Array);
      out[a * m + b] = d;
      out[b * m + a] = d;
    }
  }
  return out;
}

/** One task: scores, standard errors, rank intervals, pairwise tests with Holm's correction, groups and the MDE. */
export function rankTask(systems: readonly RankInput[], o: RankOptions): TaskRanking {
  if (systems.length === 0) return { n: 0, clusters: null, mde: null, systems: [], pairs: [] };
  return rankDraws(drawTask(systems, o), o);
}

/**
 * The overall score (the mean of the task scores) of systems that have every task: each task resampled on its own,
 * replicate r of the overall is the mean of replicate r of each task; pairs by the paired bootstrap test.
 * `systems[t]` names, per task, the index in that task's draws of each overall system.
 */
export function rankOverallDraws(
  tasks: readonly Pick<TaskDraws, 'names' | 'observed' | 'boot'>[],
  systems: readonly string[],
  o: { alpha?: number; pairs?: boolean; top?: number; ranks?: readonly Float64Array[] },
): Omit<TaskRanking, 'n' | 'clusters'> {
  const R = tasks[0]?.boot[0]?.length ?? 0;
  if (systems.length === 0 || R === 0) return { mde: null, systems: [], pairs: [] };
  const indexes = tasks.map((d) => {
    const at = new Map(d.names.map((name, i) => [name, i]));
    return systems.map((name) => at.get(name) as number);
  });
  const observed = systems.map(
    (_, s) =>
      tasks.reduce((sum, d, t) => sum + (d.observed[(indexes[t] as number[])[s] as number] as number), 0) /
      tasks.length,
  );
  const boot = systems.map((_, s) => {
    const out = new Float64Array(R);
    tasks.forEach((d, t) => {
      const b = d.boot[(indexes[t] as number[])[s] as number] as Float64Array;
      for (let r = 0; r < R; r++) (out[r] as number) += (b[r] as number) / tasks.length;
    });
    return out;
  });
  return rankFrom(
    {
      names: systems,
      ...(o.ranks ? { ranks: o.ranks } : {}),
      observed,
      boot,
      se: (i) => sd(boot[i] as Float64Array),
      tests: () => (i, j) => {
        const se = sdOfDiff(boot[i] as Float64Array, boot[j] as Float64Array);
        const diff = (observed[j] as number) - (observed[i] as number);
        return { p: bootstrapP(se, diff), test: 'paired bootstrap', se };
      },
    },
    o.alpha ?? 0.05,
    o.pairs ?? true,
    o.top ?? TESTED_TOP,
  );
}

/** The overall of systems given per task (the same systems, in the same order, in each). */
export function rankOverall(
  tasks: readonly { systems: readonly RankInput[]; clusters?: readonly string[] }[],
  o: Omit<RankOptions, 'clusters'>,
): Omit<TaskRanking, 'n' | 'clusters'> {
  const names = tasks[0]?.systems.map((s) => s.name) ?? [];
  if (names.length === 0 || o.resamples === 0) return { mde: null, systems: [], pairs: [] };
  const draws = tasks.map((t) =>
    drawTask(t.systems, { ...o, ...(t.clusters ? { clusters: t.clusters } : {}) }),
  );
  return rankOverallDraws(draws, names, o);
}

/** FNV-1a of a task name: each task draws from its own stream, whatever else is ranked with it. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
