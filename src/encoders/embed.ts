/**
 * Texts, pairs and word-split sentences to vectors: tokenise (./tokenize.ts), run the encoder (./model.ts), pool,
 * and keep every vector in the embedding cache as soon as its batch is done, so an interrupted run resumes where it
 * stopped. Identical inputs are embedded once.
 */
import { type BatchOutput, type Encoder, type Pooling, pool } from './model.js';
import { type CachingOptions, type SourceInfo, VectorSource } from './source.js';
import type { EncodedInput, TextInput } from './tokenize.js';

export { type EmbedStats, type SourceInfo, VectorSource } from './source.js';

export interface EmbedderOptions extends CachingOptions {
  pooling: Pooling;
  /** Tokens per input, special tokens included; the model's position table by default (and at most that). */
  maxLength?: number;
  batchSize?: number;
}

const HIDDEN_OUTPUTS = ['last_hidden_state', 'token_embeddings'] as const;

/** Vectors from an ONNX encoder run here: pooled per text or pair, first pieces per word. */
export class Embedder extends VectorSource {
  readonly pooling: Pooling;
  readonly maxLength: number;
  readonly batchSize: number;
  readonly wordVectors = true;
  private readonly output: string;

  constructor(
    readonly encoder: Encoder,
    private readonly options: EmbedderOptions,
  ) {
    super(options);
    this.pooling = options.pooling;
    this.maxLength = Math.min(options.maxLength ?? encoder.info.maxPositions, encoder.info.maxPositions);
    this.batchSize = options.batchSize ?? 16;
    const output = HIDDEN_OUTPUTS.find((o) => encoder.outputNames.includes(o));
    // The checks in Encoder.run name the outputs there are.
    this.output = output ?? HIDDEN_OUTPUTS[0];
  }

  get info(): SourceInfo {
    return this.encoder.info;
  }

  protected space(kind: 'text' | 'words'): string {
    const e = this.encoder.info;
    return [e.sha256, kind === 'words' ? 'first-piece' : this.pooling, this.maxLength, kind].join(':');
  }

  /** One pooled vector per text or pair. */
  async embedTexts(inputs: readonly TextInput[], label = 'texts'): Promise<Float32Array[]> {
    return this.cached('text', inputs, label, async (missing, done) => {
      await this.encoder.runTexts(
        missing.map((i) => inputs[i] as TextInput),
        this.maxLength,
        { batchSize: this.batchSize, output: this.output },
        (batch) => {
          const width = this.width(batch);
          batch.rows.forEach((r, b) => {
            const length = (batch.encoded[b] as EncodedInput).ids.length;
            done(missing[r] as number, pool(batch, b, length, this.pooling, width));
          });
        },
      );
    });
  }

  /** Per sentence, one vector per word: the hidden state of its first piece (words × width, row-major). */
  async embedWords(sentences: readonly (readonly string[])[], label = 'sentences'): Promise<Float32Array[]> {
    return this.cached('words', sentences, label, async (missing, done) => {
      const chosen = missing.map((i) => sentences[i] as readonly string[]);
      const remaining = chosen.map((words) => words.length);
      const vectors = new Map<number, Float32Array>();
      // A sentence without words has nothing to run and an empty matrix.
      remaining.forEach((n, m) => {
        if (n === 0) done(missing[m] as number, new Float32Array(0));
      });
      await this.encoder.runWords(
        chosen,
        this.maxLength,
        { batchSize: this.batchSize, output: this.output },
        (m, word, batch, offset) => {
          const width = this.width(batch);
          let out = vectors.get(m);
          if (!out) {
            out = new Float32Array((chosen[m] as readonly string[]).length * width);
            vectors.set(m, out);
          }
          out.set(batch.data.subarray(offset, offset + width), word * width);
          remaining[m] = (remaining[m] as number) - 1;
          if (remaining[m] === 0) {
            done(missing[m] as number, out);
            vectors.delete(m);
          }
        },
      );
    });
  }

  /** Closes the encoder's session and the cache. */
  async close(): Promise<void> {
    await this.encoder.close();
    this.options.cache?.close();
  }

  private width(batch: BatchOutput): number {
    if (batch.dims.length !== 3)
      throw new Error(`expected hidden states [batch, length, width], got [${batch.dims.join(', ')}]`);
    return batch.dims[2] as number;
  }
}
