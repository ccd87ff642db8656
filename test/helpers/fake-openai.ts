/**
 * A loopback server that speaks the OpenAI chat-completions protocol (request and response shapes, `usage`,
 * `logprobs`, error bodies, 429 with Retry-After, 500s, slow replies, dropped connections), for tests of the LLM
 * harness. It records every request it receives.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll } from 'vitest';

export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: string }[];
  temperature?: number;
  max_tokens?: number;
  seed?: number;
  stop?: string[];
  reasoning_effort?: string;
  chat_template_kwargs?: Record<string, unknown>;
}

/**
 * A reasoning model's reply: its reasoning in a field of the message (`reasoning_content`, as DeepSeek's API and
 * vLLM before 0.10 name it, or `reasoning`), counted in `completion_tokens_details.reasoning_tokens` as OpenAI
 * counts it (part of the completion tokens); `finishReason` length for a reply the token limit cut off.
 */
export interface ReasoningReply {
  content: string;
  reasoning?: string;
  reasoningField?: 'reasoning_content' | 'reasoning';
  finishReason?: 'stop' | 'length';
  /** Prompt tokens the server says came from its cache (`prompt_tokens_details.cached_tokens`). */
  cachedTokens?: number;
}

/** A batch as OpenAI's Batch API describes it. */
export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  status: string;
  output_file_id: string | null;
  error_file_id: string | null;
  request_counts: { total: number; completed: number; failed: number };
  created_at: number;
  errors: null;
  metadata: Record<string, string> | null;
}

/**
 * What a batch-creating call meets (the n-th, 0-based): no answer ever (the batch made first, or not), a connection
 * dropped (after making it, or before), a 500 after making it (a provider that lies about its own outcome), a
 * gateway's 504 at once while the batch is made `lateMs` later behind it, or a 429 with `Retry-After: 2` (no batch
 * made: the provider's rate limit on creating).
 */
export type CreateFault =
  | 'hang-after'
  | 'hang-before'
  | 'drop-after'
  | 'drop-before'
  | '500-after'
  | 'late'
  | '429';

export type ResultsFault = 'gzip-plain' | 'br-plain' | 'gzip-cut' | 'short' | 'cut-line' | 'slow';

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
  /** How many /tokenize requests it answered. */
  tokenizeCalls(): number;
  /** The Batch API's side: batches created, files uploaded, every request the batches held, looks at a batch. */
  batches(): BatchObject[];
  uploads(): number;
  batchLines: ChatRequestBody[];
  batchLooks(): number;
  /** Batch-creating calls received (POST /v1/batches), answered or not. */
  createCalls(): number;
  /** Looks at the list of batches (GET /v1/batches). */
  listCalls(): number;
  /**
   * What the server has billed, in USD at its `prices`: every chat completion it made, at the usage it reported,
   * whether or not the client was still there to read it (a provider bills the work it did).
   */
  billed(): number;
  /** Downloads of a file's content (GET /v1/files/{id}/content). */
  downloads(): number;
  /**
   * Under `resultRanges`: each results download, its Range header (null: none), the status answered, the body bytes
   * sent and the whole (encoded) body's length.
   */
  rangeAnswers: { range: string | null; status: number; sent: number; total: number }[];
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
  const ids = [...text.matchAll(/ ?[^\s]+|\s+/gu)].map((m) => idOf(m[0]));
  return special ? [1, ...ids] : ids;
}

/**
 * Each token's text, as vLLM echoes it (`logprobs.tokens`): the pieces the tokenizer made, BOS `<s>`, the generated
 * ` x`. Two pieces whose hashes meet get ids 50,000 apart, so that an id echoes back as its own piece.
 */
const pieces = new Map<number, string>([
  [1, '<s>'],
  [2, ' x'],
]);
const ids = new Map<string, number>();
const VOCAB = 50_000;
function idOf(piece: string): number {
  let id = ids.get(piece);
  if (id !== undefined) return id;
  id = 100 + (fnvHash(piece) % VOCAB);
  while (pieces.has(id)) id += VOCAB;
  pieces.set(id, piece);
  ids.set(piece, id);
  return id;
}
export const fakePiece = (id: number): string => pieces.get(id) ?? `<unk${id}>`;
/** An id as the hash made it (the values below are of these, whatever id a piece was given). */
const hashed = (id: number): number => (id < 100 ? id : 100 + ((id - 100) % VOCAB));

/** The fake model's log-probability of a token after another: deterministic, between −1 and −10.6. */
export const fakeLogprob = (prev: number, token: number): number =>
  -(1 + ((hashed(prev) * 31 + hashed(token) * 17) % 97) / 10);

function fnvHash(s: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The fake model's prompt tokens of a chat request: a token per four characters of each message. */
export const chatPromptTokens = (messages: readonly { content: string }[]): number =>
  messages.reduce((s, m) => s + Math.ceil(m.content.length / 4), 0);

export interface CompletionsBody {
  model: string;
  prompt: string | string[] | number[] | number[][];
  echo?: boolean;
  logprobs?: number;
  max_tokens?: number;
}

export async function startFakeOpenAI(options: {
  reply: (body: ChatRequestBody) => string | ReasoningReply;
  /** What to do with the n-th request (0-based); ok by default. */
  behaviour?: (n: number, body: ChatRequestBody) => Behaviour;
  /** /v1/completions with echo returns the prompt's log-probabilities (as vLLM); true by default. */
  promptLogprobs?: boolean;
  /** /v1/completions without echo returns the top-k of the generated token: piece → log-probability. */
  topLogprobs?: (prompt: string) => Record<string, number>;
  /** /tokenize exists (vLLM); true by default. */
  tokenize?: boolean;
  /**
   * Echoed prompt tokens carry their top-1 as vLLM's do (`{piece: log-probability}`), which lm-evaluation-harness reads
   * for its is_greedy; null by default (our client does not read them).
   */
  echoTopLogprobs?: boolean;
  /** /v1/completions reads a list of texts as a list of prompts (as vLLM does); true by default. */
  textLists?: boolean;
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
  /**
   * Prompt tokens the server adds to each chat request and reports in `usage`, which its /tokenize does not count
   * (a hosted API's own system prompt): spending beyond what was counted beforehand.
   */
  hiddenPromptTokens?: number;
  /** USD per million prompt and completion tokens, for `billed()`; nothing billed without them. */
  prices?: { prompt: number; completion: number };
  /** While this says true, a batch stays in progress (a run killed while it waits). */
  holdBatches?: () => boolean;
  /** What a batch says of its request counts: absent, or a lie of 10¹² (the provider's claim is not to be trusted). */
  batchCounts?: 'absent' | 'huge';
  /** Batches the provider no longer knows: 404 to a look at them, as OpenAI answers for an unknown id. */
  forgetBatch?: (id: string) => boolean;
  /** While this says true, a file's content is answered 500 (the download of a batch's results fails). */
  failFiles?: () => boolean;
  /** What the n-th batch-creating call meets; answered at once by default. */
  createFault?: (n: number) => CreateFault | undefined;
  /** How long after a 'late' creating call's 504 its batch appears (1,500 ms by default). */
  lateMs?: number;
  /** The n-th look at a batch (counting these answers) answered 404 where this says true: a moment's confusion. */
  notFoundOnce?: (n: number) => boolean;
  /**
   * How the n-th download of a results file (0-based) lies: `gzip-plain` (`br-plain`) declares `Content-Encoding: gzip` (`br`) over a
   * plain body (a misconfigured proxy), `gzip-cut` sends a real gzip stream cut half-way, `short` ends the body at
   * half its length (a Content-Length half the body), `cut-line` ends the body ten bytes short, in its last line,
   * `slow` sends the whole body in ten pieces over `slowResultsMs` (a large file on a slow link).
   */
  resultsFault?: (n: number) => ResultsFault | undefined;
  /**
   * Results files served with `Accept-Ranges: bytes`, an ETag and a Last-Modified, whose first download breaks off
   * half-way (the connection closed): `honour` answers a later `Range: bytes=N-` with a 206, `ignore` with the whole
   * body (200), `etag-changes` with a 206 under a new ETag at every answer (another version of the file), `gzip` sends
   * the body gzip-encoded and honours ranges of the encoded bytes.
   */
  resultRanges?: 'honour' | 'ignore' | 'etag-changes' | 'gzip';
  /** How long a `slow` results download takes, ms (3,000 by default). */
  slowResultsMs?: number;
  /** The list of batches (GET /v1/batches) is not offered: 404, as OpenAI-compatible servers without it answer. */
  noList?: boolean;
  /** The n-th look at a batch (0-based, counting these answers) answered 500 where this says true. */
  statusFault?: (n: number) => boolean;
  /** While this says true, a completed batch names no output file (`output_file_id: null`) though its counts do. */
  nullOutput?: () => boolean;
  /** The id of the n-th batch made (0-based); `batch_<n+1>` by default (a provider may put anything in an id). */
  batchIdOf?: (n: number) => string;
  /** The word a look at a batch gives for its status (another provider's: `COMPLETED`, `succeeded`). */
  statusWord?: (status: string) => string;
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
  let tokenizeCalls = 0;
  let billed = 0;
  /** The chat completion the fake model answers a request with: online, or as a line of a batch's output. */
  const completion = (body: ChatRequestBody, id: string) => {
    const given = options.reply(body);
    const r: ReasoningReply = typeof given === 'string' ? { content: given } : given;
    const content = r.content;
    const promptTokens = chatPromptTokens(body.messages) + (options.hiddenPromptTokens ?? 0);
    const reasoningTokens = r.reasoning === undefined ? undefined : Math.ceil(r.reasoning.length / 4);
    const completionTokens = Math.ceil(content.length / 4) + (reasoningTokens ?? 0);
    if (options.prices)
      billed += (promptTokens * options.prices.prompt + completionTokens * options.prices.completion) / 1e6;
    return {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      system_fingerprint: 'fp_fake',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content,
            ...(r.reasoning !== undefined ? { [r.reasoningField ?? 'reasoning_content']: r.reasoning } : {}),
          },
          logprobs: null,
          finish_reason: r.finishReason ?? 'stop',
        },
      ],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
        ...(reasoningTokens !== undefined
          ? {
              completion_tokens_details: { reasoning_tokens: reasoningTokens, accepted_prediction_tokens: 0 },
            }
          : {}),
        ...(r.cachedTokens !== undefined
          ? { prompt_tokens_details: { cached_tokens: r.cachedTokens, audio_tokens: 0 } }
          : {}),
      },
    };
  };

  // OpenAI's Batch API: uploaded files, batches, and the output and error files a finished batch leaves.
  const files = new Map<string, { text: string; purpose: string; filename: string }>();
  const batches = new Map<string, BatchObject>();
  const batchLines: ChatRequestBody[] = [];
  let looks = 0;
  let creates = 0;
  let lists = 0;
  let looks404 = 0;
  let looks500 = 0;
  let downloads = 0;
  const rangeAnswers: FakeOpenAI['rangeAnswers'] = [];
  const runBatch = (batch: BatchObject): void => {
    const input = files.get(batch.input_file_id)?.text ?? '';
    const out: string[] = [];
    const errors: string[] = [];
    for (const line of input.split('\n')) {
      if (line.trim() === '') continue;
      const l = JSON.parse(line) as { custom_id: string; method: string; url: string; body: ChatRequestBody };
      const n = batchLines.length;
      batchLines.push(l.body);
      const b = options.behaviour?.(n, l.body) ?? { kind: 'ok' };
      const requestId = `req_${n}`;
      if (b.kind === '400' || b.kind === '500') {
        const status = b.kind === '400' ? 400 : 500;
        const message =
          b.kind === '400' ? b.message : 'The server had an error while processing your request';
        errors.push(
          JSON.stringify({
            id: `batch_req_${n}`,
            custom_id: l.custom_id,
            response: {
              status_code: status,
              request_id: requestId,
              body: { error: { message, type: 'invalid_request_error', param: null, code: null } },
            },
            error: null,
          }),
        );
        continue;
      }
      out.push(
        JSON.stringify({
          id: `batch_req_${n}`,
          custom_id: l.custom_id,
          response: { status_code: 200, request_id: requestId, body: completion(l.body, `chatcmpl-b${n}`) },
          error: null,
        }),
      );
    }
    const save = (lines: string[], name: string): string | null => {
      if (lines.length === 0) return null;
      const id = `file-${files.size + 1}`;
      files.set(id, { text: `${lines.join('\n')}\n`, purpose: 'batch_output', filename: name });
      return id;
    };
    batch.output_file_id = save(out, 'batch_output.jsonl');
    batch.error_file_id = save(errors, 'batch_errors.jsonl');
    batch.request_counts = {
      total: out.length + errors.length,
      completed: out.length,
      failed: errors.length,
    };
    batch.status = 'completed';
  };

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
    // vLLM's tokenizer endpoints that lm-evaluation-harness's remote tokenizer asks (`tokenizer_backend=remote`).
    if (req.method === 'GET' && req.url === '/tokenizer_info' && options.tokenize !== false) {
      json(200, {
        bos_token: '<s>',
        eos_token: '</s>',
        pad_token: null,
        model_max_length: options.maxModelLen ?? 8192,
      });
      return;
    }
    if (req.method === 'POST' && req.url === '/detokenize' && options.tokenize !== false) {
      const body = JSON.parse(await readBody(req)) as { tokens: number[] };
      json(200, { prompt: body.tokens.map(fakePiece).join('') });
      return;
    }
    if (req.method === 'POST' && req.url === '/tokenize' && options.tokenize !== false) {
      const body = JSON.parse(await readBody(req)) as {
        prompt?: string;
        messages?: ChatRequestBody['messages'];
        add_special_tokens?: boolean;
      };
      if (options.tokenizeDelayMs) await new Promise((r) => setTimeout(r, options.tokenizeDelayMs));
      tokenizeCalls++;
      if (body.messages) {
        // vLLM tokenizes messages through the chat template: the count its chat replies then report as prompt_tokens.
        const count = chatPromptTokens(body.messages);
        json(200, { tokens: Array(count).fill(7), count, max_model_len: options.maxModelLen ?? 8192 });
        return;
      }
      const tokens = fakeTokenize(body.prompt ?? '', body.add_special_tokens ?? true);
      json(200, { tokens, count: tokens.length, max_model_len: options.maxModelLen ?? 8192 });
      return;
    }
    if (req.method === 'POST' && req.url?.endsWith('/v1/completions')) {
      const body = JSON.parse(await readBody(req)) as CompletionsBody;
      completions.push(body);
      if (options.completionsDelayMs) await new Promise((r) => setTimeout(r, options.completionsDelayMs));
      const prompts: (string | number[])[] =
        Array.isArray(body.prompt) &&
        (Array.isArray(body.prompt[0]) || (options.textLists !== false && typeof body.prompt[0] === 'string'))
          ? (body.prompt as number[][] | string[])
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
            tokens: all.map(fakePiece),
            token_logprobs: all.map((_, i) => (i === 0 ? null : logprobAt(all, i))),
            top_logprobs: all.map((id, i) =>
              options.echoTopLogprobs && i > 0
                ? { [`${fakePiece(id)}${pad}`]: logprobAt(all, i) }
                : pad
                  ? { [`${fakePiece(id)}${pad}`]: -1 }
                  : null,
            ),
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
        // As vLLM counts: every prompt's tokens, and one generated token per prompt.
        usage: {
          prompt_tokens: prompts.reduce(
            (n, p) => n + (typeof p === 'string' ? fakeTokenize(p, true) : p).length,
            0,
          ),
          completion_tokens: prompts.length,
        },
      });
      return;
    }
    if (req.method === 'POST' && req.url === '/v1/files') {
      const raw = Buffer.concat(
        await (async () => {
          const chunks: Buffer[] = [];
          for await (const c of req) chunks.push(c as Buffer);
          return chunks;
        })(),
      );
      // The multipart form read as fetch reads one: the same parser the client's FormData was written for.
      const form = await new Response(raw, {
        headers: { 'content-type': String(req.headers['content-type']) },
      }).formData();
      const file = form.get('file');
      if (form.get('purpose') !== 'batch' || !(file instanceof Blob)) {
        json(400, {
          error: { message: "purpose must be 'batch' and file a file", type: 'invalid_request_error' },
        });
        return;
      }
      const id = `file-${files.size + 1}`;
      const text = await file.text();
      files.set(id, { text, purpose: 'batch', filename: (file as File).name });
      json(200, {
        id,
        object: 'file',
        bytes: Buffer.byteLength(text),
        created_at: 0,
        filename: (file as File).name,
        purpose: 'batch',
      });
      return;
    }
    if (req.method === 'GET' && /^\/v1\/batches(\?|$)/.test(req.url ?? '')) {
      // Newest first, `limit` a page, `after` the id the page follows, as OpenAI lists batches.
      lists++;
      if (options.noList) {
        json(404, { error: { message: 'Not found', type: 'invalid_request_error' } });
        return;
      }
      const q = new URL(req.url ?? '', 'http://x').searchParams;
      const limit = Math.min(100, Math.max(1, Number(q.get('limit') ?? 20)));
      const all = [...batches.values()].reverse();
      const after = q.get('after');
      const from = after ? all.findIndex((b) => b.id === after) + 1 : 0;
      const data = all.slice(from, from + limit);
      json(200, {
        object: 'list',
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: from + limit < all.length,
      });
      return;
    }
    if (req.method === 'POST' && req.url === '/v1/batches') {
      const body = JSON.parse(await readBody(req)) as {
        input_file_id: string;
        endpoint: string;
        completion_window: string;
        metadata?: Record<string, string>;
      };
      const fault = options.createFault?.(creates++);
      if (fault === 'hang-before') return; // never answered; closed when the client goes
      if (fault === 'drop-before') {
        req.socket.destroy();
        return;
      }
      if (
        !files.has(body.input_file_id) ||
        body.endpoint !== '/v1/chat/completions' ||
        body.completion_window !== '24h'
      ) {
        json(400, { error: { message: 'invalid batch', type: 'invalid_request_error' } });
        return;
      }
      if (fault === '429') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2' }).end(
          JSON.stringify({
            error: { message: 'Rate limit reached for batches', type: 'rate_limit_error' },
          }),
        );
        return;
      }
      if (fault === 'late') {
        json(504, { error: { message: 'Gateway Timeout', type: 'server_error' } });
        await new Promise((r) => setTimeout(r, options.lateMs ?? 1500));
      }
      const id = options.batchIdOf?.(batches.size) ?? `batch_${batches.size + 1}`;
      const lines = (files.get(body.input_file_id)?.text ?? '')
        .split('\n')
        .filter((l) => l.trim() !== '').length;
      const batch: BatchObject = {
        id,
        object: 'batch',
        endpoint: body.endpoint,
        input_file_id: body.input_file_id,
        completion_window: '24h',
        status: 'validating',
        output_file_id: null,
        error_file_id: null,
        request_counts: { total: lines, completed: 0, failed: 0 },
        created_at: Math.floor(Date.now() / 1000),
        errors: null,
        metadata: body.metadata ?? null,
      };
      batches.set(id, batch);
      if (fault === 'hang-after' || fault === 'late') return;
      if (fault === 'drop-after') {
        req.socket.destroy();
        return;
      }
      if (fault === '500-after') {
        json(500, {
          error: { message: 'The server had an error while processing your request', type: 'server_error' },
        });
        return;
      }
      json(200, batch);
      return;
    }
    const cancelPath = /^\/v1\/batches\/([^/]+)\/cancel$/.exec(req.url ?? '');
    if (req.method === 'POST' && cancelPath) {
      await readBody(req);
      const batch = batches.get(decodeURIComponent(cancelPath[1] as string));
      if (!batch) {
        json(404, { error: { message: 'No batch found', type: 'invalid_request_error' } });
        return;
      }
      batch.status = 'cancelled';
      json(200, batch);
      return;
    }
    const batchPath = /^\/v1\/batches\/([^/]+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && batchPath) {
      const batch = batches.get(decodeURIComponent(batchPath[1] as string));
      if (options.statusFault?.(looks500++)) {
        json(500, {
          error: { message: 'The server had an error while processing your request', type: 'server_error' },
        });
        return;
      }
      if (!batch || options.forgetBatch?.(batch.id) || options.notFoundOnce?.(looks404++)) {
        json(404, { error: { message: 'No batch found', type: 'invalid_request_error' } });
        return;
      }
      looks++;
      // validating, then in progress for as long as the test holds it, then done at the next look.
      if (batch.status === 'validating') batch.status = 'in_progress';
      else if (batch.status === 'in_progress' && !(options.holdBatches?.() ?? false)) runBatch(batch);
      if (options.statusWord) {
        json(200, { ...batch, status: options.statusWord(batch.status) });
        return;
      }
      if (options.nullOutput?.() && batch.status === 'completed') {
        json(200, { ...batch, output_file_id: null });
        return;
      }
      if (options.batchCounts === 'absent') {
        const { request_counts: _, ...rest } = batch;
        json(200, rest);
      } else if (options.batchCounts === 'huge')
        json(200, { ...batch, request_counts: { total: 1e12, completed: 1e12, failed: 0 } });
      else json(200, batch);
      return;
    }
    const filePath = /^\/v1\/files\/([^/]+)\/content$/.exec(req.url ?? '');
    if (req.method === 'GET' && filePath) {
      if (options.failFiles?.()) {
        json(500, {
          error: { message: 'The server had an error while processing your request', type: 'server_error' },
        });
        return;
      }
      const file = files.get(decodeURIComponent(filePath[1] as string));
      if (!file) {
        json(404, { error: { message: 'No such File object', type: 'invalid_request_error' } });
        return;
      }
      const body = Buffer.from(file.text, 'utf8');
      if (options.resultRanges) {
        const mode = options.resultRanges;
        const n = rangeAnswers.length;
        const range = req.headers.range ?? null;
        const whole = mode === 'gzip' ? gzipSync(body) : body;
        const headers = {
          'content-type': 'application/octet-stream',
          'accept-ranges': 'bytes',
          etag: mode === 'etag-changes' ? `"v${n + 1}"` : '"v1"',
          'last-modified': 'Mon, 07 Dec 2026 10:00:00 GMT',
          ...(mode === 'gzip' ? { 'content-encoding': 'gzip' } : {}),
        };
        const from = /^bytes=(\d+)-$/.exec(range ?? '');
        const send = (status: number, part: Buffer, extra: Record<string, string> = {}) => {
          res.writeHead(status, { ...headers, 'content-length': String(part.length), ...extra });
          // The first download breaks off half-way: the connection is closed once half the body is out.
          const sent = n === 0 ? part.subarray(0, Math.floor(part.length / 2)) : part;
          rangeAnswers.push({ range, status, sent: sent.length, total: whole.length });
          if (n === 0) res.write(sent, () => res.socket?.destroy());
          else res.end(sent);
        };
        // If-Range is not looked at (the worst case for the client): a range is sent whatever version was asked.
        if (from && mode !== 'ignore') {
          const start = Number(from[1]);
          send(206, whole.subarray(start), {
            'content-range': `bytes ${start}-${whole.length - 1}/${whole.length}`,
          });
        } else send(200, whole);
        return;
      }
      const fault = options.resultsFault?.(downloads++);
      if (fault === 'gzip-plain' || fault === 'br-plain') {
        res
          .writeHead(200, {
            'content-type': 'application/octet-stream',
            'content-encoding': fault === 'gzip-plain' ? 'gzip' : 'br',
          })
          .end(body);
        return;
      }
      if (fault === 'gzip-cut') {
        const gz = gzipSync(body);
        const cut = gz.subarray(0, Math.floor(gz.length / 2));
        res
          .writeHead(200, {
            'content-type': 'application/octet-stream',
            'content-encoding': 'gzip',
            'content-length': String(cut.length),
          })
          .end(cut);
        return;
      }
      if (fault === 'short' || fault === 'cut-line') {
        const cut = fault === 'short' ? body.subarray(0, Math.floor(body.length / 2)) : body.subarray(0, -10);
        res
          .writeHead(200, {
            'content-type': 'application/octet-stream',
            'content-length': String(cut.length),
          })
          .end(cut);
        return;
      }
      if (fault === 'slow') {
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': String(body.length),
        });
        const piece = Math.ceil(body.length / 10);
        for (let at = 0; at < body.length; at += piece) {
          if (res.destroyed) return;
          res.write(body.subarray(at, at + piece));
          await new Promise((r) => setTimeout(r, (options.slowResultsMs ?? 3000) / 10));
        }
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(file.text);
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
    json(200, completion(body, `chatcmpl-${n}`));
  });
  await new Promise<void>((r) => server.listen(options.port ?? 0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    completions,
    peak: () => peak,
    largest: () => largest,
    tokenizeCalls: () => tokenizeCalls,
    batches: () => [...batches.values()],
    uploads: () => [...files.values()].filter((f) => f.purpose === 'batch').length,
    batchLines,
    batchLooks: () => looks,
    createCalls: () => creates,
    listCalls: () => lists,
    billed: () => billed,
    downloads: () => downloads,
    rangeAnswers,
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
