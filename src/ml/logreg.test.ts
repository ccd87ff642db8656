import { describe, expect, it } from 'vitest';
import { createRng } from '../metrics/rng.js';
import { assembleOneVsRest, ovrProbabilities, trainOneVsRest, trainOneVsRestPieces } from './logreg.js';
import type { CsrMatrix } from './sparse.js';

// A five-row problem; the reference optimum is scikit-learn 1.2.1's LogisticRegression(solver='liblinear', tol=1e-12),
// which, like our solver, regularises the intercept (intercept_scaling=1).
const X: CsrMatrix = {
  rows: 5,
  cols: 3,
  indptr: Int32Array.from([0, 2, 4, 5, 6, 8]),
  indices: Int32Array.from([0, 1, 1, 2, 0, 2, 0, 2]),
  data: Float64Array.from([0.6, 0.8, 0.6, 0.8, 1, 1, 0.8, 0.6]),
};
const labels = Int32Array.from([1, 0, 1, 0, 1]);

const solve = (C: number) =>
  trainOneVsRest(X, labels, [1], { C, eps: 1e-9, maxEpochs: 100_000, bias: 1 }, createRng(1)).weights;

describe('dual coordinate descent logistic regression', () => {
  it.each([
    [10, [2.85938664, -0.12632658, -1.94015062, 0.24558318]],
    [0.5, [0.4661945, 0.01673493, -0.29230422, 0.1218193]],
  ])('reaches the L2-regularised optimum for C = %d', (C, expected) => {
    expect(Array.from(solve(C)).map((w) => Number(w.toFixed(5)))).toEqual(
      expected.map((w) => Number(w.toFixed(5))),
    );
  });

  it('trains problems independently: a problem gives the same weights alone or beside others', () => {
    const options = { C: 10, eps: 0.01, maxEpochs: 1000, bias: 1 };
    const alone = trainOneVsRest(X, labels, [0], options, createRng(3)).weights;
    const together = trainOneVsRest(X, labels, [1, 0], options, createRng(3)).weights;
    // Feature-major layout: problem 1 of 2 sits at odd offsets.
    expect(Array.from(alone)).toEqual(Array.from(together).filter((_, i) => i % 2 === 1));
  });

  it('gives each of many problems its own weights however many converge beside it (packing, retiring in groups)', () => {
    // 120 rows of 6 random columns among 50 (some in one row only), 24 classes: problems converge at different full
    // passes, several at once, and leave the weight blocks in groups.
    const rng = createRng(11);
    const rows = 120;
    const indptr = Int32Array.from({ length: rows + 1 }, (_, i) => 6 * i);
    const indices = Int32Array.from({ length: 6 * rows }, (_, k) =>
      k % 6 === 5 ? 50 + Math.floor(k / 6) : rng.int(50),
    );
    const data = Float64Array.from({ length: 6 * rows }, () => 0.1 + rng.next());
    const x: CsrMatrix = { rows, cols: 50 + rows, indptr, indices, data };
    const y = Int32Array.from({ length: rows }, () => rng.int(24));
    const options = { C: 10, eps: 0.01, maxEpochs: 300, bias: 1 };
    const all = Array.from({ length: 24 }, (_, c) => c);
    const together = trainOneVsRest(x, y, all, options, createRng(3));
    expect(new Set(together.epochs).size).toBeGreaterThan(1);
    for (const c of [0, 7, 23]) {
      const alone = trainOneVsRest(x, y, [c], options, createRng(3)).weights;
      expect(Array.from(alone)).toEqual(Array.from(together.weights).filter((_, i) => i % 24 === c));
    }
  });

  it('assembles the weights w = Σ α_i y_i x_i of the pieces, every column in its place', () => {
    // 300 rows of 4 columns among 400 and one of their own, among 30 columns in no row, all shuffled: the shared
    // blocks move out past private and empty columns, and fill more than one tile of the copy out of the arena.
    const rng = createRng(5);
    const rows = 300;
    const cols = 400 + rows + 30;
    const perm = Array.from({ length: cols }, (_, j) => j);
    for (let j = cols - 1; j > 0; j--) {
      const t = rng.int(j + 1);
      [perm[j], perm[t]] = [perm[t] as number, perm[j] as number];
    }
    const indptr = Int32Array.from({ length: rows + 1 }, (_, i) => 5 * i);
    const indices = Int32Array.from(
      { length: 5 * rows },
      (_, k) => perm[k % 5 === 4 ? 400 + Math.floor(k / 5) : rng.int(400)] as number,
    );
    const data = Float64Array.from({ length: 5 * rows }, () => 0.1 + rng.next());
    const x: CsrMatrix = { rows, cols, indptr, indices, data };
    const df = new Int32Array(cols);
    for (const j of indices) df[j] = (df[j] as number) + 1;
    expect(df.filter((d) => d > 1).length).toBeGreaterThan(256);
    const y = Int32Array.from({ length: rows }, () => rng.int(3));
    const positives = [0, 1, 2];
    const K = positives.length;
    const pieces = trainOneVsRestPieces(
      x,
      y,
      positives,
      { C: 10, eps: 0.01, maxEpochs: 300, bias: 1 },
      createRng(3),
    );
    const { alpha } = pieces;
    const W = assembleOneVsRest(x, y, positives, pieces);
    const w = new Float64Array((cols + 1) * K);
    for (let i = 0; i < rows; i++) {
      for (let c = 0; c < K; c++) {
        const a = (alpha[i * K + c] as number) * (y[i] === positives[c] ? 1 : -1);
        for (let k = indptr[i] as number; k < (indptr[i + 1] as number); k++) {
          const j = indices[k] as number;
          w[j * K + c] = (w[j * K + c] as number) + a * (data[k] as number);
        }
        w[cols * K + c] = (w[cols * K + c] as number) + a;
      }
    }
    const privateColumns = new Set(perm.slice(400, 400 + rows));
    for (let j = 0; j <= cols; j++) {
      for (let c = 0; c < K; c++) {
        const got = W[j * K + c] as number;
        const want = w[j * K + c] as number;
        // A private column's weight is computed from α (exactly); a shared one was summed step by step in single
        // precision during training.
        if (privateColumns.has(j)) expect(got).toBe(Math.fround(want));
        else expect(Math.abs(got - want)).toBeLessThan(1e-5 * (1 + Math.abs(want)));
      }
    }
  });

  it("normalises one-vs-rest sigmoids as scikit-learn's predict_proba", () => {
    const p = ovrProbabilities(Float64Array.from([0, 0, Math.log(3)]), 1, 3);
    // sigmoids 0.5, 0.5, 0.75 → divided by 1.75
    expect(Array.from(p).map((v) => v.toFixed(6))).toEqual(['0.285714', '0.285714', '0.428571']);
  });
});
