/** Worker thread for {@link trainOneVsRestParallel}: trains one group of one-vs-rest problems. */
import { parentPort } from 'node:worker_threads';
import { createRng } from '../metrics/rng.js';
import { type BinaryLrOptions, type OvrPieces, trainOneVsRestPieces } from './logreg.js';
import type { CsrMatrix } from './sparse.js';

export interface OvrJob {
  x: CsrMatrix;
  labels: Int32Array;
  positives: number[];
  options: BinaryLrOptions;
  seed: number;
  /**
   * Whose turn it is to copy its weights out of its arena: 0 for nobody, g + 1 for group g. Taken before the copy
   * and given back by the main thread once that thread has exited, so that two threads never hold an arena and its
   * copy at once.
   */
  copyTurn: Int32Array;
  group: number;
}

export type OvrMessage =
  | { type: 'epoch'; epoch: number; active: number; violation: number }
  | { type: 'done'; pieces: OvrPieces };

// The job comes as the thread's first message (the thread may have been started before it existed: OvrThreads); once
// it is answered the thread has nothing left to wait for, and ends.
parentPort?.once('message', (job: OvrJob) => {
  // Only the pieces cross: the full weights are built in the main thread once this thread (and the WebAssembly
  // memory it trained in, which only its end frees) is gone.
  const pieces = trainOneVsRestPieces(
    job.x,
    job.labels,
    job.positives,
    job.options,
    createRng(job.seed),
    (epoch, active, violation) =>
      parentPort?.postMessage({ type: 'epoch', epoch, active, violation } satisfies OvrMessage),
    () => {
      const mine = job.group + 1;
      for (;;) {
        const holder = Atomics.compareExchange(job.copyTurn, 0, 0, mine);
        if (holder === 0) return;
        Atomics.wait(job.copyTurn, 0, holder);
      }
    },
  );
  parentPort?.postMessage({ type: 'done', pieces } satisfies OvrMessage, [
    pieces.weights.buffer as ArrayBuffer,
    pieces.sharedToColumn.buffer as ArrayBuffer,
    pieces.alpha.buffer as ArrayBuffer,
    pieces.epochs.buffer as ArrayBuffer,
  ]);
});
