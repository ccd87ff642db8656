/** A worker thread that tokenises for ./tokenizer-thread.ts: the model's tokenizer, loaded once from its folder. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type { TextInput } from './inputs.js';
import { EncoderTokenizer } from './tokenize.js';

export interface TokenizeJob {
  id: number;
  inputs: readonly TextInput[];
  maxLength: number;
}

/** The encoded inputs of a job packed into three arrays: input k is ids[offsets[k] .. offsets[k + 1]). */
export type TokenizeReply =
  | { id: number; ids: Int32Array; typeIds: Int32Array; offsets: Int32Array }
  | { id: number; error: string };

const dir = workerData as string;
const json = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
const tokenizer = new EncoderTokenizer(json('tokenizer.json'), json('tokenizer_config.json'), dir);

parentPort?.on('message', (job: TokenizeJob) => {
  try {
    const encoded = job.inputs.map((input) => tokenizer.encode(input, job.maxLength));
    const offsets = new Int32Array(encoded.length + 1);
    encoded.forEach((e, k) => {
      offsets[k + 1] = (offsets[k] as number) + e.ids.length;
    });
    const total = offsets[encoded.length] as number;
    const ids = new Int32Array(total);
    const typeIds = new Int32Array(total);
    encoded.forEach((e, k) => {
      ids.set(e.ids, offsets[k]);
      typeIds.set(e.typeIds, offsets[k]);
    });
    const reply: TokenizeReply = { id: job.id, ids, typeIds, offsets };
    parentPort?.postMessage(reply, [ids.buffer, typeIds.buffer, offsets.buffer]);
  } catch (e) {
    const reply: TokenizeReply = { id: job.id, error: (e as Error).message };
    parentPort?.postMessage(reply);
  }
});
