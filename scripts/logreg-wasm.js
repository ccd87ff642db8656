/**
 * Assembles the WebAssembly module of the logistic regression's K-wide loops (src/ml/logreg-wasm.ts holds its bytes,
 * base64) and prints the base64: `node scripts/logreg-wasm.js`. Two functions over one CSR row's non-zeros k in
 * [from, to), each touching the block of `stride` single-precision weights of column indices[k] (stride a multiple
 * of 4), four lanes at a time with 128-bit SIMD:
 * - `dot(w, stride, indices, data, from, to, dots)`: dots[c] += data[k] · w[indices[k] · stride + c] (f64 sums);
 * - `axpy(w, stride, indices, data, from, to, deltas)`: w[indices[k] · stride + c] += data[k] · deltas[c].
 * The arithmetic is JavaScript's own, operation for operation: each f32 weight widened to f64, one f64 product and
 * one f64 sum per lane (no fused multiply-add), the new weight rounded to f32 to nearest, so the results are the
 * scalar loops' bit for bit. All arguments are byte offsets into the module's memory, or counts.
 * Written out by hand, as the WebAssembly binary format (https://webassembly.github.io/spec/core/binary/) and its
 * SIMD instructions spell it, so that no toolchain is needed to change it.
 */

import { add, countUp, end, get, i32, mul, name, section, set, shl, uleb, vec } from './wasm-bytes.js';

const [I32, V128] = [0x7f, 0x7b];

// Parameters 0-6: w, stride, indices, data, from, to, vector (dots or deltas); locals 7-10 (i32), 11-12 (v128).
const [WT, STRIDE, INDICES, DATA, FROM, TO, VEC, K, BASE, C, END, V, X] = [...Array(13).keys()];
const i32Load = [0x28, 2, 0];
const f64Load = [0x2b, 3, 0];
const simd = (op) => [0xfd, ...uleb(op)];
const v128Load = (offset) => [...simd(0), 4, ...uleb(offset)];
const v128Store = (offset) => [...simd(11), 4, ...uleb(offset)];
const shuffle = (lanes) => [...simd(13), ...lanes];
const f64x2Splat = simd(20);
const f32x4DemoteZero = simd(94);
const f64x2PromoteLow = simd(95);
const f64x2Add = simd(240);
const f64x2Mul = simd(242);
/** Lanes 2 and 3 of an f32x4 moved to lanes 0 and 1 (for `f64x2.promote_low_f32x4`). */
const HIGH = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
/** The low halves of two vectors: two demoted f64x2 (each [a, b, 0, 0] as f32x4) joined as [a, b, c, d]. */
const JOIN = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];

/**
 * `for (k = from; k < to; k++) { V = splat(data[k]); BASE = w + 4 · stride · indices[k];
 *   for (C = 0; C < END; C += 16) body }` with END = 4 · stride bytes; C is the byte offset in the weight block,
 * 2C the one in the f64 vector.
 */
const overRow = (body) => [
  ...get(STRIDE),
  ...i32(2),
  ...shl,
  ...set(END),
  ...countUp(K, get(FROM), TO, 1, [
    ...get(K),
    ...i32(3),
    ...shl,
    ...get(DATA),
    ...add,
    ...f64Load,
    ...f64x2Splat,
    ...set(V),
    ...get(K),
    ...i32(2),
    ...shl,
    ...get(INDICES),
    ...add,
    ...i32Load,
    ...get(END),
    ...mul,
    ...get(WT),
    ...add,
    ...set(BASE),
    ...countUp(C, i32(0), END, 16, body),
  ]),
];
/** Address of the f64 vector's lanes for weight byte offset C: VEC + 2C. */
const vecAt = [...get(C), ...i32(1), ...shl, ...get(VEC), ...add];
const weightsAt = [...get(BASE), ...get(C), ...add];

/** Weight lanes 0-1 (half 0) or 2-3 (half 1) of X, widened to f64x2. */
const widened = (half) => [...get(X), ...(half ? [...get(X), ...shuffle(HIGH)] : []), ...f64x2PromoteLow];
/** v · vector[lanes of this half], then added to what the stack holds below it. */
const plusProduct = (lanes) => [...get(V), ...lanes, ...f64x2Mul, ...f64x2Add];
const loadWeights = [...weightsAt, ...v128Load(0), ...set(X)];
// dots[c] = dots[c] + v · w[c], lanes 0-1 then 2-3.
const dot = overRow([
  ...loadWeights,
  ...[0, 1].flatMap((half) => [
    ...vecAt,
    ...vecAt,
    ...v128Load(16 * half),
    ...plusProduct(widened(half)),
    ...v128Store(16 * half),
  ]),
]);
// w[c] = f32(w[c] + v · deltas[c]).
const axpy = overRow([
  ...weightsAt,
  ...loadWeights,
  ...[0, 1].flatMap((half) => [
    ...widened(half),
    ...plusProduct([...vecAt, ...v128Load(16 * half)]),
    ...f32x4DemoteZero,
  ]),
  ...shuffle(JOIN),
  ...v128Store(0),
]);
const locals = vec([
  [...uleb(4), I32],
  [...uleb(2), V128],
]);
const fn = (code) => {
  const body = [...locals, ...code, ...end];
  return [...uleb(body.length), ...body];
};
const module = [
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...section(1, vec([[0x60, ...vec(Array(7).fill([I32])), ...vec([])]])),
  ...section(3, vec([uleb(0), uleb(0)])),
  ...section(5, vec([[0x00, ...uleb(1)]])),
  ...section(
    7,
    vec([
      [...name('dot'), 0x00, 0],
      [...name('axpy'), 0x00, 1],
      [...name('memory'), 0x02, 0],
    ]),
  ),
  ...section(10, vec([fn(dot), fn(axpy)])),
];
console.log(Buffer.from(module).toString('base64'));
