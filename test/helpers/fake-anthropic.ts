/**
 * A loopback server that speaks Anthropic's Messages API as documented (`POST /v1/messages`): the `x-api-key` and
 * `anthropic-version` headers required, `max_tokens` required, the system prompt a top-level field (a `system` role
 * in `messages` is refused), `temperature` refused beside thinking, thinking budgets of at least 1,024 tokens and
 * under `max_tokens`; replies as content blocks (thinking, then text), `stop_reason`, and `usage` with cached prompt
 * tokens counted apart from `input_tokens`; errors as `{type: "error", error: {type, message}}`, 429 with
 * `retry-after`, 529 overloaded. It records every request.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MessagesRequest {
  model: string;
  max_tokens?: number;
  system?: string;
  messages: { role: string; content: string }[];
  temperature?: number;
  stop_sequences?: string[];
  thinking?: { type: string; budget_tokens?: number };
}

export interface FakeAnthropicReply {
  text: string;
  thinking?: string;
  stopReason?: 'end_turn' | 'max_tokens' | 'stop_sequence' | 'refusal';
  /** Prompt tokens read from the cache: counted apart from input_tokens, as the API does. */
  cacheRead?: number;
  /** Prompt tokens written to the cache (`cache_creation_input_tokens`): also apart from input_tokens. */
  cacheWrite?: number;
}

export type AnthropicBehaviour = { kind: 'ok' } | { kind: '429'; retryAfter: string } | { kind: '529' };

export interface FakeAnthropic {
  url: string;
  requests: { headers: IncomingMessage['headers']; body: MessagesRequest }[];
  /** What the server reported in `usage`, per answered request: the ledger must sum to these. */
  reported: { input: number; output: number; cacheRead: number; cacheWrite: number }[];
  /** How many count_tokens requests it answered. */
  countCalls(): number;
  /** Message Batches: each batch as the API describes it, every request they held, looks at a batch. */
  batches(): Record<string, unknown>[];
  batchLines: MessagesRequest[];
  batchLooks(): number;
  /** Batch-creating calls received, answered or not. */
  createCalls(): number;
  close(): Promise<void>;
}

/** The fake model's prompt tokens: a token per four characters of the system prompt and the messages. */
const promptTokens = (body: Pick<MessagesRequest, 'system' | 'messages'>): number =>
  Math.ceil([body.system ?? '', ...body.messages.map((m) => m.content)].join('').length / 4);

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeAnthropic(options: {
  key: string;
  reply: (body: MessagesRequest) => FakeAnthropicReply;
  /** What to do with the n-th online request; a batch's n-th request asks with n + 1,000,000 (any kind but ok fails it). */
  behaviour?: (n: number) => AnthropicBehaviour;
  /** While this says true, a batch stays in progress. */
  holdBatches?: () => boolean;
  /** What the n-th batch-creating call meets (see fake-openai's CreateFault); answered at once by default. */
  createFault?: (n: number) => 'hang-after' | 'hang-before' | undefined;
}): Promise<FakeAnthropic> {
  const requests: FakeAnthropic['requests'] = [];
  const reported: FakeAnthropic['reported'] = [];
  let counted = 0;
  let looks = 0;
  let creates = 0;
  /** What a valid request is answered with, or the API's refusal of it: online, or as a batch's result. */
  const answer = (
    body: MessagesRequest,
    n: number,
  ): { status: number; type: string; message: string } | { status: 200; json: unknown } => {
    const refuse = (message: string) => ({ status: 400, type: 'invalid_request_error', message });
    if (typeof body.max_tokens !== 'number') return refuse('max_tokens: Field required');
    if (body.messages.some((m) => m.role !== 'user' && m.role !== 'assistant'))
      return refuse(
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter',
      );
    if (body.thinking) {
      const budget = body.thinking.budget_tokens ?? 0;
      if (body.temperature !== undefined && body.temperature !== 1)
        return refuse('`temperature` may only be set to 1 when thinking is enabled');
      if (budget < 1024 || budget >= body.max_tokens)
        return refuse('thinking.budget_tokens: must be ≥ 1024 and less than max_tokens');
    }
    const r = options.reply(body);
    const cacheRead = r.cacheRead ?? 0;
    const cacheWrite = r.cacheWrite ?? 0;
    // The API's three prompt counts add up to the prompt: input_tokens is what was neither read nor written.
    const input = Math.max(0, promptTokens(body) - cacheRead - cacheWrite);
    const output = Math.ceil((r.text.length + (r.thinking?.length ?? 0)) / 4);
    reported.push({ input, output, cacheRead, cacheWrite });
    return {
      status: 200,
      json: {
        id: `msg_${n}`,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: [
          ...(r.thinking !== undefined
            ? [{ type: 'thinking', thinking: r.thinking, signature: 'c2lnbmF0dXJl' }]
            : []),
          ...(r.text !== '' ? [{ type: 'text', text: r.text }] : []),
        ],
        stop_reason: r.stopReason ?? 'end_turn',
        stop_sequence: null,
        usage: {
          input_tokens: input,
          output_tokens: output,
          cache_creation_input_tokens: cacheWrite,
          cache_read_input_tokens: cacheRead,
        },
      },
    };
  };

  // Message Batches: created in progress, ended at the next look, results as JSONL.
  const batches = new Map<
    string,
    {
      object: Record<string, unknown>;
      requests: { custom_id: string; params: MessagesRequest }[];
      results?: string;
    }
  >();
  const batchLines: MessagesRequest[] = [];
  const runBatch = (id: string, url: string): void => {
    const b = batches.get(id);
    if (!b) return;
    const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
    const lines = b.requests.map((r) => {
      const n = batchLines.length;
      batchLines.push(r.params);
      const how = options.behaviour?.(1_000_000 + n) ?? { kind: 'ok' };
      const a =
        how.kind === 'ok'
          ? answer(r.params, n)
          : { status: 500, type: 'api_error', message: 'Internal server error' };
      if ('json' in a) {
        counts.succeeded++;
        return JSON.stringify({ custom_id: r.custom_id, result: { type: 'succeeded', message: a.json } });
      }
      counts.errored++;
      return JSON.stringify({
        custom_id: r.custom_id,
        result: { type: 'errored', error: { type: 'error', error: { type: a.type, message: a.message } } },
      });
    });
    b.results = `${lines.join('\n')}\n`;
    Object.assign(b.object, {
      processing_status: 'ended',
      request_counts: counts,
      ended_at: new Date().toISOString(),
      results_url: `${url}/v1/messages/batches/${id}/results`,
    });
  };

  const server = createServer(async (req, res) => {
    const error = (
      status: number,
      type: string,
      message: string,
      headers: Record<string, string> = {},
    ): void => {
      res
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(JSON.stringify({ type: 'error', error: { type, message } }));
    };
    const json = (body: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (req.headers['x-api-key'] !== options.key)
      return error(401, 'authentication_error', 'invalid x-api-key');
    if (req.headers['anthropic-version'] !== '2023-06-01')
      return error(400, 'invalid_request_error', 'anthropic-version: header is required');
    const path = req.url ?? '';
    const batchPath = /^\/v1\/messages\/batches\/([A-Za-z0-9_]+)(\/results)?$/.exec(path);
    if (req.method === 'GET' && batchPath) {
      const id = batchPath[1] as string;
      const b = batches.get(id);
      if (!b) return error(404, 'not_found_error', 'batch not found');
      if (batchPath[2]) {
        if (b.results === undefined) return error(400, 'invalid_request_error', 'batch has not ended');
        res.writeHead(200, { 'content-type': 'application/binary' }).end(b.results);
        return;
      }
      looks++;
      if (b.object.processing_status === 'in_progress' && !(options.holdBatches?.() ?? false))
        runBatch(id, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      return json(b.object);
    }
    if (req.method === 'GET' && /^\/v1\/messages\/batches(\?|$)/.test(path)) {
      // Newest first, `limit` a page, `after_id` the id the page follows, as Anthropic lists batches.
      const q = new URL(path, 'http://x').searchParams;
      const limit = Math.min(1000, Math.max(1, Number(q.get('limit') ?? 20)));
      const all = [...batches.values()].map((b) => b.object).reverse();
      const after = q.get('after_id');
      const from = after ? all.findIndex((b) => b.id === after) + 1 : 0;
      const data = all.slice(from, from + limit);
      return json({
        data,
        has_more: from + limit < all.length,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      });
    }
    const cancel = /^\/v1\/messages\/batches\/([A-Za-z0-9_]+)\/cancel$/.exec(path);
    if (req.method === 'POST' && cancel) {
      const b = batches.get(cancel[1] as string);
      if (!b) return error(404, 'not_found_error', 'batch not found');
      b.object.cancel_initiated_at = new Date().toISOString();
      b.object.processing_status = 'canceling';
      return json(b.object);
    }
    if (req.method === 'POST' && path === '/v1/messages/batches') {
      const fault = options.createFault?.(creates++);
      if (fault === 'hang-before') return; // never answered; closed when the client goes
      const body = JSON.parse(await readBody(req)) as {
        requests?: { custom_id: string; params: MessagesRequest }[];
      };
      const list = body.requests ?? [];
      if (list.length === 0 || list.some((r) => !/^[a-zA-Z0-9_-]{1,64}$/.test(r.custom_id)))
        return error(
          400,
          'invalid_request_error',
          'requests: each custom_id must match ^[a-zA-Z0-9_-]{1,64}$',
        );
      const id = `msgbatch_${batches.size + 1}`;
      const object: Record<string, unknown> = {
        id,
        type: 'message_batch',
        processing_status: 'in_progress',
        request_counts: { processing: list.length, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
        ended_at: null,
        created_at: new Date().toISOString(),
        expires_at: null,
        cancel_initiated_at: null,
        results_url: null,
      };
      batches.set(id, { object, requests: list });
      if (fault === 'hang-after') return;
      return json(object);
    }
    const counting = path === '/v1/messages/count_tokens';
    if (req.method !== 'POST' || (path !== '/v1/messages' && !counting))
      return error(404, 'not_found_error', 'Not found');
    const body = JSON.parse(await readBody(req)) as MessagesRequest;
    if (counting) {
      counted++;
      return json({ input_tokens: promptTokens(body) });
    }
    const n = requests.length;
    requests.push({ headers: req.headers, body });
    const b = options.behaviour?.(n) ?? { kind: 'ok' };
    if (b.kind === '429')
      return error(429, 'rate_limit_error', 'Number of requests has exceeded your rate limit', {
        'retry-after': b.retryAfter,
      });
    if (b.kind === '529') return error(529, 'overloaded_error', 'Overloaded');
    const a = answer(body, n);
    if ('json' in a) return json(a.json);
    return error(a.status, a.type, a.message);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    reported,
    countCalls: () => counted,
    batches: () => [...batches.values()].map((b) => b.object),
    batchLines,
    batchLooks: () => looks,
    createCalls: () => creates,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
