/** One call from flags to a ready embedder: the encoder, its embedding cache and the batching settings. */
import { join } from 'node:path';
import { defaultCacheDir, openEmbeddingCache } from './cache.js';
import { Embedder } from './embed.js';
import { type Dtype, defaultDownloadDir, Encoder, type Pooling } from './model.js';

export interface OpenEmbedderOptions {
  /** A model folder, or a hub id (fetched when `allowDownload`). */
  model: string;
  dtype?: Dtype;
  pooling?: Pooling;
  maxLength?: number;
  batchSize?: number;
  threads?: number;
  /** Folder of the embedding cache; false for none. Default: the user cache folder. */
  cacheDir?: string | false;
  allowDownload?: boolean;
  /** Where downloaded hub models are kept. */
  downloadDir?: string;
  progress?: (line: string) => void;
}

export { defaultCacheDir } from './cache.js';

export async function openEmbedder(options: OpenEmbedderOptions): Promise<Embedder> {
  const encoder = await Encoder.load(options.model, {
    dtype: options.dtype ?? 'fp32',
    allowDownload: options.allowDownload ?? true,
    downloadDir: options.downloadDir ?? defaultDownloadDir(),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
  });
  const cacheDir = options.cacheDir === undefined ? defaultCacheDir() : options.cacheDir;
  const cache = cacheDir === false ? undefined : openEmbeddingCache(join(cacheDir, 'embeddings.sqlite'));
  return new Embedder(encoder, {
    pooling: options.pooling ?? 'mean',
    ...(options.maxLength !== undefined ? { maxLength: options.maxLength } : {}),
    ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
    ...(cache ? { cache } : {}),
    ...(options.progress ? { progress: options.progress } : {}),
  });
}
