/**
 * The one seeded random generator: xoshiro128** (Blackman and Vigna, "Scrambled linear pseudorandom number
 * generators", 2021), state seeded by splitmix32 so that nearby seeds give unrelated streams. Every random
 * choice in rumedbench goes through it, so results are reproducible given a seed.
 */

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Fills `out` with uniform integers in [0, n): the bootstrap's hot loop, without a call per draw. */
  fillInts(out: Uint32Array, n: number): void;
}

/** The generator's four 32-bit words of state. */
export type RngState = [number, number, number, number];

/** The state a seed starts from: four splitmix32 outputs. */
export function seedState(seed: number): RngState {
  let s = seed >>> 0;
  const splitmix = (): number => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  return [splitmix(), splitmix(), splitmix(), splitmix()];
}

export function createRng(seed: number): Rng {
  let [a, b, c, d] = seedState(seed);
  const nextU32 = (): number => {
    const result = Math.imul(rotl(Math.imul(b, 5) >>> 0, 7), 9) >>> 0;
    const t = (b << 9) >>> 0;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return result;
  };
  const next = (): number => nextU32() / 4294967296;
  // The generator's step written out in the loop, on locals: a call and four context writes per draw cost a third
  // of a cold `eval`'s bootstrap. The same numbers as nextU32 draws, in the same order.
  const fillInts = (out: Uint32Array, n: number): void => {
    let sa = a;
    let sb = b;
    let sc = c;
    let sd = d;
    for (let i = 0; i < out.length; i++) {
      const x = (Math.imul(sb, 5) >>> 0) as number;
      const result = Math.imul(((x << 7) | (x >>> 25)) >>> 0, 9) >>> 0;
      const t = (sb << 9) >>> 0;
      sc ^= sa;
      sd ^= sb;
      sb ^= sc;
      sa ^= sd;
      sc ^= t;
      sd = ((sd << 11) | (sd >>> 21)) >>> 0;
      out[i] = Math.floor((result / 4294967296) * n);
    }
    a = sa;
    b = sb;
    c = sc;
    d = sd;
  };
  return { next, int: (n) => Math.floor(next() * n), fillInts };
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
