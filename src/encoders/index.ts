/**
 * rumedbench's encoder API, an entry of its own (`rumedbench/encoders`) so that the main entry never loads
 * onnxruntime's native library.
 * @example
 * import { openEmbedder } from 'rumedbench/encoders';
 * const embedder = await openEmbedder({ model: 'models/rubert-onnx', pooling: 'mean' });
 * const [v] = await embedder.embedTexts([['контекст', 'вопрос?']]);
 * await embedder.close();
 */
export { type EmbeddingCache, openEmbeddingCache } from './cache.js';
export { Embedder, type EmbedderOptions, type EmbedStats } from './embed.js';
export { type TextInput, taskInput } from './inputs.js';
export {
  type BatchOutput,
  type Dtype,
  defaultDownloadDir,
  Encoder,
  type EncoderInfo,
  type LoadEncoderOptions,
  ONNX_FILES,
  type Pooling,
  pool,
} from './model.js';
export { defaultCacheDir, type OpenEmbedderOptions, openEmbedder } from './open.js';
export {
  type FinetunedOptions,
  type FinetunedResult,
  labelMismatch,
  modelLabels,
  predictFinetuned,
  runFinetuned,
} from './predict.js';
export { type EncodedInput, EncoderTokenizer, longestFirst, type WordWindow } from './tokenize.js';
