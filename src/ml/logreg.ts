/**
 * L2-regularised logistic regression solved in the dual by coordinate descent (Yu, Huang and Lin, "Dual coordinate
 * descent methods for logistic regression and maximum entropy models", Machine Learning 85, 2011; the method of
 * LIBLINEAR's `-s 7`). Made for sparse, high-dimensional text features: one pass costs O(nnz), and on TF-IDF
 * character n-grams it converges in a few tens of passes, where a primal quasi-Newton method needs hundreds.
 *
 * Primal:  min_w  ½‖w‖² + C Σ_i log(1 + exp(−y_i wᵀx_i))
 * Dual:    min_α  ½ αᵀQα + Σ_i [α_i log α_i + (C − α_i) log(C − α_i)],  0 < α_i < C,  Q_ij = y_i y_j x_iᵀx_j
 * with w = Σ_i α_i y_i x_i. The intercept is a constant feature `bias` appended to every x_i (so, as in LIBLINEAR,
 * it is regularised too).
 */
import type { Rng } from '../metrics/rng.js';
import { createKWideArena, type KWideArena } from './logreg-wasm.js';
import type { CsrMatrix } from './sparse.js';

export interface BinaryLrOptions {
  /** Inverse regularisation strength (scikit-learn's C). */
  C: number;
  /** Stop when the largest dual gradient of a pass falls below this. */
  eps: number;
  maxEpochs: number;
  /** Value of the constant feature that carries the intercept; 0 fits no intercept. */
  bias: number;
}

const NEWTON_STEPS = 100;
/** Every this many passes (and on the first two), every pair is visited and convergence is decided. */
const FULL_PASS_EVERY = 20;
const SHRINK_RATIO = 10;
/** A row goes through the SIMD loops (every problem's lane) when at least 1/WIDE_SHARE of the problems are on its list. */
const WIDE_SHARE = 16;
/** Converged problems move out of the weight blocks this many at a time, through as many scratch columns. */
const RETIRE_GROUP = 8;

/**
 * Minimises, over z in (0, C), g(z) = z log z + (C − z) log(C − z) + ½a(z − z0)² + b(z − z0), for a root on the
 * small side (z ≤ C/2), where log(z / (C − z)) is well conditioned. Newton's method, halving towards 0 by a factor
 * of 10 whenever a step would leave the interval (Yu et al., Algorithm 4).
 */
function solveSmallSide(a: number, z0: number, b: number, C: number, tol: number): number {
  let z = Math.min(z0, C / 2);
  for (let step = 0; step < NEWTON_STEPS; step++) {
    const g1 = Math.log(z / (C - z)) + a * (z - z0) + b;
    if (Math.abs(g1) < tol) break;
    const g2 = a + C / (z * (C - z));
    const next = z - g1 / g2;
    z = next <= 0 ? z * 0.1 : next;
  }
  return z;
}

/**
 * Trains one-vs-rest binary problems together, one per entry of `positives` (the class id treated as +1; every
 * other label is −1), on the same rows of `x`.
 *
 * The weights are stored feature-major (`W[j * K + c]` for feature j and problem c, the intercept at j = cols), so
 * that visiting a row reads and writes one contiguous block of K weights per non-zero: the K problems share every
 * pass over the data and its memory traffic, which is what makes one-vs-rest over 100+ classes fast. The problems
 * do not interact: each takes its own exact coordinate steps in a shared visiting order and stops on its own when
 * its largest dual gradient of a pass falls below `eps`, so a problem's weights depend only on the seed, not on
 * which other problems were trained beside it (or on how many threads split them).
 */
export function trainOneVsRest(
  x: CsrMatrix,
  labels: Int32Array,
  positives: readonly number[],
  options: BinaryLrOptions,
  rng: Rng,
  onEpoch?: (epoch: number, active: number, violation: number) => void,
): { weights: Float32Array; epochs: Int32Array } {
  const pieces = trainOneVsRestPieces(x, labels, positives, options, rng, onEpoch);
  return { weights: assembleOneVsRest(x, labels, positives, pieces), epochs: pieces.epochs };
}

/**
 * What training leaves to build the weights from ({@link factorOneVsRest}, {@link assembleOneVsRest}). The weights
 * of the private columns (see {@link splitPrivateFeatures}) are not among them: they follow from α and the rows.
 */
export interface OvrPieces {
  /** The shared columns' blocks of K weights, then the intercept's (block s at `s * K`). */
  weights: Float32Array;
  /** Shared block s's column. */
  sharedToColumn: Int32Array;
  /** α, row-major (`alpha[i * K + c]`). */
  alpha: Float64Array;
  /** Passes each problem took. */
  epochs: Int32Array;
}

/** The training part of {@link trainOneVsRest}: the dual solver on the shared columns, and what assembly needs. */
export function trainOneVsRestPieces(
  x: CsrMatrix,
  labels: Int32Array,
  positives: readonly number[],
  options: BinaryLrOptions,
  rng: Rng,
  onEpoch?: (epoch: number, active: number, violation: number) => void,
  /** Called before the weights are copied out of the arena, which then holds them twice (see ./ovr-parallel.ts). */
  beforeCopy?: () => void,
): OvrPieces {
  const K = positives.length;
  const split = splitPrivateFeatures(x, K);
  const { alpha, epochs, S, lane, slot } = solveDual(
    split.shared,
    split.arena,
    split.own,
    labels,
    positives,
    options,
    rng,
    onEpoch,
  );
  beforeCopy?.();
  // Shared columns from the arena: a problem still training at the end from its lane, a retired one from its column.
  const shared = split.arena.weights;
  const blocks = split.sharedToColumn.length + 1;
  const weights = new Float32Array(blocks * K);
  // Problem c's weight of block s is at first[c] + s · step[c]: a retired problem's column, or its lane.
  const first = new Int32Array(K);
  const step = new Int32Array(K);
  for (let c = 0; c < K; c++) {
    const q = slot[c] as number;
    first[c] = q >= 0 ? shared.length - (RETIRE_GROUP + q + 1) * blocks : (lane[c] as number);
    step[c] = q >= 0 ? 1 : S;
  }
  // A tile of blocks at a time, each problem's stretch of it read in one go: a retired problem's weights lie in a
  // column of their own, so reading a block's K weights together touched K columns far apart (0.3 s for RuMedTop3's
  // 300k blocks of 52, against 0.1 s by tiles of 256, mostly the fresh pages written).
  const TILE = 256;
  for (let s0 = 0; s0 < blocks; s0 += TILE) {
    const s1 = Math.min(blocks, s0 + TILE);
    for (let c = 0; c < K; c++) {
      const st = step[c] as number;
      let from = (first[c] as number) + s0 * st;
      for (let s = s0; s < s1; s++, from += st) weights[s * K + c] = shared[from] as number;
    }
  }
  return { weights, sharedToColumn: split.sharedToColumn, alpha, epochs };
}

/** {@link FactoredWeights.place} of a column in no row: its weights are 0. */
export const NO_ROW = -0x80000000;

/**
 * Where each column's weights come from, the same for every group of problems trained on the same rows: see
 * {@link FactoredWeights}.
 */
export interface ColumnPlaces {
  /** Column j: s ≥ 0 for shared block s, −1 − i for a column private to row i, {@link NO_ROW} for one in no row. */
  place: Int32Array;
  /** A private column's value in its row, x_ij (0 elsewhere). */
  value: Float64Array;
}

/**
 * One-vs-rest weights as training leaves them, with the private columns' weights not spelled out. A column in one
 * training row only has w_j = α_i y_i x_ij for every problem (in double precision, then rounded to single as the
 * solver's weights are), so it is kept as its row and x_ij, and row i's α_i y_i once for all its columns. On TF-IDF
 * character n-grams most columns are private: for RuMedTop3, 456,000 of 760,000, and the dense matrix of 105
 * problems is 319 MB where this is 130 MB; building the dense one cost about a second and a quarter of a gigabyte
 * of fresh pages after training. {@link denseWeights} spells it out (for saving); decision values read either form
 * to the same bits.
 */
export interface FactoredWeights extends ColumnPlaces {
  /** Problems. */
  K: number;
  /** The shared columns' blocks of K weights, then the intercept's. */
  shared: Float32Array;
  /** Row i's α_i y_i for each problem (`rowScale[i * K + c]`): exactly ±α_i. */
  rowScale: Float64Array;
}

/** The {@link ColumnPlaces} of `x` for the shared columns `sharedToColumn` (those in two rows or more). */
export function columnPlaces(x: CsrMatrix, sharedToColumn: Int32Array): ColumnPlaces {
  const place = new Int32Array(x.cols).fill(NO_ROW);
  const value = new Float64Array(x.cols);
  sharedToColumn.forEach((j, s) => {
    place[j] = s;
  });
  for (let i = 0; i < x.rows; i++) {
    for (let k = x.indptr[i] as number; k < (x.indptr[i + 1] as number); k++) {
      const j = x.indices[k] as number;
      if ((place[j] as number) >= 0) continue;
      place[j] = -1 - i;
      value[j] = x.data[k] as number;
    }
  }
  return { place, value };
}

/** The pieces of one training as {@link FactoredWeights}; `columns` may be shared with other groups on `x`. */
export function factorOneVsRest(
  x: CsrMatrix,
  labels: Int32Array,
  positives: readonly number[],
  pieces: OvrPieces,
  columns: ColumnPlaces = columnPlaces(x, pieces.sharedToColumn),
): FactoredWeights {
  const K = positives.length;
  const { alpha } = pieces;
  const rowScale = new Float64Array(x.rows * K);
  for (let i = 0; i < x.rows; i++) {
    const yi = labels[i] as number;
    for (let c = 0; c < K; c++) {
      const a = alpha[i * K + c] as number;
      rowScale[i * K + c] = yi === positives[c] ? a : -a;
    }
  }
  return { ...columns, K, shared: pieces.weights, rowScale };
}

/** The full weights (`W[j * K + c]`, the intercept at j = cols) of factored ones, bit for bit. */
export function denseWeights(f: FactoredWeights): Float32Array {
  const { K, place, value, shared, rowScale } = f;
  const D = place.length;
  const W = new Float32Array((D + 1) * K);
  for (let j = 0; j < D; j++) {
    const p = place[j] as number;
    const out = j * K;
    if (p >= 0) W.set(shared.subarray(p * K, (p + 1) * K), out);
    else if (p !== NO_ROW) {
      const v = value[j] as number;
      const row = (-1 - p) * K;
      for (let c = 0; c < K; c++) W[out + c] = (rowScale[row + c] as number) * v;
    }
  }
  W.set(shared.subarray(shared.length - K), D * K);
  return W;
}

/**
 * The full weights (`W[j * K + c]`, the intercept at j = cols) from the pieces training left: the shared blocks in
 * their columns, and the private columns filled from α (w_j = α_i y_i x_ij). `x`, `labels` and `positives` are those
 * of training.
 */
export function assembleOneVsRest(
  x: CsrMatrix,
  labels: Int32Array,
  positives: readonly number[],
  pieces: OvrPieces,
): Float32Array {
  return denseWeights(factorOneVsRest(x, labels, positives, pieces));
}

/**
 * Columns that occur in one row only ("private" to it: most long n-grams) never couple two rows, so they need not
 * be stored during training: their part of row i's margin is Σ_j x_ij · α_i y_i x_ij = own_i α_i y_i, where own_i is
 * the squared norm of row i's private part. Dropping them shrinks the weight matrix by about 60% on TF-IDF
 * character n-grams (and the traffic through it), exactly; training runs about 8% faster. The shared part's indices
 * and values are written straight into the WebAssembly arena that trains on them, beside the weights.
 */
function splitPrivateFeatures(
  x: CsrMatrix,
  K: number,
): {
  shared: CsrMatrix;
  arena: KWideArena;
  own: Float64Array;
  sharedToColumn: Int32Array;
} {
  const df = new Int32Array(x.cols);
  for (let k = 0; k < x.indices.length; k++)
    df[x.indices[k] as number] = (df[x.indices[k] as number] as number) + 1;
  const sharedColumns: number[] = [];
  for (let j = 0; j < x.cols; j++) if ((df[j] as number) > 1) sharedColumns.push(j);
  const sharedToColumn = Int32Array.from(sharedColumns);
  const columnToShared = new Int32Array(x.cols).fill(-1);
  sharedToColumn.forEach((j, s) => {
    columnToShared[j] = s;
  });
  const own = new Float64Array(x.rows);
  const indptr = new Int32Array(x.rows + 1);
  let nnz = 0;
  for (let i = 0; i < x.rows; i++) {
    for (let k = x.indptr[i] as number; k < (x.indptr[i + 1] as number); k++) {
      if (columnToShared[x.indices[k] as number] === -1)
        own[i] = (own[i] as number) + (x.data[k] as number) ** 2;
      else nnz++;
    }
    indptr[i + 1] = nnz;
  }
  const arena = createKWideArena(nnz, sharedToColumn.length, K, 3 + RETIRE_GROUP);
  const { indices, data } = arena;
  let p = 0;
  for (let i = 0; i < x.rows; i++) {
    for (let k = x.indptr[i] as number; k < (x.indptr[i + 1] as number); k++) {
      const s = columnToShared[x.indices[k] as number] as number;
      if (s === -1) continue;
      indices[p] = s;
      data[p++] = x.data[k] as number;
    }
  }
  return {
    shared: { rows: x.rows, cols: sharedToColumn.length, indptr, indices, data },
    arena,
    own,
    sharedToColumn,
  };
}

/**
 * The dual solver on the shared columns, whose indices, values and weights live in `arena`; `own` adds each row's
 * private part to its margin and its norm.
 *
 * The problems still being optimised occupy lanes 0..m−1 of each feature's block of S = ⌈m/4⌉·4 weights; when some
 * converge, the others are packed into narrower blocks, so that a pass reads and writes only the weights of the
 * problems it still trains (the passes are bound by memory traffic, and the last problems to converge often need
 * several more full passes alone). A problem's arithmetic is the same in any lane. A converged problem's weights
 * move to a column of their own near the arena's end (the q-th at `weights.length − (RETIRE_GROUP + q + 1)(D + 1)`,
 * `slot[c] = q`), in the room the packing frees, so that no second weight matrix is ever held: m problems still
 * training take ⌈m/4⌉·4 ≤ m + 3 lanes, so K + 3 columns hold them and the K − m others.
 */
function solveDual(
  x: CsrMatrix,
  arena: KWideArena,
  own: Float64Array,
  labels: Int32Array,
  positives: readonly number[],
  options: BinaryLrOptions,
  rng: Rng,
  onEpoch?: (epoch: number, active: number, violation: number) => void,
): { alpha: Float64Array; epochs: Int32Array; S: number; lane: Int32Array; slot: Int32Array } {
  const { C, eps, maxEpochs, bias } = options;
  const n = x.rows;
  const D = x.cols;
  const K = positives.length;
  const { indptr, indices, data } = x;
  // Single precision: the weights are read and written once per non-zero and problem on every pass, so memory
  // traffic, not arithmetic, bounds the speed; halving it nearly halves the time, at no cost in accuracy here.
  const { weights: W, dots, deltas } = arena;
  let S = arena.stride;
  // Problem c's lane in the blocks.
  const lane = Int32Array.from({ length: K }, (_, c) => c);
  const slot = new Int32Array(K).fill(-1);
  let retired = 0;
  const alpha = new Float64Array(n * K);
  const sign = new Int8Array(n * K);
  const q = new Float64Array(n);
  const violation = new Float64Array(K);
  const epochs = new Int32Array(K);
  // Problems still being optimised, in lane order.
  let active = Int32Array.from({ length: K }, (_, c) => c);
  const a0 = Math.min(1e-3 * C, 1e-8);
  // Each one-variable subproblem is solved well inside the outer tolerance.
  const innerTol = Math.min(1e-2, eps / 10);
  // w(α) = Σ_i α_i y_i x_i at α = a0 everywhere: a0 (2 Σ_{positives} x_i − Σ_i x_i), in O(nnz) rather than O(nnz·K).
  const column = new Float64Array(D + 1);
  for (let i = 0; i < n; i++) {
    let norm = bias * bias + (own[i] as number);
    for (let k = indptr[i] as number; k < (indptr[i + 1] as number); k++) {
      const v = data[k] as number;
      norm += v * v;
      column[indices[k] as number] = (column[indices[k] as number] as number) + v;
    }
    column[D] = (column[D] as number) + bias;
    q[i] = norm;
    for (let c = 0; c < K; c++) {
      const yi = labels[i] === positives[c] ? 1 : -1;
      sign[i * K + c] = yi;
      alpha[i * K + c] = a0;
    }
  }
  for (let j = 0; j <= D; j++) {
    const v = -a0 * (column[j] as number);
    for (let c = 0; c < K; c++) W[j * S + c] = v;
  }
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < K; c++) {
      if (sign[i * K + c] !== 1) continue;
      for (let k = indptr[i] as number; k < (indptr[i + 1] as number); k++) {
        const j = indices[k] as number;
        W[j * S + c] = (W[j * S + c] as number) + 2 * a0 * (data[k] as number);
      }
      W[D * S + c] = (W[D * S + c] as number) + 2 * a0 * bias;
    }
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  // Shrinking: each row keeps the list of problems still worth visiting for it. A pair (row, problem) whose dual
  // gradient is already below `eps` when visited is set aside until the next full pass; full passes (the first two,
  // then every FULL_PASS_EVERY-th) visit every pair, and only they decide that a problem has converged.
  const pairs = new Int32Array(n * K);
  const aside = new Int32Array(K);
  // Per problem: pairs whose gradient is under a tenth of the problem's worst gradient of the last pass are set aside.
  const shrinkBar = new Float64Array(K);
  const pairCount = new Int32Array(n);
  // A narrow row's lanes, looked up once per row rather than once per non-zero.
  const lanes = new Int32Array(K);
  for (let epoch = 1; epoch <= maxEpochs && active.length > 0; epoch++) {
    // A fresh random order each pass (Yu et al. §4: random permutation converges faster than cyclic).
    for (let i = n - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      const t = order[i] as number;
      order[i] = order[j] as number;
      order[j] = t;
    }
    const full = epoch <= 2 || epoch % FULL_PASS_EVERY === 0;
    const m = active.length;
    if (full) {
      for (let i = 0; i < n; i++) {
        pairs.set(active, i * K);
        pairCount[i] = m;
      }
    }
    for (let t = 0; t < m; t++) violation[active[t] as number] = 0;
    const B = D * S;
    for (let r = 0; r < n; r++) {
      const i = order[r] as number;
      const list = i * K;
      const count = pairCount[i] as number;
      if (count === 0) continue;
      const from = indptr[i] as number;
      const to = indptr[i + 1] as number;
      // Enough of the row's problems on its list: every lane through the SIMD loops, the unlisted ones with a zero
      // step (w + v · 0 is w); otherwise only the listed problems, one at a time.
      const wide = count * WIDE_SHARE >= m;
      if (wide) {
        for (let t = 0; t < S; t++) dots[t] = (W[B + t] as number) * bias;
        arena.dot(from, to, S);
        deltas.fill(0, 0, S);
      } else if (count === 1) {
        // The commonest narrow row: one problem left on its list (the same sums, in a register).
        const l = lane[pairs[list] as number] as number;
        lanes[0] = l;
        let d = (W[B + l] as number) * bias;
        for (let k = from; k < to; k++)
          d += (data[k] as number) * (W[(indices[k] as number) * S + l] as number);
        dots[l] = d;
      } else if (count === 2) {
        const l0 = lane[pairs[list] as number] as number;
        const l1 = lane[pairs[list + 1] as number] as number;
        lanes[0] = l0;
        lanes[1] = l1;
        let d0 = (W[B + l0] as number) * bias;
        let d1 = (W[B + l1] as number) * bias;
        for (let k = from; k < to; k++) {
          const v = data[k] as number;
          const base = (indices[k] as number) * S;
          d0 += v * (W[base + l0] as number);
          d1 += v * (W[base + l1] as number);
        }
        dots[l0] = d0;
        dots[l1] = d1;
      } else {
        for (let t = 0; t < count; t++) {
          const l = lane[pairs[list + t] as number] as number;
          lanes[t] = l;
          dots[l] = (W[B + l] as number) * bias;
        }
        for (let k = from; k < to; k++) {
          const v = data[k] as number;
          const base = (indices[k] as number) * S;
          for (let t = 0; t < count; t++) {
            const l = lanes[t] as number;
            dots[l] = (dots[l] as number) + v * (W[base + l] as number);
          }
        }
      }
      const a = q[i] as number;
      const ownI = own[i] as number;
      let moved = 0;
      let skipped = 0;
      for (let t = 0; t < count; t++) {
        const c = pairs[list + t] as number;
        const l = lane[c] as number;
        const yi = sign[i * K + c] as number;
        const ai = alpha[i * K + c] as number;
        // The row's private columns add own_i α_i y_i to its margin; times y_i that is own_i α_i.
        const b = yi * (dots[l] as number) + ownI * ai;
        const grad = Math.abs(Math.log(ai / (C - ai)) + b);
        if (grad > (violation[c] as number)) violation[c] = grad;
        // g'(C/2) ≥ 0: the minimiser lies in (0, C/2]; otherwise solve for C − z, which then lies there.
        const z =
          a * (C / 2 - ai) + b >= 0
            ? solveSmallSide(a, ai, b, C, innerTol)
            : C - solveSmallSide(a, C - ai, -b, C, innerTol);
        alpha[i * K + c] = z;
        deltas[l] = (z - ai) * yi;
        // Pairs far from their optimum stay on the row's list (compacted to its front); the others are set aside
        // until the next full pass. The bar follows the problem's last worst gradient, so early passes shrink too.
        if (grad >= Math.max(eps, shrinkBar[c] as number)) pairs[list + moved++] = c;
        else aside[skipped++] = c;
      }
      // Every visited pair took its step; apply them (kept pairs at the front, set-aside ones after the visit list).
      // A narrow row's lanes are updated in one pass over the row (each weight takes one step, so the order of
      // the lanes changes nothing).
      if (wide) arena.axpy(from, to, S);
      else addRowSteps(W, S, x, i, lanes, count, deltas);
      addBiasSteps(W, S, x.cols, bias, lane, deltas, pairs, list, moved);
      addBiasSteps(W, S, x.cols, bias, lane, deltas, aside, 0, skipped);
      pairCount[i] = moved;
    }
    let worst = 0;
    for (let t = 0; t < m; t++) {
      const c = active[t] as number;
      epochs[c] = epoch;
      shrinkBar[c] = (violation[c] as number) / SHRINK_RATIO;
      worst = Math.max(worst, violation[c] as number);
    }
    if (full) {
      const still = active.filter((c) => (violation[c] as number) >= eps);
      if (still.length < m) {
        // The converged problems, RETIRE_GROUP at a time: their weights copied to the scratch columns at the arena's
        // top, the others packed, then the copies moved to their columns below the scratch (no temporary array,
        // whose garbage would stay in the thread's memory until it ends).
        const done = active.filter((c) => (violation[c] as number) < eps);
        const scratch = W.length - RETIRE_GROUP * (D + 1);
        for (let g = 0; g < done.length; g += RETIRE_GROUP) {
          const group = done.subarray(g, g + RETIRE_GROUP);
          for (let j = 0; j <= D; j++) {
            for (let t = 0; t < group.length; t++)
              W[scratch + t * (D + 1) + j] = W[j * S + (lane[group[t] as number] as number)] as number;
          }
          active = active.filter((c) => !group.includes(c));
          S = packLanes(W, D + 1, S, active, lane);
          group.forEach((c, t) => {
            slot[c] = retired++;
            W.copyWithin(scratch - retired * (D + 1), scratch + t * (D + 1), scratch + (t + 1) * (D + 1));
          });
        }
      }
    }
    onEpoch?.(epoch, active.length, worst);
  }
  return { alpha, epochs, S, lane, slot };
}

/**
 * Moves the problems `keep` (in lane order) to lanes 0, 1, … of blocks of ⌈|keep|/4⌉·4 weights, in place (every
 * weight moves to a lower or equal offset, so reading upward never meets an overwritten one); returns the new width.
 */
function packLanes(W: Float32Array, blocks: number, S: number, keep: Int32Array, lane: Int32Array): number {
  const m = keep.length;
  const width = Math.ceil(m / 4) * 4;
  const from = Int32Array.from(keep, (c) => lane[c] as number);
  for (let j = 0; j < blocks; j++) {
    for (let t = 0; t < m; t++) W[j * width + t] = W[j * S + (from[t] as number)] as number;
    for (let t = m; t < width; t++) W[j * width + t] = 0;
  }
  keep.forEach((c, t) => {
    lane[c] = t;
  });
  return width;
}

/** A narrow row's steps: W[j·S + l] += x_ij · deltas[l] for its non-zeros j and the lanes l = lanes[0 .. count). */
function addRowSteps(
  W: Float32Array,
  S: number,
  x: CsrMatrix,
  i: number,
  lanes: Int32Array,
  count: number,
  deltas: Float64Array,
): void {
  const { indices, data } = x;
  const to = x.indptr[i + 1] as number;
  if (count === 1) {
    const l = lanes[0] as number;
    const d = deltas[l] as number;
    for (let k = x.indptr[i] as number; k < to; k++) {
      const at = (indices[k] as number) * S + l;
      W[at] = (W[at] as number) + (data[k] as number) * d;
    }
    return;
  }
  if (count === 2) {
    const l0 = lanes[0] as number;
    const l1 = lanes[1] as number;
    const d0 = deltas[l0] as number;
    const d1 = deltas[l1] as number;
    for (let k = x.indptr[i] as number; k < to; k++) {
      const v = data[k] as number;
      const base = (indices[k] as number) * S;
      W[base + l0] = (W[base + l0] as number) + v * d0;
      W[base + l1] = (W[base + l1] as number) + v * d1;
    }
    return;
  }
  for (let k = x.indptr[i] as number; k < to; k++) {
    const v = data[k] as number;
    const base = (indices[k] as number) * S;
    for (let t = 0; t < count; t++) {
      const l = lanes[t] as number;
      W[base + l] = (W[base + l] as number) + v * (deltas[l] as number);
    }
  }
}

/** The intercept's steps of the problems c = list[from .. from + count): W[D·S + lane[c]] += bias · deltas[lane[c]]. */
function addBiasSteps(
  W: Float32Array,
  S: number,
  D: number,
  bias: number,
  lane: Int32Array,
  deltas: Float64Array,
  list: Int32Array,
  from: number,
  count: number,
): void {
  const at = D * S;
  for (let t = 0; t < count; t++) {
    const l = lane[list[from + t] as number] as number;
    W[at + l] = (W[at + l] as number) + bias * (deltas[l] as number);
  }
}

/**
 * One-vs-rest probabilities as scikit-learn's `predict_proba` gives them for `multi_class='ovr'`: each class's
 * sigmoid, divided by their sum. A binary problem (two classes, one weight vector) gives [1 − p, p].
 */
export function ovrProbabilities(decision: Float64Array, rows: number, classes: number): Float64Array {
  const out = new Float64Array(rows * classes);
  for (let r = 0; r < rows; r++) {
    let sum = 0;
    for (let c = 0; c < classes; c++) {
      const p = 1 / (1 + Math.exp(-(decision[r * classes + c] as number)));
      out[r * classes + c] = p;
      sum += p;
    }
    for (let c = 0; c < classes; c++) out[r * classes + c] = (out[r * classes + c] as number) / sum;
  }
  return out;
}
