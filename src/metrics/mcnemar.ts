/**
 * The exact McNemar test (McNemar, 1947), alone in its module: the paired bootstrap (./bootstrap.ts) needs it, and
 * `eval` imports the bootstrap, so it does not pay for loading the ranking module (./ranking.ts) beside it.
 */

/**
 * The exact two-sided McNemar test: of the b + c discordant pairs, b went one way; under the null each goes either
 * way with probability 1/2. p = min(1, 2 · P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2).
 */
export function exactMcNemar(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  // log P(X = i), stepped from i = 0: P(i + 1) = P(i) · (n − i) / (i + 1).
  let log = -n * Math.LN2;
  let tail = 0;
  for (let i = 0; i <= k; i++) {
    tail += Math.exp(log);
    log += Math.log(n - i) - Math.log(i + 1);
  }
  return Math.min(1, 2 * tail);
}
