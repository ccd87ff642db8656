import { describe, expect, it } from 'vitest';
import { createRng } from '../metrics/rng.js';
import { trainOneVsRest } from './logreg.js';
import { blockDecisionValues, blockWeights, trainOneVsRestParallel } from './ovr-parallel.js';
import type { CsrMatrix } from './sparse.js';
import { fitTransform } from './tfidf.js';

// Small texts of four made-up classes; enough rows to exercise shrinking and full passes.
const rng = createRng(9);
const stems = ['кашель сухой', 'боль в спине', 'головная боль', 'сыпь на коже'];
const texts: string[] = [];
const labels: number[] = [];
for (let i = 0; i < 120; i++) {
  const c = i % 4;
  texts.push(`${stems[c]} ${['утром', 'ночью', 'давно', 'сильно'][rng.int(4)]} ${stems[rng.int(4)]}`);
  labels.push(c);
}
const { matrix } = fitTransform(texts, { ngramMin: 3, ngramMax: 5 });
const options = { C: 10, eps: 0.01, maxEpochs: 500, bias: 1, seed: 4 };

describe('one-vs-rest over worker threads', () => {
  it('gives the same weights on one thread as on two', async () => {
    const one = await trainOneVsRestParallel(matrix, Int32Array.from(labels), [0, 1, 2, 3], {
      ...options,
      threads: 1,
    });
    const two = await trainOneVsRestParallel(matrix, Int32Array.from(labels), [0, 1, 2, 3], {
      ...options,
      threads: 2,
    });
    expect(two.map((b) => b.positives)).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(Array.from(blockDecisionValues(matrix, two, 1))).toEqual(
      Array.from(blockDecisionValues(matrix, one, 1)),
    );
  });

  it('separates the training classes', async () => {
    const blocks = await trainOneVsRestParallel(matrix, Int32Array.from(labels), [0, 1, 2, 3], {
      ...options,
      threads: 2,
    });
    const dv = blockDecisionValues(matrix, blocks, 1);
    const predicted = labels.map((_, r) =>
      [0, 1, 2, 3].reduce(
        (best, c) => ((dv[r * 4 + c] as number) > (dv[r * 4 + best] as number) ? c : best),
        0,
      ),
    );
    expect(predicted).toEqual(labels);
  });

  it('keeps weights that spell out to those trainOneVsRest gives in one thread, and decide the same, bit for bit', async () => {
    // 90 rows of 5 columns among 30 (so in several rows) and one of their own, 6 classes; the columns, with 40 in no
    // row, shuffled, so that shared, private and empty columns alternate, the first shared one is not column 0 and
    // the shared blocks must move out past private and empty columns on assembly.
    const r = createRng(21);
    const rows = 90;
    const cols = 30 + rows + 40;
    const perm = Array.from({ length: cols }, (_, j) => j);
    for (let j = cols - 1; j > 0; j--) {
      const t = r.int(j + 1);
      [perm[j], perm[t]] = [perm[t] as number, perm[j] as number];
    }
    const indptr = Int32Array.from({ length: rows + 1 }, (_, i) => 6 * i);
    const indices = Int32Array.from(
      { length: 6 * rows },
      (_, k) => perm[k % 6 === 5 ? 30 + Math.floor(k / 6) : r.int(30)] as number,
    );
    const data = Float64Array.from({ length: 6 * rows }, () => 0.1 + r.next());
    const x: CsrMatrix = { rows, cols, indptr, indices, data };
    const y = Int32Array.from({ length: rows }, () => r.int(6));
    const lr = { C: 10, eps: 0.01, maxEpochs: 300, bias: 1 };
    const all = [0, 1, 2, 3, 4, 5];
    const bits = (w: Float32Array) => Array.from(new Uint32Array(w.buffer, w.byteOffset, w.length));
    for (const threads of [1, 2, 3]) {
      const blocks = await trainOneVsRestParallel(x, y, all, { ...lr, seed: 5, threads });
      expect(blocks).toHaveLength(threads);
      for (const b of blocks) {
        expect('factored' in b).toBe(true);
        const alone = trainOneVsRest(x, y, b.positives, lr, createRng(5)).weights;
        const w = blockWeights(b);
        expect(bits(w)).toEqual(bits(alone));
        // A column in no row has weight +0, as in a fresh array.
        for (const j of perm.slice(30 + rows))
          expect(bits(w.subarray(j * b.positives.length, (j + 1) * b.positives.length))).toEqual(
            b.positives.map(() => 0),
          );
      }
      // New rows over every kind of column (shared, private, in no row), read through the factored weights and
      // through the spelled-out ones (as a saved model reads them).
      const test: CsrMatrix = {
        rows: 20,
        cols,
        indptr: Int32Array.from({ length: 21 }, (_, i) => 8 * i),
        indices: Int32Array.from({ length: 160 }, () => r.int(cols)),
        data: Float64Array.from({ length: 160 }, () => r.next() - 0.3),
      };
      const dense = blocks.map((b) => ({ positives: b.positives, weights: blockWeights(b) }));
      const f64bits = (v: Float64Array) => Array.from(new BigUint64Array(v.buffer));
      expect(f64bits(blockDecisionValues(test, blocks, 1))).toEqual(
        f64bits(blockDecisionValues(test, dense, 1)),
      );
    }
  });
});
