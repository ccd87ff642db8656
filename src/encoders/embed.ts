/**
 * Texts, pairs and word-split sentences to vectors: tokenise (./tokenize.ts), run the encoder (./model.ts), pool,
 * and keep every vector in the embedding cache as soon as its batch is done, so an interrupted run resumes where it
 * stopped. Identical inputs are embedded once.
 */
import type { EmbeddingCache } from './cache.js';
import { cacheKey } from './cache.js';
import { type BatchOutput, type Encoder, type Pooling, pool } from './model.js';
import type { EncodedInput, TextInput } from './tokenize.js';

export interface EmbedderOptions {
  pooling: Pooling;
  /** Tokens per input, special tokens included; the model's position table by default (and at most that). */
  maxLength?: number;
  batchSize?: number;
  cache?: EmbeddingCache;
  /** Progress lines: inputs done, inputs/s, time left. */
  progress?: (line: string) => void;
  /** Milliseconds between progress lines. */
  progressEvery?: number;
}

export interface EmbedStats {
  embedded: number;
  fromCache: number;
  seconds: number;
}

const HIDDEN_OUTPUTS = ['last_hidden_state', 'token_embeddings'] as const;

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds % 60);
  return m > 0 ? `${m} min ${s} s` : `${s} s`;
}

export class Embedder {
  readonly pooling: Pooling;
  readonly maxLength: number;
  readonly batchSize: number;
  /** Running totals over every call, for summaries and tests. */
  readonly stats: EmbedStats = { embedded: 0, fromCache: 0, seconds: 0 };
  private readonly output: string;

  constructor(
    readonly encoder: Encoder,
    private readonly options: EmbedderOptions,
  ) {
    this.pooling = options.pooling;
    this.maxLength = Math.min(options.maxLength ?? encoder.info.maxPositions, encoder.info.maxPositions);
    this.batchSize = options.batchSize ?? 16;
    const output = HIDDEN_OUTPUTS.find((o) => encoder.outputNames.includes(o));
    // The checks in Encoder.run name the outputs there are.
    this.output = output ?? HIDDEN_OUTPUTS[0];
  }

  /** What a cached vector depends on besides its input. */
  private space(kind: 'text' | 'words'): string {
    const e = this.encoder.info;
    return [e.sha256, kind === 'words' ? 'first-piece' : this.pooling, this.maxLength, kind].join(':');
  }

  /**
   * Looks `inputs` up in the cache, runs the missing ones (each repeat once) through `compute` and stores what it
   * yields. Returns one vector per input, in order.
   */
  private async cached(
    kind: 'text' | 'words',
    inputs: readonly unknown[],
    label: string,
    compute: (missing: number[], done: (i: number, vector: Float32Array) => void) => Promise<void>,
  ): Promise<Float32Array[]> {
    const t0 = performance.now();
    const space = this.space(kind);
    const cache = this.options.cache;
    // Inputs as JSON tell repeats apart; their sha256 (the cache key) is only worked out where there is a cache.
    const texts = inputs.map((x) => JSON.stringify(x));
    const keys = cache ? texts.map(cacheKey) : [];
    const results: (Float32Array | undefined)[] = cache
      ? cache.getMany(space, keys)
      : inputs.map(() => undefined);
    // Identical inputs: compute the first, copy to the rest.
    const firstOf = new Map<string, number>();
    const missing: number[] = [];
    const copies: [number, number][] = [];
    results.forEach((r, i) => {
      if (r) return;
      const text = texts[i] as string;
      const first = firstOf.get(text);
      if (first === undefined) {
        firstOf.set(text, i);
        missing.push(i);
      } else copies.push([i, first]);
    });
    const fromCache = inputs.length - missing.length - copies.length;
    const log = this.options.progress;
    const every = this.options.progressEvery ?? 2000;
    let done = 0;
    let lastLine = performance.now();
    const pending: { key: Buffer; vector: Float32Array }[] = [];
    if (missing.length > 0) {
      log?.(
        `${label}: embedding ${missing.length} input(s)${fromCache > 0 ? ` (${fromCache} from the cache)` : ''}`,
      );
      await compute(missing, (i, vector) => {
        results[i] = vector;
        if (cache) pending.push({ key: keys[i] as Buffer, vector });
        done++;
        const now = performance.now();
        if (now - lastLine >= every || done === missing.length) {
          cache?.putMany(space, pending.splice(0));
          const rate = done / ((now - t0) / 1000);
          if (done < missing.length || now - lastLine >= every)
            log?.(
              `${label}: ${done}/${missing.length} embedded, ${rate.toFixed(1)}/s, ${duration((missing.length - done) / rate)} left`,
            );
          lastLine = now;
        }
      });
      cache?.putMany(space, pending.splice(0));
    } else if (inputs.length > 0) log?.(`${label}: all ${inputs.length} input(s) from the cache`);
    for (const [i, first] of copies) results[i] = results[first];
    const seconds = (performance.now() - t0) / 1000;
    this.stats.embedded += missing.length;
    this.stats.fromCache += fromCache;
    this.stats.seconds += seconds;
    return results as Float32Array[];
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
