/**
 * An ONNX transformer encoder in the Hugging Face / transformers.js folder layout, run in process on the CPU by
 * onnxruntime-node: config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx (fp32) or
 * onnx/model_quantized.onnx (q8). A local folder is read as it is; a hub id is fetched once by transformers.js
 * into its cache (only when the folder does not exist and downloads are allowed).
 *
 * Inputs are built by ./tokenize.ts and run batch by batch, sorted by length so that a batch pads little;
 * padding and batch size change no vector (the attention mask hides the padding from every real token).
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { ModelError } from '../errors.js';
import { type EncodedInput, EncoderTokenizer } from './tokenize.js';

export type Dtype = 'fp32' | 'q8';
export type Pooling = 'mean' | 'cls';

export const ONNX_FILES: Record<Dtype, string> = {
  fp32: 'onnx/model.onnx',
  q8: 'onnx/model_quantized.onnx',
};

export interface LoadEncoderOptions {
  dtype?: Dtype;
  /** Intra-op threads of onnxruntime; the machine's cores by default. */
  threads?: number;
  /** Fetch a hub id that is not a local folder (transformers.js's cache; needs the network). */
  allowDownload?: boolean;
  /** Where transformers.js keeps downloaded models. */
  downloadDir?: string;
}

export interface EncoderInfo {
  /** What the user named: a folder or a hub id. */
  model: string;
  /** The folder the files were read from. */
  dir: string;
  onnxFile: string;
  dtype: Dtype;
  /** sha256 of the ONNX file: what the embedding cache and saved heads are keyed by. */
  sha256: string;
  config: Record<string, unknown>;
  /** Longest input the model takes (its position table), special tokens included. */
  maxPositions: number;
}

/** Output tensors of one batch, with the row layout they were computed for. */
export interface BatchOutput {
  /** [batch, length, width] or [batch, width]. */
  data: Float32Array;
  dims: readonly number[];
  /** Padded length of the batch. */
  length: number;
  /** Which of the caller's inputs each row is. */
  rows: readonly number[];
}

function readJson(dir: string, file: string): Record<string, unknown> {
  const path = join(dir, file);
  if (!existsSync(path))
    throw new ModelError(dir, `${file} is missing (expected the Hugging Face folder layout)`);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new ModelError(dir, `${file} is not JSON (${(e as Error).message})`);
  }
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const HUB_ID = /^[\w.-]+\/[\w.-]+$/;

/** Fetches a hub model into transformers.js's cache and returns the folder holding its files. */
async function download(model: string, dtype: Dtype, cacheDir: string | undefined): Promise<string> {
  const { AutoConfig, AutoTokenizer, env } = await import('@huggingface/transformers');
  if (cacheDir) env.cacheDir = cacheDir;
  const options = { ...(cacheDir ? { cache_dir: cacheDir } : {}) };
  await AutoConfig.from_pretrained(model, options);
  await AutoTokenizer.from_pretrained(model, options);
  // The ONNX file itself: transformers.js fetches and caches it as it builds a session, which we then drop.
  const { AutoModel } = await import('@huggingface/transformers');
  const loaded = await AutoModel.from_pretrained(model, { ...options, dtype, device: 'cpu' });
  await loaded.dispose();
  const dir = join(cacheDir ?? env.cacheDir ?? '', model);
  if (!existsSync(join(dir, ONNX_FILES[dtype])))
    throw new ModelError(model, `downloaded, but ${ONNX_FILES[dtype]} is not in ${dir}`);
  return dir;
}

export class Encoder {
  private constructor(
    readonly info: EncoderInfo,
    readonly tokenizer: EncoderTokenizer,
    private readonly session: ort.InferenceSession,
  ) {}

  static async load(model: string, options: LoadEncoderOptions = {}): Promise<Encoder> {
    const dtype = options.dtype ?? 'fp32';
    let dir = resolve(model);
    if (!existsSync(dir)) {
      if (!HUB_ID.test(model)) throw new ModelError(model, 'no such folder, and not a hub id (owner/name)');
      if (!options.allowDownload)
        throw new ModelError(model, 'no such folder; downloading hub models is switched off (--no-download)');
      dir = await download(model, dtype, options.downloadDir);
    } else if (!statSync(dir).isDirectory()) {
      throw new ModelError(
        model,
        'not a folder: give the model folder (config.json, tokenizer.json, onnx/…)',
      );
    }
    const config = readJson(dir, 'config.json');
    const tokenizer = new EncoderTokenizer(
      readJson(dir, 'tokenizer.json'),
      readJson(dir, 'tokenizer_config.json'),
      dir,
    );
    const onnxFile = join(dir, ONNX_FILES[dtype]);
    if (!existsSync(onnxFile)) {
      const other = dtype === 'fp32' ? 'q8' : 'fp32';
      const hint = existsSync(join(dir, ONNX_FILES[other]))
        ? `; ${ONNX_FILES[other]} is there (--dtype ${other})`
        : '';
      throw new ModelError(dir, `${ONNX_FILES[dtype]} is missing${hint}`);
    }
    const sha256 = await sha256File(onnxFile);
    const threads = options.threads ?? 0;
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(onnxFile, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        interOpNumThreads: 1,
        ...(threads > 0 ? { intraOpNumThreads: threads } : {}),
      });
    } catch (e) {
      throw new ModelError(dir, `onnxruntime cannot load ${ONNX_FILES[dtype]}: ${(e as Error).message}`);
    }
    for (const required of ['input_ids', 'attention_mask']) {
      if (!session.inputNames.includes(required))
        throw new ModelError(
          dir,
          `the model has no input "${required}" (inputs: ${session.inputNames.join(', ')})`,
        );
    }
    const maxPositions = Number(config.max_position_embeddings ?? 512);
    // RoBERTa's position ids start after the padding index: two of its positions are never usable.
    const usable =
      config.model_type === 'roberta' || config.model_type === 'xlm-roberta'
        ? maxPositions - 2
        : maxPositions;
    return new Encoder(
      { model, dir, onnxFile, dtype, sha256, config, maxPositions: usable },
      tokenizer,
      session,
    );
  }

  get outputNames(): readonly string[] {
    return this.session.outputNames;
  }

  /**
   * Runs `inputs` in batches of at most `batchSize`, longest first, and hands each batch's `output` tensor to
   * `onBatch` (in batch order, which is not input order: `rows` says which inputs a batch holds).
   */
  async run(
    inputs: readonly EncodedInput[],
    options: { batchSize: number; output: string },
    onBatch: (batch: BatchOutput) => void,
  ): Promise<void> {
    if (!this.session.outputNames.includes(options.output))
      throw new ModelError(
        this.info.dir,
        `the model has no output "${options.output}" (outputs: ${this.session.outputNames.join(', ')})`,
      );
    const order = Array.from(inputs.keys()).sort(
      (a, b) => (inputs[b] as EncodedInput).ids.length - (inputs[a] as EncodedInput).ids.length || a - b,
    );
    const wantsTypes = this.session.inputNames.includes('token_type_ids');
    for (let from = 0; from < order.length; from += options.batchSize) {
      const rows = order.slice(from, from + options.batchSize);
      const length = (inputs[rows[0] as number] as EncodedInput).ids.length;
      const n = rows.length * length;
      const ids = new BigInt64Array(n).fill(BigInt(this.tokenizer.padId));
      const mask = new BigInt64Array(n);
      const types = new BigInt64Array(n);
      rows.forEach((r, b) => {
        const input = inputs[r] as EncodedInput;
        for (let t = 0; t < input.ids.length; t++) {
          ids[b * length + t] = BigInt(input.ids[t] as number);
          mask[b * length + t] = 1n;
          types[b * length + t] = BigInt(input.typeIds[t] as number);
        }
      });
      const shape = [rows.length, length];
      const feeds: Record<string, ort.Tensor> = {
        input_ids: new ort.Tensor('int64', ids, shape),
        attention_mask: new ort.Tensor('int64', mask, shape),
      };
      if (wantsTypes) feeds.token_type_ids = new ort.Tensor('int64', types, shape);
      const out = await this.session.run(feeds, [options.output]);
      const tensor = out[options.output] as ort.Tensor;
      onBatch({ data: tensor.data as Float32Array, dims: tensor.dims, length, rows });
      for (const t of Object.values(out)) t.dispose();
    }
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** Pools rows of a [batch, length, width] hidden-state tensor: the masked mean, or the first token's vector. */
export function pool(
  batch: BatchOutput,
  row: number,
  realLength: number,
  pooling: Pooling,
  width: number,
): Float32Array {
  const base = row * batch.length * width;
  if (pooling === 'cls') return batch.data.slice(base, base + width);
  const sum = new Float64Array(width);
  for (let t = 0; t < realLength; t++) {
    const at = base + t * width;
    for (let d = 0; d < width; d++) sum[d] = (sum[d] as number) + (batch.data[at + d] as number);
  }
  return Float32Array.from(sum, (v) => v / realLength);
}
