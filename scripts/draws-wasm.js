/**
 * Assembles the bootstrap's WebAssembly module (src/metrics/draws-wasm.ts holds its bytes, base64) and prints the
 * base64: `node scripts/draws-wasm.js`. One function, `replicate(stats, width, n, sums)`: n draws of xoshiro128**
 * (the state in the four exported globals s0..s3), each row index floor(u32 / 2^32 * n) as `fillInts` computes it,
 * and the drawn rows of the f64 matrix at byte offset `stats` (`width` columns) added to the f64 sums at `sums`.
 * Written out by hand, as the WebAssembly binary format (https://webassembly.github.io/spec/core/binary/) spells it,
 * so that no toolchain is needed to change it.
 */

import { add, countUp, end, get, i32, mul, name, section, set, shl, uleb, vec } from './wasm-bytes.js';

const I32 = 0x7f;

// Parameters 0-3: stats, width, n, sums (byte offsets, counts); locals 4-14.
const [STATS, W, N, SUMS, I, A, B, C, D, X, R, T, BASE, K, ADDR] = [...Array(15).keys()];
const f64 = (v) => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return [0x44, ...b];
};
const [xor, rotl] = [[0x73], [0x77]];
const [f64Load, f64Store, f64Add, f64Mul, f64Floor] = [[0x2b, 3, 0], [0x39, 3, 0], [0xa0], [0xa2], [0x9c]];
const [f64FromU32, f64FromI32, u32FromF64] = [[0xb8], [0xb7], [0xab]];

const state = [
  [0, A],
  [1, B],
  [2, C],
  [3, D],
];
// Locals 15 and 16: the sums of widths 1 and 2, kept in locals.
const [S0, S1] = [15, 16];
const rowOffset = (w) => (w === undefined ? [...get(W), ...mul] : w === 2 ? [...i32(1), ...shl] : []);
/**
 * One draw: the next xoshiro128** output (result = rotl(b * 5, 7) * 9; t = b << 9; c ^= a; d ^= b; b ^= c; a ^= d;
 * c ^= t; d = rotl(d, 11)), then BASE = stats + 8 · width · floor(result / 2^32 * n) (exact products, so the very
 * integer JavaScript's Math.floor gives).
 */
const draw = (w) => [
  ...get(B),
  ...i32(5),
  ...mul,
  ...set(X),
  ...get(X),
  ...i32(7),
  ...rotl,
  ...i32(9),
  ...mul,
  ...set(R),
  ...get(B),
  ...i32(9),
  ...shl,
  ...set(T),
  ...get(C),
  ...get(A),
  ...xor,
  ...set(C),
  ...get(D),
  ...get(B),
  ...xor,
  ...set(D),
  ...get(B),
  ...get(C),
  ...xor,
  ...set(B),
  ...get(A),
  ...get(D),
  ...xor,
  ...set(A),
  ...get(C),
  ...get(T),
  ...xor,
  ...set(C),
  ...get(D),
  ...i32(11),
  ...rotl,
  ...set(D),
  ...get(R),
  ...f64FromU32,
  ...f64(2 ** -32),
  ...f64Mul,
  ...get(N),
  ...f64FromI32,
  ...f64Mul,
  ...f64Floor,
  ...u32FromF64,
  ...rowOffset(w),
  ...i32(3),
  ...shl,
  ...get(STATS),
  ...add,
  ...set(BASE),
];
/** `for (i = 0; i < n; i++) { draw; body }` */
const overRows = (w, body) => countUp(I, i32(0), N, 1, [...draw(w), ...body]);
const load = (offset) => [...get(BASE), 0x2b, 3, ...uleb(offset)];
const addTo = (local, offset) => [...get(local), ...load(offset), ...f64Add, ...set(local)];
const addToSum = (k, local) => [
  ...get(SUMS),
  ...get(SUMS),
  0x2b,
  3,
  ...uleb(8 * k),
  ...get(local),
  ...f64Add,
  0x39,
  3,
  ...uleb(8 * k),
];
const saveState = state.flatMap(([g, l]) => [...get(l), 0x24, g]);
const ifWidth = (w, body) => [...get(W), ...i32(w), 0x46, 0x04, 0x40, ...body, ...saveState, 0x0f, ...end];
const code = [
  ...state.flatMap(([g, l]) => [0x23, g, ...set(l)]),
  // Widths 1 (accuracy) and 2 (ranking): the sums in locals.
  ...ifWidth(1, [...overRows(1, addTo(S0, 0)), ...addToSum(0, S0)]),
  ...ifWidth(2, [...overRows(2, [...addTo(S0, 0), ...addTo(S1, 8)]), ...addToSum(0, S0), ...addToSum(1, S1)]),
  ...overRows(
    undefined,
    countUp(K, i32(0), W, 1, [
      ...get(K),
      ...i32(3),
      ...shl,
      ...get(SUMS),
      ...add,
      ...set(ADDR),
      ...get(ADDR),
      ...get(ADDR),
      ...f64Load,
      ...get(K),
      ...i32(3),
      ...shl,
      ...get(BASE),
      ...add,
      ...f64Load,
      ...f64Add,
      ...f64Store,
    ]),
  ),
  ...saveState,
  ...end,
];
const body = [
  ...vec([
    [...uleb(11), I32],
    [...uleb(2), 0x7c],
  ]),
  ...code,
];
const module = [
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...section(1, vec([[0x60, ...vec([[I32], [I32], [I32], [I32]]), ...vec([])]])),
  ...section(3, vec([uleb(0)])),
  ...section(5, vec([[0x00, ...uleb(1)]])),
  ...section(6, vec(state.map(() => [I32, 1, ...i32(0), ...end]))),
  ...section(
    7,
    vec([
      [...name('replicate'), 0x00, 0],
      [...name('memory'), 0x02, 0],
      ...state.map(([g]) => [...name(`s${g}`), 0x03, g]),
    ]),
  ),
  ...section(10, vec([[...uleb(body.length), ...body]])),
];
console.log(Buffer.from(module).toString('base64'));
