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
}

export type AnthropicBehaviour = { kind: 'ok' } | { kind: '429'; retryAfter: string } | { kind: '529' };

export interface FakeAnthropic {
  url: string;
  requests: { headers: IncomingMessage['headers']; body: MessagesRequest }[];
  /** What the server reported in `usage`, per answered request: the ledger must sum to these. */
  reported: { input: number; output: number; cacheRead: number }[];
  /** How many count_tokens requests it answered. */
  countCalls(): number;
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
  behaviour?: (n: number) => AnthropicBehaviour;
}): Promise<FakeAnthropic> {
  const requests: FakeAnthropic['requests'] = [];
  const reported: FakeAnthropic['reported'] = [];
  let counted = 0;
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
    const counting = req.url === '/v1/messages/count_tokens';
    if (req.method !== 'POST' || (req.url !== '/v1/messages' && !counting))
      return error(404, 'not_found_error', 'Not found');
    if (req.headers['x-api-key'] !== options.key)
      return error(401, 'authentication_error', 'invalid x-api-key');
    if (req.headers['anthropic-version'] !== '2023-06-01')
      return error(400, 'invalid_request_error', 'anthropic-version: header is required');
    const body = JSON.parse(await readBody(req)) as MessagesRequest;
    if (counting) {
      counted++;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ input_tokens: promptTokens(body) }));
      return;
    }
    const n = requests.length;
    requests.push({ headers: req.headers, body });
    const b = options.behaviour?.(n) ?? { kind: 'ok' };
    if (b.kind === '429')
      return error(429, 'rate_limit_error', 'Number of requests has exceeded your rate limit', {
        'retry-after': b.retryAfter,
      });
    if (b.kind === '529') return error(529, 'overloaded_error', 'Overloaded');
    if (typeof body.max_tokens !== 'number')
      return error(400, 'invalid_request_error', 'max_tokens: Field required');
    if (body.messages.some((m) => m.role !== 'user' && m.role !== 'assistant'))
      return error(
        400,
        'invalid_request_error',
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter',
      );
    if (body.thinking) {
      const budget = body.thinking.budget_tokens ?? 0;
      if (body.temperature !== undefined && body.temperature !== 1)
        return error(
          400,
          'invalid_request_error',
          '`temperature` may only be set to 1 when thinking is enabled',
        );
      if (budget < 1024 || budget >= body.max_tokens)
        return error(
          400,
          'invalid_request_error',
          'thinking.budget_tokens: must be ≥ 1024 and less than max_tokens',
        );
    }
    const r = options.reply(body);
    const cacheRead = r.cacheRead ?? 0;
    const input = Math.max(0, promptTokens(body) - cacheRead);
    const output = Math.ceil((r.text.length + (r.thinking?.length ?? 0)) / 4);
    reported.push({ input, output, cacheRead });
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
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
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: cacheRead,
        },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    reported,
    countCalls: () => counted,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
