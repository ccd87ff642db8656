/**
 * One-vs-rest logistic regression over several threads: the problems are split into groups, each trained by
 * {@link trainOneVsRestPieces} in a worker thread on the same training matrix, shared (not copied) through
 * SharedArrayBuffers, and its weights kept here in factored form ({@link FactoredWeights}), which spell out to those
 * {@link trainOneVsRest} gives. Since the problems do not interact, the weights are the same for any number of
 * threads.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { workerScript } from '../worker-script.js';
import {
  type BinaryLrOptions,
  type ColumnPlaces,
  columnPlaces,
  denseWeights,
  type FactoredWeights,
  factorOneVsRest,
  NO_ROW,
  type OvrPieces,
} from './logreg.js';
import type { OvrJob, OvrMessage } from './ovr-worker.js';
import type { CsrMatrix } from './sparse.js';

/** A group of problems and their weights: as training leaves them, or spelled out (as saved models hold them). */
export type OvrBlock = FactoredOvrBlock | DenseOvrBlock;

export interface FactoredOvrBlock {
  positives: number[];
  factored: FactoredWeights;
}

export interface DenseOvrBlock {
  positives: number[];
  /** Feature-major: `weights[j * positives.length + c]`, the intercept at j = cols. */
  weights: Float32Array;
}

/** A block's full weights, feature-major (`[j * positives.length + c]`, the intercept at j = cols). */
export function blockWeights(block: OvrBlock): Float32Array {
  return 'weights' in block ? block.weights : denseWeights(block.factored);
}

/**
 * Training threads started before their jobs exist, so that their start (about 60 ms each: an isolate, the modules,
 * the WebAssembly module) overlaps other work, as the TF-IDF fit that makes their training matrix. A started thread
 * waits for its job; one not taken when {@link close} is called is stopped. Waiting threads do not keep the process
 * alive.
 */
export class OvrThreads {
  private waiting: Worker[];

  constructor(count: number) {
    this.waiting = Array.from({ length: count }, () => startThread());
    for (const w of this.waiting) w.unref();
  }

  /** A started thread, or a new one where none is left. */
  take(): Worker {
    const w = this.waiting.pop();
    if (!w) return startThread();
    w.ref();
    return w;
  }

  /** Stops the threads not taken. */
  close(): void {
    for (const w of this.waiting.splice(0)) void w.terminate();
  }
}

/** How many threads {@link trainOneVsRestParallel} trains this many problems on, given the `threads` asked for. */
export function ovrThreadCount(problems: number, threads?: number): number {
  return Math.max(1, Math.min(threads ?? availableParallelism(), problems));
}

function startThread(): Worker {
  return new Worker(workerScript('ovr-worker.js', import.meta.url));
}

interface OvrParallelOptions extends BinaryLrOptions {
  seed: number;
  /** Worker threads; defaults to the machine's parallelism. */
  threads?: number;
  /** Threads started ahead (see {@link OvrThreads}); others are started here. */
  pool?: OvrThreads;
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
  const threads = ovrThreadCount(positives.length, options.threads);
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
  // At its end a thread copies its weights out of its WebAssembly memory, which only the thread's exit frees: one at a
  // time, so that the peak is one copy above the arenas, not one per thread (for RuMedTop3, 63 MB each).
  const copyTurn = new Int32Array(new SharedArrayBuffer(4));
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
            copyTurn,
            group: g,
          };
          const worker = options.pool?.take() ?? startThread();
          worker.postMessage(job);
          let done: OvrPieces | undefined;
          worker.on('message', (m: OvrMessage) => {
            if (m.type === 'epoch') options.onEpoch?.(g, m.epoch, m.active, m.violation);
            else done = m.pieces;
          });
          worker.on('error', reject);
          // Settled on the exit, not the message: until then the thread's WebAssembly memory is still held.
          worker.on('exit', (code) => {
            if (Atomics.compareExchange(copyTurn, 0, g + 1, 0) === g + 1) Atomics.notify(copyTurn, 0);
            if (code !== 0) reject(new Error(`training worker exited with code ${code}`));
            else if (!done) reject(new Error('training worker exited without its weights'));
            else resolve(done);
          });
        }),
    ),
  );
  // Every group split the same columns: where each column's weights come from is worked out once for all.
  let columns: ColumnPlaces | undefined;
  return groups.map((group, g) => {
    const p = pieces[g] as OvrPieces;
    columns ??= columnPlaces(x, p.sharedToColumn);
    return { positives: group, factored: factorOneVsRest(x, labels, group, p, columns) };
  });
}

/**
 * Decision values of every row for every problem of every block, in the order of `positives` given to training.
 *
 * The rows' non-zeros are visited column by column, in increasing order: each column's block of weights is read once
 * for every row that holds it, and the blocks are read in the order they lie in memory. Row by row, every non-zero
 * read a block of its own, at random: for RuMedTop3's test set this took 0.25 s, mostly waiting on memory. Where
 * every row's columns are in increasing order (as TF-IDF gives them), each sum is added up in the same order either
 * way, so the values are the same to the bit; other matrices are read row by row.
 */
export function blockDecisionValues(x: CsrMatrix, blocks: readonly OvrBlock[], bias: number): Float64Array {
  const K = blocks.reduce((n, b) => n + b.positives.length, 0);
  const out = new Float64Array(x.rows * K);
  const csc = columnMajor(x);
  let offset = 0;
  for (const block of blocks) {
    const k = block.positives.length;
    const f = 'factored' in block ? block.factored : undefined;
    const W = f ? f.shared : (block as DenseOvrBlock).weights;
    const interceptBase = W.length - k;
    for (let r = 0; r < x.rows; r++)
      for (let c = 0; c < k; c++) out[r * K + offset + c] = (W[interceptBase + c] as number) * bias;
    // A private column's weights (of factored ones), rounded to single precision as spelled-out ones are.
    const own = new Float64Array(k);
    const privateWeights = (at: number, j: number): void => {
      const xv = (f as FactoredWeights).value[j] as number;
      const row = (-1 - at) * k;
      for (let c = 0; c < k; c++)
        own[c] = Math.fround(((f as FactoredWeights).rowScale[row + c] as number) * xv);
    };
    const rowsOf = csc ?? rowMajor(x);
    for (let j = 0; j < rowsOf.cols; j++) {
      const from = rowsOf.colptr[j] as number;
      const to = rowsOf.colptr[j + 1] as number;
      if (from === to) continue;
      // Column j's weights: at W[base .. base + k), or in `own`.
      let base = -1;
      const col = csc ? j : (x.indices[j] as number);
      if (!f) base = col * k;
      else {
        const at = f.place[col] as number;
        if (at >= 0) base = at * k;
        else if (at === NO_ROW) continue;
        else privateWeights(at, col);
      }
      for (let p = from; p < to; p++) {
        const o = (rowsOf.rows[p] as number) * K + offset;
        const v = rowsOf.data[p] as number;
        if (base >= 0)
          for (let c = 0; c < k; c++) out[o + c] = (out[o + c] as number) + v * (W[base + c] as number);
        else for (let c = 0; c < k; c++) out[o + c] = (out[o + c] as number) + v * (own[c] as number);
      }
    }
    offset += k;
  }
  return out;
}

/** Non-zeros grouped by column: the p-th of group g in row `rows[p]`, with value `data[p]`. */
interface Grouped {
  cols: number;
  colptr: Int32Array;
  rows: Int32Array;
  data: Float64Array;
}

/** Each non-zero a group of its own, in row order (its column is `x.indices[g]`). */
function rowMajor(x: CsrMatrix): Grouped {
  const nnz = x.indptr[x.rows] as number;
  const rows = new Int32Array(nnz);
  for (let r = 0; r < x.rows; r++) rows.fill(r, x.indptr[r] as number, x.indptr[r + 1] as number);
  return { cols: nnz, colptr: Int32Array.from({ length: nnz + 1 }, (_, p) => p), rows, data: x.data };
}

/** `x` column by column (rows in increasing order within each); undefined where some row's columns are not increasing. */
function columnMajor(x: CsrMatrix): Grouped | undefined {
  const { indptr, indices } = x;
  const colptr = new Int32Array(x.cols + 1);
  for (let r = 0; r < x.rows; r++) {
    for (let p = indptr[r] as number; p < (indptr[r + 1] as number); p++) {
      if (p > (indptr[r] as number) && (indices[p] as number) <= (indices[p - 1] as number)) return undefined;
      colptr[(indices[p] as number) + 1] = (colptr[(indices[p] as number) + 1] as number) + 1;
    }
  }
  for (let j = 0; j < x.cols; j++) colptr[j + 1] = (colptr[j + 1] as number) + (colptr[j] as number);
  const next = colptr.slice(0, x.cols);
  const nnz = indptr[x.rows] as number;
  const rows = new Int32Array(nnz);
  const data = new Float64Array(nnz);
  for (let r = 0; r < x.rows; r++) {
    for (let p = indptr[r] as number; p < (indptr[r + 1] as number); p++) {
      const at = next[indices[p] as number] as number;
      next[indices[p] as number] = at + 1;
      rows[at] = r;
      data[at] = x.data[p] as number;
    }
  }
  return { cols: x.cols, colptr, rows, data };
}
