/**
 * The bootstrap's replicates in WebAssembly: the draws of xoshiro128** (./rng.ts) and the sums of the drawn rows,
 * one call per replicate. Written in JavaScript, the loop ran in V8's interpreter for its first replicates (every
 * 32-bit step boxed) and was a fifth of a cold `eval`; compiled ahead, it runs at full speed from the first draw.
 * The rows are the very rows `Rng.fillInts` draws from the same state (row = floor(u32 / 2^32 · n), the products
 * exact), which a test checks draw for draw; the sums are of integer counts, exact in any order.
 *
 * The kernel is ./draws.wat (the WebAssembly text format), loaded through src/wasm/kernel.ts.
 */
import { ensureMemory, type WasmGlobal, type WasmMemory, wasmKernel } from '../wasm/kernel.js';
import drawsWat from './draws.wat.js';
import type { RngState } from './rng.js';

/** What ./draws.wat exports. */
interface Exports {
  replicate(stats: number, width: number, n: number, sums: number): void;
  memory: WasmMemory;
  s0: WasmGlobal;
  s1: WasmGlobal;
  s2: WasmGlobal;
  s3: WasmGlobal;
}

const draws = wasmKernel<Exports>(drawsWat);
let instance: Exports | undefined;
function exportsOf(): Exports {
  instance ??= draws.instantiate();
  return instance;
}

/**
 * Replicates of one task's item counts (`n` rows of `width`), drawn from `state` onward: each `next(sums)` writes
 * one replicate's column sums into `sums`. One resampler at a time (they share the module's memory and state).
 */
export function createResampler(
  stats: Float64Array,
  width: number,
  state: RngState,
): { next(sums: Float64Array): void } {
  const ex = exportsOf();
  const n = stats.length / width;
  // Layout: the sums at 0, the matrix after them.
  const statsAt = width * 8;
  const bytes = statsAt + stats.length * 8;
  ensureMemory(ex.memory, bytes);
  const memory = new Float64Array(ex.memory.buffer);
  memory.set(stats, width);
  // The globals are i32: the same bits, signed.
  const [a, b, c, d] = state;
  ex.s0.value = a | 0;
  ex.s1.value = b | 0;
  ex.s2.value = c | 0;
  ex.s3.value = d | 0;
  return {
    next(sums: Float64Array): void {
      memory.fill(0, 0, width);
      ex.replicate(statsAt, width, n, 0);
      sums.set(memory.subarray(0, width));
    },
  };
}
