/** Optional engines (#18): a missing one is named in one line with what to install; other failures pass through. */
import { describe, expect, it } from 'vitest';
import { missingEngine, withEngines } from './optional-deps.js';

const notFound = (name: string) =>
  Object.assign(
    new Error(`Cannot find package '${name}' imported from /app/node_modules/rumedbench/dist/x.js`),
    {
      code: 'ERR_MODULE_NOT_FOUND',
    },
  );

describe('optional engines', () => {
  it('names the missing engine and the versions to install', async () => {
    await expect(
      withEngines('--provider llama', () => Promise.reject(notFound('node-llama-cpp'))),
    ).rejects.toThrow(
      '--provider llama needs node-llama-cpp, an optional dependency that is not installed: npm install node-llama-cpp@3.21.1',
    );
    await expect(
      withEngines('rumedbench baseline encoder', () => Promise.reject(notFound('onnxruntime-node'))),
    ).rejects.toThrow(
      'rumedbench baseline encoder needs onnxruntime-node, an optional dependency that is not installed: npm install onnxruntime-node@1.30.0 @huggingface/transformers@4.3.2 @huggingface/tokenizers@0.2.0',
    );
  });

  it('lets every other failure through unchanged, and loads what is there', async () => {
    expect(missingEngine(notFound('left-pad'))).toBeUndefined();
    const other = new Error('boom');
    await expect(withEngines('x', () => Promise.reject(other))).rejects.toBe(other);
    const lib = await withEngines('x', () => import('node-llama-cpp'));
    expect(typeof lib.getLlama).toBe('function');
  });
});
