/**
 * The bootstrap's replicates in WebAssembly: the draws of xoshiro128** (./rng.ts) and the sums of the drawn rows,
 * one call per replicate. Written in JavaScript, the loop ran in V8's interpreter for its first replicates (every
 * 32-bit step boxed) and was a fifth of a cold `eval`; compiled ahead, it runs at full speed from the first draw.
 * The rows are the very rows `Rng.fillInts` draws from the same state (row = floor(u32 / 2^32 · n), the products
 * exact), which a test checks draw for draw; the sums are of integer counts, exact in any order.
 *
 * The bytes are assembled by `scripts/draws-wasm.js` (the binary format written out by hand: no toolchain).
 */
import type { RngState } from './rng.js';

const BYTES =
  'AGFzbQEAAAABCAFgBH9/f38AAwIBAAUDAQABBhUEfwFBAAt/AUEAC38BQQALfwFBAAsHKgYJcmVwbGljYXRlAAAGbWVtb3J5AgACczADAAJzMQMBAnMyAwICczMDAwrFBAHCBAILfwJ8IwAhBSMBIQYjAiEHIwMhCCABQQFGBEBBACEEAkADQCAEIAJODQEgBkEFbCEJIAlBB3dBCWwhCiAGQQl0IQsgByAFcyEHIAggBnMhCCAGIAdzIQYgBSAIcyEFIAcgC3MhByAIQQt3IQggCrhEAAAAAAAA8D2iIAK3opyrQQN0IABqIQwgDyAMKwMAoCEPIARBAWohBAwACwsgAyADKwMAIA+gOQMAIAUkACAGJAEgByQCIAgkAw8LIAFBAkYEQEEAIQQCQANAIAQgAk4NASAGQQVsIQkgCUEHd0EJbCEKIAZBCXQhCyAHIAVzIQcgCCAGcyEIIAYgB3MhBiAFIAhzIQUgByALcyEHIAhBC3chCCAKuEQAAAAAAADwPaIgAreinKtBAXRBA3QgAGohDCAPIAwrAwCgIQ8gECAMKwMIoCEQIARBAWohBAwACwsgAyADKwMAIA+gOQMAIAMgAysDCCAQoDkDCCAFJAAgBiQBIAckAiAIJAMPC0EAIQQCQANAIAQgAk4NASAGQQVsIQkgCUEHd0EJbCEKIAZBCXQhCyAHIAVzIQcgCCAGcyEIIAYgB3MhBiAFIAhzIQUgByALcyEHIAhBC3chCCAKuEQAAAAAAADwPaIgAreinKsgAWxBA3QgAGohDEEAIQ0CQANAIA0gAU4NASANQQN0IANqIQ4gDiAOKwMAIA1BA3QgDGorAwCgOQMAIA1BAWohDQwACwsgBEEBaiEEDAALCyAFJAAgBiQBIAckAiAIJAML';

/** What this module uses of WebAssembly (the project's types are Node's, without the DOM's WebAssembly). */
interface Exports {
  replicate(stats: number, width: number, n: number, sums: number): void;
  memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  s0: { value: number };
  s1: { value: number };
  s2: { value: number };
  s3: { value: number };
}
const { WebAssembly: wasm } = globalThis as unknown as {
  WebAssembly: {
    Module: new (bytes: Uint8Array) => object;
    Instance: new (module: object) => { exports: unknown };
  };
};

let instance: Exports | undefined;
function exportsOf(): Exports {
  instance ??= new wasm.Instance(new wasm.Module(Buffer.from(BYTES, 'base64'))).exports as Exports;
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
  const have = ex.memory.buffer.byteLength;
  if (bytes > have) ex.memory.grow(Math.ceil((bytes - have) / 65536));
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
