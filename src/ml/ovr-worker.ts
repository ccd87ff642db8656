/** Worker thread for {@link trainOneVsRestParallel}: trains one group of one-vs-rest problems. */
import { parentPort, workerData } from 'node:worker_threads';
import { createRng } from '../metrics/rng.js';
import { type BinaryLrOptions, trainOneVsRest } from './logreg.js';
import type { CsrMatrix } from './sparse.js';

export interface OvrJob {
  x: CsrMatrix;
  labels: Int32Array;
  positives: number[];
  options: BinaryLrOptions;
  seed: number;
}

export type OvrMessage =
  | { type: 'epoch'; epoch: number; active: number; violation: number }
  | { type: 'done'; weights: Float32Array; epochs: Int32Array };

const job = workerData as OvrJob;
const { weights, epochs } = trainOneVsRest(
  job.x,
  job.labels,
  job.positives,
  job.options,
  createRng(job.seed),
  (epoch, active, violation) =>
    parentPort?.postMessage({ type: 'epoch', epoch, active, violation } satisfies OvrMessage),
);
// Single precision halves what crosses to the main thread and what a saved model weighs; predictions do not need more.
const out = weights;
parentPort?.postMessage({ type: 'done', weights: out, epochs } satisfies OvrMessage, [
  out.buffer as ArrayBuffer,
  epochs.buffer as ArrayBuffer,
]);
