/**
 * Student's t distribution's upper tail, for one-sided t-tests: P(T > t) with ν degrees of freedom, from the
 * regularized incomplete beta function, I_x(ν/2, 1/2) with x = ν / (ν + t²) (Abramowitz & Stegun 26.7.1), evaluated
 * by its continued fraction (Lentz's method) and the Lanczos log-gamma (Numerical Recipes, 3rd ed., 6.1 and 6.4).
 */

const LANCZOS = [
  57.15623566586292, -59.59796035547549, 14.136097974741746, -0.4919138160976202, 3.399464998481189e-5,
  4.652362892704858e-5, -9.837447530487956e-5, 0.0001580887032249125, -0.00021026444172410488,
  0.00021743961811521265, -0.0001643181065367639, 8.441822398385275e-5, -2.6190838401581408e-5,
  3.6899182659531625e-6,
];

/** ln Γ(x), x > 0. */
export function logGamma(x: number): number {
  let y = x;
  const tmp0 = x + 5.2421875;
  const tmp = (x + 0.5) * Math.log(tmp0) - tmp0;
  let ser = 0.9999999999999971;
  for (const c of LANCZOS) ser += c / ++y;
  return tmp + Math.log((2.5066282746310007 * ser) / x);
}

/** The continued fraction of the incomplete beta function (Lentz's method). */
function betaFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10_000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < 1e-15) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  // The fraction converges fast for x below its mean; above it, by symmetry.
  return x < (a + 1) / (a + b + 2)
    ? (front * betaFraction(a, b, x)) / a
    : 1 - (front * betaFraction(b, a, 1 - x)) / b;
}

/** P(T > t) for Student's t with `df` degrees of freedom. */
export function studentTUpper(t: number, df: number): number {
  if (Number.isNaN(t)) return Number.NaN;
  if (t === Number.POSITIVE_INFINITY) return 0;
  if (t === Number.NEGATIVE_INFINITY) return 1;
  const tail = 0.5 * incompleteBeta(df / (df + t * t), df / 2, 0.5);
  return t > 0 ? tail : 1 - tail;
}

/** A one-sided one-sample t-test that the mean of `xs` is above 0: its statistic and p-value. */
export function oneSidedTTest(xs: readonly number[]): { t: number; df: number; p: number; mean: number } {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1);
  const se = Math.sqrt(variance / n);
  // All differences equal: no spread to test against; a positive mean is then as sure as it gets.
  const t =
    se > 0 ? mean / se : mean > 0 ? Number.POSITIVE_INFINITY : mean < 0 ? Number.NEGATIVE_INFINITY : 0;
  return { t, df: n - 1, p: studentTUpper(t, n - 1), mean };
}

/**
 * P(Z > z) for the standard normal, through the complementary error function: the Chebyshev fit of Numerical
 * Recipes (Press et al., 2007, §6.2.2, `erfccheb`'s predecessor `erfcc`), fractional error under 1.2e-7.
 */
export function normalUpper(z: number): number {
  if (Number.isNaN(z)) return Number.NaN;
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * x);
  const erfc =
    t *
    Math.exp(
      -x * x -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 +
                            t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return z >= 0 ? erfc / 2 : 1 - erfc / 2;
}
