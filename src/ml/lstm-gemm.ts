/**
 * The BiLSTM's matrix products on the SIMD kernel of ./lstm-gemm.wat: C[m×n] += A[m×k] · B[n×k]ᵀ over Float32Array
 * operands with explicit offsets and row strides (the form of every product of ./lstm.ts). The operands are copied
 * into the kernel's memory, padded to its shapes (m even, n and k multiples of 4, the padding zero), and C copied
 * back: O(mk + nk + mn) copies for O(mnk) work. A B used by many products in a row (W_hh, once per time step) is
 * pinned there once.
 *
 * Each instance owns its kernel instance and memory, so a thread makes its own; the bits of C depend only on the
 * operands, never on which instance or thread computed them.
 */
import { ensureMemory, type WasmMemory, wasmKernel } from '../wasm/kernel.js';
import gemmWat from './lstm-gemm.wat.js';

interface GemmExports {
  memory: WasmMemory;
  gemm_abt(
    m: number,
    n: number,
    k: number,
    a: number,
    lda: number,
    b: number,
    ldb: number,
    c: number,
    ldc: number,
  ): void;
}

const kernel = wasmKernel<GemmExports>(gemmWat);

const up4 = (x: number): number => (x + 3) & ~3;

/** Columns of k per call of the kernel: a multiple of its 256-column blocks. */
export const K_SLICE = 2048;
/** Rows of A and C per call of the kernel. */
const M_SLICE = 512;

/** A B placed in the kernel's memory by {@link Gemm.pin}: its rows, its padded width. */
interface Pinned {
  readonly n: number;
  readonly k: number;
  readonly n4: number;
  readonly k4: number;
}

export class Gemm {
  private readonly ex: GemmExports = kernel.instantiate();
  private pinned: Pinned | undefined;
  /** Where the scratch operands start (in floats): after the pinned B. */
  private scratch = 0;

  private view(floats: number): Float32Array {
    ensureMemory(this.ex.memory, 4 * floats);
    return new Float32Array(this.ex.memory.buffer);
  }

  /**
   * C[m×n] += A[m×k] · B[n×k]ᵀ, in slices of {@link K_SLICE} columns of k and {@link M_SLICE} rows of m, so that the
   * kernel's memory stays a few MiB whatever the operands (a batch's products reach 64 MiB a side). The slices
   * change no bit of C: rows of C are computed independently, and the kernel adds its 256-column blocks of k into
   * C in order, which the k slices (multiples of 256) keep.
   */
  abt(
    m: number,
    n: number,
    k: number,
    a: Float32Array,
    aOff: number,
    lda: number,
    b: Float32Array,
    bOff: number,
    ldb: number,
    c: Float32Array,
    cOff: number,
    ldc: number,
  ): void {
    for (let p = 0; p < k; p += K_SLICE) {
      const kk = Math.min(K_SLICE, k - p);
      const k4 = up4(kk);
      const n4 = up4(n);
      const bAt = this.scratch;
      const f = this.view(bAt + n4 * k4);
      copyRows(f, bAt, k4, n, kk, b, bOff + p, ldb);
      for (let i = 0; i < m; i += M_SLICE)
        this.run(
          { n, k: kk, n4, k4 },
          bAt,
          Math.min(M_SLICE, m - i),
          a,
          aOff + i * lda + p,
          lda,
          c,
          cOff + i * ldc,
          ldc,
        );
    }
  }

  /** Places B[n×k] in the kernel's memory for {@link abtPinned}, replacing the B pinned before. */
  pin(n: number, k: number, b: Float32Array, bOff: number, ldb: number): void {
    const k4 = up4(k);
    const n4 = up4(n);
    const f = this.view(n4 * k4);
    copyRows(f, 0, k4, n, k, b, bOff, ldb);
    this.pinned = { n, k, n4, k4 };
    this.scratch = n4 * k4;
  }

  /** C[m×n] += A[m×k] · Bᵀ with the B of the last {@link pin}. */
  abtPinned(
    m: number,
    a: Float32Array,
    aOff: number,
    lda: number,
    c: Float32Array,
    cOff: number,
    ldc: number,
  ): void {
    const p = this.pinned;
    if (!p) throw new Error('Gemm.abtPinned before any pin');
    this.run(p, 0, m, a, aOff, lda, c, cOff, ldc);
  }

  /** Copies A and C in after B (at `bAt`), runs the kernel, copies C back. */
  private run(
    b: Pinned,
    bAt: number,
    m: number,
    a: Float32Array,
    aOff: number,
    lda: number,
    c: Float32Array,
    cOff: number,
    ldc: number,
  ): void {
    const { n, k, n4, k4 } = b;
    const m2 = (m + 1) & ~1;
    const aAt = Math.max(this.scratch, bAt + n4 * k4);
    const cAt = aAt + m2 * k4;
    const f = this.view(cAt + m2 * n4);
    copyRows(f, aAt, k4, m, k, a, aOff, lda);
    // A's padding row (m odd) only feeds C's padding row, which is not copied back; it is zeroed so that no stale
    // NaN from an earlier product can reach anything.
    if (m2 > m) f.fill(0, aAt + m * k4, aAt + m2 * k4);
    copyRows(f, cAt, n4, m, n, c, cOff, ldc);
    this.ex.gemm_abt(m2, n4, k4, 4 * aAt, k4, 4 * bAt, k4, 4 * cAt, n4);
    const g = new Float32Array(this.ex.memory.buffer);
    if (ldc === n && n4 === n) c.set(g.subarray(cAt, cAt + m * n), cOff);
    else for (let i = 0; i < m; i++) c.set(g.subarray(cAt + i * n4, cAt + i * n4 + n), cOff + i * ldc);
  }
}

/** Copies `rows` rows of `width` floats (stride `ld` from `off`) to `to` at `at`, stride `width4`, padding zero. */
function copyRows(
  to: Float32Array,
  at: number,
  width4: number,
  rows: number,
  width: number,
  from: Float32Array,
  off: number,
  ld: number,
): void {
  if (ld === width && width4 === width) {
    to.set(from.subarray(off, off + rows * width), at);
    return;
  }
  for (let i = 0; i < rows; i++) {
    to.set(from.subarray(off + i * ld, off + i * ld + width), at + i * width4);
    if (width4 > width) to.fill(0, at + i * width4 + width, at + (i + 1) * width4);
  }
}
