/**
 * The logistic regression's K-wide loops (./logreg.ts) in WebAssembly with 128-bit SIMD: for one row's non-zeros,
 * the sums of its products with each problem's weights, and the update of those weights, four problems at a time.
 * V8 runs the scalar JavaScript loops a lane at a time with a bounds check per element; with these (and the packing
 * of converged problems in ./logreg.ts) training takes about half the time, with the same arithmetic operation for
 * operation (f32 weights widened to f64, no fused multiply-add, each new weight rounded to f32), so the weights are
 * the scalar loops' bit for bit (a test checks it).
 *
 * The kernel is ./logreg.wat (the WebAssembly text format), loaded through src/wasm/kernel.ts.
 */
import { ensureMemory, type WasmMemory, wasmKernel } from '../wasm/kernel.js';
import logregWat from './logreg.wat.js';

/** What ./logreg.wat exports. */
interface Exports {
  /** dots[c] += data[k] · w[indices[k] · stride + c] for k in [from, to), c < stride; byte offsets. */
  dot(w: number, stride: number, indices: number, data: number, from: number, to: number, dots: number): void;
  /** w[indices[k] · stride + c] += data[k] · deltas[c] for k in [from, to), c < stride; byte offsets. */
  axpy(
    w: number,
    stride: number,
    indices: number,
    data: number,
    from: number,
    to: number,
    deltas: number,
  ): void;
  memory: WasmMemory;
}

const logreg = wasmKernel<Exports>(logregWat);

/** The arrays one training run keeps in the module's memory, and the two loops over them. */
export interface KWideArena {
  /** The widest block: K rounded up to a multiple of 4. */
  stride: number;
  dots: Float64Array;
  deltas: Float64Array;
  indices: Int32Array;
  data: Float64Array;
  /**
   * (cols + 1) blocks of `stride` weights (or fewer, narrower ones), feature-major, then `spare` columns of
   * (cols + 1) weights each (what the solver keeps beside the blocks).
   */
  weights: Float32Array;
  /** A row's sums: dots[t] += Σ_k data[k] · weights[indices[k] · width + t], k in [from, to), t < width. */
  dot(from: number, to: number, width: number): void;
  /** weights[indices[k] · width + t] += data[k] · deltas[t], k in [from, to), t < width (a multiple of 4). */
  axpy(from: number, to: number, width: number): void;
}

const align8 = (n: number) => Math.ceil(n / 8) * 8;

/**
 * A fresh module instance (its own memory, freed with it) sized for `nnz` non-zeros, `cols` columns, K problems and
 * `spare` extra columns.
 */
export function createKWideArena(nnz: number, cols: number, K: number, spare = 0): KWideArena {
  const ex = logreg.instantiate();
  const stride = Math.ceil(K / 4) * 4;
  const dotsAt = 0;
  const deltasAt = dotsAt + 8 * stride;
  const indicesAt = deltasAt + 8 * stride;
  const dataAt = align8(indicesAt + 4 * nnz);
  const weightsAt = dataAt + 8 * nnz;
  const bytes = weightsAt + 4 * (cols + 1) * (stride + spare);
  ensureMemory(ex.memory, bytes);
  const buffer = ex.memory.buffer;
  return {
    stride,
    dots: new Float64Array(buffer, dotsAt, stride),
    deltas: new Float64Array(buffer, deltasAt, stride),
    indices: new Int32Array(buffer, indicesAt, nnz),
    data: new Float64Array(buffer, dataAt, nnz),
    weights: new Float32Array(buffer, weightsAt, (cols + 1) * (stride + spare)),
    dot: (from, to, width) => ex.dot(weightsAt, width, indicesAt, dataAt, from, to, dotsAt),
    axpy: (from, to, width) => ex.axpy(weightsAt, width, indicesAt, dataAt, from, to, deltasAt),
  };
}
