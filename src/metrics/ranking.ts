/**
 * Which systems are really different on one test set: standard errors, paired tests, rank intervals, tie groups and
 * the minimum detectable effect, for a set of systems scored on the same items.
 *
 * - Standard errors of a score that is a mean over items, clustered where items are not independent (RuMedNLI's
 *   hypotheses share a premise): SE_C = sqrt(Σ_c (Σ_{i∈c} (s_i − s̄))²) / n (Miller, 2024, "Adding Error Bars to
 *   Evals: A Statistical Approach to Language Model Evaluations", eq. 4); without clusters each item is its own.
 *   A score that is no item mean (RuMedNER's token accuracy and entity F1) takes the bootstrap's standard deviation.
 * - Paired tests between every two systems: the exact McNemar test (McNemar, 1947; two-sided binomial test on the
 *   discordant pairs) for accuracy on a task without clusters; otherwise approximate randomization (Noreen, 1989),
 *   swapping the two systems' outputs per item, or per cluster where items share one. P-values are Holm-corrected
 *   (Holm, 1979) over the pairs of each task.
 * - Rank intervals from a paired bootstrap over items (clusters) that re-ranks every system in each replicate (Hall
 *   and Miller, 2009, "Using the bootstrap to quantify the authority of an empirical ranking"): marginal 95%
 *   intervals, ties sharing the better rank.
 * - Tie groups as a compact letter display (Piepho, 2004, "An algorithm for a letter-based representation of
 *   all-pairwise comparisons"): systems that share a letter are not distinguishable at α after Holm's correction.
 * - The minimum detectable effect of a paired comparison at α = 0.05 (two-sided) and 80% power: (z_{1−α/2} + z_{0.8})
 *   × SE of the paired difference (for accuracy, 100·sqrt(p_d / n) with p_d the discordance: Connor, 1987, "Sample
 *   size for testing differences in proportions for the paired-sample design"), the median over the task's pairs.
 */
import { type ItemStats, mean, metricsFromSums, statsLayout, sumRows, taskScore } from './item-stats.js';
import { createRng } from './rng.js';

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
  /** Per item, the cluster it belongs to (items of one cluster are resampled and swapped together). */
  clusters?: readonly string[];
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

export interface RankedPair {
  a: string;
  b: string;
  /** B − A in points. */
  diff: number;
  ci: [number, number];
  p_value: number;
  p_holm: number;
  test: 'exact McNemar' | 'approximate randomization' | 'approximate randomization by cluster';
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

/** Natural log of n choose k, through lgamma-free sums (n is at most a few thousand here). */
function logChoose(n: number, k: number): number {
  let s = 0;
  for (let i = 1; i <= k; i++) s += Math.log(n - k + i) - Math.log(i);
  return s;
}

/**
 * The exact two-sided McNemar test: of the b + c discordant pairs, b went one way; under the null each goes either
 * way with probability 1/2. p = min(1, 2 · P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2).
 */
export function exactMcNemar(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  let tail = 0;
  for (let i = 0; i <= k; i++) tail += Math.exp(logChoose(n, i) - n * Math.LN2);
  return Math.min(1, 2 * tail);
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
export function clusteredSe(values: readonly number[], clusters?: readonly string[]): number {
  const n = values.length;
  if (n === 0) return 0;
  const m = mean(values);
  const sums = new Map<string, number>();
  values.forEach((v, i) => {
    const c = clusters?.[i] ?? String(i);
    sums.set(c, (sums.get(c) ?? 0) + (v - m));
  });
  let total = 0;
  for (const s of sums.values()) total += s * s;
  return Math.sqrt(total) / n;
}

/**
 * The compact letter display of Piepho (2004), insert-and-absorb: start from one group of all; for each pair that
 * differs, split every group holding both into two (one without each), then drop groups contained in others.
 * Letters go to groups in the order of their best system (`order`: systems best first).
 */
export function compactLetters(
  order: readonly string[],
  differ: (a: string, b: string) => boolean,
): Map<string, string> {
  let groups: Set<string>[] = [new Set(order)];
  for (let i = 0; i < order.length; i++)
    for (let j = i + 1; j < order.length; j++) {
      const a = order[i] as string;
      const b = order[j] as string;
      if (!differ(a, b)) continue;
      const next: Set<string>[] = [];
      for (const g of groups) {
        if (g.has(a) && g.has(b)) {
          next.push(new Set([...g].filter((x) => x !== a)), new Set([...g].filter((x) => x !== b)));
        } else next.push(g);
      }
      // Absorb: a group inside another says nothing more.
      groups = next.filter(
        (g, k) =>
          !next.some(
            (h, l) =>
              l !== k && h.size >= g.size && [...g].every((x) => h.has(x)) && (h.size > g.size || l < k),
          ),
      );
    }
  const rankOf = new Map(order.map((s, i) => [s, i]));
  const first = (g: Set<string>) => Math.min(...[...g].map((s) => rankOf.get(s) as number));
  groups.sort((x, y) => first(x) - first(y));
  const letters = new Map(order.map((s) => [s, '']));
  groups.forEach((g, k) => {
    const letter = letterOf(k);
    for (const s of g) letters.set(s, (letters.get(s) as string) + letter);
  });
  return letters;
}

const letterOf = (k: number): string =>
  k < 26 ? String.fromCharCode(97 + k) : `${letterOf(Math.floor(k / 26) - 1)}${letterOf(k % 26)}`;

/** The task's score from the column sums of a set of rows. */
function scoreOf(s: ItemStats, rows?: ArrayLike<number>): number {
  const { width } = statsLayout(s.task);
  const n = rows ? rows.length : s.ids.length;
  return taskScore(s.task, metricsFromSums(s.task, sumRows(s.stats, width, rows), n));
}

/** Per item, its own score (for tasks whose score is a mean over items), or undefined (RuMedNER). */
function itemScores(s: ItemStats): number[] | undefined {
  if (s.task.kind === 'tagging') return undefined;
  return s.ids.map((_, i) => scoreOf(s, [i]));
}

/** Groups of row indexes: one per cluster, or one per item. */
function clusterRows(n: number, clusters?: readonly string[]): number[][] {
  if (!clusters) return Array.from({ length: n }, (_, i) => [i]);
  const by = new Map<string, number[]>();
  for (let i = 0; i < n; i++) {
    const c = clusters[i] as string;
    by.set(c, [...(by.get(c) ?? []), i]);
  }
  return [...by.values()];
}

const quantileSorted = (sorted: Float64Array | number[], q: number): number => {
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
};

/** Competition ranks: 1 + how many scores are strictly higher. */
const ranksOf = (scores: readonly number[]): number[] =>
  scores.map((s) => 1 + scores.filter((t) => t > s + 1e-9).length);

/** What one task's resampling gives: per system its score in each replicate, per pair its randomization draws. */
interface TaskDraws {
  n: number;
  groups: number[][];
  observed: number[];
  boot: Float64Array[];
  ranks: Float64Array[];
  /** Per pair (i < j, in order), B − A under randomization. */
  perm: Float64Array[];
  perItem: (number[] | undefined)[];
}

function drawTask(systems: readonly RankInput[], o: RankOptions): TaskDraws {
  const first = systems[0]?.stats as ItemStats;
  const n = first.ids.length;
  const groups = clusterRows(n, o.clusters);
  const rng = createRng((o.seed ^ hashName(first.task.name)) >>> 0);
  const R = o.resamples;
  const k = systems.length;
  const observed = systems.map((s) => scoreOf(s.stats));
  // The bootstrap: clusters drawn with replacement; every system scored on the same draw, then ranked.
  const boot = systems.map(() => new Float64Array(R));
  const ranks = systems.map(() => new Float64Array(R));
  for (let r = 0; r < R; r++) {
    const rows: number[] = [];
    for (let g = 0; g < groups.length; g++) rows.push(...(groups[rng.int(groups.length)] as number[]));
    const scores = systems.map((s) => scoreOf(s.stats, rows));
    const rk = ranksOf(scores);
    for (let i = 0; i < k; i++) {
      (boot[i] as Float64Array)[r] = scores[i] as number;
      (ranks[i] as Float64Array)[r] = rk[i] as number;
    }
  }
  const perm: Float64Array[] = [];
  for (let i = 0; i < k; i++)
    for (let j = i + 1; j < k; j++)
      perm.push(
        randomization((systems[i] as RankInput).stats, (systems[j] as RankInput).stats, groups, R, rng),
      );
  return { n, groups, observed, boot, ranks, perm, perItem: systems.map((s) => itemScores(s.stats)) };
}

/** Two-sided p of approximate randomization: (count of draws at least as extreme + 1) / (R + 1). */
function permP(draws: Float64Array, observed: number): number {
  let extreme = 0;
  for (const d of draws) if (Math.abs(d) >= Math.abs(observed) - 1e-9) extreme++;
  return (extreme + 1) / (draws.length + 1);
}

/** The ranking of systems from their draws: ranks and intervals, pairs with Holm's correction, groups, the MDE. */
function rankFromDraws(
  names: readonly string[],
  d: Omit<TaskDraws, 'groups' | 'n'>,
  pairTest: (i: number, j: number, pair: number) => { p: number; test: RankedPair['test']; se: number },
  se: (i: number) => number,
  alpha: number,
): Omit<TaskRanking, 'n' | 'clusters'> {
  const k = names.length;
  const pairs: RankedPair[] = [];
  const pairSe: number[] = [];
  let pair = 0;
  for (let i = 0; i < k; i++)
    for (let j = i + 1; j < k; j++) {
      const bi = d.boot[i] as Float64Array;
      const bj = d.boot[j] as Float64Array;
      const diffs = bj.map((v, r) => v - (bi[r] as number)).sort();
      const diff = (d.observed[j] as number) - (d.observed[i] as number);
      const ci: [number, number] =
        diffs.length > 0 ? [quantileSorted(diffs, 0.025), quantileSorted(diffs, 0.975)] : [diff, diff];
      const t = pairTest(i, j, pair++);
      pairSe.push(t.se);
      pairs.push({
        a: names[i] as string,
        b: names[j] as string,
        diff,
        ci,
        p_value: t.p,
        p_holm: t.p,
        test: t.test,
      });
    }
  const adjusted = holm(pairs.map((p) => p.p_value));
  pairs.forEach((p, i) => {
    p.p_holm = adjusted[i] as number;
  });
  const differ = new Set(pairs.filter((p) => p.p_holm < alpha).map((p) => `${p.a}\u0000${p.b}`));
  const order = names
    .map((name, i) => ({ name, score: d.observed[i] as number }))
    .sort((x, y) => y.score - x.score)
    .map((s) => s.name);
  const letters = compactLetters(
    order,
    (x, y) => differ.has(`${x}\u0000${y}`) || differ.has(`${y}\u0000${x}`),
  );
  const ranks = ranksOf(d.observed);
  return {
    mde: pairSe.length > 0 ? Z_SUM * medianOf(pairSe) : null,
    systems: names.map((name, i) => {
      const draws = Float64Array.from(d.ranks[i] as Float64Array).sort();
      const R = draws.length;
      return {
        name,
        score: d.observed[i] as number,
        se: se(i),
        rank: ranks[i] as number,
        rank_ci:
          R > 0
            ? [draws[Math.floor(0.025 * (R - 1))] as number, draws[Math.ceil(0.975 * (R - 1))] as number]
            : [ranks[i] as number, ranks[i] as number],
        group: letters.get(name) ?? '',
      };
    }),
    pairs,
  };
}

/** One task: scores, standard errors, rank intervals, pairwise tests with Holm's correction, groups and the MDE. */
export function rankTask(systems: readonly RankInput[], o: RankOptions): TaskRanking {
  const first = systems[0]?.stats;
  if (!first) return { n: 0, clusters: null, mde: null, systems: [], pairs: [] };
  const d = drawTask(systems, o);
  const accuracyOnly = first.task.kind === 'classification' && first.task.metrics.length === 1 && !o.clusters;
  const R = o.resamples;
  const ranked = rankFromDraws(
    systems.map((s) => s.name),
    d,
    (i, j, pair) => {
      const a = d.perItem[i];
      const b = d.perItem[j];
      const diff = (d.observed[j] as number) - (d.observed[i] as number);
      const se =
        a && b
          ? clusteredSe(
              b.map((v, t) => v - (a[t] as number)),
              o.clusters,
            )
          : R > 1
            ? sd((d.boot[j] as Float64Array).map((v, r) => v - ((d.boot[i] as Float64Array)[r] as number)))
            : 0;
      if (accuracyOnly && a && b) {
        let onlyA = 0;
        let onlyB = 0;
        for (let t = 0; t < d.n; t++) {
          if ((a[t] as number) > (b[t] as number)) onlyA++;
          else if ((b[t] as number) > (a[t] as number)) onlyB++;
        }
        return { p: exactMcNemar(onlyA, onlyB), test: 'exact McNemar', se };
      }
      return {
        p: R > 0 ? permP(d.perm[pair] as Float64Array, diff) : 1,
        test: o.clusters ? 'approximate randomization by cluster' : 'approximate randomization',
        se,
      };
    },
    (i) => {
      const values = d.perItem[i];
      if (values) return clusteredSe(values, o.clusters);
      return R > 1 ? sd(d.boot[i] as Float64Array) : 0;
    },
    o.alpha ?? 0.05,
  );
  return { n: d.n, clusters: o.clusters ? d.groups.length : null, ...ranked };
}

/**
 * The overall score (the mean of the task scores) of systems that have every task: each task resampled on its own,
 * replicate r of the overall is the mean of replicate r of each task; pairs by randomization within each task.
 */
export function rankOverall(
  tasks: readonly { systems: readonly RankInput[]; clusters?: readonly string[] }[],
  o: Omit<RankOptions, 'clusters'>,
): Omit<TaskRanking, 'n' | 'clusters'> {
  const names = tasks[0]?.systems.map((s) => s.name) ?? [];
  if (names.length === 0 || o.resamples === 0) {
    return { mde: null, systems: [], pairs: [] };
  }
  const draws = tasks.map((t) =>
    drawTask(t.systems, { ...o, ...(t.clusters ? { clusters: t.clusters } : {}) }),
  );
  const R = o.resamples;
  const avg = (pick: (d: TaskDraws) => Float64Array) => {
    const out = new Float64Array(R);
    for (let r = 0; r < R; r++) out[r] = mean(draws.map((d) => pick(d)[r] as number));
    return out;
  };
  const observed = names.map((_, i) => mean(draws.map((d) => d.observed[i] as number)));
  const boot = names.map((_, i) => avg((d) => d.boot[i] as Float64Array));
  const ranks = boot.map(() => new Float64Array(R));
  for (let r = 0; r < R; r++) {
    const rk = ranksOf(boot.map((b) => b[r] as number));
    rk.forEach((v, i) => {
      (ranks[i] as Float64Array)[r] = v;
    });
  }
  const pairCount = (names.length * (names.length - 1)) / 2;
  const perm = Array.from({ length: pairCount }, (_, p) => avg((d) => d.perm[p] as Float64Array));
  return rankFromDraws(
    names,
    { observed, boot, ranks, perm, perItem: names.map(() => undefined) },
    (i, j, pair) => ({
      p: permP(perm[pair] as Float64Array, (observed[j] as number) - (observed[i] as number)),
      test: 'approximate randomization',
      se: sd((boot[j] as Float64Array).map((v, r) => v - ((boot[i] as Float64Array)[r] as number))),
    }),
    (i) => sd(boot[i] as Float64Array),
    o.alpha ?? 0.05,
  );
}

/** Approximate randomization: each cluster's outputs swapped between the two with probability 1/2; B − A per draw. */
function randomization(
  a: ItemStats,
  b: ItemStats,
  groups: readonly number[][],
  R: number,
  rng: ReturnType<typeof createRng>,
): Float64Array {
  const { width } = statsLayout(a.task);
  const n = a.ids.length;
  const out = new Float64Array(R);
  const sa = new Float64Array(width);
  const sb = new Float64Array(width);
  for (let r = 0; r < R; r++) {
    sa.fill(0);
    sb.fill(0);
    for (const g of groups) {
      const swap = rng.next() < 0.5;
      for (const i of g)
        for (let c = 0; c < width; c++) {
          const x = a.stats[i * width + c] as number;
          const y = b.stats[i * width + c] as number;
          sa[c] = (sa[c] as number) + (swap ? y : x);
          sb[c] = (sb[c] as number) + (swap ? x : y);
        }
    }
    out[r] =
      taskScore(b.task, metricsFromSums(b.task, sb, n)) - taskScore(a.task, metricsFromSums(a.task, sa, n));
  }
  return out;
}

/** FNV-1a of a task name: each task draws from its own stream, whatever else is ranked with it. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

function sd(values: Float64Array): number {
  const m = values.reduce((s, v) => s + v, 0) / values.length;
  let ss = 0;
  for (const v of values) ss += (v - m) * (v - m);
  return Math.sqrt(ss / (values.length - 1));
}

function medianOf(values: readonly number[]): number {
  const s = [...values].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}
