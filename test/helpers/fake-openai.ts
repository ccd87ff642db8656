/**
 * A loopback server that speaks the OpenAI chat-completions protocol (request and response shapes, `usage`,
 * `logprobs`, error bodies, 429 with Retry-After, 500s, slow replies, dropped connections), for tests of the LLM
 * harness. It records every request it receives.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: string }[];
  temperature?: number;
  max_tokens?: number;
  seed?: number;
  stop?: string[];
}

export type Behaviour =
  | { kind: 'ok'; delayMs?: number }
  | { kind: '429'; retryAfter: string }
  | { kind: '500' }
  | { kind: 'drop' }
  | { kind: '400'; message: string };

export interface FakeOpenAI {
  url: string;
  /** Every request received, in order: the last user message's hash and the body. */
  requests: { key: string; body: ChatRequestBody }[];
  /** Every /v1/completions request, in order. */
  completions: CompletionsBody[];
  /** The most requests the server held at once (from a request's arrival until its answer was written), any path. */
  peak(): number;
  /** The largest answer the server wrote, in bytes. */
  largest(): number;
  close(): Promise<void>;
}

const contentKey = (body: ChatRequestBody): string =>
  createHash('sha256').update(JSON.stringify(body.messages)).digest('hex').slice(0, 16);

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The fake model's tokenizer, as vLLM's `/tokenize` serves it: a word with its leading space is one token (so
 * " да" is one token and "да" another), a run of spaces one token; ids from a hash of the piece, BOS = 1.
 */
export function fakeTokenize(text: string, special = false): number[] {
  const ids = [...text.matchAll(/ ?[^\s]+|\s+/gu)].map((m) => 100 + (fnvHash(m[0]) % 50_000));
  return special ? [1, ...ids] : ids;
}

/** The fake model's log-probability of a token after another: deterministic, between −1 and −10.6. */
export const fakeLogprob = (prev: number, token: number): number =>
  -(1 + ((prev * 31 + token * 17) % 97) / 10);

function fnvHash(s: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export interface CompletionsBody {
  model: string;
  prompt: string | number[] | number[][];
  echo?: boolean;
  logprobs?: number;
  max_tokens?: number;
}

export async function startFakeOpenAI(options: {
  reply: (body: ChatRequestBody) => string;
  /** What to do with the n-th request (0-based); ok by default. */
  behaviour?: (n: number, body: ChatRequestBody) => Behaviour;
  /** /v1/completions with echo returns the prompt's log-probabilities (as vLLM); true by default. */
  promptLogprobs?: boolean;
  /** /v1/completions without echo returns the top-k of the generated token: piece → log-probability. */
  topLogprobs?: (prompt: string) => Record<string, number>;
  /** /tokenize exists (vLLM); true by default. */
  tokenize?: boolean;
  /** Delay of each /v1/completions answer, ms. */
  completionsDelayMs?: number;
  /**
   * A text the model has memorised: a token that ends twelve tokens in a row found in it is likely (−0.2), as a model
   * that trained on a file finds its sequences likely, the order of its items included (items that open alike, as
   * "Текст: …" and end alike, differ only some tokens away from where they meet).
   */
  memorized?: string;
  /** What /tokenize says of the model's context (vLLM's `max_model_len`); 8192 by default. */
  maxModelLen?: number;
  /** Listen on this port (a server brought back where it was); a free one by default. */
  port?: number;
  /**
   * Bytes each echoed token takes in a /v1/completions reply (its text padded, as vLLM's escaped token texts and
   * top-1 maps make them); about 40 by default.
   */
  echoBytesPerToken?: number;
  /** Delay of each /tokenize answer, ms. */
  tokenizeDelayMs?: number;
}): Promise<FakeOpenAI> {
  const N = 12;
  const memory = new Set<string>();
  if (options.memorized) {
    const ids = fakeTokenize(options.memorized);
    for (let i = N - 1; i < ids.length; i++) memory.add(ids.slice(i - N + 1, i + 1).join(','));
  }
  const logprobAt = (all: readonly number[], i: number): number =>
    i >= N - 1 && memory.has(all.slice(i - N + 1, i + 1).join(','))
      ? -0.2
      : fakeLogprob(all[i - 1] as number, all[i] as number);
  const requests: FakeOpenAI['requests'] = [];
  const completions: CompletionsBody[] = [];
  let held = 0;
  let peak = 0;
  let largest = 0;
  const server: Server = createServer(async (req, res) => {
    held++;
    peak = Math.max(peak, held);
    // Released when the answer is handed to the system ('finish'), before the client can read it: a client that
    // sends its next request only after reading an answer is never counted twice.
    let released = false;
    const release = () => {
      if (!released) held--;
      released = true;
    };
    res.once('finish', release);
    res.once('close', release);
    const json = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      largest = Math.max(largest, Buffer.byteLength(text));
      res.writeHead(status, { 'content-type': 'application/json' }).end(text);
    };
    if (req.method === 'POST' && req.url === '/tokenize' && options.tokenize !== false) {
      const body = JSON.parse(await readBody(req)) as { prompt: string; add_special_tokens?: boolean };
      if (options.tokenizeDelayMs) await new Promise((r) => setTimeout(r, options.tokenizeDelayMs));
      const tokens = fakeTokenize(body.prompt, body.add_special_tokens ?? true);
      json(200, { tokens, count: tokens.length, max_model_len: options.maxModelLen ?? 8192 });
      return;
    }
    if (req.method === 'POST' && req.url?.endsWith('/v1/completions')) {
      const body = JSON.parse(await readBody(req)) as CompletionsBody;
      completions.push(body);
      if (options.completionsDelayMs) await new Promise((r) => setTimeout(r, options.completionsDelayMs));
      const prompts: (string | number[])[] =
        Array.isArray(body.prompt) && Array.isArray(body.prompt[0])
          ? (body.prompt as number[][])
          : [body.prompt as string | number[]];
      const choices = prompts.map((prompt, index) => {
        const ids = typeof prompt === 'string' ? fakeTokenize(prompt, true) : prompt;
        const generated = 2;
        let logprobs: unknown = null;
        if (body.logprobs !== undefined && body.echo && options.promptLogprobs !== false) {
          const all = [...ids, generated];
          // Each token's text padded to the bytes a verbose echo takes (the rest of its entry is about 40 bytes).
          const pad = 'x'.repeat(Math.max(0, (options.echoBytesPerToken ?? 40) - 40));
          logprobs = {
            tokens: all.map((id) => `${id}${pad}`),
            token_logprobs: all.map((_, i) => (i === 0 ? null : logprobAt(all, i))),
            top_logprobs: all.map(() => null),
            text_offset: all.map((_, i) => i),
          };
        } else if (body.logprobs !== undefined && !body.echo && options.topLogprobs) {
          const top = options.topLogprobs(typeof prompt === 'string' ? prompt : '');
          logprobs = { tokens: ['x'], token_logprobs: [-0.1], top_logprobs: [top], text_offset: [0] };
        }
        return { index, text: ' x', logprobs, finish_reason: 'length' };
      });
      json(200, {
        id: 'cmpl-fake',
        object: 'text_completion',
        model: body.model,
        choices,
        usage: { prompt_tokens: 1, completion_tokens: 1 },
      });
      return;
    }
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: { message: 'Not found', type: 'invalid_request_error', param: null, code: null },
        }),
      );
      return;
    }
    const body = JSON.parse(await readBody(req)) as ChatRequestBody;
    const n = requests.length;
    requests.push({ key: contentKey(body), body });
    const b = options.behaviour?.(n, body) ?? { kind: 'ok' };
    const error = (
      status: number,
      message: string,
      type: string,
      headers: Record<string, string> = {},
    ): void => {
      res
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(JSON.stringify({ error: { message, type, param: null, code: null } }));
    };
    if (b.kind === 'drop') {
      req.socket.destroy();
      return;
    }
    if (b.kind === '429') {
      error(429, 'Rate limit reached', 'rate_limit_error', { 'retry-after': b.retryAfter });
      return;
    }
    if (b.kind === '500') {
      error(500, 'The server had an error while processing your request', 'server_error');
      return;
    }
    if (b.kind === '400') {
      error(400, b.message, 'invalid_request_error');
      return;
    }
    if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    const content = options.reply(body);
    const promptTokens = body.messages.reduce((s, m) => s + Math.ceil(m.content.length / 4), 0);
    const completionTokens = Math.ceil(content.length / 4);
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `chatcmpl-${n}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        system_fingerprint: 'fp_fake',
        choices: [
          { index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' },
        ],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(options.port ?? 0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    completions,
    peak: () => peak,
    largest: () => largest,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A fake server for a describe block: started before its tests, closed after them; call the result to reach it. */
export function useFakeOpenAI(options: Parameters<typeof startFakeOpenAI>[0]): () => FakeOpenAI {
  let server: FakeOpenAI | undefined;
  beforeAll(async () => {
    server = await startFakeOpenAI(options);
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => server as FakeOpenAI;
}
