import { describe, expect, it } from 'vitest';
import { createRng } from '../metrics/rng.js';
import { blockDecisionValues, trainOneVsRestParallel } from './ovr-parallel.js';
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
});
