import { describe, expect, it } from 'vitest';
import { createRng } from '../metrics/rng.js';
import { Gemm, K_SLICE } from './lstm-gemm.js';

/** C += A·Bᵀ in float64, the reference. */
function reference(
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  lda: number,
  b: Float32Array,
  ldb: number,
  c: Float32Array,
  ldc: number,
) {
  const out = Float64Array.from(c);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += (a[i * lda + p] as number) * (b[j * ldb + p] as number);
      out[i * ldc + j] = (out[i * ldc + j] as number) + s;
    }
  return out;
}

function random(n: number, seed: number): Float32Array {
  const rng = createRng(seed);
  return Float32Array.from({ length: n }, () => rng.next() - 0.5);
}

describe('the BiLSTM products on the SIMD kernel (src/ml/lstm-gemm.wat)', () => {
  // Odd sizes (the kernel pads m to even, n and k to 4), strides wider than the rows, and m and k beyond one slice.
  const SHAPES: [number, number, number][] = [
    [1, 1, 1],
    [3, 5, 7],
    [17, 130, 259],
    [513, 6, 9],
    [5, 3, K_SLICE + 300],
  ];
  for (const [m, n, k] of SHAPES)
    it(`C[${m}×${n}] += A[${m}×${k}]·Bᵀ, strided, agrees with float64 to float32's rounding`, () => {
      const lda = k + 3;
      const ldb = k + 1;
      const ldc = n + 2;
      const a = random(m * lda, 1);
      const b = random(n * ldb, 2);
      const c = random(m * ldc, 3);
      const want = reference(m, n, k, a, lda, b, ldb, c, ldc);
      const got = c.slice();
      new Gemm().abt(m, n, k, a, 0, lda, b, 0, ldb, got, 0, ldc);
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < n; j++) {
          const w = want[i * ldc + j] as number;
          // float32 sums of k products of terms below 0.5: error well under k·2⁻²⁴·0.25 absolute.
          expect(Math.abs((got[i * ldc + j] as number) - w)).toBeLessThan(1e-6 * k + 1e-6);
        }
        // The padding between rows of C is left alone.
        for (let j = n; j < ldc; j++) expect(got[i * ldc + j]).toBe(c[i * ldc + j]);
      }
    });

  it('a pinned B gives the bits of the same product unpinned, and survives products with other operands', () => {
    const [m, n, k] = [7, 12, 10];
    const a = random(m * k, 4);
    const b = random(n * k, 5);
    const plain = new Float32Array(m * n);
    new Gemm().abt(m, n, k, a, 0, k, b, 0, k, plain, 0, n);
    const g = new Gemm();
    g.pin(n, k, b, 0, k);
    // A product of other operands (and a memory growth) between the pin and its use.
    const big = 600;
    g.abt(
      big,
      big,
      40,
      random(big * 40, 6),
      0,
      40,
      random(big * 40, 7),
      0,
      40,
      new Float32Array(big * big),
      0,
      big,
    );
    const pinned = new Float32Array(m * n);
    g.abtPinned(m, a, 0, k, pinned, 0, n);
    expect(Array.from(pinned)).toEqual(Array.from(plain));
  });

  it('refuses a pinned product before any pin', () => {
    expect(() => new Gemm().abtPinned(1, new Float32Array(1), 0, 1, new Float32Array(1), 0, 1)).toThrow(
      /before any pin/,
    );
  });
});
