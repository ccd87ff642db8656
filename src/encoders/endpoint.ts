/**
 * Sentence vectors from a serving engine's OpenAI-compatible `/v1/embeddings` (vLLM, text-embeddings-inference,
 * Ollama) instead of an ONNX model run here, so that encoders run on GPU servers that scale on their own. Inputs go
 * in batches, several batches in flight; 429 and 503 (after their Retry-After, else with growing waits), other
 * transient statuses and dropped connections are retried by the shared transport (data/transport.ts); every vector is checked (one per input, finite, one width) and kept in the same embedding cache, keyed by
 * the endpoint, the model and the input. A pair (context + question) is sent as its two texts on two lines: the
 * endpoint embeds texts, not pairs. There are no word vectors here: RuMedNER is left to a model run here.
 */
import pLimit from 'p-limit';
import { send, TransportError } from '../data/transport.js';
import { ModelError } from '../errors.js';
import { rememberSecret } from '../log.js';
import type { TextInput } from './inputs.js';
import { type CachingOptions, type SourceInfo, VectorSource } from './source.js';

export interface EndpointEmbedderOptions extends CachingOptions {
  /** The API's base, e.g. http://gpu1:8000/v1 (`/embeddings` is added). */
  endpoint: string;
  model: string;
  apiKey?: string;
  /** Inputs per request (default 32). */
  batchSize?: number;
  /** Requests in flight (default 4). */
  concurrency?: number;
  /** Retries of a failed request (default 5). */
  maxRetries?: number;
  timeoutMs?: number;
  /** The first wait's ceiling, doubled each retry (default 500 ms: the first wait is 250-500 ms). */
  backoffMs?: number;
  /** Told before each retry's wait (the CLI notes long waits). */
  onRetry?: (n: { attempt: number; waitMs: number; reason: string }) => void;
  /** Dimensions of one vector at most (default 16,384): a wider answer is refused before its vectors are made. */
  maxDimensions?: number;
}

export const DEFAULT_MAX_DIMENSIONS = 16_384;

/** Largest answer read from the server: 32 inputs × 8,192 dimensions as JSON fit well within it. */
const MAX_ANSWER_BYTES = 64 << 20;

export class EndpointEmbedder extends VectorSource {
  readonly pooling = 'server';
  readonly maxLength = 0;
  readonly batchSize: number;
  readonly wordVectors = false;
  readonly info: SourceInfo;
  private readonly url: string;

  constructor(private readonly o: EndpointEmbedderOptions) {
    super(o);
    let url: URL;
    try {
      url = new URL(`${o.endpoint.replace(/\/+$/, '')}/embeddings`);
    } catch {
      throw new ModelError(o.endpoint, 'not a URL; give the API base, e.g. http://localhost:8000/v1');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ModelError(o.endpoint, 'an http:// or https:// URL');
    if (url.username || url.password)
      throw new ModelError(o.endpoint, 'no user name or password in the URL; put the key in --api-key-env');
    this.url = url.toString();
    rememberSecret(o.apiKey);
    this.batchSize = o.batchSize ?? 32;
    this.info = { model: o.model, dir: o.endpoint, sha256: '', dtype: 'server', endpoint: o.endpoint };
  }

  protected space(kind: 'text' | 'words'): string {
    return ['endpoint', this.url, this.o.model, kind].join(':');
  }

  async embedTexts(inputs: readonly TextInput[], label = 'texts'): Promise<Float32Array[]> {
    return this.cached('text', inputs, label, async (missing, done) => {
      const limit = pLimit(this.o.concurrency ?? 4);
      const batches: number[][] = [];
      for (let i = 0; i < missing.length; i += this.batchSize)
        batches.push(missing.slice(i, i + this.batchSize));
      let width: number | undefined;
      await Promise.all(
        batches.map((batch) =>
          limit(async () => {
            const texts = batch.map((i) => {
              const x = inputs[i] as TextInput;
              return typeof x === 'string' ? x : `${x[0]}\n${x[1]}`;
            });
            const vectors = await this.request(texts);
            for (const [k, v] of vectors.entries()) {
              width ??= v.length;
              if (v.length !== width)
                throw new ModelError(
                  this.o.endpoint,
                  `vectors of ${width} and of ${v.length} dimensions from one model`,
                );
              done(batch[k] as number, v);
            }
          }),
        ),
      );
    });
  }

  async embedWords(): Promise<Float32Array[]> {
    throw new ModelError(
      this.o.endpoint,
      'an embeddings endpoint gives one vector per text, not one per word',
    );
  }

  async close(): Promise<void> {
    this.o.cache?.close();
  }

  private async request(texts: string[]): Promise<Float32Array[]> {
    const fail = (why: string) => new ModelError(this.o.endpoint, why);
    let answer: Awaited<ReturnType<typeof send>>;
    try {
      answer = await send(
        this.url,
        () => ({
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}),
          },
          body: JSON.stringify({ model: this.o.model, input: texts, encoding_format: 'float' }),
        }),
        {
          maxBytes: MAX_ANSWER_BYTES,
          timeoutMs: this.o.timeoutMs ?? 120_000,
          retry: {
            retries: this.o.maxRetries ?? 5,
            baseMs: this.o.backoffMs ?? 500,
            capMs: 60_000,
            maxWaitMs: 60_000,
          },
          retryOn: (status) => status === 429 || status >= 500,
          ...(this.o.onRetry ? { onRetry: this.o.onRetry } : {}),
        },
      );
    } catch (e) {
      if (e instanceof TransportError)
        throw fail(`request failed after ${e.attempts} attempt(s): ${e.message}`);
      throw e;
    }
    const text = answer.text;
    if (text === null) throw fail(`an answer over the ${MAX_ANSWER_BYTES}-byte cap`);
    if (answer.status !== 200) throw fail(`HTTP ${answer.status}: ${text.slice(0, 300)}`);
    let body: { data?: { index?: number; embedding?: unknown }[] };
    try {
      body = JSON.parse(text);
    } catch {
      throw fail(`the answer is not JSON: ${text.slice(0, 200)}`);
    }
    const data = Array.isArray(body.data) ? [...body.data] : [];
    if (data.length !== texts.length) throw fail(`${data.length} vector(s) for ${texts.length} input(s)`);
    // The vectors may come in any order: each says which input it is for. Without that (or with indexes that are
    // not each input once) they cannot be paired with their inputs, and a wrong pairing scores silently.
    if (texts.length > 1) {
      const seen = new Set<number>();
      for (const [k, d] of data.entries()) {
        const i = d?.index;
        if (typeof i !== 'number' || !Number.isInteger(i) || i < 0 || i >= texts.length)
          throw fail(
            `vector ${k} of ${texts.length}: ${i === undefined ? 'no "index"' : `"index" ${JSON.stringify(i)}`}; each vector must say which input it is for (0…${texts.length - 1}), since the order of the answer is not the order of the inputs`,
          );
        if (seen.has(i)) throw fail(`two vectors for input ${i}: the indexes must name each input once`);
        seen.add(i);
      }
      data.sort((a, b) => (a.index as number) - (b.index as number));
    }
    const cap = this.o.maxDimensions ?? DEFAULT_MAX_DIMENSIONS;
    return data.map((d, k) => {
      const v = d?.embedding;
      if (Array.isArray(v) && v.length > cap)
        throw fail(
          `input ${k}: a vector of ${v.length} dimensions, over --max-dimensions ${cap}; not read (raise --max-dimensions for a model this wide)`,
        );
      if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'number' && Number.isFinite(x)))
        throw fail(`input ${k}: the embedding is not a list of finite numbers`);
      return Float32Array.from(v as number[]);
    });
  }
}
