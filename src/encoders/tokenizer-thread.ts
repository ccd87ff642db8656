/**
 * Tokenising on a thread of its own, so that it overlaps the runtime: onnxruntime-node runs a batch on the main
 * thread (its `run` is synchronous under the promise), and the JavaScript tokenizer costs about a microsecond a
 * token, as much as a small encoder's forward pass. The worker holds its own copy of the tokenizer.
 */
import { Worker } from 'node:worker_threads';
import { workerScript } from '../worker-script.js';
import type { TextInput } from './inputs.js';
import type { EncodedInput } from './tokenize.js';
import type { TokenizeJob, TokenizeReply } from './tokenize-worker.js';

export class TokenizerThread {
  private readonly worker: Worker;
  private nextId = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (e: EncodedInput[]) => void; reject: (e: Error) => void }
  >();

  constructor(modelDir: string) {
    this.worker = new Worker(workerScript('tokenize-worker.js', import.meta.url), { workerData: modelDir });
    // Never the reason the process stays up.
    this.worker.unref();
    this.worker.on('message', (reply: TokenizeReply) => {
      const w = this.waiting.get(reply.id);
      if (!w) return;
      this.waiting.delete(reply.id);
      if ('error' in reply) {
        w.reject(new Error(reply.error));
        return;
      }
      const { ids, typeIds, offsets } = reply;
      w.resolve(
        Array.from({ length: offsets.length - 1 }, (_, k) => ({
          ids: ids.subarray(offsets[k], offsets[k + 1]),
          typeIds: typeIds.subarray(offsets[k], offsets[k + 1]),
        })),
      );
    });
    this.worker.on('error', (e) => this.failAll(e));
    this.worker.on('exit', (code) =>
      this.failAll(new Error(`the tokenizer thread exited with code ${code}`)),
    );
  }

  private failAll(e: Error): void {
    for (const w of this.waiting.values()) w.reject(e);
    this.waiting.clear();
  }

  encode(inputs: readonly TextInput[], maxLength: number): Promise<EncodedInput[]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const job: TokenizeJob = { id, inputs, maxLength };
      this.worker.postMessage(job);
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
