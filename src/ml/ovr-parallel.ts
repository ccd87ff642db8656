/**
 * One-vs-rest logistic regression over several threads: the problems are split into groups, each trained by
 * {@link trainOneVsRestPieces} in a worker thread on the same training matrix, shared (not copied) through
 * SharedArrayBuffers, and its weights assembled here ({@link assembleOneVsRest}), as {@link trainOneVsRest} would
 * give them. Since the problems do not interact, the weights are the same for any number of threads.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { workerScript } from '../worker-script.js';
import { assembleOneVsRest, type BinaryLrOptions, type OvrPieces } from './logreg.js';
import type { OvrJob, OvrMessage } from './ovr-worker.js';
import type { CsrMatrix } from './sparse.js';

/** A group of problems and their weights, feature-major (`weights[j * positives.length + c]`). */
export interface OvrBlock {
  positives: number[];
  weights: Float32Array;
}

interface OvrParallelOptions extends BinaryLrOptions {
  seed: number;
  /** Worker threads; defaults to the machine's parallelism. */
  threads?: number;
  onEpoch?: (group: number, epoch: number, active: number, violation: number) => void;
}

/** `a` in shared memory, which the workers read without a copy each; already shared, as it is. */
function shared<T extends Int32Array | Float64Array>(a: T): T {
  if (a.buffer instanceof SharedArrayBuffer) return a;
  const b = new (a.constructor as new (buf: SharedArrayBuffer) => T)(new SharedArrayBuffer(a.byteLength));
  b.set(a);
  return b;
}

export async function trainOneVsRestParallel(
  x: CsrMatrix,
  labels: Int32Array,
  positives: readonly number[],
  options: OvrParallelOptions,
): Promise<OvrBlock[]> {
  const threads = Math.max(1, Math.min(options.threads ?? availableParallelism(), positives.length));
  const sx: CsrMatrix = {
    rows: x.rows,
    cols: x.cols,
    indptr: shared(x.indptr),
    indices: shared(x.indices),
    data: shared(x.data),
  };
  const sl = shared(labels);
  // Contiguous groups of nearly equal size; every problem costs about the same per pass.
  const groups = Array.from({ length: threads }, (_, g) =>
    positives.slice(
      Math.floor((g * positives.length) / threads),
      Math.floor(((g + 1) * positives.length) / threads),
    ),
  );
  const { C, eps, maxEpochs, bias } = options;
  const pieces = await Promise.all(
    groups.map(
      (group, g) =>
        new Promise<OvrPieces>((resolve, reject) => {
          const job: OvrJob = {
            x: sx,
            labels: sl,
            positives: group,
            options: { C, eps, maxEpochs, bias },
            seed: options.seed,
          };
          const worker = new Worker(workerScript('ovr-worker.js', import.meta.url), { workerData: job });
          let done: OvrPieces | undefined;
          worker.on('message', (m: OvrMessage) => {
            if (m.type === 'epoch') options.onEpoch?.(g, m.epoch, m.active, m.violation);
            else done = m.pieces;
          });
          worker.on('error', reject);
          // Settled on the exit, not the message: until then the thread's WebAssembly memory is still held.
          worker.on('exit', (code) => {
            if (code !== 0) reject(new Error(`training worker exited with code ${code}`));
            else if (!done) reject(new Error('training worker exited without its weights'));
            else resolve(done);
          });
        }),
    ),
  );
  // Only once every worker is gone, so that no training memory is held beside a full weight matrix; one block at a
  // time, in the buffer its pieces came in.
  return groups.map((group, g) => ({
    positives: group,
    weights: assembleOneVsRest(x, labels, group, pieces[g] as OvrPieces),
  }));
}

/** Decision values of every row for every problem of every block, in the order of `positives` given to training. */
export function blockDecisionValues(x: CsrMatrix, blocks: readonly OvrBlock[], bias: number): Float64Array {
  const K = blocks.reduce((n, b) => n + b.positives.length, 0);
  const out = new Float64Array(x.rows * K);
  let offset = 0;
  for (const block of blocks) {
    const k = block.positives.length;
    const W = block.weights;
    const interceptBase = x.cols * k;
    for (let r = 0; r < x.rows; r++) {
      const o = r * K + offset;
      for (let c = 0; c < k; c++) out[o + c] = (W[interceptBase + c] as number) * bias;
      for (let p = x.indptr[r] as number; p < (x.indptr[r + 1] as number); p++) {
        const v = x.data[p] as number;
        const base = (x.indices[p] as number) * k;
        for (let c = 0; c < k; c++) out[o + c] = (out[o + c] as number) + v * (W[base + c] as number);
      }
    }
    offset += k;
  }
  return out;
}
