/**
 * A linear classifier over any features: L2-regularised logistic regression, one-vs-rest (one problem for two
 * classes, as scikit-learn), labels ranked by probability. The TF-IDF baseline and the encoder heads share it.
 */

import { ovrProbabilities } from '../ml/logreg.js';
import {
  blockDecisionValues,
  blockWeights,
  type OvrBlock,
  OvrThreads,
  ovrThreadCount,
  trainOneVsRestParallel,
} from '../ml/ovr-parallel.js';
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
  /** Threads started ahead by {@link startLinearThreads}. */
  pool?: OvrThreads;
  onEpoch?: (group: number, epoch: number, active: number, violation: number) => void;
}

/**
 * The threads that {@link trainLinearHead} will train on these labels with, started now, so that they are ready when
 * the features are (a TF-IDF fit takes a second or so; a thread about 60 ms to start). Close it when training is
 * done or abandoned.
 */
export function startLinearThreads(gold: readonly string[], threads?: number): OvrThreads {
  return new OvrThreads(ovrThreadCount(problemsOf(new Set(gold).size).length, threads));
}

/** The one-vs-rest problems of `classes` sorted labels, by positive label: one for two classes, as scikit-learn. */
function problemsOf(classes: number): number[] {
  return classes > 2 ? Array.from({ length: classes }, (_, i) => i) : [1];
}

export async function trainLinearHead(
  x: CsrMatrix,
  gold: readonly string[],
  options: LinearTrainOptions,
): Promise<LinearHead> {
  const classes = [...new Set(gold)].sort();
  const index = new Map(classes.map((c, i) => [c, i]));
  const labels = Int32Array.from(gold, (g) => index.get(g) as number);
  const positives = problemsOf(classes.length);
  const { seed, threads, pool, onEpoch, C, eps, maxEpochs, bias } = options;
  const blocks = await trainOneVsRestParallel(x, labels, positives, {
    C,
    eps,
    maxEpochs,
    bias,
    seed,
    ...(threads !== undefined ? { threads } : {}),
    ...(pool ? { pool } : {}),
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

/**
 * Multi-label: one binary head per class (scikit-learn's `OneVsRestClassifier` over `LogisticRegression`), or what
 * the class always is where train holds it on every record or on none.
 */
export type ClassHeads = ReadonlyMap<string, LinearHead | boolean>;

export async function trainClassHeads(
  x: CsrMatrix,
  classes: readonly string[],
  gold: readonly (readonly string[])[],
  options: LinearTrainOptions,
  progress: (done: number) => void = () => {},
): Promise<ClassHeads> {
  const heads = new Map<string, LinearHead | boolean>();
  for (const [i, c] of classes.entries()) {
    const labels = gold.map((g) => (g.includes(c) ? '1' : '0'));
    const positives = labels.filter((l) => l === '1').length;
    heads.set(
      c,
      positives === 0 || positives === labels.length
        ? positives > 0
        : await trainLinearHead(x, labels, options),
    );
    progress(i + 1);
  }
  return heads;
}

/** Each row's classes: those whose probability is at least 0.5, in the task's class order. */
export function predictClassHeads(heads: ClassHeads, classes: readonly string[], x: CsrMatrix): string[][] {
  const out: string[][] = Array.from({ length: x.rows }, () => []);
  for (const c of classes) {
    const head = heads.get(c) ?? false;
    if (typeof head === 'boolean') {
      if (head) for (const row of out) row.push(c);
      continue;
    }
    const p = linearProbabilities(head, x);
    out.forEach((row, r) => {
      if ((p[2 * r + 1] as number) >= 0.5) row.push(c);
    });
  }
  return out;
}

/** Class heads as a saved model's meta (class → constant or blocks' positives) and arrays (`weights{i}_{g}`). */
export function saveClassHeads(
  heads: ClassHeads,
  arrays: Record<string, Float32Array | Float64Array | Int32Array>,
): Record<string, boolean | number[][]> {
  const meta: Record<string, boolean | number[][]> = {};
  [...heads].forEach(([c, head], i) => {
    if (typeof head === 'boolean') meta[c] = head;
    else {
      meta[c] = head.blocks.map((b) => b.positives);
      head.blocks.forEach((b, g) => {
        arrays[`weights${i}_${g}`] = blockWeights(b);
      });
    }
  });
  return meta;
}

export function loadClassHeads(
  meta: Record<string, boolean | number[][]>,
  arrays: Readonly<Record<string, unknown>>,
  bias: number,
): ClassHeads {
  const heads = new Map<string, LinearHead | boolean>();
  Object.entries(meta).forEach(([c, h], i) => {
    heads.set(
      c,
      typeof h === 'boolean'
        ? h
        : {
            classes: ['0', '1'],
            blocks: h.map((positives, g) => ({
              positives,
              weights: arrays[`weights${i}_${g}`] as Float32Array,
            })),
            bias,
          },
    );
  });
  return heads;
}
