import { describe, expect, it } from 'vitest';
import { createRng } from '../metrics/rng.js';
import { createKWideArena } from './logreg-wasm.js';

describe("the logistic regression's WebAssembly loops", () => {
  it('give the scalar loops’ sums and weights bit for bit, at every width', () => {
    const rng = createRng(5);
    const [nnz, cols, K] = [40, 30, 11];
    const arena = createKWideArena(nnz, cols, K);
    expect(arena.stride).toBe(12);
    for (let k = 0; k < nnz; k++) {
      arena.indices[k] = rng.int(cols + 1);
      arena.data[k] = rng.next() - 0.25;
    }
    for (const width of [12, 8, 4]) {
      const W = arena.weights;
      for (let i = 0; i < W.length; i++) W[i] = Math.fround(rng.next() - 0.5);
      const dots = Float64Array.from({ length: width }, () => rng.next());
      const deltas = Float64Array.from({ length: width }, () => rng.next() * 2 - 1);
      const [from, to] = [3, 37];
      const expectedDots = Float64Array.from(dots);
      const expectedW = Float32Array.from(W);
      for (let k = from; k < to; k++) {
        const v = arena.data[k] as number;
        const base = (arena.indices[k] as number) * width;
        for (let t = 0; t < width; t++) {
          expectedDots[t] = (expectedDots[t] as number) + v * (W[base + t] as number);
        }
      }
      for (let k = from; k < to; k++) {
        const v = arena.data[k] as number;
        const base = (arena.indices[k] as number) * width;
        for (let t = 0; t < width; t++) {
          expectedW[base + t] = (expectedW[base + t] as number) + v * (deltas[t] as number);
        }
      }
      arena.dots.set(dots);
      arena.dot(from, to, width);
      expect(Array.from(arena.dots.subarray(0, width))).toEqual(Array.from(expectedDots));
      arena.deltas.set(deltas);
      arena.axpy(from, to, width);
      expect(Array.from(arena.weights)).toEqual(Array.from(expectedW));
    }
  });
});
