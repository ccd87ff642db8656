/** Worker thread of {@link ThreadedLayers}: runs the directions it is sent, answering on its port. */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { Gemm } from './lstm-gemm.js';
import { type DirectionAnswer, type DirectionJob, runDirection } from './lstm-threads.js';

const { port, done } = workerData as { port: MessagePort; done: Int32Array };
const gemm = new Gemm();

parentPort?.on('message', (job: DirectionJob) => {
  let answer: DirectionAnswer;
  try {
    answer = { tape: runDirection(gemm, job) };
  } catch (e) {
    answer = { error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
  // The answer is queued on the port before the flag is raised, so the waiting thread finds it there.
  port.postMessage(answer);
  Atomics.store(done, 0, 1);
  Atomics.notify(done, 0);
});
