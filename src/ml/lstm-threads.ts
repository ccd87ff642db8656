/**
 * Who runs the two directions of a bidirectional layer. They are independent (each reads the layer's input and
 * writes its own half of the output, its own tape, its own gradients), so {@link ThreadedLayers} runs the backward
 * direction on a second thread while this one runs the forward direction, every array shared in place
 * (./lstm.ts allocates them on SharedArrayBuffers). Each direction's input gradient goes to an array of its own
 * and the two are summed afterwards in one fixed order, on one thread or two alike: the bits of every result are
 * the same for any number of threads.
 *
 * The calls stay synchronous: this thread waits for the other with Atomics.wait and takes its answer with
 * receiveMessageOnPort, so training needs no event loop turns (and no `await`) per batch.
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { workerScript } from '../worker-script.js';
import { type LstmCell, type LstmTape, lstmBackward, lstmForward, type Slot } from './lstm.js';
import { Gemm } from './lstm-gemm.js';

/** One direction's work, as the other thread receives it. */
export type DirectionJob =
  | {
      op: 'forward';
      cell: LstmCell;
      x: Float32Array;
      steps: number;
      batch: number;
      reverse: boolean;
      out: Slot;
      /** The caller's arrays for the tape (pooled across passes: ./bilstm-net.ts). */
      into?: { gates: Float32Array; cells: Float32Array };
    }
  | {
      op: 'backward';
      cell: LstmCell;
      tape: LstmTape;
      x: Float32Array;
      out: Slot;
      dOut?: Slot;
      dFinal?: Slot;
      dx?: Float32Array;
    };

/** The other thread's answer: the forward tape, nothing for a backward pass, or what went wrong. */
export type DirectionAnswer = { tape?: LstmTape | undefined; error?: string };

/** Runs one job on `gemm`: the one body both threads run. */
export function runDirection(gemm: Gemm, job: DirectionJob): LstmTape | undefined {
  if (job.op === 'forward')
    return lstmForward(gemm, job.cell, job.x, job.steps, job.batch, job.reverse, job.out, job.into);
  lstmBackward(gemm, job.cell, job.tape, job.x, job.out, job.dOut, job.dFinal, job.dx);
  return undefined;
}

/** Runs both directions of a layer: [forward job, backward job] in, their tapes out. */
export interface LayerRunner {
  run(jobs: readonly [DirectionJob, DirectionJob]): [LstmTape | undefined, LstmTape | undefined];
  close(): void;
}

/** Both directions on this thread, one after the other. */
export class LocalLayers implements LayerRunner {
  private readonly gemm = new Gemm();
  run(jobs: readonly [DirectionJob, DirectionJob]): [LstmTape | undefined, LstmTape | undefined] {
    return [runDirection(this.gemm, jobs[0]), runDirection(this.gemm, jobs[1])];
  }
  close(): void {}
}

/** The second direction on a worker thread (./lstm-worker.ts), the first here, at once. */
export class ThreadedLayers implements LayerRunner {
  private readonly gemm = new Gemm();
  private readonly worker: Worker;
  private readonly port: MessagePort;
  /** [0]: 0 while the other thread works, 1 once it has answered. */
  private readonly done = new Int32Array(new SharedArrayBuffer(4));

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(workerScript('lstm-worker.js', import.meta.url), {
      workerData: { port: port2, done: this.done },
      transferList: [port2],
    });
    this.worker.unref();
  }

  run(jobs: readonly [DirectionJob, DirectionJob]): [LstmTape | undefined, LstmTape | undefined] {
    Atomics.store(this.done, 0, 0);
    this.worker.postMessage(jobs[1]);
    let first: LstmTape | undefined;
    let failure: unknown;
    try {
      first = runDirection(this.gemm, jobs[0]);
    } catch (e) {
      failure = e;
    }
    // Whatever happened here, the other thread is waited for: its writes into shared arrays must be over before
    // anyone reads or reuses them.
    Atomics.wait(this.done, 0, 0);
    const answer = receiveMessageOnPort(this.port)?.message as DirectionAnswer | undefined;
    if (failure) throw failure;
    if (!answer) throw new Error('the BiLSTM worker thread signalled without an answer');
    if (answer.error) throw new Error(`the BiLSTM worker thread failed: ${answer.error}`);
    return [first, answer.tape];
  }

  close(): void {
    void this.worker.terminate();
  }
}
