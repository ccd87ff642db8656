import { describe, expect, it } from 'vitest';
import { createResampler } from './draws-wasm.js';
import { sumRows } from './item-stats.js';
import { createRng, seedState } from './rng.js';

describe('the WebAssembly resampler', () => {
  it('sums the very rows fillInts draws from the same seed, replicate after replicate', () => {
    // 20,000 rows of 5: more than the module's first page of memory, so it grows.
    for (const [width, n, seed] of [
      [1, 997, 1],
      [2, 822, 2 ** 32 - 1],
      [5, 20_000, 12345],
      [1, 1, 7],
    ] as const) {
      const stats = Float64Array.from({ length: n * width }, (_, i) => (i * 7919) % 13);
      const draws = createResampler(stats, width, seedState(seed));
      const rng = createRng(seed);
      const rows = new Uint32Array(n);
      const sums = new Float64Array(width);
      for (let rep = 0; rep < 20; rep++) {
        draws.next(sums);
        rng.fillInts(rows, n);
        expect([...sums]).toEqual([...sumRows(stats, width, rows)]);
      }
    }
  });
});
