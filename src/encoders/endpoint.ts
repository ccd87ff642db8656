/**
 * Sentence vectors from a serving engine's OpenAI-compatible `/v1/embeddings` (vLLM, text-embeddings-inference,
 * Ollama) instead of an ONNX model run here, so that encoders run on GPU servers that scale on their own. Inputs go
 * in batches, several batches in flight; 429 (after its Retry-After), 5xx and dropped connections are retried with
 * backoff; every vector is checked (one per input, finite, one width) and kept in the same embedding cache, keyed by
 * the endpoint, the model and the input. A pair (context + question) is sent as its two texts on two lines: the
 * endpoint embeds texts, not pairs. There are no word vectors here: RuMedNER is left to a model run here.
 */
import pLimit from 'p-limit';
import { readCapped } from '../data/read-capped.js';
import { ModelError } from '../errors.js';
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
  /** First backoff, doubled each retry (default 500 ms). */
  backoffMs?: number;
}

/** Largest answer read from the server: 32 inputs × 8,192 dimensions as JSON fit well within it. */
const MAX_ANSWER_BYTES = 64 << 20;

class EndpointError extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

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
            const vectors = await this.retrying(() => this.request(texts));
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

  private async retrying<T>(f: () => Promise<T>): Promise<T> {
    const max = this.o.maxRetries ?? 5;
    for (let attempt = 0; ; attempt++) {
      try {
        return await f();
      } catch (e) {
        if (!(e instanceof EndpointError) || !e.retry || attempt >= max)
          throw e instanceof EndpointError ? new ModelError(this.o.endpoint, e.message) : e;
        const wait = e.retryAfterMs ?? (this.o.backoffMs ?? 500) * 2 ** attempt;
        await new Promise((r) => setTimeout(r, Math.min(wait, 60_000)));
      }
    }
  }

  private async request(texts: string[]): Promise<Float32Array[]> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 120_000),
        headers: {
          'content-type': 'application/json',
          ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.o.model, input: texts, encoding_format: 'float' }),
      });
    } catch (e) {
      const cause =
        (e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message;
      throw new EndpointError(`request failed: ${cause}`, true);
    }
    let text: string | null;
    try {
      text = await readCapped(res, MAX_ANSWER_BYTES);
    } catch (e) {
      throw new EndpointError(`the answer broke off: ${(e as Error).message}`, true);
    }
    if (text === null) throw new EndpointError(`an answer over the ${MAX_ANSWER_BYTES}-byte cap`, false);
    if (res.status === 429 || res.status >= 500) {
      const after = Number(res.headers.get('retry-after'));
      throw new EndpointError(
        `HTTP ${res.status}: ${text.slice(0, 200)}`,
        true,
        Number.isFinite(after) && after >= 0 ? after * 1000 : undefined,
      );
    }
    if (res.status !== 200) throw new EndpointError(`HTTP ${res.status}: ${text.slice(0, 300)}`, false);
    let body: { data?: { index?: number; embedding?: unknown }[] };
    try {
      body = JSON.parse(text);
    } catch {
      throw new EndpointError(`the answer is not JSON: ${text.slice(0, 200)}`, false);
    }
    const data = Array.isArray(body.data) ? [...body.data] : [];
    if (data.length !== texts.length)
      throw new EndpointError(`${data.length} vector(s) for ${texts.length} input(s)`, false);
    data.sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return data.map((d, k) => {
      const v = d.embedding;
      if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'number' && Number.isFinite(x)))
        throw new EndpointError(`input ${k}: the embedding is not a list of finite numbers`, false);
      return Float32Array.from(v as number[]);
    });
  }
}
