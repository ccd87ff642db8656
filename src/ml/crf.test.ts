import { describe, expect, it } from 'vitest';
import { type CrfModel, crfObjective, predictCrf, type TokenAttributes, trainCrf } from './crf.js';

// A toy chain: two labels, attributes a and b; state features (a, X), (a, Y), (b, Y); four transitions.
const model: CrfModel = {
  labels: ['X', 'Y'],
  attributes: ['a', 'b'],
  featOff: Int32Array.from([0, 2, 3]),
  featLabel: Int32Array.from([0, 1, 1]),
  weights: Float64Array.from([0.7, -0.3, 1.1, 0.2, -0.5, 0.4, 0.9]),
};
const sentence: TokenAttributes[] = [{ a: 1 }, { b: 1, a: 0.5 }, { a: 1 }];
const gold = ['X', 'Y', 'Y'];

/** log p(gold) by enumerating all 2^3 label sequences. */
function bruteForceNll(w: Float64Array): number {
  const state = (t: number, y: number): number => {
    const tok = sentence[t] as Record<string, number>;
    let s = 0;
    if (tok.a) s += (tok.a as number) * (w[y === 0 ? 0 : 1] as number);
    if (tok.b && y === 1) s += (tok.b as number) * (w[2] as number);
    return s;
  };
  const score = (path: number[]) =>
    path.reduce(
      (s, y, t) => s + state(t, y) + (t > 0 ? (w[3 + (path[t - 1] as number) * 2 + y] as number) : 0),
      0,
    );
  let z = 0;
  for (let m = 0; m < 8; m++) z += Math.exp(score([m & 1, (m >> 1) & 1, (m >> 2) & 1]));
  return Math.log(z) - score(gold.map((l) => (l === 'X' ? 0 : 1)));
}

describe('linear-chain CRF', () => {
  it('computes −log p(y|x) exactly, as enumeration does', () => {
    expect(crfObjective(model, [sentence], [gold]).nll).toBeCloseTo(bruteForceNll(model.weights), 12);
  });

  it('has the gradient of its objective (central finite differences)', () => {
    const { gradient } = crfObjective(model, [sentence], [gold]);
    const h = 1e-6;
    for (let i = 0; i < model.weights.length; i++) {
      const up = Float64Array.from(model.weights);
      const down = Float64Array.from(model.weights);
      up[i] = (up[i] as number) + h;
      down[i] = (down[i] as number) - h;
      expect(gradient[i]).toBeCloseTo((bruteForceNll(up) - bruteForceNll(down)) / (2 * h), 6);
    }
  });

  it('learns a pattern that needs transitions, and decodes it with Viterbi', () => {
    // "w" is B after O and I after B: only the transitions can tell.
    const toks = (s: string) => s.split(' ').map((w): TokenAttributes => ({ bias: 1, word: w }));
    const sentences = [toks('x w w x'), toks('w w w'), toks('x x w w')];
    const labels = [
      ['O', 'B', 'I', 'O'],
      ['B', 'I', 'I'],
      ['O', 'O', 'B', 'I'],
    ];
    const trained = trainCrf(sentences, labels, { c1: 0, c2: 0.01, maxIterations: 100 });
    expect(predictCrf(trained, [toks('x w w'), toks('w w x')])).toEqual([
      ['O', 'B', 'I'],
      ['B', 'I', 'O'],
    ]);
  });

  it('drives unhelpful weights to exactly zero under L1 (OWL-QN)', () => {
    const toks = (s: string) => s.split(' ').map((w, i): TokenAttributes => ({ word: w, [`noise${i}`]: 1 }));
    const trained = trainCrf(
      [toks('a b'), toks('b a'), toks('a a'), toks('b b')],
      [
        ['A', 'B'],
        ['B', 'A'],
        ['A', 'A'],
        ['B', 'B'],
      ],
      {
        c1: 0.1,
        c2: 0,
        maxIterations: 100,
      },
    );
    expect(trained.weights.some((w) => w === 0)).toBe(true);
    expect(predictCrf(trained, [toks('a b')])).toEqual([['A', 'B']]);
  });
});
