/**
 * How well a model's confidence matches how often it is right, from each item's scores over its candidates (the
 * log-likelihoods of a log-likelihood run, turned into probabilities by a softmax):
 * - ECE, the expected calibration error over 15 equal-width confidence bins (Guo et al., 2017, "On Calibration of
 *   Modern Neural Networks"): Σ_b |B_b|/n · |accuracy(B_b) − mean confidence(B_b)|, confidence the top probability;
 * - the same over 15 bins of equal count (the adaptive calibration error of Nixon et al., 2019, "Measuring
 *   Calibration in Deep Learning"), which equal-width bins hide when most confidences crowd near 1;
 * - the Brier score (Brier, 1950), multi-class: the mean squared distance between the probability vector and the
 *   one-hot answer (0 best, 2 worst);
 * - NLL, the mean negative log-probability of the answer (from the log-softmax, so a tiny probability stays finite);
 * - accuracy at coverage (selective prediction, El-Yaniv & Wiener, 2010): the accuracy of the most confident 10 %,
 *   20 %, …, 100 % of the items.
 * All are fractions (ECE 0.05 is five points of accuracy).
 */
import { percentile } from './quantile.js';
import { createRng } from './rng.js';

export interface CalibrationItem {
  /** One score per candidate: log-probabilities, or any logits. */
  logits: readonly number[];
  /** The index of the right candidate. */
  gold: number;
}

export interface Calibration {
  n: number;
  ece: number;
  ece_adaptive: number;
  brier: number;
  nll: number;
  accuracy_at_coverage: { coverage: number; accuracy: number }[];
  /** The equal-width bins that hold items (the reliability diagram): range, items, accuracy, mean confidence. */
  bins: { lo: number; hi: number; n: number; accuracy: number; confidence: number }[];
}

export const CALIBRATION_BINS = 15;

/** log Σ exp(x), without overflow. */
function logSumExp(xs: readonly number[]): number {
  const m = Math.max(...xs);
  if (!Number.isFinite(m)) return m;
  let s = 0;
  for (const x of xs) s += Math.exp(x - m);
  return m + Math.log(s);
}

export function softmax(logits: readonly number[]): number[] {
  const z = logSumExp(logits);
  return logits.map((x) => Math.exp(x - z));
}

/** Σ |B|/n · |accuracy(B) − confidence(B)| over the given bins of item indices. */
function binnedError(
  bins: readonly number[][],
  conf: readonly number[],
  correct: readonly boolean[],
  n: number,
): number {
  let e = 0;
  for (const b of bins) {
    if (b.length === 0) continue;
    const acc = b.filter((i) => correct[i]).length / b.length;
    const c = b.reduce((s, i) => s + (conf[i] as number), 0) / b.length;
    e += (b.length / n) * Math.abs(acc - c);
  }
  return e;
}

export function calibration(items: readonly CalibrationItem[], bins = CALIBRATION_BINS): Calibration {
  const n = items.length;
  if (n === 0)
    return {
      n: 0,
      ece: Number.NaN,
      ece_adaptive: Number.NaN,
      brier: Number.NaN,
      nll: Number.NaN,
      accuracy_at_coverage: [],
      bins: [],
    };
  const conf: number[] = [];
  const correct: boolean[] = [];
  let brier = 0;
  let nll = 0;
  for (const it of items) {
    const p = softmax(it.logits);
    // The prediction is the first of the highest: the same tie rule as the answer the run writes.
    let top = 0;
    for (let k = 1; k < p.length; k++) if ((p[k] as number) > (p[top] as number)) top = k;
    conf.push(p[top] as number);
    correct.push(top === it.gold);
    for (let k = 0; k < p.length; k++) brier += ((p[k] as number) - (k === it.gold ? 1 : 0)) ** 2;
    nll += logSumExp(it.logits) - (it.logits[it.gold] as number);
  }
  // Equal width: bin b holds confidences in (b/M, (b+1)/M]; 0 goes to the first.
  const wide: number[][] = Array.from({ length: bins }, () => []);
  for (const [i, c] of conf.entries())
    (wide[Math.min(bins - 1, Math.max(0, Math.ceil(c * bins) - 1))] as number[]).push(i);
  // Equal count: the items by confidence, cut into M runs as equal as they can be.
  const order = conf.map((_, i) => i).sort((a, b) => (conf[a] as number) - (conf[b] as number) || a - b);
  const mass = Array.from({ length: bins }, (_, b) =>
    order.slice(Math.floor((b * n) / bins), Math.floor(((b + 1) * n) / bins)),
  );
  const byConfidence = conf
    .map((_, i) => i)
    .sort((a, b) => (conf[b] as number) - (conf[a] as number) || a - b);
  const accuracy_at_coverage = Array.from({ length: 10 }, (_, k) => {
    const coverage = (k + 1) / 10;
    const kept = byConfidence.slice(0, Math.max(1, Math.ceil(coverage * n)));
    return { coverage, accuracy: kept.filter((i) => correct[i]).length / kept.length };
  });
  return {
    n,
    ece: binnedError(wide, conf, correct, n),
    ece_adaptive: binnedError(mass, conf, correct, n),
    brier: brier / n,
    nll: nll / n,
    accuracy_at_coverage,
    bins: wide.flatMap((b, k) =>
      b.length === 0
        ? []
        : [
            {
              lo: k / bins,
              hi: (k + 1) / bins,
              n: b.length,
              accuracy: b.filter((i) => correct[i]).length / b.length,
              confidence: b.reduce((s, i) => s + (conf[i] as number), 0) / b.length,
            },
          ],
    ),
  };
}

export interface EceDifference {
  n: number;
  a: number;
  b: number;
  /** ECE(B) − ECE(A) on the same items. */
  delta: number;
  /** 95% paired-bootstrap percentile interval of the difference. */
  ci: [number, number];
  /** Two-sided approximate randomization: each item's two answers swapped at random, (count + 1) / (R + 1). */
  p: number;
}

/**
 * The paired difference in ECE between two runs over the same items: the statistics of `compare` (a paired
 * bootstrap interval and an approximate-randomization p-value, Noreen 1989) applied to the ECE of Guo et al. (2017).
 */
export function eceDifference(
  pairs: readonly { a: CalibrationItem; b: CalibrationItem }[],
  resamples: number,
  seed: number,
  bins = CALIBRATION_BINS,
): EceDifference {
  const ece = (items: readonly CalibrationItem[]) => calibration(items, bins).ece;
  const as = pairs.map((p) => p.a);
  const bs = pairs.map((p) => p.b);
  const a = ece(as);
  const b = ece(bs);
  const delta = b - a;
  const rng = createRng(seed);
  const next = () => rng.next();
  const n = pairs.length;
  const boot: number[] = [];
  let extreme = 0;
  for (let r = 0; r < resamples; r++) {
    const ra: CalibrationItem[] = [];
    const rb: CalibrationItem[] = [];
    for (let i = 0; i < n; i++) {
      const k = Math.floor(next() * n);
      ra.push(as[k] as CalibrationItem);
      rb.push(bs[k] as CalibrationItem);
    }
    boot.push(ece(rb) - ece(ra));
    const sa: CalibrationItem[] = [];
    const sb: CalibrationItem[] = [];
    for (let i = 0; i < n; i++) {
      const swap = next() < 0.5;
      sa.push((swap ? bs[i] : as[i]) as CalibrationItem);
      sb.push((swap ? as[i] : bs[i]) as CalibrationItem);
    }
    if (Math.abs(ece(sb) - ece(sa)) >= Math.abs(delta) - 1e-12) extreme++;
  }
  const sorted = Float64Array.from(boot).sort();
  return {
    n,
    a,
    b,
    delta,
    ci: resamples > 0 ? [percentile(sorted, 2.5), percentile(sorted, 97.5)] : [delta, delta],
    p: (extreme + 1) / (resamples + 1),
  };
}
