/**
 * A linear-chain conditional random field (Lafferty, McCallum and Pereira, 2001) as CRFsuite trains it with
 * `algorithm='lbfgs'`, which sklearn-crfsuite wraps and upstream's RuMedNER baseline uses:
 * - state features: one weight per (attribute, label) pair seen together in training; an attribute has a real
 *   value (1 for string-valued attributes), and a state feature fires with that value;
 * - transition features: one weight per pair of labels (`all_possible_transitions=True`);
 * - objective: −Σ log p(y | x) + c1‖θ‖₁ + c2‖θ‖² (CRFsuite's elastic net; note c2 has no ½), minimised by
 *   OWL-QN (Andrew and Gao, "Scalable training of L1-regularized log-linear models", ICML 2007) with CRFsuite's
 *   defaults: 6 memory pairs, backtracking line search, stop at max_iterations, when ‖pseudo-gradient‖ / max(1, ‖θ‖)
 *   < 1e-5, or when the objective improved by less than 1e-5 (relative) over the last 10 iterations.
 * Inference is forward-backward in scaled probability space; decoding is Viterbi.
 */

/** A token's attributes: name → value (strings become `name:value` with value 1, as python-crfsuite does). */
export type TokenAttributes = Record<string, string | number | boolean>;

export interface CrfOptions {
  c1: number;
  c2: number;
  maxIterations: number;
  /** Convergence test on the pseudo-gradient (CRFsuite `epsilon`). */
  epsilon?: number;
  /** Relative improvement over `period` iterations under which training stops (CRFsuite `delta`, `period`). */
  delta?: number;
  period?: number;
  memories?: number;
  onIteration?: (iteration: number, objective: number, activeFeatures: number) => void;
}

/** Attributes flattened for one set of sentences. */
interface Encoded {
  /** Token t's attributes are attr[tokPtr[t] .. tokPtr[t + 1]), with values val. */
  tokPtr: Int32Array;
  attr: Int32Array;
  val: Float64Array;
  /** Sentence s is tokens sentPtr[s] .. sentPtr[s + 1] − 1. */
  sentPtr: Int32Array;
}

export interface CrfModel {
  labels: string[];
  attributes: string[];
  /** State features of attribute a: featOff[a] .. featOff[a + 1] − 1, each with its label and weight. */
  featOff: Int32Array;
  featLabel: Int32Array;
  /** State weights then L × L transition weights (from-label major). */
  weights: Float64Array;
}

/** Expands python-crfsuite's dict convention into (attribute name, value) pairs, dropping zero values. */
function attributePairs(features: TokenAttributes): [string, number][] {
  const out: [string, number][] = [];
  for (const [k, v] of Object.entries(features)) {
    if (typeof v === 'string') out.push([`${k}:${v}`, 1]);
    else {
      const x = Number(v);
      // A zero-valued attribute never fires: its features only ever get weight 0.
      if (x !== 0) out.push([k, x]);
    }
  }
  return out;
}

function encode(
  sentences: readonly (readonly TokenAttributes[])[],
  attrIndex: Map<string, number>,
  grow: boolean,
): Encoded {
  const tokPtr: number[] = [0];
  const attr: number[] = [];
  const val: number[] = [];
  const sentPtr: number[] = [0];
  for (const s of sentences) {
    for (const tok of s) {
      for (const [name, v] of attributePairs(tok)) {
        let a = attrIndex.get(name);
        if (a === undefined) {
          if (!grow) continue;
          a = attrIndex.size;
          attrIndex.set(name, a);
        }
        attr.push(a);
        val.push(v);
      }
      tokPtr.push(attr.length);
    }
    sentPtr.push(tokPtr.length - 1);
  }
  return {
    tokPtr: Int32Array.from(tokPtr),
    attr: Int32Array.from(attr),
    val: Float64Array.from(val),
    sentPtr: Int32Array.from(sentPtr),
  };
}

/** State scores of every token of a sentence into `out` (T × L). */
function stateScores(m: CrfModel, e: Encoded, from: number, to: number, out: Float64Array): void {
  const L = m.labels.length;
  out.fill(0, 0, (to - from) * L);
  for (let t = from; t < to; t++) {
    const row = (t - from) * L;
    for (let p = e.tokPtr[t] as number; p < (e.tokPtr[t + 1] as number); p++) {
      const a = e.attr[p] as number;
      const v = e.val[p] as number;
      for (let f = m.featOff[a] as number; f < (m.featOff[a + 1] as number); f++) {
        const y = m.featLabel[f] as number;
        out[row + y] = (out[row + y] as number) + v * (m.weights[f] as number);
      }
    }
  }
}

/**
 * −log-likelihood of the training data and its gradient (into `grad`, overwritten), by forward-backward.
 */
function negLogLikelihood(m: CrfModel, e: Encoded, gold: Int32Array, grad: Float64Array): number {
  const L = m.labels.length;
  const nState = m.featLabel.length;
  const w = m.weights;
  grad.fill(0);
  const M = new Float64Array(L * L);
  for (let i = 0; i < L * L; i++) M[i] = Math.exp(w[nState + i] as number);
  let maxT = 0;
  for (let s = 0; s + 1 < e.sentPtr.length; s++)
    maxT = Math.max(maxT, (e.sentPtr[s + 1] as number) - (e.sentPtr[s] as number));
  const score = new Float64Array(maxT * L);
  const psi = new Float64Array(maxT * L);
  const alpha = new Float64Array(maxT * L);
  const beta = new Float64Array(maxT * L);
  const scale = new Float64Array(maxT);
  const marg = new Float64Array(L);
  let nll = 0;
  for (let s = 0; s + 1 < e.sentPtr.length; s++) {
    const from = e.sentPtr[s] as number;
    const to = e.sentPtr[s + 1] as number;
    const T = to - from;
    if (T === 0) continue;
    stateScores(m, e, from, to, score);
    // Ψ_t(y) = exp(score − max_t), the max added back to log Z, so exp never overflows.
    let logZ = 0;
    for (let t = 0; t < T; t++) {
      let mx = Number.NEGATIVE_INFINITY;
      for (let y = 0; y < L; y++) mx = Math.max(mx, score[t * L + y] as number);
      logZ += mx;
      for (let y = 0; y < L; y++) psi[t * L + y] = Math.exp((score[t * L + y] as number) - mx);
    }
    // Forward, normalised at each position: α̂_t sums to 1, scale[t] the normaliser.
    for (let t = 0; t < T; t++) {
      let sum = 0;
      for (let y = 0; y < L; y++) {
        let v: number;
        if (t === 0) v = psi[y] as number;
        else {
          v = 0;
          for (let yp = 0; yp < L; yp++) v += (alpha[(t - 1) * L + yp] as number) * (M[yp * L + y] as number);
          v *= psi[t * L + y] as number;
        }
        alpha[t * L + y] = v;
        sum += v;
      }
      scale[t] = sum;
      for (let y = 0; y < L; y++) alpha[t * L + y] = (alpha[t * L + y] as number) / sum;
      logZ += Math.log(sum);
    }
    // Backward with the same scales: P(y_t) = α̂_t β̂_t.
    for (let y = 0; y < L; y++) beta[(T - 1) * L + y] = 1;
    for (let t = T - 2; t >= 0; t--) {
      for (let yp = 0; yp < L; yp++) {
        let v = 0;
        for (let y = 0; y < L; y++)
          v +=
            (M[yp * L + y] as number) * (psi[(t + 1) * L + y] as number) * (beta[(t + 1) * L + y] as number);
        beta[t * L + yp] = v / (scale[t + 1] as number);
      }
    }
    // Log-likelihood of the gold path.
    let pathScore = 0;
    for (let t = 0; t < T; t++) {
      const y = gold[from + t] as number;
      pathScore += score[t * L + y] as number;
      if (t > 0) pathScore += w[nState + (gold[from + t - 1] as number) * L + y] as number;
    }
    nll += logZ - pathScore;
    // Gradient of −LL: expected minus observed counts.
    for (let t = 0; t < T; t++) {
      for (let y = 0; y < L; y++) marg[y] = (alpha[t * L + y] as number) * (beta[t * L + y] as number);
      const gy = gold[from + t] as number;
      for (let p = e.tokPtr[from + t] as number; p < (e.tokPtr[from + t + 1] as number); p++) {
        const a = e.attr[p] as number;
        const v = e.val[p] as number;
        for (let f = m.featOff[a] as number; f < (m.featOff[a + 1] as number); f++) {
          const y = m.featLabel[f] as number;
          grad[f] = (grad[f] as number) + v * ((marg[y] as number) - (y === gy ? 1 : 0));
        }
      }
      if (t > 0) {
        const c = scale[t] as number;
        for (let yp = 0; yp < L; yp++) {
          const ap = alpha[(t - 1) * L + yp] as number;
          for (let y = 0; y < L; y++) {
            const pair =
              (ap * (M[yp * L + y] as number) * (psi[t * L + y] as number) * (beta[t * L + y] as number)) / c;
            const k = nState + yp * L + y;
            grad[k] = (grad[k] as number) + pair;
          }
        }
        const k = nState + (gold[from + t - 1] as number) * L + gy;
        grad[k] = (grad[k] as number) - 1;
      }
    }
  }
  return nll;
}

const dot = (a: Float64Array, b: Float64Array): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
};

/** OWL-QN's pseudo-gradient of f + c1‖x‖₁ at x, from the smooth part's gradient g. */
function pseudoGradient(x: Float64Array, g: Float64Array, c1: number, out: Float64Array): void {
  for (let i = 0; i < x.length; i++) {
    const xi = x[i] as number;
    const gi = g[i] as number;
    if (xi < 0) out[i] = gi - c1;
    else if (xi > 0) out[i] = gi + c1;
    else if (gi + c1 < 0) out[i] = gi + c1;
    else if (gi - c1 > 0) out[i] = gi - c1;
    else out[i] = 0;
  }
}

/**
 * Trains a CRF on sentences of token attributes and their labels.
 * @example const model = trainCrf(sentences.map(sentenceFeatures), tags, { c1: 0.1, c2: 0.01, maxIterations: 200 });
 */
export function trainCrf(
  sentences: readonly (readonly TokenAttributes[])[],
  labels: readonly (readonly string[])[],
  options: CrfOptions,
): CrfModel {
  const { c1, c2, maxIterations } = options;
  const epsilon = options.epsilon ?? 1e-5;
  const delta = options.delta ?? 1e-5;
  const period = options.period ?? 10;
  const memories = options.memories ?? 6;

  // Labels in order of first appearance, as CRFsuite numbers them.
  const labelIndex = new Map<string, number>();
  for (const seq of labels) for (const y of seq) if (!labelIndex.has(y)) labelIndex.set(y, labelIndex.size);
  const L = labelIndex.size;
  const attrIndex = new Map<string, number>();
  const e = encode(sentences, attrIndex, true);
  const gold = Int32Array.from(labels.flat(), (y) => labelIndex.get(y) as number);

  // State features: the (attribute, label) pairs that occur together in training.
  const seen = new Map<number, Set<number>>();
  for (let t = 0; t < gold.length; t++) {
    for (let p = e.tokPtr[t] as number; p < (e.tokPtr[t + 1] as number); p++) {
      const a = e.attr[p] as number;
      let set = seen.get(a);
      if (!set) {
        set = new Set();
        seen.set(a, set);
      }
      set.add(gold[t] as number);
    }
  }
  const A = attrIndex.size;
  const featOff = new Int32Array(A + 1);
  for (let a = 0; a < A; a++) featOff[a + 1] = (featOff[a] as number) + (seen.get(a)?.size ?? 0);
  const nState = featOff[A] as number;
  const featLabel = new Int32Array(nState);
  for (let a = 0; a < A; a++) {
    const ys = [...(seen.get(a) ?? [])].sort((p, q) => p - q);
    ys.forEach((y, i) => {
      featLabel[(featOff[a] as number) + i] = y;
    });
  }
  const n = nState + L * L;
  const model: CrfModel = {
    labels: [...labelIndex.keys()],
    attributes: [...attrIndex.keys()],
    featOff,
    featLabel,
    weights: new Float64Array(n),
  };

  // Objective: smooth part (−LL + c2‖θ‖²) and its gradient; the L1 term is OWL-QN's.
  const evaluate = (x: Float64Array, g: Float64Array): number => {
    model.weights = x;
    const f = negLogLikelihood(model, e, gold, g);
    let norm2 = 0;
    for (let i = 0; i < n; i++) {
      norm2 += (x[i] as number) ** 2;
      g[i] = (g[i] as number) + 2 * c2 * (x[i] as number);
    }
    return f + c2 * norm2;
  };
  const l1 = (x: Float64Array): number => {
    let s = 0;
    for (let i = 0; i < n; i++) s += Math.abs(x[i] as number);
    return c1 * s;
  };

  let x = new Float64Array(n);
  let g = new Float64Array(n);
  let f = evaluate(x, g) + l1(x);
  const pg = new Float64Array(n);
  const d = new Float64Array(n);
  const xNew = new Float64Array(n);
  const gNew = new Float64Array(n);
  const S: Float64Array[] = [];
  const Y: Float64Array[] = [];
  const RHO: number[] = [];
  const history: number[] = [f];

  for (let iter = 1; iter <= maxIterations; iter++) {
    pseudoGradient(x, g, c1, pg);
    // Two-loop recursion on the pseudo-gradient (Nocedal and Wright, Algorithm 7.4).
    for (let i = 0; i < n; i++) d[i] = -(pg[i] as number);
    const alphas: number[] = [];
    for (let k = S.length - 1; k >= 0; k--) {
      const a = (RHO[k] as number) * dot(S[k] as Float64Array, d);
      alphas[k] = a;
      const yk = Y[k] as Float64Array;
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) - a * (yk[i] as number);
    }
    if (S.length > 0) {
      const last = S.length - 1;
      const gamma =
        dot(S[last] as Float64Array, Y[last] as Float64Array) /
        dot(Y[last] as Float64Array, Y[last] as Float64Array);
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) * gamma;
    }
    for (let k = 0; k < S.length; k++) {
      const b = (RHO[k] as number) * dot(Y[k] as Float64Array, d);
      const sk = S[k] as Float64Array;
      for (let i = 0; i < n; i++) d[i] = (d[i] as number) + (sk[i] as number) * ((alphas[k] as number) - b);
    }
    // Keep the direction in the orthant the pseudo-gradient points to.
    for (let i = 0; i < n; i++) if ((d[i] as number) * (pg[i] as number) >= 0) d[i] = 0;

    // Backtracking line search with projection onto the orthant of x (or of −pg where x is 0).
    let step = iter === 1 ? 1 / Math.max(Math.sqrt(dot(d, d)), 1e-12) : 1;
    let fNew = Number.POSITIVE_INFINITY;
    let accepted = false;
    for (let ls = 0; ls < 20; ls++) {
      for (let i = 0; i < n; i++) {
        const xi = x[i] as number;
        const orthant = xi !== 0 ? Math.sign(xi) : -Math.sign(pg[i] as number);
        const v = xi + step * (d[i] as number);
        xNew[i] = Math.sign(v) === orthant ? v : 0;
      }
      fNew = evaluate(xNew, gNew) + l1(xNew);
      let decrease = 0;
      for (let i = 0; i < n; i++) decrease += (pg[i] as number) * ((xNew[i] as number) - (x[i] as number));
      if (fNew <= f + 1e-4 * decrease) {
        accepted = true;
        break;
      }
      step *= 0.5;
    }
    if (!accepted) break;

    const s = new Float64Array(n);
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      s[i] = (xNew[i] as number) - (x[i] as number);
      y[i] = (gNew[i] as number) - (g[i] as number);
    }
    const sy = dot(s, y);
    if (sy > 0) {
      S.push(s);
      Y.push(y);
      RHO.push(1 / sy);
      if (S.length > memories) {
        S.shift();
        Y.shift();
        RHO.shift();
      }
    }
    [x, g] = [Float64Array.from(xNew), Float64Array.from(gNew)];
    f = fNew;
    history.push(f);
    let active = 0;
    for (let i = 0; i < n; i++) if (x[i] !== 0) active++;
    options.onIteration?.(iter, f, active);

    pseudoGradient(x, g, c1, pg);
    if (Math.sqrt(dot(pg, pg)) / Math.max(1, Math.sqrt(dot(x, x))) < epsilon) break;
    if (history.length > period) {
      const before = history[history.length - 1 - period] as number;
      if ((before - f) / f < delta) break;
    }
  }
  model.weights = x;
  return model;
}

/** −Σ log p(y | x) of labelled sentences under a model, and its gradient (for tests and diagnostics). */
export function crfObjective(
  model: CrfModel,
  sentences: readonly (readonly TokenAttributes[])[],
  labels: readonly (readonly string[])[],
): { nll: number; gradient: Float64Array } {
  const attrIndex = new Map(model.attributes.map((a, i) => [a, i]));
  const labelIndex = new Map(model.labels.map((l, i) => [l, i]));
  const e = encode(sentences, attrIndex, false);
  const gold = Int32Array.from(labels.flat(), (y) => labelIndex.get(y) as number);
  const gradient = new Float64Array(model.weights.length);
  return { nll: negLogLikelihood(model, e, gold, gradient), gradient };
}

/** The most likely label sequence of each sentence (Viterbi). */
export function predictCrf(model: CrfModel, sentences: readonly (readonly TokenAttributes[])[]): string[][] {
  const L = model.labels.length;
  const nState = model.featLabel.length;
  const attrIndex = new Map(model.attributes.map((a, i) => [a, i]));
  const e = encode(sentences, attrIndex, false);
  const out: string[][] = [];
  for (let s = 0; s + 1 < e.sentPtr.length; s++) {
    const from = e.sentPtr[s] as number;
    const T = (e.sentPtr[s + 1] as number) - from;
    const score = new Float64Array(T * L);
    stateScores(model, e, from, from + T, score);
    const delta = new Float64Array(T * L);
    const back = new Int32Array(T * L);
    for (let t = 0; t < T; t++) {
      for (let y = 0; y < L; y++) {
        if (t === 0) {
          delta[y] = score[y] as number;
          continue;
        }
        let best = Number.NEGATIVE_INFINITY;
        let arg = 0;
        for (let yp = 0; yp < L; yp++) {
          const v = (delta[(t - 1) * L + yp] as number) + (model.weights[nState + yp * L + y] as number);
          if (v > best) {
            best = v;
            arg = yp;
          }
        }
        delta[t * L + y] = best + (score[t * L + y] as number);
        back[t * L + y] = arg;
      }
    }
    const path = new Array<string>(T);
    let y = 0;
    for (let k = 1; k < L; k++)
      if ((delta[(T - 1) * L + k] as number) > (delta[(T - 1) * L + y] as number)) y = k;
    for (let t = T - 1; t >= 0; t--) {
      path[t] = model.labels[y] as string;
      y = back[t * L + y] as number;
    }
    out.push(path);
  }
  return out;
}
