/**
 * A linear classifier over any features: L2-regularised logistic regression, one-vs-rest (one problem for two
 * classes, as scikit-learn), labels ranked by probability. The TF-IDF baseline and the encoder heads share it.
 */
import { ovrProbabilities } from '../ml/logreg.js';
import { blockDecisionValues, type OvrBlock, trainOneVsRestParallel } from '../ml/ovr-parallel.js';
import type { CsrMatrix } from '../ml/sparse.js';
import type { Scored } from './types.js';

export interface LinearHead {
  /** Sorted labels, as scikit-learn's `classes_`. */
  classes: string[];
  blocks: OvrBlock[];
  bias: number;
}

interface LinearTrainOptions {
  C: number;
  eps: number;
  maxEpochs: number;
  bias: number;
  seed: number;
  threads?: number;
  onEpoch?: (group: number, epoch: number, active: number, violation: number) => void;
}

export async function trainLinearHead(
  x: CsrMatrix,
  gold: readonly string[],
  options: LinearTrainOptions,
): Promise<LinearHead> {
  const classes = [...new Set(gold)].sort();
  const index = new Map(classes.map((c, i) => [c, i]));
  const labels = Int32Array.from(gold, (g) => index.get(g) as number);
  const positives = classes.length > 2 ? classes.map((_, i) => i) : [1];
  const { seed, threads, onEpoch, C, eps, maxEpochs, bias } = options;
  const blocks = await trainOneVsRestParallel(x, labels, positives, {
    C,
    eps,
    maxEpochs,
    bias,
    seed,
    ...(threads !== undefined ? { threads } : {}),
    ...(onEpoch ? { onEpoch } : {}),
  });
  return { classes, blocks, bias };
}

/** Class probabilities, rows × classes. */
export function linearProbabilities(head: LinearHead, x: CsrMatrix): Float64Array {
  const dv = blockDecisionValues(x, head.blocks, head.bias);
  if (head.classes.length > 2) return ovrProbabilities(dv, x.rows, head.classes.length);
  // Binary: one problem whose positive class is classes[1], as in scikit-learn.
  const out = new Float64Array(x.rows * 2);
  for (let r = 0; r < x.rows; r++) {
    const p = 1 / (1 + Math.exp(-(dv[r] as number)));
    out[2 * r] = 1 - p;
    out[2 * r + 1] = p;
  }
  return out;
}

/** The `top` best of K scores starting at `offset`; equal scores keep label order. */
export function topK(
  scores: ArrayLike<number>,
  offset: number,
  K: number,
  labels: readonly string[],
  top: number,
): Scored[] {
  const idx = Array.from({ length: K }, (_, c) => c);
  idx.sort((a, b) => (scores[offset + b] as number) - (scores[offset + a] as number) || a - b);
  return idx.slice(0, top).map((c) => ({ label: labels[c] as string, score: scores[offset + c] as number }));
}

/** Per row, labels ranked by probability. */
export function rankRows(head: LinearHead, x: CsrMatrix, top: number): Scored[][] {
  const K = head.classes.length;
  const p = linearProbabilities(head, x);
  return Array.from({ length: x.rows }, (_, r) => topK(p, r * K, K, head.classes, top));
}

/**
 * The classifier's fitting, said in words at most every few seconds: how many of the one-vs-rest problems (one per
 * label) have not converged yet. Per-pass lines with gradients were jargon, and a hundred of them for one task.
 */
export function fittingProgress(
  task: string,
  labels: number,
  log: (line: string) => void,
  everyMs = 5000,
): (pass: number, open: number) => void {
  const t0 = performance.now();
  let last = t0;
  return (pass, open) => {
    const now = performance.now();
    if (now - last < everyMs) return;
    last = now;
    log(
      `${task}: fitting the classifier, ${open} of ${labels} label(s) still converging (pass ${pass}, ${((now - t0) / 1000).toFixed(0)} s)`,
    );
  };
}
