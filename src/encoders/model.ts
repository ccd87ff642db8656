/**
 * An ONNX transformer encoder in the Hugging Face / transformers.js folder layout, run in process on the CPU by
 * onnxruntime-node: config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx (fp32) or
 * onnx/model_quantized.onnx (q8). A local folder is read as it is; a hub id is fetched once by transformers.js
 * into its cache (only when the folder does not exist and downloads are allowed).
 *
 * Inputs are built by ./tokenize.ts and run batch by batch, sorted by length so that a batch pads little;
 * padding and batch size change no vector (the attention mask hides the padding from every real token).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { endianness } from 'node:os';
import { basename, join, resolve } from 'node:path';
import envPaths from 'env-paths';
import * as ort from 'onnxruntime-node';
import { sha256File } from '../data/checksum.js';
import { ModelError } from '../errors.js';
import type { TextInput } from './inputs.js';
import { type EncodedInput, EncoderTokenizer } from './tokenize.js';
import { TokenizerThread } from './tokenizer-thread.js';

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
  /** Each row's input, as encoded. */
  encoded: readonly EncodedInput[];
}

/**
 * The ONNX file of `dtype` in a model folder: transformers.js's layout (onnx/model.onnx), else optimum-cli's
 * (model.onnx beside config.json; `optimum-cli onnxruntime quantize` writes model_quantized.onnx).
 */
function onnxFileOf(dir: string, dtype: Dtype): string | undefined {
  const file = ONNX_FILES[dtype];
  return [file, basename(file)].find((f) => existsSync(join(dir, f)));
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

/** owner/name; neither part starts with a dot, so an id never climbs out of the download folder. */
const HUB_ID = /^[\w-][\w.-]*\/[\w-][\w.-]*$/;

export function defaultDownloadDir(): string {
  return join(envPaths('rumedbench', { suffix: '' }).cache, 'models');
}

/**
 * A hub model's folder under `downloadDir`, fetched by transformers.js the first time (from $HF_ENDPOINT where set,
 * else huggingface.co; $HF_TOKEN for gated models). Later runs read the folder and never ask the hub again:
 * delete it to fetch a newer revision.
 */
async function fromHub(model: string, dtype: Dtype, downloadDir: string): Promise<string> {
  const dir = join(downloadDir, model);
  const needed = ['config.json', 'tokenizer.json', 'tokenizer_config.json', ONNX_FILES[dtype]];
  if (needed.every((f) => existsSync(join(dir, f)))) return dir;
  const { AutoConfig, AutoModel, AutoTokenizer, env } = await import('@huggingface/transformers');
  const endpoint = process.env.HF_ENDPOINT;
  if (endpoint) env.remoteHost = endpoint.endsWith('/') ? endpoint : `${endpoint}/`;
  env.cacheDir = downloadDir;
  const options = { cache_dir: downloadDir };
  try {
    await AutoConfig.from_pretrained(model, options);
    await AutoTokenizer.from_pretrained(model, options);
    // transformers.js fetches (and caches) the ONNX file as it opens a session of its own, which we drop.
    const loaded = await AutoModel.from_pretrained(model, { ...options, dtype, device: 'cpu' });
    await loaded.dispose();
  } catch (e) {
    throw new ModelError(model, `cannot fetch it from ${env.remoteHost}: ${(e as Error).message}`);
  }
  const missing = needed.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) throw new ModelError(model, `fetched, but ${missing.join(', ')} not in ${dir}`);
  return dir;
}

// The int64 inputs are written as pairs of 32-bit words, low word first.
if (endianness() !== 'LE') throw new Error('rumedbench encoders need a little-endian machine');

const KNOWN_INPUTS = ['input_ids', 'attention_mask', 'token_type_ids'];

/** Batches per chunk that the tokenizer thread encodes ahead of the runtime. */
const CHUNK_BATCHES = 16;

export class Encoder {
  private thread: TokenizerThread | undefined;
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
      dir = await fromHub(model, dtype, options.downloadDir ?? defaultDownloadDir());
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
    const found = onnxFileOf(dir, dtype);
    if (!found) {
      const other = dtype === 'fp32' ? 'q8' : 'fp32';
      const there = onnxFileOf(dir, other);
      const hint = there ? `; ${there} is there (--dtype ${other})` : '';
      throw new ModelError(dir, `${ONNX_FILES[dtype]} is missing${hint}`);
    }
    const onnxFile = join(dir, found);
    const { sha256 } = await sha256File(onnxFile);
    const threads = options.threads ?? 0;
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(onnxFile, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        interOpNumThreads: 1,
        // Idle runtime threads sleep instead of spinning, leaving the tokenizer thread a core: on two cores this
        // took a small model from 1.41x to 1.06x the runtime's own time, and the runtime alone lost nothing.
        extra: { session: { intra_op: { allow_spinning: '0' } } },
        ...(threads > 0 ? { intraOpNumThreads: threads } : {}),
      });
    } catch (e) {
      throw new ModelError(dir, `onnxruntime cannot load ${found}: ${(e as Error).message}`);
    }
    for (const required of ['input_ids', 'attention_mask']) {
      if (!session.inputNames.includes(required))
        throw new ModelError(
          dir,
          `the model has no input "${required}" (inputs: ${session.inputNames.join(', ')})`,
        );
    }
    const unknown = session.inputNames.filter((n) => !KNOWN_INPUTS.includes(n));
    if (unknown.length > 0)
      throw new ModelError(
        dir,
        `the model asks for inputs this tool does not give (${unknown.join(', ')}); it gives ${KNOWN_INPUTS.join(', ')}`,
      );
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
   * `onBatch` in batch order, which is not input order: `rows` says which inputs a batch holds.
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
    for (let from = 0; from < order.length; from += options.batchSize) {
      const batch = this.batch(order.slice(from, from + options.batchSize), inputs);
      const out = await this.session.run(batch.feeds, [options.output]);
      const tensor = out[options.output] as ort.Tensor;
      onBatch({
        data: tensor.data as Float32Array,
        dims: tensor.dims,
        length: batch.length,
        rows: batch.rows,
        encoded: batch.encoded,
      });
      for (const t of Object.values(out)) t.dispose();
    }
  }

  /** Encodes and pads one batch. Ids are written through 32-bit views of the int64 buffers: no BigInt per token. */
  private batch(rows: number[], inputs: readonly EncodedInput[]) {
    const encoded = rows.map((r) => inputs[r] as EncodedInput);
    const length = Math.max(...encoded.map((e) => e.ids.length));
    const n = rows.length * length;
    const ids = new BigInt64Array(n);
    const mask = new BigInt64Array(n);
    const types = new BigInt64Array(n);
    const ids32 = new Int32Array(ids.buffer);
    const mask32 = new Int32Array(mask.buffer);
    const types32 = new Int32Array(types.buffer);
    ids32.fill(0);
    for (let k = 0; k < n; k++) ids32[2 * k] = this.tokenizer.padId;
    encoded.forEach((input, b) => {
      for (let t = 0; t < input.ids.length; t++) {
        const k = 2 * (b * length + t);
        ids32[k] = input.ids[t] as number;
        mask32[k] = 1;
        types32[k] = input.typeIds[t] as number;
      }
    });
    const shape = [rows.length, length];
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', ids, shape),
      attention_mask: new ort.Tensor('int64', mask, shape),
    };
    if (this.session.inputNames.includes('token_type_ids'))
      feeds.token_type_ids = new ort.Tensor('int64', types, shape);
    return { rows, encoded, length, feeds };
  }

  /**
   * Runs texts and pairs: as `run`, but tokenised here. Many inputs are sorted by characters and cut into chunks
   * that a tokenizer thread encodes ahead, while the runtime works through the chunk before (inside a chunk,
   * batches are sorted by tokens); a few are tokenised in place. `rows` index `texts`.
   */
  async runTexts(
    texts: readonly TextInput[],
    maxLength: number,
    options: { batchSize: number; output: string },
    onBatch: (batch: BatchOutput) => void,
  ): Promise<void> {
    const chunk = options.batchSize * CHUNK_BATCHES;
    if (texts.length <= 2 * chunk) {
      await this.run(
        texts.map((t) => this.tokenizer.encode(t, maxLength)),
        options,
        onBatch,
      );
      return;
    }
    const size = (t: TextInput) => (typeof t === 'string' ? t.length : t[0].length + t[1].length);
    const order = Array.from(texts.keys()).sort(
      (a, b) => size(texts[b] as TextInput) - size(texts[a] as TextInput) || a - b,
    );
    this.thread ??= new TokenizerThread(this.info.dir);
    const thread = this.thread;
    const chunks = Math.ceil(order.length / chunk);
    const rowsOf = (k: number) => order.slice(k * chunk, (k + 1) * chunk);
    const request = (k: number) =>
      thread.encode(
        rowsOf(k).map((i) => texts[i] as TextInput),
        maxLength,
      );
    const ahead = [request(0), request(1)];
    for (let k = 0; k < chunks; k++) {
      const encoded = await (ahead.shift() as Promise<EncodedInput[]>);
      if (k + 2 < chunks) ahead.push(request(k + 2));
      const rows = rowsOf(k);
      await this.run(encoded, options, (batch) =>
        onBatch({ ...batch, rows: batch.rows.map((r) => rows[r] as number) }),
      );
    }
  }

  /**
   * Runs word-split sentences, each in windows of whole words (./tokenize.ts), and hands every word's first piece
   * to `onWord`: the batch's `output` tensor and where that piece's row starts in it. Every word of every sentence
   * is handed over exactly once.
   */
  async runWords(
    sentences: readonly (readonly string[])[],
    maxLength: number,
    options: { batchSize: number; output: string },
    onWord: (sentence: number, word: number, batch: BatchOutput, offset: number) => void,
  ): Promise<void> {
    const windows = sentences.flatMap((words, sentence) =>
      this.tokenizer.encodeWords(words, maxLength).map((w) => ({ ...w, sentence })),
    );
    await this.run(windows, options, (batch) => {
      const width = batch.dims[batch.dims.length - 1] as number;
      batch.rows.forEach((r, b) => {
        const w = windows[r] as (typeof windows)[number];
        w.wordStarts.forEach((pos, k) => {
          onWord(w.sentence, w.firstWord + k, batch, (b * batch.length + pos) * width);
        });
      });
    });
  }

  async close(): Promise<void> {
    await this.thread?.close();
    this.thread = undefined;
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
