/**
 * A source of vectors for the encoder baselines, and the embedding cache in front of it: every input is looked up
 * first, each missing one embedded once, and what is embedded stored as soon as it is done, so that an interrupted
 * run resumes where it stopped. Two sources: an ONNX model run here (./embed.ts) and a serving engine's
 * /v1/embeddings (./endpoint.ts); this file loads neither's engine.
 */
import type { EmbeddingCache } from './cache.js';
import { cacheKey } from './cache.js';
import type { TextInput } from './inputs.js';

export interface EmbedStats {
  embedded: number;
  fromCache: number;
  seconds: number;
}

/** How a source caches and reports. */
export interface CachingOptions {
  cache?: EmbeddingCache;
  /** Progress lines: inputs done, inputs/s, time left. */
  progress?: (line: string) => void;
  /** Milliseconds between progress lines. */
  progressEvery?: number;
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds % 60);
  return m > 0 ? `${m} min ${s} s` : `${s} s`;
}

/** What a source of vectors says of itself, for summaries and saved heads. */
export interface SourceInfo {
  model: string;
  /** The model's folder; an endpoint's URL for vectors from a server. */
  dir: string;
  /** The ONNX file's sha256; empty for vectors from a server (the server's model is its own business). */
  sha256: string;
  dtype: string;
  /** Vectors from a serving engine's /v1/embeddings. */
  endpoint?: string;
}

/**
 * What the encoder baselines read vectors from: a model run here (Embedder) or a serving engine
 * (EndpointEmbedder, ./endpoint.ts). Both look every input up in the embedding cache first, embed each missing one
 * once, and store what they embed as soon as it is done, so an interrupted run resumes where it stopped.
 */
export abstract class VectorSource {
  abstract readonly info: SourceInfo;
  abstract readonly pooling: string;
  abstract readonly maxLength: number;
  abstract readonly batchSize: number;
  /** Whether the source gives one vector per word (RuMedNER's heads need them). */
  abstract readonly wordVectors: boolean;
  /** Running totals over every call, for summaries and tests. */
  readonly stats: EmbedStats = { embedded: 0, fromCache: 0, seconds: 0 };

  constructor(private readonly caching: CachingOptions) {}

  /** What a cached vector depends on besides its input. */
  protected abstract space(kind: 'text' | 'words'): string;
  /** One vector per text or pair. */
  abstract embedTexts(inputs: readonly TextInput[], label?: string): Promise<Float32Array[]>;
  /** Per sentence, one vector per word (words × width, row-major). */
  abstract embedWords(sentences: readonly (readonly string[])[], label?: string): Promise<Float32Array[]>;
  abstract close(): Promise<void>;

  /**
   * Looks `inputs` up in the cache, runs the missing ones (each repeat once) through `compute` and stores what it
   * yields. Returns one vector per input, in order.
   */
  protected async cached(
    kind: 'text' | 'words',
    inputs: readonly unknown[],
    label: string,
    compute: (missing: number[], done: (i: number, vector: Float32Array) => void) => Promise<void>,
  ): Promise<Float32Array[]> {
    const t0 = performance.now();
    const space = this.space(kind);
    const cache = this.caching.cache;
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
    const log = this.caching.progress;
    const every = this.caching.progressEvery ?? 2000;
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
}
