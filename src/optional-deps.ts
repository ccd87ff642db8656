/**
 * The inference engines are optional peer dependencies: a user who scores files or runs the leaderboard does not
 * download a gigabyte of them. Each is loaded on first use; a missing one is named in one line with the version to
 * install (the versions the project is tested with).
 */
import { RumedbenchError } from './errors.js';

export const ENGINES = {
  'node-llama-cpp': '3.21.1',
  'onnxruntime-node': '1.30.0',
  '@huggingface/transformers': '4.3.2',
  '@huggingface/tokenizers': '0.2.0',
} as const;
export type EngineName = keyof typeof ENGINES;

/** The engine a failed import lacks, if that is why it failed. */
export function missingEngine(e: unknown): EngineName | undefined {
  const err = e as { code?: string; message?: string };
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' && err?.code !== 'MODULE_NOT_FOUND') return undefined;
  return (Object.keys(ENGINES) as EngineName[]).find((name) => err.message?.includes(`'${name}'`));
}

/** Runs an import that needs engines; a missing engine becomes one line saying what to install. */
export async function withEngines<T>(purpose: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    const name = missingEngine(e);
    if (!name) throw e;
    const also = name === 'onnxruntime-node' || name.startsWith('@huggingface/') ? ENCODER_ENGINES : [name];
    throw new RumedbenchError(
      'ENGINE_MISSING',
      `${purpose} needs ${name}, an optional dependency that is not installed: npm install ${also.map((n) => `${n}@${ENGINES[n]}`).join(' ')}`,
      { cause: e },
    );
  }
}

/** What the ONNX encoders need, together. */
const ENCODER_ENGINES: EngineName[] = [
  'onnxruntime-node',
  '@huggingface/transformers',
  '@huggingface/tokenizers',
];
